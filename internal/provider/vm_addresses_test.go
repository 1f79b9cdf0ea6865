package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestVMAddresses_read: the facet's read takes what the agent reported, keeps the prior
// addresses on a refresh that did not ask it (running) or could not read the status, and
// clears them once the VM is stopped.
func TestVMAddresses_read(t *testing.T) {
	prior := vmAddresses{
		IPAddress:     types.StringValue("192.0.2.9"),
		IPv4Addresses: stringList([]string{"192.0.2.9"}), IPv6Addresses: stringList(nil),
		NetworkInterface: types.StringValue("ens18"),
	}
	reported := proxmox.Addresses{IPv4: []string{"192.0.2.10", "198.51.100.1"}, IPv6: []string{"2001:db8::1"}, Interface: "ens19"}
	cases := []struct {
		name     string
		vm       proxmox.VM
		ip, nic  types.String
		ipv4     types.List
		ipv6Null bool
	}{
		{"reported", proxmox.VM{State: proxmox.StateRunning, IP: "192.0.2.10", Addresses: reported},
			types.StringValue("192.0.2.10"), types.StringValue("ens19"), stringList(reported.IPv4), false},
		{"refresh while running keeps", proxmox.VM{State: proxmox.StateRunning},
			prior.IPAddress, prior.NetworkInterface, prior.IPv4Addresses, false},
		{"status unknown keeps", proxmox.VM{State: proxmox.StateStopped, StatusUnknown: true},
			prior.IPAddress, prior.NetworkInterface, prior.IPv4Addresses, false},
		{"stopped clears", proxmox.VM{State: proxmox.StateStopped},
			types.StringNull(), types.StringNull(), nullStringList, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := prior
			c.vm.MAC, c.vm.AgentEnabled = "BC:24:11:EE:48:83", true
			a.read(onVM(c.vm))
			if !a.IPAddress.Equal(c.ip) || !a.NetworkInterface.Equal(c.nic) || !a.IPv4Addresses.Equal(c.ipv4) || a.IPv6Addresses.IsNull() != c.ipv6Null {
				t.Errorf("read = %v %v %v %v, want %v %v %v (ipv6 null %v)", a.IPAddress, a.NetworkInterface, a.IPv4Addresses, a.IPv6Addresses, c.ip, c.nic, c.ipv4, c.ipv6Null)
			}
			if a.MACAddress.ValueString() != "BC:24:11:EE:48:83" || !a.AgentEnabled.ValueBool() {
				t.Errorf("mac %v agent %v, want the VM's", a.MACAddress, a.AgentEnabled)
			}
		})
	}
}

// TestVMAddresses_readNullsUnknown: a plan's unknown addresses (a start or restart) become
// null when the agent reported none; a zero model gets typed lists.
func TestVMAddresses_readNullsUnknown(t *testing.T) {
	var a vmAddresses
	a.IPAddress = types.StringUnknown()
	a.planAddressesUnknown()
	a.read(onVM(proxmox.VM{State: proxmox.StateRunning}))
	if !a.IPAddress.IsNull() || !a.IPv4Addresses.Equal(nullStringList) || !a.IPv6Addresses.Equal(nullStringList) || !a.NetworkInterface.IsNull() {
		t.Errorf("read after planAddressesUnknown = %+v, want every address null", a)
	}
}

// TestVMAddresses_nullUnknown: the partial state of a create has no unknown address, MAC
// address or agent flag, and typed null lists.
func TestVMAddresses_nullUnknown(t *testing.T) {
	a := vmAddresses{IPAddress: types.StringUnknown(), MACAddress: types.StringUnknown(), AgentEnabled: types.BoolUnknown()}
	a.planAddressesUnknown()
	a.nullUnknown()
	if !a.IPAddress.IsNull() || !a.MACAddress.IsNull() || !a.AgentEnabled.IsNull() || !a.NetworkInterface.IsNull() ||
		!a.IPv4Addresses.Equal(nullStringList) || !a.IPv6Addresses.Equal(nullStringList) {
		t.Errorf("nullUnknown = %+v, want every value null", a)
	}
	var zero vmAddresses
	zero.nullUnknown()
	if !zero.IPv4Addresses.Equal(nullStringList) || !zero.IPv6Addresses.Equal(nullStringList) {
		t.Errorf("nullUnknown of a zero model: lists %v %v, want typed nulls", zero.IPv4Addresses, zero.IPv6Addresses)
	}
}

// TestAddressesAttrs_dataSourcesShareTheResourceWording: the resource's and the proxy_vm
// data source's descriptions start with the same sentences, and only the resource's say
// what a refresh keeps.
func TestAddressesAttrs_dataSourcesShareTheResourceWording(t *testing.T) {
	res, ds := resourceAttributes(addressesAttrs()), dataAttributes(addressesAttrs())
	for _, a := range addressesAttrs() {
		r, d := res[a.name].GetMarkdownDescription(), ds[a.name].GetMarkdownDescription()
		if a.md == "" || r[:len(a.md)] != a.md || d[:len(a.md)] != a.md {
			t.Errorf("%s: resource %q, data source %q: both must start with %q", a.name, r, d, a.md)
		}
		if !ds[a.name].IsComputed() || ds[a.name].IsOptional() {
			t.Errorf("%s: the data source's attribute must be computed only", a.name)
		}
	}
}
