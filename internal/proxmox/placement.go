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

// placeSpec fills the spec's node when it is unset: automatic placement.
func (c *creation) placeSpec(ctx context.Context, res []pveapi.Resource) error {
	if c.s.Node != "" {
		return nil
	}
	n, err := c.b.place(ctx, res, c.s.Name)
	if err != nil {
		return err
	}
	c.s.Node = n
	return nil
}

// cloneTarget decides where the clone runs: the target parameter for the clone call and
// the node the clone lands on. With a template on s.Node, or one whose volumes are all on
// shared storage, the clone goes straight to s.Node (target only when it differs); otherwise
// it lands on the template's node and moveToTarget migrates it afterwards.
func (c *creation) cloneTarget(ctx context.Context, tmplNode string) (target, lands string, err error) {
	s := &c.s
	if s.Node == tmplNode {
		return "", tmplNode, nil
	}
	cfg, err := c.b.api.VMConfig(ctx, tmplNode, s.TemplateVMID)
	if err != nil {
		return "", "", apiErrorf("create", err, "reading the config of template %d on node %s", s.TemplateVMID, tmplNode)
	}
	shared := true
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if !isDiskKey(k) {
			continue
		}
		vol := driveVolume(cfg[k])
		sid, _, ok := strings.Cut(vol, ":")
		if !ok || seen[sid] {
			continue
		}
		seen[sid] = true
		st, err := c.b.api.StorageStatus(ctx, tmplNode, sid)
		if err != nil {
			return "", "", apiErrorf("create", err, "reading storage %s of template %d on node %s", sid, s.TemplateVMID, tmplNode)
		}
		if st.Shared != 1 {
			shared = false
		}
	}
	if shared {
		return s.Node, s.Node, nil
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox template on node-local storage: clone on its node, then migrate", map[string]any{
		"name": s.Name, "template_vmid": s.TemplateVMID, "template_node": tmplNode, "node": s.Node,
	})
	return "", tmplNode, nil
}

// moveToTarget migrates a VM that is not running yet (just cloned on the template's node,
// or adopted there after an interruption) to the spec's node, before the seed upload and
// the start; the config is read again on the target.
func (c *creation) moveToTarget(ctx context.Context) error {
	if c.s.Node == "" || c.node == c.s.Node {
		return nil
	}
	from := c.node
	if err := c.b.migrate(ctx, "create", ID{VMID: c.vmid, Name: c.s.Name}, from, c.s.Node, c.cfg, nil, false, nil); err != nil {
		return err
	}
	c.node = c.s.Node
	cfg, err := c.b.api.VMConfig(ctx, c.node, c.vmid)
	if err != nil {
		return apiErrorf("create", err, "reading the config on node %s after migrating the VM from node %s", c.node, from)
	}
	c.cfg = cfg
	return nil
}
