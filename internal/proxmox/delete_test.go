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

// seedNodes lists the nodes DeleteVolume was called on.
func seedNodes(f *fakeAPI) []string {
	var out []string
	for _, c := range f.callsOf("DeleteVolume") {
		v := c.Args["volid"]
		if (v != seedVolID(fakeISOStorage, seedFile(testName, testUID)) && v != seedVolID(fakeISOStorage, operatorSeedFile(testName))) || c.Args["storage"] != fakeISOStorage {
			panic("unexpected volume delete " + c.Args["volid"])
		}
		out = append(out, c.Node)
	}
	return out
}

// mutating returns the seam calls that change something, in order.
func mutating(f *fakeAPI) []string {
	var out []string
	for _, m := range f.methods() {
		if slices.Contains([]string{"Stop", "Shutdown", "Start", "DeleteVolume", "Destroy", "SetVMConfig", "Resize", "Clone", "UploadISO"}, m) {
			out = append(out, m)
		}
	}
	return out
}

// unorderedBeforeDestroy sorts the calls between two destroys (or the ends): the stop and
// the seed delete run at the same time, so their order is not part of the contract; the
// destroy coming after both is.
func unorderedBeforeDestroy(calls []string) []string {
	out := slices.Clone(calls)
	start := 0
	for i := 0; i <= len(out); i++ {
		if i == len(out) || out[i] == "Destroy" {
			slices.Sort(out[start:i])
			start = i + 1
		}
	}
	return out
}

// TestDelete_stepsTable is the delete steps (stop and seed, then destroy; decision: delete-steps),
// a paused VM stopping (fact: paused-stop) and a hibernated VM destroyed (fact: hibernated-vm).
func TestDelete_stepsTable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(h *harness)
		calls   []string // mutating calls
		seedOn  []string
		vmLeft  bool
		destroy bool
	}{
		{"running: stop, seed, destroy", func(h *harness) { h.ourRunningVM(testVMID0, testName) },
			[]string{"Stop", "DeleteVolume", "Destroy"}, []string{"pv1-1"}, false, true},
		{"stopped: a stop that ends at once, no status read first", func(h *harness) { h.f.addOurVM(testVMID0, testName, testUID) },
			[]string{"Stop", "DeleteVolume", "Destroy"}, []string{"pv1-1"}, false, true},
		{"paused: stopped first", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			st := capturedStatus(h.t, "status_current_paused")
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = st.Status, st.QMPStatus })
		}, []string{"Stop", "DeleteVolume", "Destroy"}, []string{"pv1-1"}, false, true},
		{"hibernated ours: destroyed like a stopped one", func(h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "suspended" })
		}, []string{"Stop", "DeleteVolume", "Destroy"}, []string{"pv1-1"}, false, true},
		{"listing lags: running VM listed stopped is still stopped", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.ListedStatus = "stopped" })
		}, []string{"Stop", "DeleteVolume", "Destroy"}, []string{"pv1-1"}, false, true},
		{"absent: seed deleted on every node", func(h *harness) {},
			[]string{"DeleteVolume", "DeleteVolume"}, []string{"pv1-1", "pv1-2"}, false, false},
		{"another name: left alone, seed on every node", func(h *harness) { h.ourRunningVM(testVMID0, "proxy-other") },
			[]string{"DeleteVolume", "DeleteVolume"}, []string{"pv1-1", "pv1-2"}, true, false},
		{"unmarked: left alone", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Status: "running"})
		}, []string{"DeleteVolume", "DeleteVolume"}, []string{"pv1-1", "pv1-2"}, true, false},
		{"container at the VMID: left alone", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Type: "lxc", Status: "running"})
		}, []string{"DeleteVolume", "DeleteVolume"}, []string{"pv1-1", "pv1-2"}, true, false},
		{"hibernated foreign: left alone", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Lock: "suspended"})
		}, []string{"DeleteVolume", "DeleteVolume"}, []string{"pv1-1", "pv1-2"}, true, false},
		// Gone at the stop: settled again from a fresh listing, which finds it gone, so the
		// gone VM's sweep runs too (the recorded seed by name on every configured node), but
		// not where the first sweep deleted it already.
		{"gone at the stop: seed on its node, no destroy", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			h.f.onCall("Stop", func(context.Context, fakeCall) error { h.f.remove(testVMID0); return nil })
		}, []string{"Stop", "DeleteVolume", "DeleteVolume"}, []string{"pv1-1", "pv1-2"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			tc.setup(h)
			h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
			h.f.calllog = nil
			if err := h.del(h.ctx, "pv1-1"); err != nil {
				t.Fatal(err)
			}
			if got := mutating(h.f); !slices.Equal(unorderedBeforeDestroy(got), unorderedBeforeDestroy(tc.calls)) {
				t.Errorf("calls %v, want %v", got, tc.calls)
			}
			if got := seedNodes(h.f); !slices.Equal(got, tc.seedOn) {
				t.Errorf("seed deleted on %v, want %v", got, tc.seedOn)
			}
			if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); ok {
				t.Error("the seed is left")
			}
			if left := h.f.vm(testVMID0) != nil; left != tc.vmLeft {
				t.Errorf("VM left %v, want %v", left, tc.vmLeft)
			}
			if tc.vmLeft && h.f.vm(testVMID0).Status == "running" && h.f.calls("Stop") != 0 {
				t.Error("a VM that is not ours was stopped")
			}
			assertContains(t, h.logs.String(), "proxmox vm deleted")
		})
	}
}

func TestDelete_nodeFromStateAddedWhenNotConfigured(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.f.storages["pv1-9/"+fakeISOStorage] = h.f.storages["pv1-1/"+fakeISOStorage]
	if err := h.del(h.ctx, "pv1-9"); err != nil {
		t.Fatal(err)
	}
	if got := seedNodes(h.f); !slices.Equal(got, []string{"pv1-1", "pv1-2", "pv1-9"}) {
		t.Errorf("seed deleted on %v", got)
	}
}

func TestDelete_twiceSucceeds(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	for i := range 2 {
		if err := h.del(h.ctx, "pv1-1"); err != nil {
			t.Fatalf("Delete %d: %v", i+1, err)
		}
	}
	if h.f.calls("Destroy") != 1 {
		t.Errorf("%d destroys", h.f.calls("Destroy"))
	}
}

// decision: seed-before-destroy: a seed delete that fails on the VM's node fails the call before the destroy;
// the VM stays (stopped) for the next Delete, which removes both once the fault clears.
func TestDelete_seedDeleteFailureOnVMNodeFailsBeforeDestroy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(f *fakeAPI)
		class  pveapi.Class
		msg    string
	}{
		{"403 Datastore.Allocate", func(f *fakeAPI) { f.failNext("DeleteVolume", fixtureErr("err_forbidden_volume_delete")) },
			pveapi.Permanent, "Datastore.Allocate"},
		{"596", func(f *fakeAPI) { f.failNext("DeleteVolume", fixtureErr("err_596")) }, pveapi.Transient, "596"},
		{"failed task", func(f *fakeAPI) { f.failTask("imgdel", "unable to delete volume") }, pveapi.Transient, "unable to delete volume"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			tc.inject(h.f)
			err := h.del(h.ctx, "pv1-1")
			assertClass(t, err, tc.class)
			assertContains(t, err.Error(), tc.msg, "VMID 105967")
			if h.f.calls("Destroy") != 0 {
				t.Fatal("destroyed before the seed was deleted")
			}
			vm, err := h.b.Get(h.ctx, testID, GetOptions{FreshListing: true, AnyOwner: true})
			if err != nil || vm.State != StateStopped {
				t.Fatalf("Get after the failed Delete: %+v, %v", vm, err)
			}
			if err := h.del(h.ctx, "pv1-1"); err != nil {
				t.Fatal(err)
			}
			if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); ok || h.f.vm(testVMID0) != nil {
				t.Error("the second Delete left the VM or the seed")
			}
		})
	}
}

// On the every-node path a node's failure is skipped, unless it is Permanent or ctx ended.
func TestDelete_everyNodePathSkipsNodeFailuresButNotPermanent(t *testing.T) {
	t.Run("596 on one node is skipped", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		h.f.failNext("DeleteVolume", fixtureErr("err_596"))
		if err := h.del(h.ctx, ""); err != nil {
			t.Fatal(err)
		}
		if got := seedNodes(h.f); !slices.Equal(got, []string{"pv1-1", "pv1-2"}) {
			t.Errorf("seed deleted on %v", got)
		}
		assertContains(t, h.logs.String(), "proxmox seed delete skipped on node")
	})
	t.Run("a node without the storage is skipped", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		delete(h.f.storages, "pv1-1/"+fakeISOStorage)
		if err := h.del(h.ctx, ""); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a refused privilege fails the call", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		h.f.failNext("DeleteVolume", fixtureErr("err_forbidden_volume_delete"))
		err := h.del(h.ctx, "")
		assertClass(t, err, pveapi.Permanent)
		assertContains(t, err.Error(), "Datastore.Allocate")
	})
}

func TestDelete_waitsForATaskLockWithinTheDestroyBudget(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "backup" })
	n := 0
	h.f.onCall("ClusterResources", func(context.Context, fakeCall) error {
		if n++; n == 3 {
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "" })
		}
		return nil
	})
	if err := h.del(h.ctx, "pv1-1"); err != nil {
		t.Fatal(err)
	}
	if h.f.vm(testVMID0) != nil || len(h.clock.slept()) < 2 {
		t.Errorf("VM left %v, sleeps %v", h.f.vm(testVMID0) != nil, h.clock.slept())
	}
}

func TestDelete_lockThatNeverClearsIsTransientAfterTheBudget(t *testing.T) {
	for name, mut := range map[string]func(v *fakeVM){
		"backup lock": func(v *fakeVM) { v.Lock = "backup" },
		"mid-clone":   func(v *fakeVM) { v.Lock, v.cloning = "clone", true },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, mut)
			err := h.del(h.ctx, "pv1-1")
			assertClass(t, err, pveapi.Transient)
			assertContains(t, err.Error(), "still busy", "after 5m0s", "qm unlock 105967")
			if h.f.calls("Stop")+h.f.calls("Destroy")+h.f.calls("DeleteVolume") != 0 {
				t.Error("touched a busy VM")
			}
		})
	}
}

func TestDelete_destroyTaskFailureIsTransientSeedAlreadyGone(t *testing.T) {
	h := newHarness(t)
	h.f.addOurVM(testVMID0, testName, testUID)
	h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
	h.f.failTask("qmdestroy", "unable to remove disk")
	err := h.del(h.ctx, "pv1-1")
	assertClass(t, err, pveapi.Transient)
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); ok || h.f.vm(testVMID0) == nil {
		t.Error("want the seed gone and the VM kept")
	}
}

func TestDelete_startedBehindTheListingIsTransient(t *testing.T) {
	h := newHarness(t)
	h.f.addOurVM(testVMID0, testName, testUID)
	h.f.onCall("Destroy", func(context.Context, fakeCall) error {
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Status = "running" })
		return nil
	})
	err := h.del(h.ctx, "pv1-1")
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "started again")
}

func TestDelete_malformedIDIsPermanent(t *testing.T) {
	h := newHarness(t)
	assertClass(t, h.b.DeleteOwned(h.ctx, ID{VMID: 42, Name: "x"}, "", testUID), pveapi.Permanent)
	if h.f.calls("") != 0 {
		t.Error("made a request")
	}
}

func TestDelete_waitsOnTheNameLock(t *testing.T) {
	h := newHarness(t)
	unlock, err := h.b.locks.lock(h.ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	err = h.del(ctx, "pv1-1")
	unlock()
	assertClass(t, err, pveapi.Transient)
	if !errors.Is(err, context.Canceled) || h.f.calls("") != 0 {
		t.Errorf("err %v, %d calls", err, h.f.calls(""))
	}
}

func TestDelete_cancelledContextReturnsPromptly(t *testing.T) {
	for _, method := range []string{"ClusterResources", "VMConfig", "Stop", "TaskStatus", "DeleteVolume", "Destroy"} {
		t.Run(method, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			h.f.onCall(method, func(ctx context.Context, _ fakeCall) error { <-ctx.Done(); return ctx.Err() })
			ctx, cancel := context.WithCancel(h.ctx)
			go func() {
				waitFor(t, func() bool { return h.f.calls(method) > 0 })
				cancel()
			}()
			node := "pv1-1"
			if method == "ClusterResources" {
				node = "" // the state names no node: the listing decides
			}
			err := h.del(ctx, node)
			assertClass(t, err, pveapi.Transient)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err %v does not wrap context.Canceled", err)
			}
		})
	}
}

// A gone VMID whose state recorded the proxy operator's <name>-seed.iso (shared by name),
// while a live VM of that name sits at another VMID (another workspace's, or an
// operator's): that VM may boot from it, and the ISO storage may be shared, so the seed is
// left on every node. Entries that cannot be that VM (a template, a container, a nameless
// clone in progress, another name) do not stop the delete.
func TestDelete_goneVMIDLeavesTheSeedOfASameNameVMElsewhere(t *testing.T) {
	const elsewhere = testVMID0 + 7
	for _, tc := range []struct {
		name   string
		setup  func(h *harness)
		uid    string // DeleteOwned's uid; empty: Delete
		seedOn []string
	}{
		{"another workspace's VM on another node: seed left", func(h *harness) {
			h.f.addOurVM(elsewhere, testName, otherWorkspaceUID)
			h.f.mutate(elsewhere, func(v *fakeVM) { v.Node, v.Status, v.QMP = "pv1-2", "running", "running" })
		}, testUID, nil},
		{"an operator's unmarked VM: seed left", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: elsewhere, Node: "pv1-2", Name: testName, Status: "running"})
		}, "", nil},
		{"our VMID held by a container, same-name VM elsewhere: seed left", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: "ct", Type: "lxc", Status: "running"})
			h.f.addVM(&fakeVM{VMID: elsewhere, Node: "pv1-2", Name: testName})
		}, "", nil},
		{"our VMID held by another name, same-name VM elsewhere: seed left", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: "proxy-other", Status: "running"})
			h.f.addVM(&fakeVM{VMID: elsewhere, Node: "pv1-2", Name: testName})
		}, "", nil},
		{"no VM of the name: seed deleted on every node", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: elsewhere, Node: "pv1-2", Name: "proxy-other", Status: "running"})
		}, "", []string{"pv1-1", "pv1-2"}},
		{"a template of the name does not count", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: elsewhere, Node: "pv1-2", Name: testName, Template: true})
		}, "", []string{"pv1-1", "pv1-2"}},
		{"a container of the name does not count", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: elsewhere, Node: "pv1-2", Name: testName, Type: "lxc"})
		}, "", []string{"pv1-1", "pv1-2"}},
		{"a nameless clone in progress cannot be attributed", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: elsewhere, Node: "pv1-2", Name: testName, Lock: "clone", cloning: true})
		}, "", []string{"pv1-1", "pv1-2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			tc.setup(h)
			for _, n := range []string{"pv1-1", "pv1-2"} {
				h.f.putISO(n, fakeISOStorage, operatorSeedFile(testName), []byte("seed"))
			}
			h.f.calllog = nil
			if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: tc.uid, Seed: seedVolID(fakeISOStorage, operatorSeedFile(testName))}); err != nil {
				t.Fatal(err)
			}
			if got := seedNodes(h.f); !slices.Equal(got, tc.seedOn) {
				t.Errorf("seed deleted on %v, want %v", got, tc.seedOn)
			}
			if got := mutating(h.f); len(got) != len(tc.seedOn) {
				t.Errorf("calls %v, want only the seed deletes", got)
			}
			for _, n := range []string{"pv1-1", "pv1-2"} {
				_, left := h.f.iso(n, fakeISOStorage, operatorSeedFile(testName))
				if want := tc.seedOn == nil; left != want {
					t.Errorf("seed left on %s: %v, want %v", n, left, want)
				}
			}
			if h.f.vm(elsewhere) == nil {
				t.Error("the VM elsewhere was destroyed")
			}
			logs := h.logs.String()
			if tc.seedOn == nil {
				assertContains(t, logs, "proxmox seed left alone: a VM of the same name may boot from it", `"other_vmid":105974`, `"other_node":"pv1-2"`)
			} else if strings.Contains(logs, "proxmox seed left alone") {
				t.Error("logged the seed as left alone")
			}
		})
	}
}

// A destroy of a running VM asks for the stop without reading status/current first: one
// round trip fewer on every destroy (a stop of a VM not running ends OK at once).
func TestDelete_noStatusReadBeforeTheStop(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.calllog = nil
	if err := h.del(h.ctx, "pv1-1"); err != nil {
		t.Fatal(err)
	}
	if n := h.f.calls("VMStatus"); n != 0 {
		t.Errorf("%d status reads in the destroy, want 0", n)
	}
	if n := h.f.calls("Stop"); n != 1 {
		t.Errorf("%d stops, want 1", n)
	}
	if h.f.vm(testVMID0) != nil {
		t.Error("the VM is left")
	}
}

// TestDelete_seedLeftOnRecordedNode: a VM of ours that moved without the provider (an HA
// recovery moves the config alone, decision: seed-location) left its seed on the node the
// caller recorded it on (DeleteOptions.SeedNodes): the delete removes it there too, before
// the destroy, and a failure there fails the delete with the VM left for the next one. A
// VM on the recorded node sends nothing more, and a seed whose name does not carry the
// resource's uid (the proxy operator's) is never deleted on another node.
func TestDelete_seedLeftOnRecordedNode(t *testing.T) {
	vol := seedVolID(fakeISOStorage, seedFile(testName, testUID))
	moved := func(h *harness) {
		h.f.addOurVM(testVMID0, testName, testUID)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Node = "pv1-2" }) // the HA manager moves it
		h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
		h.f.calllog = nil
	}
	t.Run("moved: deleted on its node and on the recorded one", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2", "pv1-3")
		moved(h)
		if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: vol, SeedNodes: []string{"pv1-1"}}); err != nil {
			t.Fatal(err)
		}
		if got := mutating(h.f); !slices.Equal(unorderedBeforeDestroy(got), []string{"DeleteVolume", "Stop", "Destroy"}) {
			t.Errorf("calls %v", got)
		}
		// Both nodes are listed (decision: seed-sweep); only pv1-1 holds a seed.
		if got := seedNodes(h.f); !slices.Equal(got, []string{"pv1-1"}) {
			t.Errorf("seed deleted on %v, want pv1-1 (pv1-2 lists none)", got)
		}
		if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); ok {
			t.Error("the seed is left on the node it was uploaded to")
		}
		if h.f.vm(testVMID0) != nil {
			t.Error("the VM is left")
		}
	})
	t.Run("moved, then its seed swapped twice: every generation on the recorded node", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2", "pv1-3")
		moved(h) // generation 1 on pv1-1
		gen3 := seedFileGen(testName, testUID, 3)
		h.f.putISO("pv1-2", fakeISOStorage, gen3, []byte("seed"))
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["ide2"] = seedVolID(fakeISOStorage, gen3) + ",media=cdrom" })
		h.f.calllog = nil
		if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: seedVolID(fakeISOStorage, gen3),
			SeedNodes: []string{"pv1-1", "pv1-2"}, SeedSwaps: true}); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"pv1-1", "pv1-2"} {
			for _, f := range []string{seedFile(testName, testUID), gen3} {
				if _, ok := h.f.iso(n, fakeISOStorage, f); ok {
					t.Errorf("%s left on %s", f, n)
				}
			}
		}
		if h.f.vm(testVMID0) != nil {
			t.Error("the VM is left")
		}
	})
	t.Run("not moved: nothing more", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2", "pv1-3")
		moved(h)
		if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: vol, SeedNodes: []string{"pv1-2"}}); err != nil {
			t.Fatal(err)
		}
		if got := seedNodes(h.f); !slices.Equal(got, []string{"pv1-2"}) {
			t.Errorf("seed deleted on %v, want pv1-2 alone", got)
		}
	})
	t.Run("the recorded node fails: no destroy", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		moved(h)
		h.f.onCall("DeleteVolume", func(_ context.Context, c fakeCall) error {
			if c.Node == "pv1-1" {
				return fixtureErr("err_595")
			}
			return nil
		})
		err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: vol, SeedNodes: []string{"pv1-1"}})
		if err == nil {
			t.Fatal("the delete succeeded with the seed left on the node it was uploaded to")
		}
		assertContains(t, err.Error(), vol, "pv1-1", "pvesm free "+vol)
		if h.f.calls("Destroy") != 0 || h.f.vm(testVMID0) == nil {
			t.Error("the VM was destroyed with its seed left")
		}
	})
	t.Run("the operator's seed: not on another node", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		moved(h)
		op := seedVolID(fakeISOStorage, operatorSeedFile(testName))
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["ide2"] = op + ",media=cdrom" })
		if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: op, SeedNodes: []string{"pv1-1"}}); err != nil {
			t.Fatal(err)
		}
		for _, c := range h.f.callsOf("DeleteVolume") {
			if c.Node == "pv1-1" && c.Args["volid"] == op {
				t.Errorf("the operator's shared seed was deleted on pv1-1")
			}
		}
	})
	// A recorded node that is not among the provider's nodes (decision: seed-sweep) is not
	// listed: the recorded seed is deleted there by name, and when it does not answer the
	// destroy goes on with a note naming what may remain there.
	t.Run("gone: a recorded node that is not configured does not block the destroy", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		h.f.storages["pv1-9/"+fakeISOStorage] = h.f.storages["pv1-1/"+fakeISOStorage]
		h.f.onCall("DeleteVolume", func(_ context.Context, c fakeCall) error {
			if c.Node == "pv1-9" {
				return fixtureErr("err_595")
			}
			return nil
		})
		ctx, notes := WithNotes(h.ctx)
		if err := h.b.DeleteVM(ctx, testID, DeleteOptions{Node: "pv1-2", UID: testUID, Seed: vol, SeedNodes: []string{"pv1-9"}}); err != nil {
			t.Fatalf("a node no longer configured blocked the destroy: %v", err)
		}
		if got := seedNodes(h.f); !slices.Equal(got, []string{"pv1-1", "pv1-9"}) { // pv1-2 is listed and holds none
			t.Errorf("seed deleted on %v", got)
		}
		if n := len(h.f.callsOf("StorageContent")); n != 1 || h.f.callsOf("StorageContent")[0].Node != "pv1-2" {
			t.Errorf("listings %v, want pv1-2's alone", h.f.callsOf("StorageContent"))
		}
		assertContains(t, strings.Join(notes.Lines(), "\n"), "node pv1-9", "not among the provider's nodes", vol, "pvesm free")
	})
}

// Sequential destroys of a fleet: each destroy's seed-in-use check lists the cluster anew
// (our previous destroy voided the listing), so a VM made, or deleted, by hand between two
// destroys counts (or no longer counts) as it is; the other VMs' configs are read once per
// holderTTL (ListingWalk), not once per destroy, so the reads per destroy stay flat.
func TestDelete_sequentialDestroysSeeTheClusterAsItIs(t *testing.T) {
	names := []string{"proxy-a", "proxy-b", "proxy-c"}
	setup := func(t *testing.T) (*harness, func(i int) error) {
		h := newHarness(t, "pv1-1")
		for i, n := range names {
			h.ourRunningVM(testVMID0+i, n)
		}
		h.f.calllog = nil
		// Time passes while a VM is destroyed, as on a real cluster.
		h.f.onCall("Destroy", func(context.Context, fakeCall) error { h.clock.advance(time.Millisecond); return nil })
		return h, func(i int) error {
			return h.b.DeleteVM(h.ctx, ID{VMID: testVMID0 + i, Name: names[i]},
				DeleteOptions{Node: "pv1-1", UID: testUID, Seed: seedVolID(fakeISOStorage, seedFile(names[i], testUID))})
		}
	}
	pendingReads := func(h *harness, vmid int) int {
		n := 0
		for _, c := range h.f.callsOf("VMPending") {
			if c.VMID == vmid {
				n++
			}
		}
		return n
	}
	seedOf := func(i int) string { return seedVolID(fakeISOStorage, seedFile(names[i], testUID)) }
	holding := func(i int) map[string]string { return map[string]string{"ide3": seedOf(i) + ",media=cdrom"} }
	kept := func(h *harness, i int) bool {
		_, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(names[i], testUID))
		return ok
	}
	t.Run("destroys alone", func(t *testing.T) {
		h, del := setup(t)
		for i := range names {
			if err := del(i); err != nil {
				t.Fatal(err)
			}
		}
		if n := h.f.calls("ClusterResources"); n != len(names) {
			t.Errorf("%d listings for %d destroys, want one each", n, len(names))
		}
		if n := pendingReads(h, testVMID0+2); n != 1 {
			t.Errorf("%d reads of VM %d by the two destroys before its own, want 1 (holderTTL)", n, testVMID0+2)
		}
		if left := h.f.seeds(); len(left) != 0 {
			t.Errorf("seeds left %v", left)
		}
	})
	// A VM made between two destroys (a clone of a proxy VM made in the UI) that has the
	// next VM's seed on a drive keeps it: at a new VMID, at the VMID just destroyed, and
	// there under the destroyed VM's own name.
	for _, tc := range []struct {
		name string
		vm   func() *fakeVM
	}{
		{"a VM made at a new VMID", func() *fakeVM { return &fakeVM{VMID: 200000, Name: "xclone", Node: "pv1-1", Config: holding(1)} }},
		{"a VM made at the VMID destroyed", func() *fakeVM { return &fakeVM{VMID: testVMID0, Name: "xclone", Node: "pv1-1", Config: holding(1)} }},
		{"a VM made at the VMID destroyed, of its name", func() *fakeVM {
			return &fakeVM{VMID: testVMID0, Name: names[0], Node: "pv1-1", Config: holding(1)}
		}},
	} {
		t.Run(tc.name+" between two destroys keeps the seed it has", func(t *testing.T) {
			h, del := setup(t)
			if err := del(0); err != nil {
				t.Fatal(err)
			}
			v := h.f.addVM(tc.vm())
			if err := del(1); err != nil {
				t.Fatal(err)
			}
			if !kept(h, 1) {
				t.Errorf("the seed %s was deleted while VM %d (%s) has it on a drive", seedOf(1), v.VMID, v.Name)
			}
			if w := writesTo(h, v.VMID); len(w) != 0 && v.VMID != testVMID0 {
				t.Errorf("writes %v to the VM made by hand", w)
			}
		})
	}
	// The VM at a VMID this provider destroyed was read, as another VM, by an earlier
	// destroy: a VM made there since, even of the same name, is read anew (forget).
	t.Run("a VM made at a VMID read before and destroyed since keeps the seed it has", func(t *testing.T) {
		h, del := setup(t)
		for i := range 2 {
			if err := del(i); err != nil { // the first destroy read proxy-b's config
				t.Fatal(err)
			}
		}
		h.f.addVM(&fakeVM{VMID: testVMID0 + 1, Name: names[1], Node: "pv1-1", Config: holding(2)})
		if err := del(2); err != nil {
			t.Fatal(err)
		}
		if !kept(h, 2) {
			t.Errorf("the seed %s was deleted while VM %d (%s) has it on a drive", seedOf(2), testVMID0+1, names[1])
		}
	})
	t.Run("a VM deleted between two destroys no longer keeps the seed", func(t *testing.T) {
		h, del := setup(t)
		h.f.addVM(&fakeVM{VMID: 200001, Name: "xclone", Node: "pv1-1", Config: holding(1)})
		if err := del(0); err != nil {
			t.Fatal(err)
		}
		h.f.remove(200001)
		if err := del(1); err != nil {
			t.Fatal(err)
		}
		if kept(h, 1) {
			t.Errorf("the seed %s is left, kept for a VM deleted before its destroy", seedOf(1))
		}
	})
	t.Run("other VMs are read once per walk", func(t *testing.T) {
		h, del := setup(t)
		if err := del(0); err != nil {
			t.Fatal(err)
		}
		// Past ListingTTL, within the walk's ListingWalk: the VM still listed is not read again.
		h.clock.advance(h.b.cfg.Budgets.ListingTTL)
		before := pendingReads(h, testVMID0+2)
		if err := del(1); err != nil {
			t.Fatal(err)
		}
		if n := pendingReads(h, testVMID0+2) - before; n != 0 {
			t.Errorf("%d reads of VM %d within ListingWalk of the last, want 0", n, testVMID0+2)
		}
		if left := h.f.seeds(); len(left) != 1 {
			t.Errorf("seeds left %v, want the third VM's alone", left)
		}
	})
	t.Run("other VMs are read again after the walk's bound", func(t *testing.T) {
		h, del := setup(t)
		if err := del(0); err != nil {
			t.Fatal(err)
		}
		h.clock.advance(h.b.cfg.Budgets.ListingWalk)
		before := pendingReads(h, testVMID0+2)
		if err := del(1); err != nil {
			t.Fatal(err)
		}
		if n := pendingReads(h, testVMID0+2) - before; n != 1 {
			t.Errorf("%d reads of VM %d ListingWalk after the last, want 1", n, testVMID0+2)
		}
	})
}

// A delete of our VM on the node the state names decides on the config read there: no
// listing of its own (settleOn); the seed sweep's check that no other VM has the seed on a
// drive takes the shared one (decision: seed-in-use), which concurrent destroys share.
// Anything else takes the listing path as before: a VM that moved to
// another node is destroyed there, and a VM at the VMID that is not ours (another uid,
// a lock held by a task, a template) gets no write.
func TestDelete_onTheStatesNodeOursNeedsNoListing(t *testing.T) {
	t.Run("ours on the state's node", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		h.ourRunningVM(testVMID0, testName)
		h.f.calllog = nil
		if err := h.del(h.ctx, "pv1-1"); err != nil {
			t.Fatal(err)
		}
		if n := h.f.calls("ClusterResources"); n != 1 {
			t.Errorf("%d listings, want 1, the seed check's: the config on the state's node proves the VM ours", n)
		}
		if h.f.vm(testVMID0) != nil {
			t.Error("the VM is left")
		}
	})
	t.Run("moved to another node", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		h.ourRunningVM(testVMID0, testName)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Node = "pv1-2" })
		h.f.putISO("pv1-2", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
		if err := h.del(h.ctx, "pv1-1"); err != nil {
			t.Fatal(err)
		}
		if n := h.f.calls("ClusterResources"); n != 1 {
			t.Errorf("%d listings, want 1 (the VM is not on the state's node)", n)
		}
		if h.f.vm(testVMID0) != nil {
			t.Error("the VM that moved is left")
		}
	})
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
	}{
		{"another uid", func(h *harness) { h.f.addOurVM(testVMID0, testName, otherUID) }},
		{"a template of our name and mark", func(h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Template, v.Config["template"] = true, "1" })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			tc.setup(h)
			h.f.calllog = nil
			if err := h.del(h.ctx, "pv1-1"); err != nil {
				t.Fatal(err)
			}
			if w := writesTo(h, testVMID0); len(w) != 0 {
				t.Errorf("writes %v to a VM that is not ours", w)
			}
			if h.f.vm(testVMID0) == nil {
				t.Error("a VM that is not ours was destroyed")
			}
			if n := h.f.calls("ClusterResources"); n != 1 {
				t.Errorf("%d listings, want 1 (settle's, on the listing path)", n)
			}
		})
	}
	t.Run("a task lock is waited on", func(t *testing.T) {
		h := newHarness(t, "pv1-1", "pv1-2")
		h.ourRunningVM(testVMID0, testName)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock, v.Config["lock"] = "backup", "backup" })
		h.f.onCall("ClusterResources", func(context.Context, fakeCall) error {
			if h.f.calls("ClusterResources") >= 2 {
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = ""; delete(v.Config, "lock") })
			}
			return nil
		})
		if err := h.del(h.ctx, "pv1-1"); err != nil {
			t.Fatal(err)
		}
		if h.f.vm(testVMID0) != nil {
			t.Error("the VM is left")
		}
		if n := h.f.calls("ClusterResources"); n < 2 {
			t.Errorf("%d listings, want the lock waited on through settle's", n)
		}
	})
}

// A VM migrated between the stop and the destroy (the HA manager, or by hand, while the
// seeds were swept) is not reported destroyed while it lives: the destroy's "does not
// exist" on the old node settles the VM again from a fresh listing, and it is stopped and
// destroyed on its new node.
func TestDelete_migratedBeforeTheDestroyIsDestroyedWhereItIs(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.ourRunningVM(testVMID0, testName)
	moved := false
	h.f.onCall("Destroy", func(_ context.Context, c fakeCall) error {
		if !moved {
			moved = true
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Node = "pv1-2" })
		}
		return nil
	})
	if err := h.del(h.ctx, "pv1-1"); err != nil {
		t.Fatal(err)
	}
	if h.f.vm(testVMID0) != nil {
		t.Fatal("the VM that moved before the destroy is left, and the destroy said it was done")
	}
	var nodes []string
	for _, c := range h.f.callsOf("Destroy") {
		nodes = append(nodes, c.Node)
	}
	if !slices.Equal(nodes, []string{"pv1-1", "pv1-2"}) {
		t.Errorf("destroys on %v, want pv1-1 (gone from there), then pv1-2", nodes)
	}
}

// A VM that keeps leaving its node fails the destroy after deleteSettles settles, rather
// than being reported destroyed.
func TestDelete_aVMThatKeepsMovingFailsTheDestroy(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.ourRunningVM(testVMID0, testName)
	h.f.onCall("Destroy", func(_ context.Context, c fakeCall) error {
		h.f.mutate(testVMID0, func(v *fakeVM) {
			if v.Node == "pv1-1" {
				v.Node = "pv1-2"
			} else {
				v.Node = "pv1-1"
			}
		})
		return nil
	})
	err := h.del(h.ctx, "pv1-1")
	if h.f.vm(testVMID0) == nil {
		t.Fatal("the VM is gone")
	}
	if err == nil {
		t.Fatal("the destroy of a VM still in the cluster succeeded")
	}
}

// A settle after the VM left its node that fails (the fresh listing refused) fails the
// destroy: the VM may still exist, so it is never reported destroyed.
func TestDelete_settleAgainThatFailsFailsTheDestroy(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.ourRunningVM(testVMID0, testName)
	first := true
	h.f.onCall("Destroy", func(_ context.Context, c fakeCall) error {
		if first {
			first = false
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Node = "pv1-2" })
			h.f.failNext("ClusterResources", fixtureErr("err_forbidden_volume_delete")) // a 403: not waited on
		}
		return nil
	})
	if err := h.del(h.ctx, "pv1-1"); err == nil {
		t.Fatal("the destroy succeeded though the VM's new node could not be told")
	}
	if h.f.vm(testVMID0) == nil {
		t.Fatal("the VM is gone")
	}
}
