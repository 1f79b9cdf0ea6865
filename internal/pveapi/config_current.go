package pveapi

import (
	"context"
	"net/http"
	"net/url"
)

// VMConfigCurrent is GET /nodes/{node}/qemu/{vmid}/config?current=1, decoded as VMConfig:
// the current values only, without the pending ones a running VM waits to apply
// (qemu-server src/PVE/API2/Qemu.pm vm_config).
func (c *Client) VMConfigCurrent(ctx context.Context, node string, vmid int) (map[string]string, error) {
	if err := checkArgs("VMConfigCurrent", node, vmid); err != nil {
		return nil, err
	}
	var v map[string]string
	err := c.do(ctx, request{call: "VMConfigCurrent", method: http.MethodGet, path: vmPath(node, vmid, "/config"),
		query: url.Values{"current": {"1"}}, fields: vmFields(node, vmid)}, &v)
	if err != nil {
		return nil, err
	}
	return v, nil
}
