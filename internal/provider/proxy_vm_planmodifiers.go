package provider

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Import markers. An import cannot read back the cloud-init text, nor (in general) which
// template a VM was cloned from. ImportState records which of them it left null in the
// private state under privateKeyImport; the RequiresReplace of those attributes is then
// suppressed while their prior value is null, so the first value a configuration sets
// after an import is recorded in place instead of replacing a healthy VM. Once a value is
// recorded the prior value is no longer null and the marker has no effect; any later
// replacement starts from a fresh private state. A VM created by Terraform never has a
// marker, so setting cloud_init on it later does replace it (cloud-init runs at first boot
// only).

type unreadAttr string

const (
	unreadCloudInit unreadAttr = "cloud_init"
	unreadTemplate  unreadAttr = "template"
	unreadNetwork   unreadAttr = "network" // network_config and static_ipv4 (vm_network.go)
)

// importMarker is the value of privateKeyImport.
type importMarker struct {
	Unread []unreadAttr `json:"unread"`
}

// readImportMarker returns the attributes an import left unread; none without a marker.
func readImportMarker(ctx context.Context, p privateGetter) ([]unreadAttr, diag.Diagnostics) {
	// A marker we cannot read suppresses nothing: replacements stay as configured.
	m, _, diags := privateKeyImport.read(ctx, p)
	return m.Unread, diags
}

// writeImportMarker stores unread, or removes the marker when unread is empty.
func writeImportMarker(ctx context.Context, p privateSetter, unread []unreadAttr) diag.Diagnostics {
	if len(unread) == 0 {
		return privateKeyImport.clear(ctx, p)
	}
	return privateKeyImport.write(ctx, p, importMarker{Unread: unread})
}

// isUnread reports whether the import marker lists a.
func isUnread(ctx context.Context, p privateGetter, a unreadAttr) (bool, diag.Diagnostics) {
	unread, diags := readImportMarker(ctx, p)
	return slices.Contains(unread, a), diags
}

// replaceUnlessUnread is the decision of requiresReplaceUnlessUnread*: an update (prior and
// planned objects exist) that changes the value replaces the VM, unless the prior value is
// null because an import could not read it.
func replaceUnlessUnread(creatingOrDestroying, equal, priorNull, unread bool) bool {
	if creatingOrDestroying || equal {
		return false
	}
	return !priorNull || !unread
}

// requiresReplaceUnlessUnreadInt64 is RequiresReplace, except for the first value set
// after an import that could not read the attribute back. (cloud_init's replacement is
// decided in ModifyPlan, with cloud_init_wo: planCloudInitDigest.)
func requiresReplaceUnlessUnreadInt64(a unreadAttr) planmodifier.Int64 {
	return unlessUnreadModifier{attr: a}
}

type unlessUnreadModifier struct{ attr unreadAttr }

var (
	_ planmodifier.String = unlessUnreadModifier{}
	_ planmodifier.Int64  = unlessUnreadModifier{}
)

func (m unlessUnreadModifier) Description(context.Context) string {
	return "Changing the value replaces the VM, except for the first value set after an import that could not read it back."
}

func (m unlessUnreadModifier) MarkdownDescription(ctx context.Context) string {
	return m.Description(ctx)
}

func (m unlessUnreadModifier) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	resp.RequiresReplace, resp.Diagnostics = m.decide(ctx, req.State.Raw.IsNull() || req.Plan.Raw.IsNull(),
		req.PlanValue.Equal(req.StateValue), req.StateValue.IsNull(), req.Private)
}

func (m unlessUnreadModifier) PlanModifyInt64(ctx context.Context, req planmodifier.Int64Request, resp *planmodifier.Int64Response) {
	resp.RequiresReplace, resp.Diagnostics = m.decide(ctx, req.State.Raw.IsNull() || req.Plan.Raw.IsNull(),
		req.PlanValue.Equal(req.StateValue), req.StateValue.IsNull(), req.Private)
}

func (m unlessUnreadModifier) decide(ctx context.Context, createOrDestroy, equal, priorNull bool,
	p privateGetter) (bool, diag.Diagnostics) {
	var unread bool
	var diags diag.Diagnostics
	if !createOrDestroy && !equal && priorNull {
		unread, diags = isUnread(ctx, p, m.attr)
	}
	return replaceUnlessUnread(createOrDestroy, equal, priorNull, unread), diags
}

// diskShrinkRequiresReplace replaces the VM when disk_gib is planned below its prior value:
// Proxmox never shrinks a disk. Growing is an in-place resize.
func diskShrinkRequiresReplace() planmodifier.Int64 {
	return int64planmodifier.RequiresReplaceIf(
		func(_ context.Context, req planmodifier.Int64Request, resp *int64planmodifier.RequiresReplaceIfFuncResponse) {
			resp.RequiresReplace = diskShrinks(req.StateValue, req.PlanValue)
		},
		"Growing the disk resizes it in place; a smaller value replaces the VM (a disk is never shrunk).",
		"Growing the disk resizes it in place; a smaller value replaces the VM (a disk is never shrunk).",
	)
}

// diskShrinks reports whether a known plan is below a known prior size.
func diskShrinks(prior, planned types.Int64) bool {
	if prior.IsNull() || prior.IsUnknown() || planned.IsNull() || planned.IsUnknown() {
		return false
	}
	return planned.ValueInt64() < prior.ValueInt64()
}

// agentOn plans agent_enabled = true on a VM whose guest agent was switched off outside
// Terraform: without it the VM can never report an address. The update switches it back
// on in place (the agent proxmox.RestartOption), restarting a running VM as for cpu_type
// (planOptionRestarts says so in the plan); the VM is kept.
func agentOn() planmodifier.Bool { return agentModifier{} }

type agentModifier struct{}

var _ planmodifier.Bool = agentModifier{}

func (agentModifier) Description(context.Context) string {
	return "A VM whose guest agent was switched off is switched back on in place; a running VM is restarted for it."
}

func (m agentModifier) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (agentModifier) PlanModifyBool(_ context.Context, req planmodifier.BoolRequest, resp *planmodifier.BoolResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() || req.StateValue.IsNull() || req.StateValue.IsUnknown() {
		return
	}
	resp.PlanValue = types.BoolValue(true)
}
