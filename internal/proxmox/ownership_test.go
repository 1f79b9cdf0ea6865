package proxmox

import (
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

// TestCreate_provedTakeoverIsReported: a genuine interrupted create (its proof verifies)
// is taken over and reported; whether or not it is still an untouched clone of the
// template (a disk added), it is destroyed and cloned afresh, never provisioned as it is.
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
		if vm.ID.VMID != testVMID0 {
			t.Fatalf("touched %v: created at %d, want the taken-over %d", touched, vm.ID.VMID, testVMID0)
		}
		if len(rep.TakenOver) != 1 || rep.TakenOver[0].VMID != testVMID0 || rep.TakenOver[0].PreviousUID != prevUID || !rep.TakenOver[0].Rebuilt {
			t.Errorf("touched %v: report %+v", touched, rep)
		}
		if got := h.f.calls("Destroy"); got != 1 {
			t.Errorf("touched %v: %d destroys, want the VM destroyed and cloned afresh", touched, got)
		}
		if _, extra := h.f.vm(testVMID0).Config["scsi1"]; extra {
			t.Errorf("touched %v: the added disk is still there", touched)
		}
		m := ParseMark(h.f.vm(testVMID0).Config["description"])
		if m.UID != testUID || m.Creating || m.Proof != "" {
			t.Errorf("touched %v: mark after the create %+v", touched, m)
		}
		assertContains(t, h.logs.String(), "proxmox interrupted create taken over")
	}
}

// TestOwnership_predicate: ownedBy accepts only our name, the mark and the caller's uid;
// an empty uid on either side owns nothing.
func TestOwnership_predicate(t *testing.T) {
	ours := map[string]string{"name": testName, "description": FormatMark(testUID, time.Now())}
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
	} {
		if _, got := ownedBy(tc.cfg, testName, tc.uid); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCreate_copiedProofNeverProvisioned: a proved creating mark copied onto a VM the
// provider did not clone (its half-made VM destroyed meanwhile, the copy put on a VM of the
// same name at the same VMID, cloned from the same template so that it looks untouched) is
// never given a seed or started: within TakeoverWindow it is destroyed and cloned afresh;
// past it, it is passed with the reason and never touched.
func TestCreate_copiedProofNeverProvisioned(t *testing.T) {
	for _, tc := range []struct {
		name     string
		age      time.Duration
		takeover bool
	}{
		{"within the window", 10 * time.Minute, true},
		{"past the window", TakeoverWindow + time.Minute, false},
		{"dated ahead", -TakeoverWindow - time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			// The forger's VM: a clone of the template (the same meta and devices), the copied
			// description.
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: prevUID, CreatedAt: h.clock.Now().Add(-tc.age)}, testVMID0, testName)
				v.Config["tags"] = "forger"
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
			if v := h.f.vm(testVMID0); v == nil || v.Config["description"] != forged || v.Config["tags"] != "forger" {
				t.Errorf("the forger's VM changed: %+v", v)
			}
			if len(rep.Unproved) != 1 || !strings.Contains(rep.Unproved[0].Why, "outside the 1h0m0s") {
				t.Errorf("report %+v, want the VM noted with the window", rep)
			}
		})
	}
}
