package pvesim_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// seededNetwork clones, uploads a seed carrying networkConfig (rendered for the clone's
// MAC when it is a func) and attaches it, then starts the VM.
func (tg *target) seededNetwork(networkConfig func(mac string) []byte) string {
	tg.t.Helper()
	tg.cloned()
	conf, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		tg.t.Fatal(err)
	}
	mac := optOf(conf["net0"], "virtio")
	iso, err := nocloud.Build(nocloud.Seed{Name: captureName, UserData: []byte("#cloud-config\n"), InstallGuestAgent: true, NetworkConfig: networkConfig(mac)})
	if err != nil {
		tg.t.Fatal(err)
	}
	tg.mustOK(tg.upload(captureName+"-seed.iso", iso))
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"ide2": tg.seedVolID() + ",media=cdrom"}); err != nil {
		tg.t.Fatal(err)
	}
	tg.started()
	return strings.ToLower(mac)
}

// interfaces waits for the agent to answer with an IPv4 on a non-loopback interface, or,
// with none expected, for the agent and the network to be up.
func (tg *target) interfaces(wantV4 bool) []pveapi.NetworkInterface {
	tg.t.Helper()
	var ifs []pveapi.NetworkInterface
	tg.eventually("the agent's interfaces", func() bool {
		var err error
		ifs, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
		return err == nil && (!wantV4 || ipv4Of(ifs) != "")
	})
	if !wantV4 && tg.sim != nil {
		// The network is up DHCP's delay after the agent: look again after it.
		time.Sleep(tg.sim.WallTime(2 * tg.sim.Durations().DHCP))
		var err error
		if ifs, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid); err != nil {
			tg.t.Fatal(err)
		}
	}
	return ifs
}

// TestConformance_nocloudNetworkConfig: a seed whose network-config gives net0 (matched by
// its MAC) a static address makes the agent report that address with its prefix length
// instead of a DHCP lease, in the answer shape of the captured reply (the same interfaces,
// the same keys per interface and per address).
func TestConformance_nocloudNetworkConfig(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	static := netip.MustParsePrefix("10.77.3.41/27")
	mac := tg.seededNetwork(func(mac string) []byte {
		return nocloud.RenderStaticIPv4(nocloud.StaticIPv4{Address: static, Gateway: netip.MustParseAddr("10.77.3.33")}, mac)
	})
	ifs := tg.interfaces(true)
	var want struct {
		Result []map[string]any `json:"result"`
	}
	if err := fixture.MustLoad("agent_network_get_interfaces").Data(&want); err != nil {
		t.Fatal(err)
	}
	var names, wantNames []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	for _, i := range want.Result {
		wantNames = append(wantNames, i["name"].(string))
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("interfaces %v, want %v", names, wantNames)
	}
	ens := ifs[len(ifs)-1]
	if ens.HardwareAddress != mac || len(ens.IPAddresses) == 0 {
		t.Fatalf("ens18 %+v, want MAC %s with addresses", ens, mac)
	}
	if a := ens.IPAddresses[0]; a.Type != "ipv4" || a.Address != static.Addr().String() || a.Prefix != static.Bits() {
		t.Errorf("ens18's first address %+v, want the static %s with prefix %d", a, static.Addr(), static.Bits())
	}
	for _, a := range ens.IPAddresses {
		if a.Type == "ipv4" && a.Address != static.Addr().String() {
			t.Errorf("ens18 also reports %s: a static NIC has no DHCP lease", a.Address)
		}
	}
	var raw struct {
		Result []map[string]any `json:"result"`
	}
	tg.rawJSON("GET", fmt.Sprintf("/nodes/%s/qemu/%d/agent/network-get-interfaces", tg.node, tg.vmid), nil, &raw)
	for i := range raw.Result {
		if i >= len(want.Result) {
			break
		}
		if !slices.Equal(keysOf(raw.Result[i]), keysOf(want.Result[i])) {
			t.Errorf("interface %d keys %v, want %v", i, keysOf(raw.Result[i]), keysOf(want.Result[i]))
		}
		got, _ := raw.Result[i]["ip-addresses"].([]any)
		ref, _ := want.Result[i]["ip-addresses"].([]any)
		if len(got) == 0 || len(ref) == 0 {
			t.Errorf("interface %d: no ip-addresses to compare", i)
			continue
		}
		if !slices.Equal(keysOf(got[0].(map[string]any)), keysOf(ref[0].(map[string]any))) {
			t.Errorf("interface %d address keys %v, want %v", i, keysOf(got[0].(map[string]any)), keysOf(ref[0].(map[string]any)))
		}
	}
	if tg.sim != nil {
		if vm, _ := tg.sim.VM(tg.vmid); vm.IP != static.Addr().String() {
			t.Errorf("the simulator's VM IP %q, want the static address", vm.IP)
		}
		if sf, ok := tg.sim.GuestSeed(tg.vmid); !ok || !strings.Contains(string(sf.NetworkConfig), "macaddress: \""+mac+"\"") {
			t.Errorf("guest seed network-config %q", sf.NetworkConfig)
		}
	}
}

// TestGuestNetwork_staticVersusDHCP runs each kind of network-config through a boot and
// reads what the agent reports for ens18: DHCP without one, the static address with one
// (by MAC, by name, version 1 with a netmask, wrapped in network:), DHCP again for a text
// that is not YAML (cloud-init's fallback), and no IPv4 at all for a version cloud-init
// cannot parse.
func TestGuestNetwork_staticVersusDHCP(t *testing.T) {
	cases := []struct {
		name string
		nc   func(mac string) []byte
		want string // "dhcp", "none", or the address/prefix
	}{
		{"none", func(string) []byte { return nil }, "dhcp"},
		{"v2 by MAC", func(mac string) []byte {
			return []byte("version: 2\nethernets:\n  id0:\n    match:\n      macaddress: " + strings.ToUpper(mac) + "\n    addresses: [10.9.8.7/16]\n")
		}, "10.9.8.7/16"},
		{"v2 by name under network:", func(string) []byte {
			return []byte("network:\n  version: 2\n  ethernets:\n    ens18:\n      addresses: [\"172.16.5.9/24\"]\n")
		}, "172.16.5.9/24"},
		{"v2 dhcp4", func(mac string) []byte {
			return []byte("version: 2\nethernets:\n  e:\n    match: {name: \"ens*\"}\n    dhcp4: true\n")
		}, "dhcp"},
		{"v1 netmask", func(mac string) []byte {
			return []byte("version: 1\nconfig:\n  - type: physical\n    name: x\n    mac_address: " + mac + "\n    subnets:\n      - type: static\n        address: 192.0.2.10\n        netmask: 255.255.255.0\n")
		}, "192.0.2.10/24"},
		{"v2 other MAC", func(string) []byte {
			return []byte("version: 2\nethernets:\n  id0:\n    match: {macaddress: \"02:00:00:00:00:01\"}\n    addresses: [10.1.1.1/24]\n")
		}, "none"},
		{"not YAML", func(string) []byte { return []byte("version: 2\nethernets: [unclosed\n") }, "dhcp"},
		{"version 3", func(string) []byte { return []byte("version: 3\nethernets: {}\n") }, "none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg, _ := simTarget(t, pvesim.Options{})
			tg.seededNetwork(tc.nc)
			ifs := tg.interfaces(tc.want != "none")
			var v4 []string
			for _, i := range ifs {
				for _, a := range i.IPAddresses {
					if i.Name != "lo" && a.Type == "ipv4" {
						v4 = append(v4, fmt.Sprintf("%s/%d", a.Address, a.Prefix))
					}
				}
			}
			switch tc.want {
			case "none":
				if len(v4) != 0 {
					t.Errorf("IPv4 %v, want none", v4)
				}
			case "dhcp":
				if len(v4) != 1 || !strings.HasPrefix(v4[0], "192.168.0.") || !strings.HasSuffix(v4[0], "/24") {
					t.Errorf("IPv4 %v, want one DHCP lease in 192.168.0.0/24", v4)
				}
			default:
				if !slices.Equal(v4, []string{tc.want}) {
					t.Errorf("IPv4 %v, want [%s]", v4, tc.want)
				}
			}
		})
	}
}

// TestGuestNetwork_keptAcrossReboots: the configuration cloud-init wrote at the first boot
// stays at the next boot, a new seed with the same instance id changes nothing.
func TestGuestNetwork_keptAcrossReboots(t *testing.T) {
	tg, _ := simTarget(t, pvesim.Options{})
	tg.seededNetwork(func(mac string) []byte {
		return nocloud.RenderStaticIPv4(nocloud.StaticIPv4{Address: netip.MustParsePrefix("10.5.5.5/24")}, mac)
	})
	if ip := ipv4Of(tg.interfaces(true)); ip != "10.5.5.5" {
		t.Fatalf("first boot %s", ip)
	}
	tg.mustOK(tg.api.Stop(tg.ctx(), tg.node, tg.vmid))
	tg.mustOK(tg.upload(captureName+"-seed.iso", tg.seed("#cloud-config\n")))
	tg.started()
	if ip := ipv4Of(tg.interfaces(true)); ip != "10.5.5.5" {
		t.Errorf("after a reboot %s, want the static address kept", ip)
	}
}
