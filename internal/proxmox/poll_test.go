package proxmox

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestPollUntil_backoffGrowsByHalfFromMinToMax(t *testing.T) {
	h := newHarness(t)
	n := 0
	err := h.b.pollUntil(h.ctx, 0, func(context.Context) (bool, error) {
		n++
		return n == 11, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	us := time.Microsecond
	// 50 ms x 1.5^k: 50, 75, 112.5, 168.75, 253.125, 379.6875, 569.53125, 854.296875 ms,
	// then capped at 1 s.
	want := []time.Duration{50000 * us, 75000 * us, 112500 * us, 168750 * us, 253125 * us,
		379687500 * time.Nanosecond, 569531250 * time.Nanosecond, 854296875 * time.Nanosecond,
		time.Second, time.Second}
	if got := h.clock.slept(); !slices.Equal(got, want) {
		t.Errorf("sleeps %v, want %v", got, want)
	}
}

func TestPollUntil_budgetEndsWithErrBudget(t *testing.T) {
	h := newHarness(t)
	n := 0
	err := h.b.pollUntil(h.ctx, 2*time.Second, func(context.Context) (bool, error) { n++; return false, nil })
	if !errors.Is(err, errBudget) {
		t.Fatalf("err %v, want errBudget", err)
	}
	var total time.Duration
	for _, d := range h.clock.slept() {
		total += d
	}
	// 50+75+112.5+168.75+253.125+379.6875+569.53125 ms, the 391.40625 ms left, then one
	// last check.
	if total != 2*time.Second || n != 9 {
		t.Errorf("slept %v over %d polls, want 2s over 9", total, n)
	}
}

func TestPollUntil_cancelledContextReturnsPromptly(t *testing.T) {
	h := newHarness(t)
	h.b.clock = realClock{}
	h.b.cfg.Budgets.PollMin, h.b.cfg.Budgets.PollMax = time.Hour, time.Hour
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() {
		done <- h.b.pollUntil(ctx, 0, func(context.Context) (bool, error) { return false, nil })
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// startTask makes the fake run a start task on VM 100 and returns its UPID.
func startTask(t *testing.T, h *harness) string {
	t.Helper()
	if h.f.vm(100) == nil {
		h.f.addVM(&fakeVM{VMID: 100, Name: "x", Node: h.f.nodes[len(h.f.nodes)-1]})
	}
	upid, err := h.f.Start(h.ctx, h.f.vm(100).Node, 100)
	if err != nil {
		t.Fatal(err)
	}
	return upid
}

func TestWaitTask_pollsTheUPIDsNodeUntilStopped(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.f.taskPolls = 3
	upid := startTask(t, h)
	if err := h.b.waitTask(h.ctx, upid, time.Minute); err != nil {
		t.Fatal(err)
	}
	polls := h.f.callsOf("TaskStatus")
	if len(polls) != 4 {
		t.Errorf("%d polls, want 4 (3 running, 1 stopped)", len(polls))
	}
	for _, c := range polls {
		if c.Node != "pv1-2" {
			t.Errorf("polled node %q, want the UPID's pv1-2", c.Node)
		}
	}
	if h.f.vm(100).Status != "running" {
		t.Error("the task's effect was not applied")
	}
}

func TestWaitTask_warningsCountAsSuccess(t *testing.T) {
	h := newHarness(t)
	h.f.failTask("qmstart", fixtureExit("task_status_warnings"))
	if err := h.b.waitTask(h.ctx, startTask(t, h), time.Minute); err != nil {
		t.Errorf("WARNINGS: %v", err)
	}
	assertContains(t, h.logs.String(), "proxmox task finished with warnings")
}

func TestWaitTask_failedTaskIsTransientWithItsText(t *testing.T) {
	h := newHarness(t)
	exit := fixtureExit("task_status_stopped_error")
	h.f.failTask("qmstart", exit)
	upid := startTask(t, h)
	err := h.b.waitTask(h.ctx, upid, time.Minute)
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), exit, upid)
	assertContains(t, h.logs.String(), "proxmox task failed", upid)
}

func TestWaitTask_budgetIsTransientNamingTheUPID(t *testing.T) {
	h := newHarness(t)
	h.f.taskPolls = 1000
	upid := startTask(t, h)
	err := h.b.waitTask(h.ctx, upid, 10*time.Second)
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), upid, "did not finish within 10s")
}

func TestWaitTask_transientPollFailureRetriedPermanentNot(t *testing.T) {
	h := newHarness(t)
	upid := startTask(t, h)
	h.f.failNext("TaskStatus", fixtureErr("err_596"))
	if err := h.b.waitTask(h.ctx, upid, time.Minute); err != nil {
		t.Fatalf("a 596 inside the wait: %v", err)
	}
	h.f.mutate(100, func(v *fakeVM) { v.Status = "stopped" })
	upid = startTask(t, h)
	h.f.failNext("TaskStatus", fixtureErr("err_auth_failed"))
	err := h.b.waitTask(h.ctx, upid, time.Minute)
	assertClass(t, err, pveapi.Permanent)
}

func TestWaitTask_malformedUPIDIsTransient(t *testing.T) {
	h := newHarness(t)
	err := h.b.waitTask(h.ctx, "not-a-upid", time.Minute)
	assertClass(t, err, pveapi.Transient)
	if h.f.calls("TaskStatus") != 0 {
		t.Error("polled a malformed UPID")
	}
}
