package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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
	// NotOurs: a VM is at the VMID, with the resource's name, but its mark no longer proves
	// it this resource's (no mark, another uid, none; proxmox.ErrNotOurs): it was not
	// deleted, and is left alone.
	NotOurs bool `json:"not_ours,omitempty"`
}

// writeGone records (reason set) or clears (reason "") why the VM is gone.
func writeGone(ctx context.Context, p privateSetter, reason string) diag.Diagnostics {
	return writeGoneRecord(ctx, p, goneRecord{Reason: reason})
}

// writeGoneRecord records (r.Reason set) or clears (r.Reason "") why the VM is gone.
func writeGoneRecord(ctx context.Context, p privateSetter, r goneRecord) diag.Diagnostics {
	if r.Reason == "" {
		return privateKeyGone.clear(ctx, p)
	}
	return privateKeyGone.write(ctx, p, r)
}

// readGoneRecord returns the record, the zero record when none.
func readGoneRecord(ctx context.Context, p privateGetter) goneRecord {
	r, _, _ := privateKeyGone.read(ctx, p)
	return r
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

// goneSummary is the warning's summary for r: a VM deleted outside Terraform, or one that
// is still there but no longer shown to be this resource's.
func goneSummary(r goneRecord) string {
	if r.NotOurs {
		return "Proxy VM no longer shown to be this resource's"
	}
	return "Proxy VM deleted outside Terraform"
}

// goneDetailOf says what happened to the VM (r) and what the plan does about it.
func goneDetailOf(name string, vmid int, r goneRecord, seed string, replace bool) string {
	reason := r.Reason
	if reason == "" {
		reason = "the last refresh did not find it"
	}
	if r.NotOurs {
		what := "the destroy leaves the VM at VMID " + strconv.Itoa(vmid) + " as it is and touches no VM but this resource's"
		if seed != "" {
			what += "; it deletes the seed ISO recorded for this resource, " + seed + ", unless a VM has it on a drive (that VM, if it still does)"
		}
		msg := fmt.Sprintf("The VM with VMID %d exists but is no longer shown to be this resource's, %q (%s): its "+
			"mark (the proxy-operator-* lines "+
			"of its description) was changed or removed outside Terraform, so the provider does not touch it. ", vmid, name, reason)
		if replace {
			return msg + "This plan replaces it: first " + what + "; then a new VM is created. If that VM is still meant to be this resource's, " +
				"restore its mark before applying; to create none, remove the resource from the configuration."
		}
		return msg + "This destroy removes only the resource: " + what + "."
	}
	what := "the destroy touches no VM but this resource's"
	if seed != "" {
		what = "the destroy deletes the seed ISO it left, " + seed + ", and touches no VM but this resource's"
	}
	msg := fmt.Sprintf("%s was deleted outside Terraform (%s). ", vmLabel(name, vmid), reason)
	if replace {
		return msg + "This plan replaces it: first " + what + "; then a new VM is created. To create none, remove the " +
			"resource from the configuration."
	}
	return msg + "Nothing of it is left after this plan: " + what + "."
}

// planGone plans the replacement of a VM the refresh found gone, with a warning saying
// why. The rest of ModifyPlan is the create's, which Terraform plans next with no prior
// state.
func planGone(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, prior, plan *proxyVMModel) {
	plan.Status = types.StringUnknown()
	resp.RequiresReplace = append(resp.RequiresReplace, path.Root("status"))
	rec := readGoneRecord(ctx, req.Private)
	resp.Diagnostics.AddWarning(goneSummary(rec),
		goneDetailOf(prior.Name.ValueString(), int(prior.VMID.ValueInt64()), rec, readSeed(ctx, req.Private), true))
	resp.Diagnostics.Append(setPlan(ctx, &resp.Plan, plan)...)
}

// warnGoneDestroy says, in a destroy plan, that the VM is already gone and what the
// destroy removes.
func warnGoneDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() {
		return
	}
	var prior proxyVMModel
	if diags := getState(ctx, req.State, &prior); diags.HasError() || !isGone(&prior) {
		return
	}
	rec := readGoneRecord(ctx, req.Private)
	resp.Diagnostics.AddWarning(goneSummary(rec),
		goneDetailOf(prior.Name.ValueString(), int(prior.VMID.ValueInt64()), rec, readSeed(ctx, req.Private), false))
}

// goneRecordOf is what Read records of err, the backend's NotFound for the VM.
func goneRecordOf(err error, redact func(string) string) goneRecord {
	return goneRecord{Reason: goneReason(err, redact), NotOurs: errors.Is(err, proxmox.ErrNotOurs)}
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
