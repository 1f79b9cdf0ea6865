package proxmox

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

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
	for opt := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(opt, "=")
		if !ok {
			if n.Model == "" && opt != "" {
				n.Model = opt // a model without a MAC
			}
			continue
		}
		switch {
		case k == "bridge":
			n.Bridge = val
		case k == "tag":
			n.Tag, _ = strconv.Atoi(val)
		case k == "macaddr":
			n.MAC = val
		case k == "model":
			n.Model = val
		case !net0Options[k] && n.Model == "":
			n.Model, n.MAC = k, val
		}
	}
	return n
}

// rewriteNet0 replaces or appends bridge= (when bridge is set) and tag= (when tag is
// set; a tag of 0 removes it), keeping the model, MAC and every other option in order
// (decision: address-discovery). A bridge that would break out of its option is refused
// (optionValue).
func rewriteNet0(v string, bridge *string, tag *int) (string, error) {
	if bridge != nil && *bridge != "" {
		br, err := optionValue("bridge", *bridge)
		if err != nil {
			return "", err
		}
		v = setOption(v, "bridge", br)
	}
	if tag != nil {
		if *tag == 0 {
			v = removeOption(v, "tag")
		} else {
			v = setOption(v, "tag", strconv.Itoa(*tag))
		}
	}
	return v, nil
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
