package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmPlacement is the placement facet (vm_facet.go): where the VM is (vmLocation: its node
// and its Proxmox pool) and whether a VM moved to another node outside Terraform is
// migrated back (migrate_back). A node change migrates the VM in place (the backend's
// migration, proxmox/migrate.go) and a pool change moves it between pools
// (proxmox/pool.go); neither replaces it nor restarts it.
type vmPlacement struct {
	vmLocation
	MigrateBack types.Bool `tfsdk:"migrate_back"`
}

// vmLocation is the part of the placement facet read from the VM: both data sources embed
// it.
type vmLocation struct {
	Node types.String `tfsdk:"node"`
	Pool types.String `tfsdk:"pool"`
}

// locationAttrs are the attributes of vmLocation.
func locationAttrs() []facetAttr {
	return []facetAttr{{
		name: "node",
		md:   "The Proxmox VE node the VM is on.",
		change: "Set, one of the provider's `nodes`; " +
			"without it the VM is placed at create and stays there. A change migrates the VM in place, online when it runs.",
		resource: schema.StringAttribute{
			Optional: true, Computed: true,
			Validators:    []validator.String{validators.NodeName()},
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}, {
		name: "pool",
		md:   "The Proxmox pool the VM belongs to.",
		change: "Overrides the provider's `pool`; `\"\"` for none. The clone is made into it; " +
			"a change moves the VM in place, which needs `Pool.Allocate` on both pools.",
		read: "Null when it is in none, or when the API token lacks `Pool.Audit` on its pool (Proxmox then leaves it " +
			"out of the listing).",
		resource: schema.StringAttribute{
			Optional: true, Computed: true,
			Validators:    []validator.String{validators.PoolID(true)},
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}}
}

// placementAttrs are the placement facet's attributes.
func placementAttrs() []facetAttr {
	return append(locationAttrs(), facetAttr{
		name:     "migrate_back",
		md:       "Whether a VM found on another node than `node` (moved by the HA manager or for maintenance) is migrated back.",
		change:   "Default `true`.",
		resource: schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true)},
	})
}

// read takes the node and the pool of the VM as the backend read it (a VM read without
// a node keeps the prior one; the pool is poolValue's). migrate_back, which cannot be
// read, gets its default where it has no value (an import).
func (p *vmPlacement) read(fc *facetCtx) {
	vm := fc.vm
	if vm.Node != "" {
		p.Node = types.StringValue(vm.Node)
	}
	p.Pool = poolValue(vm.Pool, p.Pool)
	if p.MigrateBack.IsNull() || p.MigrateBack.IsUnknown() {
		p.MigrateBack = types.BoolValue(true)
	}
}

// nullUnknown nulls the values still unknown (the partial state of a create).
func (p *vmPlacement) nullUnknown() {
	for _, s := range []*types.String{&p.Node, &p.Pool} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	if p.MigrateBack.IsUnknown() {
		p.MigrateBack = types.BoolNull()
	}
}

// spec puts the planned node and pool into a create (a node planned unknown, "": placed
// by the backend).
func (p vmPlacement) spec(fc *facetCtx) {
	s := fc.spec
	s.Node = p.Node.ValueString()
	s.Pool = p.Pool.ValueString()
}

// changes puts a migration and a pool move into an update (nodeChange, poolChange).
func (p vmPlacement) changes(fc *facetCtx) {
	prior, c := fc.prior.vmPlacement, fc.changes
	c.Node = nodeChange(prior.Node, p.Node)
	c.Pool, c.PriorPool = poolChange(prior.Pool, p.Pool)
	if c.Node != nil || c.Pool != nil {
		fc.changed = true
	}
}

// plan plans the node (planNode) and the pool (planPool) from the catalogue, and keeps the
// node a VM moved to outside Terraform when migrate_back is false (planNodeDrift).
func (p *vmPlacement) plan(fc *facetCtx) {
	if fc.cfg != nil {
		fc.diags.Append(planNode(fc.cfg, fc.config, fc.m, fc.prior)...)
		planPool(fc.cfg, fc.config, fc.m, fc.prior)
	}
	recorded, hasRecord := fc.nodeRecord()
	planNodeDrift(fc.config, fc.m, fc.prior, recorded, hasRecord)
}

// planNode checks a configured node against the provider's nodes; without one, a new VM
// of a one-node provider goes to that node, and one of several nodes is placed at create.
func planNode(cfg *resolvedConfig, config proxyVMModel, plan, prior *proxyVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	creating := prior == nil
	switch {
	case config.Node.IsUnknown():
	case config.Node.IsNull():
		switch {
		case !creating:
			// UseStateForUnknown keeps the node the VM is on: an unset node never moves it.
		case len(cfg.Nodes) > 1:
			plan.Node = types.StringUnknown() // placed at create among the nodes that answer
		default:
			n, err := cfg.NodeFor("")
			if err != nil {
				diags.AddAttributeError(path.Root("node"), summaryInvalidConfig,
					"Cannot choose a node for proxy VM "+plan.Name.String()+": "+err.Error()+".")
			} else {
				plan.Node = types.StringValue(n)
			}
		}
	default:
		if creating || !prior.Node.Equal(config.Node) {
			if _, err := cfg.NodeFor(config.Node.ValueString()); err != nil {
				diags.AddAttributeError(path.Root("node"), summaryInvalidConfig,
					err.Error()+". Set node to one of the provider's nodes, or add the node to the provider's nodes.")
			}
		}
	}
	return diags
}

// Node drift. The state's node is where the VM is (Read puts the node Proxmox reports), and
// the configuration's node is where it should be. A difference is either the user moving the
// VM (the configuration changed) or the VM moved outside Terraform (HA, maintenance): both
// plan an in-place migration, never a replacement. With migrate_back = false the second kind
// is accepted: the plan keeps the node the VM is on. To tell the two apart, the node the
// configuration asked for at the last apply is kept in the private state under
// privateKeyNode; a configured node equal to it is not a request to move.

// nodeRecord is the value of privateKeyNode. Configured is empty when the
// configuration set no node (automatic placement).
type nodeRecord struct {
	Configured string `json:"configured"`
}

// readNodeRecord returns the node recorded at the last apply; ok is false without a record.
func readNodeRecord(ctx context.Context, p privateGetter) (string, bool, diag.Diagnostics) {
	r, ok, diags := privateKeyNode.read(ctx, p)
	return r.Configured, ok, diags
}

// writeNodeRecord records the configuration's node (empty: none set).
func writeNodeRecord(ctx context.Context, p privateSetter, configured types.String) diag.Diagnostics {
	return privateKeyNode.write(ctx, p, nodeRecord{Configured: configured.ValueString()})
}

// planNodeDrift keeps the node the VM is on when migrate_back is false and the configured
// node is the one recorded at the last apply (Read records the state's node when there is
// no record yet): the VM moved, the configuration did not.
func planNodeDrift(config proxyVMModel, plan *proxyVMModel, prior *proxyVMModel, recorded string, hasRecord bool) {
	if prior == nil || config.Node.IsNull() || config.Node.IsUnknown() || prior.Node.IsNull() || prior.Node.IsUnknown() {
		return
	}
	if config.MigrateBack.IsNull() || config.MigrateBack.IsUnknown() || config.MigrateBack.ValueBool() {
		return
	}
	if config.Node.Equal(prior.Node) || !hasRecord || recorded != config.Node.ValueString() {
		return
	}
	plan.Node = prior.Node
}

// nodeChange is the migration an update asks for: the planned node when it is known and
// differs from the node the VM is on.
func nodeChange(prior, plan types.String) *string {
	v, ok := knownString(plan)
	if !ok || plan.Equal(prior) {
		return nil
	}
	return &v
}

// recordConfiguredNode records the configuration's node after a create or an update.
func recordConfiguredNode(ctx context.Context, config tfsdk.Config, p privateSetter) diag.Diagnostics {
	if isNilPrivate(p) {
		return nil
	}
	var node types.String
	diags := config.GetAttribute(ctx, path.Root("node"), &node)
	if diags.HasError() || node.IsUnknown() {
		return diags
	}
	return append(diags, writeNodeRecord(ctx, p, node)...)
}

// recordNodeIfAbsent gives a state without a record (an import) the node it held before
// this refresh: the node the last apply left.
func recordNodeIfAbsent(ctx context.Context, in privateGetter, out privateSetter, node types.String) diag.Diagnostics {
	if isNilPrivate(in) || isNilPrivate(out) || node.IsNull() || node.IsUnknown() {
		return nil
	}
	if _, ok, diags := readNodeRecord(ctx, in); ok || diags.HasError() {
		return diags
	}
	return writeNodeRecord(ctx, out, node)
}

// planPool: the resource's pool, else the provider's, else none for a new VM and the pool
// it is in for an existing one.
func planPool(cfg *resolvedConfig, config proxyVMModel, plan, prior *proxyVMModel) {
	if !config.Pool.IsNull() {
		return // set (or unknown): the plan carries it
	}
	switch {
	case cfg.Pool != "":
		plan.Pool = types.StringValue(cfg.Pool)
	case prior == nil:
		plan.Pool = types.StringNull()
	default:
		plan.Pool = prior.Pool
	}
}

// poolValue is the pool read back: the VM's, or, in no pool, "" when that is what the
// state said (a configured pool = ""), else null.
func poolValue(pool string, prior types.String) types.String {
	if pool == "" && prior.IsNull() {
		return types.StringNull()
	}
	if pool == "" && !prior.IsUnknown() && prior.ValueString() == "" {
		return types.StringValue("")
	}
	return stringOrNull(pool)
}

// poolChange is the pool move an update asks for: the planned pool when it is known and
// names another pool than the state's ("" and null both meaning none).
func poolChange(prior, plan types.String) (*string, string) {
	v, ok := knownString(plan)
	if !ok {
		return nil, ""
	}
	from := prior.ValueString() // null and unknown: ""
	if v == from {
		return nil, from
	}
	return &v, from
}

// poolUnverifiedWarning is the refresh's warning for a pool the token may not see.
func poolUnverifiedWarning(vm proxmox.VM) (string, string) {
	return "Pool of the proxy VM not verified",
		fmt.Sprintf("%s: the cluster listing shows no pool for the VM, and the API token lacks Pool.Audit on /pool/%s, so Proxmox "+
			"would hide it there: the state keeps pool %q. Grant Pool.Audit on /pool/%s (the role PVEPoolUser, see the setup guide) "+
			"so that a VM moved out of the pool shows as a change.", vmLabel(vm.ID.Name, vm.ID.VMID), vm.Pool, vm.Pool, vm.Pool)
}
