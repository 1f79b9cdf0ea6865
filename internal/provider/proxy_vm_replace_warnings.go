package provider

import (
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
// a new name, a smaller disk (diskShrinkRequiresReplace) or another template. (A guest
// agent switched off outside Terraform is switched back on in place: agentOn.)
func replacesVM(replace path.Paths, prior, plan *proxyVMModel) bool {
	if len(replace) > 0 {
		return true
	}
	if prior == nil {
		return false
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
