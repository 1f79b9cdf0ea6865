package pveapi

import (
	"context"
	"net/url"
	"reflect"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// nodeTasksContractCase: NodeTasks sends its non-zero filters as the query (pve-manager
// PVE/API2/Tasks.pm node_tasks' parameter names) and decodes the node's task list.
func nodeTasksContractCase() contractCase {
	return contractCase{name: "NodeTasks", fixture: "node_tasks", method: "GET", path: "/nodes/pv1-1/tasks",
		query: url.Values{"vmid": {"199999"}, "typefilter": {"qmstart"}, "since": {"1789808000"}, "limit": {"500"},
			"source": {"all"}},
		call: func(ctx context.Context, c *Client) (any, error) {
			return c.NodeTasks(ctx, tNode, TaskQuery{VMID: tVMID, TypeFilter: "qmstart", Since: 1789808000, Limit: 500, Source: "all"})
		},
		check: func(t *testing.T, got any) { checkNodeTasks(t, got.([]TaskEntry)) }}
}

// checkNodeTasks holds the decoded entries to the fixture's: every field the product reads,
// and AuthID giving the UPID's user whether the entry splits a token user (an archived
// task) or keeps it whole (a running one).
func checkNodeTasks(t *testing.T, got []TaskEntry) {
	t.Helper()
	var raw []map[string]any
	if err := fixture.MustLoad("node_tasks").Data(&raw); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(raw) || len(got) < 3 {
		t.Fatalf("%d entries, the fixture has %d", len(got), len(raw))
	}
	split, whole := 0, 0
	for i, e := range got {
		u, err := ParseUPID(e.UPID)
		if err != nil {
			t.Fatal(err)
		}
		want := TaskEntry{UPID: e.UPID, Node: u.Node, Type: u.Type, ID: u.ID, User: raw[i]["user"].(string),
			StartTime: u.StartTime, Status: raw[i]["status"].(string)}
		if v, ok := raw[i]["tokenid"].(string); ok {
			want.TokenID = v
			split++
		} else if e.Status == "RUNNING" {
			whole++
		}
		if v, ok := raw[i]["endtime"].(float64); ok {
			want.EndTime = int64(v)
		}
		if e != want || e.AuthID() != u.User {
			t.Errorf("entry %d = %+v (AuthID %q), want %+v (AuthID %q)", i, e, e.AuthID(), want, u.User)
		}
		if (e.Status == "RUNNING") != (e.EndTime == 0) {
			t.Errorf("entry %d: status %q with endtime %d", i, e.Status, e.EndTime)
		}
	}
	if split == 0 || whole == 0 {
		t.Errorf("the fixture should hold an archived token task (%d) and a running one (%d)", split, whole)
	}
}

// TestClient_nodeTasksSendsOnlyTheFiltersSet: a zero field is not sent, so Proxmox's
// defaults apply (limit 50, source archive).
func TestClient_nodeTasksSendsOnlyTheFiltersSet(t *testing.T) {
	for _, tc := range []struct {
		q    TaskQuery
		want url.Values
	}{
		{TaskQuery{}, url.Values{}},
		{TaskQuery{Until: 1789808000, Limit: 1}, url.Values{"until": {"1789808000"}, "limit": {"1"}}},
	} {
		ts := newTestServer(t, fixtureReply(t, "node_tasks"))
		c := newTestClient(t, ts)
		if _, err := c.NodeTasks(context.Background(), tNode, tc.q); err != nil {
			t.Fatal(err)
		}
		reqs := ts.requests()
		if len(reqs) != 1 || !reflect.DeepEqual(reqs[0].Query, tc.want) {
			t.Errorf("%+v: requests %+v, want query %v", tc.q, reqs, tc.want)
		}
	}
}
