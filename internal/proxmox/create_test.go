package proxmox

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// assertRunningVM checks the fake holds a running, provisioned VM of ours at vmid.
func (h *harness) assertProvisioned(vmid int) {
	h.t.Helper()
	v := h.f.vm(vmid)
	if v == nil {
		h.t.Fatalf("no VM at %d", vmid)
	}
	if v.Status != "running" || v.Name != testName {
		h.t.Errorf("VM %d: status %q name %q", vmid, v.Status, v.Name)
	}
	if m := ParseMark(v.Config["description"]); !m.Managed || m.UID != testUID || m.Creating || !m.HasNamespace {
		h.t.Errorf("VM %d: mark %+v, want ours, finished", vmid, m)
	}
	if v.Config["ide2"] != seedVolID(fakeISOStorage, seedFile(testName, testUID))+",media=cdrom" || v.Config["agent"] != "1" {
		h.t.Errorf("VM %d: ide2 %q agent %q", vmid, v.Config["ide2"], v.Config["agent"])
	}
	if _, ok := h.f.iso(v.Node, fakeISOStorage, seedFile(testName, testUID)); !ok {
		h.t.Errorf("no seed ISO on %s", v.Node)
	}
}

func TestCreate_freshVMClonedAtAttemptZeroWithTheMark(t *testing.T) {
	h := newHarness(t)
	var allocated []ID
	vm, err := h.b.Create(h.ctx, h.spec(), func(id ID, node string) {
		allocated = append(allocated, id)
		if node != "pv1-1" {
			t.Errorf("onAllocated node %q", node)
		}
		if h.f.calls("UploadISO") != 0 {
			t.Error("onAllocated after the seed upload, want right after the clone")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(allocated, []ID{testID}) {
		t.Errorf("onAllocated %v, want once with %v", allocated, testID)
	}
	if vm.ID != testID || vm.State != StateRunning || vm.UID != testUID || vm.Node != "pv1-1" {
		t.Errorf("VM %+v", vm)
	}
	clones := h.f.callsOf("Clone")
	if len(clones) != 1 {
		t.Fatalf("%d clones", len(clones))
	}
	a := clones[0].Args
	if clones[0].VMID != 9001 || a["newid"] != "105967" || a["name"] != testName || a["full"] != "1" ||
		a["target"] != "" || a["description"] != CreatingMark(testProofKey, MarkLines{UID: testUID, CreatedAt: h.spec().CreatedAt}, testVMID0, testName)+FormatMarkExtra(h.spec()) {
		t.Errorf("clone call %+v", clones[0])
	}
	h.assertProvisioned(testVMID0)
	// The clone task and the seed upload run side by side: their requests interleave in any
	// order between the clone request and the config write.
	got := h.f.methods()
	cfgAt := slices.Index(got, "SetVMConfig")
	if cfgAt < 0 {
		t.Fatalf("steps %v: no config write", got)
	}
	head, between := got[:3], slices.Clone(got[3:cfgAt])
	slices.Sort(between)
	if want := []string{"ClusterResources", "VMConfig", "Clone"}; !slices.Equal(head, want) {
		t.Errorf("steps %v, want them to start %v", got, want)
	}
	if want := []string{"TaskStatus", "TaskStatus", "UploadISO", "VMConfig"}; !slices.Equal(between, want) {
		t.Errorf("steps between the clone and the config write %v, want %v in any order", got[3:cfgAt], want)
	}
	if want := []string{"SetVMConfig", "Start", "TaskStatus", "VMStatus"}; !slices.Equal(got[cfgAt:cfgAt+len(want)], want) {
		t.Errorf("steps %v, want %v after the upload and the clone", got[cfgAt:], want)
	}
}

// A second Create of the same name (its own uid, as every Create has) never adopts the
// first one's finished VM: it makes its own at the next VMID of the name's sequence, with
// its own seed ISO, and leaves the first untouched (create_before_destroy, a second
// workspace, two resources of one name).
func TestCreate_secondCreateOfTheNameMakesItsOwnVM(t *testing.T) {
	h := newHarness(t)
	first := h.create(h.spec())
	before := maps.Clone(h.f.vm(testVMID0).Config)
	h.f.calllog = nil
	s := h.spec()
	s.AllocKey, s.UID = testUID, otherUID
	s.UserData = []byte("#cloud-config\nhostname: second\n")
	var allocated []ID
	second, err := h.b.Create(h.ctx, s, func(id ID, _ string) { allocated = append(allocated, id) })
	if err != nil {
		t.Fatal(err)
	}
	if first.ID.VMID != testVMID0 || second.ID.VMID != testVMID1 || !slices.Equal(allocated, []ID{{VMID: testVMID1, Name: testName}}) {
		t.Errorf("first %v, second %v (allocated %v), want %d then %d", first.ID, second.ID, allocated, testVMID0, testVMID1)
	}
	if second.UID != otherUID {
		t.Errorf("second VM's uid %q, want %q", second.UID, otherUID)
	}
	if got := h.f.vm(testVMID0).Config; !maps.Equal(got, before) {
		t.Errorf("the first VM was changed:\n%v\nwas\n%v", got, before)
	}
	for _, c := range h.f.log() {
		if c.VMID == testVMID0 && c.Method != "VMConfig" {
			t.Errorf("the second Create called %s on the first VM", c.Method)
		}
		if c.Method == "DeleteVolume" {
			t.Errorf("the second Create deleted %s", c.Args["volid"])
		}
	}
	a, _ := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID))
	b, _ := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, otherUID))
	if len(a) == 0 || len(b) == 0 || seedFile(testName, testUID) == seedFile(testName, otherUID) {
		t.Errorf("seeds %q and %q, want one per VM", a, b)
	}
	if ide2 := h.f.vm(testVMID1).Config["ide2"]; !strings.Contains(ide2, seedFile(testName, otherUID)) {
		t.Errorf("second VM's ide2 %q", ide2)
	}
}

// TestCreate_retryTable is the create's "what a retry finds" table (decision: create-steps) under the
// identity rule (decision: identity-and-adoption):
// the retry is a new Create with a new uid; it finds the interrupted create's VM on the
// name's probe sequence (still marked "creating"), takes it over, and finishes it.
func TestCreate_retryTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		// steps the retry must (true) or must not (false) make
		clone, upload, config, start bool
		// rebuilt: the VM was destroyed and cloned again (every takeover: a proved mark may
		// have been copied onto a VM this provider did not clone, which never gets a seed)
		rebuilt bool
	}{
		{"nothing", func(h *harness) {}, true, true, true, true, false},
		{"submitting the clone: locked, nameless, waited on, taken over", func(h *harness) {
			desc := CreatingMark(testProofKey, MarkLines{UID: prevUID, CreatedAt: h.clock.Now()}, testVMID0, testName)
			if _, err := h.f.Clone(h.ctx, "pv1-1", 9001, pveapi.CloneParams{NewID: testVMID0, Name: testName, Description: desc}); err != nil {
				h.t.Fatal(err)
			}
			n := 0
			h.f.onCall("VMConfig", func(_ context.Context, c fakeCall) error {
				if c.VMID == testVMID0 {
					if n++; n == 3 {
						h.f.finishTasks() // the clone ends while we wait
					}
				}
				return nil
			})
		}, true, true, true, true, true},
		{"the clone: takes over the stopped VM, rebuilt", func(h *harness) { h.addInterrupted(testVMID0, testName, prevUID) }, true, true, true, true, true},
		{"steps 5 to 7: the VM may have booted, rebuilt", func(h *harness) {
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, prevUID), []byte("old seed"))
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Config["ide2"] = seedVolID(fakeISOStorage, seedFile(testName, prevUID)) + ",media=cdrom"
				v.Config["tags"] = ManagedTag
				bindInterrupted(h, v, prevUID) // the config step binds the mark (decision: instance-binding)
			})
		}, true, true, true, true, true},
		{"the start: running, rebuilt", func(h *harness) {
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, prevUID), []byte("old seed"))
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Status, v.QMP = "running", "running"
				v.Config["ide2"] = seedVolID(fakeISOStorage, seedFile(testName, prevUID)) + ",media=cdrom"
				bindInterrupted(h, v, prevUID)
			})
		}, true, true, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			h.f.calllog = nil
			vm := h.create(h.spec())
			if vm.ID != testID {
				t.Errorf("ID %v", vm.ID)
			}
			for m, want := range map[string]bool{"Clone": tc.clone, "UploadISO": tc.upload, "SetVMConfig": tc.config, "Start": tc.start, "Destroy": tc.rebuilt} {
				if got := h.f.calls(m) > 0; got != want {
					t.Errorf("%s called %v, want %v", m, got, want)
				}
			}
			for _, c := range h.f.callsOf("DeleteVolume") {
				if c.Args["volid"] != seedVolID(fakeISOStorage, seedFile(testName, prevUID)) {
					t.Errorf("deleted %s, want only the interrupted create's seed", c.Args["volid"])
				}
			}
			if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, prevUID)); ok {
				t.Error("the interrupted create's seed ISO is left")
			}
			if h.f.vmCount() != 1 {
				t.Errorf("%d VMs, want 1", h.f.vmCount())
			}
			h.assertProvisioned(testVMID0)
			if b, _ := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); tc.upload && string(b) != "ISO:"+testName {
				t.Errorf("seed %q not written", b)
			}
		})
	}
}

// TestCreate_allocationTable is the VMID allocation with its ownership check
// (decision: vmid-function, decision: identity-and-adoption).
func TestCreate_allocationTable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(h *harness)
		vmid    int          // where our VM ends up; 0: an error
		class   pveapi.Class // for errors
		msg     []string     // in the error
		configs int          // VMConfig calls (-1: not checked)
		waited  bool         // whether Create slept on a lock
		spec    func(s *Spec)
	}{
		{name: "foreign VM at attempt 0 is probed past without a config read", setup: func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: "web01"})
		}, vmid: testVMID1, configs: 1},
		{name: "foreign VM under a lock is probed past without waiting", setup: func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: "web01", Lock: "snapshot-delete"})
		}, vmid: testVMID1, configs: 1},
		{name: "container at attempt 0 is foreign", setup: func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Type: "lxc"})
		}, vmid: testVMID1, configs: 1},
		{name: "template at attempt 0 is foreign", setup: func(h *harness) {
			h.f.addTemplate(testVMID0, "pv1-1", map[string]string{"name": testName})
		}, vmid: testVMID1, configs: 1},
		{name: "a finished VM of this name (another resource's) at attempt 0 is skipped, not adopted", setup: func(h *harness) {
			h.addFinished(testVMID0, testName, otherUID)
		}, vmid: testVMID1, configs: 3},
		{name: "a finished VM of this name at another VMID coexists", setup: func(h *harness) {
			h.addFinished(150000, testName, otherUID)
		}, vmid: testVMID0, configs: 2},
		// A mark without this provider's lines whose uid happens to be the name's allocation
		// key is no proof of anything: refused like the operator's, never skipped as
		// ours-by-name.
		{name: "a mark without this provider's lines, uid = the allocation key, is refused", spec: func(s *Spec) {
			s.AllocKey, s.UID = testUID, prevUID
		}, setup: func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = FormatMark(testUID, h.b.clock.Now()) })
		}, class: pveapi.Permanent, msg: []string{"VMID 105967", "did not create", "terraform import proxy_vm.<name> vms/105967/proxy-a"}, configs: 1},
		{name: "an interrupted create of this name in another namespace is skipped", setup: func(h *harness) {
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Config["description"] = MarkLines{UID: prevUID, Namespace: "team-b", Creating: true}.Format()
			})
		}, vmid: testVMID1, configs: 3},
		{name: "an operator's VM of our name (mark without uid) is refused with the import command", setup: func(h *harness) {
			h.f.addOlderVM(150000, testName, "")
		}, class: pveapi.Permanent, msg: []string{"VMID 150000", "carries no uid line", "add a line proxy-operator-uid=", "terraform import proxy_vm.<name> vms/150000/proxy-a"}, configs: 1},
		{name: "nameless clone at attempt 0 is waited on, then foreign", setup: func(h *harness) {
			h.f.addTemplate(9100, "pv1-1", nil)
			if _, err := h.f.Clone(h.ctx, "pv1-1", 9100, pveapi.CloneParams{NewID: testVMID0, Name: "proxy-b"}); err != nil {
				h.t.Fatal(err)
			}
			n := 0
			h.f.onCall("VMConfig", func(_ context.Context, c fakeCall) error {
				if c.VMID == testVMID0 {
					if n++; n == 2 {
						h.f.finishTasks()
					}
				}
				return nil
			})
		}, vmid: testVMID1, configs: 3, waited: true},
		{name: "a lock that never clears is transient after the clone budget", setup: func(h *harness) {
			if _, err := h.f.Clone(h.ctx, "pv1-1", 9001, pveapi.CloneParams{NewID: testVMID0, Name: "proxy-b"}); err != nil {
				h.t.Fatal(err)
			}
		}, class: pveapi.Transient, msg: []string{"VMID 105967", "still locked (clone)", "qm unlock 105967"}, configs: -1, waited: true},
		{name: "two finished VMs of our name coexist", setup: func(h *harness) {
			h.addFinished(110000, testName, otherUID)
			h.addFinished(120000, testName, prevUID)
		}, vmid: testVMID0, configs: 3},
		{name: "our name without a mark is refused", setup: func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Config: map[string]string{"description": "hand-made"}})
		}, class: pveapi.Permanent, msg: []string{"VMID 105967", "without the", "never takes over", "vms/105967/proxy-a"}, configs: 1},
		{name: "our name with another uid and no provider lines (the operator's) is refused with the import command", setup: func(h *harness) {
			h.f.addOlderVM(testVMID0, testName, otherUID)
		}, class: pveapi.Permanent, msg: []string{"VMID 105967", otherUID, "terraform import proxy_vm.<name> vms/105967/proxy-a"}, configs: 1},
		{name: "our name at a probe VMID after the lookup (clone race) is refused", setup: func(h *harness) {
			h.f.onCall("Clone", func(_ context.Context, c fakeCall) error {
				if c.Args["newid"] == strconv.Itoa(testVMID0) && h.f.vm(testVMID0) == nil {
					h.f.addOlderVM(testVMID0, testName, otherUID)
				}
				return nil
			})
		}, class: pveapi.Permanent, msg: []string{otherUID}, configs: 1},
		{name: "clone race lost to a foreign VM probes on", setup: func(h *harness) {
			h.f.onCall("Clone", func(_ context.Context, c fakeCall) error {
				if c.Args["newid"] == strconv.Itoa(testVMID0) && h.f.vm(testVMID0) == nil {
					h.f.addVM(&fakeVM{VMID: testVMID0, Name: "web01"})
				}
				return nil
			})
		}, vmid: testVMID1, configs: 1},
		{name: "clone race lost to an interrupted create of this name: taken over", setup: func(h *harness) {
			raced := false
			h.f.onCall("Clone", func(_ context.Context, c fakeCall) error {
				if c.Args["newid"] == strconv.Itoa(testVMID0) && h.f.vm(testVMID0) == nil && !raced {
					raced = true // once: the takeover destroys it and clones afresh
					h.addInterrupted(testVMID0, testName, prevUID)
				}
				return nil
			})
		}, vmid: testVMID0, configs: -1},
		{name: "a hibernated interrupted create is refused, not waited on", setup: func(h *harness) {
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "suspended" })
		}, class: pveapi.Permanent, msg: []string{"hibernated", "resume or destroy"}, configs: 1},
		{name: "a listed \"VM <vmid>\" entry (a stale snapshot of a clone) is judged by its config: taken over", setup: func(h *harness) {
			h.addInterrupted(testVMID0, testName, prevUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.ListedName = "VM 105967" })
		}, vmid: testVMID0, configs: -1},
		{name: "a foreign hibernated VM is probed past", setup: func(h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: "web01", Lock: "suspended"})
		}, vmid: testVMID1, configs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			h.f.calllog = nil
			s := h.spec()
			if tc.spec != nil {
				tc.spec(&s)
			}
			vm, err := h.b.Create(h.ctx, s, nil)
			if tc.vmid == 0 {
				assertClass(t, err, tc.class)
				assertContains(t, err.Error(), tc.msg...)
				if h.f.vm(testVMID1) != nil {
					t.Error("a refused Create cloned anyway")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if vm.ID.VMID != tc.vmid {
					t.Errorf("VMID %d, want %d", vm.ID.VMID, tc.vmid)
				}
				v := h.f.vm(tc.vmid)
				if v == nil {
					t.Fatalf("no VM at %d", tc.vmid)
				}
				if m := ParseMark(v.Config["description"]); v.Name != testName || !m.Managed || m.UID != s.UID || m.Creating {
					t.Errorf("no finished VM of ours at %d", tc.vmid)
				}
				ours := 0
				for _, r := range mustList(t, h) {
					if c := h.f.vm(r.VMID); c != nil && r.Type == "qemu" && ParseMark(c.Config["description"]).UID == s.UID {
						ours++
					}
				}
				if ours != 1 {
					t.Errorf("%d VMs carry this create's uid, want 1", ours)
				}
			}
			if tc.configs >= 0 {
				var n int
				for _, c := range h.f.log() {
					if c.Method == "VMConfig" {
						n++
					}
					if c.Method == "Clone" || c.Method == "UploadISO" {
						break
					}
				}
				if n != tc.configs {
					t.Errorf("%d config reads before the clone, want %d", n, tc.configs)
				}
			}
			if waited := len(h.clock.slept()) > 0; waited != tc.waited {
				t.Errorf("waited %v (sleeps %v), want %v", waited, h.clock.slept(), tc.waited)
			}
		})
	}
}

// TestCreate_vmidRangeExhaustedIsPermanentNamingTheRange: the same name probes the same
// VMIDs on every run, so a range whose probed VMIDs all hold other guests is Permanent
// (retrying never helps), says what to change, and names none of those guests' VMIDs.
func TestCreate_vmidRangeExhaustedIsPermanentNamingTheRange(t *testing.T) {
	h := newHarness(t)
	h.b.cfg.VMIDMin, h.b.cfg.VMIDMax = 100, 103
	for i := 100; i <= 103; i++ {
		h.f.addVM(&fakeVM{VMID: i, Name: "web" + strconv.Itoa(i)})
	}
	err := h.createFails(h.spec())
	assertClass(t, err, pveapi.Permanent)
	assertContains(t, err.Error(), "no free VMID", "4 VMIDs", "vmid_range 100 to 103", "widen vmid_range")
	for i := 100; i <= 103; i++ {
		if strings.Contains(err.Error(), "VMID "+strconv.Itoa(i)) {
			t.Errorf("the error names guest %d: %v", i, err)
		}
	}
	if h.f.calls("VMConfig") != 1 || h.f.calls("Clone") != 0 {
		t.Errorf("%d config reads (want only the template's), %d clones", h.f.calls("VMConfig"), h.f.calls("Clone"))
	}
}

// TestCreate_vmidRangeExhaustedReleasesTheVMID: the last free VMID is taken by another
// guest while the clone request is on its way (Proxmox refuses it: config file exists).
// onAllocated was given that VMID before the request; once no VMID is left it is told to
// forget it (ID{}), so no state entry points at the other guest, and the error names no
// VMID as the VM's.
func TestCreate_vmidRangeExhaustedReleasesTheVMID(t *testing.T) {
	h := newHarness(t)
	h.b.cfg.VMIDMin, h.b.cfg.VMIDMax = 100, 101
	free := 101
	h.f.addVM(&fakeVM{VMID: 100, Name: "web100"})
	h.f.onCall("Clone", func(context.Context, fakeCall) error {
		h.f.addVM(&fakeVM{VMID: free, Name: "db-late"})
		return nil
	})
	var got []ID
	_, err := h.b.Create(h.ctx, h.spec(), func(id ID, _ string) { got = append(got, id) })
	assertClass(t, err, pveapi.Permanent)
	if len(got) != 2 || got[0].VMID != free || got[1] != (ID{}) {
		t.Errorf("onAllocated calls %v: want VMID %d, then ID{} (released)", got, free)
	}
	var e *Error
	if !errors.As(err, &e) || e.VMID != 0 {
		t.Errorf("the error carries VMID %d, want none: %v", e.VMID, err)
	}
}

func TestCreate_thirtyTwoProbesAtMost(t *testing.T) {
	h := newHarness(t)
	h.b.cfg.VMIDMin, h.b.cfg.VMIDMax = 100, 1000
	for a := range 40 {
		h.f.addVM(&fakeVM{VMID: vmidFor(testUID, a, 100, 1000), Name: "web" + strconv.Itoa(a)})
	}
	err := h.createFails(h.spec())
	assertContains(t, err.Error(), "32 VMIDs", "vmid_range 100 to 1000")
}

func TestCreate_templateChecksRefuseBeforeAnyClone(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  map[string]string // template config at 9002; nil: no template there
		spec func(s *Spec)
		msg  string
	}{
		{"template missing", nil, nil, "does not exist"},
		{"not a template", map[string]string{"name": "plain", "scsi0": "l:d,size=3G", "net0": "virtio=AA:BB:CC:DD:EE:FF"}, nil, "is not a template"},
		{"cloud-init drive (template 9000)", fixtureConfig("vm_config_template_9000"), nil, "cloud-init drive on ide2"},
		{"a disk on ide2", map[string]string{"template": "1", "scsi0": "l:d,size=3G", "ide2": "local-lvm:base-9002-disk-1,size=1G", "net0": "virtio=AA:BB:CC:DD:EE:FF"}, nil, "disk on ide2"},
		{"no net0 with a bridge", map[string]string{"template": "1", "scsi0": "l:d,size=3G"}, func(s *Spec) { s.Bridge = "vmbr1" }, "no net0"},
		{"no net0 with a VLAN tag", map[string]string{"template": "1", "scsi0": "l:d,size=3G"}, func(s *Spec) { s.VLANTag = 4 }, "no net0"},
		{"no boot disk with a disk size", map[string]string{"template": "1", "net0": "virtio=AA:BB:CC:DD:EE:FF"}, func(s *Spec) { s.DiskGiB = 8 }, "no boot disk"},
		{"boot disk without size with a disk size", map[string]string{"template": "1", "scsi0": "l:d"}, func(s *Spec) { s.DiskGiB = 8 }, "readable size="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.cfg != nil {
				v := h.f.addVM(&fakeVM{VMID: 9002, Name: "tmpl", Config: tc.cfg})
				h.f.mutate(9002, func(f *fakeVM) { f.Template = tc.cfg["template"] == "1"; _ = v })
			}
			s := h.spec()
			s.TemplateVMID = 9002
			if tc.spec != nil {
				tc.spec(&s)
			}
			err := h.createFails(s)
			assertClass(t, err, pveapi.Permanent)
			assertContains(t, err.Error(), tc.msg)
			if h.f.calls("Clone") != 0 || h.f.vm(testVMID0) != nil {
				t.Error("a refused template was cloned")
			}
		})
	}
}

func TestCreate_cloneTargetAndStorage(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.b.cfg.Storage = "ceph-vm"
	sharedTemplate(h.f, 9001) // PVE clones across nodes only from shared storage
	s := h.spec()
	s.Node = "pv1-2"
	vm := h.create(s)
	c := h.f.callsOf("Clone")[0]
	if c.Node != "pv1-1" || c.Args["target"] != "pv1-2" || c.Args["storage"] != "ceph-vm" {
		t.Errorf("clone %+v", c)
	}
	if vm.Node != "pv1-2" || h.f.vm(testVMID0).Node != "pv1-2" {
		t.Errorf("VM on %q", vm.Node)
	}
	if up := h.f.callsOf("UploadISO")[0]; up.Node != "pv1-2" || up.Args["filename"] != seedFile(testName, testUID) || up.Args["storage"] != fakeISOStorage {
		t.Errorf("upload %+v", up)
	}
}

func TestCreate_sameNodeHasNoTarget(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.create(h.spec())
	if c := h.f.callsOf("Clone")[0]; c.Args["target"] != "" || c.Args["storage"] != "" {
		t.Errorf("clone %+v", c)
	}
}

func TestCreate_configWriteTable(t *testing.T) {
	const mac = "virtio=BC:24:11:5A:90:01"
	for _, tc := range []struct {
		name  string
		tmpl  map[string]string // merged over template 9001
		spec  func(s *Spec)
		check func(t *testing.T, p map[string]string)
	}{
		{"defaults: no net0 written", nil, nil, func(t *testing.T, p map[string]string) {
			want := map[string]string{"cores": "2", "memory": "2048", "agent": "1", "tags": "proxy_operator",
				"ide2": "proxy-seeds:iso/proxy-a-" + testUID + "-seed.iso,media=cdrom", "onboot": "1"}
			// The description binds the mark to the clone (decision: instance-binding).
			if m := ParseMark(p["description"]); m.Instance == "" || !m.Creating || m.UID != testUID {
				t.Errorf("description %q: want the creating mark with an instance line", p["description"])
			}
			delete(p, "description")
			if len(p) != len(want) {
				t.Errorf("params %v, want %v", p, want)
			}
			for k, v := range want {
				if p[k] != v {
					t.Errorf("%s=%q, want %q", k, p[k], v)
				}
			}
		}},
		{"template tags kept", map[string]string{"tags": "web;Prod"}, nil, func(t *testing.T, p map[string]string) {
			if p["tags"] != "web;prod;proxy_operator" {
				t.Errorf("tags %q", p["tags"])
			}
		}},
		{"onboot off", nil, func(s *Spec) { s.OnBoot = false }, func(t *testing.T, p map[string]string) {
			if p["onboot"] != "0" {
				t.Errorf("onboot %q", p["onboot"])
			}
		}},
		{"VLAN tag appended keeping MAC and options", map[string]string{"net0": mac + ",bridge=vmbr0,firewall=1"}, func(s *Spec) { s.VLANTag = 4 },
			func(t *testing.T, p map[string]string) {
				if p["net0"] != mac+",bridge=vmbr0,firewall=1,tag=4" {
					t.Errorf("net0 %q", p["net0"])
				}
			}},
		{"bridge replaced in place", map[string]string{"net0": mac + ",bridge=vmbr0,tag=9"}, func(s *Spec) { s.Bridge = "vmbr4" },
			func(t *testing.T, p map[string]string) {
				if p["net0"] != mac+",bridge=vmbr4,tag=9" {
					t.Errorf("net0 %q", p["net0"])
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.f.mutate(9001, func(v *fakeVM) {
				for k, val := range tc.tmpl {
					v.Config[k] = val
				}
			})
			s := h.spec()
			if tc.spec != nil {
				tc.spec(&s)
			}
			h.create(s)
			args := h.f.callsOf("SetVMConfig")[0].Args
			if args["digest"] == "" {
				t.Error("the config write carries no digest: it is not a compare-and-swap")
			}
			delete(args, "digest")
			tc.check(t, args)
		})
	}
}

func TestCreate_resizeOnlyWhenLarger(t *testing.T) {
	for _, tc := range []struct {
		disk   int
		resize string // "": no resize
	}{{0, ""}, {2, ""}, {3, ""}, {8, "8G"}} {
		t.Run(strconv.Itoa(tc.disk), func(t *testing.T) {
			h := newHarness(t)
			h.f.taskPolls = 1
			s := h.spec()
			s.DiskGiB = tc.disk
			h.create(s)
			rs := h.f.callsOf("Resize")
			if tc.resize == "" {
				if len(rs) != 0 {
					t.Errorf("resized %v", rs)
				}
				return
			}
			if len(rs) != 1 || rs[0].Args["disk"] != "scsi0" || rs[0].Args["size"] != tc.resize {
				t.Fatalf("resize calls %v", rs)
			}
			if got := h.f.vm(testVMID0).Config["scsi0"]; !strings.Contains(got, "size="+tc.resize) {
				t.Errorf("scsi0 %q: the resize task was not waited on", got)
			}
			// The start comes after the resize task finished.
			m := h.f.methods()
			if slices.Index(m, "Start") < slices.Index(m, "Resize")+2 {
				t.Errorf("start before the resize task ended: %v", m)
			}
		})
	}
}

func TestCreate_vmThatStopsAfterStartIsTransient(t *testing.T) {
	h := newHarness(t)
	h.f.onCall("VMStatus", func(context.Context, fakeCall) error {
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Status = "stopped" })
		return nil
	})
	err := h.createFails(h.spec())
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "stopped right after it was started", "VMID 105967")
}

func TestCreate_runningBudgetIsTransient(t *testing.T) {
	h := newHarness(t)
	h.f.onCall("VMStatus", func(context.Context, fakeCall) error {
		h.f.mutate(testVMID0, func(v *fakeVM) { v.QMP = "prelaunch" })
		return nil
	})
	err := h.createFails(h.spec())
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "did not reach running within 1m0s", `"prelaunch"`)
}

func TestCreate_startTaskWarningsCountAsSuccess(t *testing.T) {
	h := newHarness(t)
	h.f.failTask("qmstart", fixtureExit("task_status_warnings"))
	h.f.onCall("VMStatus", func(context.Context, fakeCall) error { // the failed-task path has no effect
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = "running", "running" })
		return nil
	})
	h.create(h.spec())
}

func TestCreate_cloneTaskFailureIsTransient(t *testing.T) {
	h := newHarness(t)
	h.f.failTask("qmclone", "clone failed: no space left on device")
	err := h.createFails(h.spec())
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "no space left on device")
}

func TestCreate_doesNotExistInsideCreateIsTransient(t *testing.T) {
	h := newHarness(t)
	h.f.onCall("SetVMConfig", func(context.Context, fakeCall) error { h.f.remove(testVMID0); return nil })
	var allocated bool
	_, err := h.b.Create(h.ctx, h.spec(), func(ID, string) { allocated = true })
	assertClass(t, err, pveapi.Transient)
	if !allocated {
		t.Error("onAllocated not called before the failure")
	}
}

func TestCreate_waitsForTheAgentsAddress(t *testing.T) {
	h := newHarness(t)
	n := 0
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		if n++; n == 3 {
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		}
		return nil
	})
	s := h.spec()
	s.WaitForIP = true
	vm := h.create(s)
	if vm.IP != "192.168.0.150" || vm.State != StateRunning || n != 3 {
		t.Errorf("IP %q state %q after %d agent calls", vm.IP, vm.State, n)
	}
}

// TestCreate_addressWaitAsksTheAgentOnly: while the agent answers "not running", a poll
// is one agent request, no status/current read.
func TestCreate_addressWaitAsksTheAgentOnly(t *testing.T) {
	h := newHarness(t)
	n := 0
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		if n++; n == 5 {
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		}
		return nil
	})
	s := h.spec()
	s.WaitForIP = true
	if vm := h.create(s); vm.IP != "192.168.0.150" {
		t.Fatalf("IP %q", vm.IP)
	}
	m := h.f.methods()
	first, last := slices.Index(m, "AgentNetworkInterfaces"), -1
	for i, c := range m {
		if c == "AgentNetworkInterfaces" {
			last = i
		}
	}
	if n != 5 || first < 0 {
		t.Fatalf("%d agent calls: %v", n, m)
	}
	for _, c := range m[first:last] {
		if c != "AgentNetworkInterfaces" {
			t.Errorf("the address wait made %s between agent polls: %v", c, m[first:last+1])
		}
	}
}

// TestCreate_addressWaitChecksTheStatusWhenTheAgentSaysVMNotRunning keeps the address wait's
// mapping: "VM <vmid> not running" is checked against status/current; stopped is Transient
// at once, running (the answer raced a start) goes on waiting.
func TestCreate_addressWaitChecksTheStatusWhenTheAgentSaysVMNotRunning(t *testing.T) {
	notRunning := fixtureErrSub("err_vm_not_running", "199999", strconv.Itoa(testVMID0))
	t.Run("stopped", func(t *testing.T) {
		h := newHarness(t)
		h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
			if h.f.calls("AgentNetworkInterfaces") == 2 {
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Status = "stopped" })
			}
			return nil
		})
		s := h.spec()
		s.WaitForIP = true
		err := h.createFails(s)
		assertClass(t, err, pveapi.Transient)
		assertContains(t, err.Error(), "stopped", "while waiting for its address")
		// The agent's answer checked with status/current, then (the create failed after
		// its clone) the mark read once: a takeover would say so.
		if m := h.f.methods(); m[len(m)-1] != "VMConfig" || m[len(m)-2] != "VMStatus" || m[len(m)-3] != "AgentNetworkInterfaces" {
			t.Errorf("calls %v: want the agent's answer checked with status/current, then the mark read", m)
		}
		if n := h.f.calls("AgentNetworkInterfaces"); n != 2 {
			t.Errorf("%d agent calls, want 2 (no wait after the VM stopped)", n)
		}
	})
	t.Run("running", func(t *testing.T) {
		h := newHarness(t)
		h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
			if h.f.calls("AgentNetworkInterfaces") == 3 {
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
			}
			return nil
		})
		h.f.failNext("AgentNetworkInterfaces", notRunning)
		s := h.spec()
		s.WaitForIP = true
		if vm := h.create(s); vm.IP != "192.168.0.150" {
			t.Fatalf("IP %q", vm.IP)
		}
		m := h.f.methods()
		i := slices.Index(m, "AgentNetworkInterfaces")
		if i < 0 || m[i+1] != "VMStatus" || m[i+2] != "AgentNetworkInterfaces" {
			t.Errorf("calls %v: want the VM-not-running answer checked with one status read, then the agent again", m)
		}
	})
}

func TestCreate_noAddressWaitWithoutWaitForIP(t *testing.T) {
	h := newHarness(t)
	vm := h.create(h.spec())
	if h.f.calls("AgentNetworkInterfaces") != 0 || vm.IP != "" {
		t.Errorf("agent called %d times", h.f.calls("AgentNetworkInterfaces"))
	}
}

func TestCreate_addressWaitBoundedByContext(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(h.ctx)
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		if h.f.calls("AgentNetworkInterfaces") == 20 {
			cancel()
		}
		return nil
	})
	s := h.spec()
	s.WaitForIP = true
	var id ID
	_, err := h.b.Create(ctx, s, func(i ID, _ string) { id = i })
	assertClass(t, err, pveapi.Transient)
	// Cancelled (Ctrl-C): an interrupt, not a timeout or a guest without the agent.
	assertContains(t, err.Error(), "interrupted while waiting for the guest agent", "QEMU guest agent is not running")
	for _, wrong := range []string{"before the timeout", "must run qemu-guest-agent"} {
		if strings.Contains(err.Error(), wrong) {
			t.Errorf("an interrupt says %q: %v", wrong, err)
		}
	}
	if id != testID {
		t.Errorf("onAllocated %v", id)
	}
	if h.f.calls("AgentNetworkInterfaces") != 20 {
		t.Errorf("%d agent calls", h.f.calls("AgentNetworkInterfaces"))
	}
}

// expiredCtx is a context whose deadline passes when expire is called (the fake clock
// never lets a real deadline pass).
type expiredCtx struct {
	context.Context
	done chan struct{}
}

func (c *expiredCtx) expire()               { close(c.done) }
func (c *expiredCtx) Done() <-chan struct{} { return c.done }
func (c *expiredCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestCreate_addressWaitTimeoutSaysWhatTheGuestNeeds: the create's timeout passing while the
// agent never answered says the address did not come before the timeout, and what the guest
// needs.
func TestCreate_addressWaitTimeoutSaysWhatTheGuestNeeds(t *testing.T) {
	h := newHarness(t)
	ctx := &expiredCtx{Context: h.ctx, done: make(chan struct{})}
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		if h.f.calls("AgentNetworkInterfaces") == 5 {
			ctx.expire()
		}
		return nil
	})
	s := h.spec()
	s.WaitForIP = true
	_, err := h.b.Create(ctx, s, nil)
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "no IPv4 address", "before the timeout", "QEMU guest agent is not running", "wait_for_ip = false")
}

func TestCreate_cloudInitSentinelNeverLoggedOrInErrors(t *testing.T) {
	const sentinel = "SENTINEL-cloud-init-7f3a9c"
	h := newHarness(t)
	h.b.buildSeed = nocloud.Build // the real builder: its errors and ours must not carry the text
	s := h.spec()
	s.UserData = []byte("#cloud-config\nwrite_files:\n- content: " + sentinel + "\n")
	s.WaitForIP = true
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		return nil
	})
	h.create(s)
	if iso, _ := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); !strings.Contains(string(iso), sentinel) {
		t.Error("the seed does not carry the user-data (the test would prove nothing)")
	}
	// A failing Create too.
	h2 := newHarness(t)
	h2.b.buildSeed = nocloud.Build
	h2.f.failNext("SetVMConfig", fixtureErr("err_bad_param"))
	err := h2.createFails(s)
	var logs strings.Builder
	logs.WriteString(h.logs.String())
	logs.WriteString(h2.logs.String())
	if strings.Contains(logs.String(), sentinel) || strings.Contains(err.Error(), sentinel) {
		t.Error("the cloud-init text reached a log line or an error")
	}
	assertContains(t, logs.String(), `"cloud_init_bytes":`+strconv.Itoa(len(s.UserData)), "proxmox vm ensured running", "proxmox vm create failed")
	if !strings.Contains(logs.String(), `"@level":"trace"`) {
		t.Error("the logger did not run at TRACE")
	}
}

// Concurrent Creates of one name (two resources of one name in a configuration) are
// serialised by the name lock, and each makes its own VM: never two resources on one VM.
func TestCreate_concurrentSameNameSerialised(t *testing.T) {
	h := newHarness(t)
	var wg sync.WaitGroup
	uids := []string{testUID, otherUID, prevUID}
	ids := make([]ID, len(uids))
	for i, uid := range uids {
		wg.Go(func() {
			s := h.spec()
			s.AllocKey, s.UID = testUID, uid
			vm, err := h.b.Create(h.ctx, s, nil)
			if err != nil {
				t.Error(err)
			}
			ids[i] = vm.ID
		})
	}
	wg.Wait()
	if h.f.calls("Clone") != 3 || h.f.vmCount() != 3 {
		t.Errorf("%d clones, %d guests", h.f.calls("Clone"), h.f.vmCount())
	}
	seen := map[int]string{}
	for i, id := range ids {
		if prev, dup := seen[id.VMID]; dup || id.Name != testName {
			t.Errorf("ID %v (uid %s) shared with %s", id, uids[i], prev)
		}
		seen[id.VMID] = uids[i]
		if m := ParseMark(h.f.vm(id.VMID).Config["description"]); m.UID != uids[i] || m.Creating {
			t.Errorf("VM %d mark %+v, want uid %s finished", id.VMID, m, uids[i])
		}
	}
	if h.b.locks.size() != 0 {
		t.Error("name lock left behind")
	}
}

func TestCreate_twoResourcesOnOneVMIDBothLand(t *testing.T) {
	h := newHarness(t)
	h.b.cfg.VMIDMin, h.b.cfg.VMIDMax = 100, 101
	a, b := h.spec(), h.spec()
	b.Name, b.UID = "proxy-b", testUID+"-b" // different resource, may share probe VMIDs
	var wg sync.WaitGroup
	for _, s := range []Spec{a, b} {
		wg.Go(func() {
			if _, err := h.b.Create(h.ctx, s, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if h.f.vmCount() != 2 {
		t.Errorf("%d VMs, want 2", h.f.vmCount())
	}
}

func TestCreate_cancelledContextReturnsPromptly(t *testing.T) {
	for _, method := range []string{"ClusterResources", "Clone", "TaskStatus", "UploadISO", "Start", "VMStatus"} {
		t.Run(method, func(t *testing.T) {
			h := newHarness(t)
			h.f.onCall(method, func(ctx context.Context, _ fakeCall) error { <-ctx.Done(); return ctx.Err() })
			ctx, cancel := context.WithCancel(h.ctx)
			go func() {
				waitFor(t, func() bool { return h.f.calls(method) > 0 })
				cancel()
			}()
			_, err := h.b.Create(ctx, h.spec(), nil)
			assertClass(t, err, pveapi.Transient)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err %v does not wrap context.Canceled", err)
			}
		})
	}
}

func TestCreate_invalidSpecIsPermanentWithoutARequest(t *testing.T) {
	for name, mut := range map[string]func(s *Spec){
		"no name":         func(s *Spec) { s.Name = "" },
		"slash in name":   func(s *Spec) { s.Name = "a/b" },
		"no uid":          func(s *Spec) { s.UID = "" },
		"no template":     func(s *Spec) { s.TemplateVMID = 0 },
		"VLAN too large":  func(s *Spec) { s.VLANTag = 4095 },
		"negative disk":   func(s *Spec) { s.DiskGiB = -1 },
		"negative memory": func(s *Spec) { s.MemoryMiB = -1 },
		"unknown node":    func(s *Spec) { s.Node = "pv9-9" },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			s := h.spec()
			mut(&s)
			assertClass(t, h.createFails(s), pveapi.Permanent)
			if h.f.calls("") != 0 {
				t.Error("made a request")
			}
		})
	}
}

func TestCreate_singleNodeSelectedWhenNodeEmpty(t *testing.T) {
	h := newHarness(t)
	s := h.spec()
	s.Node = ""
	if vm := h.create(s); vm.Node != "pv1-1" {
		t.Errorf("node %q", vm.Node)
	}
}

func TestCreate_outcomeLine(t *testing.T) {
	var logs strings.Builder
	h := newHarness(t)
	ctx := tflog.NewSubsystem(tflogtest.RootLogger(context.Background(), &logs), LogSubsystem)
	if _, err := h.b.Create(ctx, h.spec(), nil); err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(l, "proxmox vm ensured running") {
			line = l
		}
	}
	assertContains(t, line, `"@level":"debug"`, `"vmid":105967`, `"name":"proxy-a"`, `"node":"pv1-1"`, `"duration_ms"`, `"cloned":true`)
	assertContains(t, logs.String(), `"upid":"UPID:pv1-1:`)
}

func mustList(t *testing.T, h *harness) []pveapi.Resource {
	t.Helper()
	res, err := h.f.ClusterResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCreate_vmidSavedBeforeTheCloneRequest: onAllocated has the VMID before the clone
// request leaves (decision: create-steps): a lost answer must not leave a VM no state tracks.
func TestCreate_vmidSavedBeforeTheCloneRequest(t *testing.T) {
	h := newHarness(t)
	var allocated []ID
	_, err := h.b.Create(h.ctx, h.spec(), func(id ID, node string) {
		allocated = append(allocated, id)
		if h.f.calls("Clone") != 0 || node != "pv1-1" {
			t.Errorf("onAllocated(%v, %s) after %d clone requests, want before the first", id, node, h.f.calls("Clone"))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(allocated, []ID{testID}) {
		t.Errorf("onAllocated %v, want once with %v", allocated, testID)
	}
}

// TestCreate_cloneAnswerLost: Proxmox makes the VM but the clone request's answer never
// arrives (a request timeout, a Ctrl-C while it is in flight). The error names the VMID,
// the VMID was handed over before the request, and that ID then finds the VM (Get) and
// removes it (Delete): nothing is left untracked.
func TestCreate_cloneAnswerLost(t *testing.T) {
	for name, lose := range map[string]func(ctx context.Context) error{
		"request timeout": func(context.Context) error { return context.DeadlineExceeded },
		"interrupted":     func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			inside := false
			h.f.onCall("Clone", func(ctx context.Context, c fakeCall) error {
				if inside {
					return nil
				}
				inside = true
				p := pveapi.CloneParams{NewID: testVMID0, Name: c.Args["name"], Description: c.Args["description"]}
				if _, err := h.f.Clone(context.Background(), c.Node, c.VMID, p); err != nil {
					t.Errorf("the fake's clone: %v", err)
				}
				return lose(ctx)
			})
			ctx, cancel := context.WithCancel(h.ctx)
			defer cancel()
			go func() {
				// Until the VM exists, or the subtest is over (the VM may be made and
				// deleted again before this goroutine looks).
				waitFor(t, func() bool { return h.f.vm(testVMID0) != nil || ctx.Err() != nil })
				cancel()
			}()
			var allocated []ID
			_, err := h.b.Create(ctx, h.spec(), func(id ID, _ string) { allocated = append(allocated, id) })
			assertClass(t, err, pveapi.Transient)
			assertContains(t, err.Error(), "create VM proxy-a (VMID 105967)", "cloning template 9001 onto VMID 105967", "may have made the VM")
			if strings.Contains(err.Error(), "no VMID") {
				t.Errorf("error %q", err)
			}
			if !slices.Equal(allocated, []ID{testID}) {
				t.Fatalf("onAllocated %v, want %v", allocated, []ID{testID})
			}
			h.f.finishTasks() // the clone Proxmox made completes
			if vm, err := h.b.Get(h.ctx, allocated[0], GetOptions{AnyOwner: true}); err != nil || vm.UID != testUID {
				t.Errorf("the saved ID does not find the VM: %+v, %v", vm, err)
			}
			if err := h.b.DeleteOwned(h.ctx, allocated[0], "pv1-1", testUID); err != nil {
				t.Fatal(err)
			}
			if h.f.vm(testVMID0) != nil {
				t.Error("the VM the lost answer made is still there")
			}
		})
	}
}

// TestCreate_staleAllocationsAreHarmless: VMIDs handed to onAllocated that end up holding
// no VM of ours (the clone refused, or the VMID taken by a foreign VM meanwhile, fact: clone-vmid-taken) are
// ErrNotFound for Get, and Delete succeeds on them without touching the foreign VM.
func TestCreate_staleAllocationsAreHarmless(t *testing.T) {
	h := newHarness(t)
	lo := 100000
	h.b.cfg.VMIDMin, h.b.cfg.VMIDMax = lo, lo+1
	first, second := vmidFor(testUID, 0, lo, lo+1), vmidFor(testUID, 1, lo, lo+1)
	h.f.onCall("Clone", func(_ context.Context, c fakeCall) error {
		switch c.Args["newid"] {
		case strconv.Itoa(first): // A foreign VM takes it between the listing and the clone
			if h.f.vm(first) == nil {
				h.f.addVM(&fakeVM{VMID: first, Name: "web01", Status: "running", Config: map[string]string{"description": "db"}})
			}
		case strconv.Itoa(second):
			return fixtureErr("err_595") // refused: no VM made
		}
		return nil
	})
	var allocated []ID
	_, err := h.b.Create(h.ctx, h.spec(), func(id ID, _ string) { allocated = append(allocated, id) })
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "(VMID "+strconv.Itoa(second)+")", "cloning template 9001 onto VMID "+strconv.Itoa(second))
	want := []ID{{VMID: first, Name: testName}, {VMID: second, Name: testName}}
	if !slices.Equal(allocated, want) {
		t.Fatalf("onAllocated %v, want %v", allocated, want)
	}
	foreign := h.f.vm(first)
	for _, id := range allocated {
		if _, err := h.b.Get(h.ctx, id, GetOptions{AnyOwner: true}); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%v) = %v, want ErrNotFound", id, err)
		}
		h.f.calllog = nil
		if err := h.b.DeleteOwned(h.ctx, id, "pv1-1", testUID); err != nil {
			t.Errorf("Delete(%v) = %v", id, err)
		}
		for _, c := range h.f.log() {
			if c.VMID == first && !fakeReads[c.Method] {
				t.Errorf("Delete(%v) called %s on the foreign VM", id, c.Method)
			}
		}
	}
	if got := h.f.vm(first); got == nil || got.Status != foreign.Status || got.Config["description"] != foreign.Config["description"] {
		t.Errorf("the foreign VM changed: %+v", got)
	}
	if h.f.vm(second) != nil {
		t.Error("a VM exists at the refused VMID")
	}
}

// A nameless entry whose config cannot be read for good (a 403 on a foreign VM) is not
// one we could adopt: the allocation probes past it instead of aborting the create.
func TestCreate_namelessEntryWithUnreadableConfigIsProbedPast(t *testing.T) {
	h := newHarness(t)
	h.f.addVM(&fakeVM{VMID: testVMID0, Name: "", Config: map[string]string{"scsi0": "local-lvm:vm-105967-disk-0,size=4G"}})
	h.f.onCall("VMConfig", func(_ context.Context, c fakeCall) error {
		if c.VMID == testVMID0 {
			return fixtureErr("err_forbidden_volume_delete")
		}
		return nil
	})
	vm := h.create(h.spec())
	if vm.ID.VMID != testVMID1 {
		t.Errorf("created at %d, want the next probe %d", vm.ID.VMID, testVMID1)
	}
	if h.f.vm(testVMID0).Name != "" {
		t.Error("the unreadable entry was touched")
	}
}
