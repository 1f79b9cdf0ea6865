package proxmox

import (
	"maps"
	"strings"
	"testing"
	"time"
)

// TestCloneDiffs: a clone of the template (vm_config_clone, captured, beside
// vm_config_template_9001) differs from it only in what clone_vm sets or regenerates (name,
// description, MACs, smbios1 uuid, vmgenid, disk volumes, lock=clone while it runs,
// template dropped); any other difference is named (decision: instance-binding).
func TestCloneDiffs(t *testing.T) {
	tmpl := fixtureConfig("vm_config_template_9001")
	clone := fixtureConfig("vm_config_clone")
	for _, tc := range []struct {
		name string
		tmpl func(c map[string]string)
		mut  func(c map[string]string)
		want string // "" when it is an untouched clone
	}{
		{"as cloned", nil, func(map[string]string) {}, ""},
		{"renamed, other description", nil, func(c map[string]string) { c["name"], c["description"] = "x", "y" }, ""},
		{"mid-clone lock", nil, func(c map[string]string) { c["lock"] = "clone" }, ""},
		{"drive options in another order, another storage", nil, func(c map[string]string) {
			c["scsi0"] = "size=3G,iothread=1,ceph-vm:vm-105967-disk-0"
		}, ""},
		{"net0 written with macaddr=", nil, func(c map[string]string) { c["net0"] = "model=virtio,bridge=vmbr0,macaddr=BC:24:11:00:00:01" }, "net0 is"},
		{"the template's CD-ROM", func(c map[string]string) { c["ide2"] = "local:iso/debian-13.iso,media=cdrom" },
			func(c map[string]string) { c["ide2"] = "local:iso/debian-13.iso,media=cdrom" }, ""},
		{"the template's snapshot keys not copied", func(c map[string]string) { c["parent"], c["snaptime"], c["unused0"] = "s1", "1", "local-lvm:x" },
			func(map[string]string) {}, ""},
		{"vmgenid regenerated only when the template's is set", func(c map[string]string) { c["vmgenid"] = "0" },
			func(c map[string]string) { c["vmgenid"] = "1234" }, "vmgenid is 1234"},
		{"cores", nil, func(c map[string]string) { c["cores"] = "8" }, "cores is 8 where the template's clone has 2"},
		{"memory", nil, func(c map[string]string) { c["memory"] = "8192" }, "memory is 8192"},
		{"a key added", nil, func(c map[string]string) { c["tags"] = "prod" }, "it has tags (prod), which the template has not"},
		{"a key removed", nil, func(c map[string]string) { delete(c, "serial0") }, "it has no serial0"},
		{"its own meta (a VM made by the create call)", nil, func(c map[string]string) { c["meta"] = "creation-qemu=11.0.3,ctime=1790999999" }, "meta is"},
		{"another smbios1 option", nil, func(c map[string]string) { c["smbios1"] += ",serial=abc" }, "smbios1 is"},
		{"another bridge", nil, func(c map[string]string) { c["net0"] = "virtio=BC:24:11:EE:48:83,bridge=vmbr1" }, "net0 is"},
		{"an extra disk", nil, func(c map[string]string) { c["scsi1"] = "local-lvm:vm-105967-disk-2,size=100G" }, "it has scsi1"},
		{"a bigger disk", nil, func(c map[string]string) { c["scsi0"] = "local-lvm:vm-105967-disk-1,iothread=1,size=32G" }, "scsi0 is"},
		{"a disk option changed", nil, func(c map[string]string) { c["scsi0"] = "local-lvm:vm-105967-disk-1,size=3G" }, "scsi0 is"},
		{"the boot disk gone", nil, func(c map[string]string) { delete(c, "scsi0") }, "it has no scsi0"},
		{"an installer ISO", nil, func(c map[string]string) { c["ide2"] = "local:iso/debian-13-netinst.iso,media=cdrom" }, "it has ide2"},
		{"another ISO than the template's", func(c map[string]string) { c["ide2"] = "none,media=cdrom" },
			func(c map[string]string) { c["ide2"] = "local:iso/debian-13-netinst.iso,media=cdrom" }, "ide2 is local:iso/debian-13-netinst.iso"},
		{"a disk where the template has a CD-ROM", func(c map[string]string) { c["ide2"] = "none,media=cdrom" },
			func(c map[string]string) { c["ide2"] = "local-lvm:vm-105967-disk-3,size=1G" }, "ide2 is"},
		{"a snapshot taken", nil, func(c map[string]string) { c["parent"] = "s1" }, "it has parent"},
		{"another lock", nil, func(c map[string]string) { c["lock"] = "backup" }, "lock is backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm, c := maps.Clone(tmpl), maps.Clone(clone)
			if tc.tmpl != nil {
				tc.tmpl(tm)
			}
			tc.mut(c)
			got := notUntouchedClone(tm, c, 9001)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("not a clone: %s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("got %q, want it to name %q", got, tc.want)
			}
		})
	}
	if got := notUntouchedClone(nil, clone, 9001); !strings.Contains(got, "the config of template 9001 could not be read") {
		t.Errorf("no template: %q", got)
	}
	many := maps.Clone(clone)
	for _, k := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"} {
		many["tags"+k] = "x"
	}
	if got := notUntouchedClone(tmpl, many, 9001); !strings.Contains(got, "and 2 more") {
		t.Errorf("eight differences: %q", got)
	}
}

// TestCleanOrphans_notAnUntouchedCloneNeedsALook is the copied-mark threat at the clean-up: a
// stopped VM made by hand at a reused VMID (its own disks and ISO), or a clone whose config
// was changed, carrying a copied creating text written before the config step, past the
// grace period, is reported "needs a look" with nothing sent to it; so is a clone of a
// template the provider's catalogue does not name (decision: instance-binding).
func TestCleanOrphans_notAnUntouchedCloneNeedsALook(t *testing.T) {
	const vmid = 100001
	for _, tc := range []struct {
		name string
		mut  func(h *harness, v *fakeVM)
		sign string
	}{
		{"made by hand: 32G and 100G disks, an installer ISO", func(h *harness, v *fakeVM) {
			desc := v.Config["description"]
			v.Config = map[string]string{"name": v.Name, "description": desc, "smbios1": "uuid=9e9e9e9e-0000-4000-8000-000000000009",
				"scsi0": "local-lvm:vm-100001-disk-0,size=32G", "scsi1": "local-lvm:vm-100001-disk-1,size=100G",
				"ide2": "local:iso/debian-13-netinst.iso,media=cdrom"}
		}, "its meta (none) matches no template of the provider's image catalogue"},
		{"the template's disk, its own cores and memory", func(h *harness, v *fakeVM) { v.Config["cores"], v.Config["memory"] = "8", "8192" },
			"not an untouched clone of template 9001 (cores is 8 where the template's clone has 2; memory is 8192"},
		{"an installer ISO added", func(h *harness, v *fakeVM) { v.Config["ide2"] = "local:iso/debian-13-netinst.iso,media=cdrom" }, "it has ide2"},
		{"its template not in the catalogue", func(h *harness, v *fakeVM) { h.b.cfg.Templates = map[string]int{"other": 9002} },
			"its meta (creation-qemu=11.0.3,ctime=1790145676) matches no template"},
	} {
		for _, dry := range []bool{true, false} {
			h := cleanupHarness(t)
			h.f.mutate(vmid, func(v *fakeVM) { tc.mut(h, v) })
			before := h.f.vm(vmid).clone()
			h.f.mu.Lock()
			h.f.calllog = nil
			h.f.mu.Unlock()
			rep, err := h.b.CleanOrphans(h.ctx, CleanOptions{DryRun: dry, Grace: time.Hour, VMs: true, Namespace: "ns"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if w := writesTo(h, vmid); len(w) != 0 || len(mutating(h.f)) != 0 {
				t.Errorf("%s: writes %v (any VM: %v)", tc.name, w, mutating(h.f))
			}
			if after := h.f.vm(vmid); after == nil || !maps.Equal(after.Config, before.Config) {
				t.Errorf("%s: the VM changed: %+v", tc.name, after)
			}
			if rep.NeedsLook != 1 || rep.Deleted != 0 || rep.Events[0].Action != CleanNeedsLook {
				t.Fatalf("%s: report %+v", tc.name, rep)
			}
			assertContains(t, rep.Events[0].String(), "needs a look", tc.sign, "qm stop 100001 && qm destroy 100001 --purge")
		}
	}
}

// TestCreate_retryLeavesATouchedCloneAlone is the copied-mark threat at a retry: a VM at
// the probed VMID with only the template's disk, at the template's size, but cores and
// memory the create did not write, carrying the copied creating text (written before the
// config step) within TakeoverWindow, is left alone with the reason; nothing is written to
// it, and the create clones onto the next VMID (decision: instance-binding).
func TestCreate_retryLeavesATouchedCloneAlone(t *testing.T) {
	h := newHarness(t)
	h.addInterrupted(testVMID0, testName, prevUID)
	h.f.mutate(testVMID0, func(v *fakeVM) {
		desc := v.Config["description"]
		v.Config = map[string]string{"name": testName, "description": desc, "scsi0": "local-lvm:vm-105967-disk-1,iothread=1,size=3G",
			"efidisk0": v.Config["efidisk0"], "memory": "8192", "cores": "8", "smbios1": "uuid=9e9e9e9e-0000-4000-8000-000000000009"}
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
	if after := h.f.vm(testVMID0); after == nil || !maps.Equal(after.Config, before.Config) {
		t.Errorf("the hand-made VM changed: %+v", after)
	}
	if len(rep.TakenOver) != 0 || len(rep.Unproved) != 1 || !strings.Contains(rep.Unproved[0].Why, "not an untouched clone of template 9001") ||
		!strings.Contains(rep.Unproved[0].Why, "cores is 8") {
		t.Errorf("report %+v", rep)
	}
}
