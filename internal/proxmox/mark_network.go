package proxmox

import (
	"net/netip"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
)

// MarkKeyStaticIPv4 carries a VM's static IPv4 configuration (Spec.Network.Static) in its
// mark, so an import reads static_ipv4 back as it was configured: the seed ISO cannot be
// read through the API, and the guest agent reports the address but not the gateway, the
// name servers or the search domains. It is not secret (the plan shows it). A raw
// network-config is not copied into the mark (it may be as long as the note the
// description also holds): its digest is (MarkKeyNetworkDigest).
const MarkKeyStaticIPv4 = "proxy-operator-static-ipv4"

// MaxStaticIPv4MarkBytes bounds the static line, leaving the mark room in Proxmox's
// 8192-character description beside a note of its maximum size.
const MaxStaticIPv4MarkBytes = 512

// FormatStaticIPv4 is the value of the static line: space-separated fields, each
// field=value, empty ones left out, lists comma-separated, for example
// "address=10.0.0.5/24 gateway=10.0.0.1 dns=10.0.0.53,fd00::53 search=corp.example".
func FormatStaticIPv4(s nocloud.StaticIPv4) string {
	fields := []string{"address=" + s.Address.String()}
	if s.Gateway.IsValid() {
		fields = append(fields, "gateway="+s.Gateway.String())
	}
	if len(s.DNS) > 0 {
		dns := make([]string, len(s.DNS))
		for i, a := range s.DNS {
			dns[i] = a.String()
		}
		fields = append(fields, "dns="+strings.Join(dns, ","))
	}
	if len(s.Search) > 0 {
		fields = append(fields, "search="+strings.Join(s.Search, ","))
	}
	return strings.Join(fields, " ")
}

// ParseStaticIPv4 reads FormatStaticIPv4's value back; ok is false for a value it did
// not write (an unknown field, an unparsable address, a configuration Check refuses), which
// an import then treats as no line at all.
func ParseStaticIPv4(v string) (s nocloud.StaticIPv4, ok bool) {
	seen := map[string]bool{}
	for f := range strings.FieldsSeq(v) {
		k, val, found := strings.Cut(f, "=")
		if !found || seen[k] || val == "" {
			return nocloud.StaticIPv4{}, false
		}
		seen[k] = true
		var err error
		switch k {
		case "address":
			s.Address, err = netip.ParsePrefix(val)
		case "gateway":
			s.Gateway, err = netip.ParseAddr(val)
		case "dns":
			for e := range strings.SplitSeq(val, ",") {
				a, perr := netip.ParseAddr(e)
				if perr != nil {
					return nocloud.StaticIPv4{}, false
				}
				s.DNS = append(s.DNS, a)
			}
		case "search":
			s.Search = strings.Split(val, ",")
		default:
			return nocloud.StaticIPv4{}, false
		}
		if err != nil {
			return nocloud.StaticIPv4{}, false
		}
	}
	if !seen["address"] {
		return nocloud.StaticIPv4{}, false
	}
	if _, err := s.Check(); err != nil {
		return nocloud.StaticIPv4{}, false
	}
	return s, true
}
