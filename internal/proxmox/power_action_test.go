package proxmox

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestPower_table: each operation on a running, a stopped and a paused VM of ours: the
// power requests sent, in order, and where the VM ends.
func TestPower_table(t *testing.T) {
	paused := func(h *harness) {
		h.ourRunningVM(testVMID0, testName)
		st := capturedStatus(h.t, "status_current_paused")
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = st.Status, st.QMPStatus })
	}
	running := func(h *harness) { h.ourRunningVM(testVMID0, testName) }
	stopped := func(h *harness) {
		h.ourRunningVM(testVMID0, testName)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = "stopped", "" })
	}
	for _, tc := range []struct {
		name   string
		setup  func(h *harness)
		op     PowerOp
		calls  []string
		status string
	}{
		{"start a stopped VM", stopped, PowerStart, []string{"Start"}, "running"},
		{"start a running VM: nothing", running, PowerStart, nil, "running"},
		{"start a paused VM: stop, start", paused, PowerStart, []string{"Stop", "Start"}, "running"},
		{"shutdown a running VM: graceful", running, PowerShutdown, []string{"Shutdown"}, "stopped"},
		{"shutdown a stopped VM: nothing", stopped, PowerShutdown, nil, "stopped"},
		{"shutdown a paused VM: stop", paused, PowerShutdown, []string{"Stop"}, "stopped"},
		{"reboot a running VM: shutdown, start", running, PowerReboot, []string{"Shutdown", "Start"}, "running"},
		{"reboot a stopped VM: start", stopped, PowerReboot, []string{"Start"}, "running"},
		{"stop a running VM: no shutdown", running, PowerStop, []string{"Stop"}, "stopped"},
		{"stop a stopped VM: nothing", stopped, PowerStop, nil, "stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			h.f.calllog = nil
			var progress []string
			res, err := h.b.Power(h.ctx, testID, PowerOptions{Op: tc.op, UID: testUID, ShutdownTimeout: 30 * time.Second,
				Progress: func(m string) { progress = append(progress, m) }})
			if err != nil {
				t.Fatal(err)
			}
			if got := mutating(h.f); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %v, want %v", got, tc.calls)
			}
			if res.Status != tc.status {
				t.Errorf("status %q, want %q", res.Status, tc.status)
			}
			v := h.f.vm(testVMID0)
			if got := map[bool]string{true: "running", false: "stopped"}[v.Status == "running" && v.QMP == "running"]; got != tc.status {
				t.Errorf("the VM is %s/%s, want %s", v.Status, v.QMP, tc.status)
			}
			if len(progress) == 0 || !strings.HasPrefix(progress[0], testName+" (VMID ") {
				t.Errorf("progress %q", progress)
			}
			if slices.Contains(tc.calls, "Shutdown") {
				if p := h.f.callsOf("Shutdown")[0].Args; p["timeout"] != "30" || p["forceStop"] != "1" {
					t.Errorf("shutdown %v, want timeout 30 with forceStop", p)
				}
			}
		})
	}
}

// TestPower_refusedOnAVMNotProvedOurs: the VM at the VMID is not the resource's (another
// uid, a mark without one, no mark, another name, or the caller gives no uid): no power
// request, no config write, an error saying why.
func TestPower_refusedOnAVMNotProvedOurs(t *testing.T) {
	at := time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		mut  func(v *fakeVM)
		uid  string
		want string
	}{
		{"another uid", func(v *fakeVM) { v.Config["description"] = FormatMark("7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35", at) }, testUID, "another workspace's VM"},
		{"a mark without a uid", func(v *fakeVM) { v.Config["description"] = MarkLines{CreatedAt: at}.Format() }, testUID, "carries no uid"},
		{"no mark", func(v *fakeVM) { v.Config["description"] = "made by hand" }, testUID, "carries no"},
		{"another name", func(v *fakeVM) { v.Name, v.Config["name"] = "db-1", "db-1" }, testUID, "renamed outside Terraform"},
		{"another name and mark", func(v *fakeVM) {
			v.Name, v.Config["name"], v.Config["description"] = "db-1", "db-1", "made by hand"
		}, testUID, "reused"},
		{"no uid given", func(*fakeVM) {}, "", "no uid"},
		// A mark still creating, with the uid a tainted state holds: copied onto a VM whose
		// proof fails, or a create not finished; the action never powers it.
		{"a creating mark with our uid", func(v *fakeVM) {
			v.Config["description"] = MarkLines{UID: testUID, CreatedAt: at, Creating: true, Instance: instanceOf(v.Config)}.Format()
		}, testUID, "still marked as being created"},
		// Written before the config step (no instance line) on a VM that runs: copied.
		{"an unbound creating mark with our uid on a running VM", func(v *fakeVM) {
			v.Config["description"] = MarkLines{UID: testUID, CreatedAt: at, Creating: true}.Format()
		}, testUID, "its mark has no proxy-operator-instance line"},
		// The finished mark with its instance line deleted (a Notes-only edit): the action
		// has no state to check the VM by, so it refuses it (decision: state-binding).
		{"the finished mark without its instance line", func(v *fakeVM) {
			v.Config["description"] = MarkLines{UID: testUID, CreatedAt: at}.Format()
		}, testUID, "apply the proxy_vm once with this version to bind it"},
		// A mark a clean-up claimed (abandoned) is not finished; a
		// finished mark copied verbatim to a VM at a reused VMID is bound to another VM.
		{"an abandoned mark with our uid", func(v *fakeVM) {
			v.Config["description"] = strings.Replace(MarkLines{UID: testUID, CreatedAt: at, Creating: true, Instance: instanceOf(v.Config)}.Format(), "=creating", "=abandoned", 1)
		}, testUID, "exists, but its mark says proxy-operator-state=abandoned"},
		{"a finished mark copied to another VM", func(v *fakeVM) {
			v.Config["description"] = MarkLines{UID: testUID, CreatedAt: at, Instance: "0a0b0c0d-0000-4000-8000-000000000001"}.Format()
		}, testUID, "names another VM"},
	} {
		for _, op := range PowerOps {
			t.Run(tc.name+"/"+string(op), func(t *testing.T) {
				h := newHarness(t)
				h.ourRunningVM(testVMID0, testName)
				h.f.mutate(testVMID0, tc.mut)
				h.f.calllog = nil
				_, err := h.b.Power(h.ctx, testID, PowerOptions{Op: op, UID: tc.uid})
				if err == nil {
					t.Fatal("power on a VM not proved ours succeeded")
				}
				assertContains(t, err.Error(), tc.want)
				if got := mutating(h.f); len(got) != 0 {
					t.Errorf("writes to a VM not ours: %v", got)
				}
				if v := h.f.vm(testVMID0); v.Status != "running" {
					t.Errorf("the foreign VM is %s", v.Status)
				}
			})
		}
	}
}

// TestPower_refusalOfAVMNotOursSaysItExists: the VM at the VMID exists, so the refusal is
// ErrNotOurs and Permanent, not the NotFound a refresh's "gone" is.
func TestPower_refusalOfAVMNotOursSaysItExists(t *testing.T) {
	at := time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC)
	for name, mut := range map[string]func(v *fakeVM){
		"another uid":  func(v *fakeVM) { v.Config["description"] = FormatMark("7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35", at) },
		"no mark":      func(v *fakeVM) { v.Config["description"] = "made by hand" },
		"another name": func(v *fakeVM) { v.Name, v.Config["name"] = "db-1", "db-1" },
		"mark, no uid": func(v *fakeVM) { v.Config["description"] = MarkLines{CreatedAt: at}.Format() },
		"a finished mark copied to another VM": func(v *fakeVM) {
			v.Config["description"] = MarkLines{UID: testUID, CreatedAt: at, Instance: "0a0b0c0d-0000-4000-8000-000000000001"}.Format()
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, mut)
			_, err := h.b.Power(h.ctx, testID, PowerOptions{Op: PowerStop, UID: testUID})
			if !errors.Is(err, ErrNotOurs) || errors.Is(err, ErrNotFound) || ClassOf(err) != pveapi.Permanent {
				t.Errorf("%v (class %s), want ErrNotOurs, Permanent", err, ClassOf(err))
			}
		})
	}
}

// TestPower_markReadExactly: the action reads the mark as the format says (decision:
// mark-format). A mark line with blanks around its key or value is not a mark line, so a
// VM whose uid line is padded is not proved ours: nothing is sent. The proxy operator's
// mark, its three lines exactly, with LF or CRLF, is ours once bound (the instance line a
// proxy_vm's apply adds, decision: state-binding).
func TestPower_markReadExactly(t *testing.T) {
	at := time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC)
	operator := FormatMark(testUID, at) + "\n" + MarkKeyInstance + "=INSTANCE"
	for _, tc := range []struct {
		name, desc string
		ours       bool
	}{
		{"the operator's mark", operator, true},
		{"the operator's mark, CRLF", strings.ReplaceAll(operator, "\n", "\r\n") + "\r\n", true},
		{"the operator's mark after an admin's note", "Egress for team A\n\n" + operator, true},
		{"uid line padded", "proxy-operator-managed=true\n proxy-operator-uid = " + testUID + " \nproxy-operator-created-at=2026-09-19T09:12:00Z", false},
		{"uid value padded", "proxy-operator-managed=true\nproxy-operator-uid=" + testUID + " \nproxy-operator-created-at=2026-09-19T09:12:00Z", false},
		{"managed line padded", " proxy-operator-managed=true\nproxy-operator-uid=" + testUID, false},
		{"managed value padded", "proxy-operator-managed= true\nproxy-operator-uid=" + testUID, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Config["description"] = strings.ReplaceAll(tc.desc, "INSTANCE", instanceOf(v.Config))
			})
			h.f.calllog = nil
			_, err := h.b.Power(h.ctx, testID, PowerOptions{Op: PowerStop, UID: testUID})
			stopped := h.f.vm(testVMID0).Status == "stopped"
			switch {
			case tc.ours && (err != nil || !stopped):
				t.Errorf("the action did not stop a VM of ours: %v", err)
			case !tc.ours && (err == nil || len(mutating(h.f)) != 0 || stopped):
				t.Errorf("the action acted on a VM whose mark is not exact: err %v, writes %v", err, mutating(h.f))
			}
		})
	}
}

// TestPower_unknownOpIsRefusedFirst: an operation the backend does not know sends nothing.
func TestPower_unknownOpIsRefusedFirst(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.calllog = nil
	if _, err := h.b.Power(h.ctx, testID, PowerOptions{Op: "hibernate", UID: testUID}); err == nil {
		t.Fatal("an unknown operation succeeded")
	}
	if n := len(h.f.log()); n != 0 {
		t.Errorf("%d requests for an unknown operation", n)
	}
}

// TestPlanPower_table: what each operation does to a VM in each power state, decided
// without a request.
func TestPlanPower_table(t *testing.T) {
	running, paused, stopped := powerState{running: true}, powerState{running: true, paused: true}, powerState{}
	for _, tc := range []struct {
		op    PowerOp
		s     powerState
		note  string
		moves []powerMove
	}{
		{PowerStart, running, "already running on node n1: nothing to do", nil},
		{PowerStart, paused, "", []powerMove{moveStop, moveStart}},
		{PowerStart, stopped, "", []powerMove{moveStart}},
		{PowerShutdown, running, "", []powerMove{moveShutdown}},
		{PowerShutdown, paused, "paused, so it cannot act on a shutdown request: stopping it", []powerMove{moveStop}},
		{PowerShutdown, stopped, "already stopped on node n1: nothing to do", nil},
		{PowerStop, running, "", []powerMove{moveStop}},
		{PowerStop, paused, "", []powerMove{moveStop}},
		{PowerStop, stopped, "already stopped on node n1: nothing to do", nil},
		{PowerReboot, running, "", []powerMove{moveShutdown, moveStart}},
		{PowerReboot, paused, "paused, so it cannot act on a shutdown request: stopping it", []powerMove{moveStop, moveStart}},
		{PowerReboot, stopped, "stopped on node n1: starting it", []powerMove{moveStart}},
	} {
		p := planPower(tc.op, tc.s, "n1")
		if p.note != tc.note || !slices.Equal(p.moves, tc.moves) {
			t.Errorf("%s of %+v: %+v, want note %q moves %v", tc.op, tc.s, p, tc.note, tc.moves)
		}
	}
}

// TestNotOurs_readAndUpdateSayTheVMExists: a read or an update that meets a VM of the
// resource's name whose mark does not prove it this resource's (another uid, no mark, a
// mark without uid) answers NotFound (a refresh keeps the resource as gone) that is also
// ErrNotOurs, so the messages say the VM exists but is not this resource's any more; a VMID
// holding a VM of another name is only NotFound (the resource's VM was removed), unless its
// mark carries the resource's uid: then it may be the resource's VM renamed (ErrNotOurs).
func TestNotOurs_readAndUpdateSayTheVMExists(t *testing.T) {
	at := time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		mut     func(v *fakeVM)
		notOurs bool
	}{
		"another uid":  {func(v *fakeVM) { v.Config["description"] = FormatMark("7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35", at) }, true},
		"no mark":      {func(v *fakeVM) { v.Config["description"] = "made by hand" }, true},
		"mark, no uid": {func(v *fakeVM) { v.Config["description"] = MarkLines{CreatedAt: at}.Format() }, true},
		"another name": {func(v *fakeVM) { v.Name, v.Config["name"], v.Config["description"] = "db-1", "db-1", "made by hand" }, false},
		"renamed":      {func(v *fakeVM) { v.Name, v.Config["name"] = "db-1", "db-1" }, true},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, tc.mut)
			two := 2
			for op, err := range map[string]error{
				"get":    func() error { _, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID}); return err }(),
				"update": h.b.Update(h.ctx, testID, withUID(Changes{Cores: &two})),
			} {
				if !errors.Is(err, ErrNotFound) || ClassOf(err) != pveapi.NotFound {
					t.Errorf("%s: %v (class %s), want NotFound", op, err, ClassOf(err))
				}
				if errors.Is(err, ErrNotOurs) != tc.notOurs {
					t.Errorf("%s: errors.Is(ErrNotOurs) = %v, want %v: %v", op, !tc.notOurs, tc.notOurs, err)
				}
			}
			if n := h.f.calls("SetVMConfig"); n != 0 {
				t.Errorf("%d config writes to a VM not ours", n)
			}
		})
	}
}
