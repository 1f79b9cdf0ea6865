package proxmox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func preflightSpec() PreflightSpec {
	return PreflightSpec{Node: "pv1-1", TemplateVMID: 9001, DiskGiB: 8, Bridge: "vmbr1", VLANTag: 20}
}

// wantRefusal asserts err is a PreflightError on subject, of class, whose text has subs.
func wantRefusal(t *testing.T, err error, subject Subject, class pveapi.Class, subs ...string) {
	t.Helper()
	var pe *PreflightError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v (%T), want a PreflightError on %s", err, err, subject)
	}
	if pe.Subject != subject {
		t.Errorf("subject %s, want %s (%v)", pe.Subject, subject, err)
	}
	if ClassOf(err) != class {
		t.Errorf("class %v, want %v (%v)", ClassOf(err), class, err)
	}
	assertContains(t, err.Error(), subs...)
}

// readOnly asserts the fake saw only read requests: a preflight touches nothing.
func readOnly(t *testing.T, f *fakeAPI) {
	t.Helper()
	for _, m := range f.methods() {
		switch m {
		case "Version", "NodeStatus", "StorageStatus", "StorageContent", "ClusterResources", "VMConfig", "VMStatus", "TaskStatus", "NodeNetwork":
		default:
			t.Errorf("the preflight called %s", m)
		}
	}
}

func TestPreflight_passesAndIsCachedPerKey(t *testing.T) {
	h := newHarness(t)
	h.b.cfg.Storage = "local-lvm"
	h.f.storages["pv1-1/local-lvm"] = pveapi.StorageStatus{Type: "lvmthin", Content: "rootdir,images", Total: 1 << 40, Avail: 1 << 39, Active: 1, Enabled: 1}
	if err := h.b.Preflight(h.ctx, preflightSpec()); err != nil {
		t.Fatalf("a usable node, storages, template and bridge: %v", err)
	}
	first := len(h.f.log())
	// node status, two storage statuses, the listing, the template config, the network
	if first != 6 {
		t.Errorf("the first preflight made %d requests (%v), want 6", first, h.f.methods())
	}
	for range 50 {
		s := preflightSpec()
		s.DiskGiB = 3 // another VM of the same template: the cached config serves it
		if err := h.b.Preflight(h.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.f.log()); n != first {
		t.Errorf("50 more preflights made %d more requests, want 0", n-first)
	}
	readOnly(t, h.f)
}

func TestPreflight_concurrentCallersShareOneCheck(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	var once sync.Once
	h.f.onCall("NodeStatus", func(ctx context.Context, _ fakeCall) error {
		<-release
		return nil
	})
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Go(func() { errs[i] = h.b.Preflight(h.ctx, preflightSpec()) })
	}
	// Let the callers queue on the in-flight check, then release it.
	for h.f.calls("NodeStatus") == 0 {
		h.clock.advance(0)
	}
	once.Do(func() { close(release) })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{"NodeStatus", "StorageStatus", "ClusterResources", "VMConfig", "NodeNetwork"} {
		if n := h.f.calls(m); n != 1 {
			t.Errorf("%d concurrent preflights made %d %s calls, want 1", len(errs), n, m)
		}
	}
}

func TestPreflight_unknownNode(t *testing.T) {
	h := newHarness(t)
	s := preflightSpec()
	s.Node = "pv9-9"
	err := h.b.Preflight(h.ctx, s)
	wantRefusal(t, err, SubjectNode, pveapi.Permanent, `node "pv9-9" is not a node of the cluster`, "pvecm nodes")
	readOnly(t, h.f)
}

func TestPreflight_nodeDownIsNotCached(t *testing.T) {
	h := newHarness(t)
	h.f.failNext("NodeStatus", fixtureErr("err_595"))
	err := h.b.Preflight(h.ctx, preflightSpec())
	wantRefusal(t, err, SubjectNode, pveapi.Transient, `node "pv1-1" does not answer`)
	if err := h.b.Preflight(h.ctx, preflightSpec()); err != nil {
		t.Errorf("the node answers again, yet: %v", err)
	}
}

func TestPreflight_isoStorage(t *testing.T) {
	for name, tc := range map[string]struct {
		st   *pveapi.StorageStatus // nil: missing
		subs []string
	}{
		"missing":  {nil, []string{`storage "proxy-seeds" (the ISO storage for the seed ISOs) does not exist`, "pvesm status"}},
		"no iso":   {&pveapi.StorageStatus{Content: "backup", Active: 1, Enabled: 1}, []string{"does not hold iso content", "content: backup"}},
		"inactive": {&pveapi.StorageStatus{Content: "iso", Active: 0, Enabled: 1}, []string{"is not active on node pv1-1"}},
		"disabled": {&pveapi.StorageStatus{Content: "iso", Active: 0, Enabled: 0}, []string{"is disabled"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			delete(h.f.storages, "pv1-1/"+fakeISOStorage)
			if tc.st != nil {
				h.f.storages["pv1-1/"+fakeISOStorage] = *tc.st
			}
			wantRefusal(t, h.b.Preflight(h.ctx, preflightSpec()), SubjectISOStorage, pveapi.Permanent, tc.subs...)
			readOnly(t, h.f)
		})
	}
}

func TestPreflight_cloneStorage(t *testing.T) {
	h := newHarness(t)
	h.b.cfg.Storage = "local-lvm-typo"
	wantRefusal(t, h.b.Preflight(h.ctx, preflightSpec()), SubjectStorage, pveapi.Permanent, `storage "local-lvm-typo" (the storage for the clones' disks) does not exist`)

	h = newHarness(t)
	h.b.cfg.Storage = "local"
	h.f.storages["pv1-1/local"] = pveapi.StorageStatus{Content: "iso,vztmpl,backup", Active: 1, Enabled: 1}
	wantRefusal(t, h.b.Preflight(h.ctx, preflightSpec()), SubjectStorage, pveapi.Permanent, "does not hold images content")
}

func TestPreflight_template(t *testing.T) {
	h := newHarness(t)
	s := preflightSpec()
	s.TemplateVMID = 9555
	wantRefusal(t, h.b.Preflight(h.ctx, s), SubjectTemplate, pveapi.Permanent, "template VMID 9555 does not exist")

	h = newHarness(t)
	h.f.addVM(&fakeVM{VMID: 9100, Name: "plain"})
	s.TemplateVMID = 9100
	wantRefusal(t, h.b.Preflight(h.ctx, s), SubjectTemplate, pveapi.Permanent, "is not a template", "point the catalogue (templates) at the VMID of a template", "irreversible", "qm template 9100")

	h = newHarness(t)
	h.f.addTemplate(9000, "pv1-1", map[string]string{"scsi0": "local-lvm:base-9000-disk-0,size=3584M", "ide2": "local-lvm:vm-9000-cloudinit,media=cdrom", "net0": "virtio,bridge=vmbr0"})
	s.TemplateVMID = 9000
	wantRefusal(t, h.b.Preflight(h.ctx, s), SubjectTemplate, pveapi.Permanent, "cloud-init drive")
	readOnly(t, h.f)
}

func TestPreflight_diskBelowTheTemplatesDisk(t *testing.T) {
	h := newHarness(t)
	s := preflightSpec()
	s.DiskGiB = 2
	wantRefusal(t, h.b.Preflight(h.ctx, s), SubjectDisk, pveapi.Permanent,
		"disk_gib = 2 is below the boot disk of template 9001 (3 GiB)", "at least 3")
	s.DiskGiB = 3
	if err := h.b.Preflight(h.ctx, s); err != nil {
		t.Errorf("disk_gib equal to the template's disk: %v", err)
	}
	if h.f.calls("VMConfig") != 1 {
		t.Errorf("%d template config reads, want 1 (cached)", h.f.calls("VMConfig"))
	}
}

func TestPreflight_bridge(t *testing.T) {
	h := newHarness(t)
	s := preflightSpec()
	s.Bridge = "vmbr9"
	wantRefusal(t, h.b.Preflight(h.ctx, s), SubjectBridge, pveapi.Permanent,
		`bridge "vmbr9" is not a bridge of node pv1-1`, "vmbr0, vmbr1", "SDN.Use on /sdn/zones/localnetwork/vmbr9")
	s.Bridge = ""
	if err := h.b.Preflight(h.ctx, s); err != nil {
		t.Errorf("no bridge: %v", err)
	}
	// A listing Proxmox refuses is not a verdict on the bridge.
	h = newHarness(t)
	h.f.failNext("NodeNetwork", fixtureErr("err_not_implemented"))
	s.Bridge = "vmbr9"
	if err := h.b.Preflight(h.ctx, s); err != nil {
		t.Errorf("the network listing failed, yet the preflight refused: %v", err)
	}
}

func TestPreflight_permanentFailureOfACheckStops(t *testing.T) {
	h := newHarness(t)
	h.f.failNext("NodeStatus", fixtureErr("err_auth_failed"))
	err := h.b.Preflight(h.ctx, preflightSpec())
	var pe *PreflightError
	if errors.As(err, &pe) || ClassOf(err) != pveapi.Permanent || !pveapi.IsUnauthorized(err) {
		t.Errorf("a 401: err %v, want the Permanent 401 itself, not a verdict", err)
	}
	// A passing failure leaves the verdict to Create.
	h = newHarness(t)
	h.f.failNext("StorageStatus", fixtureErr("err_locked_clone"))
	if err := h.b.Preflight(h.ctx, preflightSpec()); err != nil {
		t.Errorf("a passing failure: %v", err)
	}
}

// TestDelete_seedOnAMissingStorageIsSkippedWithANote: the VM is destroyed although its seed
// ISO's storage does not exist (there can be no seed there), and the skip is a note.
func TestDelete_seedOnAMissingStorageIsSkippedWithANote(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(105967, testName)
	h.b.cfg.ISOStorage = "seeds-typo"
	ctx, notes := WithNotes(h.ctx)
	if err := h.b.DeleteOwned(ctx, ID{VMID: 105967, Name: testName}, "pv1-1", testUID); err != nil {
		t.Fatalf("Delete with the ISO storage missing: %v", err)
	}
	if h.f.vm(105967) != nil {
		t.Error("the VM was not destroyed")
	}
	lines := notes.Lines()
	if len(lines) != 1 || !strings.Contains(lines[0], "seeds-typo:iso/"+seedFile(testName, testUID)+" was not deleted on node pv1-1") {
		t.Errorf("notes %q", lines)
	}
	// Gone VM, every node: the same skip, no failure (the uid's seed and <name>-seed.iso).
	ctx, notes = WithNotes(h.ctx)
	if err := h.b.DeleteOwned(ctx, ID{VMID: 105967, Name: testName}, "pv1-1", testUID); err != nil {
		t.Fatalf("Delete of the gone VM: %v", err)
	}
	if len(notes.Lines()) != 2 {
		t.Errorf("notes %q", notes.Lines())
	}
}
