package pvesim

import (
	"slices"
	"strings"
)

// The node network: GET /nodes/{node}/network (pve-manager PVE/API2/Network.pm index).
// Every node has the interfaces of a default install with a second bridge: the physical
// port nic0, the bridge vmbr0 over it (the host's address) and a VLAN-aware bridge vmbr1
// without ports. The loopback is never listed.

// DefaultBridges are the bridges every simulated node has.
var DefaultBridges = []string{"vmbr0", "vmbr1"}

var networkTypes = []string{"bridge", "bond", "eth", "alias", "vlan", "fabric", "OVSBridge", "OVSBond", "OVSPort", "OVSIntPort", "vnet",
	"any_bridge", "any_local_bridge", "include_sdn"}

func init() {
	const tmpl = "/nodes/{node}/network"
	routes = append(routes, &route{
		method: "GET", tmpl: tmpl, segs: strings.Split(strings.TrimPrefix(tmpl, "/"), "/"),
		schema: fixed(map[string]pspec{"type": {optional: true, enum: networkTypes}}),
		h:      (*Sim).hNetwork,
	})
}

// nodeInterfaces is a node's /etc/network/interfaces as the index returns it, sorted by iface.
func nodeInterfaces() []map[string]any {
	return []map[string]any{
		{"iface": "nic0", "type": "eth", "method": "manual", "method6": "manual", "families": []string{"inet"},
			"exists": 1, "active": 1, "priority": 2},
		{"iface": "vmbr0", "type": "bridge", "method": "static", "method6": "manual", "families": []string{"inet"},
			"address": "192.168.0.2", "netmask": "24", "cidr": "192.168.0.2/24", "gateway": "192.168.0.1",
			"bridge_ports": "nic0", "bridge_stp": "off", "bridge_fd": "0", "autostart": 1, "active": 1, "priority": 3},
		{"iface": "vmbr1", "type": "bridge", "method": "manual", "method6": "manual", "families": []string{"inet"},
			"bridge_ports": "none", "bridge_stp": "off", "bridge_fd": "0", "bridge_vlan_aware": 1, "bridge_vids": "2-4094",
			"autostart": 1, "active": 1, "priority": 4},
	}
}

// hNetwork filters by type as Network.pm does (any_bridge and any_local_bridge keep bridge
// and OVSBridge; include_sdn keeps all, there being no SDN here) and leaves out the bridges
// the token may not use: neither SDN.Audit nor SDN.Use on /sdn/zones/localnetwork/<bridge>.
func (s *Sim) hNetwork(c *call) *response {
	want := c.params["type"]
	out := []map[string]any{}
	for _, ifc := range nodeInterfaces() {
		typ, _ := ifc["type"].(string)
		name, _ := ifc["iface"].(string)
		isBridge := typ == "bridge" || typ == "OVSBridge"
		if want != "" && want != "include_sdn" && want != typ && (!isBridge || (want != "any_bridge" && want != "any_local_bridge")) {
			continue
		}
		if isBridge {
			path := "/sdn/zones/localnetwork/" + name
			if !c.canAny(path, "SDN.Audit", "SDN.Use") {
				continue
			}
		}
		out = append(out, ifc)
	}
	slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(a["iface"].(string), b["iface"].(string)) })
	return okData(out)
}
