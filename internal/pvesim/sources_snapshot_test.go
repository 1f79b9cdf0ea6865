package pvesim_test

import (
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Snapshot create, delete and rollback as pve-guest-common src/PVE/AbstractConfig.pm does
// them to the config file (snapshots.go): a new snapshot copies the config, parent
// included, and becomes the config's parent (__snapshot_prepare, __snapshot_commit);
// deleting a snapshot hands its parent to whatever named it ($unlink_parent in
// snapshot_delete), so deleting the config's parent leaves the config on that one's parent,
// and deleting a root snapshot the config descends from leaves the config with no parent
// while its other snapshots stay (the simulator's config once showed no parent
// after deleting the current snapshot, and the seed scan read snapshots only by parent);
// a rollback makes the snapshot's drives the config's again.
func TestSource_snapshotDeleteRelinksParents(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	sim := tg.simOnly("creates and deletes snapshots through the admin API")
	tg.seeded("#cloud-config\n")
	ops := func(ops ...pvesim.SnapshotOp) {
		t.Helper()
		if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{SnapshotOps: ops}); err != nil {
			t.Fatal(err)
		}
	}
	parents := func(want map[string]string) {
		t.Helper()
		snaps, err := tg.api.VMSnapshots(tg.ctx(), tg.node, tg.vmid)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, s := range snaps {
			got[s.Name] = s.Parent
		}
		if len(got) != len(want) {
			t.Errorf("snapshots %v, want %v", got, want)
		}
		for name, p := range want {
			if gp, ok := got[name]; !ok || gp != p {
				t.Errorf("snapshot %s: parent %q (listed %v), want %q", name, gp, ok, p)
			}
		}
		p, err := tg.api.VMPending(tg.ctx(), tg.node, tg.vmid)
		if err != nil {
			t.Fatal(err)
		}
		if p.Current["parent"] != want["current"] {
			t.Errorf("config parent %q, want %q", p.Current["parent"], want["current"])
		}
	}
	ide2 := func(snap string) string {
		t.Helper()
		cfg, err := tg.api.VMSnapshotConfig(tg.ctx(), tg.node, tg.vmid, snap)
		if err != nil {
			t.Fatal(err)
		}
		return driveVol(cfg["ide2"])
	}

	ops(pvesim.SnapshotOp{Op: "create", Name: "s1"})
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Config: map[string]string{"ide2": "none,media=cdrom"}}); err != nil {
		t.Fatal(err)
	}
	ops(pvesim.SnapshotOp{Op: "create", Name: "s2"})
	parents(map[string]string{"s1": "", "s2": "s1", "current": "s2"})
	if got := ide2("s1"); got != tg.seedVolID() {
		t.Errorf("s1's ide2 %q, want the seed it was taken with", got)
	}
	if got := ide2("s2"); got != "none" {
		t.Errorf("s2's ide2 %q, want none", got)
	}

	// Deleting the current snapshot: the config descends from its parent now.
	ops(pvesim.SnapshotOp{Op: "delete", Name: "s2"})
	parents(map[string]string{"s1": "", "current": "s1"})

	// s3 on s1; back to s1 (its seed on ide2 again); then s1 deleted: no parent anywhere,
	// s3 left.
	ops(pvesim.SnapshotOp{Op: "create", Name: "s3"}, pvesim.SnapshotOp{Op: "rollback", Name: "s1"})
	parents(map[string]string{"s1": "", "s3": "s1", "current": "s1"})
	if cfg, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); driveVol(cfg["ide2"]) != tg.seedVolID() {
		t.Errorf("after the rollback ide2 is %q, want s1's seed", cfg["ide2"])
	}
	// The hand-written form (a nil section) deletes as snapshot_delete does too.
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Snapshots: map[string]map[string]string{"s1": nil}}); err != nil {
		t.Fatal(err)
	}
	parents(map[string]string{"s3": "", "current": ""})
	if got := ide2("s3"); got != "none" {
		t.Errorf("s3's ide2 %q, want none", got)
	}

	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{SnapshotOps: []pvesim.SnapshotOp{{Op: "delete", Name: "s9"}}}); err == nil {
		t.Error("deleting a missing snapshot succeeded")
	}
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{SnapshotOps: []pvesim.SnapshotOp{{Op: "create", Name: "s3"}}}); err == nil {
		t.Error("a snapshot name in use was taken again")
	}
}
