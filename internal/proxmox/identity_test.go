package proxmox

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// takeOverNow rewrites testVMID0's mark as another apply's takeover does.
func (h *harness) takeOverNow(uid string) {
	h.f.mutate(testVMID0, func(v *fakeVM) {
		v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: uid, CreatedAt: h.spec().CreatedAt}, testVMID0, testName)
	})
}

// Another apply takes the VM over while this Create uploads its seed: this Create's config
// write (a compare-and-swap on the digest read after the clone) is refused, so it never
// re-points the other apply's VM, and it fails saying what happened. The VM stays the
// other apply's.
func TestCreate_takenOverBeforeTheConfigStepFailsWithoutTouchingIt(t *testing.T) {
	h := newHarness(t)
	done := false
	h.f.onCall("UploadISO", func(context.Context, fakeCall) error {
		if !done {
			done = true
			h.takeOverNow(otherUID)
		}
		return nil
	})
	err := h.createFails(h.spec())
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "VMID 105967 was taken over by another apply", otherUID, "the next apply of this resource creates its own VM")
	v := h.f.vm(testVMID0)
	if m := ParseMark(v.Config["description"]); m.UID != otherUID {
		t.Errorf("mark uid %q, want the other apply's %s", m.UID, otherUID)
	}
	if v.Config["ide2"] != "" || h.f.calls("Start") != 0 {
		t.Errorf("the VM was re-pointed (ide2 %q) or started after the takeover", v.Config["ide2"])
	}
}

// A takeover after the config step is noticed at the last step: the mark is not finished
// with this Create's uid, and the error says so.
func TestCreate_takenOverBeforeTheLastStepIsNoticed(t *testing.T) {
	h := newHarness(t)
	done := false
	h.f.onCall("Start", func(context.Context, fakeCall) error {
		if !done {
			done = true
			h.takeOverNow(otherUID)
		}
		return nil
	})
	err := h.createFails(h.spec())
	assertContains(t, err.Error(), "taken over", otherUID)
	if m := ParseMark(h.f.vm(testVMID0).Config["description"]); m.UID != otherUID || !m.Creating {
		t.Errorf("mark %+v, want the other apply's, still creating", m)
	}
}

// The last step is a compare-and-swap: the description written without the creating line
// carries the digest of the config read just before.
func TestCreate_lastStepFinishesTheMarkWithTheDigest(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	writes := h.f.callsOf("SetVMConfig")
	last := writes[len(writes)-1].Args
	if last["digest"] == "" || !strings.Contains(last["description"], MarkKeyNamespace+"=") || strings.Contains(last["description"], MarkKeyState) {
		t.Errorf("last write %v, want the finished mark with a digest", last)
	}
	if got := h.f.methods(); got[len(got)-1] != "SetVMConfig" {
		t.Errorf("the finished mark is not the last request: %v", got)
	}
}

// The operator's VM (a mark without this provider's lines) imported into a state is
// destroyed with the <name>-seed.iso its ide2 names.
func TestDelete_operatorVMRemovesTheSeedItsIDE2Names(t *testing.T) {
	h := newHarness(t)
	const k8sUID = "9a8b7c6d-0000-4000-8000-00000000abcd"
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) {
		v.Config["description"] = FormatMark(k8sUID, h.spec().CreatedAt)
		v.Config["ide2"] = seedVolID(fakeISOStorage, operatorSeedFile(testName)) + ",media=cdrom"
	})
	h.f.putISO("pv1-1", fakeISOStorage, operatorSeedFile(testName), []byte("operator seed"))
	if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: k8sUID, Seed: seedVolID(fakeISOStorage, operatorSeedFile(testName))}); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, operatorSeedFile(testName)); ok || h.f.vm(testVMID0) != nil {
		t.Error("the operator VM or its <name>-seed.iso is left")
	}
}

// create_before_destroy: the old VM is already gone when its destroy runs, and the new VM
// of the same name runs elsewhere with its own seed. The old seed is deleted (it is unique
// to the old uid); the new VM and its seed are untouched.
func TestDelete_goneVMsOwnSeedIsDeletedBesideASameNameVM(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.addFinished(testVMID1, testName, otherUID)
	h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("old"))
	h.f.calllog = nil
	if err := h.del(h.ctx, "pv1-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); ok {
		t.Error("the gone VM's own seed is left")
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, otherUID)); !ok || h.f.vm(testVMID1) == nil {
		t.Error("the same-name VM or its seed was removed")
	}
	for _, c := range h.f.log() {
		// Its config and snapshots are read (decision: seed-in-use: does it have the seed on
		// a drive?); nothing else reaches it.
		if c.VMID == testVMID1 && !fakeReads[c.Method] {
			t.Errorf("%s on the same-name VM", c.Method)
		}
	}
}

// A seed is an orphan when no VM references it: per-VM seeds by the ide2 of the VMs of
// their name (or, mid-create, by the uid in the mark); and
// when no VM at all has it on a drive.
func TestOrphanSeeds_perVMSeedsByReference(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName) // ide2: its own seed (testUID)
	h.addInterrupted(testVMID1, testName, prevUID)
	h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, prevUID), []byte("mid-create"))
	h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, otherUID), []byte("a destroyed same-name VM's"))
	h.f.putISO("pv1-1", fakeISOStorage, operatorSeedFile(testName), []byte("the proxy operator's"))
	h.f.putISO("pv1-1", fakeISOStorage, seedFile("proxy-gone", otherUID), []byte("no VM of the name"))
	got, err := h.b.OrphanSeeds(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var vols []string
	for _, s := range got {
		vols = append(vols, s.VolID)
	}
	slices.Sort(vols)
	want := []string{seedVolID(fakeISOStorage, seedFile(testName, otherUID)), seedVolID(fakeISOStorage, seedFile("proxy-gone", otherUID))}
	slices.Sort(want)
	if !slices.Equal(vols, want) {
		t.Errorf("orphans %v, want %v", vols, want)
	}
	for _, s := range got {
		if s.Name == "" || s.UID != otherUID {
			t.Errorf("seed %+v: name and uid not read from its file name", s)
		}
	}
	// One read per VM of a name a per-VM seed carries (2); then, since seeds are left that
	// no VM of their name uses, one per other VM (the template), which may have them on a
	// drive.
	if n := h.f.calls("VMPending"); n != 3 || h.f.calls("VMConfig") != 0 {
		t.Errorf("%d config reads, want one per VM of a name a per-VM seed carries (2), then one per other VM (1)", n)
	}
}

// cancelAfterFinalRead is the seam with a context cancelled right after the config read
// that precedes the last step (the second read of the running VM still marked creating:
// the first is the read-back): Terraform killed while the create was about to finish its
// mark.
type cancelAfterFinalRead struct {
	*fakeAPI
	cancel context.CancelFunc
	reads  int
	fired  bool
}

func (a *cancelAfterFinalRead) VMConfig(ctx context.Context, node string, vmid int) (map[string]string, error) {
	cfg, err := a.fakeAPI.VMConfig(ctx, node, vmid)
	if err == nil && !a.fired && cfg["ide2"] != "" && ParseMark(cfg["description"]).Creating {
		if v := a.vm(vmid); v != nil && v.Status == "running" {
			if a.reads++; a.reads == 2 {
				a.fired = true
				a.cancel()
			}
		}
	}
	return cfg, err
}

// A create cancelled between the last config read and the last step never sends the
// finished mark: the VM stays marked creating, so the next create of its name takes it
// over instead of leaving it untracked.
func TestCreate_cancelledBeforeTheLastStepLeavesTheMarkCreating(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	api := &cancelAfterFinalRead{fakeAPI: h.f, cancel: cancel}
	h.b.api = api
	_, err := h.b.Create(ctx, h.spec(), nil)
	if err == nil {
		t.Fatal("Create succeeded after its context was cancelled")
	}
	if !api.fired {
		t.Fatal("the context was never cancelled: the test did not reach the last step")
	}
	assertContains(t, err.Error(), "cancelled before its last step", MarkKeyState+"="+MarkStateCreating)
	writes := h.f.callsOf("SetVMConfig")
	for _, w := range writes {
		if w.Args["description"] != "" && !strings.Contains(w.Args["description"], MarkKeyState+"="+MarkStateCreating) {
			t.Errorf("the finished mark was sent after the cancel: %v", w.Args)
		}
	}
	if m := ParseMark(h.f.vm(testVMID0).Config["description"]); !m.Creating || m.UID != testUID {
		t.Errorf("mark %+v, want this create's uid, still creating", m)
	}
}

// A finished VM of this name and namespace on the probe sequence is skipped and reported
// (it may be a create a crash left untracked: the provider warns when it is recent); one
// being created in another namespace is skipped and not reported.
func TestCreate_reportsTheFinishedSameNameVMsItPassed(t *testing.T) {
	h := newHarness(t)
	h.addFinished(testVMID0, testName, otherUID)
	h.addInterrupted(testVMID1, testName, prevUID)
	h.f.mutate(testVMID1, func(v *fakeVM) {
		v.Config["description"] = MarkLines{UID: prevUID, Namespace: "team-b", Creating: true}.Format()
	})
	vm := h.create(h.spec())
	if vm.ID.VMID == testVMID0 || vm.ID.VMID == testVMID1 {
		t.Fatalf("created onto VMID %d, which holds another VM", vm.ID.VMID)
	}
	want := []PassedVM{{VMID: testVMID0, Node: "pv1-1", CreatedAt: time.Date(2026, 9, 19, 9, 0, 0, 0, time.UTC)}}
	if !slices.Equal(vm.Passed, want) {
		t.Errorf("Passed %+v, want %+v", vm.Passed, want)
	}
}

// A same-name VM this backend created itself (two resources of one name in one apply) is
// not reported: its answer went back to Terraform.
func TestCreate_doesNotReportTheSameNameVMItFinishedItself(t *testing.T) {
	h := newHarness(t)
	first := h.create(h.spec())
	s := h.spec()
	s.UID = otherUID
	second := h.create(s)
	if second.ID.VMID == first.ID.VMID {
		t.Fatalf("both creates landed on VMID %d", first.ID.VMID)
	}
	if len(second.Passed) != 0 {
		t.Errorf("Passed %+v, want none: VMID %d is this backend's own", second.Passed, first.ID.VMID)
	}
}

// A create whose requester is gone (Spec.Abandoned) skips the last step: the mark stays
// creating and the finished description is never sent.
func TestCreate_abandonedBeforeTheLastStepLeavesTheMarkCreating(t *testing.T) {
	h := newHarness(t)
	s := h.spec()
	s.Abandoned = func() bool { return true }
	err := h.createFails(s)
	assertContains(t, err.Error(), "abandoned before its last step", MarkKeyState+"="+MarkStateCreating)
	for _, w := range h.f.callsOf("SetVMConfig") {
		if w.Args["description"] != "" && !strings.Contains(w.Args["description"], MarkKeyState+"="+MarkStateCreating) {
			t.Errorf("the finished mark was sent by an abandoned create: %v", w.Args)
		}
	}
	if m := ParseMark(h.f.vm(testVMID0).Config["description"]); !m.Creating || m.UID != testUID {
		t.Errorf("mark %+v, want this create's uid, still creating", m)
	}
	if h.f.vm(testVMID0).Status != "running" {
		t.Error("the abandoned create did not get as far as the last step")
	}
}
