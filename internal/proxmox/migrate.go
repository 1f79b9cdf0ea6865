package proxmox

import (
	"bytes"
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

// seedMove is what a migration does with the VM's seed ISO.
type seedMove struct {
	vol      string // the seed's volume id on ide2; empty: no seed of ours
	ide2     string // ide2's value before the eject
	iso      []byte // the rebuilt seed to upload to the target; nil: not known
	ejected  bool
	uploaded bool
}

// migration is one move of a VM from one node to another.
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

// migrate moves VM id from node from to node to and waits for the task, bounded by ctx
// only (the operation's timeout). cfg is the VM's current config. userData, when known,
// rebuilds the seed ISO for the target; without it the seed is left ejected (cloud-init
// reads it at first boot only) and deleted from the source.
func (b *Backend) migrate(ctx context.Context, op string, id ID, from, to string, cfg map[string]string, userData []byte, userDataKnown bool, network *NetworkConfig) error {
	if len(b.cfg.Nodes) > 0 && !slices.Contains(b.cfg.Nodes, to) {
		return Permanentf("node %q is not one of the provider's nodes (%s)", to, strings.Join(b.cfg.Nodes, ", "))
	}
	m := &migration{b: b, op: op, id: id, from: from, to: to, cfg: cfg, network: network}
	st, err := b.api.VMStatus(ctx, from, id.VMID)
	if err != nil {
		return apiErrorf(op, err, "reading the status on node %s before migrating the VM to node %s", from, to)
	}
	if st.Lock == "suspended" || cfg["lock"] == "suspended" {
		return Permanentf("the VM is hibernated on node %s, and Proxmox cannot migrate a hibernated VM; resume it (or stop it) in Proxmox, then apply again", from)
	}
	running := st.Status == "running"
	if err := m.prepareSeed(ctx, userData, userDataKnown); err != nil {
		return err
	}
	local, err := b.localDisks(ctx, from, cfg)
	if err != nil {
		m.rollback(ctx)
		return err
	}
	p := pveapi.MigrateParams{Target: to, Online: running, WithLocalDisks: running && len(local) > 0}
	if len(local) > 0 && b.cfg.Storage != "" {
		p.TargetStorage = b.cfg.Storage
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm migration", map[string]any{
		"vmid": id.VMID, "name": id.Name, "from": from, "to": to, "online": p.Online,
		"with_local_disks": p.WithLocalDisks, "targetstorage": p.TargetStorage, "seed": m.seed.vol,
	})
	upid, err := b.api.Migrate(ctx, from, id.VMID, p)
	if err != nil {
		m.rollback(ctx)
		return apiErrorf(op, err, "migrating the VM from node %s to node %s", from, to)
	}
	m.upid = upid
	if err := b.waitTask(ctx, upid, 0); err != nil {
		if ctx.Err() != nil {
			// The task may still be running: the VM holds lock migrate and nothing can be
			// put back now. The next refresh reads where it ended up.
			return Transientf("the migration of the VM from node %s to node %s (task %s) did not finish within the %s timeout; "+
				"it may still be running in Proxmox: wait for the task, then apply again (raise timeouts.%s for large disks): %w",
				from, to, upid, op, op, err)
		}
		// The VM is where the task left it: on the source after a failure, but a task that
		// ended on a lost poll may have moved it. Look before cleaning up.
		if at, lerr := b.nodeOf(ctx, id.VMID); lerr == nil && at == to {
			m.finish(ctx)
			return nil
		}
		m.rollback(ctx)
		return Transientf("migrating the VM from node %s to node %s failed, and it stays on node %s (the task's log in Proxmox says why); "+
			"apply again to retry: %w", from, to, from, err)
	}
	if u, perr := pveapi.ParseUPID(upid); perr == nil && u.Type == "hamigrate" {
		// An HA-managed VM: the task only asked the HA manager to migrate it (qemu-server
		// migrate_vm), which it does afterwards. Wait until the VM shows on the target.
		if err := b.waitOnNode(ctx, id.VMID, to); err != nil {
			return Transientf("the HA manager did not move the VM from node %s to node %s (task %s) in time; check the HA resource in Proxmox, then apply again: %w",
				from, to, upid, err)
		}
	}
	b.invalidateListing()
	m.finish(ctx)
	return nil
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

// prepareSeed ejects the seed ISO and uploads it to the target, when it is on a storage
// the target does not share.
func (m *migration) prepareSeed(ctx context.Context, userData []byte, known bool) error {
	b := m.b
	iso := b.cfg.ISOStorage
	vol, _, _ := strings.Cut(m.cfg["ide2"], ",")
	if iso == "" || !strings.HasPrefix(vol, iso+":iso/") || !strings.Contains(m.cfg["ide2"], "media=cdrom") {
		return nil
	}
	ss, err := b.api.StorageStatus(ctx, m.from, iso)
	if err != nil {
		return apiErrorf(m.op, err, "reading storage %s on node %s before migrating the VM", iso, m.from)
	}
	if ss.Shared == 1 {
		return nil // the target sees the same file
	}
	m.seed = seedMove{vol: vol, ide2: m.cfg["ide2"]}
	if known {
		data, err := b.buildSeedFor(m.id.Name, userData, m.network, m.cfg["net0"])
		if err != nil {
			return err
		}
		m.seed.iso = data
		file := strings.TrimPrefix(vol, iso+":iso/")
		upid, err := b.api.UploadISO(ctx, m.to, iso, file, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return apiErrorf(m.op, err, "uploading the seed ISO %s to storage %s on node %s before the migration", file, iso, m.to)
		}
		if err := b.waitTask(ctx, upid, b.cfg.Budgets.Upload); err != nil {
			return err
		}
		m.seed.uploaded = true
	}
	if err := b.api.SetVMConfig(ctx, m.from, m.id.VMID, map[string]string{"ide2": "none,media=cdrom"}); err != nil {
		m.deleteSeed(ctx, m.to)
		return apiErrorf(m.op, err, "ejecting the seed ISO on node %s before the migration (Proxmox cannot migrate a VM with a CD-ROM ISO on a storage that is not shared)", m.from)
	}
	m.seed.ejected = true
	return nil
}

// finish attaches the seed on the target and deletes it from the source. Failures here
// are logged: the VM has moved, and cloud-init does not read the seed again.
func (m *migration) finish(ctx context.Context) {
	if m.seed.vol == "" {
		return
	}
	if m.seed.uploaded {
		if err := m.b.api.SetVMConfig(ctx, m.to, m.id.VMID, map[string]string{"ide2": m.seed.ide2}); err != nil {
			m.logCleanup(ctx, "attaching the seed ISO on the target failed", err)
		}
	}
	m.deleteSeed(ctx, m.from)
}

// rollback undoes prepareSeed after a migration that did not happen.
func (m *migration) rollback(ctx context.Context) {
	if m.seed.ejected {
		if err := m.b.api.SetVMConfig(ctx, m.from, m.id.VMID, map[string]string{"ide2": m.seed.ide2}); err != nil {
			m.logCleanup(ctx, "attaching the seed ISO again on the source failed", err)
		}
	}
	if m.seed.uploaded {
		m.deleteSeed(ctx, m.to)
	}
}

func (m *migration) deleteSeed(ctx context.Context, node string) {
	b := m.b
	upid, err := b.api.DeleteVolume(ctx, node, b.cfg.ISOStorage, m.seed.vol)
	if err == nil {
		err = b.waitTask(ctx, upid, b.cfg.Budgets.SeedDelete)
	}
	if err != nil {
		m.logCleanup(ctx, "deleting the seed ISO copy on node "+node+" failed", err)
	}
}

func (m *migration) logCleanup(ctx context.Context, msg string, err error) {
	tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox vm migration: "+msg, map[string]any{
		"vmid": m.id.VMID, "name": m.id.Name, "from": m.from, "to": m.to, "upid": m.upid, "volid": m.seed.vol, "error": err.Error(),
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
		vol, _, _ := strings.Cut(cfg[k], ",")
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

// moveIfAsked is Update's migration: when ch.Node names another node than the VM's, the VM
// migrates there first, and the rest of the update runs on the target with its config read
// again. It reports whether the VM moved.
func (b *Backend) moveIfAsked(ctx context.Context, id ID, node string, cfg map[string]string, ch Changes) (string, map[string]string, bool, error) {
	if ch.Node == nil || *ch.Node == "" || *ch.Node == node {
		return node, cfg, false, nil
	}
	to := *ch.Node
	if err := b.migrate(ctx, "update", id, node, to, cfg, ch.UserData, ch.UserDataKnown, ch.Network); err != nil {
		return node, cfg, false, err
	}
	moved, err := b.api.VMConfig(ctx, to, id.VMID)
	if err != nil {
		return to, cfg, true, apiErrorf("update", err, "reading the config on node %s after the migration", to)
	}
	return to, moved, true, nil
}
