package proxmox

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestSeedInUse_everyDestroyPathLeavesASeedAForeignVMHas is decision: seed-in-use as a
// property over the destroy paths that delete a seed whose VM is not there (the VM gone,
// or the VMID holding a VM that is not this resource's: another name, no mark, another
// uid, a state without uid, a container) x the VM that has the seed on a drive (the VM now
// at the VMID, or another VM on the seed's node, or a VM on another node of a shared
// storage) x every drive bus and form Proxmox reads: the seed is never deleted where that
// VM uses it, and a note names the VM. The same rule as the orphan cleanup
// (TestCleanOrphans_seedAttachedElsewhereIsKept). Controls: a VM on another node of a storage
// that is not shared has its own copy, so the seed is still deleted here; and with no VM
// having it, it is deleted on every node.
func TestSeedInUse_everyDestroyPathLeavesASeedAForeignVMHas(t *testing.T) {
	const holderVMID = 100100
	type path struct {
		name   string
		atVMID func(h *harness, cfg map[string]string) // nil: the VMID is empty
		noUID  bool
	}
	paths := []path{
		{"gone", nil, false},
		{"another name at the VMID", func(h *harness, cfg map[string]string) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: "proxy-other", Status: "running", Config: cfg})
		}, false},
		{"unmarked same name at the VMID", func(h *harness, cfg map[string]string) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Status: "running", Config: cfg})
		}, false},
		{"another uid at the VMID", func(h *harness, cfg map[string]string) {
			h.f.addOurVM(testVMID0, testName, otherUID)
			h.f.mutate(testVMID0, func(v *fakeVM) {
				for k, val := range cfg {
					v.Config[k] = val
				}
			})
		}, false},
		{"state without uid", func(h *harness, cfg map[string]string) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) {
				for k, val := range cfg {
					v.Config[k] = val
				}
			})
		}, true},
		{"container at the VMID", func(h *harness, _ map[string]string) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Type: "lxc", Status: "running"})
		}, false},
	}
	type holder struct {
		name   string
		where  string // "vmid": the VM at the VMID; "node": another VM on pv1-1; "shared": a VM on pv1-2, storage shared; "other": a VM on pv1-2, storage not shared
		keeps  []string
		delete []string
	}
	holders := []holder{
		{"the VM at the VMID", "vmid", []string{"pv1-1"}, []string{"pv1-2"}},
		{"another VM on the seed's node", "node", []string{"pv1-1"}, []string{"pv1-2"}},
		{"a VM on another node, shared storage", "shared", []string{"pv1-1", "pv1-2"}, nil},
		{"control: a VM on another node has its own copy", "other", []string{"pv1-2"}, []string{"pv1-1"}},
		{"control: no VM has it", "", nil, []string{"pv1-1", "pv1-2"}},
	}
	seed := seedVolID(fakeISOStorage, seedFile(testName, testUID))
	runs := 0
	for _, p := range paths {
		for _, hd := range holders {
			if hd.where == "vmid" && (p.atVMID == nil || p.name == "container at the VMID") {
				continue
			}
			for _, form := range seedDriveForms([]string{"ide2", "ide3", "sata0", "scsi5"}) {
				t.Run(p.name+"/"+hd.name+"/"+form.name, func(t *testing.T) {
					runs++
					h := newHarness(t, "pv1-1", "pv1-2")
					drive := map[string]string{form.drive: form.value(seed)}
					holderName := "rescue"
					switch hd.where {
					case "vmid":
						p.atVMID(h, drive)
						holderName = h.f.vm(testVMID0).Config["name"]
					case "node":
						h.f.addVM(&fakeVM{VMID: holderVMID, Name: "rescue", Node: "pv1-1", Config: drive})
					case "shared", "other":
						h.f.addVM(&fakeVM{VMID: holderVMID, Name: "rescue", Node: "pv1-2", Config: drive})
					}
					if hd.where != "vmid" && p.atVMID != nil {
						p.atVMID(h, nil)
					}
					if hd.where == "shared" {
						for _, n := range []string{"pv1-1", "pv1-2"} {
							st := h.f.storages[n+"/"+fakeISOStorage]
							st.Shared = 1
							h.f.storages[n+"/"+fakeISOStorage] = st
						}
					}
					for _, n := range []string{"pv1-1", "pv1-2"} {
						h.f.putISO(n, fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
					}
					h.f.calllog = nil
					ctx, notes := WithNotes(h.ctx)
					uid := testUID
					if p.noUID {
						uid = ""
					}
					if err := h.b.DeleteVM(ctx, testID, DeleteOptions{Node: "pv1-1", UID: uid, Seed: seed}); err != nil {
						t.Fatal(err)
					}
					deleted := map[string]bool{}
					for _, c := range h.f.callsOf("DeleteVolume") {
						if c.Args["volid"] == seed {
							deleted[c.Node] = true
						}
					}
					for _, n := range hd.keeps {
						if deleted[n] {
							t.Errorf("the seed was deleted on %s, where VM %s has it on %s", n, holderName, form.drive)
						}
						if _, ok := h.f.iso(n, fakeISOStorage, seedFile(testName, testUID)); !ok {
							t.Errorf("the seed on %s is gone", n)
						}
					}
					for _, n := range hd.delete {
						if !deleted[n] {
							t.Errorf("the seed was not deleted on %s, where no VM has it", n)
						}
					}
					for _, c := range h.f.log() {
						if c.VMID != 0 && !fakeReads[c.Method] {
							t.Errorf("%s reached VMID %d", c.Method, c.VMID)
						}
					}
					var seedNotes []string
					for _, l := range notes.Lines() {
						if strings.Contains(l, "seed ISO") {
							seedNotes = append(seedNotes, l)
						}
					}
					lines := strings.Join(seedNotes, "\n")
					if len(hd.keeps) > 0 {
						vmid := holderVMID
						if hd.where == "vmid" {
							vmid = testVMID0
						}
						assertContains(t, lines, fmt.Sprintf("VM %d (%s) as %s", vmid, holderName, form.drive), "was not deleted on node "+hd.keeps[0])
					} else if lines != "" {
						t.Errorf("notes %q, want none", lines)
					}
				})
			}
		}
	}
	if runs < 80 {
		t.Fatalf("only %d cases ran", runs)
	}
}

// A config that cannot be read leaves whether a VM has the seed unknown: the destroy of a
// gone VM fails, naming the VMID, and deletes nothing (a seed is never deleted unproved).
func TestSeedInUse_unreadableConfigFailsTheGoneDestroy(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.f.addVM(&fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1"})
	h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
	h.f.onCall("VMPending", func(_ context.Context, c fakeCall) error {
		if c.VMID == 100100 {
			return fixtureErr("err_596")
		}
		return nil
	})
	err := h.del(h.ctx, "pv1-1")
	if err == nil {
		t.Fatal("no error")
	}
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "reading the config of VMID", "which seed ISO it uses")
	if n := h.f.calls("DeleteVolume"); n != 0 {
		t.Errorf("%d volume deletes", n)
	}
}
