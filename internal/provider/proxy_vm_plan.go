package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

const summaryInvalidConfig = "Invalid proxy VM configuration"

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
