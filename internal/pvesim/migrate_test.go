package pvesim_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// twoNodes is a two-node simulator with the capture's first node name, so the fixtures'
// texts (which name pv1-2 as the other node) apply verbatim.
func twoNodes(t *testing.T) (*target, *pvesim.Sim) {
	return simTarget(t, pvesim.Options{Nodes: []string{"pv1-1", "pv1-2"}, TemplateAgent: true})
}

// TestClone_crossNodeRefusedForLocalStorage: a target is refused for a template on
// non-shared storage, with the storage parameter too (clone_vm looks at the source volumes),
// and allowed for a template whose volumes are all on shared storage.
func TestClone_crossNodeRefusedForLocalStorage(t *testing.T) {
	tg, sim := twoNodes(t)
	p := pveapi.CloneParams{NewID: 700, Name: "far", Target: "pv1-2"}
	_, err := tg.api.Clone(tg.ctx(), "pv1-1", 9001, p)
	tg.wantAPIError(err, "err_clone_local_storage")
	p.Storage = "ceph-vm"
	_, err = tg.api.Clone(tg.ctx(), "pv1-1", 9001, p)
	tg.wantAPIError(err, "err_clone_local_storage")
	if _, ok := sim.VM(700); ok {
		t.Fatal("a refused clone left a VM")
	}
	if err := sim.AddVM(pvesim.VMSpec{VMID: 9100, Name: "shared-template", Template: true,
		Config: map[string]string{"scsi0": "ceph-vm:base-9100-disk-0,size=3G"}}); err != nil {
		t.Fatal(err)
	}
	tg.mustOK(tg.api.Clone(tg.ctx(), "pv1-1", 9100, p))
	if vm, ok := sim.VM(700); !ok || vm.Node != "pv1-2" || !strings.HasPrefix(vm.Config["scsi0"], "ceph-vm:vm-700-disk-") {
		t.Errorf("clone of the shared template: %+v", vm)
	}
}

// TestMigrate_offlineMovesTheConfigAndKeepsTheMAC: a stopped VM with local disks migrates
// offline (no flag needed), holds lock migrate during the task, and ends on the target with
// its MAC and disks.
func TestMigrate_offlineMovesTheConfigAndKeepsTheMAC(t *testing.T) {
	// The migration lasts a clone's duration: long enough (3000 simulated seconds, 3 s of
	// wall clock at the default speed) that the lock check and the config write below meet
	// it on a loaded machine (0.3 s was seen to end first under -race and a load of 15).
	tg, sim := simTarget(t, pvesim.Options{Nodes: []string{"pv1-1", "pv1-2"}, TemplateAgent: true,
		Durations: pvesim.Durations{Clone: 3000 * time.Second}})
	tg.cloned()
	before, _ := sim.VM(tg.vmid)
	upid, err := tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2", Online: true})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := pveapi.ParseUPID(upid)
	if u.Node != "pv1-1" || u.Type != "qmigrate" || u.ID != "199999" {
		t.Errorf("UPID %+v, want a qmigrate task of 199999 on pv1-1 (migrate_response)", u)
	}
	if vm, _ := sim.VM(tg.vmid); vm.Lock != "migrate" {
		t.Errorf("lock during the migration %q, want migrate", vm.Lock)
	}
	err = tg.api.SetVMConfig(tg.ctx(), "pv1-1", tg.vmid, map[string]string{"cores": "4"})
	if ae := apiErr(t, err); ae.Message != strings.Replace(fixture.MustLoad("err_locked_clone").Message(), "(clone)", "(migrate)", 1) {
		t.Errorf("config write during the migration: %q", ae.Message)
	}
	if st := tg.waitTask(upid); st.ExitStatus != "OK" {
		t.Fatalf("migration ended %q", st.ExitStatus)
	}
	after, _ := sim.VM(tg.vmid)
	if after.Node != "pv1-2" || after.Lock != "" || after.Config["net0"] != before.Config["net0"] || after.Config["scsi0"] != before.Config["scsi0"] {
		t.Errorf("after the migration %+v, before %+v", after, before)
	}
	_, err = tg.api.VMConfig(tg.ctx(), "pv1-1", tg.vmid)
	tg.wantNotExist(err, tg.vmid)
}

// TestMigrate_runningNeedsOnlineAndWithLocalDisks: a running VM is refused without online
// before the task (err_migrate_running_offline), refused inside the task without
// with-local-disks for its local-lvm disk, and migrates live with it, keeping its address.
func TestMigrate_runningNeedsOnlineAndWithLocalDisks(t *testing.T) {
	tg, sim := twoNodes(t)
	tg.cloned()
	tg.started()
	_, err := tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2"})
	tg.wantAPIError(err, "err_migrate_running_offline")
	_, err = tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-1", Online: true})
	if err == nil {
		t.Fatal("a migration onto the VM's own node was accepted")
	}
	rawMigrate(t, tg, "pv1-1")

	upid, err := tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2", Online: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != exitOf(t, "task_status_migrate_local_cdrom") {
		t.Errorf("live migration without with-local-disks ended %q", st.ExitStatus)
	}
	tg.eventually("the guest's address", func() bool { vm, _ := sim.VM(tg.vmid); return vm.IP != "" })
	before, _ := sim.VM(tg.vmid)
	tg.mustOK(tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2", Online: true, WithLocalDisks: true, TargetStorage: "local-lvm"}))
	after, _ := sim.VM(tg.vmid)
	if after.Node != "pv1-2" || after.Power != "running" || after.IP != before.IP || after.Config["net0"] != before.Config["net0"] {
		t.Errorf("live migration: before %+v, after %+v", before, after)
	}
}

// TestMigrate_localCDROMRefusedUnlessEjected: a VM whose CD-ROM holds an ISO on a per-node
// directory storage is refused inside the task, even when the target node holds the same
// file (QemuMigrate.pm never looks there); ejecting it (ide2 none) lets the migration go.
func TestMigrate_localCDROMRefusedUnlessEjected(t *testing.T) {
	tg, sim := twoNodes(t)
	tg.seeded("#cloud-config\n")
	if err := sim.AddISO("pv1-2", tg.isoStorage, captureName+"-seed.iso", tg.seed("#cloud-config\n")); err != nil {
		t.Fatal(err)
	}
	upid, err := tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2"})
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != exitOf(t, "task_status_migrate_local_cdrom") {
		t.Errorf("migration with a local CD-ROM ISO ended %q", st.ExitStatus)
	}
	if vm, _ := sim.VM(tg.vmid); vm.Node != "pv1-1" || vm.Lock != "" {
		t.Errorf("a refused migration moved or left the VM locked: %+v", vm)
	}
	if err := tg.api.SetVMConfig(tg.ctx(), "pv1-1", tg.vmid, map[string]string{"ide2": "none,media=cdrom"}); err != nil {
		t.Fatal(err)
	}
	tg.mustOK(tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2"}))
	if vm, _ := sim.VM(tg.vmid); vm.Node != "pv1-2" {
		t.Errorf("after ejecting: %+v", vm)
	}
}

// TestMigrate_failureLeavesTheVMOnTheSource: a migration task that fails (an injected task
// exit, or the target node going down) leaves the VM on its node, unlocked.
func TestMigrate_failureLeavesTheVMOnTheSource(t *testing.T) {
	tg, sim := twoNodes(t)
	tg.cloned()
	sim.InjectFault(pvesim.Fault{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/migrate", Times: 1, TaskExit: "migration aborted"})
	upid, err := tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2"})
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != "migration aborted" {
		t.Errorf("exit %q", st.ExitStatus)
	}
	if vm, _ := sim.VM(tg.vmid); vm.Node != "pv1-1" || vm.Lock != "" {
		t.Errorf("after a failed migration: %+v", vm)
	}
	upid, err = tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.SetNodeDown("pv1-2", true); err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); !strings.HasPrefix(st.ExitStatus, "migration aborted") {
		t.Errorf("target down mid-migration: exit %q", st.ExitStatus)
	}
	if vm, _ := sim.VM(tg.vmid); vm.Node != "pv1-1" || vm.Lock != "" {
		t.Errorf("after the target went down: %+v", vm)
	}
}

// TestMoveVM_recoveryMovesTheConfigOnly: the admin move is an HA recovery (steal_service):
// the config moves and the seed ISO, on per-node storage, stays on the old node alone; the
// recovery node's start then fails on the missing seed (task_status_start_volume_missing),
// so the guest is left stopped, and a start there fails the same way. A migration back of
// such a VM is refused for its local CD-ROM image (task_status_migrate_local_cdrom).
func TestMoveVM_recoveryMovesTheConfigOnly(t *testing.T) {
	tg, sim := twoNodes(t)
	tg.seeded("#cloud-config\n")
	tg.started()
	tg.eventually("the guest's address", func() bool { vm, _ := sim.VM(tg.vmid); return vm.IP != "" })
	seed, _ := sim.ISO("pv1-1", tg.seedVolID())
	before, _ := sim.VM(tg.vmid)
	tg.admin("POST", "/vms/199999/move", map[string]string{"target": "pv1-2"}, nil)
	after, _ := sim.VM(tg.vmid)
	if after.Node != "pv1-2" || after.Power != "stopped" || !maps.Equal(after.Config, before.Config) {
		t.Errorf("after the move: %+v, want stopped on pv1-2 with its config unchanged", after)
	}
	if _, ok := sim.ISO("pv1-2", tg.seedVolID()); ok {
		t.Error("the move copied the seed ISO to the target")
	}
	if left, ok := sim.ISO("pv1-1", tg.seedVolID()); !ok || !bytes.Equal(left, seed) {
		t.Error("the move touched the seed ISO on the old node")
	}
	want := strings.Replace(exitOf(t, "task_status_start_volume_missing"), "proxy-seeds:iso/proxy-reconaaaaaaaaaaa-seed.iso", tg.seedVolID(), 1)
	upid, err := tg.api.Start(tg.ctx(), "pv1-2", tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != want {
		t.Errorf("start on the recovery node: exit %q, want %q", st.ExitStatus, want)
	}
	upid, err = tg.api.Migrate(tg.ctx(), "pv1-2", tg.vmid, pveapi.MigrateParams{Target: "pv1-1"})
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != exitOf(t, "task_status_migrate_local_cdrom") {
		t.Errorf("migration back: exit %q", st.ExitStatus)
	}
	if err := sim.MoveVM(tg.vmid, "pv1-2"); err == nil {
		t.Error("a move onto the VM's own node was accepted")
	}
}

// TestMoveVM_recoveryKeepsAGuestWithEveryVolume: a guest whose volumes are all on the
// recovery node (no seed attached: ide2 an empty CD-ROM) keeps running there with its
// address, and its config moves whole.
func TestMoveVM_recoveryKeepsAGuestWithEveryVolume(t *testing.T) {
	tg, sim := twoNodes(t)
	tg.cloned()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"ide2": "none,media=cdrom"}); err != nil {
		t.Fatal(err)
	}
	tg.started()
	before, _ := sim.VM(tg.vmid)
	if err := sim.MoveVM(tg.vmid, "pv1-2"); err != nil {
		t.Fatal(err)
	}
	after, _ := sim.VM(tg.vmid)
	if after.Node != "pv1-2" || after.Power != "running" || after.IP != before.IP || !maps.Equal(after.Config, before.Config) {
		t.Errorf("move: before %+v, after %+v", before, after)
	}
}

// rawMigrate sends a migration onto node without the client's own check, and answers its
// error body and status, compared byte for byte with the fixture.
func rawMigrate(t *testing.T, tg *target, node string) {
	t.Helper()
	resp, body := tg.raw("POST", "/nodes/pv1-1/qemu/199999/migrate", url.Values{"target": {node}, "online": {"1"}}, nil)
	f := fixture.MustLoad("err_migrate_target_local")
	if resp.StatusCode != f.Status || !bytes.Equal(body, f.BodyBytes()) {
		t.Errorf("migration onto the VM's own node: %d %s, want %d %s", resp.StatusCode, body, f.Status, f.BodyBytes())
	}
}

func exitOf(t *testing.T, name string) string {
	t.Helper()
	var st pveapi.TaskStatus
	if err := fixture.MustLoad(name).Data(&st); err != nil {
		t.Fatal(err)
	}
	return st.ExitStatus
}

// TestMigrate_localCDROMInASnapshotRefused: scan_local_volumes walks foreach_volid, which
// takes in the snapshot sections and the pending values (QemuServer.pm foreach_volid), so a
// VM whose seed ISO on a per-node storage is named only by a snapshot (its CD-ROM ejected,
// the config without parent) is refused for its local CD-ROM image, with the task log
// task_log_migrate_local_cdrom_snapshot; so is one that names it only in a pending value.
func TestMigrate_localCDROMInASnapshotRefused(t *testing.T) {
	for _, where := range []string{"snapshot", "pending"} {
		t.Run(where, func(t *testing.T) {
			tg, sim := twoNodes(t)
			tg.seeded("#cloud-config\n")
			patch := pvesim.VMPatch{Config: map[string]string{"ide2": "none,media=cdrom"}}
			if where == "snapshot" {
				patch.Snapshots = map[string]map[string]string{"s1": {"ide2": tg.seedVolID() + ",media=cdrom", "snaptime": "1700000000"}}
			}
			if err := sim.SetVMState(tg.vmid, patch); err != nil {
				t.Fatal(err)
			}
			if where == "pending" {
				tg.started()
				// A CD-ROM swapped on a running VM over the API is applied at once; an ide
				// drive's removal waits for the restart, which keeps the seed named pending.
				if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"ide3": tg.seedVolID() + ",media=cdrom"}); err != nil {
					t.Fatal(err)
				}
				if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "ide3"}); err != nil {
					t.Fatal(err)
				}
			}
			upid, err := tg.api.Migrate(tg.ctx(), "pv1-1", tg.vmid, pveapi.MigrateParams{Target: "pv1-2", Online: where == "pending", WithLocalDisks: true, TargetStorage: "local-lvm"})
			if err != nil {
				t.Fatal(err)
			}
			if st := tg.waitTask(upid); st.ExitStatus != exitOf(t, "task_status_migrate_local_cdrom") {
				t.Errorf("migration with the seed in a %s ended %q", where, st.ExitStatus)
			}
			if vm, _ := sim.VM(tg.vmid); vm.Node != "pv1-1" || vm.Lock != "" {
				t.Errorf("a refused migration moved or left the VM locked: %+v", vm)
			}
			_, body := tg.raw("GET", "/nodes/pv1-1/tasks/"+url.PathEscape(upid)+"/log", nil, nil)
			var got struct {
				Data []taskLogLine `json:"data"`
			}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			var want []taskLogLine
			if err := fixture.MustLoad("task_log_migrate_local_cdrom_snapshot").Data(&want); err != nil {
				t.Fatal(err)
			}
			if where == "snapshot" && !slices.Equal(got.Data, want) {
				t.Errorf("task log %s, want the lines of task_log_migrate_local_cdrom_snapshot %+v", body, want)
			}
			if refused := want[len(want)-2]; !slices.ContainsFunc(got.Data, func(l taskLogLine) bool { return l.T == refused.T }) {
				t.Errorf("task log %s lacks %q", body, refused.T)
			}
		})
	}
}

// taskLogLine is a line of GET /nodes/{node}/tasks/{upid}/log.
type taskLogLine struct {
	N int    `json:"n"`
	T string `json:"t"`
}
