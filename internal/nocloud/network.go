package nocloud

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// NetworkConfigFile is the seed file NoCloud reads the guest's network configuration
// from, beside user-data and meta-data in the seed's root.
const NetworkConfigFile = "network-config"

// ValidateNetworkConfig checks that b is a network-config cloud-init accepts: a YAML
// mapping whose version is 1 or 2, either at the top or under a top-level network: key
// (cloud-init unwraps that key first). Only the document's shape is checked, not what the
// renderer of a given guest makes of it. The error says what to fix and never quotes the
// text.
func ValidateNetworkConfig(b []byte) error {
	if len(strings.TrimSpace(string(b))) == 0 {
		return errors.New("the network-config is empty: give a version 1 or version 2 (netplan-style) network configuration")
	}
	var top any
	if err := yaml.Unmarshal(b, &top); err != nil {
		return fmt.Errorf("the network-config is not a YAML mapping (%s): give a version 1 or version 2 "+
			"(netplan-style) network configuration", yamlReason(err))
	}
	if top == nil {
		return errors.New("the network-config holds no YAML mapping: give a version 1 or version 2 (netplan-style) network configuration")
	}
	doc, ok := top.(map[string]any)
	if !ok {
		// Valid YAML whose top is a sequence or a scalar (a list of lines, a bare address).
		return errors.New("the network-config is YAML, but a list (or a single value), not a mapping of keys such as version: and ethernets:; " +
			"give a version 1 or version 2 (netplan-style) network configuration")
	}
	if inner, ok := doc["network"]; ok {
		m, ok := inner.(map[string]any)
		if !ok {
			return errors.New("the network-config's top-level network: key must hold a mapping with a version: key")
		}
		doc = m
	}
	v, ok := doc["version"]
	if !ok {
		return errors.New("the network-config has no version: key at its top (or under network:); add version: 2 for " +
			"a netplan-style configuration, or version: 1")
	}
	switch n := v.(type) {
	case int:
		switch n {
		case 2:
			return nil
		case 1:
			// cloud-init parses a version 1 document's config: list, and refuses one without.
			if _, ok := doc["config"].([]any); !ok {
				return errors.New("the network-config is version 1 but has no config: list; add config: with the interfaces, or use version: 2")
			}
			return nil
		}
	}
	if str, ok := v.(string); ok && (str == "1" || str == "2") {
		// cloud-init compares the version with the integers 1 and 2: a quoted one is refused.
		return fmt.Errorf("the network-config's version must be the number %s, not the string %s: write version: %s "+
			"without quotes", str, strconv.Quote(str), str)
	}
	return fmt.Errorf("the network-config's version is %s; cloud-init reads version 1 or 2 only", strconv.Quote(fmt.Sprint(v)))
}

// yamlReason is the YAML parser's message without the document's text: the line it
// failed on, when the message names one.
func yamlReason(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	if i := strings.Index(msg, "line "); i >= 0 {
		rest := msg[i+len("line "):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 {
			return "a YAML error on line " + rest[:n]
		}
	}
	return "a YAML error"
}

// StaticIPv4 is a static IPv4 configuration of a guest's first NIC.
type StaticIPv4 struct {
	// Address is the guest's address with its prefix length, e.g. 10.0.0.5/24.
	Address netip.Prefix
	// Gateway is the default route's next hop; the zero Addr: no default route.
	Gateway netip.Addr
	// DNS are the name servers; Search the search domains. Both may be empty.
	DNS    []netip.Addr
	Search []string
}

// Check reports what is wrong with s, naming the field ("address", "gateway", "dns",
// "search") first: an address that is an IPv4 prefix of length 1 to 32 and, for prefixes
// up to /30, neither the network nor the broadcast address; a gateway inside the prefix
// that is not the address itself (nor the network or broadcast address); name servers
// that are IP addresses (checked by the caller's parse) and search domains that are
// domain names.
func (s StaticIPv4) Check() (field string, err error) {
	p := s.Address
	a := p.Addr()
	switch {
	case !p.IsValid() || !a.Is4():
		return "address", errors.New("must be an IPv4 address with its prefix length, such as 10.0.0.5/24")
	case p.Bits() < 1 || p.Bits() > 32:
		return "address", fmt.Errorf("has prefix length /%d; use 1 to 32", p.Bits())
	case a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() || a.As4()[0] == 0 || a.As4()[0] >= 240:
		// The guest agent's addresses leave these out (not routable), so a create could
		// never see the address it waits for; an egress proxy needs a routable one anyway.
		return "address", fmt.Errorf("%s is a %s address, which an egress proxy cannot be reached at; use a unicast "+
			"address of your network, such as 10.0.0.5/24", a, specialKind(a))
	}
	network, broadcast := bounds(p)
	if p.Bits() <= 30 {
		switch a {
		case network:
			return "address", fmt.Errorf("%s is the network address of %s; use a host address inside it, such as "+
				"%s/%d", a, p.Masked(), network.Next(), p.Bits())
		case broadcast:
			return "address", fmt.Errorf("%s is the broadcast address of %s; use a host address inside it, such as "+
				"%s/%d", a, p.Masked(), network.Next(), p.Bits())
		}
	}
	if g := s.Gateway; g.IsValid() {
		switch {
		case !g.Is4():
			return "gateway", fmt.Errorf("%s is not an IPv4 address", g)
		case !p.Masked().Contains(g):
			return "gateway", fmt.Errorf("%s is outside the address's network %s: the gateway must be reachable on "+
				"it; use an address in %s or change the address's prefix length", g, p.Masked(), p.Masked())
		case g == a:
			return "gateway", fmt.Errorf("%s is the VM's own address; the gateway is another host on %s", g, p.Masked())
		case p.Bits() <= 30 && (g == network || g == broadcast):
			return "gateway", fmt.Errorf("%s is the network or broadcast address of %s, not a host", g, p.Masked())
		}
	}
	for _, d := range s.Search {
		if !domainName(d) {
			return "search", fmt.Errorf("%q is not a domain name (labels of letters, digits and hyphens separated by dots)", d)
		}
	}
	return "", nil
}

// bounds returns the first and last address of p (the network and broadcast address).
func bounds(p netip.Prefix) (netip.Addr, netip.Addr) {
	first := p.Masked().Addr()
	b := first.As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	if p.Bits() == 0 {
		host = ^uint32(0)
	}
	v := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) | host
	return first, netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func domainName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !domainRune(c) {
				return false
			}
		}
	}
	return true
}

// RenderStaticIPv4 is the version 2 network-config that gives the NIC with MAC address mac
// the static address s, with DHCP off.
//
// The NIC is matched by its MAC address, not by name: with a netplan renderer (Ubuntu,
// Debian 12 and later cloud images) the document is passed to netplan, which matches the
// MAC; with the other renderers (ifupdown's ENI, networkd, sysconfig) cloud-init's
// version 2 parser looks the interface name up by the MAC it is given and only falls back
// to the key's name without one, so a name glob such as e* works with netplan only. The
// MAC is the one Proxmox generates for the clone's net0, known once the clone exists,
// which is why the document is rendered after the clone. No set-name: the guest keeps the
// name its kernel gives the NIC (ens18 on Proxmox's virtio), which network_interface
// reports. The default route is written as a route to 0.0.0.0/0, which both older
// cloud-init releases (no "to: default") and netplan (gateway4 deprecated) read.
func RenderStaticIPv4(s StaticIPv4, mac string) []byte {
	var b strings.Builder
	b.WriteString("version: 2\nethernets:\n  net0:\n    match:\n      macaddress: \"" + strings.ToLower(mac) + "\"\n")
	b.WriteString("    dhcp4: false\n    addresses:\n      - " + s.Address.String() + "\n")
	if s.Gateway.IsValid() {
		b.WriteString("    routes:\n      - to: 0.0.0.0/0\n        via: " + s.Gateway.String() + "\n")
	}
	if len(s.DNS) > 0 || len(s.Search) > 0 {
		b.WriteString("    nameservers:\n")
		if len(s.DNS) > 0 {
			b.WriteString("      addresses:\n")
			for _, d := range s.DNS {
				b.WriteString("        - " + d.String() + "\n")
			}
		}
		if len(s.Search) > 0 {
			b.WriteString("      search:\n")
			for _, d := range s.Search {
				b.WriteString("        - " + strconv.Quote(d) + "\n")
			}
		}
	}
	return []byte(b.String())
}

// domainRune is a letter, a digit, a hyphen or an underscore.
func domainRune(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// specialKind names the kind of a non-routable IPv4 address Check refuses.
func specialKind(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsMulticast():
		return "multicast"
	case a.As4()[0] >= 240:
		return "reserved (240.0.0.0/4)"
	}
	return "\"this network\" (0.0.0.0/8)"
}
