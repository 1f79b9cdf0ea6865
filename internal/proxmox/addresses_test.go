package proxmox

import (
	"slices"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestAgentAddresses_captureAndDualStack: the captured answer gives its one IPv4 (no IPv6:
// fe80:: is link-local) on ens18; a dual-stack guest with two NICs gives every global and
// unique-local address in the agent's order, skipping loopback, link-local (both families),
// unspecified and multicast, and names the interface of the first IPv4.
func TestAgentAddresses_captureAndDualStack(t *testing.T) {
	var res struct {
		Result []pveapi.NetworkInterface `json:"result"`
	}
	if err := fixture.MustLoad("agent_network_get_interfaces").Data(&res); err != nil {
		t.Fatal(err)
	}
	a := agentAddresses(res.Result)
	if !slices.Equal(a.IPv4, []string{"192.168.0.150"}) || len(a.IPv6) != 0 || a.Interface != "ens18" {
		t.Errorf("capture: %+v", a)
	}
	ip := func(addr, typ string) pveapi.IPAddress { return pveapi.IPAddress{Address: addr, Type: typ} }
	a = agentAddresses([]pveapi.NetworkInterface{
		{Name: "lo", IPAddresses: []pveapi.IPAddress{ip("127.0.0.1", "ipv4"), ip("::1", "ipv6")}},
		{Name: "docker0", IPAddresses: []pveapi.IPAddress{ip("fe80::1%docker0", "ipv6")}},
		{Name: "ens18", IPAddresses: []pveapi.IPAddress{
			ip("2001:db8::10", "ipv6"), ip("10.0.0.5", "ipv4"), ip("169.254.3.4", "ipv4"),
			ip("fe80::be24:11ff:feee:4883", "ipv6"), ip("fd00::5", "ipv6"), ip("10.0.0.6", "ipv4"),
		}},
		{Name: "ens19", IPAddresses: []pveapi.IPAddress{ip("0.0.0.0", "ipv4"), ip("ff02::1", "ipv6"), ip("192.0.2.7", "ipv4")}},
	})
	if !slices.Equal(a.IPv4, []string{"10.0.0.5", "10.0.0.6", "192.0.2.7"}) ||
		!slices.Equal(a.IPv6, []string{"2001:db8::10", "fd00::5"}) || a.Interface != "ens18" {
		t.Errorf("dual stack: %+v", a)
	}
	// IPv6 only: the interface of the first IPv6.
	a = agentAddresses([]pveapi.NetworkInterface{{Name: "eth1", IPAddresses: []pveapi.IPAddress{ip("2001:db8::9", "ipv6")}}})
	if a.Interface != "eth1" || len(a.IPv4) != 0 || !slices.Equal(a.IPv6, []string{"2001:db8::9"}) {
		t.Errorf("IPv6 only: %+v", a)
	}
	if a := agentAddresses(nil); a.Interface != "" || a.IPv4 != nil || a.IPv6 != nil {
		t.Errorf("none: %+v", a)
	}
}
