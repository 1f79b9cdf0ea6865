package proxmox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Update applies ch in place under the per-name lock (decision: update-in-place): the
// config write, disk growth, a restart for what Proxmox keeps pending (fact: memory-hotplug
// for what it takes at once), the seed swap (decision: seed-swap), the pool move, the
// migration (planMigration, fact: migrate) and the power changes. Every refusal that needs
// no write comes before the first write, so a refused update changes nothing. Gone or
// reused VMIDs are ErrNotFound; a task lock is waited on within Budgets.Destroy.
func (b *Backend) Update(ctx context.Context, id ID, ch Changes) error {
	start := b.clock.Now()
	node, did, err := b.update(ctx, id, ch)
	b.invalidateListing()
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "node": node, "changed": did,
		"duration_ms": b.clock.Now().Sub(start).Milliseconds()}
	if err != nil {
		err = wrap("update", id.Name, id.VMID, err)
		fields["class"], fields["error"] = ClassOf(err).String(), err.Error()
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm update failed", fields)
		return err
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm updated", fields)
	return nil
}

// update settles the VM and proves it ours (settle, ownedBy), plans the migration a node
// change asks for (planUpdateMigration) and the rest (planUpdate): every refusal that
// needs no write comes before any write. Then it moves the VM's pool, runs the migration
// (migrateForUpdate, which plans the rest again where the VM ends up), and runs the plan
// (updateRun). It returns the VM's node and what was done.
func (b *Backend) update(ctx context.Context, id ID, ch Changes) (string, []string, error) {
	if err := checkUpdateInput(id, ch); err != nil {
		return "", nil, err
	}
	unlock, err := b.locks.lock(ctx, id.Name)
	if err != nil {
		return "", nil, Transientf("waiting for another operation on this VM to finish: %w", err)
	}
	defer unlock()

	st, err := b.settle(ctx, "update", id, Owner{UID: ch.UID, Instance: ch.Instance}, b.cfg.Budgets.Destroy)
	if err != nil {
		return "", nil, err
	}
	switch st.verdict {
	case verdictGone:
		return "", nil, notFoundf("VMID %d is not in the cluster any more", id.VMID)
	case verdictForeign:
		return "", nil, b.notOursErr(ctx, id, st.r.Node, st.cfg, Owner{UID: ch.UID, Instance: ch.Instance}, st.mark, st.why)
	}
	// Ours from here on. Everything is planned, and refused, before the first write.
	node := st.r.Node
	mig, vs, err := b.planUpdateMigration(ctx, id, node, st.cfg, ch)
	if err != nil {
		return node, nil, err
	}
	plan, err := b.planUpdateOn(ctx, id, node, st.cfg, vs, mig != nil, ch)
	if err != nil {
		return node, nil, err
	}
	// Out of HA's hands before a migration or a power change (decision: ha-placement).
	haFirst, err := b.haBeforeChanges(ctx, id, ch)
	if err != nil {
		return node, nil, err
	}
	// The pool first: the rest is done under the privileges the VM has where it ends up.
	pooled, err := b.movePool(ctx, id, ch)
	if err != nil {
		return node, nil, err
	}
	if mig != nil {
		if node, plan, err = b.migrateForUpdate(ctx, id, *mig, st.cfg, ch); err != nil {
			return node, nil, err
		}
	}
	run := &updateRun{b: b, id: id, node: node, ch: ch, updatePlan: plan, haDone: haFirst}
	if err := run.execute(ctx); err != nil {
		return node, nil, err
	}
	did := run.did
	if haFirst {
		did = append(did, "ha")
	}
	if pooled {
		did = append(did, "pool")
	}
	return node, did, nil
}

// planUpdateMigration plans the migration ch.Node asks for (none when it names the VM's
// node, or none), with its refusals (checkMigrationTarget, planMigration), and returns the
// VM's status on its node, which the rest of the update is planned from too.
func (b *Backend) planUpdateMigration(ctx context.Context, id ID, node string, cfg map[string]string,
	ch Changes) (*migrationPlan, pveapi.VMStatus, error) {
	if ch.Node == nil || *ch.Node == "" || *ch.Node == node {
		vs, err := b.api.VMStatus(ctx, node, id.VMID)
		if err != nil {
			return nil, vs, apiErrorf("update", err, "reading the status on node %s", node)
		}
		return nil, vs, nil
	}
	to := *ch.Node
	if err := b.checkMigrationTarget(to); err != nil {
		return nil, pveapi.VMStatus{}, err
	}
	vs, err := b.migrationStatus(ctx, "update", id, node, to)
	if err != nil {
		return nil, vs, err
	}
	v, err := b.readMigration(ctx, "update", id, node, to, cfg, vs)
	if err != nil {
		return nil, vs, err
	}
	p, err := planMigration(v, b.cfg.ISOStorage, b.cfg.Storage, ch.UserDataKnown)
	if err != nil {
		return nil, vs, err
	}
	return &p, vs, nil
}

// planUpdateOn plans the update of the VM as read on node (planUpdate), after asking
// whether it runs with memory hotplug (runningHotplug).
func (b *Backend) planUpdateOn(ctx context.Context, id ID, node string, cfg map[string]string, vs pveapi.VMStatus,
	moved bool, ch Changes) (updatePlan, error) {
	hotplug, err := b.runningHotplug(ctx, node, id.VMID, cfg, vs.Status == "running")
	if err != nil {
		return updatePlan{}, err
	}
	return planUpdate(updateView{id: id, node: node, cfg: cfg, vs: vs, hotplug: hotplug, moved: moved}, ch)
}

// migrateForUpdate runs the update's migration (runMigration), then reads the VM again on
// the target and plans the rest of the update there. It returns the VM's node.
func (b *Backend) migrateForUpdate(ctx context.Context, id ID, p migrationPlan, cfg map[string]string,
	ch Changes) (string, updatePlan, error) {
	if err := b.runMigration(ctx, "update", p, cfg, ch.UserData, ch.Network); err != nil {
		return p.from, updatePlan{}, err
	}
	to := p.to
	moved, err := b.api.VMConfig(ctx, to, id.VMID)
	if err != nil {
		return to, updatePlan{}, apiErrorf("update", err, "reading the config on node %s after the migration", to)
	}
	vs, err := b.api.VMStatus(ctx, to, id.VMID)
	if err != nil {
		return to, updatePlan{}, apiErrorf("update", err, "reading the status on node %s", to)
	}
	plan, err := b.planUpdateOn(ctx, id, to, moved, vs, true, ch)
	return to, plan, err
}

// checkUpdateInput refuses what is wrong with the update before any request.
func checkUpdateInput(id ID, ch Changes) error {
	if err := id.Validate(); err != nil {
		return err
	}
	if ch.Bridge != nil && *ch.Bridge != "" {
		if _, err := optionValue("bridge", *ch.Bridge); err != nil {
			return err
		}
	}
	if ch.HA != nil && ch.HA.Set != nil {
		return checkHA(*ch.HA.Set)
	}
	return nil
}

// updateRun executes an updatePlan on the VM it was made for, which settle proved ours
// (ownedBy) under the per-name lock held for the whole run. It works on its own copy of
// the plan, whose fields it updates as the steps report: the VM resumed, a hotplug that
// falls back to a restart, the seed checked, what was done (did).
type updateRun struct {
	b    *Backend
	id   ID
	node string
	ch   Changes
	updatePlan
	// haDone: Changes.HA was applied before the other changes (haBeforeChanges).
	haDone bool
}

// execute runs the update's steps, in this order; the first error ends it.
func (r *updateRun) execute(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		r.checkAgent,              // refusals that need a request, before any write
		r.ensureSeedBeforeStart,   // a start or restart needs the seed ISO ide2 names
		r.resumeHibernated,        // a hibernated VM takes no config write
		r.reseed,                  // the seed swap, before the other config values
		r.writeConfig,             // one config write (memory plugged with it, if hotplugged)
		r.confirmHotplug,          // what the VM runs with after the hotplug
		r.ensureSeedBeforeRestart, // a hotplug that fell back to a restart
		r.resizeDisk,              // the boot disk grows
		r.power,                   // stop, shutdown, restart, start, or left pending
		r.ha,                      // the HA resource last (ha.go)
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// checkAgent refuses a restart after which the VM's agent could not answer (a restart is
// not a first boot: a guest whose agent does not answer now will not answer after it, and
// the address wait would last until the timeout), and warns of a start of an imported VM.
func (r *updateRun) checkAgent(ctx context.Context) error {
	if r.agentCheck {
		if err := r.b.agentBeforeRestart(ctx, r.node, r.id.VMID, r.cfg, r.vs); err != nil {
			return err
		}
	}
	if r.agentUnknownWarn {
		tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox start of an imported VM: its guest agent is not known to be installed", map[string]any{
			"vmid": r.id.VMID, "name": r.id.Name, "node": r.node, "agent_start": r.b.cfg.Budgets.AgentStart.String(),
		})
	}
	return nil
}

// ensureSeedBeforeStart checks, when the plan starts or restarts the VM, that its seed ISO
// is there (ensureSeed): rebuilt when missing, or ide2 dropped with the config write.
func (r *updateRun) ensureSeedBeforeStart(ctx context.Context) error {
	if !r.seedCheck {
		return nil
	}
	fix, err := r.b.ensureSeed(ctx, r.node, r.id, r.cfg, r.ch, r.hibernated)
	if err != nil {
		return err
	}
	r.seedChecked = true
	switch fix {
	case seedUploaded:
		r.did = append(r.did, "seed")
	case seedDropIDE2:
		r.params["delete"] = "ide2"
		r.did = append(r.did, "ide2")
	}
	return nil
}

// resumeHibernated resumes a hibernated VM that anything is to be done to (the plan's
// changes, or its seed rebuilt): Proxmox refuses config writes and resizes to it. The
// plan refused such an update without Start.
func (r *updateRun) resumeHibernated(ctx context.Context) error {
	if !r.hibernated || len(r.did) == 0 {
		return nil
	}
	if err := r.b.startAndWait(ctx, "update", r.node, r.id.VMID, r.cfg); err != nil {
		return err
	}
	r.did = append(r.did, "start")
	r.running, r.paused = true, false
	return nil
}

// reseed swaps the VM's seed ISO (swapSeed), before the other config values: it rewrites
// the mark's digest lines, which a note change then keeps.
func (r *updateRun) reseed(ctx context.Context) error {
	if r.ch.Reseed == nil {
		return nil
	}
	swapped, err := r.b.swapSeed(ctx, r.node, r.id, r.ch.UID, r.cfg, r.ch)
	if err != nil {
		return err
	}
	r.cfg = swapped
	if r.ch.Note != nil {
		if _, ok := r.params["description"]; ok {
			r.params["description"] = replaceNote(r.cfg["description"], *r.ch.Note)
		}
	}
	return nil
}

// writeConfig is the one config write. It writes the finished mark bound to the VM
// (finishedMark) when the VM's mark is not that, and the resource's name when the VM was
// renamed, with the other values or, when Changes.Bind asks, alone (decision: state-binding); a hibernated VM (lock suspended)
// takes no write for that alone. A memory hotplug Proxmox refuses leaves the other values
// written and the memory pending, for a restart (or DeferRestart).
func (r *updateRun) writeConfig(ctx context.Context) error {
	desc, ok := r.params["description"]
	if !ok {
		desc = r.cfg["description"]
	}
	repair := len(r.params) > 0 || (r.ch.Bind && r.cfg["lock"] == "")
	if fin := finishedMark(restoredMark(desc, r.cfg, r.ch, r.b.clock.Now()), r.cfg); ok || (fin != desc && repair) {
		r.params["description"] = fin
	}
	if r.cfg["name"] != r.id.Name && repair {
		r.params["name"] = r.id.Name // renamed outside Terraform (recordedInstance)
	}
	if len(r.params) == 0 {
		return nil
	}
	err := r.b.api.SetVMConfig(ctx, r.node, r.id.VMID, r.params)
	switch {
	case err != nil && r.memHot && pveapi.IsHotplugProblem(err, "memory"):
		// The other values are written; the memory stays pending.
		tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox memory hotplug refused: the change waits for a restart", map[string]any{
			"vmid": r.id.VMID, "name": r.id.Name, "node": r.node, "error": err.Error()})
		r.memHot, r.memRestart = false, true
		hotplugRefused(r.ch, *r.ch.MemoryMiB, err.Error())
	case err != nil:
		return apiErrorf("update", err, "writing the config on node %s", r.node)
	}
	return nil
}

// restoredMark is desc, the description an update writes on a VM the state's record alone
// showed the resource's (recordedInstance), with the whole finished mark a create writes
// (the operator's lines with ch.UID and ch.Mark's created-at, the namespace and instance
// lines, this provider's lines: created-by, the digests and static address of ch.Mark and
// ch.Network) in place of its mark lines when they do not carry ch.UID: wiped, or its uid
// line deleted or rewritten outside Terraform. Its other text is kept as the note. desc as
// it is otherwise (finishedMark repairs the rest).
func restoredMark(desc string, cfg map[string]string, ch Changes, now time.Time) string {
	if m := ParseMark(desc); !recordedInstance(cfg, Owner{UID: ch.UID, Instance: ch.Instance}) || (m.Managed && m.UID == ch.UID) {
		return desc
	}
	created := ch.Mark.CreatedAt
	if created.IsZero() {
		created = now
	}
	l := MarkLines{UID: ch.UID, CreatedAt: created, Namespace: ch.Mark.Namespace, Instance: instanceOf(cfg)}
	extra := Spec{UserDataDigest: ch.Mark.UserDataDigest, Network: ch.Network, NetworkDigest: NetworkDigest(ch.Network)}
	return withNote(l.Format()+FormatMarkExtra(extra), NoteOf(desc))
}

// confirmHotplug reads what the VM runs with after a memory hotplug: Proxmox plugs DIMMs
// one by one, and a VM short of the size needs the restart after all.
func (r *updateRun) confirmHotplug(ctx context.Context) error {
	if !r.memHot {
		return nil
	}
	vs, err := r.b.api.VMStatus(ctx, r.node, r.id.VMID)
	if err != nil {
		return apiErrorf("update", err, "reading the status on node %s after the memory hotplug", r.node)
	}
	if _, m := runningSizes(r.cfg, vs, r.cfgCores, r.cfgMem); m == *r.ch.MemoryMiB {
		r.did = append(r.did, "hotplug")
	} else {
		tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox memory hotplug fell short: the change waits for a restart", map[string]any{
			"vmid": r.id.VMID, "name": r.id.Name, "node": r.node, "memory_mib": *r.ch.MemoryMiB, "running_mib": m})
		r.memRestart = true
		hotplugRefused(r.ch, *r.ch.MemoryMiB, fmt.Sprintf("the VM runs with %d MiB after the hotplug", m))
	}
	return nil
}

// ensureSeedBeforeRestart checks the seed ISO before a restart the plan did not make: a
// hotplug that fell back to one.
func (r *updateRun) ensureSeedBeforeRestart(ctx context.Context) error {
	if !r.restart(r.ch) || !r.running || r.seedChecked {
		return nil
	}
	fix, err := r.b.ensureSeed(ctx, r.node, r.id, r.cfg, r.ch, false)
	if err != nil {
		return err
	}
	if fix == seedDropIDE2 {
		if err := r.b.api.SetVMConfig(ctx, r.node, r.id.VMID, map[string]string{"delete": "ide2"}); err != nil {
			return apiErrorf("update", err, "writing the config on node %s", r.node)
		}
	}
	return nil
}

// resizeDisk grows the boot disk to the plan's size, with one resize task.
func (r *updateRun) resizeDisk(ctx context.Context) error {
	if r.resize == "" {
		return nil
	}
	upid, err := r.b.api.Resize(ctx, r.node, r.id.VMID, r.resize, strconv.Itoa(r.resizeGiB)+"G")
	if err != nil {
		return apiErrorf("update", err, "resizing %s to %d GiB", r.resize, r.resizeGiB)
	}
	return r.b.waitTask(ctx, upid, r.b.cfg.Budgets.Resize)
}

// power runs the power step the VM's state asks for now (powerFor).
func (r *updateRun) power(ctx context.Context) error {
	step := r.powerFor(r.ch)
	switch step {
	case powerStopPaused:
		// A paused guest cannot act on a shutdown request (Proxmox refuses it): stopped.
		if err := r.b.stopAndWait(ctx, "update", r.node, r.id.VMID); err != nil {
			return err
		}
	case powerShutdown:
		// Kept stopped (started = false): shut down as a restart is, within ShutdownTimeout.
		if err := r.b.shutdownAndWait(ctx, "update", r.node, r.id.VMID, r.ch.ShutdownTimeout); err != nil {
			return err
		}
	case powerRestartPaused, powerRestart:
		if err := r.restartVM(ctx, step == powerRestartPaused); err != nil {
			return err
		}
	case powerStart:
		if err := r.b.startAndWait(ctx, "update", r.node, r.id.VMID, r.cfg); err != nil {
			return err
		}
	}
	if what := step.String(); what != "" {
		r.did = append(r.did, what)
	}
	return nil
}

// restartVM powers the VM off and starts it again: a paused guest cannot act on a shutdown
// request (Proxmox refuses it), so it is stopped; a running one is shut down within
// ShutdownTimeout. A failure says which restart it was and where the VM is left
// (restartErr).
func (r *updateRun) restartVM(ctx context.Context, paused bool) error {
	restart := r.restart(r.ch)
	var err error
	if paused {
		err = r.b.stopAndWait(ctx, "update", r.node, r.id.VMID)
	} else {
		err = r.b.shutdownAndWait(ctx, "update", r.node, r.id.VMID, r.ch.ShutdownTimeout)
	}
	if err != nil {
		return restartErr(err, restart, false, r.ch, r.restartKeys())
	}
	if err := r.b.startAndWait(ctx, "update", r.node, r.id.VMID, r.cfg); err != nil {
		return restartErr(err, restart, true, r.ch, r.restartKeys())
	}
	return nil
}

// restartErr says of a power task that failed during the restart that applies a change of
// RestartOptions (keys: those the VM was restarted for) which restart it was and where the VM is left: before the power-off, the
// new values are written to its config and pending, and the next apply restarts it again;
// after it, the config holds them and the next apply starts the VM. The class is kept.
func restartErr(err error, restart, afterStop bool, ch Changes, keys map[string]bool) error {
	if !restart {
		return err
	}
	what := restartValues(ch, keys)
	if ch.Reseed != nil {
		what = append(what, "the new cloud-init seed")
	}
	change := "the " + restartLabels("or") + " change"
	if len(what) > 0 {
		change = strings.Join(what, " and ")
	}
	where := "The new values are written to the VM's config and stay pending while it runs with its old ones; the next apply restarts it again"
	if afterStop {
		where = "The VM was shut down and its config holds the new values, which it gets at its next start; the next apply starts it again"
	}
	if ch.Reseed != nil {
		where += " (a cloud-init change is swapped to a newer seed again)"
	}
	return &Error{Class: ClassOf(err), Err: fmt.Errorf("the restart that applies %s failed: %w. %s", change, err, where)}
}

// hotplugRefused tells the caller (Changes.Notify) that a memory change planned as a
// hotplug needs the restart after all.
func hotplugRefused(ch Changes, mib int, why string) {
	if ch.Notify == nil {
		return
	}
	then := "so the VM is restarted to apply it"
	if ch.DeferRestart {
		then = "so the change is left pending until the VM restarts (reboot_on_change = false)"
	}
	ch.Notify(fmt.Sprintf("Proxmox did not hotplug memory %d MiB (%s), %s.", mib, why, then))
}
