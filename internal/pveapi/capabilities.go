package pveapi

import (
	"context"
	"net/http"
)

// CPUModel is one entry of GET /nodes/{node}/capabilities/qemu/cpu (qemu-server
// src/PVE/API2/Qemu/CPU.pm index, from src/PVE/QemuServer/CPUConfig.pm get_cpu_models): a
// model of the node's architecture, a built-in abstract profile (x86-64-v2...) or a custom
// model (custom-<id>). Booleans come as 0 and 1.
type CPUModel struct {
	Name     string `json:"name"`
	Custom   int    `json:"custom"`
	Abstract int    `json:"abstract,omitempty"`
	Vendor   string `json:"vendor"`
}

// CPUModels is GET /nodes/{node}/capabilities/qemu/cpu: the CPU models of the node's own
// architecture (no arch parameter). Any authenticated user may call it; the custom models
// are filtered to those the caller may see (CPU.pm index: Sys.Audit on /nodes, or
// Mapping.Audit, Mapping.Use or Mapping.Modify on /mapping/cpu/<name>).
func (c *Client) CPUModels(ctx context.Context, node string) ([]CPUModel, error) {
	if err := checkArgs("CPUModels", node, 0); err != nil {
		return nil, err
	}
	var v []CPUModel
	err := c.do(ctx, request{call: "CPUModels", method: http.MethodGet, path: "/nodes/" + seg(node) + "/capabilities/qemu/cpu",
		fields: map[string]any{"node": node}}, &v)
	if err != nil {
		return nil, err
	}
	return v, nil
}
