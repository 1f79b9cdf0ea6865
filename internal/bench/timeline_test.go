package bench

import (
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

func TestBreakdown_splitsOneVMsTime(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	task := func(typ string, vmid, from, to int) pvesim.TaskState {
		return pvesim.TaskState{Type: typ, VMID: vmid, Submitted: at(from), Ended: at(to)}
	}
	tasks := []pvesim.TaskState{
		task("qmclone", 100, 30, 230),    // before 30, clone 200
		task("imgcopy", 0, 300, 400),     // no VMID: between
		task("qmresize", 100, 450, 550),  // between 220, resize 100
		task("qmstart", 100, 600, 700),   // between 50, start 100
		task("qmclone", 101, 40, 240),    // another VM
		task("qmstart", 100, 5000, 5100), // after the resource ended: not counted
	}
	times := map[string][2]time.Time{
		"bench-0": {at(0), at(3000)},    // agent ready at 700+2000: after 300
		"bench-1": {at(0), time.Time{}}, // never completed: left out
		"bench-9": {at(0), at(10)},      // no VMID known: left out
	}
	vmids := map[string]int{"bench-0": 100, "bench-1": 101}
	got := breakdown(times, vmids, tasks, 2*time.Second)
	ms := time.Millisecond
	want := Breakdown{VMs: 1, Resource: 3000 * ms, Before: 30 * ms, Tasks: 400 * ms, Between: 270 * ms, Agent: 2000 * ms, After: 300 * ms}
	if got != want {
		t.Fatalf("breakdown = %+v\nwant        %+v", got, want)
	}
	if got.Before+got.Tasks+got.Between+got.Agent+got.After != got.Resource {
		t.Errorf("the parts do not add up to the resource time")
	}
	if got.Overhead() != 600*ms {
		t.Errorf("overhead %s, want 600ms", got.Overhead())
	}

	// Without an agent wait (destroy) the time after the last task is After.
	got = breakdown(times, vmids, tasks, 0)
	if got.Agent != 0 || got.After != 2300*ms {
		t.Errorf("no agent: %+v, want after 2.3s", got)
	}
}

func TestBreakdown_averagesOverVMs(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tasks := []pvesim.TaskState{
		{Type: "qmstop", VMID: 1, Submitted: at(100), Ended: at(200)},
		{Type: "qmstop", VMID: 2, Submitted: at(300), Ended: at(400)},
	}
	times := map[string][2]time.Time{"bench-0": {at(0), at(300)}, "bench-1": {at(0), at(500)}}
	got := breakdown(times, map[string]int{"bench-0": 1, "bench-1": 2}, tasks, 0)
	ms := time.Millisecond
	if got.VMs != 2 || got.Resource != 400*ms || got.Before != 200*ms || got.Tasks != 100*ms || got.After != 100*ms {
		t.Errorf("%+v; want 2 VMs, resource 400ms = before 200 + tasks 100 + after 100", got)
	}
}

// handoffs: each VM's time in the provider's hands ends at its last answered request
// (its VMID in the path, or a status poll of its task); what follows, to apply_complete,
// is terraform's hand-off.
func TestHandoffs(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	req := func(path string, vmid, answered int) pvesim.Request {
		return pvesim.Request{Method: "GET", Path: path, VMID: vmid, Received: at(answered - 1), Answered: at(answered)}
	}
	times := map[string][2]time.Time{
		"bench-0": {at(0), at(500)},
		"bench-1": {at(0), at(1000)},
		"bench-2": {at(0), at(300)}, // no request: its own end
	}
	vmids := map[string]int{"bench-0": 100, "bench-1": 101, "bench-2": 102}
	reqs := []pvesim.Request{
		req("/nodes/pve1/qemu/100/config", 100, 50),
		req("/nodes/pve1/tasks/UPID:pve1:0001:0002:6B0FFA5D:qmdestroy:100:root@pam!tf:/status", 0, 400), // 100's last: 100 ms before its end
		req("/nodes/pve1/qemu/101/config", 101, 700),                                                    // 101's last: 300 ms
		req("/nodes/pve1/qemu/101/config", 101, 1200),                                                   // after its end: not counted
		req("/cluster/resources", 0, 900),                                                               // no VM
	}
	own, mean := handoffs(times, vmids, reqs)
	if mean != 200*time.Millisecond {
		t.Errorf("mean hand-off %s, want 200ms (100 and 300)", mean)
	}
	for name, want := range map[string]time.Time{"bench-0": at(400), "bench-1": at(700), "bench-2": at(300)} {
		if own[name][1] != want || own[name][0] != at(0) {
			t.Errorf("%s in the provider's hands %v, want to %v", name, own[name], want)
		}
	}
	if got := spanOf(own); got != 700*time.Millisecond {
		t.Errorf("spanOf = %s, want 700ms", got)
	}
}
