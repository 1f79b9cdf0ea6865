package proxmox

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Delete runs entry 11 with review findings CR1, CR2 and P1, under the per-name lock:
// stop (a paused VM too) and, at the same time, delete the seed ISO on the VM's node;
// once both ended, destroy with
// purge=1&destroy-unreferenced-disks=1. A VM already gone, or a VMID that now holds a
// VM that is not ours (another name, no mark, a container), is success without touching
// it, and the seed is deleted on every configured node (plus node, the one the caller
// last knew, when it is not configured), unless the listing shows a VM of the same name
// at another VMID (another workspace's or an operator's), whose seed it may be: then the
// seed is left on every node. A seed delete that fails on the VM's node fails
// the call before the destroy, so nothing leaks; on the every-node path a node's failure
// is logged and skipped unless it is Permanent (a 403) or ctx ended. A task lock other
// than suspended, a clone in progress or a listing status "unknown" is waited on within
// Budgets.Destroy. A hibernated VM of ours is destroyed (Phase 10).
func (b *Backend) Delete(ctx context.Context, id ID, node string) error {
	return b.DeleteOwned(ctx, id, node, "")
}

// DeleteOwned is Delete that also checks the mark's uid, as GetOptions.UID does: when uid
// is set and the VM at id's VMID has our name and mark but another uid, it is another
// workspace's live VM (cloned onto a VMID we had saved before our clone was refused):
// DeleteOwned succeeds without touching it, and leaves the seed ISO <name>-seed.iso alone
// too, since that VM's seed bears the same name. Empty uid: Delete.
func (b *Backend) DeleteOwned(ctx context.Context, id ID, node, uid string) error {
	start := b.clock.Now()
	destroyed, vmNode, err := b.delete(ctx, id, node, uid)
	b.invalidateListing()
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "destroyed": destroyed, "duration_ms": b.clock.Now().Sub(start).Milliseconds()}
	if vmNode != "" {
		fields["node"] = vmNode
	}
	if err != nil {
		err = wrap("delete", id.Name, id.VMID, err)
		fields["class"], fields["error"] = ClassOf(err).String(), err.Error()
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm delete failed", fields)
		return err
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm deleted", fields)
	return nil
}

func (b *Backend) delete(ctx context.Context, id ID, hint, uid string) (bool, string, error) {
	if err := id.Validate(); err != nil {
		return false, "", err
	}
	unlock, err := b.locks.lock(ctx, id.Name)
	if err != nil {
		return false, "", Transientf("waiting for another operation on this VM to finish: %w", err)
	}
	defer unlock()

	st, err := b.settle(ctx, "delete", id, uid, b.cfg.Budgets.Destroy)
	if err != nil {
		return false, "", err
	}
	if st.otherUID != "" {
		// Our name, our mark, another uid: a live VM of another workspace. Its seed ISO
		// has our seed's name; ours, if any, is the same file. Leave both alone.
		b.logOtherUID(ctx, id, st.r.Node, uid, st.otherUID)
		return false, "", nil
	}
	if st.verdict != verdictOurs {
		reason := "gone"
		if st.verdict == verdictForeign {
			reason = "not ours"
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm left alone", map[string]any{
			"vmid": id.VMID, "name": id.Name, "reason": reason, "other_name": st.r.Name,
		})
		// The seed is <name>-seed.iso whoever made the VM: a live VM of our name at another
		// VMID (another workspace's, or an operator's) may boot from it. The ISO storage
		// may be shared, so its node does not tell where the file is: leave it on every node.
		if r, ok := sameNameElsewhere(st.res, id); ok {
			tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed left alone: a VM of the same name exists", map[string]any{
				"vmid": id.VMID, "name": id.Name, "other_vmid": r.VMID, "other_node": r.Node,
			})
			return false, "", nil
		}
		return false, "", b.deleteSeedEverywhere(ctx, id.Name, hint)
	}
	node := st.r.Node
	// 6. The seed before the destroy (CR1), deleted while the VM stops: it does not depend
	// on the stop. A failure leaves the VM for the next Delete.
	seed := b.startSeedDelete(ctx, node, id.Name)
	// 5. Stop unless stopped; status/current, since the listing may lag (P6) and shows a
	// paused VM as running (F14).
	if gone, err := b.stopForDelete(ctx, node, id.VMID); gone || err != nil {
		serr := seed.join()
		if gone {
			return false, node, serr
		}
		return false, node, err
	}
	if err := seed.join(); err != nil {
		return false, node, err
	}
	// 7. Destroy with purge.
	upid, err := b.api.Destroy(ctx, node, id.VMID)
	switch {
	case err == nil:
	case isNotExist(err):
		return false, node, nil
	case isRunningDestroyFailed(err):
		return false, node, Transientf("the VM was started again while being deleted; destroy again")
	default:
		return false, node, apiErrorf("delete", err, "destroying the VM on node %s", node)
	}
	if err := b.waitTask(ctx, upid, b.cfg.Budgets.Destroy); err != nil {
		return false, node, err
	}
	return true, node, nil
}

// stopForDelete stops the VM unless status/current says it is stopped; gone reports a VM
// that vanished meanwhile.
func (b *Backend) stopForDelete(ctx context.Context, node string, vmid int) (gone bool, err error) {
	vs, err := b.api.VMStatus(ctx, node, vmid)
	switch {
	case err == nil:
	case isNotExist(err):
		return true, nil
	default:
		return false, apiErrorf("delete", err, "reading the status on node %s", node)
	}
	if vs.Status == "stopped" {
		return false, nil
	}
	if err := b.stopAndWait(ctx, "delete", node, vmid); err != nil {
		if isNotExist(err) {
			return true, nil
		}
		return false, err
	}
	return false, nil
}

// sameNameElsewhere returns a qemu, non-template entry named id.Name at a VMID other than
// id.VMID, from the listing the verdict was read from. A nameless entry (a clone in
// progress) cannot be attributed and is ignored. An unmarked VM of our name at our own
// VMID does not count: entry 11 deletes the seed then (it is ours by name, not theirs).
func sameNameElsewhere(res []pveapi.Resource, id ID) (pveapi.Resource, bool) {
	for _, r := range res {
		if r.VMID != id.VMID && r.Type == "qemu" && r.Template == 0 && r.Name != "" && r.Name == id.Name {
			return r, true
		}
	}
	return pveapi.Resource{}, false
}

// deleteSeed deletes <name>-seed.iso on node's ISO storage and waits for the task; a
// missing volume is still a successful task (F13).
func (b *Backend) deleteSeed(ctx context.Context, node, name string) error {
	if b.cfg.ISOStorage == "" {
		return nil
	}
	volid := seedVolID(b.cfg.ISOStorage, name)
	upid, err := b.api.DeleteVolume(ctx, node, b.cfg.ISOStorage, volid)
	if err != nil {
		if pveapi.IsForbidden(err) {
			return apiErrorf("delete", err, "deleting the seed ISO %s on node %s (the token needs Datastore.Allocate on /storage/%s)", volid, node, b.cfg.ISOStorage)
		}
		return apiErrorf("delete", err, "deleting the seed ISO %s on node %s", volid, node)
	}
	return b.waitTask(ctx, upid, b.cfg.Budgets.SeedDelete)
}

// deleteSeedEverywhere deletes the seed on every configured node (the VM's node is not
// known), skipping a node whose request or task fails unless the failure is Permanent
// (other than a storage the node lacks) or ctx ended (P1).
func (b *Backend) deleteSeedEverywhere(ctx context.Context, name, hint string) error {
	nodes := slices.Clone(b.cfg.Nodes)
	if hint != "" && !slices.Contains(nodes, hint) {
		nodes = append(nodes, hint)
	}
	for _, n := range nodes {
		err := b.deleteSeed(ctx, n, name)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return Transientf("deleting the seed ISO: %w", ctx.Err())
		}
		if ClassOf(err) == pveapi.Permanent && !isNoSuchStorage(err) {
			return err
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed delete skipped on node", map[string]any{
			"name": name, "node": n, "error": err.Error(),
		})
	}
	return nil
}
