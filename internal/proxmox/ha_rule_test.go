package proxmox

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestParseRuleMark_lines(t *testing.T) {
	for _, tc := range []struct {
		comment    string
		marked     bool
		uid, text  string
		ownedByUID bool
	}{
		{"proxy-operator-ha-rule=" + testUID, true, testUID, "", true},
		{"keep the pair apart\nproxy-operator-ha-rule=" + testUID, true, testUID, "keep the pair apart", true},
		{"a\r\nproxy-operator-ha-rule=" + testUID + "\r\n", true, testUID, "a", true},
		// The first occurrence wins: a second line cannot override it.
		{"proxy-operator-ha-rule=" + otherUID + "\nproxy-operator-ha-rule=" + testUID, true, otherUID, "", false},
		// Padded lines and a VM's mark are not a rule's mark.
		{"proxy-operator-ha-rule = " + testUID, false, "", "proxy-operator-ha-rule = " + testUID, false},
		{" proxy-operator-ha-rule=" + testUID, false, "", " proxy-operator-ha-rule=" + testUID, false},
		{"proxy-operator-managed=true\nproxy-operator-uid=" + testUID, false, "", "proxy-operator-managed=true\nproxy-operator-uid=" + testUID, false},
		{"proxy-operator-ha-rule=", true, "", "", false},
		{"", false, "", "", false},
	} {
		m := parseRuleMark(tc.comment)
		if m.Marked != tc.marked || m.UID != tc.uid || m.Text != tc.text {
			t.Errorf("parseRuleMark(%q) = %+v, want marked %v uid %q text %q", tc.comment, m, tc.marked, tc.uid, tc.text)
		}
		if _, why := ruleOwnedBy(tc.comment, testUID); (why == notOursNone) != tc.ownedByUID {
			t.Errorf("ruleOwnedBy(%q, testUID) = %q, want owned %v", tc.comment, why, tc.ownedByUID)
		}
	}
	if _, why := ruleOwnedBy(ruleComment("x", testUID), ""); why != notOursNoUIDHere {
		t.Errorf("an empty state uid owns %q", why)
	}
	if got := parseRuleMark(ruleComment("two\nlines\n", testUID)); got.Text != "two\nlines" || got.UID != testUID {
		t.Errorf("round trip: %+v", got)
	}
}

// ruleHarness is a harness whose fake has VMs 100 and 101 as HA resources on two nodes.
func ruleHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, "pv1-1", "pv1-2")
	for _, sid := range []string{"vm:100", "vm:101", "vm:102"} {
		h.f.putHAResource(pveapi.HAResource{SID: sid, State: "started"})
	}
	return h
}

func pairSpec() HARuleSpec {
	return HARuleSpec{ID: "proxy-pair", Type: HARuleResourceAffinity, Affinity: "negative", VMIDs: []int{101, 100}, Comment: "keep apart", UID: testUID}
}

func TestHARule_createReadUpdateDelete(t *testing.T) {
	h := ruleHarness(t)
	s := pairSpec()
	if err := h.b.CreateHARule(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	r, ok := h.f.haRule("proxy-pair")
	if !ok || r.Resources != "vm:100,vm:101" || r.Affinity != "negative" || r.Comment != "keep apart\nproxy-operator-ha-rule="+testUID {
		t.Fatalf("rule written: %+v", r)
	}
	got, err := h.b.GetHARule(h.ctx, "proxy-pair", testUID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Comment != "keep apart" || got.UID != testUID || !reflect.DeepEqual(got.VMIDs, []int{100, 101}) || got.Type != HARuleResourceAffinity {
		t.Fatalf("read back: %+v", got)
	}
	s.VMIDs, s.Disabled, s.Comment = []int{100, 102}, true, ""
	if err := h.b.UpdateHARule(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	r, _ = h.f.haRule("proxy-pair")
	if r.Resources != "vm:100,vm:102" || !bool(r.Disable) || r.Comment != "proxy-operator-ha-rule="+testUID {
		t.Fatalf("rule updated: %+v", r)
	}
	if err := h.b.DeleteHARule(h.ctx, "proxy-pair", testUID); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.f.haRule("proxy-pair"); ok {
		t.Fatal("the rule outlived its delete")
	}
	// Gone: a read is NotFound, a second delete is success without a request.
	if _, err := h.b.GetHARule(h.ctx, "proxy-pair", testUID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read of a gone rule: %v, want NotFound", err)
	}
	before := h.f.calls("DeleteHARule")
	if err := h.b.DeleteHARule(h.ctx, "proxy-pair", testUID); err != nil || h.f.calls("DeleteHARule") != before {
		t.Fatalf("delete of a gone rule: %v, %d requests", err, h.f.calls("DeleteHARule")-before)
	}
}

func TestHARule_nodeAffinity(t *testing.T) {
	h := ruleHarness(t)
	s := HARuleSpec{ID: "on-one", Type: HARuleNodeAffinity, Nodes: map[string]int{"pv1-2": 2, "pv1-1": 0}, Strict: true, VMIDs: []int{100}, UID: testUID}
	if err := h.b.CreateHARule(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	r, _ := h.f.haRule("on-one")
	if r.Nodes != "pv1-1,pv1-2:2" || !bool(r.Strict) || r.Affinity != "" {
		t.Fatalf("rule written: %+v", r)
	}
	got, err := h.b.GetHARule(h.ctx, "on-one", testUID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Nodes, s.Nodes) || !got.Strict {
		t.Fatalf("read back: %+v", got)
	}
}

// A rule of the id that this resource did not make is never written: the create fails
// naming it, with no create request; a marked one of another uid points at import.
func TestHARule_createMeetsTakenID(t *testing.T) {
	h := ruleHarness(t)
	foreign := pveapi.HARule{Rule: "proxy-pair", Type: HARuleResourceAffinity, Affinity: "positive", Resources: "vm:100,vm:101", Comment: "by hand"}
	h.f.putHARule(foreign)
	err := h.b.CreateHARule(h.ctx, pairSpec())
	if err == nil || !strings.Contains(err.Error(), `HA rule "proxy-pair" already exists`) || !strings.Contains(err.Error(), "not made by this provider") ||
		ClassOf(err) != pveapi.Permanent {
		t.Fatalf("create over a foreign rule: %v", err)
	}
	if n := h.f.calls("CreateHARule") + h.f.calls("UpdateHARule") + h.f.calls("DeleteHARule"); n != 0 {
		t.Fatalf("%d writes to rules", n)
	}
	if r, _ := h.f.haRule("proxy-pair"); r.Comment != "by hand" || r.Affinity != "positive" {
		t.Fatalf("foreign rule changed: %+v", r)
	}
	marked := foreign
	marked.Comment = ruleComment("", otherUID)
	h.f.putHARule(marked)
	err = h.b.CreateHARule(h.ctx, pairSpec())
	if err == nil || !strings.Contains(err.Error(), "terraform import") || !strings.Contains(err.Error(), otherUID) {
		t.Fatalf("create over a marked rule of another uid: %v", err)
	}
}

// A rule whose mark is gone or names another uid is reported by the read and refused by the
// update and the delete, which send nothing.
func TestHARule_markGoneNeverWritten(t *testing.T) {
	for name, comment := range map[string]string{
		"gone":      "keep apart",
		"other uid": ruleComment("keep apart", otherUID),
		"no uid":    "proxy-operator-ha-rule=",
	} {
		t.Run(name, func(t *testing.T) {
			h := ruleHarness(t)
			if err := h.b.CreateHARule(h.ctx, pairSpec()); err != nil {
				t.Fatal(err)
			}
			r, _ := h.f.haRule("proxy-pair")
			r.Comment = comment
			h.f.putHARule(r)
			if _, err := h.b.GetHARule(h.ctx, "proxy-pair", testUID); !errors.Is(err, ErrHARuleNotOurs) || errors.Is(err, ErrNotFound) {
				t.Fatalf("read: %v", err)
			}
			s := pairSpec()
			s.Affinity = "positive"
			if err := h.b.UpdateHARule(h.ctx, s); !errors.Is(err, ErrHARuleNotOurs) || ClassOf(err) != pveapi.Permanent {
				t.Fatalf("update: %v", err)
			}
			if err := h.b.DeleteHARule(h.ctx, "proxy-pair", testUID); !errors.Is(err, ErrHARuleNotOurs) {
				t.Fatalf("delete: %v", err)
			}
			if n := h.f.calls("UpdateHARule") + h.f.calls("DeleteHARule"); n != 0 {
				t.Fatalf("%d writes to a rule that is not the resource's", n)
			}
			if got, ok := h.f.haRule("proxy-pair"); !ok || got.Comment != comment || got.Affinity != "negative" {
				t.Fatalf("rule changed: %+v", got)
			}
		})
	}
}

func TestHARule_import(t *testing.T) {
	h := ruleHarness(t)
	h.f.putHARule(pveapi.HARule{Rule: "by-hand", Type: HARuleResourceAffinity, Affinity: "negative", Resources: "vm:100,vm:101"})
	if _, err := h.b.ImportHARule(h.ctx, "by-hand"); !errors.Is(err, ErrHARuleNotOurs) || !strings.Contains(err.Error(), "not made by this provider") {
		t.Fatalf("import of a foreign rule: %v", err)
	}
	if _, err := h.b.ImportHARule(h.ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("import of a missing rule: %v", err)
	}
	if err := h.b.CreateHARule(h.ctx, pairSpec()); err != nil {
		t.Fatal(err)
	}
	got, err := h.b.ImportHARule(h.ctx, "proxy-pair")
	if err != nil || got.UID != testUID || got.Comment != "keep apart" {
		t.Fatalf("import: %+v, %v", got, err)
	}
}

// A rule naming VMs that are not HA resources: Proxmox refuses it, and the message says to
// set ha on the VMs.
func TestHARule_unmanagedVMs(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	err := h.b.CreateHARule(h.ctx, pairSpec())
	if err == nil || !strings.Contains(err.Error(), "vm:100, vm:101 are not HA resources") || !strings.Contains(err.Error(), "set ha on their proxy_vm") ||
		ClassOf(err) != pveapi.Permanent {
		t.Fatalf("create with unmanaged VMs: %v", err)
	}
}

// A rule Proxmox deleted meanwhile (its VMs all purged from HA, as a replacement of both
// does) is made again by the update, with the resource's mark.
func TestHARule_updateRemakesAGoneRule(t *testing.T) {
	h := ruleHarness(t)
	if err := h.b.CreateHARule(h.ctx, pairSpec()); err != nil {
		t.Fatal(err)
	}
	if err := h.f.DeleteHARule(h.ctx, "proxy-pair"); err != nil {
		t.Fatal(err)
	}
	s := pairSpec()
	s.VMIDs = []int{100, 102}
	if err := h.b.UpdateHARule(h.ctx, s); err != nil {
		t.Fatal(err)
	}
	if r, ok := h.f.haRule("proxy-pair"); !ok || r.Resources != "vm:100,vm:102" || r.Comment != "keep apart\nproxy-operator-ha-rule="+testUID {
		t.Fatalf("rule after the update: %+v (%v)", r, ok)
	}
}
