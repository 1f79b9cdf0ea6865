package pveapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// TaskQuery filters GET /nodes/{node}/tasks (pve-manager PVE/API2/Tasks.pm node_tasks,
// fact: node-tasks). Zero fields are not sent. Source is "archive" (Proxmox's default:
// finished tasks only), "active" or "all".
type TaskQuery struct {
	VMID       int
	TypeFilter string
	Since      int64
	Until      int64
	Limit      int
	Source     string
}

// TaskEntry is one task of a node's task list. A task started with an API token has the
// token's user in User and its name in TokenID (Tasks.pm convert_token_task).
type TaskEntry struct {
	UPID      string `json:"upid"`
	Node      string `json:"node"`
	Type      string `json:"type"`
	ID        string `json:"id"`
	User      string `json:"user"`
	TokenID   string `json:"tokenid,omitempty"`
	StartTime int64  `json:"starttime"`
	EndTime   int64  `json:"endtime,omitempty"`
	Status    string `json:"status,omitempty"`
}

// AuthID is who started the task as Proxmox names an authenticated id: "user@realm", or
// "user@realm!token" for a token (the form of Config.TokenID).
func (t TaskEntry) AuthID() string {
	if t.TokenID == "" {
		return t.User
	}
	return t.User + "!" + t.TokenID
}

// NodeTasks is GET /nodes/{node}/tasks. Without Sys.Audit on /nodes/{node} Proxmox lists
// only the caller's own tasks.
func (c *Client) NodeTasks(ctx context.Context, node string, q TaskQuery) ([]TaskEntry, error) {
	if err := checkArgs("NodeTasks", node, q.VMID); err != nil {
		return nil, err
	}
	v := url.Values{}
	for k, n := range map[string]int64{"vmid": int64(q.VMID), "since": q.Since, "until": q.Until, "limit": int64(q.Limit)} {
		if n != 0 {
			v.Set(k, strconv.FormatInt(n, 10))
		}
	}
	if q.TypeFilter != "" {
		v.Set("typefilter", q.TypeFilter)
	}
	if q.Source != "" {
		v.Set("source", q.Source)
	}
	var out []TaskEntry
	err := c.do(ctx, request{call: "NodeTasks", method: http.MethodGet, path: "/nodes/" + seg(node) + "/tasks",
		query: v, fields: map[string]any{"node": node}}, &out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NodeEntry is one node of GET /nodes: every node of the cluster, online or not (pve-manager
// PVE/API2/Nodes.pm index, open to every user; fact: node-tasks).
type NodeEntry struct {
	Node   string `json:"node"`
	Status string `json:"status"`
}

// Nodes is GET /nodes.
func (c *Client) Nodes(ctx context.Context) ([]NodeEntry, error) {
	var out []NodeEntry
	if err := c.do(ctx, request{call: "Nodes", method: http.MethodGet, path: "/nodes"}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
