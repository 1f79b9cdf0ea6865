package provider

import (
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

// inPlaceSummaries are the plan warnings that describe an in-place update of the VM (a
// restart, a change left pending, a seed swapped in place): false on a plan that replaces
// the VM, which makes a new VM instead (adversary finding B3).
var inPlaceSummaries = []string{
	"Proxy VM will be restarted", "Proxy VM may be restarted", "Proxy VM change pending", "Proxy VM pending change dropped",
	"Proxy VM seed replaced in place", "Proxy VM memory hotplug refused",
}

// replacesVM reports whether the plan replaces the VM: a replacement ModifyPlan decided
// (replace), or one an attribute's plan modifier decided, which ModifyPlan does not see:
// a new name, the guest agent switched off (agentModifier), a smaller disk
// (diskShrinkRequiresReplace) or another template.
func replacesVM(replace path.Paths, prior, plan *proxyVMModel) bool {
	if len(replace) > 0 {
		return true
	}
	if prior == nil {
		return false
	}
	if a := prior.AgentEnabled; !a.IsNull() && !a.IsUnknown() && !a.ValueBool() {
		return true
	}
	if n, ok := knownString(plan.Name); ok && n != prior.Name.ValueString() {
		return true
	}
	was, wasOK := knownInt(prior.TemplateVMID)
	now, nowOK := knownInt(plan.TemplateVMID)
	return diskShrinks(prior.DiskGiB, plan.DiskGiB) || wasOK && nowOK && was != now
}

// withoutInPlaceWarnings drops inPlaceSummaries' warnings from the diagnostics of a plan
// that replaces the VM (replaces); others are kept.
func withoutInPlaceWarnings(diags diag.Diagnostics, replaces bool) diag.Diagnostics {
	if !replaces {
		return diags
	}
	return slices.DeleteFunc(slices.Clone(diags), func(d diag.Diagnostic) bool {
		return d.Severity() == diag.SeverityWarning && slices.Contains(inPlaceSummaries, d.Summary())
	})
}

// agentOffWarning says, on a plan that replaces the VM because its guest agent was switched
// off outside Terraform (agentModifier), that the apply destroys the VM and clones a new
// one, and how to keep it instead: switch the agent back on in Proxmox before applying
// (adv1 finding 13). None for any other plan.
func agentOffWarning(prior *proxyVMModel) diag.Diagnostics {
	if prior == nil {
		return nil
	}
	if a := prior.AgentEnabled; a.IsNull() || a.IsUnknown() || a.ValueBool() {
		return nil
	}
	vmid, _ := knownInt(prior.VMID)
	var diags diag.Diagnostics
	diags.AddAttributeWarning(path.Root("agent_enabled"), "Proxy VM replaced: its guest agent was switched off",
		fmt.Sprintf("%s: its QEMU guest agent option was switched off outside Terraform, and without it the VM cannot report its address, "+
			"so this plan destroys the VM and clones a new one (a new VMID, MAC address and disks). To keep the VM, do not apply: switch the "+
			"agent back on (`qm set %d --agent 1` on its node, then stop and start the VM) and plan again.",
			vmLabel(prior.Name.ValueString(), vmid), vmid))
	return diags
}
