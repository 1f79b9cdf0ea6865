package proxmox

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// NetworkConfig is the network-config a VM's seed carries: cloud-init applies it at the
// instance's first boot instead of its DHCP fallback on the first NIC. Either Raw, written
// byte for byte, or Static, rendered for the NIC with net0's MAC address
// (nocloud.RenderStaticIPv4). Proxmox generates that MAC when it clones the template and
// writes it into the config only when the clone task ends (fact: clone-mac), so a Static seed
// is built after the clone task, not beside it.
type NetworkConfig struct {
	Raw    []byte
	Static *StaticIPv4
}

// StaticIPv4 is a static IPv4 configuration of the VM's first NIC (static_ipv4), as the
// seed renders it. The provider states it through this package, never nocloud's directly
// (docs/design/architecture.md: nocloud is the backend's).
type StaticIPv4 = nocloud.StaticIPv4

// ValidateNetworkConfig refuses a network-config cloud-init would not read: a non-empty
// YAML mapping with version 1 or 2, optionally under network: (nocloud.ValidateNetworkConfig).
func ValidateNetworkConfig(raw []byte) error { return nocloud.ValidateNetworkConfig(raw) }

// ConfiguresNoIPv4 reports a network-config that certainly gives no interface an IPv4
// address (nocloud.ConfiguresNoIPv4); false when it cannot tell.
func ConfiguresNoIPv4(raw []byte) bool { return nocloud.ConfiguresNoIPv4(raw) }

// Size is the length of the network-config the seed carries (a static configuration's
// rendering for a placeholder MAC), for the logs; 0 without one.
func (n *NetworkConfig) Size() int {
	switch {
	case n == nil:
		return 0
	case n.Static != nil:
		return len(nocloud.RenderStaticIPv4(*n.Static, "00:00:00:00:00:00"))
	}
	return len(n.Raw)
}

// needsMAC reports whether the seed can only be built once net0's MAC is known.
func (n *NetworkConfig) needsMAC() bool { return n != nil && n.Static != nil }

// WantIPv4 is the address the guest agent must report with a static address: the
// address without its prefix length; "" without one.
func (n *NetworkConfig) WantIPv4() string {
	if n == nil || n.Static == nil || !n.Static.Address.IsValid() {
		return ""
	}
	return n.Static.Address.Addr().String()
}

// render is the network-config file for a VM whose net0 is net0, nil when there is none.
func (n *NetworkConfig) render(net0 string) ([]byte, error) {
	switch {
	case n == nil:
		return nil, nil
	case n.Static != nil:
		mac := parseNet0(net0).MAC
		if mac == "" {
			return nil, Permanentf("the VM has no net0 with a MAC address, so static_ipv4 cannot be matched to its " +
				"NIC; give the template a network device, or use network_config")
		}
		return nocloud.RenderStaticIPv4(*n.Static, mac), nil
	default:
		return n.Raw, nil
	}
}

// NetworkDigest is the digest of a network configuration, written into the mark
// (MarkKeyNetworkDigest) so that an import can tell whether a configuration's network is
// the one the VM was made with: SHA-256 over a label and the raw text, or over the static
// form's rendering without a MAC (the mark is written with the clone, before Proxmox has
// made the MAC; the MAC is the VM's own, not configuration). A network-config is no
// secret, so the digest is not keyed. "" for no network configuration.
func NetworkDigest(n *NetworkConfig) string {
	if n == nil {
		return ""
	}
	h := sha256.New()
	if n.Static != nil {
		h.Write([]byte("proxy_vm static_ipv4\x00"))
		h.Write(nocloud.RenderStaticIPv4(*n.Static, ""))
	} else {
		h.Write([]byte("proxy_vm network_config\x00"))
		h.Write(n.Raw)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// staticAddressSeen says, for an address wait with a static address, what an agent answer
// holds: whether want is among its IPv4 addresses, and the others.
func staticAddressSeen(a Addresses, want string) (found bool, others string) {
	if slices.Contains(a.IPv4, want) {
		return true, ""
	}
	return false, strings.Join(a.IPv4, ", ")
}

// defaultStaticAddress is Budgets.StaticAddress when unset. cloud-init writes the guest's
// network configuration in its local stage, before the network (and the agent) comes up,
// so a guest whose agent reports another address has, nearly always, not applied the
// seed's network-config; the budget leaves room for an address change soon after boot.
const defaultStaticAddress = 60 * time.Second

func (b *Backend) staticAddressBudget() time.Duration {
	if d := b.cfg.Budgets.StaticAddress; d > 0 {
		return d
	}
	return defaultStaticAddress
}

// staticAddressErr is a guest that reports other addresses than its static one.
func staticAddressErr(want, others string, waited time.Duration) error {
	return Permanentf("the guest agent has reported %s for %s, but not the static address %s the seed's network-config gives the VM: "+
		"cloud-init did not apply it (a network-config its renderer refused, which falls back to DHCP on the first NIC, or an image "+
		"without NoCloud network support); check static_ipv4 or network_config and the guest's /var/log/cloud-init.log",
		others, waited.Round(time.Second), want)
}

// rawNetworkNoIPv4Err is a guest whose raw network_config gave it no IPv4 address: its
// agent has answered for waited without one. It names what the agent reports besides
// loopback, so an IPv6-only or an empty configuration is recognisable.
func rawNetworkNoIPv4Err(ifaces []pveapi.NetworkInterface, waited time.Duration) error {
	var seen []string
	for _, i := range ifaces {
		if i.Name == "lo" {
			continue
		}
		for _, a := range i.IPAddresses {
			seen = append(seen, a.Address)
		}
	}
	reports := "no address besides loopback"
	if len(seen) > 0 {
		reports = strings.Join(seen, ", ") + " only"
	}
	return Permanentf("the guest agent has answered for %s with %s: the network_config gave the guest no IPv4 address; "+
		"give an interface dhcp4: true or an IPv4 address in its addresses (a version 1 subnet of type dhcp or static with an IPv4), "+
		"or set wait_for_ip = false, which is for guests without an IPv4 address", waited.Round(time.Second), reports)
}
