package proxmox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Update applies in-place changes under the per-name lock (decision: update-in-place):
//
//   - one config write for cores, memory, onboot and net0 (bridge and tag rewritten in
//     place, model, MAC and other options kept; VLANTag 0 removes the tag); only values
//     that differ from the config are written;
//   - a resize when DiskGiB is larger than the boot disk; smaller is Permanent ("disk can
//     only grow"), checked before anything is written;
//   - a restart when the VM runs and its cores or memory (as status/current reports what it
//     runs with) differ from Changes, since Proxmox keeps them pending until the next
//     start: a graceful shutdown (one qmshutdown task with Changes.ShutdownTimeout and
//     forceStop, so Proxmox stops a guest that does not power off in time), then a start,
//     then running/running; a paused VM is stopped instead of shut down. With
//     Changes.DeferRestart the values are written and left pending, no restart. A memory
//     change on a VM with memory hotplug (hotplug names memory, numa on) is plugged with
//     no restart, and a size that is not a DIMM step is refused before anything is
//     written (MemoryHotplugStep); cores always needs the restart;
//   - Reseed swaps the VM's seed ISO for a new generation with a new instance-id
//     (swapSeed, decision: seed-swap) and restarts a running VM for it as for cores;
//   - Pool moves the VM into another pool (or out of its pool) first (pool.go);
//   - Start brings a stopped or hibernated VM back with a start (a hibernated VM resumes)
//     and a paused VM with a stop then a start; Stop shuts a running VM down as the
//     restart does (a paused one is stopped).
//
// A hibernated VM refuses config writes and resizes, so with such changes it is resumed
// first when Start is set, and Update is Permanent otherwise. With WaitForIP, a restart of a
// running VM whose guest agent has not answered in Budgets.AgentStart of uptime, or whose
// agent option is off, is refused (Permanent) before anything is written. Gone or reused VMIDs are
// ErrNotFound. A task lock is waited on within Budgets.Destroy.
func (b *Backend) Update(ctx context.Context, id ID, ch Changes) error {
	start := b.clock.Now()
	node, did, err := b.update(ctx, id, ch)
	b.invalidateListing()
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "node": node, "changed": did, "duration_ms": b.clock.Now().Sub(start).Milliseconds()}
	if err != nil {
		err = wrap("update", id.Name, id.VMID, err)
		fields["class"], fields["error"] = ClassOf(err).String(), err.Error()
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm update failed", fields)
		return err
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm updated", fields)
	return nil
}

func (b *Backend) update(ctx context.Context, id ID, ch Changes) (string, []string, error) {
	if err := id.Validate(); err != nil {
		return "", nil, err
	}
	if ch.Bridge != nil && *ch.Bridge != "" {
		if _, err := optionValue("bridge", *ch.Bridge); err != nil {
			return "", nil, err // before any request
		}
	}
	unlock, err := b.locks.lock(ctx, id.Name)
	if err != nil {
		return "", nil, Transientf("waiting for another operation on this VM to finish: %w", err)
	}
	defer unlock()

	st, err := b.settle(ctx, "update", id, ch.UID, b.cfg.Budgets.Destroy)
	if err != nil {
		return "", nil, err
	}
	switch st.verdict {
	case verdictGone:
		return "", nil, notFoundf("VMID %d is not in the cluster any more", id.VMID)
	case verdictForeign:
		return "", nil, b.notOursErr(ctx, id, st.r.Node, st.cfg, ch.UID, st.mark, st.why)
	}
	// The pool first: the rest is done under the privileges the VM has where it ends up.
	pooled, err := b.movePool(ctx, id, ch)
	if err != nil {
		return st.r.Node, nil, err
	}
	node, cfg, moved, err := b.moveIfAsked(ctx, id, st.r.Node, st.cfg, ch)
	if err != nil {
		return node, nil, err
	}

	vs, err := b.api.VMStatus(ctx, node, id.VMID)
	if err != nil {
		return node, nil, apiErrorf("update", err, "reading the status on node %s", node)
	}
	hibernated := vs.Lock == "suspended" || cfg["lock"] == "suspended"
	running := vs.Status == "running"
	paused := running && !guestRunning(vs.Status, vs.QMPStatus) && vs.QMPStatus != "prelaunch"
	// What the VM runs with (status/current), against what its config says (the pending
	// values included): a running VM needs a restart for a value it does not run with yet,
	// even when the config already holds it (a change left pending). A hibernated VM that
	// is resumed first runs with its config's values.
	cfgCores := atoiDefault(cfg["cores"], 1)
	cfgMem := vmFromConfig(id, node, cfg, Mark{}).MemoryMiB
	runCores, runMem := runningSizes(cfg, vs, cfgCores, cfgMem)
	runs := running || (hibernated && ch.Start)
	hotplug, err := b.runningHotplug(ctx, node, id.VMID, cfg, running)
	if err != nil {
		return node, nil, err
	}

	params := map[string]string{}
	coresRestart, memRestart, memHot := false, false, false
	if ch.Cores != nil {
		if *ch.Cores < 1 {
			return node, nil, Permanentf("cores must be at least 1")
		}
		if *ch.Cores != cfgCores {
			params["cores"] = strconv.Itoa(*ch.Cores)
		}
		coresRestart = runs && *ch.Cores != runCores
	}
	if ch.MemoryMiB != nil {
		if *ch.MemoryMiB < 1 {
			return node, nil, Permanentf("memory must be at least 1 MiB")
		}
		if hotplug && *ch.MemoryMiB != cfgMem {
			if err := checkMemoryHotplug(cfg, *ch.MemoryMiB); err != nil {
				return node, nil, err
			}
		}
		if *ch.MemoryMiB != cfgMem {
			params["memory"] = strconv.Itoa(*ch.MemoryMiB)
		}
		if runs && *ch.MemoryMiB != runMem {
			if running && hotplug {
				// Written (again, if it is pending) so that Proxmox plugs it now.
				memHot, params["memory"] = true, strconv.Itoa(*ch.MemoryMiB)
			} else {
				memRestart = true
			}
		}
	}
	if ch.OnBoot != nil && *ch.OnBoot != (cfg["onboot"] == "1") {
		params["onboot"] = boolParam(*ch.OnBoot)
	}
	fleetUpdateParams(params, ch, cfg)
	if ch.Bridge != nil || ch.VLANTag != nil {
		if ch.VLANTag != nil && (*ch.VLANTag < 0 || *ch.VLANTag > 4094) {
			return node, nil, Permanentf("VLAN tag %d is outside 1 to 4094 (0 removes the tag)", *ch.VLANTag)
		}
		if cfg["net0"] == "" {
			return node, nil, Permanentf("the VM has no net0, so the bridge and VLAN tag cannot be changed")
		}
		nv, err := rewriteNet0(cfg["net0"], ch.Bridge, ch.VLANTag)
		if err != nil {
			return node, nil, err
		}
		if nv != cfg["net0"] {
			params["net0"] = nv
		}
	}
	var resizeDisk string
	if ch.DiskGiB != nil {
		disk, cur, ok := bootDiskSize(cfg)
		if !ok {
			return node, nil, Permanentf("the VM has no boot disk with a readable size=, so its disk size cannot be changed")
		}
		want := int64(*ch.DiskGiB) * gib
		switch {
		case want > cur:
			resizeDisk = disk
		case *ch.DiskGiB < ceilGiB(cur):
			return node, nil, Permanentf("disk can only grow: the boot disk %s is %d GiB and %d GiB was asked; replace the VM to shrink it",
				disk, ceilGiB(cur), *ch.DiskGiB)
		}
	}
	did := slices.Sorted(maps.Keys(params))
	if moved {
		did = append(did, "node")
	}
	if resizeDisk != "" {
		did = append(did, "disk")
	}
	// A new seed (cloud_init_change = "restart") is read at the VM's next boot: a running
	// VM (or a hibernated one resumed first) is restarted for it as for cores.
	seedRestart := ch.Reseed != nil && runs
	if ch.Reseed != nil {
		did = append(did, "seed")
	}
	restart := (coresRestart || memRestart || seedRestart) && !ch.DeferRestart

	if hibernated && len(did) > 0 && !ch.Start {
		return node, nil, Permanentf("the VM is hibernated, and Proxmox refuses changes to it; bring it back to running (or resume it in Proxmox), then apply again")
	}
	// A restart is not a first boot: a guest whose agent does not answer now will not
	// answer after it, and the address wait would last until the timeout.
	if ch.WaitForIP && running && !paused && restart && !ch.Stop {
		if err := b.agentBeforeRestart(ctx, node, id.VMID, cfg, vs); err != nil {
			return node, nil, err
		}
	}
	if ch.WaitForIP && !running && ch.Start && !ch.UserDataKnown {
		tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox start of an imported VM: its guest agent is not known to be installed", map[string]any{
			"vmid": id.VMID, "name": id.Name, "node": node, "agent_start": b.cfg.Budgets.AgentStart.String(),
		})
	}
	// Every volume must exist before a start, the seed ISO too: a destroy that failed after
	// deleting the seed (decision: seed-before-destroy) leaves the VM stopped with ide2 naming it.
	// A seed about to be swapped need not be there: the swap uploads the new one (a
	// hibernated VM resumes from the old one first, so it is checked then).
	seedChecked := ch.Reseed != nil && !hibernated
	if willStart := (running && (restart || (ch.Start && paused))) || (!running && ch.Start); willStart && !seedChecked {
		fix, err := b.ensureSeed(ctx, node, id, cfg, ch, hibernated)
		if err != nil {
			return node, nil, err
		}
		seedChecked = true
		switch fix {
		case seedUploaded:
			did = append(did, "seed")
		case seedDropIDE2:
			params["delete"] = "ide2"
			did = append(did, "ide2")
		}
	}
	if hibernated && len(did) > 0 {
		if err := b.startAndWait(ctx, "update", node, id.VMID, cfg); err != nil {
			return node, nil, err
		}
		did = append(did, "start")
		running, paused = true, false
	}
	if ch.Reseed != nil {
		// The seed swap, before the other config values: it rewrites the mark's digest lines,
		// which a note change then keeps.
		swapped, err := b.swapSeed(ctx, node, id, ch.UID, cfg, ch)
		if err != nil {
			return node, nil, err
		}
		cfg = swapped
		if ch.Note != nil {
			if _, ok := params["description"]; ok {
				params["description"] = replaceNote(cfg["description"], *ch.Note)
			}
		}
	}
	if len(params) > 0 {
		err := b.api.SetVMConfig(ctx, node, id.VMID, params)
		switch {
		case err != nil && memHot && pveapi.IsHotplugProblem(err, "memory"):
			// The other values are written; the memory stays pending.
			tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox memory hotplug refused: the change waits for a restart", map[string]any{
				"vmid": id.VMID, "name": id.Name, "node": node, "error": err.Error()})
			memHot, memRestart = false, true
			hotplugRefused(ch, *ch.MemoryMiB, err.Error())
		case err != nil:
			return node, nil, apiErrorf("update", err, "writing the config on node %s", node)
		}
	}
	if memHot {
		// Proxmox plugs DIMMs one by one; what the VM runs with now decides.
		vs, err := b.api.VMStatus(ctx, node, id.VMID)
		if err != nil {
			return node, nil, apiErrorf("update", err, "reading the status on node %s after the memory hotplug", node)
		}
		if _, m := runningSizes(cfg, vs, cfgCores, cfgMem); m == *ch.MemoryMiB {
			did = append(did, "hotplug")
		} else {
			tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox memory hotplug fell short: the change waits for a restart", map[string]any{
				"vmid": id.VMID, "name": id.Name, "node": node, "memory_mib": *ch.MemoryMiB, "running_mib": m})
			memRestart = true
			hotplugRefused(ch, *ch.MemoryMiB, fmt.Sprintf("the VM runs with %d MiB after the hotplug", m))
		}
	}
	restart = (coresRestart || memRestart || seedRestart) && !ch.DeferRestart
	if restart && running && !seedChecked {
		// The hotplug fell back to a restart.
		fix, err := b.ensureSeed(ctx, node, id, cfg, ch, false)
		if err != nil {
			return node, nil, err
		}
		if fix == seedDropIDE2 {
			if err := b.api.SetVMConfig(ctx, node, id.VMID, map[string]string{"delete": "ide2"}); err != nil {
				return node, nil, apiErrorf("update", err, "writing the config on node %s", node)
			}
		}
	}
	if resizeDisk != "" {
		upid, err := b.api.Resize(ctx, node, id.VMID, resizeDisk, strconv.Itoa(*ch.DiskGiB)+"G")
		if err != nil {
			return node, nil, apiErrorf("update", err, "resizing %s to %d GiB", resizeDisk, *ch.DiskGiB)
		}
		if err := b.waitTask(ctx, upid, b.cfg.Budgets.Resize); err != nil {
			return node, nil, err
		}
	}
	switch {
	case ch.Stop && running && paused:
		// A paused guest cannot act on a shutdown request (Proxmox refuses it): stopped.
		if err := b.stopAndWait(ctx, "update", node, id.VMID); err != nil {
			return node, nil, err
		}
		did = append(did, "stop")
	case ch.Stop && running:
		// Kept stopped (started = false): shut down as a restart is, within ShutdownTimeout.
		if err := b.shutdownAndWait(ctx, "update", node, id.VMID, ch.ShutdownTimeout); err != nil {
			return node, nil, err
		}
		did = append(did, "shutdown")
	case running && paused && (restart || ch.Start):
		// A paused guest cannot act on a shutdown request (Proxmox refuses it): stopped.
		if err := b.stopAndWait(ctx, "update", node, id.VMID); err != nil {
			return node, nil, restartErr(err, restart, false, ch, coresRestart, memRestart)
		}
		if err := b.startAndWait(ctx, "update", node, id.VMID, cfg); err != nil {
			return node, nil, restartErr(err, restart, true, ch, coresRestart, memRestart)
		}
		did = append(did, "restart")
	case running && restart:
		if err := b.shutdownAndWait(ctx, "update", node, id.VMID, ch.ShutdownTimeout); err != nil {
			return node, nil, restartErr(err, true, false, ch, coresRestart, memRestart)
		}
		if err := b.startAndWait(ctx, "update", node, id.VMID, cfg); err != nil {
			return node, nil, restartErr(err, true, true, ch, coresRestart, memRestart)
		}
		did = append(did, "restart")
	case running && (coresRestart || memRestart || seedRestart):
		did = append(did, "pending") // DeferRestart: applies at the next stop or start
	case !running && ch.Start:
		if err := b.startAndWait(ctx, "update", node, id.VMID, cfg); err != nil {
			return node, nil, err
		}
		did = append(did, "start")
	}
	if pooled {
		did = append(did, "pool")
	}
	return node, did, nil
}

// restartErr says of a power task that failed during the restart that applies a cores or
// memory change which restart it was and where the VM is left: before the power-off, the
// new values are written to its config and pending, and the next apply restarts it again;
// after it, the config holds them and the next apply starts the VM. The class is kept.
func restartErr(err error, restart, afterStop bool, ch Changes, cores, mem bool) error {
	if !restart {
		return err
	}
	var what []string
	if cores && ch.Cores != nil {
		what = append(what, "cores "+strconv.Itoa(*ch.Cores))
	}
	if mem && ch.MemoryMiB != nil {
		what = append(what, "memory "+strconv.Itoa(*ch.MemoryMiB)+" MiB")
	}
	if ch.Reseed != nil {
		what = append(what, "the new cloud-init seed")
	}
	change := "the cores or memory change"
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
