package pveapi

import (
	"context"
	"net/http"
	"net/url"
)

// Snapshot is one entry of GET /nodes/{node}/qemu/{vmid}/snapshot (qemu-server
// src/PVE/API2/Qemu.pm snapshot_list): a snapshot section of the VM's config, or the entry
// named "current" that stands for the VM itself.
type Snapshot struct {
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"`
}

// VMSnapshots is GET /nodes/{node}/qemu/{vmid}/snapshot: the VM's snapshots, and "current".
func (c *Client) VMSnapshots(ctx context.Context, node string, vmid int) ([]Snapshot, error) {
	if err := checkArgs("VMSnapshots", node, vmid); err != nil {
		return nil, err
	}
	var v []Snapshot
	err := c.do(ctx, request{call: "VMSnapshots", method: http.MethodGet, path: vmPath(node, vmid, "/snapshot"),
		fields: vmFields(node, vmid)}, &v)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// VMSnapshotConfig is GET /nodes/{node}/qemu/{vmid}/config?snapshot={name}, decoded as
// VMConfig: the config a snapshot section holds (qemu-server vm_config,
// pve-guest-common AbstractConfig.pm load_snapshot_config), the digest of the whole file.
func (c *Client) VMSnapshotConfig(ctx context.Context, node string, vmid int, name string) (map[string]string, error) {
	if err := checkArgs("VMSnapshotConfig", node, vmid); err != nil {
		return nil, err
	}
	var v map[string]string
	err := c.do(ctx, request{call: "VMSnapshotConfig", method: http.MethodGet, path: vmPath(node, vmid, "/config"),
		query: url.Values{"snapshot": {name}}, fields: vmFields(node, vmid)}, &v)
	if err != nil {
		return nil, err
	}
	return v, nil
}
