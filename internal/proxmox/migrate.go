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
		return m.rollbackSeed(ctx, err)
	}
	p := pveapi.MigrateParams{Target: to, Online: running, WithLocalDisks: running && len(local) > 0}
	if len(local) > 0 && b.cfg.Storage != "" {
		p.TargetStorage = b.cfg.Storage
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm migration", map[string]any{
		"vmid": id.VMID, "name": id.Name, "from": from, "to": to, "online": p.Online,
		"with_local_disks": p.WithLocalDisks, "targetstorage": p.TargetStorage, "seed": m.seed.src.volid(),
	})
	upid, err := b.api.Migrate(ctx, from, id.VMID, p)
	if err != nil {
		return m.rollbackSeed(ctx, apiErrorf(op, err, "migrating the VM from node %s to node %s", from, to))
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
			return m.finishSeed(ctx)
		}
		return m.rollbackSeed(ctx, Transientf("migrating the VM from node %s to node %s failed, and it stays on node %s (the task's log in Proxmox says why); "+
			"apply again to retry: %w", from, to, from, err))
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
	return m.finishSeed(ctx)
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
