package pvesim

import (
	"slices"
	"testing"
)

// checkInvariants asserts the state model is consistent. Called with mu held.
func (s *Sim) checkInvariants(t testing.TB) {
	t.Helper()
	for id, v := range s.vms {
		if v.vmid != id || s.nodes[v.node] == nil || (v.typ != "qemu" && v.typ != "lxc") {
			t.Errorf("VM %d: id %d node %q type %q", id, v.vmid, v.node, v.typ)
		}
		switch {
		case v.status == "stopped" && v.qmp == "stopped":
		case v.status == "running" && slices.Contains([]string{"running", "paused", "prelaunch"}, v.qmp):
		default:
			t.Errorf("VM %d: status %q qmpstatus %q", id, v.status, v.qmp)
		}
		if v.lock == "suspended" && v.status != "stopped" {
			t.Errorf("VM %d: hibernated but %s", id, v.status)
		}
		if v.midClone && (v.flock == nil || v.flock.typ != "qmclone") && !slices.ContainsFunc(s.active, func(tk *task) bool { return tk.typ == "qmclone" && tk.vmid == id }) {
			t.Errorf("VM %d: mid-clone without a clone task", id)
		}
		if v.flock != nil && v.flock.done {
			t.Errorf("VM %d: config lock held by finished task %s", id, v.flock.upid)
		}
		for _, w := range v.waiters {
			if w.done || w.state != taskWaiting {
				t.Errorf("VM %d: waiter %s in state %d", id, w.upid, w.state)
			}
		}
	}
	for _, tk := range s.active {
		if tk.done {
			t.Errorf("finished task %s still active", tk.upid)
		}
	}
	if len(s.tasks) != len(s.taskList) {
		t.Errorf("%d tasks indexed, %d listed", len(s.tasks), len(s.taskList))
	}
	for ip, id := range s.leases {
		if v := s.vms[id]; v == nil || v.guest.ip != ip {
			t.Errorf("lease %s held by VM %d, which is gone or has another address", ip, id)
		}
	}
}
