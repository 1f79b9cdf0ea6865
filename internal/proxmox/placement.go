package proxmox

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Placement and node-local templates.
//
// A VM without a node is placed at create on one of the provider's nodes that answers:
// the one with the fewest proxy VMs (tagged proxy_operator), ties broken by the most free
// memory, then by the order of the provider's nodes. The VMs this backend placed and the
// listing does not show yet (a clone in flight is listed nameless and untagged) count on
// the node they were given, so parallel creates of one apply spread.
//
// A template whose volumes are not all on shared storage can only be cloned on its own node
// (qemu-server clone_vm refuses a target then). A VM for another node is cloned on the
// template's node and migrated, stopped, to its node before the seed upload and the start.

// placementBook remembers the node given to each VM name placed by this backend.
type placementBook struct {
	mu     sync.Mutex
	placed map[string]string
}

// place chooses a node for a VM named name; res is the cluster listing.
func (b *Backend) place(ctx context.Context, res []pveapi.Resource, name string) (string, error) {
	type cand struct {
		node  string
		count int
		free  int64
		order int
	}
	var cands []cand
	var down []string
	for i, n := range b.cfg.Nodes {
		st, err := b.api.NodeStatus(ctx, n)
		if err != nil {
			if ctx.Err() != nil {
				return "", Transientf("choosing a node: %w", ctx.Err())
			}
			down = append(down, n)
			tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox placement: node skipped", map[string]any{"node": n, "error": err.Error()})
			continue
		}
		cands = append(cands, cand{node: n, free: st.Memory.Free, order: i})
	}
	if len(cands) == 0 {
		return "", Transientf("no node to place VM %s on: none of the provider's nodes (%s) answers; set node, or bring a node back",
			name, strings.Join(b.cfg.Nodes, ", "))
	}
	bk := &b.placements
	bk.mu.Lock()
	defer bk.mu.Unlock()
	counts := map[string]int{}
	listed := map[string]bool{}
	for _, r := range res {
		if r.Type != "qemu" || r.Template == 1 || !slices.Contains(splitTags(strings.ToLower(r.Tags)), ManagedTag) {
			continue
		}
		counts[r.Node]++
		listed[r.Name] = true
	}
	for _, n := range slices.Sorted(maps.Keys(bk.placed)) {
		if n != name && !listed[n] {
			counts[bk.placed[n]]++
		}
	}
	for i := range cands {
		cands[i].count = counts[cands[i].node]
	}
	best := slices.MinFunc(cands, func(a, c cand) int {
		switch {
		case a.count != c.count:
			return a.count - c.count
		case a.free != c.free:
			if a.free > c.free {
				return -1
			}
			return 1
		}
		return a.order - c.order
	})
	if bk.placed == nil {
		bk.placed = map[string]string{}
	}
	bk.placed[name] = best.node
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox placement", map[string]any{
		"name": name, "node": best.node, "proxy_vms_there": best.count, "free_memory": best.free, "nodes_down": down,
	})
	return best.node, nil
}
