package pvesim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// A node's task list, GET /nodes/{node}/tasks: pve-manager PVE/API2/Tasks.pm node_tasks
// (lines 39-259). Running tasks come from the node's active list, finished ones from its
// archive, /var/log/pve/tasks/index and index.1, read backwards (newest first).

// archiveMaxSize is the size past which a node's task index is rotated (pve-common
// src/PVE/RESTEnvironment.pm active_workers, lines 381-384: $maxsize, "about 1000 entries").
const archiveMaxSize = 50000

// archivedTask is one line of a node's task index: "<upid> <endtime %08X> <status>\n"
// (RESTEnvironment.pm active_workers, lines 353-361).
type archivedTask struct {
	upid   string
	end    int64
	status string
}

func (a archivedTask) line() string { return fmt.Sprintf("%s %08X %s\n", a.upid, a.end, a.status) }

// taskArchive is a node's index and index.1. A worker that ends is archived at once: its
// reaper calls active_workers with its UPID (RESTEnvironment.pm $log_task_result, lines
// 41-71), which appends it to index; an index grown past 50000 bytes is renamed to index.1,
// the older index.1 lost (lines 363-385). Tasks ending together are archived in the order
// they end, one line each (Proxmox sorts one call's batch by starttime; a reaper's batch is
// its one task).
type taskArchive struct {
	index, index1 []archivedTask
	size          int // bytes of index
}

func (a *taskArchive) add(e archivedTask) {
	a.index = append(a.index, e)
	a.size += len(e.line())
	if a.size > archiveMaxSize {
		a.index1, a.index, a.size = a.index, nil, 0
	}
}

// newestFirst is the archive as node_tasks reads it: index backwards, then index.1
// backwards (Tasks.pm lines 240-253).
func (a *taskArchive) newestFirst(yield func(archivedTask) bool) {
	for _, list := range [][]archivedTask{a.index, a.index1} {
		for i := len(list) - 1; i >= 0; i-- {
			if !yield(list[i]) {
				return
			}
		}
	}
}

// archiveTask appends a finished task to its node's archive.
func (s *Sim) archiveTask(t *task) {
	if n := s.nodes[t.node]; n != nil {
		n.archive.add(archivedTask{upid: t.upid, end: t.endAt.Unix(), status: t.exit})
	}
}

// nodeTask is one entry of the list: PVE::UPID::decode's fields and upid, with endtime and
// status for an archived task. An archived task started by a token has its user split
// into user and tokenid ($convert_token_task, Tasks.pm lines 19-25, called for archived
// lines only, line 219). An active one keeps "user@realm!token" in user, carries the active
// file's saved flag as the string "0" (pve-common src/PVE/INotify.pm read_active_workers,
// lines 692-701) and status RUNNING (Tasks.pm line 233).
type nodeTask struct {
	UPID      string `json:"upid"`
	Node      string `json:"node"`
	PID       uint64 `json:"pid"`
	PStart    uint64 `json:"pstart"`
	StartTime int64  `json:"starttime"`
	Type      string `json:"type"`
	ID        string `json:"id"`
	User      string `json:"user"`
	TokenID   string `json:"tokenid,omitempty"`
	Saved     string `json:"saved,omitempty"`
	EndTime   int64  `json:"endtime,omitempty"`
	Status    string `json:"status,omitempty"`
}

// decodeUPID is pve-common src/PVE/UPID.pm decode (lines 32-58) with noerr.
func decodeUPID(upid string) (nodeTask, bool) {
	m := upidRe.FindStringSubmatch(upid)
	if m == nil {
		return nodeTask{}, false
	}
	pid, _ := strconv.ParseUint(m[2], 16, 64)
	pstart, _ := strconv.ParseUint(m[3], 16, 64)
	start, _ := strconv.ParseInt(m[4], 16, 64)
	return nodeTask{UPID: upid, Node: m[1], PID: pid, PStart: pstart, StartTime: start, Type: m[5], ID: m[6], User: m[7]}, true
}

// taskOwnedBy is Tasks.pm $check_task_user (lines 27-37): a token sees only its own
// token's tasks, a user its own and its tokens'.
func taskOwnedBy(user, tokenid, caller string) bool {
	if tokenid != "" {
		return caller == user+"!"+tokenid || caller == user
	}
	return caller == user
}

// nodeTasksSchema is node_tasks' parameters (Tasks.pm lines 50-115).
var nodeTasksSchema = fixed(map[string]pspec{
	"start": {typ: tInt, optional: true, min: i64(0)}, "limit": {typ: tInt, optional: true, min: i64(0)},
	"userfilter": pStr, "typefilter": pStr, "vmid": optional(pVMID), "errors": pBool,
	"source": {optional: true, enum: []string{"archive", "active", "all"}},
	"since":  {typ: tInt, optional: true}, "until": {typ: tInt, optional: true},
	"statusfilter": {optional: true, format: listOf(fmtTaskStatusType)},
})

// taskFilter is node_tasks' parameters and its $filter_task (Tasks.pm lines 151-206).
type taskFilter struct {
	start, limit           int
	userfilter, typefilter string
	vmid                   string
	since, until           *int64
	status                 map[string]bool
	auditor                bool
	caller                 string
	count                  int // $count: every task past the filters, the answer's total
}

func newTaskFilter(c *call) *taskFilter {
	f := &taskFilter{limit: 50, userfilter: c.params["userfilter"], typefilter: c.params["typefilter"],
		vmid: c.params["vmid"], caller: c.authid,
		status:  map[string]bool{"ok": true, "warning": true, "error": true, "unknown": true},
		auditor: c.can("/nodes/"+c.node, "Sys.Audit")}
	if v, ok := c.params["start"]; ok {
		f.start, _ = strconv.Atoi(v)
	}
	if v, ok := c.params["limit"]; ok {
		f.limit, _ = strconv.Atoi(v)
	}
	for k, p := range map[string]**int64{"since": &f.since, "until": &f.until} {
		if v, ok := c.params[k]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			*p = &n
		}
	}
	errorsOnly := c.params["errors"] == "1"
	if sf, ok := c.params["statusfilter"]; ok && !errorsOnly {
		f.status = map[string]bool{}
		for _, s := range splitList(sf) {
			f.status[strings.ToLower(s)] = true
		}
	} else if errorsOnly {
		f.status["ok"] = false
	}
	return f
}

// skip is $filter_task: true when the task is not listed. A task past the other filters
// is counted, listed or not.
func (f *taskFilter) skip(t nodeTask) bool {
	switch {
	case perlTrue(f.userfilter) && !strings.Contains(strings.ToLower(t.User), strings.ToLower(f.userfilter)),
		!f.auditor && !taskOwnedBy(t.User, t.TokenID, f.caller),
		perlTrue(f.typefilter) && t.Type != f.typefilter,
		f.vmid != "" && t.ID != f.vmid,
		f.since != nil && t.StartTime < *f.since,
		f.until != nil && t.StartTime > *f.until,
		!f.status[normalizeStatusType(t.Status)]:
		return true
	}
	f.count++
	return f.count <= f.start || f.limit <= 0
}

var warningsRe = regexp.MustCompile(`^WARNINGS: \d+$`)

// normalizeStatusType is pve-common src/PVE/UPID.pm normalize_status_type (lines 94-106).
func normalizeStatusType(status string) string {
	switch {
	case status == "" || status == "unexpected status":
		return "unknown"
	case status == "OK":
		return "ok"
	case warningsRe.MatchString(status):
		return "warning"
	}
	return "error"
}

// hNodeTasks is node_tasks' code (Tasks.pm lines 141-258): with source active or all the
// node's running tasks first, in the order they started (the active file lists its running
// workers in that order, RESTEnvironment.pm active_workers lines 326-338), then with
// source archive (the default) or all the archive, newest first; total counts every task
// past the filters.
func (s *Sim) hNodeTasks(c *call) *response {
	f := newTaskFilter(c)
	source := c.params["source"]
	res := []nodeTask{}
	if source == "active" || source == "all" {
		for _, t := range s.active {
			if t.done || t.node != c.node {
				continue
			}
			e, ok := decodeUPID(t.upid)
			if !ok || f.skip(e) {
				continue
			}
			e.Saved, e.Status = "0", "RUNNING"
			res = append(res, e)
			f.limit--
		}
	}
	if n := s.nodes[c.node]; n != nil && source != "active" {
		for a := range n.archive.newestFirst {
			e, ok := decodeUPID(a.upid)
			if !ok {
				continue
			}
			e.EndTime, e.Status = a.end, a.status
			if user, tokenid, isToken := splitTokenID(e.User); isToken {
				e.User, e.TokenID = user, tokenid
			}
			if !f.skip(e) {
				res = append(res, e)
				f.limit--
			}
		}
	}
	return okDataTotal(res, f.count)
}

// okDataTotal is okData with the result attribute total, which pveproxy sends only when it
// is not 0 (pve-manager PVE/HTTPServer.pm rest_handler, lines 208-210; pve-http-server
// src/PVE/APIServer/Formatter/Standard.pm prepare_response_data, lines 42-44).
func okDataTotal(data any, total int) *response {
	body := map[string]any{"data": data}
	if total != 0 {
		body["total"] = total
	}
	b, err := json.Marshal(body)
	if err != nil {
		return apiError(500, "pvesim: cannot encode response: "+err.Error())
	}
	return &response{status: 200, reason: "OK", body: b}
}

// fmtTaskStatusType is pve-common src/PVE/JSONSchema.pm verify_task_status_type (lines
// 963-973), the pve-task-status-type format.
func fmtTaskStatusType(v string) string {
	switch strings.ToLower(v) {
	case "ok", "error", "warning", "unknown":
		return ""
	}
	return "invalid status '" + v + "'"
}
