package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var _ resource.ResourceWithIdentity = (*proxyVMResource)(nil)

// proxyVMIdentity is proxy_vm's resource identity (Terraform 1.12 and later): the VMID and
// the name, the two parts of the ID vms/<vmid>/<name>. Neither changes during the life of
// the resource (a new name replaces the VM; a migration keeps the VMID), as Terraform
// requires of an identity.
type proxyVMIdentity struct {
	VMID types.Int64  `tfsdk:"vmid"`
	Name types.String `tfsdk:"name"`
}

func (r *proxyVMResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identityschema.Schema{
		Attributes: map[string]identityschema.Attribute{
			"vmid": identityschema.Int64Attribute{
				RequiredForImport: true,
				Description:       "The VM's numeric Proxmox ID.",
			},
			"name": identityschema.StringAttribute{
				OptionalForImport: true,
				Description: "The VM's name. Optional in an `import` block: when set, the VM at `vmid` must carry it " +
					"(as with the import ID `vms/<vmid>/<name>`).",
			},
		},
	}
}

// setIdentity writes the identity of the VM whose ID the state holds into identity (nil
// when Terraform does not support identities: then nothing is done). A state without a
// valid ID (a malformed one the operation reports itself) leaves the identity alone.
func setIdentity(ctx context.Context, state tfsdk.State, identity *tfsdk.ResourceIdentity) diag.Diagnostics {
	if identity == nil || state.Raw.IsNull() {
		return nil
	}
	var idAttr types.String
	diags := state.GetAttribute(ctx, path.Root("id"), &idAttr)
	if diags.HasError() || idAttr.IsNull() || idAttr.IsUnknown() {
		return diags
	}
	id, err := proxmox.ParseID(idAttr.ValueString())
	if err != nil {
		return diags
	}
	return identity.Set(ctx, proxyVMIdentity{VMID: types.Int64Value(int64(id.VMID)), Name: types.StringValue(id.Name)})
}

// importRefFromIdentity is the import reference of an `import` block's identity: the VMID
// and, when given, the name.
func importRefFromIdentity(ctx context.Context, identity *tfsdk.ResourceIdentity) (importRef, diag.Diagnostics) {
	var ident proxyVMIdentity
	diags := identity.Get(ctx, &ident)
	if diags.HasError() {
		return importRef{}, diags
	}
	if ident.VMID.IsNull() || ident.VMID.IsUnknown() {
		diags.AddAttributeError(path.Root("vmid"), "Unable to import proxy VM",
			"The import identity has no vmid: set identity = { vmid = <vmid> } (and optionally name) in the import block.")
		return importRef{}, diags
	}
	vmid := ident.VMID.ValueInt64()
	if vmid < 100 || vmid > 999999999 {
		diags.AddAttributeError(path.Root("vmid"), "Unable to import proxy VM",
			"The import identity's vmid must be a VMID between 100 and 999999999.")
		return importRef{}, diags
	}
	ref := importRef{VMID: int(vmid)}
	if n, ok := knownString(ident.Name); ok {
		if !vmNameRE.MatchString(n) {
			diags.AddAttributeError(path.Root("name"), "Unable to import proxy VM",
				"The import identity's name must be a VM name: a DNS label of lowercase letters, digits and hyphens.")
			return importRef{}, diags
		}
		ref.Name = n
	}
	return ref, diags
}
