package nocloud

import (
	"net/netip"
	"strings"

	"gopkg.in/yaml.v3"
)

// ConfiguresNoIPv4 reports whether the network-config b certainly gives the guest no IPv4
// address: a version 2 document none of whose devices has dhcp4: true or an IPv4 in
// addresses, or a version 1 document none of whose subnets is of type dhcp or dhcp4, or
// static with an IPv4 address. Anything it cannot tell (a text ValidateNetworkConfig
// refuses, an unknown key, subnet type or value shape) is false: the answer is for a
// warning, which must not fire on a configuration that works.
func ConfiguresNoIPv4(b []byte) bool {
	if ValidateNetworkConfig(b) != nil {
		return false
	}
	var doc map[string]any
	if yaml.Unmarshal(b, &doc) != nil {
		return false
	}
	if inner, ok := doc["network"].(map[string]any); ok {
		doc = inner
	}
	switch doc["version"] {
	case 2:
		return v2NoIPv4(doc)
	case 1:
		return v1NoIPv4(doc)
	}
	return false
}

// v2Sections are netplan's device sections; each maps a device ID to its settings.
var v2Sections = map[string]bool{
	"ethernets": true, "bonds": true, "bridges": true, "vlans": true, "wifis": true,
	"tunnels": true, "vrfs": true, "modems": true, "dummy-devices": true, "virtual-ethernets": true,
}

func v2NoIPv4(doc map[string]any) bool {
	for k, v := range doc {
		switch {
		case k == "version" || k == "renderer":
			continue
		case !v2Sections[k]:
			return false
		}
		if v == nil {
			continue
		}
		devs, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for _, d := range devs {
			if d == nil {
				continue
			}
			dev, ok := d.(map[string]any)
			if !ok {
				return false
			}
			if dh, ok := dev["dhcp4"]; ok {
				if on, isBool := dh.(bool); !isBool || on {
					return false // on, or a spelling ("yes") this check does not read
				}
			}
			if a, ok := dev["addresses"]; ok && !noIPv4Among(a) {
				return false
			}
		}
	}
	return true
}

// noIPv4Among reports whether a netplan addresses value (a list of prefixes, or of
// one-key mappings from a prefix to its options) certainly holds no IPv4 prefix.
func noIPv4Among(v any) bool {
	list, ok := v.([]any)
	if !ok {
		return false
	}
	for _, e := range list {
		switch a := e.(type) {
		case string:
			if !isIPv6Text(a) {
				return false
			}
		case map[string]any:
			for k := range a {
				if !isIPv6Text(k) {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// isIPv6Text: s is an IPv6 address, with or without a prefix length.
func isIPv6Text(s string) bool {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Addr().Is6() && !p.Addr().Is4In6()
	}
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6()
}

// v1SubnetsWithoutIPv4 are the version 1 subnet types that give no IPv4 address.
var v1SubnetsWithoutIPv4 = map[string]bool{
	"static6": true, "dhcp6": true, "ipv6_slaac": true, "ipv6_dhcpv6-stateless": true,
	"ipv6_dhcpv6-stateful": true, "manual": true,
}

func v1NoIPv4(doc map[string]any) bool {
	entries, ok := doc["config"].([]any)
	if !ok {
		return false
	}
	for _, e := range entries {
		entry, ok := e.(map[string]any)
		if !ok {
			return false
		}
		sub, ok := entry["subnets"]
		if !ok || sub == nil {
			continue
		}
		subnets, ok := sub.([]any)
		if !ok {
			return false
		}
		for _, s := range subnets {
			subnet, ok := s.(map[string]any)
			if !ok {
				return false
			}
			typ, _ := subnet["type"].(string)
			switch {
			case v1SubnetsWithoutIPv4[typ]:
			case typ == "static":
				addr, ok := subnet["address"].(string)
				if !ok || !isIPv6Text(addr) {
					return false
				}
			default:
				return false // dhcp, dhcp4, or a type this check does not know
			}
		}
	}
	return true
}
