package proxmox

import (
	"net/netip"
	"slices"
	"strconv"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func slicesSort(s []string) { slices.Sort(s) }

// net0Options are the option keys of a netN value that are not the model.
var net0Options = map[string]bool{
	"bridge": true, "tag": true, "firewall": true, "link_down": true, "mtu": true,
	"queues": true, "rate": true, "trunks": true, "macaddr": true, "model": true,
}

// net0Info is what Get reads from net0.
type net0Info struct {
	Model, MAC, Bridge string
	Tag                int
}

// parseNet0 reads model, MAC, bridge and VLAN tag from a net0 value such as
// "virtio=BC:24:11:EE:48:83,bridge=vmbr0,tag=4".
func parseNet0(v string) net0Info {
	var n net0Info
	for _, p := range parsePropString(v).parts {
		switch {
		case p.blank():
		case !p.keyed:
			if n.Model == "" {
				n.Model = p.value // a model without a MAC
			}
		case p.key == "bridge":
			n.Bridge = p.value
		case p.key == "tag":
			n.Tag, _ = strconv.Atoi(p.value)
		case p.key == "macaddr":
			n.MAC = p.value
		case p.key == "model":
			n.Model = p.value
		case !net0Options[p.key] && n.Model == "":
			n.Model, n.MAC = p.key, p.value
		}
	}
	return n
}

// rewriteNet0 replaces or appends bridge= (when bridge is set) and tag= (when tag is
// set; a tag of 0 removes it), keeping the model, MAC and every other option in order
// (decision: address-discovery). A bridge that would break out of its option is refused
// (optionValue).
func rewriteNet0(v string, bridge *string, tag *int) (string, error) {
	p := parsePropString(v)
	if bridge != nil && *bridge != "" {
		br, err := optionValue("bridge", *bridge)
		if err != nil {
			return "", err
		}
		p.set("bridge", br)
	}
	if tag != nil {
		if *tag == 0 {
			p.del("tag")
		} else {
			p.set("tag", strconv.Itoa(*tag))
		}
	}
	return p.String(), nil
}

// firstIPv4 is the reported address (decision: address-discovery): the first IPv4, in the agent's order, of the first
// non-loopback interface that has one, that is not loopback, link-local or unspecified.
func firstIPv4(ifaces []pveapi.NetworkInterface) string {
	for _, i := range ifaces {
		if i.Name == "lo" {
			continue
		}
		for _, a := range i.IPAddresses {
			if a.Type != "ipv4" {
				continue
			}
			ip, err := netip.ParseAddr(a.Address)
			if err != nil || !ip.Is4() || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
				continue
			}
			return ip.String()
		}
	}
	return ""
}
