package proxmox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Migration moves a VM between nodes in place: the VMID, disks, MAC and mark stay; a
// running VM keeps running (a live migration). Proxmox refuses, inside the migration task,
// a VM whose CD-ROM holds an ISO on storage that is not shared (qemu-server QemuMigrate.pm
// scan_local_volumes: "local cdrom image", whether or not the target holds the same file).
// The seed ISO is on such a storage as a rule (a directory storage per node), so it is
// ejected before the migration, uploaded to the target's ISO storage, attached again on the
// target after it, and deleted from the source. A failed migration leaves the VM on its
// node: the seed is attached again there and the copy on the target deleted.

// migrationView is what a migration is planned from, read on the source before anything
// is written: the VM's status, the seed ISO its ide2 names when that is on storage the
// target does not share (seedLocal), and its disks on storage that is not shared.
type migrationView struct {
	id        ID
	from, to  string
	cfg       map[string]string
	vs        pveapi.VMStatus
	seed      seedVol
	seedLocal bool
	local     []string
	// blocked are the CD-ROM images on storage that is not shared that a snapshot section
	// or a pending value names ("ide2 in its snapshot s1 (<volid>)"): Proxmox refuses the
	// migration for them (localCDROMRefs), and no eject reaches a snapshot.
	blocked []string
}

// migrationPlan is what a migration does, decided from a migrationView by planMigration:
// the migrate request's parameters, and the seed ISO carried over (seed.src zero: none),
// rebuilt on the target when rebuild is set (else left ejected: cloud-init reads it at
// first boot only).
type migrationPlan struct {
	id       ID
	from, to string
	params   pveapi.MigrateParams
	seed     seedMove
	rebuild  bool
}

// checkMigrationTarget refuses, without a request, a target that is not one of the
// provider's nodes.
func (b *Backend) checkMigrationTarget(to string) error {
	if len(b.cfg.Nodes) > 0 && !slices.Contains(b.cfg.Nodes, to) {
		return Permanentf("node %q is not one of the provider's nodes (%s)", to, strings.Join(b.cfg.Nodes, ", "))
	}
	return nil
}

// planMigration decides a migration without a request: a hibernated VM is refused
// (Proxmox cannot migrate it); a running VM migrates online, with its local disks
// (targetstorage the provider's storage); a seed on storage the target does not share is
// carried over, rebuilt on the target's iso_storage when userDataKnown.
func planMigration(v migrationView, isoStorage, storage string, userDataKnown bool) (migrationPlan, error) {
	if hibernatedVM(v.vs, v.cfg) {
		return migrationPlan{}, Permanentf(
			"the VM is hibernated on node %s, and Proxmox cannot migrate a hibernated VM; resume it (or stop it) in Proxmox, then apply again",
			v.from,
		)
	}
	if len(v.blocked) > 0 {
		return migrationPlan{}, Permanentf(
			"Proxmox cannot migrate the VM from node %s to node %s: %s, a CD-ROM image on storage that is not shared "+
				"(qemu-server refuses a local CD-ROM image that any snapshot or pending value names, and a snapshot cannot be edited). "+
				"Delete that snapshot (`qm delsnapshot %d <name>`), or apply the pending change by restarting the VM, then apply again; "+
				"nothing was changed",
			v.from,
			v.to,
			strings.Join(v.blocked, ", "),
			v.id.VMID,
		)
	}
	running := v.vs.Status == "running"
	p := migrationPlan{id: v.id, from: v.from, to: v.to,
		params: pveapi.MigrateParams{Target: v.to, Online: running, WithLocalDisks: running && len(v.local) > 0}}
	if len(v.local) > 0 && storage != "" {
		p.params.TargetStorage = storage
	}
	if v.seedLocal {
		p.seed = seedMove{src: v.seed, dst: seedVol{storage: isoStorage, file: v.seed.file}, ide2: v.cfg["ide2"]}
		p.rebuild = userDataKnown && isoStorage != ""
	}
	return p, nil
}

// hibernatedVM says the VM is hibernated (lock suspended), by its status or its config.
func hibernatedVM(vs pveapi.VMStatus, cfg map[string]string) bool {
	return vs.Lock == "suspended" || cfg["lock"] == "suspended"
}

// readMigration reads, on the source, what planMigration needs beside the status vs: the
// seed ISO's storage (seedToMove) and the disks' (localDisks). Nothing is read for a
// hibernated VM, which the plan refuses.
func (b *Backend) readMigration(
	ctx context.Context,
	op string,
	id ID,
	from, to string,
	cfg map[string]string,
	vs pveapi.VMStatus,
) (migrationView, error) {
	v := migrationView{id: id, from: from, to: to, cfg: cfg, vs: vs}
	if hibernatedVM(vs, cfg) {
		return v, nil
	}
	var err error
	if v.seed, v.seedLocal, err = b.seedToMove(ctx, op, id, from, cfg); err != nil {
		return v, err
	}
	if v.local, err = b.localDisks(ctx, from, cfg); err != nil {
		return v, err
	}
	if v.blocked, err = b.localCDROMRefs(ctx, op, id, from); err != nil {
		return v, err
	}
	return v, nil
}

// localCDROMRefs reads the VM's pending section and snapshot sections (readVMUse) for
// CD-ROM images on storage that is not shared on node from. qemu-server's
// scan_local_volumes runs test_volid over every volume foreach_volid finds, the snapshot
// sections and the pending values included, and dies "local cdrom image" for such a volume
// whatever references it (src/PVE/QemuMigrate.pm lines 405-478, src/PVE/QemuServer.pm
// foreach_volid lines 4526-4590; testdata/task_log_migrate_local_cdrom_snapshot.json):
// the eject of ide2 (moveSeedOut) cannot help there, so the migration is refused before
// anything is written. The current config's CD-ROM is moveSeedOut's. Costs one snapshot
// list (and one read per snapshot) per migration.
func (b *Backend) localCDROMRefs(ctx context.Context, op string, id ID, from string) ([]string, error) {
	u, err := b.readVMUse(ctx, from, id.VMID)
	if err != nil {
		return nil, apiErrorf(op, err, "reading the snapshots and pending values of the VM on node %s before migrating it", from)
	}
	type ref struct{ where, drive string }
	var refs []ref
	for _, k := range slices.Sorted(maps.Keys(u.cfg.Pending)) {
		if isDriveKey(k) {
			refs = append(refs, ref{k + " (a pending value)", u.cfg.Pending[k]})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(u.snaps)) {
		sec := u.snaps[name]
		for _, k := range slices.Sorted(maps.Keys(sec)) {
			if isDriveKey(k) {
				refs = append(refs, ref{k + " in its snapshot " + name, sec[k]})
			}
		}
	}
	shared := map[string]bool{}
	var out []string
	for _, r := range refs {
		vol := driveVolume(r.drive)
		v, ok := parseISOVol(vol)
		if !ok || !isCDROM(r.drive) {
			continue
		}
		sh, seen := shared[v.storage]
		if !seen {
			st, err := b.api.StorageStatus(ctx, from, v.storage)
			switch {
			case err == nil:
				sh = st.Shared == 1
			case pveapi.IsMissingStorage(err):
				sh = false
			default:
				return nil, apiErrorf(op, err, "reading storage %s on node %s to plan the migration", v.storage, from)
			}
			shared[v.storage] = sh
		}
		if !sh {
			out = append(out, r.where+" names "+vol)
		}
	}
	return out, nil
}

// migrationStatus reads the VM's status on the source before a migration.
func (b *Backend) migrationStatus(ctx context.Context, op string, id ID, from, to string) (pveapi.VMStatus, error) {
	vs, err := b.api.VMStatus(ctx, from, id.VMID)
	if err != nil {
		return vs, apiErrorf(op, err, "reading the status on node %s before migrating the VM to node %s", from, to)
	}
	return vs, nil
}

// migrate moves VM id from node from to node to (checkMigrationTarget, readMigration,
// planMigration, then runMigration), bounded by ctx only (the operation's timeout). cfg is
// the VM's current config. userData, when known, rebuilds the seed ISO for the target;
// without it the seed is left ejected (cloud-init reads it at first boot only) and deleted
// from the source.
func (b *Backend) migrate(
	ctx context.Context,
	op string,
	id ID,
	from, to string,
	cfg map[string]string,
	userData []byte,
	userDataKnown bool,
	network *NetworkConfig,
) error {
	if err := b.checkMigrationTarget(to); err != nil {
		return err
	}
	vs, err := b.migrationStatus(ctx, op, id, from, to)
	if err != nil {
		return err
	}
	v, err := b.readMigration(ctx, op, id, from, to, cfg, vs)
	if err != nil {
		return err
	}
	p, err := planMigration(v, b.cfg.ISOStorage, b.cfg.Storage, userDataKnown)
	if err != nil {
		return err
	}
	return b.runMigration(ctx, op, p, cfg, userData, network)
}

// migration is one migrationPlan being run.
type migration struct {
	b        *Backend
	op       string
	id       ID
	from, to string
	cfg      map[string]string
	network  *NetworkConfig // the seed's network-config, rebuilt with the user-data
	seed     seedMove
	upid     string
}

// runMigration runs a migrationPlan on the VM (proved ours by the caller, under its lock):
// the seed carried out of the way (moveSeedOut), the migrate task waited for, then the
// seed attached on the target and deleted from the source (finishSeed); a migration that
// did not happen puts the seed back (rollbackSeed).
func (b *Backend) runMigration(
	ctx context.Context,
	op string,
	p migrationPlan,
	cfg map[string]string,
	userData []byte,
	network *NetworkConfig,
) error {
	m := &migration{b: b, op: op, id: p.id, from: p.from, to: p.to, cfg: cfg, network: network, seed: p.seed}
	if err := m.moveSeedOut(ctx, p.rebuild, userData); err != nil {
		return err
	}
	from, to, id := p.from, p.to, p.id
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm migration", map[string]any{
		"vmid": id.VMID, "name": id.Name, "from": from, "to": to, "online": p.params.Online,
		"with_local_disks": p.params.WithLocalDisks, "targetstorage": p.params.TargetStorage, "seed": m.seed.src.volid(),
	})
	upid, err := b.api.Migrate(ctx, from, id.VMID, p.params)
	if err != nil {
		return m.rollbackSeed(ctx, apiErrorf(op, err, "migrating the VM from node %s to node %s", from, to))
	}
	m.upid = upid
	if err := b.waitTask(ctx, upid, 0); err != nil {
		return m.taskFailed(ctx, err)
	}
	if u, perr := pveapi.ParseUPID(upid); perr == nil && u.Type == "hamigrate" {
		// An HA-managed VM: the task only asked the HA manager to migrate it (qemu-server
		// migrate_vm), which it does afterwards. Wait until the VM shows on the target.
		if err := b.waitOnNode(ctx, id.VMID, to); err != nil {
			return Transientf(
				"the HA manager did not move the VM from node %s to node %s (task %s) in time; check the HA resource in Proxmox, then apply again: %w",
				from,
				to,
				upid,
				err,
			)
		}
	}
	b.invalidateListing()
	return m.finishSeed(ctx)
}

// taskFailed is the migration's end after its task failed or outlived ctx.
func (m *migration) taskFailed(ctx context.Context, err error) error {
	b, from, to, op := m.b, m.from, m.to, m.op
	if ctx.Err() != nil {
		// The task may still be running: the VM holds lock migrate and nothing can be
		// put back now. The next refresh reads where it ended up.
		return Transientf("the migration of the VM from node %s to node %s (task %s) did not finish within the %s timeout; "+
			"it may still be running in Proxmox: wait for the task, then apply again (raise timeouts.%s for large disks): %w",
			from, to, m.upid, op, op, err)
	}
	// The VM is where the task left it: on the source after a failure, but a task that
	// ended on a lost poll may have moved it. Look before cleaning up.
	if at, lerr := b.nodeOf(ctx, m.id.VMID); lerr == nil && at == to {
		return m.finishSeed(ctx)
	}
	return m.rollbackSeed(
		ctx,
		Transientf("migrating the VM from node %s to node %s failed, and it stays on node %s (the task's log in Proxmox says why); "+
			"apply again to retry: %w", from, to, from, err),
	)
}

// waitOnNode polls the listing until vmid is on node and unlocked, bounded by ctx.
func (b *Backend) waitOnNode(ctx context.Context, vmid int, node string) error {
	return b.pollUntil(ctx, 0, func(ctx context.Context) (bool, error) {
		res, err := b.listing(ctx, true)
		if err != nil {
			return false, nil //nolint:nilerr // a listing that failed is asked again, within ctx
		}
		r, ok := findResource(res, vmid)
		return ok && r.Node == node && r.Lock == "", nil
	})
}

func (m *migration) logCleanup(ctx context.Context, msg string, err error) {
	tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox vm migration: "+msg, map[string]any{
		"vmid": m.id.VMID, "name": m.id.Name, "from": m.from, "to": m.to, "upid": m.upid, "volid": m.seed.src.volid(), "error": err.Error(),
	})
}

// localDisks lists the VM's disk volumes (CD-ROMs aside) on storage that is not shared,
// which a live migration must copy (with-local-disks).
func (b *Backend) localDisks(ctx context.Context, node string, cfg map[string]string) ([]string, error) {
	shared := map[string]bool{}
	var local []string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if !isDiskKey(k) || strings.Contains(cfg[k], "media=cdrom") {
			continue
		}
		vol := driveVolume(cfg[k])
		sid, _, ok := strings.Cut(vol, ":")
		if !ok || vol == "none" {
			continue
		}
		sh, seen := shared[sid]
		if !seen {
			st, err := b.api.StorageStatus(ctx, node, sid)
			if err != nil {
				return nil, apiErrorf("update", err, "reading storage %s on node %s to plan the migration", sid, node)
			}
			sh = st.Shared == 1
			shared[sid] = sh
		}
		if !sh {
			local = append(local, vol)
		}
	}
	return local, nil
}

// nodeOf is the node the listing shows vmid on.
func (b *Backend) nodeOf(ctx context.Context, vmid int) (string, error) {
	res, err := b.listing(ctx, true)
	if err != nil {
		return "", err
	}
	r, ok := findResource(res, vmid)
	if !ok {
		return "", fmt.Errorf("VMID %d is not listed", vmid)
	}
	return r.Node, nil
}
