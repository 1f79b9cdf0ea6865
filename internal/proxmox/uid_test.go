package proxmox

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// otherWorkspaceUID is the uid of a VM another workspace (another uid_namespace) made with
// our name: it cloned onto the VMID our state had saved just before our clone was refused.
const otherWorkspaceUID = "6f1d2c3b-aaaa-4bbb-8ccc-123456789abc"

// otherWorkspaceVM adds, at testVMID0, a running VM named testName carrying a mark of
// another uid, with its seed ISO on its node.
func otherWorkspaceVM(h *harness) *fakeVM {
	v := h.addFinished(testVMID0, testName, otherWorkspaceUID)
	h.f.mutate(testVMID0, func(v *fakeVM) {
		v.Config["description"] = MarkLines{UID: otherWorkspaceUID, CreatedAt: time.Date(2026, 9, 19, 9, 30, 0, 0, time.UTC)}.Format()
	})
	return v
}

func TestGet_markOfAnotherUIDIsNotFound(t *testing.T) {
	for _, tc := range []struct {
		name, uid string
		noUID     bool   // the mark has no uid line
		want      string // "" : found; else in the NotFound error
		log       string
	}{
		{"another uid: not ours", testUID, false, otherWorkspaceUID, "proxmox vm not ours: another uid"},
		{"the same uid: ours", otherWorkspaceUID, false, "", ""},
		// A state without a uid owns nothing: the uid is never taken from the VM read.
		{"no uid asked: nothing is ours", "", false, "the state records no uid", "proxmox vm not ours: the state records no uid"},
		// A mark without a uid line proves nothing: a VMID reused by such a VM is not ours.
		{"a mark without a uid: not ours", testUID, true, "carries no uid", "proxmox vm not ours: another uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			otherWorkspaceVM(h)
			markUID := otherWorkspaceUID
			if tc.noUID {
				markUID = ""
				h.f.mutate(testVMID0, func(v *fakeVM) {
					v.Config["description"] = MarkKeyManaged + "=true\n"
				})
				if m := ParseMark(h.f.vm(testVMID0).Config["description"]); !m.Managed || m.UID != "" {
					t.Fatalf("mark %+v: the test would prove nothing", m)
				}
			}
			vm, err := h.b.Get(h.ctx, testID, GetOptions{UID: tc.uid})
			if tc.want == "" {
				if err != nil || vm.UID != markUID {
					t.Fatalf("Get: uid %q, err %v", vm.UID, err)
				}
				return
			}
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("err %v, want ErrNotFound", err)
			}
			assertContains(t, err.Error(), tc.want)
			assertContains(t, h.logs.String(), tc.log)
		})
	}
}

// TestDelete_markOfAnotherUIDLeftAloneWithItsSeed: the VM is another resource's and alive,
// with a seed ISO of its own. Neither is touched; this resource's own seed (recorded in
// its state) is deleted.
func TestDelete_markOfAnotherUIDLeftAloneWithItsSeed(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	otherWorkspaceVM(h)
	h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("ours"))
	h.f.calllog = nil
	if err := h.del(h.ctx, "pv1-1"); err != nil {
		t.Fatal(err)
	}
	for _, c := range h.f.log() {
		if c.VMID == testVMID0 && !fakeReads[c.Method] {
			t.Errorf("%s on another resource's VM", c.Method)
		}
		if c.Method == "DeleteVolume" && c.Args["volid"] != seedVolID(fakeISOStorage, seedFile(testName, testUID)) {
			t.Errorf("deleted %s, want only this resource's seed", c.Args["volid"])
		}
	}
	if v := h.f.vm(testVMID0); v == nil || v.Status != "running" {
		t.Error("the other resource's VM was stopped or destroyed")
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, otherWorkspaceUID)); !ok {
		t.Error("the other resource's seed ISO was deleted")
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); ok {
		t.Error("this resource's own seed ISO is left")
	}
	assertContains(t, h.logs.String(), "proxmox vm not ours: another uid", "proxmox vm deleted")

	// The same uid is ours: destroyed, its own seed (the one ide2 names) and all.
	h.f.calllog = nil
	if err := h.b.DeleteOwned(h.ctx, testID, "pv1-1", otherWorkspaceUID); err != nil {
		t.Fatal(err)
	}
	// The stop and the seed delete run side by side, in either order; the destroy comes last
	// (decision: seed-before-destroy).
	want := []string{"Stop", "DeleteVolume", "Destroy"}
	if got := mutating(h.f); !slices.Equal(unorderedBeforeDestroy(got), unorderedBeforeDestroy(want)) {
		t.Errorf("calls %v for our own uid, want %v (the first two in either order)", got, want)
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, otherWorkspaceUID)); ok {
		t.Error("the VM's own seed ISO is left")
	}
}

func TestUpdate_markOfAnotherUIDIsNotFoundUntouched(t *testing.T) {
	h := newHarness(t)
	otherWorkspaceVM(h)
	h.f.calllog = nil
	err := h.b.Update(h.ctx, testID, Changes{Cores: ptr(4), UID: testUID})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
	if got := mutating(h.f); len(got) != 0 {
		t.Errorf("calls %v on another workspace's VM, want none", got)
	}
}
