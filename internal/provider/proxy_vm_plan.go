package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

const summaryInvalidConfig = "Invalid proxy VM configuration"

// planProxyVM completes a plan from the provider's catalogue and defaults, without any
// backend call: a new VM's node, the template VMID an image resolves to, the
// sizes a machine type gives, the provider's network defaults, and the address that a
// start or restart makes unknown. Catalogue keys and node names are checked here, with
// the attribute's path; unknown values are tolerated until apply.
//
// prior is nil for a create. cfg is nil when the provider is not configured yet (its own
// configuration holds unknown values): then nothing is planned. templateUnread says an import left the
// template unread (no replacement for the first value set). It returns the paths whose
// change replaces the VM, beyond the attributes' own plan modifiers.
func planProxyVM(cfg *resolvedConfig, config proxyVMModel, plan *proxyVMModel, prior *proxyVMModel, templateUnread bool) ([]path.Path, diag.Diagnostics) {
	if cfg == nil {
		return nil, nil
	}
	// The uid of a new VM stays unknown: Create mints a random one (newUID).
	var diags diag.Diagnostics
	diags.Append(planPlacement(cfg, config, plan, prior)...)
	replace, d := planTemplate(cfg, config, plan, prior, templateUnread)
	diags.Append(d...)
	diags.Append(planSize(cfg, config, plan, prior)...)
	planNetworkDefaults(cfg, config, plan, prior)
	planAddressAfterRestart(plan, prior)
	diags.Append(planHA(config)...)
	return replace, diags
}

// planAddressAfterRestart makes the addresses unknown when the update starts the VM, or
// may restart it for a new value of a restart option (proxmox.RestartOptions): the guest
// may come back with other addresses. planPower keeps them when nothing restarts after all.
func planAddressAfterRestart(plan, prior *proxyVMModel) {
	if prior == nil {
		return
	}
	running := !prior.Status.IsNull() && !prior.Status.IsUnknown() && !needsStart(prior.Status)
	if needsStart(prior.Status) || (running && restartOptionChanges(*prior, *plan)) {
		plan.IPAddress = types.StringUnknown()
		plan.planAddressesUnknown()
	}
}

// validateProxyVMConfig holds the cross-field rules that need no provider data: the sizes
// come from machine_type or from both cores and memory_mib.
func validateProxyVMConfig(config proxyVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	if !config.MachineType.IsNull() {
		return nil
	}
	for _, a := range []struct {
		v    types.Int64
		name string
	}{{config.Cores, "cores"}, {config.MemoryMiB, "memory_mib"}} {
		if a.v.IsNull() {
			diags.AddAttributeError(path.Root(a.name), summaryInvalidConfig,
				"Without machine_type, "+a.name+" must be set: set machine_type to a key of the provider's "+
					"machine_types, or set both cores and memory_mib.")
		}
	}
	return diags
}
