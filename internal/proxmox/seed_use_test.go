package proxmox

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// seedHolderForm is one way a VM may name a seed (decision: seed-in-use), set on a fake VM.
type seedHolderForm struct {
	name  string
	set   func(v *fakeVM, vol, file string) // vol: <storage>:iso/<file>
	drive string                            // what the report names, after "as "
}

// isoPath is where a seed's file is on the fake's ISO storage, as a VM attached by path
// names it (a dir storage mounted under /mnt/pve, pve-storage Plugin.pm get_subdir).
func isoPath(file string) string { return "/mnt/pve/" + fakeISOStorage + "/template/iso/" + file }

// seedHolderForms are the forms the clean-up once deleted a referenced seed in: only a
// snapshot section names it while the config has no parent (what PVE's snapshot_delete
// leaves after deleting the snapshot the VM descends from), and an absolute path, on a
// drive, in a pending value, and in a snapshot; with the volume-id forms as controls.
func seedHolderForms() []seedHolderForm {
	return []seedHolderForm{
		{"snapshot without parent", func(v *fakeVM, vol, _ string) {
			v.Config["ide2"] = "none,media=cdrom"
			delete(v.Config, "parent")
			v.Snapshots = map[string]map[string]string{"s1": {"ide2": vol + ",media=cdrom"}}
		}, "ide2 in its snapshot s1"},
		{"snapshot with parent, section without name", func(v *fakeVM, vol, _ string) {
			v.Config["parent"] = "s1"
			v.Snapshots = map[string]map[string]string{"s1": {"ide2": vol + ",media=cdrom"}}
		}, "ide2 in its snapshot s1"},
		{"child snapshot without parent", func(v *fakeVM, vol, _ string) {
			delete(v.Config, "parent")
			v.Snapshots = map[string]map[string]string{
				"s1": {"ide2": "none,media=cdrom"},
				"s2": {"parent": "s1", "sata0": "file=" + vol + ",media=cdrom"},
			}
		}, "sata0 in its snapshot s2"},
		{"absolute path", func(v *fakeVM, _, file string) {
			v.Config["ide1"] = isoPath(file) + ",media=cdrom"
		}, "ide1 (by path " + isoPath("")},
		{"absolute path, file=", func(v *fakeVM, _, file string) {
			v.Config["sata2"] = "media=cdrom,file=" + isoPath(file)
		}, "sata2 (by path " + isoPath("")},
		{"absolute path pending", func(v *fakeVM, _, file string) {
			v.Pending = map[string]string{"ide3": isoPath(file) + ",media=cdrom"}
		}, "ide3 (by path " + isoPath("")},
		{"absolute path in a snapshot without parent", func(v *fakeVM, _, file string) {
			v.Snapshots = map[string]map[string]string{"s1": {"ide1": isoPath(file) + ",media=cdrom"}}
		}, "ide1 in its snapshot s1 (by path " + isoPath("")},
		{"control: volume id", func(v *fakeVM, vol, _ string) {
			v.Config["ide3"] = vol + ",media=cdrom"
		}, "ide3"},
	}
}

// TestCleanOrphans_seedAVMNamesInAnyFormIsKept is decision: seed-in-use for the clean-up: a seed a
// VM of another name names in any form (seedHolderForms) is reported as attached, naming
// the VM by its current name (its snapshot section has none), and never deleted; an
// orphan beside it is deleted; and a VM that names a file of the same name by path on
// another node of a storage that is not shared does not keep it.
func TestCleanOrphans_seedAVMNamesInAnyFormIsKept(t *testing.T) {
	for _, form := range seedHolderForms() {
		for _, node := range []string{"pv1-1", "pv1-2"} {
			t.Run(form.name+"/holder on "+node, func(t *testing.T) {
				h := newHarness(t, "pv1-1", "pv1-2")
				used, free := seedFile("proxy-renamed", otherUID), seedFile("proxy-gone", prevUID)
				h.f.putISO("pv1-1", fakeISOStorage, used, []byte("named"))
				h.f.putISO("pv1-1", fakeISOStorage, free, []byte("orphan"))
				h.f.addVM(&fakeVM{VMID: 300, Name: "rescue", Node: node, Config: map[string]string{}})
				h.f.mutate(300, func(v *fakeVM) { form.set(v, seedVolID(fakeISOStorage, used), used) })
				var events []string
				if _, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: 0, Seeds: true}, func(e CleanEvent) { events = append(events, e.String()) }); err != nil {
					t.Fatal(err)
				}
				if _, ok := h.f.iso("pv1-1", fakeISOStorage, free); ok {
					t.Error("the orphan was kept")
				}
				_, kept := h.f.iso("pv1-1", fakeISOStorage, used)
				if node == "pv1-2" {
					if kept {
						t.Error("a VM on pv1-2, whose storage is its own, kept pv1-1's copy")
					}
					return
				}
				if !kept {
					t.Errorf("the seed VM 300 names (%s) was deleted", form.name)
				}
				assertContains(t, strings.Join(events, "\n"), "attached to VM 300 (rescue) as "+form.drive)
			})
		}
	}
}

// TestSeedInUse_goneDestroyKeepsASeedAVMNamesInAnyForm is decision: seed-in-use for a destroy's
// seed sweep: the destroy of a gone VM leaves its seed where another VM names it in any
// form (seedHolderForms), with a note naming that VM, and deletes it where none does.
func TestSeedInUse_goneDestroyKeepsASeedAVMNamesInAnyForm(t *testing.T) {
	for _, form := range seedHolderForms() {
		t.Run(form.name, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			file := seedFile(testName, testUID)
			seed := seedVolID(fakeISOStorage, file)
			for _, n := range []string{"pv1-1", "pv1-2"} {
				h.f.putISO(n, fakeISOStorage, file, []byte("seed"))
			}
			h.f.addVM(&fakeVM{VMID: 300, Name: "rescue", Node: "pv1-1", Config: map[string]string{}})
			h.f.mutate(300, func(v *fakeVM) { form.set(v, seed, file) })
			ctx, notes := WithNotes(h.ctx)
			if err := h.b.DeleteVM(ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, Seed: seed, SeedNodes: []string{"pv1-1", "pv1-2"}}); err != nil {
				t.Fatal(err)
			}
			if _, ok := h.f.iso("pv1-1", fakeISOStorage, file); !ok {
				t.Errorf("the seed VM 300 names (%s) was deleted", form.name)
			}
			if _, ok := h.f.iso("pv1-2", fakeISOStorage, file); ok {
				t.Error("pv1-2's copy, which no VM names, was kept")
			}
			assertContains(t, strings.Join(notes.Lines(), "\n"), "VM 300 (rescue) as "+form.drive)
			for _, c := range h.f.log() {
				if c.VMID == 300 && !fakeReads[c.Method] {
					t.Errorf("%s reached VM 300", c.Method)
				}
			}
		})
	}
}

// TestSeedsNamedBy: every seed a VM names, on a drive, in a pending value or in a
// snapshot section, by volume id or by path; an installer ISO and a disk are not seeds.
func TestSeedsNamedBy(t *testing.T) {
	h := newHarness(t, "pv1-1")
	a, b, c, d := seedFile("proxy-a", testUID), seedFile("proxy-b", otherUID), seedFile("proxy-c", prevUID), seedFile("proxy-d", testUID)
	h.f.addVM(&fakeVM{VMID: 300, Name: "proxy-a", Node: "pv1-1",
		Config: map[string]string{
			"ide2":  seedVolID(fakeISOStorage, a) + ",media=cdrom",
			"ide0":  "local:iso/debian-13.iso,media=cdrom",
			"scsi0": "local-lvm:vm-300-disk-0,size=4G",
		},
		Pending:   map[string]string{"ide3": isoPath(b) + ",media=cdrom"},
		Snapshots: map[string]map[string]string{"s1": {"sata0": "file=" + seedVolID("other", c)}, "s2": {"ide1": isoPath(d)}},
	})
	got, err := h.b.seedsNamedBy(h.ctx, "pv1-1", 300)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{isoPath(b), isoPath(d), "other:iso/" + c, seedVolID(fakeISOStorage, a)}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("seedsNamedBy = %q, want %q", got, want)
	}
	if _, err := h.b.seedsNamedBy(h.ctx, "pv1-1", 301); !isNotExist(err) {
		t.Errorf("a gone VM: %v, want a not-exist error", err)
	}
}

// TestSeedUse_snapshotRequestCost measures what reading every VM's snapshot list costs (no
// config field or listing says which VMs have snapshots, readVMUse): one list per VM whose
// config is read, plus one read per snapshot, for the clean-up's seed scan; for a destroy's
// sweep the first time a VM is read, then again only when its config's digest changed
// (holderUse): a destroy within holderTTL reads nothing again, one after it reads the
// configs again but no snapshot list, and a snapshot taken meanwhile has that VM's list
// read again. At 1 and 100 other VMs; the figures are logged (go test -v).
func TestSeedUse_snapshotRequestCost(t *testing.T) {
	for _, others := range []int{1, 100} {
		t.Run(fmt.Sprint(others), func(t *testing.T) {
			h := newHarness(t, "pv1-1")
			var ids []ID
			for i, name := range []string{"proxy-a", "proxy-b", "proxy-c", "proxy-d"} {
				ids = append(ids, ID{VMID: testVMID1 + i, Name: name})
			}
			for _, id := range ids {
				h.f.addOurVM(id.VMID, id.Name, testUID)
				h.f.mutate(id.VMID, func(v *fakeVM) {
					v.Config["ide2"] = seedVolID(fakeISOStorage, seedFile(id.Name, testUID)) + ",media=cdrom"
				})
				h.f.putISO("pv1-1", fakeISOStorage, seedFile(id.Name, testUID), []byte("seed"))
			}
			for i := range others {
				h.f.addVM(&fakeVM{VMID: 200000 + i, Name: fmt.Sprintf("other-%d", i), Node: "pv1-1", Config: map[string]string{}})
			}
			h.f.mutate(200000, func(v *fakeVM) { v.Snapshots = map[string]map[string]string{"s1": {}, "s2": {"parent": "s1"}} })
			h.f.putISO("pv1-1", fakeISOStorage, seedFile("proxy-gone", prevUID), []byte("orphan"))
			counts := func() (read, lists, snaps, all int) {
				return h.f.calls("VMPending"), h.f.calls("VMSnapshots"), h.f.calls("VMSnapshotConfig"), h.f.calls("")
			}

			h.f.calllog = nil
			if _, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: 0, Seeds: true}, nil); err != nil {
				t.Fatal(err)
			}
			read, lists, snaps, all := counts()
			t.Logf("clean-up, %d other VMs: %d requests, %d configs read, +%d snapshot lists, +%d snapshot reads", others, all, read, lists, snaps)
			if lists != read || snaps != 2 {
				t.Errorf("clean-up: %d snapshot lists for %d configs read, %d snapshot reads; want one list per config, 2 reads", lists, read, snaps)
			}
			steps := []struct {
				what                string
				before              func()
				wantLists, wantSnap int // -1: one list per config read
			}{
				{"first", func() {}, -1, 2},
				{"within holderTTL", func() {}, 0, 0},
				{"after holderTTL", func() { h.clock.advance(h.b.holderTTL()) }, 0, 0},
				{"after holderTTL, a snapshot taken on one VM", func() {
					h.clock.advance(h.b.holderTTL())
					h.f.mutate(200000, func(v *fakeVM) { v.Snapshots["s3"] = map[string]string{"parent": "s2"} })
				}, 1, 3},
			}
			for i, st := range steps {
				st.before()
				h.f.calllog = nil
				if err := h.b.DeleteVM(h.ctx, ids[i], DeleteOptions{Node: "pv1-1", UID: testUID, SeedNodes: []string{"pv1-1"}}); err != nil {
					t.Fatal(err)
				}
				read, lists, snaps, all := counts()
				t.Logf("destroy %s, %d other VMs: %d requests, %d configs read, +%d snapshot lists, +%d snapshot reads", st.what, others, all, read, lists, snaps)
				want := st.wantLists
				if want < 0 {
					want = read
				}
				if lists != want || snaps != st.wantSnap {
					t.Errorf("destroy %s: %d snapshot lists (%d configs read), %d snapshot reads; want %d and %d", st.what, lists, read, snaps, want, st.wantSnap)
				}
			}
		})
	}
}
