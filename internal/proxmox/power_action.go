package proxmox

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
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

// Power runs a power operation on the VM at id, under the per-name lock, once ownedBy proves
// it the resource's (as for Update and Delete); a VM gone or not proved ours gets no write and
// ErrNotFound naming why. start resumes, restarts a paused VM or leaves a running one;
// shutdown is one qmshutdown with forceStop after ShutdownTimeout; reboot is both; stop is at
// once. A start checks the seed ISO first (decision: seed-before-destroy) and waits until the
// VM runs, not for its address.
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

// power proves the VM ours (powerTarget), reads its power state, plans the operation
// (planPower) and runs the plan (powerRun).
func (b *Backend) power(ctx context.Context, id ID, opts PowerOptions) (PowerResult, error) {
	var res PowerResult
	if err := checkPowerInput(id, opts.Op); err != nil {
		return res, err
	}
	unlock, err := b.locks.lock(ctx, id.Name)
	if err != nil {
		return res, Transientf("waiting for another operation on this VM to finish: %w", err)
	}
	defer unlock()

	st, err := b.powerTarget(ctx, id, opts)
	if err != nil {
		return res, err
	}
	node := st.r.Node
	res.Node = node
	vs, err := b.api.VMStatus(ctx, node, id.VMID)
	if err != nil {
		return res, apiErrorf(string(opts.Op), err, "reading the status on node %s", node)
	}
	ps := powerStateOf(vs, st.cfg)
	res.Status = "stopped"
	if ps.running {
		res.Status = "running"
	}
	run := &powerRun{b: b, id: id, node: node, op: string(opts.Op), cfg: st.cfg, hibernated: ps.hibernated,
		timeout: opts.ShutdownTimeout, progress: opts.Progress, res: &res}
	if run.timeout <= 0 {
		run.timeout = DefaultShutdownTimeout
	}
	if err := run.execute(ctx, planPower(opts.Op, ps, node)); err != nil {
		return res, err
	}
	res.Status = "stopped"
	if opts.Op == PowerStart || opts.Op == PowerReboot {
		res.Status = "running"
	}
	return res, nil
}

// checkPowerInput refuses what is wrong with the action before any request.
func checkPowerInput(id ID, op PowerOp) error {
	if err := id.Validate(); err != nil {
		return err
	}
	switch op {
	case PowerStart, PowerShutdown, PowerReboot, PowerStop:
		return nil
	}
	return Permanentf("power %q is not one of start, shutdown, reboot, stop", op)
}

// powerTarget settles the VM at id and proves it the resource's (settle, ownedBy): a VM
// gone is NotFound, a foreign one is refused as not ours (ErrNotOurs), and one still
// marked creating is refused.
func (b *Backend) powerTarget(ctx context.Context, id ID, opts PowerOptions) (settled, error) {
	st, err := b.settle(ctx, string(opts.Op), id, powerOwner(opts), b.cfg.Budgets.Destroy)
	if err != nil {
		return st, err
	}
	switch st.verdict {
	case verdictGone:
		return st, notFoundf("VMID %d is not in the cluster any more", id.VMID)
	case verdictForeign:
		return st, refusedNotOurs(b.notOursErr(ctx, id, st.r.Node, st.cfg, powerOwner(opts), st.mark, st.why))
	}
	switch state := markState(st.cfg["description"]); state {
	case "":
	case MarkStateCreating:
		// Still marked creating: the mark's uid alone proves nothing here (a copied mark
		// carries the uid a tainted state holds); only the create that finishes it, or the
		// one that takes it over with its proof (decision: creating-proof), may act on it.
		return st, Permanentf("VM %s (VMID %d) is still marked as being created (%s=%s): the action never powers a VM before its create "+
			"has finished it. If an apply is creating it, wait for that apply to end. If its create finished and its description was "+
			"rewritten with an older text, apply the proxy_vm that manages it (the apply writes the finished mark), or restore that mark "+
			"in Proxmox (delete its %s and %s lines)", id.Name, id.VMID, MarkKeyState, MarkStateCreating, MarkKeyState, MarkKeyProof)
	default:
		// Any other state line (abandoned: a clean-up claimed it as half-made) says the VM
		// is not a finished VM of this resource's: it is never powered.
		return st, Permanentf("VM %s (VMID %d) exists, but its mark says %s=%s, not a finished VM of this resource's: the action never "+
			"powers it. If it is this resource's VM, remove that line from its description in Proxmox; otherwise destroy it "+
			"(`qm stop %d && qm destroy %d --purge`) and apply the configuration that creates it",
			id.Name, id.VMID, MarkKeyState, state, id.VMID, id.VMID)
	}
	return st, nil
}

// powerOwner is the power action's Owner: it has no state, so the VM's mark must be bound
// to it (Owner.Bound, decision: state-binding): a mark without an instance line may be a
// finished one with that line deleted, copied onto a VM made by hand at a reused VMID.
func powerOwner(opts PowerOptions) Owner {
	return Owner{UID: opts.UID, Bound: true}
}

// powerState is a VM's power state as status/current and its config report it.
type powerState struct {
	running, paused, hibernated bool
}

func powerStateOf(vs pveapi.VMStatus, cfg map[string]string) powerState {
	running := vs.Status == "running"
	return powerState{
		running:    running,
		paused:     running && !guestRunning(vs.Status, vs.QMPStatus) && vs.QMPStatus != "prelaunch",
		hibernated: vs.Lock == "suspended" || cfg["lock"] == "suspended",
	}
}

// powerMove is one request of a power plan.
type powerMove int

const (
	moveStop     powerMove = iota // stopped at once
	moveShutdown                  // shut down within the timeout, then stopped by Proxmox
	moveStart                     // its seed ISO checked, then started
)

// powerPlan is what an operation does to a VM: note is said first ("" for nothing), then
// the moves run in order.
type powerPlan struct {
	note  string
	moves []powerMove
}

// planPower decides what op does to a VM in state s on node, without a request: a paused
// guest cannot act on a shutdown request (Proxmox refuses it), so it is stopped instead.
func planPower(op PowerOp, s powerState, node string) powerPlan {
	down := powerPlan{moves: []powerMove{moveShutdown}}
	if s.paused {
		down = powerPlan{note: "paused, so it cannot act on a shutdown request: stopping it", moves: []powerMove{moveStop}}
	}
	switch {
	case op == PowerStart && s.running && !s.paused:
		return powerPlan{note: fmt.Sprintf("already running on node %s: nothing to do", node)}
	case op == PowerStart && s.running:
		return powerPlan{moves: []powerMove{moveStop, moveStart}}
	case op == PowerStart:
		return powerPlan{moves: []powerMove{moveStart}}
	case !s.running && (op == PowerShutdown || op == PowerStop):
		return powerPlan{note: fmt.Sprintf("already stopped on node %s: nothing to do", node)}
	case op == PowerShutdown:
		return down
	case op == PowerStop:
		return powerPlan{moves: []powerMove{moveStop}}
	case op == PowerReboot && !s.running:
		return powerPlan{note: fmt.Sprintf("stopped on node %s: starting it", node), moves: []powerMove{moveStart}}
	case op == PowerReboot:
		down.moves = append(down.moves, moveStart)
		return down
	}
	return powerPlan{}
}

// powerRun executes a powerPlan on a VM powerTarget proved ours, under the per-name lock
// held for the whole run, and records each request sent in res.Did.
type powerRun struct {
	b          *Backend
	id         ID
	node, op   string
	cfg        map[string]string
	hibernated bool
	timeout    time.Duration
	progress   func(string)
	res        *PowerResult
}

// execute says the plan's note, then runs its moves in order; the first error ends it.
func (r *powerRun) execute(ctx context.Context, p powerPlan) error {
	if p.note != "" {
		r.say("%s", p.note)
	}
	for _, m := range p.moves {
		var err error
		switch m {
		case moveStop:
			err = r.stop(ctx)
		case moveShutdown:
			err = r.shutdown(ctx)
		case moveStart:
			err = r.start(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// say tells the progress callback a step, prefixed with the VM.
func (r *powerRun) say(format string, args ...any) {
	if r.progress != nil {
		r.progress(fmt.Sprintf("%s (VMID %d): ", r.id.Name, r.id.VMID) + fmt.Sprintf(format, args...))
	}
}

func (r *powerRun) stop(ctx context.Context) error {
	r.say("stopping on node %s", r.node)
	if err := r.b.stopAndWait(ctx, r.op, r.node, r.id.VMID); err != nil {
		return err
	}
	r.res.Did = append(r.res.Did, "stop")
	r.say("stopped")
	return nil
}

func (r *powerRun) shutdown(ctx context.Context) error {
	r.say("shutting down on node %s (the guest has %s, then Proxmox stops it)", r.node, r.timeout)
	if err := r.b.shutdownAndWait(ctx, r.op, r.node, r.id.VMID, r.timeout); err != nil {
		return err
	}
	r.res.Did = append(r.res.Did, "shutdown")
	r.say("shut down")
	return nil
}

// start checks the seed ISO (ensureSeed), as before any start, then starts the VM.
func (r *powerRun) start(ctx context.Context) error {
	fix, err := r.b.ensureSeed(ctx, r.node, r.id, r.cfg, Changes{}, r.hibernated)
	if err != nil {
		return err
	}
	if fix == seedDropIDE2 {
		// cloud-init reads the seed at first boot only: a missing one is dropped, as an
		// update of an imported VM does.
		if err := r.b.api.SetVMConfig(ctx, r.node, r.id.VMID, map[string]string{"delete": "ide2"}); err != nil {
			return apiErrorf(r.op, err, "removing ide2, whose seed ISO is missing, before the start on node %s", r.node)
		}
	}
	r.say("starting on node %s", r.node)
	if err := r.b.startAndWait(ctx, r.op, r.node, r.id.VMID, r.cfg); err != nil {
		return err
	}
	r.res.Did = append(r.res.Did, "start")
	r.say("running")
	return nil
}
