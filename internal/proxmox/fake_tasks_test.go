package proxmox

import (
	"context"
	"slices"
	"strconv"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// addHistory puts a task on node's task list, as another user (or this token) ran it.
func (f *fakeAPI) addHistory(node string, t pveapi.TaskEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t.Node = node
	f.history[node] = append(f.history[node], t)
}

// NodeTasks answers a node's task list as pve-manager's node_tasks filters it (Tasks.pm
// 172-196: vmid, typefilter, since, until, limit), newest first: the fake's own tasks
// (by fakeUser, started at their UPID's starttime) and those addHistory put there.
func (f *fakeAPI) NodeTasks(ctx context.Context, node string, q pveapi.TaskQuery) ([]pveapi.TaskEntry, error) {
	if err := f.enter(ctx, fakeCall{Method: "NodeTasks", Node: node, VMID: q.VMID,
		Args: map[string]string{"typefilter": q.TypeFilter, "source": q.Source}}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	all := slices.Clone(f.history[node])
	for _, upid := range f.taskOrder {
		t := f.tasks[upid]
		if t.node != node {
			continue
		}
		u, err := pveapi.ParseUPID(upid)
		if err != nil {
			return nil, err
		}
		all = append(all, pveapi.TaskEntry{UPID: upid, Node: node, Type: t.typ, ID: t.id, User: "proxy-operator@pve",
			TokenID: "tf", StartTime: u.StartTime})
	}
	slices.SortStableFunc(all, func(a, b pveapi.TaskEntry) int { return int(b.StartTime - a.StartTime) })
	limit := q.Limit
	if limit == 0 {
		limit = 50
	}
	var out []pveapi.TaskEntry
	for _, t := range all {
		switch {
		case q.VMID != 0 && t.ID != strconv.Itoa(q.VMID),
			q.TypeFilter != "" && t.Type != q.TypeFilter,
			q.Since != 0 && t.StartTime < q.Since,
			q.Until != 0 && t.StartTime > q.Until:
			continue
		}
		if len(out) == limit {
			break
		}
		out = append(out, t)
	}
	return out, nil
}

// Nodes answers every node of the fake, online.
func (f *fakeAPI) Nodes(ctx context.Context) ([]pveapi.NodeEntry, error) {
	if err := f.enter(ctx, fakeCall{Method: "Nodes"}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []pveapi.NodeEntry
	for _, n := range f.nodes {
		out = append(out, pveapi.NodeEntry{Node: n, Status: "online"})
	}
	return out, nil
}
