package pvesim

import (
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The guest's network as cloud-init configures it from the seed's network-config at the
// instance's first boot (the configuration it writes stays for later boots; fact:
// nocloud-network-config).
//
// What the model follows, from canonical/cloud-init:
//   - cloudinit/sources/DataSourceNoCloud.py reads network-config with util.load_yaml,
//     which gives None for a text that is not a YAML mapping; cloudinit/stages.py
//     _find_networking_config then finds no configuration (a top-level network: key is
//     unwrapped by _get_network_key_contents) and applies generate_fallback_config(): DHCP
//     on the first NIC. So does a seed without network-config.
//   - cloudinit/net/network_state.py parse_net_config_data raises for a mapping whose
//     version is neither 1 (with a config list) nor 2; the local stage then writes no
//     network configuration, and the model's guest has none of its own (a cloud image
//     relies on cloud-init for it): no IPv4 at all. That last step is a reconstruction.
//   - version 2 ethernets are matched to a NIC by match.macaddress (case-insensitive),
//     else by match.name (a glob) or the entry's key against the guest's interface name;
//     version 1 physical entries by mac_address, else name. The first IPv4 of addresses
//     (v2) or of a static subnet (v1) is the NIC's address; dhcp4 (v2) or a dhcp/dhcp4
//     subnet (v1) a lease on net0 only.

// nicNet is one NIC's IPv4 configuration.
type nicNet struct {
	dhcp   bool
	static netip.Prefix
}

// guestNetwork is the IPv4 configuration per NIC index (net<i>) that cloud-init gives a
// guest whose seed carries networkConfig (nil: no such file).
func guestNetwork(networkConfig []byte, conf map[string]string) map[int]nicNet {
	fallback := map[int]nicNet{0: {dhcp: true}}
	if networkConfig == nil {
		return fallback
	}
	var doc map[string]any
	if err := yaml.Unmarshal(networkConfig, &doc); err != nil || doc == nil {
		return fallback
	}
	if inner, ok := doc["network"].(map[string]any); ok {
		doc = inner
	}
	switch doc["version"] {
	case 2:
		return networkV2(doc, conf)
	case 1:
		return networkV1(doc, conf)
	}
	return map[int]nicNet{}
}

// networkV2 is a version 2 network-config: each ethernets entry (in key order) matched to
// a NIC by match.macaddress, else match.name or its key; its first IPv4 address, else
// dhcp4.
func networkV2(doc map[string]any, conf map[string]string) map[int]nicNet {
	nics := map[int]nicNet{}
	eth, _ := doc["ethernets"].(map[string]any)
	keys := make([]string, 0, len(eth))
	for k := range eth {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e, _ := eth[k].(map[string]any)
		match, _ := e["match"].(map[string]any)
		mac, _ := match["macaddress"].(string)
		name, _ := match["name"].(string)
		if mac == "" && name == "" {
			name = k
		}
		i, ok := nicIndex(conf, mac, name)
		if !ok {
			continue
		}
		n := nicNet{}
		if addrs, ok := e["addresses"].([]any); ok {
			n.static = firstV4(addrs)
		}
		if d, ok := e["dhcp4"].(bool); ok && d && !n.static.IsValid() {
			n.dhcp = true
		}
		nics[i] = n
	}
	return nics
}

// networkV1 is a version 1 network-config: each physical entry of its config list matched
// to a NIC by mac_address, else name; its subnets (v1Subnets).
func networkV1(doc map[string]any, conf map[string]string) map[int]nicNet {
	nics := map[int]nicNet{}
	cfg, ok := doc["config"].([]any)
	if !ok {
		return nics
	}
	for _, raw := range cfg {
		e, _ := raw.(map[string]any)
		if e["type"] != "physical" {
			continue
		}
		mac, _ := e["mac_address"].(string)
		name, _ := e["name"].(string)
		i, ok := nicIndex(conf, mac, name)
		if !ok {
			continue
		}
		subnets, _ := e["subnets"].([]any)
		nics[i] = v1Subnets(subnets)
	}
	return nics
}

// v1Subnets is a version 1 physical entry's IPv4: the first static subnet's address, else
// a lease when a subnet is dhcp or dhcp4.
func v1Subnets(subnets []any) nicNet {
	n := nicNet{}
	for _, rs := range subnets {
		sn, _ := rs.(map[string]any)
		switch sn["type"] {
		case "static":
			if n.static.IsValid() {
				continue
			}
			n.static = firstV4([]any{v1StaticAddress(sn)})
		case "dhcp", "dhcp4":
			n.dhcp = true
		}
	}
	if n.static.IsValid() {
		n.dhcp = false
	}
	return n
}

// v1StaticAddress is a static subnet's address, with the prefix length of its netmask
// when the address has none.
func v1StaticAddress(sn map[string]any) string {
	addr, _ := sn["address"].(string)
	mask, ok := sn["netmask"].(string)
	if !ok || strings.Contains(addr, "/") {
		return addr
	}
	m, err := netip.ParseAddr(mask)
	if err != nil || !m.Is4() {
		return addr
	}
	bits := 0
	for _, x := range m.As4() {
		for ; x&0x80 != 0; x <<= 1 {
			bits++
		}
	}
	return addr + "/" + strconv.Itoa(bits)
}

// nicIndex finds the NIC (net<i>) with MAC mac, else the one whose guest name (ens<18+i>)
// name matches as a glob.
func nicIndex(conf map[string]string, mac, name string) (int, bool) {
	for i := 0; i <= 31; i++ {
		val, ok := conf["net"+strconv.Itoa(i)]
		if !ok {
			continue
		}
		if mac != "" {
			if strings.EqualFold(macOf(val), mac) {
				return i, true
			}
			continue
		}
		if ok, _ := path.Match(name, guestNICName(i)); ok && name != "" {
			return i, true
		}
	}
	return 0, false
}

// guestNICName is the name the guest's kernel gives net<i> (virtio on PCI slot 18+i).
func guestNICName(i int) string { return "ens" + strconv.Itoa(18+i) }

// firstV4 is the first IPv4 prefix among addrs ("10.0.0.5/24").
func firstV4(addrs []any) netip.Prefix {
	for _, a := range addrs {
		s, _ := a.(string)
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
			return p
		}
	}
	return netip.Prefix{}
}
