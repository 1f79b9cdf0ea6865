package proxmox

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

const cloneMAC = "BC:24:11:12:34:56"

var testStatic = &nocloud.StaticIPv4{
	Address: netip.MustParsePrefix("10.0.0.5/24"), Gateway: netip.MustParseAddr("10.0.0.1"),
	DNS: []netip.Addr{netip.MustParseAddr("10.0.0.53")},
}

// staticHarness is a harness whose clones get a new MAC (as Proxmox gives them), and
// whose built seeds are recorded.
func staticHarness(t *testing.T) (*harness, func() []nocloud.Seed) {
	h := newHarness(t)
	var mu sync.Mutex
	var seeds []nocloud.Seed
	h.b.buildSeed = func(s nocloud.Seed) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		seeds = append(seeds, s)
		return []byte("ISO:" + s.Name), nil
	}
	h.f.onCall("VMConfig", func(_ context.Context, c fakeCall) error {
		if c.VMID == testVMID0 {
			h.f.mutate(testVMID0, func(v *fakeVM) {
				if v != nil && strings.Contains(v.Config["net0"], "BC:24:11:5A:90:01") {
					v.Config["net0"] = "virtio=" + cloneMAC + ",bridge=vmbr0"
				}
			})
		}
		return nil
	})
	return h, func() []nocloud.Seed {
		mu.Lock()
		defer mu.Unlock()
		return append([]nocloud.Seed(nil), seeds...)
	}
}

func withIfaces(addrs ...string) []pveapi.NetworkInterface {
	e := pveapi.NetworkInterface{Name: "ens18", HardwareAddress: strings.ToLower(cloneMAC)}
	for _, a := range addrs {
		e.IPAddresses = append(e.IPAddresses, pveapi.IPAddress{Type: "ipv4", Address: a, Prefix: 24})
	}
	return []pveapi.NetworkInterface{{Name: "lo", IPAddresses: []pveapi.IPAddress{{Type: "ipv4", Address: "127.0.0.1", Prefix: 8}}}, e}
}

// TestCreate_staticSeedRenderedForTheClonesMAC: the seed of a static address names the MAC
// Proxmox gave the clone (not the template's), is built after the clone, and the address
// wait ends on the static address, not on the first address the agent reports.
func TestCreate_staticSeedRenderedForTheClonesMAC(t *testing.T) {
	h, seeds := staticHarness(t)
	n := 0
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		switch n++; n {
		case 2:
			// Another address first (a second NIC, a container bridge): not the one waited for.
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = withIfaces("172.17.0.1") })
		case 4:
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = withIfaces("172.17.0.1", "10.0.0.5") })
		}
		return nil
	})
	s := h.spec()
	s.WaitForIP = true
	s.Network = &NetworkConfig{Static: testStatic}
	s.NetworkDigest = NetworkDigest(s.Network)
	vm := h.create(s)
	if vm.IP != "10.0.0.5" || n != 4 {
		t.Errorf("IP %q after %d agent calls, want the static 10.0.0.5 after 4", vm.IP, n)
	}
	got := seeds()
	if len(got) != 1 {
		t.Fatalf("%d seeds built", len(got))
	}
	want := nocloud.RenderStaticIPv4(*testStatic, cloneMAC)
	if !bytes.Equal(got[0].NetworkConfig, want) || !bytes.Contains(want, []byte(strings.ToLower(cloneMAC))) {
		t.Errorf("seed network-config:\n%s\nwant:\n%s", got[0].NetworkConfig, want)
	}
	// Built once the clone ended: the upload comes after the clone's task.
	m := h.f.methods()
	up, cl := -1, -1
	for i, c := range m {
		switch {
		case c == "UploadISO" && up < 0:
			up = i
		case c == "Clone":
			cl = i
		}
	}
	if up < 0 || up < cl+2 {
		t.Errorf("steps %v: the upload must wait for the clone", m)
	}
	if d := ParseMarkExtra(h.f.vm(testVMID0).Config["description"]).NetworkDigest; d != s.NetworkDigest || !strings.HasPrefix(d, "sha256:") {
		t.Errorf("the mark's network digest %q, want %q", d, s.NetworkDigest)
	}
}

// TestCreate_rawNetworkConfigUploadedBesideTheClone: a raw network-config needs no MAC:
// written byte for byte, its upload still runs beside the clone task; its text is never
// logged.
func TestCreate_rawNetworkConfigUploadedBesideTheClone(t *testing.T) {
	h, seeds := staticHarness(t)
	raw := []byte("network:\n  version: 1\n  config: [] # sentinel-net-4f2a\n")
	s := h.spec()
	s.Network = &NetworkConfig{Raw: raw}
	h.create(s)
	if got := seeds(); len(got) != 1 || !bytes.Equal(got[0].NetworkConfig, raw) {
		t.Fatalf("seeds %+v", got)
	}
	if logs := h.logs.String(); logs == "" || strings.Contains(logs, "sentinel-net-4f2a") {
		t.Error("the backend's log holds the network-config text (or nothing was logged)")
	}
	m := h.f.methods()
	cfgAt := -1
	for i, c := range m {
		if c == "SetVMConfig" {
			cfgAt = i
			break
		}
	}
	if cfgAt < 0 || !strings.Contains(strings.Join(m[:cfgAt], " "), "UploadISO") {
		t.Errorf("steps %v: the upload must come before the config write", m)
	}
}

// TestCreate_otherAddressOnlyFailsNamingBoth: a guest that reports another address only,
// for the whole static-address budget, fails the create with both addresses.
func TestCreate_otherAddressOnlyFailsNamingBoth(t *testing.T) {
	h, _ := staticHarness(t)
	h.b.cfg.Budgets.StaticAddress = 20 * time.Second
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = withIfaces("192.168.0.150") })
		return nil
	})
	s := h.spec()
	s.WaitForIP = true
	s.Network = &NetworkConfig{Static: testStatic}
	err := h.createFails(s)
	assertClass(t, err, pveapi.Permanent)
	assertContains(t, err.Error(), "192.168.0.150", "10.0.0.5", "static address", "cloud-init.log")
}

// TestCreate_staticNeedsANet0: a template without net0 is refused before anything is made.
func TestCreate_staticNeedsANet0(t *testing.T) {
	h, _ := staticHarness(t)
	h.f.mutate(9001, func(v *fakeVM) { delete(v.Config, "net0") })
	s := h.spec()
	s.Network = &NetworkConfig{Static: testStatic}
	err := h.createFails(s)
	assertClass(t, err, pveapi.Permanent)
	assertContains(t, err.Error(), "no net0", "static_ipv4")
	if h.f.calls("Clone") != 0 {
		t.Error("a clone was made")
	}
}

func TestNetworkDigest(t *testing.T) {
	a := NetworkDigest(&NetworkConfig{Static: testStatic})
	other := *testStatic
	other.Address = netip.MustParsePrefix("10.0.0.6/24")
	switch {
	case NetworkDigest(nil) != "":
		t.Error("no network config has a digest")
	case a != NetworkDigest(&NetworkConfig{Static: testStatic}):
		t.Error("the same static form gave two digests")
	case a == NetworkDigest(&NetworkConfig{Static: &other}):
		t.Error("two addresses gave one digest")
	case a == NetworkDigest(&NetworkConfig{Raw: nocloud.RenderStaticIPv4(*testStatic, "")}):
		t.Error("the raw and the typed form share a digest")
	case NetworkDigest(&NetworkConfig{Raw: []byte("version: 2\n")}) == NetworkDigest(&NetworkConfig{Raw: []byte("version: 2 \n")}):
		t.Error("the raw digest is not byte for byte")
	}
	desc := FormatMark(testUID, time.Now()) + FormatMarkExtra(Spec{NetworkDigest: a, UserDataDigest: "hmac-sha256:x"})
	if m := ParseMarkExtra(desc); m.NetworkDigest != a || m.UserDataDigest != "hmac-sha256:x" {
		t.Errorf("mark %+v", m)
	}
}

// withIPv6 is an agent answer whose guest NIC carries IPv6 addresses only.
func withIPv6(addrs ...string) []pveapi.NetworkInterface {
	ifaces := withIfaces()
	for _, a := range addrs {
		ifaces[1].IPAddresses = append(ifaces[1].IPAddresses, pveapi.IPAddress{Type: "ipv6", Address: a, Prefix: 64})
	}
	return ifaces
}

// TestCreate_rawNetworkConfigWithoutIPv4FailsPermanent: a raw network_config that gives
// the guest no IPv4 (IPv6 only, or no interface at all) fails the create once the agent has
// answered without one for the static-address budget, naming what it reports, instead of
// waiting out the create's timeout.
func TestCreate_rawNetworkConfigWithoutIPv4FailsPermanent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ifaces []pveapi.NetworkInterface
		want   string
	}{
		{"ipv6 only", withIPv6("fd00::5", "fe80::be24:11ff:fe5a:9001"), "fd00::5, fe80::be24:11ff:fe5a:9001 only"},
		{"no interface", withIfaces(), "no address besides loopback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := staticHarness(t)
			h.b.cfg.Budgets.StaticAddress = 20 * time.Second
			start := h.clock.Now()
			// The create's timeout, on the fake clock: a wait that ignores the budget ends
			// here, Transient, as the create timeout would end it.
			ctx, cancel := context.WithCancel(h.ctx)
			defer cancel()
			h.ctx = ctx
			h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
				if h.clock.Now().Sub(start) > 20*time.Minute {
					cancel()
				}
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = tc.ifaces })
				return nil
			})
			s := h.spec()
			s.WaitForIP = true
			s.Network = &NetworkConfig{Raw: []byte("version: 2\nethernets: {}\n")}
			err := h.createFails(s)
			assertClass(t, err, pveapi.Permanent)
			assertContains(t, err.Error(), tc.want, "network_config gave the guest no IPv4 address", "wait_for_ip = false")
			if waited := h.clock.Now().Sub(start); waited > 5*time.Minute {
				t.Errorf("the create failed after %s, want about the 20 s budget past the agent's first answer", waited)
			}
		})
	}
}

// TestCreate_dhcpWithoutIPv4YetKeepsWaiting: without a network_config (DHCP) an agent that
// answers without an IPv4 for longer than the static-address budget is still waited for:
// a lease may come late.
func TestCreate_dhcpWithoutIPv4YetKeepsWaiting(t *testing.T) {
	h, _ := staticHarness(t)
	h.b.cfg.Budgets.StaticAddress = 20 * time.Second
	var first time.Time
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		now := h.clock.Now()
		if first.IsZero() {
			first = now
		}
		ifaces := withIPv6("fd00::5")
		if now.Sub(first) > 2*time.Minute {
			ifaces = withIfaces("192.168.0.150")
		}
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = ifaces })
		return nil
	})
	s := h.spec()
	s.WaitForIP = true
	if vm := h.create(s); vm.IP != "192.168.0.150" {
		t.Fatalf("address %q, want the late DHCP lease 192.168.0.150", vm.IP)
	}
}
