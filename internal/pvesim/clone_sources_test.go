package pvesim_test

import (
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestSource_cloneCopiesAndRegeneratesAsCloneVM: what a clone copies and what it makes anew
// follows qemu-server src/PVE/API2/Qemu.pm clone_vm: snapshot keys and unusedN not copied
// (4513-4525), CD-ROMs copied (4539-4540), disks on new volumes without format=
// (4662-4674, src/PVE/QemuServer.pm:8105-8110), a vmgenid of "0" copied (4596-4599), meta
// copied (4575-4577), an empty name and description not used (4603-4611).
func TestSource_cloneCopiesAndRegeneratesAsCloneVM(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{TemplateAgent: true})
	if err := sim.AddVM(pvesim.VMSpec{VMID: 9100, Name: "tmpl", Template: true, Config: map[string]string{
		"scsi0": "local-lvm:base-9100-disk-0,format=raw,size=3G", "ide2": "local:iso/debian-13.iso,media=cdrom",
		"unused0": "local-lvm:base-9100-disk-9", "snaptime": "1790000000", "runningcpu": "host", "runningmachine": "pc-q35-10.0",
		"vmgenid": "0", "meta": "creation-qemu=11.0.3,ctime=1790000000", "description": "the template", "cores": "3",
	}}); err != nil {
		t.Fatal(err)
	}
	tg.mustOK(tg.api.Clone(tg.ctx(), tg.node, 9100, pveapi.CloneParams{NewID: 701, Name: "", Description: ""}))
	vm, ok := sim.VM(701)
	if !ok {
		t.Fatal("no clone")
	}
	c := vm.Config
	for _, k := range []string{"unused0", "snaptime", "runningcpu", "runningmachine", "template"} {
		if v, has := c[k]; has {
			t.Errorf("%s copied: %q", k, v)
		}
	}
	want := map[string]string{"ide2": "local:iso/debian-13.iso,media=cdrom", "vmgenid": "0", "meta": "creation-qemu=11.0.3,ctime=1790000000",
		"description": "the template", "name": "Copy-of-VM-tmpl", "cores": "3"}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s = %q, want %q", k, c[k], v)
		}
	}
	if !strings.HasPrefix(c["scsi0"], "local-lvm:vm-701-disk-") || strings.Contains(c["scsi0"], "format=") || !strings.Contains(c["scsi0"], "size=3G") {
		t.Errorf("scsi0 = %q", c["scsi0"])
	}
}
