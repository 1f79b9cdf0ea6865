package proxmox

import (
	"errors"
	"strings"
	"testing"
)

// markEdits are what a Notes-only user can do to the description of a bound resource's VM
// beyond its instance line: wipe the whole mark (a note of their own left or none), delete
// its uid line, rewrite its uid or its managed line.
var markEdits = []struct {
	name string
	edit func(desc string) string
	note string // the note left after the mark lines
}{
	{"wiped", func(string) string { return "" }, ""},
	{"wiped, a note of the user's left", func(string) string { return "maintenance: Sundays" }, "maintenance: Sundays"},
	{"its uid line deleted", func(desc string) string { return strings.Replace(desc, MarkKeyUID+"="+testUID+"\n", "", 1) }, ""},
	{"its uid rewritten", func(desc string) string { return strings.Replace(desc, testUID, otherUID, 1) }, ""},
	{"its managed line rewritten, a note added", func(desc string) string {
		return strings.Replace(desc, MarkKeyManaged+"=true", MarkKeyManaged+"=false", 1) + "\n\nteam A"
	}, "team A"},
}

// createdForRestore creates the resource's VM as this version does, with every line a
// finished mark can carry (namespace, instance, created-by, both digests), and returns the
// spec, the description its create wrote and the VM's SMBIOS uuid.
func createdForRestore(h *harness) (Spec, string, string) {
	h.t.Helper()
	s := h.spec()
	s.Namespace = "team-a"
	s.UserDataDigest = "hmac-sha256:00aa11bb"
	s.Network = &NetworkConfig{Raw: []byte("version: 2\n")}
	s.NetworkDigest = NetworkDigest(s.Network)
	h.create(s)
	cfg := h.f.vm(testVMID0).Config
	desc := cfg["description"]
	if m, x := ParseMark(desc), ParseMarkExtra(desc); m.UID != testUID || m.Instance == "" || !m.HasNamespace || x.CreatedBy == "" ||
		x.UserDataDigest == "" || x.NetworkDigest == "" {
		h.t.Fatalf("the create wrote %q, want every line of a finished mark", desc)
	}
	return s, desc, instanceOf(cfg)
}

// restoreChanges are the changes of the update that binds: what the state holds.
func restoreChanges(s Spec, inst string) Changes {
	return Changes{UID: testUID, Instance: inst, Bind: true, Network: s.Network, UserData: s.UserData, UserDataKnown: true,
		Mark: MarkRecord{CreatedAt: s.CreatedAt, Namespace: s.Namespace, UserDataDigest: s.UserDataDigest}}
}

// TestGet_markGoneOnTheRecordedVM (decision: state-binding): a refresh whose state recorded
// the VM's SMBIOS uuid reads the VM as the resource's whatever its description holds, with
// the state's uid and MarkEdited, the user's note as the note; a state without the uuid,
// or with another one, finds it not this resource's.
func TestGet_markGoneOnTheRecordedVM(t *testing.T) {
	for _, e := range markEdits {
		t.Run(e.name, func(t *testing.T) {
			h := newHarness(t)
			_, made, inst := createdForRestore(h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = e.edit(made) })
			vm, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID, Instance: inst})
			if err != nil {
				t.Fatalf("Get with the recorded uuid: %v", err)
			}
			if vm.UID != testUID || !vm.MarkEdited || vm.Note != e.note {
				t.Errorf("uid %q, mark edited %v, note %q; want the state's uid, edited, note %q", vm.UID, vm.MarkEdited, vm.Note, e.note)
			}
			if _, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID}); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get without a recorded uuid: %v, want ErrNotFound", err)
			}
			if _, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID, Instance: "0a0b0c0d-0000-4000-8000-000000000009"}); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get with another recorded uuid: %v, want ErrNotFound", err)
			}
		})
	}
	t.Run("the mark intact", func(t *testing.T) {
		h := newHarness(t)
		_, _, inst := createdForRestore(h)
		if vm, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID, Instance: inst}); err != nil || vm.MarkEdited {
			t.Errorf("Get of the intact mark: edited %v, %v", vm.MarkEdited, err)
		}
	})
}

// TestUpdate_restoresTheWholeMark (decision: state-binding): the update that binds a VM
// whose mark was wiped, or lost the state's uid, writes with one config write the whole
// finished mark its create wrote (uid, created-at, namespace, instance, created-by, the
// digests), keeping the user's note, or the note the update sets; an update whose state
// recorded no uuid, or another, sends nothing.
func TestUpdate_restoresTheWholeMark(t *testing.T) {
	for _, e := range markEdits {
		t.Run(e.name, func(t *testing.T) {
			h := newHarness(t)
			s, made, inst := createdForRestore(h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = e.edit(made) })
			h.f.calllog = nil
			if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Bind: true, Mark: restoreChanges(s, inst).Mark}); !errors.Is(err, ErrNotFound) {
				t.Errorf("the update of an unbound state: %v, want ErrNotFound", err)
			}
			other := restoreChanges(s, "0a0b0c0d-0000-4000-8000-000000000009")
			if err := h.b.Update(h.ctx, testID, other); !errors.Is(err, ErrNotFound) {
				t.Errorf("the update of a state with another uuid: %v, want ErrNotFound", err)
			}
			if w := mutating(h.f); len(w) != 0 {
				t.Fatalf("writes without the recorded uuid: %v", w)
			}
			if err := h.b.Update(h.ctx, testID, restoreChanges(s, inst)); err != nil {
				t.Fatal(err)
			}
			var written []map[string]string
			for _, c := range h.f.log() {
				if c.Method == "SetVMConfig" {
					written = append(written, c.Args)
				}
			}
			want := withNote(made, e.note)
			if w := mutating(h.f); len(w) != 1 || len(written) != 1 || len(written[0]) != 1 || written[0]["description"] != want {
				t.Errorf("writes %v %q, want one config write of the description:\n%s", w, written, want)
			}
			h.f.calllog = nil
			if err := h.b.Update(h.ctx, testID, restoreChanges(s, inst)); err != nil {
				t.Fatal(err)
			}
			if w := mutating(h.f); len(w) != 0 {
				t.Errorf("the restored mark was written again: %v", w)
			}
		})
	}
	t.Run("with a note change", func(t *testing.T) {
		h := newHarness(t)
		s, made, inst := createdForRestore(h)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = "the user's text" })
		ch := restoreChanges(s, inst)
		note := "set by the configuration"
		ch.Note = &note
		if err := h.b.Update(h.ctx, testID, ch); err != nil {
			t.Fatal(err)
		}
		if got, want := h.f.vm(testVMID0).Config["description"], withNote(made, note); got != want {
			t.Errorf("description %q, want %q", got, want)
		}
	})
}

// TestPower_refusesAnEditedMarkSayingWhatRepairsIt: the power action, which has no state
// to check the VM by, refuses the resource's VM whose mark was wiped or lost its uid, with
// no write, saying that it may be the resource's VM with its description edited and that
// an apply of its proxy_vm writes the mark back.
func TestPower_refusesAnEditedMarkSayingWhatRepairsIt(t *testing.T) {
	for _, e := range markEdits {
		t.Run(e.name, func(t *testing.T) {
			h := newHarness(t)
			_, made, _ := createdForRestore(h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = e.edit(made) })
			h.f.calllog = nil
			_, err := h.b.Power(h.ctx, testID, PowerOptions{Op: PowerStop, UID: testUID})
			if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "edited outside Terraform") ||
				!strings.Contains(err.Error(), "its apply writes the name and mark back") {
				t.Errorf("%v, want ErrNotOurs saying an apply writes the name and mark back", err)
			}
			if w := mutating(h.f); len(w) != 0 {
				t.Errorf("writes: %v", w)
			}
		})
	}
}

// TestDelete_markGoneOnTheRecordedVM: a destroy whose state recorded the VM's SMBIOS uuid
// removes the VM whose mark was wiped, with its seed ISO, instead of leaving both; one
// whose state recorded no uuid leaves the VM alone.
func TestDelete_markGoneOnTheRecordedVM(t *testing.T) {
	for _, recorded := range []bool{true, false} {
		h := newHarness(t)
		_, _, inst := createdForRestore(h)
		v := h.f.vm(testVMID0)
		seed := driveVolume(v.Config["ide2"])
		if _, ok := h.f.iso(v.Node, fakeISOStorage, seedFile(testName, testUID)); !ok || !strings.HasSuffix(seed, seedFile(testName, testUID)) {
			t.Fatalf("the create's seed %q is not %s on storage", seed, seedFile(testName, testUID))
		}
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = "maintenance: Sundays" })
		opts := DeleteOptions{Node: v.Node, UID: testUID, Seed: seed}
		if recorded {
			opts.Instance = inst
		}
		if err := h.b.DeleteVM(h.ctx, testID, opts); err != nil {
			t.Fatalf("recorded %v: %v", recorded, err)
		}
		if gone := h.f.vm(testVMID0) == nil; gone != recorded {
			t.Errorf("recorded %v: the VM destroyed %v, want %v", recorded, gone, recorded)
		}
		if recorded {
			if _, ok := h.f.iso(v.Node, fakeISOStorage, seedFile(testName, testUID)); ok {
				t.Errorf("the seed %s is left after the VM was destroyed", seed)
			}
		}
	}
}
