package pveapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// NodeInterface is one entry of GET /nodes/{node}/network: a network interface of the
// node as /etc/network/interfaces declares it (pve-manager PVE/API2/Network.pm index).
type NodeInterface struct {
	Iface       string `json:"iface"`
	Type        string `json:"type"`
	Active      Flag   `json:"active"`
	Autostart   Flag   `json:"autostart"`
	BridgePorts string `json:"bridge_ports"`
}

// Flag is a Proxmox boolean, which arrives as 1/0 and, from some endpoints, as true/false
// or "1"/"0". Absent is false.
type Flag bool

// UnmarshalJSON accepts 1, 0, true, false, "1", "0" and null.
func (f *Flag) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "1", "true", `"1"`:
		*f = true
	case "0", "false", `"0"`, "null", `""`:
		*f = false
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		v, err := n.Int64()
		if err != nil {
			return err
		}
		*f = v != 0
	}
	return nil
}

// NodeNetwork is GET /nodes/{node}/network, with ?type=ifaceType when ifaceType is set
// ("any_bridge" lists Linux and OVS bridges). Proxmox leaves out the bridges the token may
// not use (SDN.Audit or SDN.Use on /sdn/zones/localnetwork/<bridge>), so a bridge missing
// from the answer either does not exist or is not visible to the token.
func (c *Client) NodeNetwork(ctx context.Context, node, ifaceType string) ([]NodeInterface, error) {
	var v []NodeInterface
	if err := checkArgs("NodeNetwork", node, 0); err != nil {
		return nil, err
	}
	var q url.Values
	if ifaceType != "" {
		q = url.Values{"type": {ifaceType}}
	}
	err := c.do(ctx, request{call: "NodeNetwork", method: http.MethodGet, path: "/nodes/" + seg(node) + "/network", query: q,
		fields: map[string]any{"node": node}}, &v)
	return v, err
}
