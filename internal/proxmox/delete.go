package proxmox

import (
	"context"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// DeleteOwned is DeleteVM with the node and the uid alone.
func (b *Backend) DeleteOwned(ctx context.Context, id ID, node, uid string) error {
	return b.DeleteVM(ctx, id, DeleteOptions{Node: node, UID: uid})
}

// DeleteOptions are what the caller's state knows about the VM it deletes.
type DeleteOptions struct {
	// Node is the node the caller last knew (for the seed when the VM is gone).
	Node string
	// UID is the uid the mark must carry (ownedBy): a VM with our name and mark but another
	// uid, or none, is not ours (another resource's VM of that name) and is left alone;
	// without a UID no VM is ours.
	UID string
	// Instance is the SMBIOS uuid the caller's state recorded (Owner.Instance).
	Instance string
	// Seed is the seed ISO file the caller recorded (VM.Seed of its last read). It is the
	// one deleted when the VM is gone or is not ours. Empty: <name>-<UID>-seed.iso and, when
	// no VM of that name is listed, the proxy operator's <name>-seed.iso.
	Seed string
	// SeedSwaps says the resource applies cloud-init changes in place (cloud_init_change =
	// "restart", decision: seed-swap): the seed generations next to the one ide2 names, which
	// a swap cut off may have left, are deleted too (a delete of a missing volume is a
	// successful task). A VM whose ide2 names a later generation gets that whatever the flag.
	SeedSwaps bool
	// SeedNodes are the nodes the caller recorded a copy of Seed on (decision: seed-location).
	// A VM that moved off one of them without the provider (an HA recovery moves its config
	// alone) left its seed there: a VM of ours gets its seeds that carry UID deleted on each
	// of these nodes it is not on, as well as on its own; for a VM gone or not ours they are
	// nodes whose failure fails the call, like Node. Empty, or the VM's node alone: nothing
	// more is sent.
	SeedNodes []string
	// HA says the caller's state gave the VM an HA resource: a VM of ours is taken out of
	// HA (releaseHA, decision: ha-placement) before it is stopped.
	HA bool
}

// DeleteVM destroys the VM at id, with its seed ISO, under the per-name lock
// (decision: delete-steps, decision: seed-before-destroy), from what the caller's state
// knows (DeleteOptions). A VM already gone, or one not shown to be this resource's
// (ownedBy), is success without touching it; the seed the caller recorded is then deleted
// wherever it may be, unless the VM at the VMID boots from it. A seed delete that fails on
// the VM's node fails the call before the destroy, so nothing leaks. A hibernated VM is
// destroyed too (fact: hibernated-vm).
func (b *Backend) DeleteVM(ctx context.Context, id ID, opts DeleteOptions) error {
	start := b.clock.Now()
	destroyed, vmNode, err := b.delete(ctx, id, opts)
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

func (b *Backend) delete(ctx context.Context, id ID, opts DeleteOptions) (bool, string, error) {
	if err := id.Validate(); err != nil {
		return false, "", err
	}
	unlock, err := b.locks.lock(ctx, id.Name)
	if err != nil {
		return false, "", Transientf("waiting for another operation on this VM to finish: %w", err)
	}
	defer unlock()

	// On the node the state names, when the VM is there and ours; else from a fresh listing.
	st, err := b.settleOn(ctx, "delete", id, opts.Node, Owner{UID: opts.UID, Instance: opts.Instance}, b.cfg.Budgets.Destroy)
	swept := map[string]bool{} // the seeds a settle's sweep deleted: the next settle's skips them
	for attempt := 1; ; attempt++ {
		if err != nil {
			return false, "", err
		}
		destroyed, node, vanished, derr := b.deleteSettled(ctx, id, opts, st, swept)
		switch {
		case !vanished:
			return destroyed, node, derr
		case attempt == deleteSettles:
			return false, node, Transientf("the VM left node %s again during the delete (a migration, or the HA manager moving it): "+
				"it may still exist; destroy again once it stays on one node", node)
		}
		// The VM was no longer on its node at the stop or the destroy: migrated meanwhile
		// (the HA manager, or by hand), or deleted. A fresh listing tells which, and a VM
		// that moved is destroyed where it is now, never reported gone while it lives.
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm left its node during the delete, settling again", map[string]any{
			"vmid": id.VMID, "name": id.Name, "node": node})
		st, err = b.settle(ctx, "delete", id, Owner{UID: opts.UID, Instance: opts.Instance}, b.cfg.Budgets.Destroy)
	}
}

// deleteSettles is how many times a delete settles the VM: once, and again each time the
// VM was gone from its node at the stop or the destroy (a migration meanwhile).
const deleteSettles = 3

// deleteSettled deletes the VM as st found it: left alone (and its seeds swept) when gone
// or not ours; else stopped, its seeds swept, destroyed. vanished reports a VM no longer
// on the node st named at the stop or the destroy: the caller settles again. swept holds
// the seeds (node|volid) an earlier settle's sweep of this delete deleted, which this one's
// does not delete again, and gets those it deletes.
func (b *Backend) deleteSettled(ctx context.Context, id ID, opts DeleteOptions, st settled,
	swept map[string]bool) (destroyed bool, vmNode string, vanished bool, err error) {
	if st.verdict != verdictOurs {
		reason := "gone"
		switch {
		case st.why == notOursOtherUID || st.why == notOursNoUID:
			reason = string(st.why)
			b.logOtherUID(ctx, id, st.r.Node, opts.UID, st.mark.UID)
		case st.why == notOursRanUnbound:
			reason = string(st.why)
			note(ctx, "VMID %d was not destroyed: its mark carries this resource's uid and says it is being created, as written before a create's "+
				"config step, but the VM has run, so the mark may have been copied onto a VM that is not this "+
				"resource's (decision: instance-binding). "+
				"If it is this resource's VM whose description was rewritten, destroy it by hand (`qm stop %d && qm "+
				"destroy %d --purge`)", id.VMID, id.VMID, id.VMID)
		case st.why == notOursNoUIDHere:
			reason = string(st.why)
			note(ctx, "the state records no uid for this VM, so no VM can be proved this resource's: whatever VMID %d holds was left alone", id.VMID)
		case st.verdict == verdictForeign:
			reason = "not ours"
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm left alone", map[string]any{
			"vmid": id.VMID, "name": id.Name, "reason": reason, "other_name": st.r.Name,
		})
		sw := b.goneSweep(ctx, id, st, opts)
		sw.swept = swept
		return false, "", false, b.sweepSeeds(ctx, sw, st)
	}
	node := st.r.Node
	if err := refuseProtected(id, st.cfg); err != nil {
		return false, node, false, err
	}
	// Out of HA first, or the HA manager would start the VM again (decision: ha-placement).
	if opts.HA {
		if err := b.releaseHA(ctx, "delete", id, node, b.cfg.Budgets.Destroy); err != nil {
			return false, node, false, err
		}
	}
	// The seeds go before the destroy (decision: seed-before-destroy, decision: seed-sweep),
	// deleted while the VM stops, since they do not depend on the stop. A failure leaves the
	// VM for the next Delete.
	sw := b.liveSweep(ctx, id, node, st.cfg, opts, st.res)
	sw.swept = swept
	seed := b.startSeedDelete(ctx, sw, st)
	// Stop, whatever the listing says (it may lag, fact: listing-lag, and shows a paused VM
	// as running, fact: paused-listed-running): a VM not running ends the stop at once.
	if gone, err := b.stopForDelete(ctx, node, id.VMID); gone || err != nil {
		serr := seed.join()
		if gone {
			return false, node, serr == nil, serr
		}
		return false, node, false, err
	}
	if err := seed.join(); err != nil {
		return false, node, false, err
	}
	// Destroy with purge, once the seed is gone.
	upid, err := b.api.Destroy(ctx, node, id.VMID)
	switch {
	case err == nil:
	case isNotExist(err):
		return false, node, true, nil
	case isRunningDestroyFailed(err):
		return false, node, false, Transientf("the VM was started again while being deleted; destroy again")
	default:
		return false, node, false, apiErrorf("delete", err, "destroying the VM on node %s", node)
	}
	if err := b.waitTask(ctx, upid, b.cfg.Budgets.Destroy); err != nil {
		return false, node, false, err
	}
	b.holders.forget(id.VMID) // a VM made at this VMID later is read anew
	return true, node, false, nil
}

// stopForDelete stops the VM; gone reports a VM that vanished meanwhile. The stop is asked
// for without reading the status first: a stop of a VM that is not running (stopped, or
// hibernated) is a task that ends OK at once, before the lock is checked (qemu-server
// QemuServer.pm _do_vm_stop: check_running first), so a status read would only add a
// round trip to every destroy of a running VM.
func (b *Backend) stopForDelete(ctx context.Context, node string, vmid int) (gone bool, err error) {
	if err := b.stopAndWait(ctx, "delete", node, vmid); err != nil {
		if isNotExist(err) {
			return true, nil
		}
		return false, err
	}
	return false, nil
}

// sameNameElsewhere returns a qemu, non-template entry named id.Name at a VMID other than
// id.VMID, from the listing the verdict was read from: a VM that may boot from the
// proxy operator's <name>-seed.iso. A nameless entry (a clone in progress) cannot be
// attributed and is ignored; the VM at id.VMID is judged by its config instead.
func sameNameElsewhere(res []pveapi.Resource, id ID) (pveapi.Resource, bool) {
	for _, r := range res {
		if r.VMID != id.VMID && r.Type == "qemu" && r.Template == 0 && r.Name != "" && r.Name == id.Name {
			return r, true
		}
	}
	return pveapi.Resource{}, false
}
