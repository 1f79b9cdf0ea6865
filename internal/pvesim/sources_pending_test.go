package pvesim_test

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Deleting ide2 from a running VM stays pending until its next start
// (vm_pending_ide2_delete): update_vm_api adds it to the pending section's delete line and
// vmconfig_hotplug_pending never unplugs an ide or sata drive live. GET .../config shows the
// config without it, ?current=1 and GET .../pending still with it; a stop and a start apply it.
func TestSource_runningIDEDriveDeleteStaysPending(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.seeded("#cloud-config\n")
	tg.started()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "ide2"}); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); cfg["ide2"] != "" || cfg["boot"] != "order=scsi0" {
		t.Errorf("GET config (pending applied): ide2 %q boot %q; want no ide2, boot order=scsi0", cfg["ide2"], cfg["boot"])
	}
	if cur := tg.currentConfig(); driveVol(cur["ide2"]) != tg.seedVolID() || cur["boot"] != "order=scsi0;ide2" {
		t.Errorf("GET config?current=1: ide2 %q boot %q; want the seed still on ide2", cur["ide2"], cur["boot"])
	}
	p, err := tg.api.VMPending(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if driveVol(p.Current["ide2"]) != tg.seedVolID() || p.Pending["boot"] != "order=scsi0" {
		t.Errorf("pending: current ide2 %q, pending boot %q", p.Current["ide2"], p.Pending["boot"])
	}
	if force, ok := p.Delete["ide2"]; !ok || force || len(p.Delete) != 1 {
		t.Errorf("pending deletes %v, want ide2 alone, not forced", p.Delete)
	}
	// The entries' shape is the fixture's: the same keys, the same fields per key.
	var want, got []map[string]any
	if err := fixture.MustLoad("vm_pending_ide2_delete").Data(&want); err != nil {
		t.Fatal(err)
	}
	tg.rawJSON("GET", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/pending", nil, &got)
	shape := func(es []map[string]any) map[string][]string {
		out := map[string][]string{}
		for _, e := range es {
			out[e["key"].(string)] = slices.Sorted(maps.Keys(e))
		}
		return out
	}
	if tg.sim != nil && !maps.EqualFunc(shape(got), shape(want), slices.Equal) {
		t.Errorf("pending entries %v, want the fixture's %v", shape(got), shape(want))
	}
	// A stop and a start apply the delete.
	tg.power("stop", nil)
	tg.started()
	if cur := tg.currentConfig(); cur["ide2"] != "" || cur["boot"] != "order=scsi0" {
		t.Errorf("after the restart: ide2 %q boot %q", cur["ide2"], cur["boot"])
	}
	if p, _ := tg.api.VMPending(tg.ctx(), tg.node, tg.vmid); len(p.Pending) != 0 || len(p.Delete) != 0 {
		t.Errorf("after the restart the pending section is not empty: %+v %+v", p.Pending, p.Delete)
	}
}

// A scsi drive is unplugged live when hotplug has disk (the default), so its delete goes at
// once; without disk in hotplug it stays pending like an ide one (vmconfig_hotplug_pending).
// A key written again leaves the pending delete line (update_vm_api remove_from_pending_delete).
func TestSource_runningDriveDeleteFollowsHotplugDisk(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	sim := tg.simOnly("adds drives to a running VM's config file")
	tg.seeded("#cloud-config\n")
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Config: map[string]string{"scsi5": tg.seedVolID() + ",media=cdrom", "sata1": tg.seedVolID() + ",media=cdrom"}}); err != nil {
		t.Fatal(err)
	}
	tg.started()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "scsi5,sata1"}); err != nil {
		t.Fatal(err)
	}
	p, err := tg.api.VMPending(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Current["scsi5"]; ok {
		t.Errorf("scsi5 is still in the current config: %q", p.Current["scsi5"])
	}
	if _, ok := p.Delete["sata1"]; !ok || p.Current["sata1"] == "" {
		t.Errorf("sata1: current %q, pending deletes %v; want it kept, its delete pending", p.Current["sata1"], p.Delete)
	}
	// Written again: no longer deleted.
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"sata1": tg.seedVolID() + ",media=cdrom"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := tg.api.VMPending(tg.ctx(), tg.node, tg.vmid); len(p.Delete) != 0 {
		t.Errorf("after writing sata1 again, pending deletes %v", p.Delete)
	}
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Config: map[string]string{"hotplug": "network,usb", "scsi6": tg.seedVolID() + ",media=cdrom"}}); err != nil {
		t.Fatal(err)
	}
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "scsi6"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := tg.api.VMPending(tg.ctx(), tg.node, tg.vmid); p.Current["scsi6"] == "" {
		t.Errorf("without disk hotplug scsi6 went at once: %+v", p)
	}
}

// Snapshot sections (vm_snapshot_list, vm_config_snapshot): GET .../config and GET
// .../pending leave them out; GET .../snapshot lists them and current (with the config's
// parent), GET .../config?snapshot=<name> answers one.
func TestSource_snapshotSections(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	sim := tg.simOnly("writes snapshot sections into a config file")
	tg.seeded("#cloud-config\n")
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{
		Config:    map[string]string{"parent": "before-upgrade", "ide2": "none,media=cdrom"},
		Snapshots: map[string]map[string]string{"before-upgrade": {"name": captureName, "ide2": tg.seedVolID() + ",media=cdrom", "snaptime": "1790150000"}},
	}); err != nil {
		t.Fatal(err)
	}
	tg.started()
	cfg, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	p, _ := tg.api.VMPending(tg.ctx(), tg.node, tg.vmid)
	if cfg["ide2"] != "none,media=cdrom" || cfg["snaptime"] != "" || p.Current["parent"] != "before-upgrade" || p.Current["snaptime"] != "" {
		t.Errorf("config %v / pending %v: want the main section only, with parent", cfg, p.Current)
	}
	snaps, err := tg.api.VMSnapshots(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[0].Name != "before-upgrade" || snaps[1].Name != "current" || snaps[1].Parent != "before-upgrade" {
		t.Errorf("snapshots %+v", snaps)
	}
	var want, got []map[string]any
	if err := fixture.MustLoad("vm_snapshot_list").Data(&want); err != nil {
		t.Fatal(err)
	}
	tg.rawJSON("GET", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/snapshot", nil, &got)
	if len(got) != len(want) {
		t.Fatalf("snapshot list %v, want the fixture's shape %v", got, want)
	}
	for i := range want {
		if !slices.Equal(keysOf(got[i]), keysOf(want[i])) {
			t.Errorf("entry %d keys %v, want %v", i, keysOf(got[i]), keysOf(want[i]))
		}
	}
	sc, err := tg.api.VMSnapshotConfig(tg.ctx(), tg.node, tg.vmid, "before-upgrade")
	if err != nil {
		t.Fatal(err)
	}
	if driveVol(sc["ide2"]) != tg.seedVolID() || sc["snaptime"] != "1790150000" || sc["digest"] == "" {
		t.Errorf("snapshot config %v", sc)
	}
	if _, err := tg.api.VMSnapshotConfig(tg.ctx(), tg.node, tg.vmid, "nope"); err == nil {
		t.Error("a missing snapshot answered")
	}
}
