package proxmox

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// writesTo counts the calls of h's fake that write to vmid (anything but reads).
func writesTo(h *harness, vmid int) []string {
	var out []string
	for _, c := range h.f.log() {
		if c.VMID == vmid && !fakeReads[c.Method] {
			out = append(out, c.Method)
		}
	}
	return out
}

// TestCreate_creatingMarkNeedsItsProof: a VM on a probe VMID whose mark says it is an
// interrupted create of this name in this namespace is taken over only with a proof that
// verifies for that VMID under the backend's key. Without it (written by hand, a proof of
// another VMID copied with a full clone, a proof made with another token's key, or a
// backend without a key) the VM is foreign: no write reaches it, the create clones onto
// the next VMID, and the report names it.
func TestCreate_creatingMarkNeedsItsProof(t *testing.T) {
	at := time.Date(2026, 9, 19, 9, 0, 0, 0, time.UTC)
	lines := MarkLines{UID: prevUID, CreatedAt: at}
	for _, tc := range []struct {
		name  string
		desc  string
		noKey bool
		why   string
	}{
		{"hand-written creating line", MarkLines{UID: prevUID, CreatedAt: at, Creating: true}.Format(), false, "carries no " + MarkKeyProof},
		{"a proof that is not one", MarkLines{UID: prevUID, CreatedAt: at, Creating: true, Proof: "AAAA"}.Format(), false, "does not verify for VMID 105967"},
		{"the proof of another VMID (a full clone's copy)", CreatingMark(testProofKey, lines, testVMID1, testName), false, "does not verify for VMID 105967"},
		{"the proof of another name", CreatingMark(testProofKey, lines, testVMID0, "proxy-b"), false, "does not verify"},
		{"the proof of another uid", strings.Replace(CreatingMark(testProofKey, lines, testVMID0, testName), prevUID, otherUID, 1), false, "does not verify"},
		{"a proof under another token's key (rotated)", CreatingMark([]byte("the key of the token before the rotation"), lines, testVMID0, testName), false, "does not verify"},
		{"a backend without a key", CreatingMark(testProofKey, lines, testVMID0, testName), true, "no key"},
		{"a created-at rewritten (to move a copy into the takeover window)", strings.Replace(CreatingMark(testProofKey, lines, testVMID0, testName),
			at.Format(time.RFC3339), at.Add(time.Hour).Format(time.RFC3339), 1), false, "does not verify"},
		// decision: instance-binding
		{"a bound proof on another VM (its SMBIOS uuid is not the mark's)", CreatingMark(testProofKey, withInstance(lines, "11111111-2222-4333-8444-555555555555"), testVMID0, testName), false,
			string(notOursInstance)},
		{"a bound proof with its instance line removed", strings.Replace(CreatingMark(testProofKey, withInstance(lines, "11111111-2222-4333-8444-555555555555"), testVMID0, testName),
			"\n"+MarkKeyInstance+"=11111111-2222-4333-8444-555555555555", "", 1), false, "does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.noKey {
				h.b.cfg.ProofKey = nil
			}
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = "running", "running"; v.Config["description"] = tc.desc })
			before := h.f.vm(testVMID0).clone()
			rep := &CreateReport{}
			s := h.spec()
			s.Report = rep
			vm, err := h.b.Create(h.ctx, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if vm.ID.VMID != testVMID1 {
				t.Errorf("created at VMID %d, want the next one %d", vm.ID.VMID, testVMID1)
			}
			if w := writesTo(h, testVMID0); len(w) != 0 {
				t.Errorf("writes to the unproved VM: %v", w)
			}
			after := h.f.vm(testVMID0)
			if after.Config["description"] != before.Config["description"] || after.Status != "running" || after.Config["ide2"] != before.Config["ide2"] {
				t.Errorf("the unproved VM changed: %+v", after)
			}
			if len(rep.TakenOver) != 0 || len(rep.Unproved) != 1 || rep.Unproved[0].VMID != testVMID0 || !strings.Contains(rep.Unproved[0].Why, tc.why) {
				t.Errorf("report %+v, want VMID %d unproved (%s)", rep, testVMID0, tc.why)
			}
		})
	}
}

// TestCreate_provedTakeoverIsReported: a genuine interrupted create (its proof verifies,
// its disks the template's) is taken over and reported, destroyed and cloned afresh, never
// provisioned as it is; one with a disk the clone did not make is left alone and reported
// (decision: instance-binding), with no request written to it.
func TestCreate_provedTakeoverIsReported(t *testing.T) {
	for _, touched := range []bool{false, true} {
		h := newHarness(t)
		h.addInterrupted(testVMID0, testName, prevUID)
		if touched {
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["scsi1"] = "local-lvm:vm-105967-disk-9,size=1G" })
		}
		rep := &CreateReport{}
		s := h.spec()
		s.Report = rep
		vm := h.create(s)
		if touched {
			if vm.ID.VMID == testVMID0 || len(rep.TakenOver) != 0 || len(rep.Unproved) != 1 || !strings.Contains(rep.Unproved[0].Why, "its disks (scsi0, scsi1)") {
				t.Errorf("touched: created at %d, report %+v: want VMID %d left alone as unproved", vm.ID.VMID, rep, testVMID0)
			}
			if w := writesTo(h, testVMID0); len(w) != 0 || h.f.calls("Destroy") != 0 {
				t.Errorf("touched: writes to the left VM: %v", w)
			}
			continue
		}
		if vm.ID.VMID != testVMID0 {
			t.Fatalf("created at %d, want the taken-over %d", vm.ID.VMID, testVMID0)
		}
		if len(rep.TakenOver) != 1 || rep.TakenOver[0].VMID != testVMID0 || rep.TakenOver[0].PreviousUID != prevUID || !rep.TakenOver[0].Rebuilt {
			t.Errorf("report %+v", rep)
		}
		if got := h.f.calls("Destroy"); got != 1 {
			t.Errorf("%d destroys, want the VM destroyed and cloned afresh", got)
		}
		m := ParseMark(h.f.vm(testVMID0).Config["description"])
		if m.UID != testUID || m.Creating || m.Proof != "" || m.Instance == "" || m.Instance != instanceOf(h.f.vm(testVMID0).Config) {
			t.Errorf("mark after the create %+v", m)
		}
		assertContains(t, h.logs.String(), "proxmox interrupted create taken over")
	}
}

// withInstance is l bound to the VM whose SMBIOS uuid is inst.
func withInstance(l MarkLines, inst string) MarkLines {
	l.Instance = inst
	return l
}

// TestOwnership_predicate: ownedBy accepts only our name, the mark and the caller's uid;
// an empty uid on either side owns nothing; a mark bound to another VM (its instance line
// not the VM's SMBIOS uuid, decision: instance-binding) is refused; a state that recorded
// the VM's SMBIOS uuid refuses a VM with another one whatever the mark says, and accepts
// the VM with that one whatever its name and description say (its mark wiped, its uid
// deleted or rewritten), while an unbound state or a caller without a state does not; a
// caller without a state (Bound) refuses a mark without an instance line (decision:
// state-binding).
func TestOwnership_predicate(t *testing.T) {
	ours := map[string]string{"name": testName, "description": FormatMark(testUID, time.Now()), "ide2": "local:iso/" + seedFile(testName, testUID) + ",media=cdrom"}
	const inst = "6d1f2a9e-0f3b-4c55-9b2e-5a4c3d2e1f90"
	bound := MarkLines{UID: testUID, CreatedAt: time.Now(), Instance: inst}.Format()
	finishedAt := func(smbios string) map[string]string {
		return map[string]string{"name": testName, "description": bound, "smbios1": smbios}
	}
	// The finished mark with its instance line deleted (a Notes-only edit), on a VM made
	// by hand at a reused VMID (finding 1 of the review of instance-binding).
	stripped := map[string]string{"name": testName, "description": FormatMark(testUID, time.Now()), "smbios1": "uuid=0a0b0c0d-0000-4000-8000-000000000002"}
	for _, tc := range []struct {
		name  string
		cfg   map[string]string
		owner Owner
		want  notOurs
	}{
		{"recorded: the stripped mark on a hand-made VM", stripped, Owner{UID: testUID, Instance: inst}, notOursBound},
		{"recorded: the bound mark copied verbatim on a hand-made VM", finishedAt("uuid=0a0b0c0d-0000-4000-8000-000000000003"), Owner{UID: testUID, Instance: inst}, notOursBound},
		{"recorded: the VM without smbios1", finishedAt(""), Owner{UID: testUID, Instance: inst}, notOursBound},
		{"recorded: this VM, its mark bound", finishedAt("uuid=" + inst), Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: this VM, its instance line deleted", map[string]string{"name": testName, "description": ours["description"], "smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: strings.ToUpper(inst)}, notOursNone},
		{"recorded: this VM, another uid in its mark", map[string]string{"name": testName, "description": FormatMark(otherUID, time.Now()), "smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: this VM, its mark wiped", map[string]string{"name": testName, "description": "", "smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: this VM, only a note left", map[string]string{"name": testName, "description": "a note", "smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: this VM, its uid line deleted", map[string]string{"name": testName, "description": strings.Replace(bound, MarkKeyUID+"="+testUID+"\n", "", 1),
			"smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: this VM, its managed line rewritten", map[string]string{"name": testName, "description": strings.Replace(bound, "managed=true", "managed=false", 1),
			"smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: this VM renamed", map[string]string{"name": "renamed", "description": bound, "smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: a hand-made VM renamed", map[string]string{"name": "renamed", "description": bound, "smbios1": "uuid=0a0b0c0d-0000-4000-8000-000000000003"}, Owner{UID: testUID, Instance: inst}, notOursName},
		{"recorded: this VM renamed, another uid in its mark", map[string]string{"name": "renamed", "description": FormatMark(otherUID, time.Now()), "smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: this VM renamed, its mark wiped", map[string]string{"name": "renamed", "description": "a note", "smbios1": "uuid=" + inst}, Owner{UID: testUID, Instance: inst}, notOursNone},
		{"recorded: a hand-made VM without a mark", map[string]string{"name": testName, "description": "a note", "smbios1": "uuid=0a0b0c0d-0000-4000-8000-000000000003"}, Owner{UID: testUID, Instance: inst}, notOursUnmarked},
		{"recorded: a hand-made VM without smbios1 or a mark", map[string]string{"name": testName, "description": ""}, Owner{UID: testUID, Instance: inst}, notOursUnmarked},
		{"recorded without a uid: this VM, its mark wiped", map[string]string{"name": testName, "description": "", "smbios1": "uuid=" + inst}, Owner{Instance: inst}, notOursUnmarked},
		{"recorded without a uid: this VM, its mark bound", finishedAt("uuid=" + inst), Owner{Instance: inst}, notOursNoUIDHere},
		{"unbound state: this VM, its mark wiped", map[string]string{"name": testName, "description": "a note", "smbios1": "uuid=" + inst}, Owner{UID: testUID}, notOursUnmarked},
		{"unbound state: this VM, its uid line deleted", map[string]string{"name": testName, "description": strings.Replace(bound, MarkKeyUID+"="+testUID+"\n", "", 1),
			"smbios1": "uuid=" + inst}, Owner{UID: testUID}, notOursNoUID},
		{"unbound state: this VM, another uid in its mark", map[string]string{"name": testName, "description": FormatMark(otherUID, time.Now()), "smbios1": "uuid=" + inst},
			Owner{UID: testUID}, notOursOtherUID},
		{"no state: this VM, its mark wiped", map[string]string{"name": testName, "description": "a note", "smbios1": "uuid=" + inst}, Owner{UID: testUID, Bound: true}, notOursUnmarked},
		{"no state: this VM renamed", map[string]string{"name": "renamed", "description": bound, "smbios1": "uuid=" + inst}, Owner{UID: testUID, Bound: true}, notOursName},
		{"no state: the stripped mark", stripped, Owner{UID: testUID, Bound: true}, notOursUnbound},
		{"no state: a bound mark on its VM", finishedAt("uuid=" + inst), Owner{UID: testUID, Bound: true}, notOursNone},
		{"no state: a bound mark copied", finishedAt("uuid=0a0b0c0d-0000-4000-8000-000000000003"), Owner{UID: testUID, Bound: true}, notOursInstance},
	} {
		if _, got := ownedBy(tc.cfg, testName, tc.owner); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		uid  string
		want notOurs
	}{
		{"ours", ours, testUID, notOursNone},
		{"another name", map[string]string{"name": "x", "description": ours["description"]}, testUID, notOursName},
		{"no mark", map[string]string{"name": testName, "description": "a note"}, testUID, notOursUnmarked},
		{"managed not exactly true", map[string]string{"name": testName, "description": "proxy-operator-managed=True\nproxy-operator-uid=" + testUID}, testUID, notOursUnmarked},
		{"a mark without a uid", map[string]string{"name": testName, "description": "proxy-operator-managed=true"}, testUID, notOursNoUID},
		{"another uid", map[string]string{"name": testName, "description": FormatMark(otherUID, time.Now())}, testUID, notOursOtherUID},
		{"a caller without a uid", ours, "", notOursNoUIDHere},
		{"both without a uid", map[string]string{"name": testName, "description": "proxy-operator-managed=true"}, "", notOursNoUIDHere},
		{"bound to this VM", finishedAt("uuid=" + inst + ",manufacturer=cHJveHk="), testUID, notOursNone},
		{"bound to this VM, uuid in upper case", finishedAt("uuid=" + strings.ToUpper(inst)), testUID, notOursNone},
		{"a finished mark copied to another VM at a reused VMID", finishedAt("uuid=0a0b0c0d-0000-4000-8000-000000000001"), testUID, notOursInstance},
		{"a bound mark on a VM without smbios1", finishedAt(""), testUID, notOursInstance},
		{"an older version's mark (no instance line) with its seed on a drive", map[string]string{"name": testName, "description": ours["description"],
			"smbios1": "uuid=" + inst, "ide2": "local:iso/" + seedFile(testName, testUID) + ",media=cdrom"}, testUID, notOursNone},
		{"an operator's mark with its seed by path-less volume on another drive", map[string]string{"name": testName, "description": ours["description"],
			"ide3": "nfs:iso/" + operatorSeedFile(testName) + ",media=cdrom"}, testUID, notOursNone},
		{"an older version's mark (no instance line) without a seed on any drive", map[string]string{"name": testName, "description": ours["description"],
			"smbios1": "uuid=" + inst, "ide2": "local:iso/debian-13-netinst.iso,media=cdrom"}, testUID, notOursUnboundNoSeed},
		{"an older version's mark with another uid's seed", map[string]string{"name": testName, "description": ours["description"],
			"ide2": "local:iso/" + seedFile(testName, otherUID) + ",media=cdrom"}, testUID, notOursUnboundNoSeed},
	} {
		if _, got := ownedBy(tc.cfg, testName, Owner{UID: tc.uid}); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCreate_copiedProofNeverProvisioned: a proved creating mark copied onto a VM the
// provider did not clone (its half-made VM destroyed meanwhile, the copy put on a VM of the
// same name at the same VMID, cloned from the same template) is never given a seed or
// started: within TakeoverWindow, an untouched clone of the template is destroyed and
// cloned afresh; one whose config was touched (a tag added), or past the window, is passed
// with the reason and never touched (decision: instance-binding).
func TestCreate_copiedProofNeverProvisioned(t *testing.T) {
	for _, tc := range []struct {
		name     string
		age      time.Duration
		tags     string
		takeover bool
		why      string
	}{
		{"within the window", 10 * time.Minute, "", true, ""},
		{"within the window, its config touched", 10 * time.Minute, "forger", false, "tags (forger), which the template has not"},
		{"past the window", TakeoverWindow + time.Minute, "forger", false, "outside the 1h0m0s"},
		{"dated ahead", -TakeoverWindow - time.Minute, "forger", false, "outside the 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			// The forger's VM: a clone of the template (the same meta and devices), the copied
			// description.
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: prevUID, CreatedAt: h.clock.Now().Add(-tc.age)}, testVMID0, testName)
				if tc.tags != "" {
					v.Config["tags"] = tc.tags
				}
			})
			forged := h.f.vm(testVMID0).Config["description"]
			h.f.calllog = nil
			rep := &CreateReport{}
			s := h.spec()
			s.Report = rep
			vm := h.create(s)
			// Before the forger's VM is destroyed, nothing but the mark's compare-and-swap (the
			// takeover's claim) and the destroy's stop may reach it; past the window, nothing.
			destroyed := false
			for _, c := range h.f.calllog {
				if c.VMID != testVMID0 || destroyed {
					continue
				}
				switch c.Method {
				case "Destroy":
					destroyed = true
					if !tc.takeover {
						t.Errorf("the forger's VM destroyed past the window")
					}
				case "Start", "Migrate", "Resize":
					t.Errorf("%s reached the forger's VM", c.Method)
				case "SetVMConfig":
					if _, desc := c.Args["description"]; !tc.takeover || !desc || len(c.Args) != 2 {
						t.Errorf("config written to the forger's VM: %v", c.Args)
					}
				}
			}
			if tc.takeover {
				if vm.ID.VMID != testVMID0 || h.f.calls("Destroy") != 1 || h.f.calls("Clone") != 1 {
					t.Errorf("VMID %d, %d destroys, %d clones: want the copy destroyed and %d cloned afresh",
						vm.ID.VMID, h.f.calls("Destroy"), h.f.calls("Clone"), testVMID0)
				}
				return
			}
			if vm.ID.VMID == testVMID0 || h.f.calls("Destroy") != 0 {
				t.Errorf("VMID %d, %d destroys: want the forger's VM passed", vm.ID.VMID, h.f.calls("Destroy"))
			}
			if v := h.f.vm(testVMID0); v == nil || v.Config["description"] != forged || v.Config["tags"] != tc.tags {
				t.Errorf("the forger's VM changed: %+v", v)
			}
			if len(rep.Unproved) != 1 || !strings.Contains(rep.Unproved[0].Why, tc.why) {
				t.Errorf("report %+v, want the VM noted with %q", rep, tc.why)
			}
		})
	}
}

// TestCreate_copiedCreatingLineOnHandMadeVM is the copied-creating-text threat at the backend: a
// create's creating text, copied while the create ran, put on a VM someone made by hand at
// the same VMID (two disks, 32G and 100G, running) within the takeover window: its proof
// verifies, but its disks are not the template's, so the retry leaves it alone (no write at
// all), reports why, and clones onto the next VMID (decision: instance-binding).
func TestCreate_copiedCreatingLineOnHandMadeVM(t *testing.T) {
	h := newHarness(t)
	h.addInterrupted(testVMID0, testName, prevUID)
	h.f.mutate(testVMID0, func(v *fakeVM) {
		v.Status, v.QMP = "running", "running"
		v.Config["scsi0"] = "local-lvm:vm-105967-disk-0,size=32G"
		v.Config["scsi1"] = "local-lvm:vm-105967-disk-1,size=100G"
		v.Config["smbios1"] = "uuid=9e9e9e9e-0000-4000-8000-000000000009"
	})
	before := h.f.vm(testVMID0).clone()
	rep := &CreateReport{}
	s := h.spec()
	s.Report = rep
	vm := h.create(s)
	if vm.ID.VMID != testVMID1 {
		t.Errorf("created at %d, want the next VMID %d", vm.ID.VMID, testVMID1)
	}
	if w := writesTo(h, testVMID0); len(w) != 0 {
		t.Errorf("writes to the hand-made VM: %v", w)
	}
	after := h.f.vm(testVMID0)
	if after.Status != "running" || after.Config["description"] != before.Config["description"] || after.Config["scsi1"] != before.Config["scsi1"] {
		t.Errorf("the hand-made VM changed: %+v", after)
	}
	if len(rep.TakenOver) != 0 || len(rep.Unproved) != 1 || !strings.Contains(rep.Unproved[0].Why, "its disks (scsi0, scsi1) are not those of template") {
		t.Errorf("report %+v", rep)
	}
}

// TestTakeoverDisks: the disks of a clone of the template, grown at most to disk_gib, are
// the template's; another drive set, a smaller or a larger disk are not.
func TestTakeoverDisks(t *testing.T) {
	tmpl := map[string]string{"scsi0": "local-lvm:base-9001-disk-1,size=3G", "ide2": "none,media=cdrom", "efidisk0": "local-lvm:base-9001-disk-0,size=4M"}
	for _, tc := range []struct {
		name string
		cfg  map[string]string
		gib  int
		ok   bool
	}{
		{"as cloned", map[string]string{"scsi0": "local-lvm:vm-1-disk-1,size=3G"}, 0, true},
		{"as cloned with the seed on ide2", map[string]string{"scsi0": "local-lvm:vm-1-disk-1,size=3G", "ide2": "iso:iso/x-seed.iso,media=cdrom"}, 0, true},
		{"grown to disk_gib", map[string]string{"scsi0": "local-lvm:vm-1-disk-1,size=20G"}, 20, true},
		{"grown past disk_gib", map[string]string{"scsi0": "local-lvm:vm-1-disk-1,size=21G"}, 20, false},
		{"grown without disk_gib", map[string]string{"scsi0": "local-lvm:vm-1-disk-1,size=4G"}, 0, false},
		{"shrunk", map[string]string{"scsi0": "local-lvm:vm-1-disk-1,size=2G"}, 0, false},
		{"a disk added", map[string]string{"scsi0": "local-lvm:vm-1-disk-1,size=3G", "scsi1": "local-lvm:vm-1-disk-2,size=1G"}, 0, false},
		{"another bus", map[string]string{"virtio0": "local-lvm:vm-1-disk-1,size=3G"}, 0, false},
		{"no size", map[string]string{"scsi0": "local-lvm:vm-1-disk-1"}, 0, false},
	} {
		if why := takeoverDisks(tmpl, tc.cfg, tc.gib, 9001); (why == "") != tc.ok {
			t.Errorf("%s: %q, want ok %v", tc.name, why, tc.ok)
		}
	}
	if takeoverDisks(nil, map[string]string{}, 0, 9001) == "" {
		t.Error("an unknown template's disks accepted")
	}
}

// TestUpdate_noteBindsAnOlderMark: an update that rewrites the description (a note change)
// of a VM whose mark has no instance line (made by an older version) adds the line naming
// its SMBIOS uuid, after the namespace line; the VM stays the resource's, and a mark that
// has the line is written as it is (decision: instance-binding).
func TestUpdate_noteBindsAnOlderMark(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) {
		v.Config["description"] = MarkLines{UID: testUID, CreatedAt: time.Date(2026, 9, 19, 9, 0, 0, 0, time.UTC), Namespace: "ns"}.Format()
	})
	inst := instanceOf(h.f.vm(testVMID0).Config)
	if inst == "" {
		t.Fatal("the fixture has no SMBIOS uuid")
	}
	if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Note: ptr("team A")}); err != nil {
		t.Fatal(err)
	}
	desc := h.f.vm(testVMID0).Config["description"]
	if m := ParseMark(desc); m.Instance != inst || !strings.Contains(desc, MarkKeyNamespace+"=ns\n"+MarkKeyInstance+"="+inst+"\n") || NoteOf(desc) != "team A" {
		t.Errorf("description after the update %q", desc)
	}
	if _, why := ownedBy(h.f.vm(testVMID0).Config, testName, Owner{UID: testUID}); why != notOursNone {
		t.Errorf("the VM is not the resource's after the update: %s", why)
	}
	if got := withInstanceLine(desc, map[string]string{"smbios1": "uuid=another"}); got != desc {
		t.Errorf("a bound mark rewritten: %q", got)
	}
	if got := withInstanceLine("a note", map[string]string{"smbios1": "uuid=" + inst}); got != "a note" {
		t.Errorf("a description without a mark rewritten: %q", got)
	}
	op := FormatMark(testUID, time.Date(2026, 9, 19, 9, 0, 0, 0, time.UTC))
	if got := withInstanceLine(op, map[string]string{"smbios1": "uuid=" + inst}); got != op+"\n"+MarkKeyInstance+"="+inst {
		t.Errorf("the operator's mark bound as %q", got)
	}
}

// TestCreate_unboundMarkOnAProvisionedVM: a proved creating mark written before the config
// step (no instance line) on a VM that runs, or has a seed ISO attached, cannot be that
// create's VM (only the config step attaches the seed, and the start comes after it): the
// retry leaves it alone, reports why, and writes nothing to it (decision: instance-binding).
func TestCreate_unboundMarkOnAProvisionedVM(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(v *fakeVM)
		why  string
	}{
		{"running", func(v *fakeVM) { v.Status, v.QMP = "running", "running" }, "yet the VM has run"},
		{"a seed attached", func(v *fakeVM) {
			v.Config["ide2"] = seedVolID(fakeISOStorage, seedFile(testName, testUID)) + ",media=cdrom"
		}, "yet ide2 holds a seed ISO"},
	} {
		h := newHarness(t)
		h.addInterrupted(testVMID0, testName, prevUID)
		h.f.mutate(testVMID0, tc.mut)
		rep := &CreateReport{}
		s := h.spec()
		s.Report = rep
		if vm := h.create(s); vm.ID.VMID == testVMID0 {
			t.Errorf("%s: taken over", tc.name)
		}
		if w := writesTo(h, testVMID0); len(w) != 0 {
			t.Errorf("%s: writes %v", tc.name, w)
		}
		if len(rep.Unproved) != 1 || !strings.Contains(rep.Unproved[0].Why, tc.why) {
			t.Errorf("%s: report %+v", tc.name, rep)
		}
	}
}

// TestDelete_unboundMarkOnARunningVMIsLeftWithANote: a destroy whose VM carries the
// resource's uid in a creating mark written before the config step, on a VM that runs,
// leaves it alone (it may be a copy on someone's VM) and says so with the qm destroy advice.
func TestDelete_unboundMarkOnARunningVMIsLeftWithANote(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) {
		v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: testUID, CreatedAt: h.clock.Now().Add(-time.Hour)}, testVMID0, testName)
	})
	ctx, notes := WithNotes(h.ctx)
	if err := h.b.DeleteVM(ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if h.f.vm(testVMID0) == nil || h.f.calls("Destroy") != 0 || h.f.calls("Stop") != 0 {
		t.Errorf("the VM was stopped or destroyed")
	}
	assertContains(t, strings.Join(notes.Lines(), "\n"), "VMID 105967 was not destroyed", "qm stop 105967 && qm destroy 105967 --purge")
}

// TestUpdate_bindsAndFinishesTheMark (decision: state-binding): an update with Bind and
// nothing else writes, on a VM whose mark has no instance line, the mark with the line
// naming its SMBIOS uuid, and that alone; any config write of an update, on a VM whose
// mark carries a replayed creating line and proof, writes the finished mark; an update
// whose state recorded another SMBIOS uuid sends nothing, whatever the mark says.
func TestUpdate_bindsAndFinishesTheMark(t *testing.T) {
	t.Run("bind alone", func(t *testing.T) {
		h := newHarness(t)
		v := h.f.addOlderVM(testVMID0, testName, testUID)
		inst := instanceOf(v.Config)
		h.f.calllog = nil
		if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Bind: true}); err != nil {
			t.Fatal(err)
		}
		var written []map[string]string
		for _, c := range h.f.log() {
			if c.Method == "SetVMConfig" {
				written = append(written, c.Args)
			}
		}
		if w := mutating(h.f); len(w) != 1 || len(written) != 1 || len(written[0]) != 1 || ParseMark(written[0]["description"]).Instance != inst {
			t.Errorf("writes %v %+v, want one config write of the bound mark alone (instance %s)", w, written, inst)
		}
		h.f.calllog = nil
		if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Instance: inst, Bind: true}); err != nil {
			t.Fatal(err)
		}
		if w := mutating(h.f); len(w) != 0 {
			t.Errorf("a bound mark was written again: %+v", w)
		}
	})
	t.Run("a replayed creating mark", func(t *testing.T) {
		h := newHarness(t)
		v := h.ourRunningVM(testVMID0, testName)
		inst := instanceOf(v.Config)
		replayed := CreatingMark([]byte("key"), MarkLines{UID: testUID, CreatedAt: h.b.clock.Now().Add(-time.Hour), Instance: inst}, testVMID0, testName)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = replayed })
		onboot := true // a config write without a restart
		if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Instance: inst, OnBoot: &onboot}); err != nil {
			t.Fatal(err)
		}
		desc := h.f.vm(testVMID0).Config["description"]
		if m := ParseMark(desc); m.Creating || m.Proof != "" || m.Instance != inst || m.UID != testUID {
			t.Errorf("the description after the update is not the finished, bound mark: %q (calls %+v)", desc, h.f.log())
		}
	})
	t.Run("another SMBIOS uuid recorded", func(t *testing.T) {
		h := newHarness(t)
		h.ourRunningVM(testVMID0, testName)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = FormatMark(testUID, h.b.clock.Now()) })
		h.f.calllog = nil
		cores := 2
		err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Instance: "0a0b0c0d-0000-4000-8000-000000000009", Cores: &cores, Bind: true})
		if !errors.Is(err, ErrNotOurs) {
			t.Errorf("%v, want ErrNotOurs", err)
		}
		assertContains(t, fmt.Sprint(err), "is not the one this resource's VM had")
		if w := mutating(h.f); len(w) != 0 {
			t.Errorf("writes to a VM of another SMBIOS uuid: %+v", w)
		}
	})
}
