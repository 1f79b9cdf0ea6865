package proxmox

import (
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestCleanOrphans_cloneHistory is the used-hand-clone threat at the clean-up (decision:
// clone-history): a VM whose config is exactly the template's clone, carrying a copied
// creating mark, is deleted only when the nodes' task history shows nobody started it,
// nobody but this token touched it, and nobody else cloned its template since the mark's
// created-at. Every other row is "needs a look" with nothing sent to any VM.
func TestCleanOrphans_cloneHistory(t *testing.T) {
	const vmid = 100001
	other := func(typ string, id, ago int) func(h *harness) {
		return func(h *harness) {
			h.f.addHistory("pv1-1", pveapi.TaskEntry{Type: typ, ID: strconv.Itoa(id), User: "mallory@pve",
				StartTime: h.clock.Now().Add(-time.Duration(ago) * time.Minute).Unix()})
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		sign  string // "": deleted
	}{
		{"no task since its clone", func(*harness) {}, ""},
		{"another user's start before the window", other("qmstart", vmid, 200), ""},
		{"another user's clone of another template", func(h *harness) {
			cfg := fixtureConfig("vm_config_template_9001")
			cfg["meta"] = "creation-qemu=10.1.2,ctime=1780000000"
			h.f.addTemplate(9002, "pv1-1", cfg)
			other("qmclone", 9002, 30)(h)
		}, ""},
		{"another user's clone of an unrelated VM (a busy cluster)", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: 500, Name: "web01", Config: map[string]string{"meta": "creation-qemu=9.0.0,ctime=1700000000"}})
			other("qmclone", 500, 30)(h)
		}, ""},
		{"another user's clone of a golden image made from the template", func(h *harness) {
			h.f.addTemplate(9003, "pv1-1", nil) // a clone of 9001 made a template: its meta
			other("qmclone", 9003, 30)(h)
		}, "mallory@pve cloned VM 9003"},
		{"another user's clone of a clone of the template", other("qmclone", 100003, 30), "mallory@pve cloned VM 100003"},
		{"another user's clone of a VM gone since", other("qmclone", 100077, 30), "mallory@pve cloned VM 100077"},
		{"a disk moved in from another VM", func(h *harness) {
			h.f.addHistory("pv1-1", pveapi.TaskEntry{Type: "qmmove", ID: "600-scsi0>100001-scsi1", User: "mallory@pve",
				StartTime: h.clock.Now().Add(-30 * time.Minute).Unix()})
		}, "moved a disk into it"},
		{"started by another user", other("qmstart", vmid, 30), "mallory@pve started it (qmstart"},
		{"started by the HA stack", other("hastart", vmid, 30), "started it (hastart"},
		{"started by this token", func(h *harness) {
			h.f.addHistory("pv1-1", pveapi.TaskEntry{Type: "qmstart", ID: strconv.Itoa(vmid), User: "proxy-operator@pve", TokenID: "tf",
				StartTime: h.clock.Now().Add(-30 * time.Minute).Unix()})
		}, "proxy-operator@pve!tf started it (qmstart"},
		{"migrated by another user", other("qmigrate", vmid, 30), "mallory@pve ran a qmigrate task on it"},
		{"its template cloned by another user", other("qmclone", 9001, 100), "mallory@pve cloned VM 9001"},
		{"no Sys.Audit on the node", func(h *harness) {
			h.f.privs = map[string][]string{"/vms": allFakePrivs, "/nodes/pv1-1": {"Sys.Modify"}}
		}, "no Sys.Audit on /nodes/pv1-1"},
		{"started on a node that holds no guest now", func(h *harness) {
			h.f.nodes = append(h.f.nodes, "pv1-9")
			h.f.addHistory("pv1-9", pveapi.TaskEntry{Type: "qmstart", ID: strconv.Itoa(vmid), User: "mallory@pve",
				StartTime: h.clock.Now().Add(-30 * time.Minute).Unix()})
			h.f.privs = map[string][]string{"/vms": allFakePrivs, "/nodes/pv1-1": {"Sys.Audit"}, "/nodes/pv1-9": {"Sys.Audit"}}
		}, "node pv1-9's task list shows mallory@pve started it"},
		{"nodes unlistable", func(h *harness) { h.f.failNext("Nodes", fixtureErr("err_not_implemented")) },
			"the cluster's nodes could not be listed"},
		{"task list unreadable", func(h *harness) { h.f.failNext("NodeTasks", fixtureErr("err_not_implemented")) },
			"the task list of node pv1-1 could not be read"},
		{"archive rotated past the window", func(h *harness) {
			for i := range historyRotationFloor {
				other("qmstart", 300+i, 60)(h)
			}
		}, "does not reach back"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanupHarness(t)
			tc.setup(h)
			before := h.f.vm(vmid).clone()
			h.f.mu.Lock()
			h.f.calllog = nil
			h.f.mu.Unlock()
			rep, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: time.Hour, VMs: true, Namespace: "ns"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.sign == "" {
				if h.f.vm(vmid) != nil || rep.Deleted != 1 {
					t.Fatalf("the untouched clone was not deleted: report %+v", rep)
				}
				return
			}
			if w := writesTo(h, vmid); len(w) != 0 || len(mutating(h.f)) != 0 {
				t.Errorf("writes %v (any VM: %v)", w, mutating(h.f))
			}
			if after := h.f.vm(vmid); after == nil || !maps.Equal(after.Config, before.Config) {
				t.Fatalf("the VM changed: %+v", after)
			}
			if rep.NeedsLook != 1 || rep.Deleted != 0 {
				t.Fatalf("report %+v", rep)
			}
			assertContains(t, rep.Events[0].String(), "needs a look", tc.sign)
		})
	}
}

// TestCreate_retryLeavesAUsedCloneAlone is the used-hand-clone threat at a retry: the VM at
// the probed VMID is exactly the template's clone and carries the copied creating text,
// but the node's task history shows it was started: it is left alone, and the create
// clones onto the next VMID. Without that start it is taken over as before.
func TestCreate_retryLeavesAUsedCloneAlone(t *testing.T) {
	for _, tc := range []struct{ started, ahead bool }{{false, false}, {true, false}, {true, true}} {
		started := tc.started
		h := newHarness(t)
		h.addInterrupted(testVMID0, testName, prevUID)
		if tc.ahead { // the mark of a create host whose clock runs 20 minutes fast
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: prevUID, CreatedAt: h.clock.Now().Add(20 * time.Minute)},
					testVMID0, testName)
			})
		}
		if started {
			h.f.addHistory("pv1-1", pveapi.TaskEntry{Type: "qmstart", ID: strconv.Itoa(testVMID0), User: "mallory@pve",
				StartTime: h.clock.Now().Unix()})
		}
		before := h.f.vm(testVMID0).clone()
		h.f.mu.Lock()
		h.f.calllog = nil
		h.f.mu.Unlock()
		rep := &CreateReport{}
		s := h.spec()
		s.Report = rep
		vm := h.create(s)
		if !started {
			if vm.ID.VMID != testVMID0 {
				t.Errorf("untouched: created at %d, want the interrupted create's %d taken over", vm.ID.VMID, testVMID0)
			}
			continue
		}
		if vm.ID.VMID != testVMID1 {
			t.Errorf("started: created at %d, want the next VMID %d", vm.ID.VMID, testVMID1)
		}
		if w := writesTo(h, testVMID0); len(w) != 0 {
			t.Errorf("writes to the used clone: %v", w)
		}
		if after := h.f.vm(testVMID0); after == nil || !maps.Equal(after.Config, before.Config) {
			t.Errorf("the used clone changed: %+v", after)
		}
		if len(rep.Unproved) != 1 || !strings.Contains(rep.Unproved[0].Why, "mallory@pve started it") {
			t.Errorf("report %+v, want the VM noted as started", rep)
		}
	}
}
