package pvesim

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kdomanski/iso9660"
)

// SeedFiles is what cloud-init read from a NoCloud seed ISO at a VM's boot: what reached
// the guest.
type SeedFiles struct {
	// VolID is the ISO the VM booted with, e.g. "proxy-seeds:iso/proxy-a-seed.iso".
	VolID string `json:"volid"`
	// Label is the ISO volume label ("cidata" for NoCloud).
	Label         string `json:"label"`
	UserData      []byte `json:"user_data"`
	MetaData      []byte `json:"meta_data"`
	VendorData    []byte `json:"vendor_data,omitempty"`
	NetworkConfig []byte `json:"network_config,omitempty"`
	// InstanceID is meta-data's instance-id; cloud-init runs once per instance id.
	InstanceID string `json:"instance_id"`
	// InstallsAgent: vendor-data or user-data installs qemu-guest-agent.
	InstallsAgent bool `json:"installs_agent"`
}

var instanceIDRe = regexp.MustCompile(`(?m)^\s*instance-id\s*:\s*["']?([^"'\r\n]*?)["']?\s*$`)

// parseSeed reads a NoCloud seed: label cidata, files user-data, meta-data, vendor-data,
// network-config at the root. Names are read as the guest's kernel reads them (the Rock
// Ridge name when the image has one, else the primary identifier without its version),
// and compared after folding case and '_' to '-', as a seed writer without Rock Ridge may
// mangle them.
func parseSeed(volid string, data []byte) (*SeedFiles, error) {
	img, err := iso9660.OpenImage(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	label, err := img.Label()
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(strings.TrimSpace(label), "cidata") {
		return nil, fmt.Errorf("volume label %q is not cidata", label)
	}
	root, err := img.RootDir()
	if err != nil {
		return nil, err
	}
	children, err := root.GetChildren()
	if err != nil {
		return nil, err
	}
	sf := &SeedFiles{VolID: volid, Label: label}
	for _, f := range children {
		if f.IsDir() {
			continue
		}
		name := strings.ReplaceAll(strings.ToLower(f.Name()), "_", "-")
		name = strings.TrimSuffix(name, ".")
		b, err := io.ReadAll(f.Reader())
		if err != nil {
			return nil, err
		}
		switch name {
		case "user-data":
			sf.UserData = b
		case "meta-data":
			sf.MetaData = b
		case "vendor-data":
			sf.VendorData = b
		case "network-config":
			sf.NetworkConfig = b
		}
	}
	if sf.MetaData == nil {
		return nil, fmt.Errorf("no meta-data")
	}
	if m := instanceIDRe.FindSubmatch(sf.MetaData); m != nil {
		sf.InstanceID = string(m[1])
	}
	sf.InstallsAgent = bytes.Contains(sf.VendorData, []byte("qemu-guest-agent")) || bytes.Contains(sf.UserData, []byte("qemu-guest-agent"))
	return sf, nil
}

// seedOf finds a readable NoCloud seed among the VM's CD-ROM drives.
func (s *Sim) seedOf(v *vm) *SeedFiles {
	for _, k := range slices.Sorted(maps.Keys(v.conf)) {
		val := v.conf[k]
		if !driveKeyRe.MatchString(k) || !isCDROM(val) {
			continue
		}
		vol := s.volume(v.node, driveVolume(val))
		if vol == nil {
			continue
		}
		if sf, err := parseSeed(vol.volid(), vol.data); err == nil {
			return sf
		}
	}
	return nil
}

// bootGuest runs at the end of a start: cloud-init reads a new seed (once per instance
// id), and the agent comes up when the VM has agent 1 and the guest has the agent
// (shipped by the template, or installed by this seed's vendor-data).
func (s *Sim) bootGuest(v *vm, at time.Time) {
	g := &v.guest
	g.agentAt, g.ipAt = time.Time{}, time.Time{}
	installing := false
	if sf := s.seedOf(v); sf != nil && sf.InstanceID != g.instanceID {
		g.instanceID = sf.InstanceID
		g.seed = sf
		s.seeds[v.vmid] = *sf
		installing = sf.InstallsAgent && !g.agentInstalled
		g.nics = guestNetwork(sf.NetworkConfig, v.conf)
	}
	if !agentEnabled(v.conf) {
		return
	}
	var delay time.Duration
	switch {
	case g.agentInstalled:
		delay = s.dur.AgentBoot
	case installing:
		delay = s.dur.AgentInstall
		g.agentInstalled = true
	default:
		return
	}
	g.agentAt = at.Add(s.real(delay))
	g.ipAt = g.agentAt.Add(s.real(s.dur.DHCP))
	switch net0 := g.nic(0); {
	case net0.static.IsValid():
		if s.leases[g.ip] == v.vmid {
			delete(s.leases, g.ip)
		}
		g.ip = net0.static.Addr().String()
	case net0.dhcp:
		if g.ip == "" || s.leases[g.ip] != v.vmid {
			g.ip = s.lease(v)
		}
	default:
		if s.leases[g.ip] == v.vmid {
			delete(s.leases, g.ip)
		}
		g.ip = "" // no network configuration: no IPv4 (guestnet.go)
	}
}

// nic is net<i>'s IPv4 configuration: DHCP on net0 until a seed's network-config says
// otherwise.
func (g *guest) nic(i int) nicNet {
	if g.nics == nil {
		return nicNet{dhcp: i == 0}
	}
	return g.nics[i]
}

// resumeGuest: a hibernated guest resumes where it was.
func (s *Sim) resumeGuest(v *vm, at time.Time) {
	g := &v.guest
	if g.resumeAgent && agentEnabled(v.conf) {
		g.agentAt, g.ipAt = at, at
	} else {
		s.bootGuest(v, at)
	}
	if v.bootAt.IsZero() {
		v.bootAt = at
	}
}

// lease gives the VM an address on its net0 network: 192.168.<vlan tag or 0>.<host>,
// unique among live VMs.
func (s *Sim) lease(v *vm) string {
	net0, ok := v.conf["net0"]
	if !ok {
		return ""
	}
	subnet := 0
	if t, err := strconv.Atoi(optValue(net0, "tag")); err == nil && t > 0 && t < 256 {
		subnet = t
	}
	for _, h := range append(seq(100, 254), seq(2, 99)...) {
		ip := fmt.Sprintf("192.168.%d.%d", subnet, h)
		if _, taken := s.leases[ip]; !taken {
			s.leases[ip] = v.vmid
			return ip
		}
	}
	for i := 0; ; i++ {
		ip := fmt.Sprintf("10.%d.%d.%d", 100+subnet%100, i/250, 2+i%250)
		if _, taken := s.leases[ip]; !taken {
			s.leases[ip] = v.vmid
			return ip
		}
	}
}

func seq(a, b int) []int {
	out := make([]int, 0, b-a+1)
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

// agentAvailable is qemu-server src/PVE/QemuServer/Agent.pm assert_agent_available
// (lines 109-113): "not configured" only when the config has no agent key; with agent: 0 on
// a running VM the agent simply does not answer.
func (s *Sim) agentAvailable(v *vm, c *call) *response {
	if _, ok := v.conf["agent"]; !ok {
		return apiError(500, "No QEMU guest agent configured")
	}
	if v.status != "running" {
		return apiError(500, fmt.Sprintf("VM %d is not running", v.vmid))
	}
	g := v.guest
	if !agentEnabled(v.conf) || v.qmp != "running" || g.agentAt.IsZero() || c.now.Before(g.agentAt) {
		return apiError(500, "QEMU guest agent is not running")
	}
	return nil
}

// hAgentOSInfo is guest-get-osinfo through GET .../agent/get-osinfo.
func (s *Sim) hAgentOSInfo(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if r := s.agentAvailable(v, c); r != nil {
		return r
	}
	return okData(map[string]any{"result": map[string]any{
		"id": "debian", "name": "Debian GNU/Linux", "pretty-name": "Debian GNU/Linux 13 (trixie)",
		"version": "13 (trixie)", "version-id": "13", "kernel-release": "6.12.41+deb13-amd64",
		"kernel-version": "#1 SMP PREEMPT_DYNAMIC Debian 6.12.41-1 (2025-08-12)", "machine": "x86_64",
	}})
}

// hAgentHostName is guest-get-host-name through GET .../agent/get-host-name: the guest's
// hostname, which cloud-init sets to the VM's name.
func (s *Sim) hAgentHostName(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if r := s.agentAvailable(v, c); r != nil {
		return r
	}
	name := v.name()
	if name == "" {
		name = "debian"
	}
	return okData(map[string]any{"result": map[string]any{"host-name": name}})
}

// hAgentNetwork answers the three agent texts, in PVE's order (fact: agent-answers), or the
// interfaces (fact: agent-interfaces).
func (s *Sim) hAgentNetwork(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if r := s.agentAvailable(v, c); r != nil {
		return r
	}
	g := v.guest
	ifaces := []map[string]any{{
		"name": "lo", "hardware-address": "00:00:00:00:00:00",
		"ip-addresses": []map[string]any{
			{"ip-address": "127.0.0.1", "ip-address-type": "ipv4", "prefix": 8},
			{"ip-address": "::1", "ip-address-type": "ipv6", "prefix": 128},
		},
		"statistics": stats(1234, 5678),
	}}
	for i := 0; i <= 31; i++ {
		val, ok := v.conf["net"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		mac := strings.ToLower(macOf(val))
		var addrs []map[string]any
		// A static address from the seed's network-config with its prefix, else net0's
		// DHCP lease (a /24), once the network is up.
		v4, prefix := "", 24
		if n := g.nic(i); !c.now.Before(g.ipAt) {
			switch {
			case n.static.IsValid():
				v4, prefix = n.static.Addr().String(), n.static.Bits()
			case n.dhcp && i == 0:
				v4 = g.ip
			}
		}
		if v4 != "" {
			addrs = append(addrs, map[string]any{"ip-address": v4, "ip-address-type": "ipv4", "prefix": prefix})
			// A router advertisement gives the first NIC a SLAAC address too (ulaSLAAC).
			if ula := ulaSLAAC(v4, mac); ula != "" && i == 0 {
				addrs = append(addrs, map[string]any{"ip-address": ula, "ip-address-type": "ipv6", "prefix": 64})
			}
		}
		if ll := linkLocal(mac); ll != "" {
			addrs = append(addrs, map[string]any{"ip-address": ll, "ip-address-type": "ipv6", "prefix": 64})
		}
		e := map[string]any{"name": guestNICName(i), "hardware-address": mac, "statistics": stats(987654, 123456)}
		if len(addrs) > 0 {
			e["ip-addresses"] = addrs
		}
		ifaces = append(ifaces, e)
	}
	return okData(map[string]any{"result": ifaces})
}

func stats(rx, tx int) map[string]any {
	return map[string]any{"rx-bytes": rx, "rx-packets": rx / 100, "rx-errs": 0, "rx-dropped": 0, "tx-bytes": tx,
		"tx-packets": tx / 100, "tx-errs": 0, "tx-dropped": 0}
}

// linkLocal is the EUI-64 fe80:: address of a MAC.
func linkLocal(mac string) string {
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return ""
	}
	ip := net.IP{0xfe, 0x80, 0, 0, 0, 0, 0, 0, hw[0] ^ 0x02, hw[1], hw[2], 0xff, 0xfe, hw[3], hw[4], hw[5]}
	return ip.String()
}

// ulaSLAAC is the global address SLAAC gives the NIC on the simulated network: prefix
// fd00:0:0:<third octet of the IPv4>::/64 (a unique local prefix, RFC 4193) plus the MAC's
// EUI-64 interface identifier, the same suffix as its link-local address.
func ulaSLAAC(ipv4, mac string) string {
	v4 := net.ParseIP(ipv4).To4()
	ll := net.ParseIP(linkLocal(mac))
	if v4 == nil || ll == nil {
		return ""
	}
	ip := make(net.IP, net.IPv6len)
	copy(ip, ll)
	ip[0], ip[1], ip[2], ip[3], ip[4], ip[5], ip[6], ip[7] = 0xfd, 0, 0, 0, 0, 0, 0, v4[2]
	return ip.String()
}
