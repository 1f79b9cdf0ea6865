package proxmox

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// A proxy VM's HA resource (decision: ha-placement): the section "vm:<vmid>" of Proxmox's
// ha/resources.cfg, which asks the HA manager to keep the VM in a state and to recover it
// on another node when its node fails. It is written only for a VM shown to be the
// resource's (ownedBy, through settle or the create's finalize), and removed before the VM
// is destroyed, so that no HA resource outlives the VM it names.

// HA states a proxy VM's HA resource may request (pve-ha-manager src/PVE/HA/Resources.pm:19-58;
// "enabled" is read as started, "disabled" is left to Proxmox's own recovery and is not
// offered).
const (
	HAStateStarted = "started"
	HAStateStopped = "stopped"
	HAStateIgnored = "ignored"
)

// HA is what a proxy VM's HA resource requests. A value Proxmox leaves unset reads as its
// default (DefaultHA).
type HA struct {
	// State is HAStateStarted, HAStateStopped or HAStateIgnored.
	State string
	// MaxRestart is how often the HA manager restarts the VM on its node after a failed
	// start before it relocates it; MaxRelocate how often it relocates it.
	MaxRestart, MaxRelocate int
	// Failback moves the VM back to the node a node-affinity rule prefers when that node
	// comes back.
	Failback bool
}

// DefaultHA is what Proxmox gives an HA resource that sets nothing (src/PVE/HA/Resources.pm:
// state 23, failback 72, max_restart 80, max_relocate 88).
func DefaultHA() HA {
	return HA{State: HAStateStarted, MaxRestart: 1, MaxRelocate: 1, Failback: true}
}

// Managed reports whether the HA manager acts on the VM: every state but ignored, which
// Proxmox treats as not HA-managed (src/PVE/HA/Config.pm:352-360, vm_is_ha_managed).
func (h HA) Managed() bool { return h.State != HAStateIgnored }

// HAChange is an update's change to the VM's HA resource: Set writes it (creating it when
// the VM has none), Remove deletes it with purge.
type HAChange struct {
	Set    *HA
	Remove bool
}

// haFromResource reads an HA resource, Proxmox's defaults for what it leaves unset.
func haFromResource(r pveapi.HAResource) HA {
	h := DefaultHA()
	switch r.State {
	case "", "enabled": // enabled is an old alias of started (Resources.pm:27)
	default:
		h.State = r.State
	}
	if r.MaxRestart != nil {
		h.MaxRestart = int(*r.MaxRestart)
	}
	if r.MaxRelocate != nil {
		h.MaxRelocate = int(*r.MaxRelocate)
	}
	if r.Failback != nil {
		h.Failback = bool(*r.Failback)
	}
	return h
}

// haParams is the form that writes h in full, so a value set by hand is put back.
func haParams(vmid int, h HA) pveapi.HAResourceParams {
	return pveapi.HAResourceParams{
		SID: pveapi.HASID(vmid), State: h.State,
		MaxRestart: pveapi.IntPtr(h.MaxRestart), MaxRelocate: pveapi.IntPtr(h.MaxRelocate), Failback: pveapi.BoolPtr(h.Failback),
	}
}

// readHA reads the VM's HA resource: nil when it has none. A token without Sys.Audit on /
// cannot read it (Resources.pm read's permissions).
func (b *Backend) readHA(ctx context.Context, vmid int) (*HA, error) {
	r, err := b.api.HAResource(ctx, pveapi.HASID(vmid))
	switch {
	case err == nil:
		h := haFromResource(r)
		return &h, nil
	case pveapi.IsHAResourceMissing(err):
		return nil, nil
	default:
		return nil, apiErrorf("get", err, "reading HA resource %s (needs Sys.Audit on /)", pveapi.HASID(vmid))
	}
}

// putHA makes the VM's HA resource request h: created, or, when one exists already (an
// interrupted create of this resource, or one made by hand for this resource's VM),
// rewritten. The caller has shown the VM to be the resource's.
func (b *Backend) putHA(ctx context.Context, op string, vmid int, h HA) error {
	if err := checkHA(h); err != nil {
		return err
	}
	p := haParams(vmid, h)
	err := b.api.CreateHAResource(ctx, p)
	if pveapi.IsHAResourceExists(err) {
		err = b.api.UpdateHAResource(ctx, p)
	}
	if err != nil {
		return apiErrorf(op, err, "writing HA resource %s (needs Sys.Console on /)", p.SID)
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox ha resource written", map[string]any{
		"vmid": vmid, "sid": p.SID, "state": h.State, "max_restart": h.MaxRestart, "max_relocate": h.MaxRelocate, "failback": h.Failback})
	return nil
}

// setHA rewrites the VM's HA resource, creating it when it is gone (removed outside
// Terraform: the configuration asks for it).
func (b *Backend) setHA(ctx context.Context, op string, vmid int, h HA) error {
	p := haParams(vmid, h)
	err := b.api.UpdateHAResource(ctx, p)
	if pveapi.IsHAResourceMissing(err) {
		return b.putHA(ctx, op, vmid, h)
	}
	if err != nil {
		return apiErrorf(op, err, "writing HA resource %s (needs Sys.Console on /)", p.SID)
	}
	return nil
}

// removeHA deletes the VM's HA resource without purge (decision: ha-placement): purge
// would take the VM out of every HA rule, foreign ones included, and delete a rule left
// without resources (pve-ha-manager src/PVE/HA/Config.pm:437-465), so a replacement at the
// same VMIDs lost its proxy_ha_rule until the next apply. The destroy that follows purges
// nothing more: the VM is no longer an HA service (Config.pm:440). One already gone is
// fine. It reports whether there was one.
func (b *Backend) removeHA(ctx context.Context, op string, vmid int) (bool, error) {
	sid := pveapi.HASID(vmid)
	err := b.api.DeleteHAResource(ctx, sid, false)
	switch {
	case err == nil:
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox ha resource removed", map[string]any{"vmid": vmid, "sid": sid})
		return true, nil
	case pveapi.IsHANotManaged(err):
		return false, nil
	default:
		return false, apiErrorf(op, err, "removing HA resource %s (needs Sys.Console on /)", sid)
	}
}

// releaseHA takes the VM out of HA and waits until the HA manager lets go of it: its
// status no longer lists the VM's service (the CRM drops a removed resource from the
// manager status at its next round, src/PVE/HA/Manager.pm; until then the LRM may still
// act on it), within budget. Only then may the VM be stopped and destroyed without HA
// starting it again.
func (b *Backend) releaseHA(ctx context.Context, op string, id ID, node string, budget time.Duration) error {
	had, err := b.removeHA(ctx, op, id.VMID)
	if err != nil || !had {
		return err
	}
	sid := pveapi.HASID(id.VMID)
	spec := waitSpec{kind: "ha", what: "the HA manager to let go of " + sid, vmid: id.VMID, node: node, budget: budget}
	return b.wait(ctx, spec, func(ctx context.Context) observation {
		st, err := b.api.HAStatus(ctx)
		if err != nil {
			return pollFailed(op, err, "the HA status could not be read", "reading the HA status")
		}
		for _, e := range st {
			if e.SID == sid || e.ID == "service:"+sid {
				return keep(fmt.Sprintf("%s still listed: %s", sid, e.Status))
			}
		}
		return done(sid + " no longer listed")
	})
}

// haHanded reports a power task that only handed the request to the HA manager: for an
// HA-managed VM the start, stop and shutdown endpoints run a "hastart" or "hastop" task
// that submits the request and ends (qemu-server src/PVE/API2/Qemu.pm:3631-3642,
// 3750-3768, 3932-3945); the HA manager's LRM starts or stops the VM later, and a stop
// also sets the resource's requested state to stopped (pve-ha-manager
// src/PVE/HA/Manager.pm:1422-1437).
func haHanded(upid string) bool {
	u, err := pveapi.ParseUPID(upid)
	return err == nil && (u.Type == "hastart" || u.Type == "hastop")
}

// waitHAPower waits, after a haHanded task, until the HA manager has brought the VM to
// status want ("running" or "stopped") on node, within budget. A VM that is gone, or no
// longer on node (the HA manager relocated it), cannot get there by waiting here.
func (b *Backend) waitHAPower(ctx context.Context, op, node string, vmid int, want string, budget time.Duration) error {
	spec := waitSpec{kind: "ha", what: "the HA manager to make the VM " + want, vmid: vmid, node: node, budget: budget}
	return b.wait(ctx, spec, func(ctx context.Context) observation {
		st, err := b.api.VMStatus(ctx, node, vmid)
		switch {
		case err == nil:
		case isNotExist(err):
			return cannot("the VM is not on node "+node, Transientf("the VM left node %s while the HA manager was to make it %s "+
				"(the HA manager relocated it, or it was deleted); apply again", node, want))
		default:
			return pollFailed(op, err, "its status could not be read", "reading the status on node %s", node)
		}
		seen := fmt.Sprintf("status %s, qmpstatus %s", st.Status, st.QMPStatus)
		if st.Status == want {
			return done(seen)
		}
		return keep(seen)
	})
}

// getHA reads the HA resource of a VM Get read (GetOptions.HA). A read that fails leaves
// VM.HA unset and says why (VM.HAUnread): the caller keeps what it knew.
func (b *Backend) getHA(ctx context.Context, vm *VM) {
	h, err := b.readHA(ctx, vm.ID.VMID)
	if err != nil {
		vm.HAUnread, vm.HAUnreadWhy = true, err.Error()
		tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox ha resource not read", map[string]any{"vmid": vm.ID.VMID, "error": err.Error()})
		return
	}
	vm.HA, vm.HARead = h, true
}

// ha writes the VM's HA resource (Changes.HA.Set), after every other change of the update:
// the VM is in the power state asked for by then, so the HA manager takes it over as it
// is. A removal, or ignored, was done first (haBeforeChanges).
func (r *updateRun) ha(ctx context.Context) error {
	c := r.ch.HA
	switch {
	case c == nil || r.haDone:
		return nil
	case c.Set != nil:
		if err := checkHA(*c.Set); err != nil {
			return err
		}
		if err := r.b.setHA(ctx, "update", r.id.VMID, *c.Set); err != nil {
			return err
		}
	default:
		return nil
	}
	r.did = append(r.did, "ha")
	return nil
}

// checkHA refuses what Proxmox would refuse (src/PVE/HA/Resources.pm:19-90): a state this
// provider does not offer, a negative count.
func checkHA(h HA) error {
	switch {
	case h.State != HAStateStarted && h.State != HAStateStopped && h.State != HAStateIgnored:
		return Permanentf("HA state %q is not one of started, stopped, ignored", h.State)
	case h.MaxRestart < 0 || h.MaxRelocate < 0:
		return Permanentf("HA max_restart and max_relocate must be 0 or more (got %d and %d)", h.MaxRestart, h.MaxRelocate)
	}
	return nil
}

// haBeforeChanges applies an HA change that hands the VM back to the provider (removed, or
// ignored) before the update's other changes, so that its migration and power requests
// reach the VM directly instead of the HA manager; it reports whether it did. Any other HA
// change comes last (updateRun.ha).
func (b *Backend) haBeforeChanges(ctx context.Context, id ID, ch Changes) (bool, error) {
	c := ch.HA
	switch {
	case c == nil:
		return false, nil
	case c.Remove:
		_, err := b.removeHA(ctx, "update", id.VMID)
		return err == nil, err
	case c.Set != nil && !c.Set.Managed():
		err := b.setHA(ctx, "update", id.VMID, *c.Set)
		return err == nil, err
	}
	return false, nil
}
