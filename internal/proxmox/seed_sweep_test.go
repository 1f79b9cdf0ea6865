package proxmox

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// sweepHistory is where a VM's seed generations are after a history of moves, swaps and
// migrations (decision: seed-sweep), what its ide2 names, and what its state recorded.
type sweepHistory struct {
	name    string
	vmNode  string           // the VM's node at the destroy
	ide2Gen int              // the generation its ide2 names (on vmNode)
	files   map[string][]int // node -> generations on its iso_storage
	record  []string         // DeleteOptions.SeedNodes
	swaps   bool
}

// sweepHistories are the histories the adversary found seeds left after, and the plain one.
var sweepHistories = []sweepHistory{
	{"created, never moved", "pv1-1", 1, map[string][]int{"pv1-1": {1}}, []string{"pv1-1"}, false},
	// HA move to pv1-2, then a cloud-init change: generation 2 on pv1-2, 1 left on pv1-1.
	{"HA move then a swap", "pv1-2", 2, map[string][]int{"pv1-1": {1}, "pv1-2": {2}}, []string{"pv1-1", "pv1-2"}, true},
	// move to pv1-2 + swap (2), move to pv1-1 + swap twice (4; the swaps' leftovers step
	// deleted 1 there), move to pv1-2 + apply (the start rebuilt 4 there): 2 is on the VM's
	// own node, which ide2 does not name and is not next to 4.
	{"HA moves, swaps, a rebuild", "pv1-2", 4, map[string][]int{"pv1-1": {4}, "pv1-2": {2, 4}}, []string{"pv1-1", "pv1-2"}, true},
	// The same with a provider migration pv1-1 -> pv1-2 as the last move: it moved 4 and
	// deleted it on pv1-1; the record keeps pv1-1.
	{"HA moves, swaps, a migration", "pv1-2", 4, map[string][]int{"pv1-2": {2, 4}}, []string{"pv1-1", "pv1-2"}, true},
	// A swap cut off between its upload and its config write left generation 2 beside 1.
	{"a swap cut off", "pv1-1", 1, map[string][]int{"pv1-1": {1, 2}}, []string{"pv1-1"}, true},
}

// TestSeedSweep_everyDestroyPathDeletesEveryGenerationButOneInUse is decision: seed-sweep
// as a property over the destroy paths (a VM of ours, a VM gone, the VMID holding a VM
// that is not ours) x the seed histories above x a foreign VM that has one of the seeds on a
// drive (none, on the VM's node, on another node): after the destroy no seed of the VM is
// left but the one the foreign VM has, which is kept and noted naming it, and nothing
// foreign is deleted.
func TestSeedSweep_everyDestroyPathDeletesEveryGenerationButOneInUse(t *testing.T) {
	const holderVMID = 100100
	paths := []string{"ours", "gone", "not ours at the VMID"}
	type holder struct {
		name string
		node func(sweepHistory) string // "" none
	}
	holders := []holder{
		{"no VM has one", func(sweepHistory) string { return "" }},
		{"a VM on the VM's node has one", func(hs sweepHistory) string { return hs.vmNode }},
		{"a VM on the other node has one", func(hs sweepHistory) string {
			if hs.vmNode == "pv1-1" {
				return "pv1-2"
			}
			return "pv1-1"
		}},
	}
	runs := 0
	for _, p := range paths {
		for _, hs := range sweepHistories {
			for _, hd := range holders {
				holderNode := hd.node(hs)
				if holderNode != "" && len(hs.files[holderNode]) == 0 {
					continue
				}
				t.Run(p+"/"+hs.name+"/"+hd.name, func(t *testing.T) {
					runs++
					h := newHarness(t, "pv1-1", "pv1-2")
					ide2 := seedVolID(fakeISOStorage, seedFileGen(testName, testUID, hs.ide2Gen))
					h.f.addOurVM(testVMID0, testName, testUID)
					h.f.mutate(testVMID0, func(v *fakeVM) { v.Node = hs.vmNode; v.Config["ide2"] = ide2 + ",media=cdrom" })
					for n, gens := range hs.files {
						for _, g := range gens {
							h.f.putISO(n, fakeISOStorage, seedFileGen(testName, testUID, g), []byte("seed"))
						}
					}
					// An installer ISO and another uid's seed are never touched.
					for _, n := range []string{"pv1-1", "pv1-2"} {
						h.f.putISO(n, fakeISOStorage, "debian-13.iso", []byte("iso"))
						h.f.putISO(n, fakeISOStorage, seedFileGen(testName, otherUID, 2), []byte("seed"))
					}
					var kept string // "<node>/<file>" the holder has
					if holderNode != "" {
						g := hs.files[holderNode][0]
						kept = holderNode + "/" + seedFileGen(testName, testUID, g)
						h.f.addVM(&fakeVM{VMID: holderVMID, Name: "rescue", Node: holderNode,
							Config: map[string]string{"ide3": seedVolID(fakeISOStorage, seedFileGen(testName, testUID, g)) + ",media=cdrom"}})
					}
					switch p {
					case "gone":
						h.f.remove(testVMID0)
					case "not ours at the VMID":
						h.f.remove(testVMID0)
						h.f.addVM(&fakeVM{VMID: testVMID0, Name: "proxy-other", Node: hs.vmNode, Status: "running"})
					}
					h.f.calllog = nil
					ctx, notes := WithNotes(h.ctx)
					if err := h.b.DeleteVM(ctx, testID, DeleteOptions{Node: hs.vmNode, UID: testUID, Seed: ide2, SeedNodes: hs.record, SeedSwaps: hs.swaps}); err != nil {
						t.Fatal(err)
					}
					for _, n := range []string{"pv1-1", "pv1-2"} {
						for g := 1; g <= 5; g++ {
							f := seedFileGen(testName, testUID, g)
							if _, ok := h.f.iso(n, fakeISOStorage, f); ok && n+"/"+f != kept {
								t.Errorf("%s left on %s", f, n)
							}
						}
						for _, f := range []string{"debian-13.iso", seedFileGen(testName, otherUID, 2)} {
							if _, ok := h.f.iso(n, fakeISOStorage, f); !ok {
								t.Errorf("%s on %s, not this VM's, was deleted", f, n)
							}
						}
					}
					if kept != "" {
						node, file, _ := strings.Cut(kept, "/")
						if _, ok := h.f.iso(node, fakeISOStorage, file); !ok {
							t.Errorf("%s on %s, which VM %d has on ide3, was deleted", file, node, holderVMID)
						}
						assertContains(t, strings.Join(notes.Lines(), "\n"), fmt.Sprintf("VM %d (rescue) as ide3", holderVMID), "was not deleted on node "+node)
					}
					if p != "ours" {
						if h.f.vm(testVMID0) == nil && p != "gone" {
							t.Error("the VM not ours at the VMID was destroyed")
						}
					} else if h.f.vm(testVMID0) != nil {
						t.Error("the VM is left")
					}
				})
			}
		}
	}
	if runs < 30 {
		t.Fatalf("only %d cases ran", runs)
	}
}

// The proxy operator's <name>-seed.iso is shared by every operator VM of that name; a
// destroy of one (imported: its ide2 names it) keeps it while another of that name is
// listed, on the live path as on the gone one, and deletes it otherwise.
func TestSeedSweep_operatorSeedKeptWhileAnotherVMOfTheNameIsListed(t *testing.T) {
	op := seedVolID(fakeISOStorage, operatorSeedFile(testName))
	for _, p := range []string{"ours", "gone"} {
		for _, other := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/other operator VM %v", p, other), func(t *testing.T) {
				h := newHarness(t, "pv1-1", "pv1-2")
				h.f.addOurVM(testVMID0, testName, testUID)
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["ide2"] = op + ",media=cdrom" })
				h.f.putISO("pv1-1", fakeISOStorage, operatorSeedFile(testName), []byte("seed"))
				if other {
					h.f.addVM(&fakeVM{VMID: 105974, Name: testName, Node: "pv1-1", Status: "running", Config: map[string]string{"ide2": op + ",media=cdrom"}})
				}
				if p == "gone" {
					h.f.remove(testVMID0)
				}
				if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, Seed: op, SeedNodes: []string{"pv1-1"}}); err != nil {
					t.Fatal(err)
				}
				_, left := h.f.iso("pv1-1", fakeISOStorage, operatorSeedFile(testName))
				if left != other {
					t.Errorf("the operator's seed left: %v, want %v", left, other)
				}
			})
		}
	}
}

// A listing of a recorded node's ISO storage refused (403: the token lacks
// Datastore.Audit, while deletes work) fails the destroy, naming the privilege, before
// anything is destroyed: older generations are never left behind silently.
func TestSeedSweep_listingRefusedFailsTheDestroy(t *testing.T) {
	for _, p := range []string{"ours", "gone"} {
		t.Run(p, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			hs := sweepHistories[1] // HA move then a swap
			ide2 := seedVolID(fakeISOStorage, seedFileGen(testName, testUID, 2))
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Node = "pv1-2"; v.Config["ide2"] = ide2 + ",media=cdrom" })
			h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
			h.f.putISO("pv1-2", fakeISOStorage, seedFileGen(testName, testUID, 2), []byte("seed"))
			if p == "gone" {
				h.f.remove(testVMID0)
			}
			h.f.onCall("StorageContent", func(_ context.Context, c fakeCall) error {
				if c.Node == "pv1-1" {
					return fixtureErr("err_forbidden_storage_content")
				}
				return nil
			})
			err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: ide2, SeedNodes: hs.record, SeedSwaps: true})
			if err == nil {
				t.Fatal("the destroy succeeded with the older generations on pv1-1 not looked for")
			}
			assertContains(t, err.Error(), "Datastore.Audit on /storage/"+fakeISOStorage, "pv1-1", seedFile(testName, testUID))
			if ClassOf(err).String() != "permanent" {
				t.Errorf("class %s, want permanent", ClassOf(err))
			}
			if h.f.calls("Destroy") != 0 {
				t.Error("the VM was destroyed")
			}
		})
	}
}

// A recorded node that is down fails the destroy while it is among the provider's
// nodes; once it is removed from them, the destroy goes on with a note naming what may be
// left there.
func TestSeedSweep_deadRecordedNode(t *testing.T) {
	for _, configured := range []bool{true, false} {
		for _, p := range []string{"ours", "gone"} {
			t.Run(fmt.Sprintf("%s/configured %v", p, configured), func(t *testing.T) {
				nodes := []string{"pv1-1", "pv1-2"}
				h := newHarness(t, append(nodes, "pv1-3")...)
				if !configured {
					h.b.cfg.Nodes = nodes
				}
				ide2 := seedVolID(fakeISOStorage, seedFileGen(testName, testUID, 2))
				h.f.addOurVM(testVMID0, testName, testUID)
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Node = "pv1-2"; v.Config["ide2"] = ide2 + ",media=cdrom" })
				h.f.putISO("pv1-2", fakeISOStorage, seedFileGen(testName, testUID, 2), []byte("seed"))
				if p == "gone" {
					h.f.remove(testVMID0)
				}
				for _, m := range []string{"StorageContent", "DeleteVolume", "StorageStatus"} {
					h.f.onCall(m, func(_ context.Context, c fakeCall) error {
						if c.Node == "pv1-3" {
							return fixtureErr("err_595")
						}
						return nil
					})
				}
				ctx, notes := WithNotes(h.ctx)
				err := h.b.DeleteVM(ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: ide2, SeedNodes: []string{"pv1-3", "pv1-2"}, SeedSwaps: true})
				if configured {
					if err == nil {
						t.Fatal("the destroy succeeded with a configured node holding a seed down")
					}
					assertContains(t, err.Error(), "pv1-3")
					if h.f.calls("Destroy") != 0 {
						t.Error("the VM was destroyed")
					}
					return
				}
				if err != nil {
					t.Fatalf("a node no longer configured blocked the destroy: %v", err)
				}
				for _, c := range h.f.callsOf("StorageContent") {
					if c.Node == "pv1-3" {
						t.Error("the node no longer configured was listed")
					}
				}
				if _, ok := h.f.iso("pv1-2", fakeISOStorage, seedFileGen(testName, testUID, 2)); ok {
					t.Error("the seed on pv1-2 is left")
				}
				assertContains(t, strings.Join(notes.Lines(), "\n"), "node pv1-3", "not among the provider's nodes", ide2, testName+"-"+testUID+"-<n>-seed.iso", "pvesm free")
				if p == "ours" && h.f.vm(testVMID0) != nil {
					t.Error("the VM is left")
				}
			})
		}
	}
}

// What the sweep costs a destroy: a VM that never moved, with one generation, is not
// listed (one delete by name, as before); the other VMs' configs the seed-in-use check reads
// are shared by the destroys of one provider instance for the walk's Budgets.ListingWalk
// (holderTTL), so a second destroy on the same node reads none of them again, nor does one
// past the listing's ListingTTL, and one after ListingWalk reads them anew.
func TestSeedSweep_requestCost(t *testing.T) {
	const others = 20
	h := newHarness(t, "pv1-1")
	ids := []ID{{VMID: testVMID0, Name: "proxy-a"}, {VMID: testVMID1, Name: "proxy-b"}, {VMID: testVMID1 + 1, Name: "proxy-c"}, {VMID: testVMID1 + 2, Name: "proxy-d"}}
	for _, id := range ids {
		h.f.addOurVM(id.VMID, id.Name, testUID)
		h.f.mutate(id.VMID, func(v *fakeVM) {
			v.Config["ide2"] = seedVolID(fakeISOStorage, seedFile(id.Name, testUID)) + ",media=cdrom"
		})
		h.f.putISO("pv1-1", fakeISOStorage, seedFile(id.Name, testUID), []byte("seed"))
	}
	for i := range others {
		h.f.addVM(&fakeVM{VMID: 200000 + i, Name: fmt.Sprintf("other-%d", i), Node: "pv1-1"})
	}
	otherReads := func() int {
		n := 0
		for _, c := range h.f.callsOf("VMPending") {
			if c.VMID >= 200000 {
				n++
			}
		}
		return n
	}
	destroy := func(id ID) {
		t.Helper()
		h.f.calllog = nil
		if err := h.b.DeleteVM(h.ctx, id, DeleteOptions{Node: "pv1-1", UID: testUID, SeedNodes: []string{"pv1-1"}}); err != nil {
			t.Fatal(err)
		}
		if n := h.f.calls("StorageContent"); n != 0 {
			t.Errorf("%d listings for a VM that never moved and never swapped, want 0", n)
		}
		if n := h.f.calls("DeleteVolume"); n != 1 {
			t.Errorf("%d seed deletes, want 1", n)
		}
		if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(id.Name, testUID)); ok {
			t.Errorf("the seed of %s is left", id.Name)
		}
	}
	destroy(ids[0])
	if n := otherReads(); n != others {
		t.Errorf("the first destroy read %d other configs, want %d", n, others)
	}
	destroy(ids[1])
	if n := otherReads(); n != 0 {
		t.Errorf("a destroy right after read %d other configs again, want 0", n)
	}
	if n := h.f.calls("StorageStatus"); n != 0 {
		t.Errorf("a destroy right after read the storage's status %d times again, want 0", n)
	}
	h.clock.advance(h.b.cfg.Budgets.ListingTTL)
	destroy(ids[2])
	if n := otherReads(); n != 0 {
		t.Errorf("a destroy after the listing TTL, within the walk's ListingWalk, read %d other configs again, want 0", n)
	}
	h.clock.advance(h.b.cfg.Budgets.ListingWalk)
	destroy(ids[3])
	if n := otherReads(); n != others {
		t.Errorf("a destroy after the walk's ListingWalk read %d other configs, want %d", n, others)
	}
}
