package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmHA is the HA facet (vm_facet.go): the VM's Proxmox VE HA resource, which keeps it in a
// requested state and recovers it on another node when its node fails (decision:
// ha-placement). Null: the provider manages no HA resource for the VM. Only the resource
// has it.
type vmHA struct {
	HA types.Object `tfsdk:"ha"`
}

// haAttrTypes are the attributes of the ha object.
var haAttrTypes = map[string]attr.Type{
	"state": types.StringType, "max_restart": types.Int64Type, "max_relocate": types.Int64Type, "failback": types.BoolType,
}

var nullHA = types.ObjectNull(haAttrTypes)

// haAttrs are the HA facet's attributes.
func haAttrs() []facetAttr {
	def := proxmox.DefaultHA()
	return []facetAttr{{
		name: "ha",
		md: "The VM's Proxmox VE HA resource (`vm:<vmid>`), which restarts it and, when its node fails, starts it on " +
			"another node (see \"High availability\").",
		change: "Added once the VM is made, changed in place, removed (with Proxmox's `purge`) when unset, and taken " +
			"out of HA before a destroy. Needs `Sys.Console` on `/`.",
		resourceOnly: true,
		resource: schema.SingleNestedAttribute{
			Optional: true,
			Attributes: map[string]schema.Attribute{
				"state": schema.StringAttribute{
					MarkdownDescription: "The state HA keeps the VM in: `started` (default), `stopped` (set `started = false` " +
						"too) or `ignored` (HA leaves it alone and does not recover it).",
					Optional: true, Computed: true, Default: stringdefault.StaticString(def.State),
					Validators: []validator.String{stringvalidator.OneOf(proxmox.HAStateStarted, proxmox.HAStateStopped, proxmox.HAStateIgnored)},
				},
				"max_restart": schema.Int64Attribute{
					MarkdownDescription: "How often HA restarts the VM on its node after a failed start before it relocates it. " +
						"0 or more; default 1.",
					Optional: true, Computed: true, Default: int64default.StaticInt64(int64(def.MaxRestart)),
					Validators: []validator.Int64{int64validator.AtLeast(0)},
				},
				"max_relocate": schema.Int64Attribute{
					MarkdownDescription: "How often HA relocates the VM to another node after failed starts. 0 or more; default 1.",
					Optional:            true, Computed: true, Default: int64default.StaticInt64(int64(def.MaxRelocate)),
					Validators: []validator.Int64{int64validator.AtLeast(0)},
				},
				"failback": schema.BoolAttribute{
					MarkdownDescription: "Whether HA moves the VM back to the node a node-affinity rule prefers when that node " +
						"is back. Default `true`.",
					Optional: true, Computed: true, Default: booldefault.StaticBool(def.Failback),
				},
			},
		},
	}}
}

// value is the HA resource the facet asks for: nil when ha is null or not known yet.
func (h vmHA) value() *proxmox.HA {
	if h.HA.IsNull() || h.HA.IsUnknown() {
		return nil
	}
	a := h.HA.Attributes()
	out := proxmox.DefaultHA()
	if v, ok := a["state"].(types.String); ok && !v.IsNull() && !v.IsUnknown() {
		out.State = v.ValueString()
	}
	if v, ok := a["max_restart"].(types.Int64); ok && !v.IsNull() && !v.IsUnknown() {
		out.MaxRestart = int(v.ValueInt64())
	}
	if v, ok := a["max_relocate"].(types.Int64); ok && !v.IsNull() && !v.IsUnknown() {
		out.MaxRelocate = int(v.ValueInt64())
	}
	if v, ok := a["failback"].(types.Bool); ok && !v.IsNull() && !v.IsUnknown() {
		out.Failback = v.ValueBool()
	}
	return &out
}

// haObject is the ha value of an HA resource read back.
func haObject(h proxmox.HA) types.Object {
	return types.ObjectValueMust(haAttrTypes, map[string]attr.Value{
		"state": types.StringValue(h.State), "max_restart": types.Int64Value(int64(h.MaxRestart)),
		"max_relocate": types.Int64Value(int64(h.MaxRelocate)), "failback": types.BoolValue(h.Failback),
	})
}

// owns reports whether the configuration puts the VM under the HA manager (ha set, its
// state not ignored): HA then places, starts and stops it (decision: ha-placement).
func (h vmHA) owns() bool {
	v := h.value()
	return v != nil && v.Managed()
}

// read takes the HA resource the backend read (proxmox.VM.HARead): null when the VM has
// none. A VM read without it, or whose HA resource could not be read, keeps the prior value.
func (h *vmHA) read(fc *facetCtx) {
	vm := fc.vm
	if len(h.HA.AttributeTypes(context.Background())) == 0 {
		h.HA = nullHA // a model made in Go (an import)
	}
	switch {
	case h.HA.IsUnknown() && !vm.HARead:
		h.HA = nullHA
	case !vm.HARead:
	case vm.HA == nil:
		h.HA = nullHA
	default:
		h.HA = haObject(*vm.HA)
	}
}

// nullUnknown nulls an ha still unknown (the partial state of a create).
func (h *vmHA) nullUnknown() {
	if h.HA.IsUnknown() || len(h.HA.AttributeTypes(context.Background())) == 0 {
		h.HA = nullHA // unknown, or a model made in Go
	}
}

// spec puts the HA resource into a create.
func (h vmHA) spec(fc *facetCtx) { fc.spec.HA = h.value() }

// changes puts an HA change into an update: written when set and different from the
// prior, removed when unset.
func (h vmHA) changes(fc *facetCtx) {
	prior, c := fc.prior.vmHA, fc.changes
	if h.HA.IsUnknown() || h.HA.Equal(prior.HA) {
		return
	}
	if v := h.value(); v != nil {
		c.HA, fc.changed = &proxmox.HAChange{Set: v}, true
		return
	}
	if !prior.HA.IsNull() {
		c.HA, fc.changed = &proxmox.HAChange{Remove: true}, true
	}
}

// plan checks the power settings against the HA state (planHA) and keeps a VM the HA
// manager moved where it is (planHANode).
func (h *vmHA) plan(fc *facetCtx) {
	if fc.cfg != nil {
		fc.diags.Append(planHA(fc.config)...)
	}
	recorded, hasRecord := fc.nodeRecord()
	fc.diags.Append(planHANode(fc.config, fc.m, fc.prior, recorded, hasRecord)...)
}

// planHA checks that the power settings agree with the HA state asked for: HA starts a VM
// whose state is started and stops one whose state is stopped, so started must say the
// same, or the two would undo each other at every apply (decision: ha-placement).
func planHA(config proxyVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	v := config.value()
	if v == nil || !v.Managed() {
		return nil
	}
	started := config.Started
	switch {
	case v.State == proxmox.HAStateStarted && startedFalse(started):
		diags.AddAttributeError(path.Root("started"), summaryInvalidConfig,
			"started is false, but ha.state is \"started\": the HA manager would start the VM again. Set ha.state = \"stopped\" "+
				"to keep the VM stopped under HA, or ha.state = \"ignored\" to let started decide alone.")
	case v.State == proxmox.HAStateStopped && (started.IsNull() || (!started.IsUnknown() && started.ValueBool())):
		diags.AddAttributeError(path.Root("started"), summaryInvalidConfig,
			"ha.state is \"stopped\", so the HA manager keeps the VM stopped: set started = false as well (it defaults to true), "+
				"or set ha.state = \"started\".")
	}
	if !config.MigrateBack.IsNull() && !config.MigrateBack.IsUnknown() && config.MigrateBack.ValueBool() {
		diags.AddAttributeWarning(path.Root("migrate_back"), "migrate_back has no effect while HA places the VM",
			"ha is set with a state other than \"ignored\", so the HA manager decides the VM's node: a VM it moved "+
				"(a recovery, a failback) is left where it is, never migrated back. Remove migrate_back, or steer the VM with a "+
				"node-affinity proxy_ha_rule.")
	}
	return diags
}

// planHANode keeps a VM that the HA manager moved where it is (decision: ha-placement): while
// the configuration puts the VM under HA, the node differing from the configured one is
// not drift, the plan keeps the node the VM is on and says so; a configured node changed
// since the last apply (recorded) is refused, as HA would undo the migration.
func planHANode(config proxyVMModel, plan, prior *proxyVMModel, recorded string, hasRecord bool) diag.Diagnostics {
	var diags diag.Diagnostics
	if prior == nil || !config.owns() || !prior.owns() {
		return nil
	}
	want, ok := knownString(config.Node)
	if !ok || prior.Node.IsNull() || prior.Node.IsUnknown() || want == prior.Node.ValueString() {
		return nil
	}
	if hasRecord && recorded != want {
		diags.AddAttributeError(path.Root("node"), summaryInvalidConfig,
			"node changed to "+want+", but the VM is under HA (ha.state is not \"ignored\"), and the HA manager decides its node: "+
				"a migration would be undone. Keep node as it was and steer the VM with a node-affinity proxy_ha_rule, or set "+
				"ha.state = \"ignored\" in one apply and change node in the next.")
		return diags
	}
	plan.Node = prior.Node
	diags.AddAttributeWarning(path.Root("node"), "Proxy VM placed by HA",
		vmLabel(plan.Name.ValueString(), int(plan.VMID.ValueInt64()))+" is on node "+prior.Node.ValueString()+", not on the configured "+
			want+": the HA manager moved it (a recovery or a failback). The provider leaves it there while ha places it; the "+
			"state's node shows where it is.")
	return diags
}

// haUnreadWarning is the refresh's warning for an HA resource the backend could not read
// (proxmox.VM.HAUnread): the state keeps its ha.
func haUnreadWarning(id proxmox.ID, vm proxmox.VM) diag.Diagnostic {
	return diag.NewAttributeWarningDiagnostic(path.Root("ha"), "HA resource of the proxy VM not read",
		vmLabel(id.Name, id.VMID)+": "+vm.HAUnreadWhy+". The state keeps the ha it had, so a change made in Proxmox does not show. "+
			"Grant the API token Sys.Audit on / (Proxmox reads HA resources only with it), then refresh again.")
}
