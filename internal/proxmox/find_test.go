package proxmox

import (
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestFindByName_table(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		want  ID
		class pveapi.Class
		msg   string
	}{
		{"one marked VM", func(h *harness) { h.ourRunningVM(testVMID0, testName) }, testID, 0, ""},
		{"a mark without a uid line: no uid to own it by", func(h *harness) { h.f.addOurVM(testVMID0, testName, "") }, ID{}, pveapi.Permanent, "no proxy-operator-uid line"},
		{"none", func(h *harness) {}, ID{}, pveapi.NotFound, `no VM named "proxy-a"`},
		{"unmarked", func(h *harness) { h.f.addVM(&fakeVM{VMID: 300, Name: testName}) }, ID{}, pveapi.Permanent, "carries no proxy-operator-managed=true"},
		{"two", func(h *harness) {
			h.f.addOurVM(300, testName, testUID)
			h.f.addOurVM(301, testName, otherUID)
		}, ID{}, pveapi.Permanent, "VMIDs 300, 301"},
		{"a container of that name is not a candidate", func(h *harness) {
			h.f.addVM(&fakeVM{VMID: 300, Name: testName, Type: "lxc"})
		}, ID{}, pveapi.NotFound, "no VM named"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			got, err := h.b.FindByName(h.ctx, testName)
			if tc.msg == "" {
				if err != nil || got != tc.want {
					t.Fatalf("FindByName = %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			assertClass(t, err, tc.class)
			assertContains(t, err.Error(), tc.msg)
		})
	}
}

func TestFindByVMID_table(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		class pveapi.Class
		msg   string // empty: success
	}{
		{"marked", func(h *harness) { h.ourRunningVM(testVMID0, testName) }, 0, ""},
		{"absent", func(h *harness) {}, pveapi.NotFound, "not in the cluster"},
		{"container", func(h *harness) { h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Type: "lxc"}) }, pveapi.Permanent, "container"},
		{"template", func(h *harness) { h.f.addTemplate(testVMID0, "pv1-1", map[string]string{"name": "t"}) }, pveapi.Permanent, "template"},
		{"mid-clone", func(h *harness) { h.f.addVM(&fakeVM{VMID: testVMID0, Lock: "clone", cloning: true}) }, pveapi.Transient, "being cloned"},
		{"unmarked", func(h *harness) { h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName}) }, pveapi.Permanent, "only VMs created by this provider"},
		// A VM still marked creating: whether an apply will ever finish it is what its proof
		// and its age say, and the error says which.
		{"interrupted create, proved", func(h *harness) { h.addInterrupted(testVMID0, testName, prevUID) }, pveapi.Permanent,
			"check the VM first"},
		{"creating mark without a proof", func(h *harness) {
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Config["description"] = MarkLines{UID: prevUID, CreatedAt: h.clock.Now(), Creating: true}.Format()
			})
		}, pveapi.Permanent, "no apply will finish it (its creating mark carries no proxy-operator-proof line"},
		{"proved creating mark past the window", func(h *harness) {
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: prevUID, CreatedAt: h.clock.Now().Add(-2 * TakeoverWindow)}, testVMID0, testName)
			})
		}, pveapi.Permanent, "no apply will finish it (it is older than the 1h0m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			got, err := h.b.FindByVMID(h.ctx, testVMID0)
			if tc.msg == "" {
				if err != nil || got != testID {
					t.Fatalf("FindByVMID = %v, %v", got, err)
				}
				return
			}
			assertClass(t, err, tc.class)
			assertContains(t, err.Error(), tc.msg, "import")
		})
	}
}

// TestFindByVMID_creatingAdviceSafeFirst: the refusal of a VM marked creating, within the
// takeover window, leads with the reading that keeps a live VM (check it; remove the copied
// lines) and only then offers the apply that would destroy and re-clone it (adv1 #6).
func TestFindByVMID_creatingAdviceSafeFirst(t *testing.T) {
	h := newHarness(t)
	h.addInterrupted(testVMID0, testName, prevUID)
	_, err := h.b.FindByVMID(h.ctx, testVMID0)
	if err == nil {
		t.Fatal("FindByVMID accepted a VM marked creating")
	}
	msg := err.Error()
	check, remove := strings.Index(msg, "check the VM first"), strings.Index(msg, "remove the copied proxy-operator-* lines")
	doNot, finish := strings.Index(msg, "do not apply to finish it"), strings.Index(msg, "apply the configuration that creates it again")
	if check < 0 || remove < 0 || doNot < 0 || finish < 0 || check > doNot || doNot > finish || remove > finish {
		t.Errorf("refusal does not lead with the safe reading (check %d, do not %d, remove %d, finish %d): %s", check, doNot, remove, finish, msg)
	}
}

func TestFindByID_nameMustMatch(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	if got, err := h.b.FindByID(h.ctx, testID); err != nil || got != testID {
		t.Fatalf("FindByID = %v, %v", got, err)
	}
	_, err := h.b.FindByID(h.ctx, ID{VMID: testVMID0, Name: "proxy-b"})
	assertClass(t, err, pveapi.Permanent)
	assertContains(t, err.Error(), `holds VM "proxy-a", not "proxy-b"`)
}
