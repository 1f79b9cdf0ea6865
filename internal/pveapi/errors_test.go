package pveapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// matchers are every exported predicate; each error answer matches exactly the ones its
// row in the classify table names (a matcher matrix: no matcher fires on another's fixture).
var matchers = map[string]func(error) bool{
	"IsNotExist":             IsNotExist,
	"IsAlreadyExists":        IsAlreadyExists,
	"IsConfigModified":       IsConfigModified,
	"IsAgentNotRunning":      IsAgentNotRunning,
	"IsNoAgentConfigured":    IsNoAgentConfigured,
	"IsVMNotRunning":         IsVMNotRunning,
	"IsLocked":               IsLocked,
	"IsRunningDestroyFailed": IsRunningDestroyFailed,
	"IsNoSuchStorage":        IsNoSuchStorage,
	"IsUnauthorized":         IsUnauthorized,
	"IsForbidden":            IsForbidden,
	"IsProxyFailure":         IsProxyFailure,
	"IsUnreachable":          IsUnreachable,
	"IsTLSVerification":      IsTLSVerification,
	"IsCAUnavailable":        IsCAUnavailable,
	"IsDialFailure":          IsDialFailure,
	"IsConnectionLost":       IsConnectionLost,
	"IsCredentials":          IsCredentials,
	"IsMissingStorage":       IsMissingStorage,
	"IsUnknownNode":          IsUnknownNode,
	"IsContentUnsupported":   IsContentUnsupported,
	"IsEndpointUnreachable":  IsEndpointUnreachable,
	"IsHotplugProblem":       func(err error) bool { return IsHotplugProblem(err, "memory") },
	"IsPoolMissing":          IsPoolMissing,
	"IsAlreadyPoolMember":    IsAlreadyPoolMember,
	"IsNotPoolMember":        IsNotPoolMember,
}

type classRow struct {
	class    Class  // for op "get"
	create   Class  // for op "create"
	matchers string // space-separated matcher names
}

// classifyTable is the class table (decision: error-classes) over every non-2xx fixture in testdata.
var classifyTable = map[string]classRow{
	"err_595":                       {Transient, Transient, "IsProxyFailure IsUnreachable"},
	"err_596":                       {Transient, Transient, "IsProxyFailure IsUnreachable"},
	"err_agent_not_configured":      {Transient, Transient, "IsNoAgentConfigured"},
	"err_agent_not_running":         {Transient, Transient, "IsAgentNotRunning"},
	"err_auth_failed":               {Permanent, Permanent, "IsUnauthorized"},
	"err_no_ticket":                 {Permanent, Permanent, "IsUnauthorized"},
	"err_bad_param":                 {Permanent, Permanent, ""},
	"err_hotplug_memory_min":        {Permanent, Permanent, "IsHotplugProblem"},
	"err_cpu_unknown":               {Permanent, Permanent, ""},
	"err_cpu_duplicate_type":        {Permanent, Permanent, ""},
	"err_clone_exists":              {Transient, Transient, "IsAlreadyExists"},
	"err_config_modified":           {Transient, Transient, "IsConfigModified"},
	"err_clone_local_storage":       {Transient, Transient, ""},
	"err_migrate_running_offline":   {Transient, Transient, ""},
	"err_migrate_target_local":      {Permanent, Permanent, ""},
	"err_clone_storage_no_images":   {Permanent, Permanent, "IsContentUnsupported"},
	"err_config_volume_missing":     {Transient, Transient, ""},
	"err_destroy_running":           {Transient, Transient, "IsRunningDestroyFailed"},
	"err_destroy_protected":         {Transient, Transient, ""},
	"err_shutdown_paused":           {Transient, Transient, ""},
	"err_upload_forbidden":          {Permanent, Permanent, "IsForbidden"},
	"err_volume_storage_mismatch":   {Permanent, Permanent, ""},
	"err_forbidden_agent":           {Permanent, Permanent, "IsForbidden"},
	"err_forbidden_sdn_vlan":        {Permanent, Permanent, "IsForbidden"},
	"err_forbidden_volume_delete":   {Permanent, Permanent, "IsForbidden"},
	"err_forbidden_storage_content": {Permanent, Permanent, "IsForbidden"},
	"err_locked_clone":              {Transient, Transient, "IsLocked"},
	"err_node_unknown":              {Permanent, Permanent, "IsUnknownNode"},
	"err_not_exist":                 {NotFound, Transient, "IsNotExist"},
	"err_storage_not_exist":         {Permanent, Permanent, "IsMissingStorage"},
	"err_no_such_cluster_node":      {Permanent, Permanent, "IsUnknownNode"},
	"err_not_implemented":           {Transient, Transient, ""},
	"err_tag_invalid":               {Permanent, Permanent, ""},
	"err_upload_bad_name":           {Permanent, Permanent, ""},
	"err_upload_no_iso_content":     {Permanent, Permanent, "IsContentUnsupported"},
	"err_vm_not_running":            {Transient, Transient, "IsVMNotRunning"},
	"storage_status_missing":        {Permanent, Permanent, "IsMissingStorage IsNoSuchStorage"},
	"err_permission_vm_audit":       {Permanent, Permanent, "IsForbidden"},
	"err_permission_clone_template": {Permanent, Permanent, "IsForbidden"},
	"err_permission_clone_allocate": {Permanent, Permanent, "IsForbidden"},
	"err_permission_pool_missing":   {Permanent, Permanent, "IsForbidden IsPoolMissing"},
	"err_pool_update_forbidden":     {Permanent, Permanent, "IsForbidden"},
	"err_pool_update_missing":       {Permanent, Permanent, "IsPoolMissing"},
	"err_pool_already_member":       {Transient, Transient, "IsAlreadyPoolMember"},
	"err_pool_not_member":           {Transient, Transient, "IsNotPoolMember"},
	"err_nextid_taken":              {Permanent, Permanent, ""},
}

// TestClassify_everyErrorFixture replays every non-2xx fixture through the client and checks
// the APIError's fields, its Error() text, its class for "get" and "create", and the matcher
// matrix.
func TestClassify_everyErrorFixture(t *testing.T) {
	names, err := fixture.All()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, name := range names {
		f := fixture.MustLoad(name)
		if f.Status < 300 {
			if strings.HasPrefix(name, "err_") {
				t.Errorf("%s is named err_ but is a %d", name, f.Status)
			}
			continue
		}
		seen[name] = true
		row, ok := classifyTable[name]
		if !ok {
			t.Errorf("fixture %s has no row in the classify table", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t, fixtureReply(t, name))
			c := newTestClient(t, ts)
			_, err := c.Version(context.Background())
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err %v (%T), want *APIError", err, err)
			}
			if ae.Status != f.Status || ae.Message != f.Message() || !reflect.DeepEqual(ae.Errors, f.Errors()) {
				t.Errorf("APIError %+v, want status %d message %q errors %v", ae, f.Status, f.Message(), f.Errors())
			}
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprint(f.Status)) || strings.Contains(msg, "\n") {
				t.Errorf("Error() = %q", msg)
			}
			for k, v := range f.Errors() {
				if !strings.Contains(msg, k+": "+v) {
					t.Errorf("Error() = %q lacks the field error %s: %s", msg, k, v)
				}
			}
			if got := Classify("get", err); got != row.class {
				t.Errorf("Classify(get) = %v, want %v", got, row.class)
			}
			if got := Classify("create", err); got != row.create {
				t.Errorf("Classify(create) = %v, want %v", got, row.create)
			}
			want := strings.Fields(row.matchers)
			var got []string
			for m, fn := range matchers {
				if fn(err) {
					got = append(got, m)
				}
			}
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("matchers %v, want %v", got, want)
			}
		})
	}
	for name := range classifyTable {
		if !seen[name] {
			t.Errorf("classify row %s has no error fixture", name)
		}
	}
}

// TestMatchers_anchoredToStatus: the wording matches only on the status Proxmox sends it with.
func TestMatchers_anchoredToStatus(t *testing.T) {
	for _, name := range []string{"err_not_exist", "err_clone_exists", "err_agent_not_running",
		"err_agent_not_configured", "err_vm_not_running", "err_locked_clone", "err_destroy_running"} {
		f := fixture.MustLoad(name)
		moved := &APIError{Status: http.StatusBadGateway, Message: f.Message()}
		for m, fn := range matchers {
			if fn(moved) {
				t.Errorf("%s: %s matches the text under status 502", name, m)
			}
		}
		if Classify("get", moved) != Transient {
			t.Errorf("%s under 502 is not Transient", name)
		}
	}
	missing := fixture.MustLoad("storage_status_missing")
	if IsNoSuchStorage(&APIError{Status: http.StatusInternalServerError, Message: missing.Message(), Errors: missing.Errors()}) {
		t.Error("IsNoSuchStorage matched a 500")
	}
	// The agent answer's tail must not pass for the stopped-VM answer (fact: agent-answers).
	agent := fixture.MustLoad("err_agent_not_running").Message()
	if IsVMNotRunning(&APIError{Status: http.StatusInternalServerError, Message: agent}) {
		t.Error("IsVMNotRunning matched the agent answer")
	}
}

// TestIsRunningDestroyFailed_wholeMessage: the fixture's text matches for any VMID, and only
// as the whole message (a prefix or suffix around it is another answer).
func TestIsRunningDestroyFailed_wholeMessage(t *testing.T) {
	msg := fixture.MustLoad("err_destroy_running").Message()
	if !IsRunningDestroyFailed(fmt.Errorf("destroy: %w", &APIError{Status: http.StatusInternalServerError, Message: strings.Replace(msg, "199999", "100", 1)})) {
		t.Errorf("IsRunningDestroyFailed misses %q with another VMID, wrapped", msg)
	}
	for _, m := range []string{"unable to destroy: " + msg, msg + " (retry)", strings.Replace(msg, "199999", "x", 1)} {
		if IsRunningDestroyFailed(&APIError{Status: http.StatusInternalServerError, Message: m}) {
			t.Errorf("IsRunningDestroyFailed matched %q", m)
		}
	}
}

func TestLockOf_namesTheLock(t *testing.T) {
	f := fixture.MustLoad("err_locked_clone")
	lock, ok := LockOf(&APIError{Status: f.Status, Message: f.Message()})
	if !ok || !strings.Contains(f.Message(), "("+lock+")") || lock == "" {
		t.Errorf("LockOf = %q, %v", lock, ok)
	}
	if _, ok := LockOf(errors.New("x")); ok {
		t.Error("LockOf on a plain error")
	}
}

// TestClassify_nonAPIErrors covers the classes of failures that are not HTTP answers.
func TestClassify_nonAPIErrors(t *testing.T) {
	exit := taskExit(t, "task_status_stopped_error")
	notExist := fixture.MustLoad("err_not_exist")
	apiNotExist := &APIError{Status: notExist.Status, Message: notExist.Message()}
	cases := []struct {
		name string
		err  error
		want Class
	}{
		{"canceled", fmt.Errorf("wrapped: %w", context.Canceled), Transient},
		{"deadline", context.DeadlineExceeded, Transient},
		{"eof", io.EOF, Transient},
		{"unexpected eof", io.ErrUnexpectedEOF, Transient},
		{"task error", &TaskError{UPID: upidOf("resize_shrink_response"), ExitStatus: exit}, Transient},
		{"anything else", errors.New("something"), Transient},
		{"nil", nil, Transient},
		{"WithClass wins over a 401", WithClass(Transient, &APIError{Status: 401, Message: "x"}), Transient},
		{"WithClass wins over not found", WithClass(Permanent, apiNotExist), Permanent},
		{"WithClass survives wrapping", fmt.Errorf("step: %w", WithClass(Permanent, errors.New("bad"))), Permanent},
		{"not found wrapped", fmt.Errorf("get: %w", apiNotExist), NotFound},
		{"other 4xx", &APIError{Status: http.StatusConflict, Message: "x"}, Permanent},
	}
	for _, tc := range cases {
		if got := Classify("get", tc.err); got != tc.want {
			t.Errorf("%s: Classify = %v, want %v", tc.name, got, tc.want)
		}
	}
	if WithClass(Permanent, nil) != nil {
		t.Error("WithClass(nil) is not nil")
	}
	if c, ok := ClassOf(errors.New("x")); ok || c != Transient {
		t.Errorf("ClassOf(plain) = %v, %v", c, ok)
	}
	for _, c := range []Class{Transient, Permanent, NotFound} {
		if c.String() == "" {
			t.Errorf("class %d has no name", c)
		}
	}
}

func taskExit(t *testing.T, name string) string {
	t.Helper()
	var ts TaskStatus
	if err := fixture.MustLoad(name).Data(&ts); err != nil {
		t.Fatal(err)
	}
	return ts.ExitStatus
}

// TestTaskSucceeded_fromFixtures: OK and WARNINGS: <n> succeed, any other exitstatus fails.
func TestTaskSucceeded_fromFixtures(t *testing.T) {
	want := map[string]bool{
		"task_status_ok": true, "task_status_warnings": true, "task_status_volume_missing": true,
		"task_status_stop_paused": true, "task_status_destroy_hibernated": true,
		"task_status_stopped_error": false, "task_status_start_already_running": false, "task_status_start_volume_missing": false,
	}
	for name, ok := range want {
		if got := TaskSucceeded(taskExit(t, name)); got != ok {
			t.Errorf("%s: TaskSucceeded = %v, want %v", name, got, ok)
		}
	}
	for _, s := range []string{"", "WARNINGS: ", "WARNINGS: x", "WARNINGS:3", "ok"} {
		if TaskSucceeded(s) {
			t.Errorf("TaskSucceeded(%q) = true", s)
		}
	}
	if !TaskSucceeded("WARNINGS: 12") {
		t.Error("WARNINGS: 12 is a success")
	}
}

// TestMissingVolume_fromFixture: the start that needs a missing volume names it; other task
// failures, the volume delete's own OK, and the wording outside a *TaskError do not match.
func TestMissingVolume_fromFixture(t *testing.T) {
	var st TaskStatus
	if err := fixture.MustLoad("task_status_start_volume_missing").Data(&st); err != nil {
		t.Fatal(err)
	}
	if TaskSucceeded(st.ExitStatus) {
		t.Fatalf("%q is a success", st.ExitStatus)
	}
	err := fmt.Errorf("start: %w", &TaskError{UPID: st.UPID, ExitStatus: st.ExitStatus})
	vol, ok := MissingVolume(err)
	if !ok || vol != "proxy-seeds:iso/proxy-reconaaaaaaaaaaa-seed.iso" || !strings.Contains(st.ExitStatus, vol) {
		t.Errorf("MissingVolume = %q, %t", vol, ok)
	}
	if Classify("update", err) != Transient {
		t.Error("a failed task is Transient at the seam: the backend decides whether it can repair it")
	}
	for _, name := range []string{"task_status_stopped_error", "task_status_start_already_running", "task_status_volume_missing"} {
		if v, ok := MissingVolume(&TaskError{UPID: st.UPID, ExitStatus: taskExit(t, name)}); ok {
			t.Errorf("%s: MissingVolume = %q", name, v)
		}
	}
	for _, e := range []error{
		errors.New(st.ExitStatus),
		&APIError{Status: http.StatusInternalServerError, Message: st.ExitStatus},
		&TaskError{UPID: st.UPID, ExitStatus: "TASK ERROR: " + st.ExitStatus},
		&TaskError{UPID: st.UPID, ExitStatus: st.ExitStatus + " (retried)"},
	} {
		if v, ok := MissingVolume(e); ok {
			t.Errorf("MissingVolume(%v) = %q", e, v)
		}
	}
}

func TestTaskError_namesUPIDAndText(t *testing.T) {
	upid := upidOf("resize_shrink_response")
	exit := taskExit(t, "task_status_stopped_error")
	msg := (&TaskError{UPID: upid, ExitStatus: exit}).Error()
	if !strings.Contains(msg, upid) || !strings.Contains(msg, exit) || !strings.Contains(msg, "resize") {
		t.Errorf("TaskError = %q", msg)
	}
}

// TestParseUPID_everyUPIDFixture parses every UPID answer and task status in testdata.
func TestParseUPID_everyUPIDFixture(t *testing.T) {
	u, err := ParseUPID(upidOf("upload_response"))
	if err != nil || u.Type != "imgcopy" || u.ID != "" || u.Node != tNode || u.User != "proxy-operator@pve!tf" || u.StartTime <= 0 {
		t.Errorf("upload UPID %+v, %v", u, err)
	}
	u, err = ParseUPID(upidOf("clone_response"))
	if err != nil || u.Type != "qmclone" || u.ID != "9001" || u.PID <= 0 {
		t.Errorf("clone UPID %+v, %v", u, err)
	}
	for _, bad := range []string{"", "UPID:pv1-1", "UPID:pv1-1:0001:0002:0003:qmstart:1:root@pam:",
		"UPID:pv1-1:0000000Z:00000002:00000003:qmstart:1:root@pam:", "UPID::00000001:00000002:00000003:qmstart:1:root@pam:",
		"UPID:pv1-1:00000001:00000002:00000003:qmstart:1:root@pam", "XUPID:pv1-1:00000001:00000002:00000003:qmstart:1:root@pam:"} {
		if _, err := ParseUPID(bad); err == nil {
			t.Errorf("ParseUPID(%q) succeeded", bad)
		}
	}
}

// TestAPIError_errorText: a 400 carries its field errors in key order; an empty message
// falls back to the status text.
func TestAPIError_errorText(t *testing.T) {
	f := fixture.MustLoad("storage_status_missing")
	e := &APIError{Status: f.Status, Message: f.Message(), Errors: map[string]string{"storage": f.Errors()["storage"], "a": "b"}}
	want := "proxmox API 400: " + strings.TrimSuffix(f.Message(), ".") + ": a: b; storage: " + f.Errors()["storage"]
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	if got := (&APIError{Status: 502}).Error(); got != "proxmox API 502: Bad Gateway" {
		t.Errorf("Error() = %q", got)
	}
}
