package proxmox

import (
	"context"
	"slices"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// A seed lives where its VM's ide2 names it (decision: seed-location): an iso_storage
// changed after the VM was made does not move it, and every delete removes it there.

// addStorage registers an ISO storage on every node of f.
func addStorage(f *fakeAPI, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.nodes {
		f.storages[n+"/"+id] = pveapi.StorageStatus{Type: "dir", Content: "iso", Total: 10 << 30, Avail: 9 << 30, Active: 1, Enabled: 1}
	}
}

// TestDelete_seedWhereIDE2NamesIt: a VM made with one iso_storage, deleted after
// iso_storage was changed to another storage (existing or not): the seed is deleted on
// the storage its ide2 names, and nothing is left.
func TestDelete_seedWhereIDE2NamesIt(t *testing.T) {
	for _, now := range []string{"local", "seeds-typo"} {
		t.Run(now, func(t *testing.T) {
			h := newHarness(t, "pv1-1")
			addStorage(h.f, "local")
			h.create(h.spec())
			h.b.cfg.ISOStorage = now
			if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, Seed: seedVolID(fakeISOStorage, seedFile(testName, testUID))}); err != nil {
				t.Fatal(err)
			}
			if s := h.f.seeds(); len(s) != 0 || h.f.vm(testVMID0) != nil {
				t.Errorf("after the delete with iso_storage %s: seeds %v, VM left %v", now, s, h.f.vm(testVMID0) != nil)
			}
		})
	}
}

// TestDelete_goneVMSeedWhereRecorded: for a VM already gone, the seed recorded (a volume
// id, on a storage other than today's iso_storage) is deleted there.
func TestDelete_goneVMSeedWhereRecorded(t *testing.T) {
	for _, tc := range []struct{ name, storage, record string }{
		{"volume id on the old storage", fakeISOStorage, seedVolID(fakeISOStorage, seedFile(testName, testUID))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			addStorage(h.f, "local")
			h.f.putISO("pv1-1", tc.storage, seedFile(testName, testUID), []byte("seed"))
			h.b.cfg.ISOStorage = "local"
			if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, Seed: tc.record}); err != nil {
				t.Fatal(err)
			}
			if _, ok := h.f.iso("pv1-1", tc.storage, seedFile(testName, testUID)); ok {
				t.Errorf("the seed recorded as %q is left on %s", tc.record, tc.storage)
			}
		})
	}
}

// TestDelete_goneVMSeedFailureOnItsNodeFails: a seed of a gone VM that cannot be deleted
// on the node the state recorded fails the delete, naming the volume and what to do (the
// resource stays in the state for the next destroy); a failure on another node is skipped.
func TestDelete_goneVMSeedFailureOnItsNodeFails(t *testing.T) {
	vol := seedVolID(fakeISOStorage, seedFile(testName, testUID))
	failOn := func(h *harness, node string, err error) {
		h.f.onCall("DeleteVolume", func(_ context.Context, c fakeCall) error {
			if c.Node == node {
				return err
			}
			return nil
		})
	}
	t.Run("its node", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		h.f.putISO("pv1-2", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
		failOn(h, "pv1-2", fixtureErr("err_595"))
		err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: vol})
		if err == nil {
			t.Fatal("the delete succeeded with the seed left on the VM's node")
		}
		assertContains(t, err.Error(), vol, "pv1-2", "pvesm free "+vol, "again")
	})
	t.Run("another node", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		h.f.putISO("pv1-2", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
		failOn(h, "pv1-1", fixtureErr("err_595"))
		if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: vol}); err != nil {
			t.Fatal(err)
		}
		if s := h.f.seeds(); len(s) != 0 {
			t.Errorf("seeds left %v", s)
		}
	})
	t.Run("forbidden anywhere", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		failOn(h, "pv1-1", fixtureErr("err_forbidden_volume_delete"))
		err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: vol})
		if err == nil || ClassOf(err) != pveapi.Permanent {
			t.Fatalf("err %v, want a Permanent error", err)
		}
		assertContains(t, err.Error(), vol, "Datastore.Allocate")
	})
}

// TestUpdate_migrationMovesASeedFromAnOldStorage: a VM whose seed is on a storage that is
// no longer iso_storage migrates: the rebuilt seed goes to iso_storage on the target, ide2
// names it there, and the old volume is deleted where it was.
func TestUpdate_migrationMovesASeedFromAnOldStorage(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	addStorage(h.f, "local")
	h.create(h.spec())
	h.b.cfg.ISOStorage = "local"
	to := "pv1-2"
	if err := h.b.Update(h.ctx, testID, Changes{Node: &to, UserData: []byte("#cloud-config\n"), UserDataKnown: true, UID: testUID}); err != nil {
		t.Fatal(err)
	}
	v := h.f.vm(testVMID0)
	if want := ide2Seed(seedVol{storage: "local", file: seedFile(testName, testUID)}); v.Node != to || v.Config["ide2"] != want {
		t.Errorf("after the migration: node %s ide2 %q, want %s %q", v.Node, v.Config["ide2"], to, want)
	}
	if got := h.f.seeds(); !slices.Equal(got, []string{"pv1-2/local:iso/" + seedFile(testName, testUID)}) {
		t.Errorf("seeds %v, want only the one on local on %s", got, to)
	}
}

// TestUpdate_migrationSourceSeedLeftFailsTheUpdate: the VM moved, but its old seed could
// not be deleted on the source: the update fails, naming the volume, the node and what to
// do, instead of leaving it unnoticed.
func TestUpdate_migrationSourceSeedLeftFailsTheUpdate(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	h.create(h.spec())
	h.f.onCall("DeleteVolume", func(_ context.Context, c fakeCall) error {
		if c.Node == "pv1-1" {
			return fixtureErr("err_forbidden_volume_delete")
		}
		return nil
	})
	to := "pv1-2"
	err := h.b.Update(h.ctx, testID, Changes{Node: &to, UserData: []byte("#cloud-config\n"), UserDataKnown: true, UID: testUID})
	if err == nil {
		t.Fatal("the update succeeded with the seed left on the source")
	}
	vol := seedVolID(fakeISOStorage, seedFile(testName, testUID))
	assertContains(t, err.Error(), "moved to node pv1-2", vol, "pv1-1", "pvesm free")
	if h.f.vm(testVMID0).Node != to {
		t.Error("the VM did not move")
	}
}

// TestCreate_takeoverDeletesTheSeedWhereIDE2NamesIt: an interrupted create whose seed is
// on a storage that is no longer iso_storage is taken over: that seed is deleted where it
// is, and the new one goes to iso_storage.
func TestCreate_takeoverDeletesTheSeedWhereIDE2NamesIt(t *testing.T) {
	h := newHarness(t, "pv1-1")
	addStorage(h.f, "local")
	h.addInterrupted(testVMID0, testName, prevUID)
	h.f.mutate(testVMID0, func(v *fakeVM) {
		v.Config["ide2"] = seedVolID(fakeISOStorage, seedFile(testName, prevUID)) + ",media=cdrom"
		bindInterrupted(h, v, prevUID)
	})
	h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, prevUID), []byte("old"))
	h.b.cfg.ISOStorage = "local"
	s := h.spec()
	s.UID = testUID
	h.create(s)
	if got := h.f.seeds(); !slices.Equal(got, []string{"pv1-1/local:iso/" + seedFile(testName, testUID)}) {
		t.Errorf("seeds %v, want only the new one on local", got)
	}
}

// TestSeedLocation_table: what is a seed of a VM, on any storage.
func TestSeedLocation_table(t *testing.T) {
	for _, tc := range []struct {
		ide2 string
		want string
	}{
		{"proxy-seeds:iso/" + seedFile(testName, testUID) + ",media=cdrom", "proxy-seeds:iso/" + seedFile(testName, testUID)},
		{"local:iso/" + seedFile(testName, testUID) + ",media=cdrom", "local:iso/" + seedFile(testName, testUID)},
		{"cephfs:iso/" + operatorSeedFile(testName) + ",media=cdrom", "cephfs:iso/" + operatorSeedFile(testName)},
		{"local:iso/" + seedFile("proxy-b", testUID) + ",media=cdrom", ""}, // another VM's
		{"local:iso/debian-13.iso,media=cdrom", ""},                        // an installer, never a seed
		{"none,media=cdrom", ""},
		{"local-lvm:vm-1-disk-0,size=4G", ""},
	} {
		v, ok := vmSeed(testName, map[string]string{"ide2": tc.ide2})
		got := ""
		if ok {
			got = v.volid()
		}
		if got != tc.want {
			t.Errorf("vmSeed(%q) = %q, want %q", tc.ide2, got, tc.want)
		}
	}
	b := New(newFakeAPI(), Config{ISOStorage: "now"})
	for rec, want := range map[string]string{
		"old:iso/" + seedFile(testName, testUID): "old:iso/" + seedFile(testName, testUID),
		seedFile(testName, testUID):              "",
		"":                                       "",
		"a/b":                                    "",
	} {
		v, ok := b.recordedSeed(rec)
		got := ""
		if ok {
			got = v.volid()
		}
		if got != want {
			t.Errorf("recordedSeed(%q) = %q, want %q", rec, got, want)
		}
	}
}
