package provider

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
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
		name: "name",
		md:   "The VM's name and the guest's hostname.",
		change: "A DNS label: lowercase letters, digits and hyphens, 1 to 63 characters. A change replaces the VM. " +
			"Same-name VMs coexist, each with its own `uid`.",
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

// read takes the identity of the VM as the backend read it. A VM whose mark was edited
// outside Terraform (proxmox.VM.MarkEdited: the state's record showed it this resource's)
// keeps the recorded created_at, which the update writes back into its mark.
func (f *vmIdentityFacet) read(fc *facetCtx) {
	created := f.CreatedAt
	f.identify(fc.vm.ID, fc.vm.UID, fc.vm.CreatedAt)
	if _, ok := knownString(created); ok && fc.vm.MarkEdited {
		f.CreatedAt = created
	}
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

// vmBinding is the resource's record of the VM's SMBIOS uuid (decision: state-binding):
// the VM's own value, which only VM.Config.HWType may change, bound to its mark. It is the
// resource's alone (the data sources have no state to bind), embedded in proxyVMModel.
// Every path that acts on the VM passes it to the backend (GetOptions.Instance and the
// like): a VM with another SMBIOS uuid is not this resource's, whatever its mark says.
type vmBinding struct {
	facetBase
	SMBIOSUUID types.String `tfsdk:"smbios_uuid"`
}

// bindingAttrs are the binding's attributes.
func bindingAttrs() []facetAttr {
	return []facetAttr{{
		name:         "smbios_uuid",
		md:           "The VM's SMBIOS uuid, which its mark is bound to: only a VM with it is this resource's.",
		change:       "A 0.1.0 state gets it at the next apply.",
		resourceOnly: true,
		resource: schema.StringAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}}
}

// read records the SMBIOS uuid of a VM whose mark is bound to it (proxmox.VM.BoundInstance)
// when none is recorded; a recorded one is kept (the backend refused a VM with another).
func (b *vmBinding) read(fc *facetCtx) {
	if v, ok := knownString(b.SMBIOSUUID); ok && v != "" {
		return
	}
	b.SMBIOSUUID = stringOrNull(fc.vm.BoundInstance)
}

// nullUnknown nulls an unknown uuid (the partial state of a create).
func (b *vmBinding) nullUnknown() {
	if b.SMBIOSUUID.IsUnknown() {
		b.SMBIOSUUID = types.StringNull()
	}
}

// summaryBinding is the warning of a plan that binds the VM's mark.
const summaryBinding = "Proxy VM mark to be bound to its SMBIOS uuid"

// markDrift is what the last refresh found changed outside Terraform on a VM still shown
// to be this resource's, which an update writes back: its name, and its mark's instance
// line (decision: state-binding).
type markDrift struct {
	renamed string // the name the VM was renamed to, "" when it has the resource's
	edited  bool   // its mark wiped, or its uid or instance line deleted or rewritten
}

// recordMarkDrift keeps, for the next plan, what the refresh or update found changed on
// the VM outside Terraform (proxmox.VM.Renamed and MarkEdited; each cleared when not).
func recordMarkDrift(ctx context.Context, p privateSetter, vm proxmox.VM) diag.Diagnostics {
	var diags diag.Diagnostics
	if vm.Renamed == "" {
		diags.Append(privateKeyRenamed.clear(ctx, p)...)
	} else {
		diags.Append(privateKeyRenamed.write(ctx, p, vm.Renamed)...)
	}
	if !vm.MarkEdited {
		return append(diags, privateKeyMarkEdited.clear(ctx, p)...)
	}
	return append(diags, privateKeyMarkEdited.write(ctx, p, true)...)
}

// readMarkDrift is what recordMarkDrift kept.
func readMarkDrift(ctx context.Context, p privateGetter) (markDrift, diag.Diagnostics) {
	renamed, _, diags := privateKeyRenamed.read(ctx, p)
	edited, _, d := privateKeyMarkEdited.read(ctx, p)
	return markDrift{renamed: renamed, edited: edited}, append(diags, d...)
}

// summaryMarkEdited is the warning of a plan that writes back a bound VM's mark.
const summaryMarkEdited = "Proxy VM mark edited outside Terraform"

// planBinding plans the binding of a resource whose state recorded no SMBIOS uuid (made
// by version 0.1.0, or an import of a VM whose mark has no instance line): the uuid
// unknown, which the update writes in the mark and records, with a warning saying why.
// A bound VM the last refresh found renamed, or with its mark deleted or rewritten, in
// whole or in part (drift), is planned the same way: the update writes the resource's name
// and the finished mark back, so that the power action, which has only the mark to go by,
// accepts it.
func planBinding(plan, prior *proxyVMModel, drift markDrift) diag.Diagnostics {
	if prior == nil {
		return nil
	}
	vmid, _ := knownInt(prior.VMID)
	label := vmLabel(prior.Name.ValueString(), vmid)
	var diags diag.Diagnostics
	if drift.renamed != "" {
		plan.SMBIOSUUID = types.StringUnknown()
		diags.AddWarning("Proxy VM renamed outside Terraform", fmt.Sprintf("%s: the VM is now named %q in Proxmox; its mark carries this "+
			"resource's uid and its SMBIOS uuid is the one the state recorded, so it is still this resource's VM. This apply names it %q again, "+
			"in place.", label, drift.renamed, prior.Name.ValueString()))
	}
	v, bound := knownString(prior.SMBIOSUUID)
	if bound && v != "" {
		if drift.edited {
			plan.SMBIOSUUID = types.StringUnknown()
			diags.AddWarning(summaryMarkEdited, label+": its mark (the proxy-operator-* lines of its description: all of them, its "+
				proxmox.MarkKeyUID+" or its "+proxmox.MarkKeyInstance+" line) was deleted or rewritten in Proxmox, but its SMBIOS uuid "+
				"is the one the state recorded, so it is still this resource's VM. This apply writes the finished mark back, in place, "+
				"keeping the rest of the description; until then proxy_vm_power, which has only the mark to go by, refuses the VM.")
		}
		return diags
	}
	plan.SMBIOSUUID = types.StringUnknown()
	diags.AddWarning(summaryBinding, label+
		": the state records no SMBIOS uuid for this VM (a state made by version 0.1.0, or an import of a VM whose mark has no "+
		proxmox.MarkKeyInstance+" line), so only the uid in its description, which whoever may edit the VM's notes can copy, shows it "+
		"is this resource's. This apply writes the finished mark with a line naming the VM's SMBIOS uuid and records that uuid in "+
		"smbios_uuid; from then on a VM with another SMBIOS uuid is never taken for this resource's. Check that this VMID holds the VM "+
		"this resource manages before applying (`qm config "+strconv.Itoa(vmid)+"`: its name, disks, memory and seed ISO).")
	return diags
}
