package pveapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
)

// PendingConfig is GET /nodes/{node}/qemu/{vmid}/pending (qemu-server src/PVE/API2/Qemu.pm
// vm_pending, pve-guest-common src/PVE/GuestHelpers.pm config_with_pending_array): a VM's
// config with both its current values and its pending section, in one read. Each map is
// keyed by config key, scalars decoded as VMConfig decodes them.
type PendingConfig struct {
	// Current holds every key's current value (an entry's value): the config a running VM
	// runs with, as GET .../config?current=1 shows it (digest and lock among them).
	Current map[string]string
	// Pending holds the values written while the VM ran that apply at its next start (an
	// entry's pending).
	Pending map[string]string
	// Delete holds the keys the pending section deletes at the next start (an entry's
	// delete, 1; true when it is 2, a forced delete). Current still holds them.
	Delete map[string]bool
}

// WithPending is the config as GET .../config (without current=1) shows it: the pending
// values taken in, the pending deletes left out (pve-guest-common src/PVE/AbstractConfig.pm
// load_current_config).
func (p PendingConfig) WithPending() map[string]string {
	out := make(map[string]string, len(p.Current)+len(p.Pending))
	maps.Copy(out, p.Current)
	maps.Copy(out, p.Pending)
	for k := range p.Delete {
		delete(out, k)
	}
	return out
}

// pendingEntry is one element of vm_pending's answer.
type pendingEntry struct {
	Key     string          `json:"key"`
	Value   json.RawMessage `json:"value"`
	Pending json.RawMessage `json:"pending"`
	Delete  json.RawMessage `json:"delete"`
}

// decodePending turns vm_pending's array into a PendingConfig.
func decodePending(data []byte) (PendingConfig, error) {
	var entries []pendingEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return PendingConfig{}, fmt.Errorf("decoding VM pending config: %w", err)
	}
	p := PendingConfig{Current: map[string]string{}, Pending: map[string]string{}, Delete: map[string]bool{}}
	for _, e := range entries {
		if e.Key == "" {
			return PendingConfig{}, fmt.Errorf("decoding VM pending config: an entry without a key")
		}
		for _, f := range []struct {
			raw json.RawMessage
			to  map[string]string
		}{{e.Value, p.Current}, {e.Pending, p.Pending}} {
			s, ok, err := decodeScalar(f.raw)
			if err != nil {
				return PendingConfig{}, fmt.Errorf("decoding VM pending config key %q: %w", e.Key, err)
			}
			if ok {
				f.to[e.Key] = s
			}
		}
		d, ok, err := decodeScalar(e.Delete)
		if err != nil {
			return PendingConfig{}, fmt.Errorf("decoding VM pending config key %q: %w", e.Key, err)
		}
		if ok && d != "0" && d != "" {
			p.Delete[e.Key] = d == "2"
		}
	}
	return p, nil
}

// VMPending is GET /nodes/{node}/qemu/{vmid}/pending: the current and the pending values of
// a VM's config in one read (PendingConfig).
func (c *Client) VMPending(ctx context.Context, node string, vmid int) (PendingConfig, error) {
	if err := checkArgs("VMPending", node, vmid); err != nil {
		return PendingConfig{}, err
	}
	var raw json.RawMessage
	err := c.do(ctx, request{call: "VMPending", method: http.MethodGet, path: vmPath(node, vmid, "/pending"),
		fields: vmFields(node, vmid)}, &raw)
	if err != nil {
		return PendingConfig{}, err
	}
	return decodePending(raw)
}
