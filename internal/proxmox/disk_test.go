package proxmox

import (
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestBootDisk_table(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		want string
	}{
		{"order=scsi0", map[string]string{"boot": "order=scsi0", "scsi0": "l:d,size=3G"}, "scsi0"},
		{"order=scsi0;ide2 after the seed", map[string]string{"boot": "order=scsi0;ide2", "scsi0": "l:d,size=3G", "ide2": "s:iso/x.iso,media=cdrom"}, "scsi0"},
		{"CD-ROM first in order is skipped", map[string]string{"boot": "order=ide2;virtio1;net0", "ide2": "s:iso/x.iso,media=cdrom", "virtio1": "l:d,size=8G"}, "virtio1"},
		{"net first", map[string]string{"boot": "order=net0;sata1", "sata1": "l:d,size=8G"}, "sata1"},
		{"order names an absent disk", map[string]string{"boot": "order=scsi3", "bootdisk": "virtio0", "virtio0": "l:d,size=8G"}, "virtio0"},
		{"legacy bootdisk", map[string]string{"boot": "cdn", "bootdisk": "sata0", "sata0": "l:d,size=8G", "scsi0": "l:e,size=1G"}, "sata0"},
		{"fallback scsi0 before virtio0", map[string]string{"virtio0": "l:d,size=8G", "scsi0": "l:e,size=1G"}, "scsi0"},
		{"fallback ide0", map[string]string{"ide0": "l:d,size=8G"}, "ide0"},
		{"fallback skips a CD-ROM", map[string]string{"ide0": "none,media=cdrom", "sata0": "l:d,size=2G"}, "sata0"},
		{"efidisk is not a boot disk", map[string]string{"efidisk0": "l:e,size=4M"}, ""},
		{"captured template", fixtureConfig("vm_config_template_9001"), "scsi0"},
		{"captured after seed", fixtureConfig("vm_config_after_seed"), "scsi0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := bootDisk(tc.cfg)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("bootDisk = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestDiskSizeBytes_table(t *testing.T) {
	for v, want := range map[string]int64{
		"local-lvm:vm-1-disk-1,iothread=1,size=3G": 3 << 30,
		"local-lvm:base-9000-disk-0,size=3584M":    3584 << 20,
		"l:d,size=1T":                              1 << 40,
		"l:d,size=44K":                             44 << 10,
		"l:d,size=1048576":                         1 << 20,
		"l:d,size=1.5G":                            3 << 29,
	} {
		if got, ok := diskSizeBytes(v); !ok || got != want {
			t.Errorf("diskSizeBytes(%q) = %d, %v; want %d", v, got, ok, want)
		}
	}
	for _, v := range []string{"l:d", "l:d,size=", "l:d,size=xG", "l:d,size=-1G"} {
		if _, ok := diskSizeBytes(v); ok {
			t.Errorf("diskSizeBytes(%q) ok, want not readable", v)
		}
	}
	if ceilGiB(3584<<20) != 4 || ceilGiB(3<<30) != 3 || ceilGiB(1) != 1 {
		t.Error("ceilGiB does not round up to whole GiB")
	}
}

func TestCloudInitDrive_table(t *testing.T) {
	if slot, ok := cloudInitDrive(fixtureConfig("vm_config_template_9000")); !ok || slot != "ide2" {
		t.Errorf("template 9000: %q, %v; want ide2", slot, ok)
	}
	if slot, ok := cloudInitDrive(fixtureConfig("vm_config_template_9001")); ok {
		t.Errorf("template 9001: found %q", slot)
	}
	if slot, ok := cloudInitDrive(map[string]string{"scsi5": "local-lvm:vm-1-cloudinit,media=cdrom"}); !ok || slot != "scsi5" {
		t.Errorf("scsi5: %q, %v", slot, ok)
	}
}

func TestRewriteNet0_table(t *testing.T) {
	const mac = "virtio=BC:24:11:EE:48:83"
	for _, tc := range []struct {
		name   string
		in     string
		bridge *string
		tag    *int
		want   string
	}{
		{"nothing set", mac + ",bridge=vmbr0", nil, nil, mac + ",bridge=vmbr0"},
		{"empty bridge keeps", mac + ",bridge=vmbr0", ptr(""), nil, mac + ",bridge=vmbr0"},
		{"bridge replaced in place", mac + ",bridge=vmbr0,firewall=1", ptr("vmbr1"), nil, mac + ",bridge=vmbr1,firewall=1"},
		{"tag appended", mac + ",bridge=vmbr0,firewall=1", nil, ptr(4), mac + ",bridge=vmbr0,firewall=1,tag=4"},
		{"tag replaced in place", mac + ",bridge=vmbr0,tag=4,mtu=1400", nil, ptr(7), mac + ",bridge=vmbr0,tag=7,mtu=1400"},
		{"tag 0 removes", mac + ",bridge=vmbr0,tag=4,mtu=1400", nil, ptr(0), mac + ",bridge=vmbr0,mtu=1400"},
		{"both, bridge missing", "e1000=BC:24:11:00:00:01,queues=4", ptr("vmbr2"), ptr(10), "e1000=BC:24:11:00:00:01,queues=4,bridge=vmbr2,tag=10"},
		{"captured template 9000 tag", fixtureConfig("vm_config_template_9000")["net0"], nil, ptr(5), "virtio=BC:24:11:3C:90:00,bridge=vmbr0,tag=5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := rewriteNet0(tc.in, tc.bridge, tc.tag); err != nil || got != tc.want {
				t.Errorf("rewriteNet0 = %q, %v, want %q", got, err, tc.want)
			}
		})
	}
}

// TestRewriteNet0_refusesOptionInjection: a bridge that would add options of its own
// (bridge = "vmbr0,firewall=0,trunks=1;2;3") or a line break is refused, whatever reached
// the option writer.
func TestRewriteNet0_refusesOptionInjection(t *testing.T) {
	const net0 = "virtio=BC:24:11:EE:48:83,bridge=vmbr0"
	for _, bad := range []string{"vmbr0,firewall=0,trunks=1;2;3,rate=1000", "vmbr0,tag=5", "a=b", "vmbr0;x", "vmbr0\nx", "vmbr0\r"} {
		got, err := rewriteNet0(net0, &bad, nil)
		if err == nil || ClassOf(err) != pveapi.Permanent || got != "" {
			t.Errorf("bridge %q: %q, %v; want a Permanent error and no net0", bad, got, err)
		}
	}
}

func TestParseNet0_table(t *testing.T) {
	for in, want := range map[string]net0Info{
		"virtio=BC:24:11:EE:48:83,bridge=vmbr0":           {"virtio", "BC:24:11:EE:48:83", "vmbr0", 0},
		"virtio=BC:24:11:3C:90:00,bridge=vmbr0,tag=4":     {"virtio", "BC:24:11:3C:90:00", "vmbr0", 4},
		"bridge=vmbr1,e1000=BC:24:11:00:00:01,firewall=1": {"e1000", "BC:24:11:00:00:01", "vmbr1", 0},
		"model=virtio,macaddr=BC:24:11:00:00:02,bridge=b": {"virtio", "BC:24:11:00:00:02", "b", 0},
		"": {},
	} {
		if got := parseNet0(in); got != want {
			t.Errorf("parseNet0(%q) = %+v, want %+v", in, got, want)
		}
	}
}

func TestFirstIPv4_table(t *testing.T) {
	var captured struct {
		Result []pveapi.NetworkInterface `json:"result"`
	}
	if err := fixture.MustLoad("agent_network_get_interfaces").Data(&captured); err != nil {
		t.Fatal(err)
	}
	v4 := func(a ...string) []pveapi.IPAddress {
		var out []pveapi.IPAddress
		for _, s := range a {
			out = append(out, pveapi.IPAddress{Address: s, Type: "ipv4"})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		ifaces []pveapi.NetworkInterface
		want   string
	}{
		{"captured lo and ens18", captured.Result, "192.168.0.150"},
		{"none", nil, ""},
		{"loopback only", []pveapi.NetworkInterface{{Name: "lo", IPAddresses: v4("127.0.0.1")}}, ""},
		{"link-local skipped", []pveapi.NetworkInterface{{Name: "ens18", IPAddresses: v4("169.254.3.4", "10.0.0.5")}}, "10.0.0.5"},
		{"unspecified and loopback on a NIC skipped", []pveapi.NetworkInterface{{Name: "ens18", IPAddresses: v4("0.0.0.0", "127.0.0.2")}, {Name: "ens19", IPAddresses: v4("10.0.0.6")}}, "10.0.0.6"},
		{"agent order", []pveapi.NetworkInterface{{Name: "ens19", IPAddresses: v4("10.1.0.1")}, {Name: "ens18", IPAddresses: v4("10.0.0.1")}}, "10.1.0.1"},
		{"ipv6 only", []pveapi.NetworkInterface{{Name: "ens18", IPAddresses: []pveapi.IPAddress{{Address: "2001:db8::1", Type: "ipv6"}}}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := firstIPv4(tc.ifaces); got != tc.want {
				t.Errorf("firstIPv4 = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMergeTags_table(t *testing.T) {
	for in, want := range map[string]string{
		"":                     "proxy_operator",
		"proxy_operator":       "proxy_operator",
		"web;Prod":             "web;prod;proxy_operator",
		"a,b c;proxy_operator": "a;b;c;proxy_operator",
	} {
		if got := mergeTags(in); got != want {
			t.Errorf("mergeTags(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOptionInjection_refusedBeforeAnyRequest: a create or an update whose bridge (or,
// for a create, the configured storages) would break out of an option string fails
// Permanent before its first request.
func TestOptionInjection_refusedBeforeAnyRequest(t *testing.T) {
	const bad = "vmbr0,firewall=0,trunks=1;2;3,rate=1000"
	h := newHarness(t)
	s := h.spec()
	s.Bridge = bad
	err := h.createFails(s)
	assertClass(t, err, pveapi.Permanent)
	if n := len(h.f.log()); n != 0 {
		t.Errorf("the create made %d requests: %v", n, h.f.methods())
	}

	h = newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	err = h.b.Update(h.ctx, testID, Changes{UID: testUID, Bridge: ptr(bad)})
	assertClass(t, err, pveapi.Permanent)
	if n := len(h.f.log()); n != 0 {
		t.Errorf("the update made %d requests: %v", n, h.f.methods())
	}

	for _, cfg := range []Config{{ISOStorage: "seeds,media=disk"}, {ISOStorage: fakeISOStorage, Storage: "local;x"}} {
		h = newHarness(t)
		cfg.Nodes = h.f.nodes
		h.b.cfg.ISOStorage, h.b.cfg.Storage = cfg.ISOStorage, cfg.Storage
		err := h.createFails(h.spec())
		assertClass(t, err, pveapi.Permanent)
		if n := len(h.f.log()); n != 0 {
			t.Errorf("config %+v: the create made %d requests", cfg, n)
		}
	}
}
