package proxmox

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// PowerOp is what the proxy_vm_power action asks of a VM.
type PowerOp string

// The power operations. Shutdown and reboot are graceful, as the restart of a cores
// change is (shutdownAndWait: the guest has the timeout, then Proxmox stops it).
const (
	PowerStart    PowerOp = "start"
	PowerShutdown PowerOp = "shutdown"
	PowerReboot   PowerOp = "reboot"
	PowerStop     PowerOp = "stop"
)

// PowerOps are the operations, in the order the docs list them.
var PowerOps = []PowerOp{PowerStart, PowerShutdown, PowerReboot, PowerStop}

// PowerOptions says what Power does and to which resource's VM.
type PowerOptions struct {
	Op PowerOp
	// UID is the resource's uid: the VM's mark must carry it (ownedBy), as for every write.
	UID string
	// ShutdownTimeout is what shutdown and reboot give the guest before Proxmox stops it
	// (zero: DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// Progress, when set, is told each step as it starts and ends.
	Progress func(msg string)
}

// PowerResult is what Power did.
type PowerResult struct {
	Node string
	// Did lists the power requests sent ("shutdown", "stop", "start"), empty when the VM
	// was already where Op leaves it.
	Did []string
	// Status is the VM's status afterwards: running or stopped.
	Status string
}

// Power runs a power operation on the VM at id, under the per-name lock, after proving it
// is the resource's: the VM's config must name it and its mark carry opts.UID (ownedBy, as
// for Update and Delete). A VM gone, or not proved ours, gets no request but reads: the
// error is ErrNotFound, naming why.
//
//   - start: a stopped VM is started (a hibernated one resumes; its seed ISO is checked
//     first, as before any start), a paused one stopped then started; a running one is left.
//   - shutdown: a running VM is shut down gracefully within ShutdownTimeout, then Proxmox
//     stops it (one qmshutdown task with forceStop); a paused one is stopped; a stopped one
//     is left.
//   - reboot: shutdown (as above) then start; a stopped VM is started.
//   - stop: a running or paused VM is stopped at once (no shutdown); a stopped one is left.
//
// A start waits until the VM runs, not for its address.
func (b *Backend) Power(ctx context.Context, id ID, opts PowerOptions) (PowerResult, error) {
	start := b.clock.Now()
	res, err := b.power(ctx, id, opts)
	b.invalidateListing()
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "node": res.Node, "op": string(opts.Op), "did": res.Did,
		"duration_ms": b.clock.Now().Sub(start).Milliseconds()}
	if err != nil {
		err = wrap(string(opts.Op), id.Name, id.VMID, err)
		fields["class"], fields["error"] = ClassOf(err).String(), err.Error()
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm power failed", fields)
		return res, err
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm power", fields)
	return res, nil
}

func (b *Backend) power(ctx context.Context, id ID, opts PowerOptions) (PowerResult, error) {
	var res PowerResult
	if err := id.Validate(); err != nil {
		return res, err
	}
	switch opts.Op {
	case PowerStart, PowerShutdown, PowerReboot, PowerStop:
	default:
		return res, Permanentf("power %q is not one of start, shutdown, reboot, stop", opts.Op)
	}
	timeout := opts.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
	say := func(format string, args ...any) {
		if opts.Progress != nil {
			opts.Progress(fmt.Sprintf("%s (VMID %d): ", id.Name, id.VMID) + fmt.Sprintf(format, args...))
		}
	}
	unlock, err := b.locks.lock(ctx, id.Name)
	if err != nil {
		return res, Transientf("waiting for another operation on this VM to finish: %w", err)
	}
	defer unlock()

	st, err := b.settle(ctx, string(opts.Op), id, opts.UID, b.cfg.Budgets.Destroy)
	if err != nil {
		return res, err
	}
	switch st.verdict {
	case verdictGone:
		return res, notFoundf("VMID %d is not in the cluster any more", id.VMID)
	case verdictForeign:
		return res, refusedNotOurs(b.notOursErr(ctx, id, st.r.Node, st.cfg, opts.UID, st.mark, st.why))
	}
	if ParseMark(st.cfg["description"]).Creating {
		// Still marked creating: the mark's uid alone proves nothing here (a copied mark
		// carries the uid a tainted state holds); only the create that finishes it, or the
		// one that takes it over with its proof (decision: creating-proof), may act on it.
		return res, Permanentf("VM %s (VMID %d) is still marked as being created (%s=%s): the action never powers a VM "+
			"before its create has finished it; apply the configuration that creates it, or destroy it", id.Name, id.VMID, MarkKeyState, MarkStateCreating)
	}
	node := st.r.Node
	res.Node = node
	vs, err := b.api.VMStatus(ctx, node, id.VMID)
	if err != nil {
		return res, apiErrorf(string(opts.Op), err, "reading the status on node %s", node)
	}
	hibernated := vs.Lock == "suspended" || st.cfg["lock"] == "suspended"
	running := vs.Status == "running"
	paused := running && !guestRunning(vs.Status, vs.QMPStatus) && vs.QMPStatus != "prelaunch"
	op := string(opts.Op)

	stop := func() error {
		say("stopping on node %s", node)
		if err := b.stopAndWait(ctx, op, node, id.VMID); err != nil {
			return err
		}
		res.Did = append(res.Did, "stop")
		say("stopped")
		return nil
	}
	shutdown := func() error {
		if paused {
			say("paused, so it cannot act on a shutdown request: stopping it")
			return stop()
		}
		say("shutting down on node %s (the guest has %s, then Proxmox stops it)", node, timeout)
		if err := b.shutdownAndWait(ctx, op, node, id.VMID, timeout); err != nil {
			return err
		}
		res.Did = append(res.Did, "shutdown")
		say("shut down")
		return nil
	}
	startVM := func() error {
		fix, err := b.ensureSeed(ctx, node, id, st.cfg, Changes{}, hibernated)
		if err != nil {
			return err
		}
		if fix == seedDropIDE2 {
			// cloud-init reads the seed at first boot only: a missing one is dropped, as an
			// update of an imported VM does.
			if err := b.api.SetVMConfig(ctx, node, id.VMID, map[string]string{"delete": "ide2"}); err != nil {
				return apiErrorf(op, err, "removing ide2, whose seed ISO is missing, before the start on node %s", node)
			}
		}
		say("starting on node %s", node)
		if err := b.startAndWait(ctx, op, node, id.VMID, st.cfg); err != nil {
			return err
		}
		res.Did = append(res.Did, "start")
		say("running")
		return nil
	}

	res.Status = "stopped"
	if running {
		res.Status = "running"
	}
	switch {
	case opts.Op == PowerStart && running && !paused:
		say("already running on node %s: nothing to do", node)
	case opts.Op == PowerStart && running:
		if err := stop(); err != nil {
			return res, err
		}
		err = startVM()
	case opts.Op == PowerStart:
		err = startVM()
	case (opts.Op == PowerShutdown || opts.Op == PowerStop) && !running:
		say("already stopped on node %s: nothing to do", node)
	case opts.Op == PowerShutdown:
		err = shutdown()
	case opts.Op == PowerStop:
		err = stop()
	case opts.Op == PowerReboot && !running:
		say("stopped on node %s: starting it", node)
		err = startVM()
	case opts.Op == PowerReboot:
		if err = shutdown(); err == nil {
			err = startVM()
		}
	}
	if err != nil {
		return res, err
	}
	switch opts.Op {
	case PowerStart, PowerReboot:
		res.Status = "running"
	default:
		res.Status = "stopped"
	}
	return res, nil
}
