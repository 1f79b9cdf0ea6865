package proxmox

import (
	"context"
	"net/netip"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Addresses are the guest's addresses as its agent reports them: every IPv4 and IPv6
// address that is not loopback, link-local or unspecified, in the agent's order (interface
// by interface, then address by address), and the interface the VM's address comes from.
type Addresses struct {
	IPv4 []string
	IPv6 []string
	// Interface is the guest's name of the interface carrying the first IPv4 (the VM's
	// ip_address), or without one the first IPv6; empty when there is neither.
	Interface string
}

// agentAddresses reads Addresses from a guest-network-get-interfaces answer. Loopback
// interfaces ("lo") are skipped whole; IPv4 link-local is 169.254/16, IPv6 fe80::/10.
func agentAddresses(ifaces []pveapi.NetworkInterface) Addresses {
	var a Addresses
	v6From := ""
	for _, i := range ifaces {
		if i.Name == "lo" {
			continue
		}
		for _, ad := range i.IPAddresses {
			ip, err := netip.ParseAddr(ad.Address)
			if err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
				continue
			}
			ip = ip.WithZone("")
			switch {
			case ad.Type == "ipv4" && ip.Is4():
				if len(a.IPv4) == 0 {
					a.Interface = i.Name
				}
				a.IPv4 = append(a.IPv4, ip.String())
			case ad.Type == "ipv6" && ip.Is6() && !ip.Is4In6():
				if len(a.IPv6) == 0 {
					v6From = i.Name
				}
				a.IPv6 = append(a.IPv6, ip.String())
			}
		}
	}
	if a.Interface == "" {
		a.Interface = v6From
	}
	return a
}

// AgentAddresses asks a running VM's guest agent for its addresses: one request. An agent
// that does not answer yet (booting, not installed, switched off) is no addresses and no
// error; anything else is the error.
func (b *Backend) AgentAddresses(ctx context.Context, node string, vmid int) (Addresses, error) {
	ifaces, err := b.api.AgentNetworkInterfaces(ctx, node, vmid)
	switch {
	case err == nil:
		return agentAddresses(ifaces), nil
	case isAgentNotRunning(err), isNoAgentConfigured(err), isVMNotRunning(err):
		return Addresses{}, nil
	}
	return Addresses{}, apiErrorf("list", err, "querying the guest agent of VMID %d on node %s", vmid, node)
}
