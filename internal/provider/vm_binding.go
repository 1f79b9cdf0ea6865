package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// The refusal to replace or destroy an unbound resource (decision: state-binding): while
// the state records no SMBIOS uuid (a 0.1.0 state, an import of an unbound mark), nothing
// tells the resource's VM, changed outside Terraform, from another VM carrying a copy of
// its mark. A replacement would destroy the VM at the VMID if the provider took it for
// the resource's, or leave the resource's VM and its seed ISO behind if it did not (adv3
// N1, B2, U4, N6), so the plan stops instead, before anything is written.

// unbound reports a prior state that recorded no SMBIOS uuid.
func unbound(prior *proxyVMModel) bool {
	if prior == nil {
		return false
	}
	v, ok := knownString(prior.SMBIOSUUID)
	return !ok || v == ""
}

// unboundReplaces says what makes a plan of an unbound resource replace its VM: the paths
// in replace (the facets' and the seed's) and the attributes whose schema plan modifiers
// replace it (name, a smaller disk_gib, another template_vmid), which ModifyPlan does not
// see. A guest agent switched off outside Terraform stops the plan too: a bound resource
// has it switched back on in place (agentOn), with a restart, but nothing shows that the
// VM of an unbound one is this resource's, so it is neither written to nor restarted on a
// guess; the user switches the agent back on, and the next apply binds the resource.
func unboundReplaces(prior, plan *proxyVMModel, replace path.Paths) []string {
	var what []string
	if !plan.Name.Equal(prior.Name) {
		what = append(what, fmt.Sprintf("name changes from %s to %s", prior.Name, plan.Name))
	}
	if a := prior.AgentEnabled; !a.IsNull() && !a.IsUnknown() && !a.ValueBool() {
		what = append(what, "the VM's guest agent was switched off outside Terraform (agent_enabled = false)")
	}
	if diskShrinks(prior.DiskGiB, plan.DiskGiB) {
		what = append(what, fmt.Sprintf("disk_gib shrinks from %s to %s", prior.DiskGiB, plan.DiskGiB))
	}
	if !prior.TemplateVMID.IsNull() && !plan.TemplateVMID.IsUnknown() && !plan.TemplateVMID.Equal(prior.TemplateVMID) {
		what = append(what, fmt.Sprintf("template_vmid changes from %s to %s", prior.TemplateVMID, plan.TemplateVMID))
	}
	for _, p := range replace {
		what = append(what, p.String()+" changes, which replaces the VM")
	}
	return what
}

// refuseUnbound adds the plan's error for an unbound resource whose plan would verb
// ("replace", "destroy") its VM because of why.
func refuseUnbound(resp *resource.ModifyPlanResponse, prior *proxyVMModel, verb, why, seed string) {
	vmid, _ := knownInt(prior.VMID)
	id := strconv.Itoa(vmid)
	notIt := "If it is not, remove the resource from the state (`terraform state rm` of this proxy_vm) and import the VM meant, " +
		"or apply to create a new one."
	if seed != "" {
		notIt = "If it is not, remove the resource from the state (`terraform state rm` of this proxy_vm), delete its seed ISO " +
			seed + " if no VM has it on a drive, and import the VM meant or apply to create a new one."
	}
	resp.Diagnostics.AddError("Unable to "+verb+" proxy VM", vmLabel(prior.Name.ValueString(), vmid)+": this plan would "+verb+
		" the VM: "+why+". The state records no SMBIOS uuid for it (a state made by version 0.1.0, or an import of a VM whose mark "+
		"had no instance line), so nothing shows whether the VM at VMID "+id+" is this resource's VM changed outside Terraform or "+
		"another VM carrying a copy of its mark: going on could destroy a VM that is not this resource's, or leave this resource's "+
		"VM and its seed ISO behind. Nothing was changed. If it is this resource's VM (`qm config "+id+"`: its name, disks, memory "+
		"and seed ISO), restore what changed outside Terraform, or make the configuration match it, and apply: that apply binds "+
		"the resource to the VM's SMBIOS uuid, and any change is then planned as usual. "+notIt)
}

// refuseUnboundGone refuses the plan (replace) or destroy plan of an unbound resource
// whose refresh found a VM at its VMID that is not shown to be this resource's
// (goneRecord.NotOurs); it reports whether it did.
func refuseUnboundGone(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse,
	prior *proxyVMModel, verb string) bool {
	rec := readGoneRecord(ctx, req.Private)
	if !isGone(prior) || !unbound(prior) || !rec.NotOurs {
		return false
	}
	refuseUnbound(resp, prior, verb, "the refresh found that VM not shown to be this resource's ("+
		strings.TrimSuffix(rec.Reason, ".")+")", readSeed(ctx, req.Private))
	return true
}

// refuseUnboundDestroy is refuseUnboundGone for a destroy plan.
func refuseUnboundDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() {
		return
	}
	var prior proxyVMModel
	if diags := getState(ctx, req.State, &prior); diags.HasError() {
		return
	}
	refuseUnboundGone(ctx, req, resp, &prior, "destroy")
}
