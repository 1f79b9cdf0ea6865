package provider

import (
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmIdentityFacet is the identity facet (vm_facet.go): who the VM is, its name, its VMID,
// the ID made of both, and the uid and creation time of its mark. It is not Terraform's
// resource identity (proxy_vm_identity.go), which carries the ID to an import. Only name
// is configured, and changing it replaces the VM (a plan modifier): the facet has no
// changes, and the backend takes the name from the ID it allocates with.
//
// The proxy_vm data source's name and vmid are its lookup arguments, declared there; its
// other attributes, and proxy_vms', are the facet's.
type vmIdentityFacet struct {
	facetBase              // no changes, no plan: the uid of a new VM stays unknown (newUID)
	ID        types.String `tfsdk:"id"`
	Name      types.String `tfsdk:"name"`
	VMID      types.Int64  `tfsdk:"vmid"`
	UID       types.String `tfsdk:"uid"`
	CreatedAt types.String `tfsdk:"created_at"`
}

// identityFacetAttrs are the identity facet's attributes.
func identityFacetAttrs() []facetAttr {
	return []facetAttr{{
		name: "id",
		md:   "The VM's ID, `vms/<vmid>/<name>`. It stays valid when the VM migrates to another node.",
		read: "The ID `proxy_vm` uses and accepts on import.",
		resource: schema.StringAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}, {
		name:   "name",
		md:     "The VM's name and the guest's hostname.",
		change: "A DNS label: lowercase letters, digits and hyphens, 1 to 63 characters. A change replaces the VM. Same-name VMs coexist, each with its own `uid`.",
		resource: schema.StringAttribute{
			Required: true,
			Validators: []validator.String{stringvalidator.RegexMatches(vmNameRE,
				"must be a DNS label: 1 to 63 lowercase letters, digits or hyphens, starting and ending with a letter or digit")},
			PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
		},
	}, {
		name:   "vmid",
		md:     "The VM's numeric Proxmox ID.",
		change: "Derived from `name` and the provider's `uid_namespace`, within `vmid_range` (see [VMIDs](../index.md#vmids)).",
		resource: schema.Int64Attribute{
			Computed:      true,
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
		},
	}, {
		name:   "uid",
		md:     "The VM's own random UUID, minted at create, kept in its [mark](../index.md#glossary) and its seed ISO's name.",
		change: "The resource acts on the VM only while its mark carries this `uid`.",
		read:   "Empty when the mark has none (VMs of early operator releases).",
		resource: schema.StringAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}, {
		name: "created_at",
		md:   "When the VM was created (RFC 3339, UTC), from its description mark.",
		read: "Null when the mark has none, or it does not parse.",
		resource: schema.StringAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}}
}

// read takes the identity of the VM as the backend read it.
func (f *vmIdentityFacet) read(fc *facetCtx) {
	f.identify(fc.vm.ID, fc.vm.UID, fc.vm.CreatedAt)
}

// identify sets the identity of the VM id whose mark carries uid and createdAt (zero when
// it has none): what a create records as soon as the VMID is known, and what proxy_vms
// lists.
func (f *vmIdentityFacet) identify(id proxmox.ID, uid string, createdAt time.Time) {
	f.ID = types.StringValue(id.String())
	f.Name = types.StringValue(id.Name)
	f.VMID = types.Int64Value(int64(id.VMID))
	f.UID = types.StringValue(uid)
	f.CreatedAt = formatCreatedAt(createdAt)
}

// nullUnknown nulls the values still unknown (the partial state of a create, which then
// sets them).
func (f *vmIdentityFacet) nullUnknown() {
	for _, s := range []*types.String{&f.ID, &f.Name, &f.UID, &f.CreatedAt} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	if f.VMID.IsUnknown() {
		f.VMID = types.Int64Null()
	}
}

// spec puts the name and the uid (minted by the create before its spec) into a create.
func (f vmIdentityFacet) spec(fc *facetCtx) {
	fc.spec.Name, fc.spec.UID = f.Name.ValueString(), f.UID.ValueString()
}
