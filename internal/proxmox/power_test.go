package proxmox

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// A cores change on a running VM restarts it gracefully: a shutdown with the timeout and
// forceStop, then a start; never a stop.
func TestUpdate_gracefulRestart(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.calllog = nil
	if err := h.b.Update(h.ctx, testID, Changes{Cores: ptr(4), ShutdownTimeout: 90 * time.Second, UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if got, want := mutating(h.f), []string{"SetVMConfig", "Shutdown", "Start"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if a := h.f.callsOf("Shutdown")[0].Args; a["timeout"] != "90" || a["forceStop"] != "1" {
		t.Errorf("shutdown %v, want timeout 90 and forceStop", a)
	}
	vm, err := h.b.Get(h.ctx, testID, GetOptions{FreshListing: true, AnyOwner: true})
	if err != nil || vm.Cores != 4 || vm.PendingCores != 0 || vm.State != StateRunning {
		t.Errorf("after the restart: cores %d pending %d state %s (%v)", vm.Cores, vm.PendingCores, vm.State, err)
	}
}

// A guest that does not power off is stopped by Proxmox inside the shutdown task
// (forceStop), which ends OK; the restart goes on and the pending cores apply.
func TestUpdate_gracefulRestartForced(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) { v.IgnoresShutdown = true })
	h.f.calllog = nil
	if err := h.b.Update(h.ctx, testID, Changes{Cores: ptr(3), UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if got, want := mutating(h.f), []string{"SetVMConfig", "Shutdown", "Start"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	if a := h.f.callsOf("Shutdown")[0].Args; a["timeout"] != "120" {
		t.Errorf("default shutdown timeout sent as %q, want 120", a["timeout"])
	}
	if v := h.f.vm(testVMID0); v.Config["cores"] != "3" || v.Status != "running" {
		t.Errorf("cores %q status %q", v.Config["cores"], v.Status)
	}
}

// DeferRestart writes the change and leaves it pending; Get reports what the VM runs
// with and the pending value; a second apply writes nothing; an apply without
// DeferRestart restarts without writing again, and the value applies.
func TestUpdate_deferRestart(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.calllog = nil
	ch := Changes{Cores: ptr(4), MemoryMiB: ptr(4096), DeferRestart: true, UID: testUID}
	if err := h.b.Update(h.ctx, testID, ch); err != nil {
		t.Fatal(err)
	}
	if got, want := mutating(h.f), []string{"SetVMConfig"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	vm, err := h.b.Get(h.ctx, testID, GetOptions{FreshListing: true, AnyOwner: true})
	if err != nil || vm.Cores != 2 || vm.PendingCores != 4 || vm.MemoryMiB != 2048 || vm.PendingMemoryMiB != 4096 {
		t.Fatalf("pending: cores %d (pending %d), memory %d (pending %d), %v", vm.Cores, vm.PendingCores, vm.MemoryMiB, vm.PendingMemoryMiB, err)
	}
	h.f.calllog = nil
	if err := h.b.Update(h.ctx, testID, ch); err != nil {
		t.Fatal(err)
	}
	if got := mutating(h.f); len(got) != 0 {
		t.Errorf("a second deferred apply made %v, want nothing", got)
	}
	h.f.calllog = nil
	ch.DeferRestart = false
	if err := h.b.Update(h.ctx, testID, ch); err != nil {
		t.Fatal(err)
	}
	if got, want := mutating(h.f), []string{"Shutdown", "Start"}; !slices.Equal(got, want) {
		t.Errorf("restart of the pending change: calls %v, want %v", got, want)
	}
	vm, err = h.b.Get(h.ctx, testID, GetOptions{FreshListing: true, AnyOwner: true})
	if err != nil || vm.Cores != 4 || vm.PendingCores != 0 || vm.MemoryMiB != 4096 || vm.PendingMemoryMiB != 0 {
		t.Errorf("after the restart: cores %d (pending %d), memory %d (pending %d), %v", vm.Cores, vm.PendingCores, vm.MemoryMiB, vm.PendingMemoryMiB, err)
	}
}

// With memory hotplug, memory applies without a restart; a size off the DIMM steps is
// refused before anything is written; a hotplug Proxmox refuses falls back to a restart.
func TestUpdate_memoryHotplug(t *testing.T) {
	hot := func(h *harness) {
		h.ourRunningVM(testVMID0, testName)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["hotplug"], v.Config["numa"] = "network,disk,usb,memory", "1" })
		h.f.calllog = nil
	}
	h := newHarness(t)
	hot(h)
	if err := h.b.Update(h.ctx, testID, Changes{MemoryMiB: ptr(3072), UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if got, want := mutating(h.f), []string{"SetVMConfig"}; !slices.Equal(got, want) {
		t.Errorf("hotplug: calls %v, want %v", got, want)
	}
	if vm, err := h.b.Get(h.ctx, testID, GetOptions{FreshListing: true, AnyOwner: true}); err != nil || vm.MemoryMiB != 3072 || vm.PendingMemoryMiB != 0 || !vm.MemoryHotplug {
		t.Errorf("after the hotplug: memory %d pending %d hotplug %v (%v)", vm.MemoryMiB, vm.PendingMemoryMiB, vm.MemoryHotplug, err)
	}

	h = newHarness(t)
	hot(h)
	err := h.b.Update(h.ctx, testID, Changes{MemoryMiB: ptr(3000), UID: testUID})
	assertClass(t, err, pveapi.Permanent)
	assertContains(t, err.Error(), "3000 MiB is not one", "2560 or 3072")
	if got := mutating(h.f); len(got) != 0 {
		t.Errorf("a refused size made %v", got)
	}

	h = newHarness(t)
	hot(h)
	h.f.onCall("SetVMConfig", func(context.Context, fakeCall) error { return fixtureErr("err_hotplug_memory_min") })
	var told []string
	notify := func(msg string) { told = append(told, msg) }
	if err := h.b.Update(h.ctx, testID, Changes{MemoryMiB: ptr(4096), UID: testUID, Notify: notify}); err != nil {
		t.Fatal(err)
	}
	if got, want := mutating(h.f), []string{"SetVMConfig", "Shutdown", "Start"}; !slices.Equal(got, want) {
		t.Errorf("a refused hotplug: calls %v, want %v", got, want)
	}
	if len(told) != 1 || !strings.Contains(told[0], "did not hotplug memory 4096 MiB") || !strings.Contains(told[0], "restarted to apply it") {
		t.Errorf("a refused hotplug told %q, want one note of the restart", told)
	}
}

// hotplug and numa set on a running VM stay pending: the VM has no memory hotplug until
// its next start, so a memory change restarts it, and the read says no hotplug. The
// current config is read only for a VM whose config read names memory hotplug.
func TestUpdate_memoryHotplugPending(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	vm, err := h.b.Get(h.ctx, testID, GetOptions{FreshListing: true, AnyOwner: true})
	if err != nil || vm.MemoryHotplug || h.f.calls("VMConfigCurrent") != 0 {
		t.Fatalf("ordinary VM: hotplug %v, %d current reads (%v)", vm.MemoryHotplug, h.f.calls("VMConfigCurrent"), err)
	}
	h.f.mutate(testVMID0, func(v *fakeVM) {
		v.Pending = map[string]string{"hotplug": "network,disk,usb,memory", "numa": "1"}
	})
	vm, err = h.b.Get(h.ctx, testID, GetOptions{FreshListing: true, AnyOwner: true})
	if err != nil || vm.MemoryHotplug || h.f.calls("VMConfigCurrent") != 1 {
		t.Errorf("pending hotplug: read hotplug %v after %d current reads (%v), want false after 1", vm.MemoryHotplug, h.f.calls("VMConfigCurrent"), err)
	}
	h.f.calllog = nil
	if err := h.b.Update(h.ctx, testID, Changes{MemoryMiB: ptr(3072), UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if got, want := mutating(h.f), []string{"SetVMConfig", "Shutdown", "Start"}; !slices.Equal(got, want) {
		t.Errorf("pending hotplug: calls %v, want %v", got, want)
	}
}

func TestMemoryHotplugStep(t *testing.T) {
	for _, tc := range []struct {
		mib          int
		ok           bool
		below, above int
	}{
		{1024, true, 1024, 1024}, {1536, true, 1536, 1536}, {2048, true, 2048, 2048}, {3000, false, 2560, 3072},
		{512, false, 1024, 1024}, {17408, true, 17408, 17408}, {17920, false, 17408, 18432}, {18432, true, 18432, 18432},
	} {
		ok, below, above := MemoryHotplugStep(tc.mib, false, 1)
		if ok != tc.ok || below != tc.below || above != tc.above {
			t.Errorf("%d: %v %d %d, want %v %d %d", tc.mib, ok, below, above, tc.ok, tc.below, tc.above)
		}
	}
}

// A clean shutdown teaches the backend how long its guests take to power off, so the next
// shutdown's polls gather around that (the fake's tasks end after two polls, well before
// the default expectation).
func TestUpdate_shutdownDelayLearned(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.taskPolls = 2
	if got := h.b.agentSeen.expected(shutdownDelayKey, expectedShutdown); got != expectedShutdown {
		t.Fatalf("before any shutdown: expected %s, want the default %s", got, expectedShutdown)
	}
	if err := h.b.Update(h.ctx, testID, Changes{Cores: ptr(4), ShutdownTimeout: 90 * time.Second, UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if got := h.b.agentSeen.expected(shutdownDelayKey, expectedShutdown); got >= expectedShutdown {
		t.Errorf("after a shutdown that ended at once: expected %s, want less than %s", got, expectedShutdown)
	}
}

// shutdownPollDelay follows the address wait's schedule around the expected power-off and
// falls back to the usual task interval once twice that has passed.
func TestShutdownPollDelay(t *testing.T) {
	const pollMax = time.Second
	for _, tc := range []struct {
		elapsed, expected time.Duration
		atLeast, atMost   time.Duration
	}{
		{0, 4 * time.Second, 10 * time.Millisecond, 100 * time.Millisecond},
		{3900 * time.Millisecond, 4 * time.Second, 10 * time.Millisecond, 100 * time.Millisecond},
		{5 * time.Second, 4 * time.Second, 10 * time.Millisecond, time.Second},
		// A learned 0.8 s power-off, and a guest that takes its whole timeout.
		{time.Second, 800 * time.Millisecond, 10 * time.Millisecond, 200 * time.Millisecond},
		{30 * time.Second, 800 * time.Millisecond, pollMax, 10 * time.Second},
	} {
		d := shutdownPollDelay(tc.elapsed, tc.expected, pollMax)
		if d < tc.atLeast || d > tc.atMost {
			t.Errorf("shutdownPollDelay(%s, %s) = %s, want %s to %s", tc.elapsed, tc.expected, d, tc.atLeast, tc.atMost)
		}
	}
}

// A power request that fails during the restart for a cores or memory change says which
// restart it was and what the next apply does.
func TestUpdate_restartFailureSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		method string
		want   []string
	}{
		{"Shutdown", []string{"the restart that applies cores 4 failed", "written to the VM's config and stay pending", "next apply restarts it again"}},
		{"Start", []string{"the restart that applies cores 4 failed", "was shut down and its config holds the new values", "next apply starts it again"}},
	} {
		h := newHarness(t)
		h.ourRunningVM(testVMID0, testName)
		h.f.onCall(tc.method, func(context.Context, fakeCall) error { return errors.New("connection reset by peer") })
		err := h.b.Update(h.ctx, testID, Changes{Cores: ptr(4), UID: testUID})
		if err == nil {
			t.Fatalf("%s failing: no error", tc.method)
		}
		assertContains(t, err.Error(), append(tc.want, "connection reset by peer")...)
	}
}
