package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// warnNetworkConfigNoIPv4 warns on network_config when a VM is about to be created (a new
// one, or the replacement a changed network_config makes) that waits for an IPv4 address
// its network_config certainly does not give: the create would fail about a minute after
// the guest agent first answers. A configuration it cannot read for sure gets no warning.
func warnNetworkConfigNoIPv4(config proxyVMModel, prior *proxyVMModel) diag.Diagnostics {
	var d diag.Diagnostics
	nc := config.NetworkConfig
	switch {
	case nc.IsNull() || nc.IsUnknown():
		return d
	case config.WaitForIP.IsUnknown() || (!config.WaitForIP.IsNull() && !config.WaitForIP.ValueBool()):
		return d
	case prior != nil && prior.NetworkConfig.Equal(nc):
		return d // no create: the VM keeps its network
	case !proxmox.ConfiguresNoIPv4([]byte(nc.ValueString())):
		return d
	}
	d.AddAttributeWarning(path.Root("network_config"), "Network configuration gives the proxy VM no IPv4 address",
		"The network_config configures no IPv4 address on any interface (version 2: no dhcp4: true and no IPv4 in addresses; "+
			"version 1: no subnet of type dhcp, dhcp4, or static with an IPv4 address), but wait_for_ip is true: the create "+
			"waits for an IPv4 address from the guest agent and fails about a minute after the agent answers without one. "+
			"Give the guest an IPv4 address, or set wait_for_ip = false for a guest without one.")
	return d
}
