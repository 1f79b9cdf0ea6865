package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// The HA preflight (proxmox.PreflightHA): a plan that writes an HA rule or a VM's HA
// resource with a token that lacks Sys.Audit or Sys.Console on / fails, naming the privilege
// and the path, before anything is touched.

// haPreflight reports, once per provider instance, a token that lacks the HA privileges
// (proxmox.PreflightHA) for what (a proxy_ha_rule, or a proxy_vm with ha): the plan stops
// before anything is touched. A check that could not be made leaves the verdict to the apply.
func haPreflight(ctx context.Context, data *providerData, what string, diags *diag.Diagnostics) {
	if data == nil || data.backend == nil {
		return
	}
	err := data.backend.PreflightHA(ctx)
	if err == nil {
		return
	}
	var pe *proxmox.PreflightError
	if !errors.As(err, &pe) {
		if proxmox.ClassOf(err) == proxmox.Permanent {
			diags.AddError("Unable to plan HA", fmt.Sprintf("%s: checking the API token's HA privileges failed: %s.", what, trimEnd(err.Error())))
		}
		tflog.Debug(ctx, "HA preflight inconclusive, left to the apply", map[string]any{"error": err.Error()})
		return
	}
	msg := redactFor(data, pe.Err.Err.Error())
	if !data.reportOnce("preflight-ha\x00" + msg) {
		diags.AddError("Unable to plan HA", fmt.Sprintf("%s: %s (reported in full above).", what, "the API token lacks the HA privileges"))
		return
	}
	diags.AddError("Unable to plan HA", fmt.Sprintf("%s: %s.\n\nRetrying will not help. Nothing was touched.", what, capitalize(trimEnd(msg))))
}

// vmHAWrites reports whether a proxy_vm plan writes the VM's HA resource: ha set on a
// create, or ha added, changed or removed on an update.
func vmHAWrites(prior *proxyVMModel, plan proxyVMModel) bool {
	set := func(h vmHA) bool { return h.value() != nil }
	if prior == nil {
		return set(plan.vmHA)
	}
	return !prior.HA.Equal(plan.HA) && (set(prior.vmHA) || set(plan.vmHA))
}
