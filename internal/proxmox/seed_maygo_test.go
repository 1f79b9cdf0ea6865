package proxmox

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// The one "may this seed go" predicate (deleteUnheld, decision: seed-in-use) for the deletes
// that once skipped it: a seed swap's old seed and leftovers, a migration's source copy, a
// takeover's seeds.

// TestReseed_keepsTheOldSeedItsOwnSnapshotNames: the VM's own snapshot (its config without
// parent, as PVE's snapshot_delete leaves it) names generation 1; the swap to generation 2
// keeps it with a note naming the VM and the snapshot, and the VM's destroy deletes both.
func TestReseed_keepsTheOldSeedItsOwnSnapshotNames(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	gen1 := seedVolID(fakeISOStorage, seedFileGen(testName, testUID, 1))
	h.f.mutate(testVMID0, func(v *fakeVM) {
		delete(v.Config, "parent")
		v.Snapshots = map[string]map[string]string{"s1": {"ide2": gen1 + ",media=cdrom"}}
	})
	ctx, notes := WithNotes(h.ctx)
	if err := h.b.Update(ctx, testID, reseed("#cloud-config\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := h.f.seeds(), []string{seedVolOf(2), seedVolOf(1)}; !slices.Equal(got, want) {
		t.Errorf("seeds %v, want %v (generation 1 kept for the snapshot)", got, want)
	}
	lines := strings.Join(notes.Lines(), "\n")
	if want := fmt.Sprintf("attached to VM %d (%s) as ide2 in its snapshot s1", testVMID0, testName); !strings.Contains(lines, want) {
		t.Errorf("notes %q lack %q", lines, want)
	}
	if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, SeedSwaps: true,
		Seed: seedVolID(fakeISOStorage, seedFileGen(testName, testUID, 2))}); err != nil {
		t.Fatal(err)
	}
	if got := h.f.seeds(); len(got) != 0 {
		t.Errorf("seeds left after the destroy: %v", got)
	}
}

// TestReseed_keepsSeedsAnotherVMHoldsInAnyForm: another VM names the swapped-out generation
// 1, or a leftover generation 5, in each form (seedHolderForms): the swap keeps it; an
// unheld leftover (generation 6) is deleted.
func TestReseed_keepsSeedsAnotherVMHoldsInAnyForm(t *testing.T) {
	for _, form := range seedHolderForms() {
		for _, gen := range []int{1, 5} {
			t.Run(fmt.Sprintf("%s/generation %d", form.name, gen), func(t *testing.T) {
				h := newHarness(t)
				h.ourRunningVM(testVMID0, testName)
				for _, g := range []int{5, 6} {
					h.f.putISO("pv1-1", fakeISOStorage, seedFileGen(testName, testUID, g), []byte("left"))
				}
				file := seedFileGen(testName, testUID, gen)
				rescue := &fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1", Config: map[string]string{"ide2": "none,media=cdrom"}}
				form.set(rescue, seedVolID(fakeISOStorage, file), file)
				h.f.addVM(rescue)
				ctx, notes := WithNotes(h.ctx)
				if err := h.b.Update(ctx, testID, reseed("#cloud-config\n")); err != nil {
					t.Fatal(err)
				}
				// The swap from 1 makes 2; 5 and 6 are leftovers, 6 held by nobody.
				want := []string{seedVolOf(gen), seedVolOf(2)}
				slices.Sort(want)
				got := h.f.seeds()
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("seeds %v, want %v", got, want)
				}
				if w := "attached to VM 100100 (rescue) as " + form.drive; !strings.Contains(strings.Join(notes.Lines(), "\n"), w) {
					t.Errorf("notes %q lack %q", notes.Lines(), w)
				}
			})
		}
	}
}

// TestDeleteUnheld_skipsTheVMDestroyed: a takeover's seeds, held only by the VM it destroys
// (skipVMID), are deleted; the same seed held by another VM's snapshot is kept; a failed
// read of a VM's snapshots deletes nothing.
func TestDeleteUnheld_skipsTheVMDestroyed(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	gen1 := seedVol{storage: fakeISOStorage, file: seedFileGen(testName, testUID, 1)}
	if err := h.b.deleteUnheld(h.ctx, "create", "pv1-1", []seedVol{gen1}, pveapi.Resource{}, testVMID0); err != nil {
		t.Fatal(err)
	}
	if got := h.f.seeds(); len(got) != 0 {
		t.Errorf("seeds %v: the seed only the skipped VM names was kept", got)
	}

	h.f.putISO("pv1-1", fakeISOStorage, gen1.file, []byte("again"))
	h.f.addVM(&fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1", Config: map[string]string{},
		Snapshots: map[string]map[string]string{"s1": {"ide2": gen1.volid() + ",media=cdrom"}}})
	h.f.failNext("VMSnapshots", fixtureErr("err_596"))
	if err := h.b.deleteUnheld(h.ctx, "create", "pv1-1", []seedVol{gen1}, pveapi.Resource{}, testVMID0); err == nil {
		t.Error("a failed snapshot list did not fail the delete")
	}
	if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(1)}) {
		t.Errorf("seeds %v after a failed read, want %s kept", got, seedVolOf(1))
	}
	h.b.invalidateListing()
	if err := h.b.deleteUnheld(h.ctx, "create", "pv1-1", []seedVol{gen1}, pveapi.Resource{}, testVMID0); err != nil {
		t.Fatal(err)
	}
	if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(1)}) {
		t.Errorf("seeds %v, want %s kept for VM 100100's snapshot", got, seedVolOf(1))
	}
}

// TestUpdate_migrationRefusedForASeedASnapshotNames: a VM whose own snapshot (its config
// without parent) names its seed on storage that is not shared cannot be migrated (qemu-
// server's scan_local_volumes: "local cdrom image", testdata/
// task_log_migrate_local_cdrom_snapshot.json), and ejecting ide2 cannot change a snapshot:
// the node change is refused before anything is written, naming the snapshot.
func TestUpdate_migrationRefusedForASeedASnapshotNames(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	h.create(h.spec())
	seed := h.f.vm(testVMID0).Config["ide2"]
	h.f.mutate(testVMID0, func(v *fakeVM) {
		delete(v.Config, "parent")
		v.Snapshots = map[string]map[string]string{"s1": {"ide2": seed}}
	})
	h.f.calllog = nil
	to := "pv1-2"
	err := h.b.Update(h.ctx, ID{VMID: testVMID0, Name: testName}, Changes{Node: &to, UID: testUID, UserData: []byte("#cloud-config\n"), UserDataKnown: true})
	if err == nil || ClassOf(err) != pveapi.Permanent || !strings.Contains(err.Error(), "ide2 in its snapshot s1 names "+driveVolume(seed)) {
		t.Fatalf("err %v, want a Permanent refusal naming the snapshot", err)
	}
	if got := mutating(h.f); len(got) != 0 {
		t.Errorf("writes before the refusal: %v", got)
	}
	if v := h.f.vm(testVMID0); v.Node != "pv1-1" || v.Config["ide2"] != seed {
		t.Errorf("after the refusal: node %s ide2 %q", v.Node, v.Config["ide2"])
	}
}
