package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

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
func nodeChange(prior, plan proxyVMModel) *string {
	v, ok := knownString(plan.Node)
	if !ok || plan.Node.Equal(prior.Node) {
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
