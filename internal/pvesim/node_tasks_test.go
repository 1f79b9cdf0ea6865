package pvesim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// GET /nodes/{node}/tasks against pve-manager PVE/API2/Tasks.pm node_tasks (lines
// 39-259) and testdata/node_tasks.json.

type taskList struct {
	Data  []map[string]any `json:"data"`
	Total *int             `json:"total"`
}

// tasks lists the node's tasks as token (the target's own when ""), q the query.
func (tg *target) tasks(token string, q url.Values) taskList {
	tg.t.Helper()
	if token == "" {
		token = tg.token
	}
	resp, b := tg.raw("GET", "/nodes/"+tg.node+"/tasks", q, map[string]string{"Authorization": "PVEAPIToken=" + token})
	var l taskList
	if err := json.Unmarshal(b, &l); err != nil || resp.StatusCode != http.StatusOK {
		tg.t.Fatalf("tasks %v: %d %s", q, resp.StatusCode, b)
	}
	return l
}

// upids is the list's UPIDs in order.
func (l taskList) upids() []string {
	out := []string{}
	for _, e := range l.Data {
		out = append(out, e["upid"].(string))
	}
	return out
}

// total is the answer's total, 0 when absent (pveproxy leaves out a total of 0).
func (l taskList) total() int {
	if l.Total == nil {
		return 0
	}
	return *l.Total
}

// fixtureTaskKind picks the fixture entry of e's kind: running (the token user kept
// whole), an archived token task (user and tokenid), an archived user task.
func fixtureTaskKind(t *testing.T, e map[string]any) map[string]any {
	t.Helper()
	for _, w := range fixtureAny(t, "node_tasks").([]any) {
		w := w.(map[string]any)
		_, wTok := w["tokenid"]
		_, eTok := e["tokenid"]
		if (w["status"] == "RUNNING") == (e["status"] == "RUNNING") && wTok == eTok {
			return w
		}
	}
	t.Fatalf("the fixture has no entry of the kind of %v", e)
	return nil
}

// tokenParts splits "user@realm!name=secret" into the user and the token name.
func tokenParts(token string) (user, name string) {
	id, _, _ := strings.Cut(token, "=")
	user, name, _ = strings.Cut(id, "!")
	return user, name
}

// TestSource_nodeTasksShape: each entry has the fixture's shape for its kind; a clone's id
// is its source VMID (qemu-server src/PVE/API2/Qemu.pm clone_vm, fork_worker('qmclone',
// $vmid, ...)); the token that ran a task is its user and tokenid; total counts the list.
func TestSource_nodeTasksShape(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	tg.started()
	if tg.sim != nil {
		// A task still running: a shutdown that does not end.
		tg.sim.InjectFault(pvesim.Fault{Path: "/nodes/{node}/qemu/{vmid}/status/shutdown", TaskHang: true, Times: 1})
		var upid string
		tg.rawJSON("POST", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/status/shutdown", url.Values{}, &upid)
	}
	l := tg.tasks("", url.Values{"source": {"all"}})
	kinds := map[string]bool{}
	for i, e := range l.Data {
		w := fixtureTaskKind(t, e)
		sameShape(t, "tasks["+strconv.Itoa(i)+"]", e, w)
		kinds[w["upid"].(string)] = true
	}
	if tg.sim != nil && (len(kinds) != 2 || l.total() != len(l.Data) || l.Data[0]["status"] != "RUNNING") {
		t.Errorf("kinds %v, total %d of %d entries, first %v", kinds, l.total(), len(l.Data), l.Data[0])
	}
	user, name := tokenParts(tg.token)
	var clone, start map[string]any
	for _, e := range l.Data {
		if e["user"] == user && e["tokenid"] == name {
			switch e["type"] {
			case "qmclone":
				clone = e
			case "qmstart":
				start = e
			}
		}
	}
	if clone == nil || clone["id"] != strconv.Itoa(tg.template) || clone["status"] != "OK" {
		t.Errorf("clone entry %v, want id %d", clone, tg.template)
	}
	if start == nil || start["id"] != strconv.Itoa(tg.vmid) || start["endtime"].(float64) < start["starttime"].(float64) {
		t.Errorf("start entry %v", start)
	}
}

// TestSim_nodeTasksFilters: vmid, typefilter, since and until (inclusive), start and limit
// (total still counting every match), errors, and source: archive (the default) lists
// finished tasks only, newest first; active only the running ones, the token user kept
// whole; all the running ones first.
func TestSim_nodeTasksFilters(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.simOnly("a task that does not end")
	tg.parallel()
	vm := strconv.Itoa(tg.vmid)
	tg.cloned()
	tg.started()
	upid, err := tg.api.Stop(tg.ctx(), tg.node, tg.vmid)
	tg.mustOK(upid, err)
	// A start of a missing VM answers a UPID whose task fails.
	var failed string
	tg.rawJSON("POST", "/nodes/"+tg.node+"/qemu/999999/status/start", url.Values{}, &failed)
	if st := tg.waitTask(failed); st.ExitStatus == "OK" {
		t.Fatalf("start of a missing VM ended %q", st.ExitStatus)
	}

	all := tg.tasks("", nil)
	want := []string{"qmstart", "qmstop", "qmstart", "qmclone"}
	var types []string
	for _, e := range all.Data {
		types = append(types, e["type"].(string))
	}
	if !slices.Equal(types, want) || all.total() != 4 || all.Data[0]["upid"] != failed || all.Data[1]["upid"] != upid {
		t.Fatalf("archive %v (total %d), want %v newest first", types, all.total(), want)
	}
	pick := func(keep func(e map[string]any) bool) []string {
		out := []string{}
		for _, e := range all.Data {
			if keep(e) {
				out = append(out, e["upid"].(string))
			}
		}
		return out
	}
	num := func(e map[string]any, k string) int64 { return int64(e[k].(float64)) }
	t0 := num(all.Data[2], "starttime") // the first start
	for _, tc := range []struct {
		q    url.Values
		want []string
	}{
		{url.Values{"vmid": {vm}}, pick(func(e map[string]any) bool { return e["id"] == vm })},
		{url.Values{"vmid": {strconv.Itoa(tg.template)}}, all.upids()[3:]},
		{url.Values{"typefilter": {"qmstart"}}, pick(func(e map[string]any) bool { return e["type"] == "qmstart" })},
		{url.Values{"typefilter": {"qmstart"}, "vmid": {vm}}, all.upids()[2:3]},
		{url.Values{"since": {strconv.FormatInt(t0, 10)}}, pick(func(e map[string]any) bool { return num(e, "starttime") >= t0 })},
		{url.Values{"since": {strconv.FormatInt(t0+1, 10)}}, pick(func(e map[string]any) bool { return num(e, "starttime") > t0 })},
		{url.Values{"until": {strconv.FormatInt(t0, 10)}}, pick(func(e map[string]any) bool { return num(e, "starttime") <= t0 })},
		{url.Values{"until": {strconv.FormatInt(t0-1, 10)}}, pick(func(e map[string]any) bool { return num(e, "starttime") < t0 })},
		{url.Values{"errors": {"1"}}, all.upids()[:1]},
		{url.Values{"statusfilter": {"ok"}}, all.upids()[1:]},
		{url.Values{"limit": {"1"}}, all.upids()[:1]},
		{url.Values{"start": {"1"}, "limit": {"2"}}, all.upids()[1:3]},
		{url.Values{"limit": {"0"}}, []string{}},
	} {
		l := tg.tasks("", tc.q)
		if !slices.Equal(l.upids(), tc.want) {
			t.Errorf("%v: %v, want %v", tc.q, l.upids(), tc.want)
		}
		// total counts every match, past start and limit too.
		if matches := len(tc.want); tc.q.Has("limit") || tc.q.Has("start") {
			if l.total() != 4 {
				t.Errorf("%v: total %d, want 4", tc.q, l.total())
			}
		} else if l.total() != matches {
			t.Errorf("%v: total %d, want %d", tc.q, l.total(), matches)
		}
	}

	// A running task: listed only with source active or all, RUNNING, the token whole.
	tg.sim.InjectFault(pvesim.Fault{Path: "/nodes/{node}/qemu/{vmid}/status/start", TaskHang: true, Times: 1})
	running, err := tg.api.Start(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.tasks("", nil).upids(); !slices.Equal(got, all.upids()) {
		t.Errorf("archive lists %v, want the finished tasks %v", got, all.upids())
	}
	if got := tg.tasks("", url.Values{"source": {"archive"}}).upids(); !slices.Equal(got, all.upids()) {
		t.Errorf("source=archive lists %v", got)
	}
	active := tg.tasks("", url.Values{"source": {"active"}})
	user, name := tokenParts(tg.token)
	if len(active.Data) != 1 || active.Data[0]["upid"] != running || active.Data[0]["status"] != "RUNNING" ||
		active.Data[0]["user"] != user+"!"+name || active.Data[0]["tokenid"] != nil || active.Data[0]["saved"] != "0" ||
		active.Data[0]["endtime"] != nil || active.total() != 1 {
		t.Errorf("source=active: %v (total %d)", active.Data, active.total())
	}
	if got := tg.tasks("", url.Values{"source": {"all"}}).upids(); !slices.Equal(got, append([]string{running}, all.upids()...)) {
		t.Errorf("source=all lists %v", got)
	}
	// A running task's status is unknown to statusfilter and errors.
	if got := tg.tasks("", url.Values{"source": {"all"}, "errors": {"1"}}).upids(); !slices.Equal(got, []string{running, failed}) {
		t.Errorf("source=all errors=1 lists %v", got)
	}
	if got := tg.tasks("", url.Values{"source": {"all"}, "statusfilter": {"unknown"}}).upids(); !slices.Equal(got, []string{running}) {
		t.Errorf("source=all statusfilter=unknown lists %v", got)
	}
	resp, b := tg.raw("GET", "/nodes/"+tg.node+"/tasks", url.Values{"statusfilter": {"ok,bogus"}}, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `invalid format - invalid status 'bogus'\n`) {
		t.Errorf("bad statusfilter: %d %s", resp.StatusCode, b)
	}
}

// TestSim_nodeTasksSysAudit: without Sys.Audit on /nodes/<node> a token lists only its own
// tasks, and another token of its user none of them ($check_task_user, Tasks.pm lines
// 27-37); with it, every task; userfilter matches the user part, case-insensitively.
func TestSim_nodeTasksSysAudit(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.simOnly("creates users, tokens and ACLs")
	tg.parallel()
	tg.cloned()
	tg.adminOK("POST", "/access/users", url.Values{"userid": {"ops@pve"}}, nil)
	var tok, other struct {
		Value string `json:"value"`
	}
	tg.adminOK("POST", "/access/users/ops@pve/token/tf", nil, &tok)
	tg.adminOK("POST", "/access/users/ops@pve/token/other", nil, &other)
	opsTok, otherTok := "ops@pve!tf="+tok.Value, "ops@pve!other="+other.Value
	tg.grant("ops@pve", "ops@pve!tf", "/vms/"+strconv.Itoa(tg.vmid), "PVEVMUser")
	upid, err := tg.clientFor(opsTok).Start(tg.ctx(), tg.node, tg.vmid)
	tg.mustOK(upid, err)

	mine := tg.tasks(opsTok, nil)
	if len(mine.Data) != 1 || mine.Data[0]["upid"] != upid || mine.Data[0]["user"] != "ops@pve" || mine.Data[0]["tokenid"] != "tf" ||
		mine.total() != 1 {
		t.Errorf("without Sys.Audit: %v (total %d), want its own start", mine.Data, mine.total())
	}
	if l := tg.tasks(otherTok, nil); len(l.Data) != 0 || l.Total != nil {
		t.Errorf("another token of the user lists %v", l.Data)
	}
	root := tg.tasks("", nil)
	if len(root.Data) != 2 || root.Data[0]["upid"] != upid || root.Data[1]["type"] != "qmclone" {
		t.Errorf("with Sys.Audit: %v", root.upids())
	}
	if got := tg.tasks("", url.Values{"userfilter": {"OPS@"}}).upids(); !slices.Equal(got, []string{upid}) {
		t.Errorf("userfilter OPS@: %v", got)
	}
	tg.grant("ops@pve", "ops@pve!tf", "/nodes/"+tg.node, "PVEAuditor")
	if got := tg.tasks(opsTok, nil).upids(); !slices.Equal(got, root.upids()) {
		t.Errorf("with Sys.Audit on /nodes/%s: %v, want %v", tg.node, got, root.upids())
	}
}
