package proxmox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// The clone-history check (decision: clone-history). A config identical to the template's
// clone says nothing of what ran in the VM: a person who cloned the template by hand onto
// the VMID, copied a creating mark into its description and used it has a VM the
// untouched-clone check cannot tell from ours. What Notes cannot write is the nodes' task
// history (pve-manager PVE/API2/Tasks.pm node_tasks, fact: node-tasks): every clone,
// start, migration and clone, with the user or token that ran it. An unbound VM is taken
// for this create's half-made clone only when, since its mark's created-at, no node shows
// a start of the VMID, nor any task on it by another user or token, nor another user's
// clone of anything but another template (a clone task's id is the source VMID, qemu-server
// src/PVE/API2/Qemu.pm clone_vm's fork_worker('qmclone', $vmid, ...): its target is not
// recorded). Anything the
// history cannot show (no Sys.Audit on a node: it lists only the caller's own tasks; a
// node down; an archive rotated past the window) is a reason too: nothing is deleted on a
// guess.

// historySkew is how far before the mark's created-at the window opens: the clocks of the
// provider's host and of the nodes may differ by that much.
const historySkew = 10 * time.Minute

// historyLimit bounds one task-list read; a window holding more is not read as complete.
const historyLimit = 500

// historyRotationFloor: a node's archive is rotated at 50000 bytes (pve-common
// src/PVE/RESTEnvironment.pm active_workers, $maxsize), and a line is under 500 bytes, so a
// rotated archive holds at least 100 tasks; fewer in all means nothing rotated away.
// (Reconstruction: the line-length bound is ours, not Proxmox's.)
const historyRotationFloor = 100

// startTaskTypes are the task types that run a guest: qm start, the HA stack's start,
// resume, reboot, rollback (which may start it).
var startTaskTypes = map[string]bool{"qmstart": true, "hastart": true, "qmresume": true, "qmreboot": true, "qmrollback": true}

// cloneHistory is the VM whose history is read: its VMID and node, its mark's
// created-at, and the template it would be a clone of.
type cloneHistory struct {
	vmid     int
	node     string
	created  time.Time
	tmplVMID int
	tmplNode string
	// tmplMeta is the template's meta (fact: meta-copied): another user's clone of a VM
	// whose meta differs (another template, a VM made from one) makes a VM whose config is
	// not an untouched clone of this template, so it is no sign; a clone of a VM with this
	// meta (the template, a clone of it, a template made from a clone) or of a VM gone since
	// is.
	tmplMeta string
	// res is the listing historyNodes read, for the clone sources' nodes.
	res []pveapi.Resource
}

// usedSinceClone says why the nodes' task history does not show VM h.vmid untouched by
// anyone but this token since its mark's created-at; "" when it does. An error is ctx's.
func (b *Backend) usedSinceClone(ctx context.Context, h cloneHistory) (string, error) {
	if h.created.IsZero() {
		return "its mark has no created-at, so the task history since its clone cannot be read", nil
	}
	token := ""
	if b.cfg.TokenID != nil {
		token, _ = b.cfg.TokenID()
	}
	if token == "" {
		return "the provider's token id is not known, so its own tasks cannot be told from others'", nil
	}
	// A created-at ahead of this clock (a create host whose clock runs fast) never narrows
	// the window: it opens at the earlier of the two.
	from := h.created
	if now := b.clock.Now(); now.Before(from) {
		from = now
	}
	since := from.Add(-historySkew).Unix()
	seen := map[string]string{}
	nodes, why, err := b.historyNodes(ctx, &h)
	if why != "" || err != nil {
		return why, err
	}
	for _, node := range nodes {
		why, err := b.nodeHistory(ctx, node, token, since, h, seen)
		if why != "" || err != nil {
			return why, err
		}
	}
	return "", nil
}

// historyNodes is every node a task on the VM may have run on: every node of the cluster
// (GET /nodes lists them all to any user), with the VM's and the template's. It keeps the
// listing in h.res, for the clone sources. A reason when the nodes cannot be listed.
func (b *Backend) historyNodes(ctx context.Context, h *cloneHistory) ([]string, string, error) {
	all, err := b.api.Nodes(ctx)
	if err != nil {
		why, err := readFailed(ctx, "the cluster's nodes could not be listed", err)
		return nil, why, err
	}
	set := map[string]bool{h.node: true, h.tmplNode: true}
	for _, n := range all {
		set[n.Node] = true
	}
	if res, err := b.listing(ctx, false); err == nil {
		h.res = res
	}
	delete(set, "")
	return slices.Sorted(maps.Keys(set)), "", nil
}

// nodeHistory is usedSinceClone on one node.
func (b *Backend) nodeHistory(ctx context.Context, node, token string, since int64, h cloneHistory,
	seen map[string]string) (string, error) {
	privs, err := b.api.Permissions(ctx, "/nodes/"+node)
	if err != nil {
		return readFailed(ctx, fmt.Sprintf("the token's privileges on /nodes/%s could not be read", node), err)
	}
	if !privs["Sys.Audit"] {
		return fmt.Sprintf("the token has no Sys.Audit on /nodes/%s, so that node's task list shows only the token's own tasks", node), nil
	}
	if why, err := b.historyReaches(ctx, node, since); why != "" || err != nil {
		return why, err
	}
	onVM, err := b.api.NodeTasks(ctx, node, pveapi.TaskQuery{VMID: h.vmid, Since: since, Limit: historyLimit, Source: "all"})
	if err != nil {
		return readFailed(ctx, fmt.Sprintf("the task list of node %s could not be read", node), err)
	}
	if why, err := b.movedIn(ctx, node, since, h.vmid); why != "" || err != nil {
		return why, err
	}
	clones, err := b.api.NodeTasks(ctx, node, pveapi.TaskQuery{TypeFilter: "qmclone", Since: since, Limit: historyLimit, Source: "all"})
	if err != nil {
		return readFailed(ctx, fmt.Sprintf("the task list of node %s could not be read", node), err)
	}
	if len(onVM) >= historyLimit || len(clones) >= historyLimit {
		return fmt.Sprintf("node %s lists %d tasks or more in the window, more than is read", node, historyLimit), nil
	}
	for _, t := range onVM { // a start says most: it has run
		if startTaskTypes[t.Type] {
			return fmt.Sprintf("node %s's task list shows %s started it (%s, %s), so it has run", node, t.AuthID(), t.Type,
				time.Unix(t.StartTime, 0).UTC().Format(time.RFC3339)), nil
		}
	}
	for _, t := range onVM {
		if t.AuthID() != token {
			return fmt.Sprintf("node %s's task list shows %s ran a %s task on it at %s", node, t.AuthID(), t.Type,
				time.Unix(t.StartTime, 0).UTC().Format(time.RFC3339)), nil
		}
	}
	for _, t := range clones {
		if t.AuthID() == token {
			continue
		}
		why, err := b.cloneSourceSign(ctx, h, t.ID, seen)
		if why != "" || err != nil {
			return fmt.Sprintf("node %s's task list shows %s cloned VM %s at %s, which %s (a clone task does not name its target), "+
				"so the VM may be theirs", node, t.AuthID(), t.ID, time.Unix(t.StartTime, 0).UTC().Format(time.RFC3339), why), err
		}
	}
	return "", nil
}

// cloneSourceSign says why another user's clone of VM src may have made the VM: src is
// gone, or has the template's meta, so its clone looks like the template's; "" when its
// meta differs. seen caches the answer per source.
func (b *Backend) cloneSourceSign(ctx context.Context, h cloneHistory, src string, seen map[string]string) (string, error) {
	if why, ok := seen[src]; ok {
		return why, nil
	}
	why := "is gone or hidden from the token"
	if vmid, err := strconv.Atoi(src); err == nil {
		if r, ok := findResource(h.res, vmid); ok {
			cfg, err := b.api.VMConfig(ctx, r.Node, vmid)
			switch {
			case err != nil && ctx.Err() != nil:
				return "", ctx.Err()
			case err != nil:
				why = fmt.Sprintf("could not be read (%v)", err)
			case cfg["meta"] != h.tmplMeta:
				why = ""
			default:
				why = fmt.Sprintf("has template %d's meta, so its clone looks like the template's", h.tmplVMID)
			}
		}
	}
	seen[src] = why
	return why, nil
}

// movedIn says why a disk may have been moved into VM vmid from another VM since: a disk
// reassign is a qmmove task whose id is "<vmid>-<disk>><target vmid>-<target disk>"
// (qemu-server src/PVE/API2/Qemu.pm move_vm_disk), which a vmid filter does not match.
func (b *Backend) movedIn(ctx context.Context, node string, since int64, vmid int) (string, error) {
	moves, err := b.api.NodeTasks(ctx, node, pveapi.TaskQuery{TypeFilter: "qmmove", Since: since, Limit: historyLimit, Source: "all"})
	if err != nil {
		return readFailed(ctx, fmt.Sprintf("the task list of node %s could not be read", node), err)
	}
	for _, t := range moves {
		if _, to, ok := strings.Cut(t.ID, ">"); ok && strings.HasPrefix(to, strconv.Itoa(vmid)+"-") {
			return fmt.Sprintf("node %s's task list shows %s moved a disk into it (%s) at %s", node, t.AuthID(), t.ID,
				time.Unix(t.StartTime, 0).UTC().Format(time.RFC3339)), nil
		}
	}
	return "", nil
}

// historyReaches says why node's task list may not reach back to since: "" when it lists a
// task started before it, or holds too few tasks to have been rotated.
func (b *Backend) historyReaches(ctx context.Context, node string, since int64) (string, error) {
	older, err := b.api.NodeTasks(ctx, node, pveapi.TaskQuery{Until: since, Limit: 1})
	if err != nil {
		return readFailed(ctx, fmt.Sprintf("the task list of node %s could not be read", node), err)
	}
	if len(older) > 0 {
		return "", nil
	}
	all, err := b.api.NodeTasks(ctx, node, pveapi.TaskQuery{Limit: historyRotationFloor})
	if err != nil {
		return readFailed(ctx, fmt.Sprintf("the task list of node %s could not be read", node), err)
	}
	if len(all) < historyRotationFloor {
		return "", nil
	}
	return fmt.Sprintf("node %s's task list does not reach back to %s (its archive was rotated)", node,
		time.Unix(since, 0).UTC().Format(time.RFC3339)), nil
}

// readFailed is a history read's failure as a reason, or ctx's error when ctx ended.
func readFailed(ctx context.Context, what string, err error) (string, error) {
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return fmt.Sprintf("%s (%v)", what, err), nil
}
