package tfrun

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/seedname"
)

// SimConfig renders a provider configuration for a simulator: endpoint, token (inline),
// CA file, nodes, ISO storage and its templates. Callers adjust the fields (VMID range,
// request timeout, token file...) before HCL.
func SimConfig(s *pvesim.Sim) ProviderConfig {
	return ProviderConfig{
		Endpoint:   s.Endpoint,
		APIToken:   s.APIToken,
		CAFile:     s.CAFile,
		Nodes:      append([]string(nil), s.Nodes...),
		ISOStorage: s.ISOStorage,
		Templates:  maps.Clone(s.Templates),
	}
}

// WithTokenFile moves the token into a file under dir (mode 0600) and returns the
// configuration that names it.
func (c ProviderConfig) WithTokenFile(dir string) (ProviderConfig, error) {
	f := filepath.Join(dir, "pve-token")
	if err := os.WriteFile(f, []byte(c.APIToken+"\n"), 0o600); err != nil {
		return c, err
	}
	c.APITokenFile, c.APIToken = f, ""
	return c, nil
}

// Stat keys of the simulator (its route templates), for triggers and request counts.
const (
	StatResources    = "GET /cluster/resources"
	StatConfigGet    = "GET /nodes/{node}/qemu/{vmid}/config"
	StatConfigPut    = "PUT /nodes/{node}/qemu/{vmid}/config"
	StatConfigPost   = "POST /nodes/{node}/qemu/{vmid}/config"
	StatClone        = "POST /nodes/{node}/qemu/{vmid}/clone"
	StatUpload       = "POST /nodes/{node}/storage/{storage}/upload"
	StatResize       = "PUT /nodes/{node}/qemu/{vmid}/resize"
	StatStart        = "POST /nodes/{node}/qemu/{vmid}/status/start"
	StatStop         = "POST /nodes/{node}/qemu/{vmid}/status/stop"
	StatStatus       = "GET /nodes/{node}/qemu/{vmid}/status/current"
	StatAgent        = "GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces"
	StatVolumeDelete = "DELETE /nodes/{node}/storage/{storage}/content/{volume}"
	StatDestroy      = "DELETE /nodes/{node}/qemu/{vmid}"
	StatTaskStatus   = "GET /nodes/{node}/tasks/{upid}/status"
)

// TotalRequests sums a stats map (every API request the simulator counted).
func TotalRequests(stats map[string]int) int {
	n := 0
	for _, v := range stats {
		n += v
	}
	return n
}

// WaitUntil polls cond every millisecond until it holds (true), ctx ends or timeout
// passes (false).
func WaitUntil(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// WaitStat waits until the simulator has counted at least n requests under key.
func WaitStat(ctx context.Context, s *pvesim.Sim, key string, n int, timeout time.Duration) bool {
	return WaitUntil(ctx, timeout, func() bool { return s.Stats()[key] >= n })
}

// WaitTask waits until the simulator holds a task of type typ ("qmclone", "imgcopy",
// "qmstart", "qmstop", "qmdestroy", "imgdel", "resize") submitted after since.
func WaitTask(ctx context.Context, s *pvesim.Sim, typ string, since time.Time, timeout time.Duration) bool {
	return WaitUntil(ctx, timeout, func() bool {
		for _, t := range s.State().Tasks {
			if t.Type == typ && !t.Submitted.Before(since) {
				return true
			}
		}
		return false
	})
}

// SeedVolID is the volume id of the proxy operator's seed ISO, <name>-seed.iso.
func SeedVolID(isoStorage, name string) string { return isoStorage + ":iso/" + name + seedname.Suffix }

// UIDSeedVolID is the volume id of a VM's own seed ISO, <name>-<uid>-seed.iso.
func UIDSeedVolID(isoStorage, name, uid string) string {
	return isoStorage + ":iso/" + seedname.File(name, uid, 1)
}

// seedName returns the VM name (and, for a VM's own seed of any generation, the uid) of a
// seed ISO volume id (seedname.Parse); "" when volid is not a seed.
func seedName(volid string) (name, uid string) {
	_, file, ok := strings.Cut(volid, ":iso/")
	if !ok {
		return "", ""
	}
	name, uid, _ = seedname.Parse(file)
	return name, uid
}

// Describe lists the simulator's guests and seed ISOs in one line each, for failure
// messages.
func Describe(st pvesim.State) string {
	var b strings.Builder
	for _, v := range st.VMs {
		fmt.Fprintf(&b, "vm %d %s on %s: %s lock=%q template=%t\n", v.VMID, v.Name, v.Node, v.Power, v.Lock, v.Template)
	}
	vols := make([]string, 0, len(st.Volumes))
	for _, v := range st.Volumes {
		vols = append(vols, v.Node+":"+v.VolID)
	}
	sort.Strings(vols)
	for _, v := range vols {
		fmt.Fprintf(&b, "volume %s\n", v)
	}
	return b.String()
}
