package pvesim_test

import (
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// cdrom is an alias of ide2 (qemu-server src/PVE/QemuServer.pm $confdesc cdrom): a config
// write resolves it before anything else (src/PVE/API2/Qemu.pm $resolve_cdrom_alias, in
// update_vm_api and create_vm), a delete of cdrom deletes ide2 (update_vm_api), and a
// config file's cdrom line reads as ide2 (QemuServer.pm parse_vm_config). No config read
// ever shows a cdrom key.
func TestSource_cdromIsAnAliasOfIDE2(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.seeded("#cloud-config\n")
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "ide2"}); err != nil {
		t.Fatal(err)
	}
	// PUT cdrom=<volume>: ide2 gets it, media=cdrom appended.
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cdrom": tg.seedVolID()}); err != nil {
		t.Fatal(err)
	}
	conf, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := conf["cdrom"]; ok || driveVol(conf["ide2"]) != tg.seedVolID() || optOf(conf["ide2"], "media") != "cdrom" {
		t.Errorf("after PUT cdrom: cdrom %q, ide2 %q; want ide2 = the volume with media=cdrom, no cdrom key", conf["cdrom"], conf["ide2"])
	}
	// An explicit media= is kept as sent.
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cdrom": "none,media=cdrom"}); err != nil {
		t.Fatal(err)
	}
	if conf, _ = tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); conf["ide2"] != "none,media=cdrom" {
		t.Errorf("after PUT cdrom=none,media=cdrom: ide2 %q", conf["ide2"])
	}
	// delete=cdrom deletes ide2.
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "cdrom"}); err != nil {
		t.Fatal(err)
	}
	if conf, _ = tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); conf["ide2"] != "" || conf["cdrom"] != "" {
		t.Errorf("after delete=cdrom: ide2 %q, cdrom %q; want neither", conf["ide2"], conf["cdrom"])
	}
	// A config file with a cdrom line (AddVM, SetVMState: a file written by hand or by
	// another tool) reads as ide2, the value as written.
	sim := tg.simOnly("writes a config file")
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Config: map[string]string{"cdrom": tg.seedVolID()}}); err != nil {
		t.Fatal(err)
	}
	if conf, _ = tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); conf["ide2"] != tg.seedVolID() || conf["cdrom"] != "" {
		t.Errorf("a file's cdrom line: ide2 %q, cdrom %q", conf["ide2"], conf["cdrom"])
	}
	const other = 4242
	if err := sim.AddVM(pvesim.VMSpec{VMID: other, Node: tg.node, Name: "rescue", Config: map[string]string{"cdrom": tg.seedVolID() + ",media=cdrom"}}); err != nil {
		t.Fatal(err)
	}
	if c, _ := tg.api.VMConfig(tg.ctx(), tg.node, other); c["ide2"] != tg.seedVolID()+",media=cdrom" || c["cdrom"] != "" {
		t.Errorf("AddVM with a cdrom line: ide2 %q, cdrom %q", c["ide2"], c["cdrom"])
	}
}

// driveVol is the volume of a drive value written as <volume>,<options>.
func driveVol(v string) string {
	for i := range len(v) {
		if v[i] == ',' {
			return v[:i]
		}
	}
	return v
}
