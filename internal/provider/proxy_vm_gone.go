package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// A VM deleted outside Terraform (decision: drift-gone). A refresh that finds the tracked
// VM gone, or its VMID held by a VM that is not this resource's, keeps the resource in the
// state with status "deleted" (and the reason in the private state) instead of dropping
// it: Read stays free of side effects, and the seed ISO the VM left (recorded in the
// private state) stays tied to a resource. The plan then replaces it ("must be replaced",
// status "deleted" forcing it, with a warning saying the VM was deleted outside
// Terraform), so Delete runs: it deletes the recorded seed and never touches a VM at that
// VMID that is not this resource's. A destroy plan removes the seed the same way.

// statusDeleted is the status of a VM a refresh found gone.
const statusDeleted = "deleted"

// goneRecord is the value of privateKeyGone: why the last refresh found the VM gone.
type goneRecord struct {
	Reason string `json:"reason"`
}

// writeGone records (reason set) or clears (reason "") why the VM is gone.
func writeGone(ctx context.Context, p privateSetter, reason string) diag.Diagnostics {
	if reason == "" {
		return privateKeyGone.clear(ctx, p)
	}
	return privateKeyGone.write(ctx, p, goneRecord{Reason: reason})
}

// readGone returns the recorded reason, "" when none.
func readGone(ctx context.Context, p privateGetter) string {
	r, _, _ := privateKeyGone.read(ctx, p)
	return r.Reason
}

// isGone reports whether a state says the last refresh found the VM gone.
func isGone(m *proxyVMModel) bool {
	return m != nil && m.Status.ValueString() == statusDeleted
}

// markGone is what Read keeps of a VM it found gone: the state as it was, status
// "deleted", no address.
func markGone(m *proxyVMModel) {
	m.Status = types.StringValue(statusDeleted)
	m.IPAddress = types.StringNull()
}

// goneDetail says what happened to the VM and what the plan does about it.
func goneDetail(name string, vmid int, reason, seed string, replace bool) string {
	if reason == "" {
		reason = "the last refresh did not find it"
	}
	what := "the destroy touches no VM but this resource's"
	if seed != "" {
		what = "the destroy deletes the seed ISO it left, " + seed + ", and touches no VM but this resource's"
	}
	msg := fmt.Sprintf("%s was deleted outside Terraform (%s). ", vmLabel(name, vmid), reason)
	if replace {
		return msg + "This plan replaces it: first " + what + "; then a new VM is created. To create none, remove the resource from the configuration."
	}
	return msg + "Nothing of it is left after this plan: " + what + "."
}

// planGone plans the replacement of a VM the refresh found gone, with a warning saying
// why. The rest of ModifyPlan is the create's, which Terraform plans next with no prior
// state.
func planGone(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, prior, plan *proxyVMModel) {
	plan.Status = types.StringUnknown()
	resp.RequiresReplace = append(resp.RequiresReplace, path.Root("status"))
	resp.Diagnostics.AddWarning("Proxy VM deleted outside Terraform",
		goneDetail(prior.Name.ValueString(), int(prior.VMID.ValueInt64()), readGone(ctx, req.Private), readSeed(ctx, req.Private), true))
	resp.Diagnostics.Append(resp.Plan.Set(ctx, plan)...)
}

// warnGoneDestroy says, in a destroy plan, that the VM is already gone and what the
// destroy removes.
func warnGoneDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() {
		return
	}
	var prior proxyVMModel
	if diags := req.State.Get(ctx, &prior); diags.HasError() || !isGone(&prior) {
		return
	}
	resp.Diagnostics.AddWarning("Proxy VM deleted outside Terraform",
		goneDetail(prior.Name.ValueString(), int(prior.VMID.ValueInt64()), readGone(ctx, req.Private), readSeed(ctx, req.Private), false))
}

// goneReason is the backend's reason for a VM it did not find, without the operation and
// VM prefix (the diagnostic names the VM), redacted.
func goneReason(err error, redact func(string) string) string {
	msg := err.Error()
	var e *proxmox.Error
	if errors.As(err, &e) && e.Err != nil {
		msg = e.Err.Error()
	}
	return redact(trimEnd(msg))
}
