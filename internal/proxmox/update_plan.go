package proxmox

import (
	"maps"
	"slices"
	"strconv"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// updateView is the VM an update plans from: its config and status on the node it is on
// once the pool move and the migration are done, whether it runs with memory hotplug
// (runningHotplug), and whether it migrated.
type updateView struct {
	id      ID
	node    string
	cfg     map[string]string
	vs      pveapi.VMStatus
	hotplug bool
	moved   bool
}

// updatePlan is what Update does to a VM (see Update), decided from an updateView and the
// Changes before anything is written: planUpdate makes it, with every refusal that needs
// no request, and an updateRun executes it.
type updatePlan struct {
	// The VM as read.
	cfg                         map[string]string
	vs                          pveapi.VMStatus
	hibernated, running, paused bool
	cfgCores, cfgMem            int // the config's values, the pending ones included

	// params is the one config write (empty: none); did names what the update does, for
	// the log: the written keys (sorted), then node, disk, seed as planned.
	params map[string]string
	did    []string
	// resize is the boot disk to grow to resizeGiB ("": no resize).
	resize    string
	resizeGiB int

	// coresRestart, memRestart and seedRestart: the VM runs (or is resumed to run) and
	// needs a restart to take the cores, the memory or a new seed; memHot: the memory is
	// plugged into the running VM with the config write instead. optRestart are the keys of
	// the other RestartOptions it needs the restart for.
	coresRestart, memRestart, seedRestart, memHot bool
	optRestart                                    []string

	// agentCheck: the restart waits for an address, so the agent is asked first
	// (agentBeforeRestart); agentUnknownWarn: a start of an imported VM whose agent is
	// not known to be installed is logged.
	agentCheck, agentUnknownWarn bool
	// seedCheck: the VM is started or restarted, so its seed ISO is checked first
	// (ensureSeed); seedChecked: it was, or a seed swap replaces it.
	seedCheck, seedChecked bool
}

// planUpdate decides an update from the VM as read and ch, without a request. Its errors
// are Permanent refusals, in the order the checks run: cores, memory (a memory hotplug
// size), the other RestartOptions and the InPlaceOptions (a value that breaks out of its
// option string), VLAN tag, net0, boot disk, a hibernated VM.
func planUpdate(v updateView, ch Changes) (updatePlan, error) {
	p := updatePlan{cfg: v.cfg, vs: v.vs, params: map[string]string{}}
	p.hibernated = v.vs.Lock == "suspended" || v.cfg["lock"] == "suspended"
	p.running = v.vs.Status == "running"
	p.paused = p.running && !guestRunning(v.vs.Status, v.vs.QMPStatus) && v.vs.QMPStatus != "prelaunch"
	// What the VM runs with (status/current), against what its config says (the pending
	// values included): a running VM needs a restart for a value it does not run with yet,
	// even when the config already holds it (a change left pending). A hibernated VM that
	// is resumed first runs with its config's values.
	p.cfgCores = atoiDefault(v.cfg["cores"], 1)
	p.cfgMem = vmFromConfig(v.id, v.node, v.cfg, Mark{}).MemoryMiB
	runCores, runMem := runningSizes(v.cfg, v.vs, p.cfgCores, p.cfgMem)
	runs := p.running || (p.hibernated && ch.Start)

	if err := p.planCores(ch, runs, runCores); err != nil {
		return p, err
	}
	if err := p.planMemory(ch, runs, runMem, v.hotplug); err != nil {
		return p, err
	}
	if err := p.planRestartOptions(ch, runs); err != nil {
		return p, err
	}
	if err := p.planInPlaceOptions(ch); err != nil {
		return p, err
	}
	if ch.OnBoot != nil && *ch.OnBoot != (v.cfg["onboot"] == "1") {
		p.params["onboot"] = boolParam(*ch.OnBoot)
	}
	noteTagsUpdateParams(p.params, ch, v.cfg)
	if err := p.planNet(ch); err != nil {
		return p, err
	}
	if err := p.planDisk(ch); err != nil {
		return p, err
	}
	p.did = slices.Sorted(maps.Keys(p.params))
	if v.moved {
		p.did = append(p.did, "node")
	}
	if p.resize != "" {
		p.did = append(p.did, "disk")
	}
	// A new seed (cloud_init_change = "restart") is read at the VM's next boot: a running
	// VM (or a hibernated one resumed first) is restarted for it as for cores.
	if ch.Reseed != nil {
		p.seedRestart = runs
		p.did = append(p.did, "seed")
	}
	if p.hibernated && len(p.did) > 0 && !ch.Start {
		return p, Permanentf("the VM is hibernated, and Proxmox refuses changes to it; bring it back to running (or " +
			"resume it in Proxmox), then apply again")
	}
	p.planStart(ch)
	return p, nil
}

// planCores writes a cores change, which a running VM takes only at a restart.
func (p *updatePlan) planCores(ch Changes, runs bool, runCores int) error {
	if ch.Cores == nil {
		return nil
	}
	if *ch.Cores < 1 {
		return Permanentf("cores must be at least 1")
	}
	if *ch.Cores != p.cfgCores {
		p.params["cores"] = strconv.Itoa(*ch.Cores)
	}
	p.coresRestart = runs && *ch.Cores != runCores
	return nil
}

// planRestartOptions writes a change of each RestartOption other than cores and memory
// (which planCores and planMemory plan from what the VM runs with): a running VM needs a
// restart for a value its config does not hold. The config holds a pending value too, so
// a value left pending (DeferRestart) is not written, nor restarted for, again.
func (p *updatePlan) planRestartOptions(ch Changes, runs bool) error {
	for _, o := range RestartOptions {
		v, ok := o.Value(ch)
		if !ok || o.OwnFields() || v == o.attrValue(p.cfg[o.Key]) {
			continue
		}
		cv, err := o.configValue(p.cfg[o.Key], v)
		if err != nil {
			return err
		}
		p.params[o.Key] = cv
		if runs {
			p.optRestart = append(p.optRestart, o.Key)
		}
	}
	return nil
}

// restartKeys are the keys of the RestartOptions the VM is restarted for.
func (p *updatePlan) restartKeys() map[string]bool {
	keys := map[string]bool{"cores": p.coresRestart, "memory": p.memRestart}
	for _, k := range p.optRestart {
		keys[k] = true
	}
	return keys
}

// planMemory writes a memory change: plugged into a running VM with memory hotplug (a
// size that is not a DIMM step refused), taken at a restart otherwise.
func (p *updatePlan) planMemory(ch Changes, runs bool, runMem int, hotplug bool) error {
	if ch.MemoryMiB == nil {
		return nil
	}
	mib := *ch.MemoryMiB
	if mib < 1 {
		return Permanentf("memory must be at least 1 MiB")
	}
	if hotplug && mib != p.cfgMem {
		if err := checkMemoryHotplug(p.cfg, mib); err != nil {
			return err
		}
	}
	if mib != p.cfgMem {
		p.params["memory"] = strconv.Itoa(mib)
	}
	if runs && mib != runMem {
		if p.running && hotplug {
			// Written (again, if it is pending) so that Proxmox plugs it now.
			p.memHot, p.params["memory"] = true, strconv.Itoa(mib)
		} else {
			p.memRestart = true
		}
	}
	return nil
}

// planNet rewrites net0's bridge and VLAN tag in place (rewriteNet0).
func (p *updatePlan) planNet(ch Changes) error {
	if ch.Bridge == nil && ch.VLANTag == nil {
		return nil
	}
	if ch.VLANTag != nil && (*ch.VLANTag < 0 || *ch.VLANTag > 4094) {
		return Permanentf("VLAN tag %d is outside 1 to 4094 (0 removes the tag)", *ch.VLANTag)
	}
	if p.cfg["net0"] == "" {
		return Permanentf("the VM has no net0, so the bridge and VLAN tag cannot be changed")
	}
	nv, err := rewriteNet0(p.cfg["net0"], ch.Bridge, ch.VLANTag)
	if err != nil {
		return err
	}
	if nv != p.cfg["net0"] {
		p.params["net0"] = nv
	}
	return nil
}

// planDisk grows the boot disk to a larger DiskGiB; a smaller one is refused.
func (p *updatePlan) planDisk(ch Changes) error {
	if ch.DiskGiB == nil {
		return nil
	}
	disk, cur, ok := bootDiskSize(p.cfg)
	if !ok {
		return Permanentf("the VM has no boot disk with a readable size=, so its disk size cannot be changed")
	}
	want := int64(*ch.DiskGiB) * gib
	switch {
	case want > cur:
		p.resize, p.resizeGiB = disk, *ch.DiskGiB
	case *ch.DiskGiB < ceilGiB(cur):
		return Permanentf("disk can only grow: the boot disk %s is %d GiB and %d GiB was asked; replace the VM to shrink it",
			disk, ceilGiB(cur), *ch.DiskGiB)
	}
	return nil
}

// planStart decides the checks before a start or restart: the agent (with WaitForIP) and
// the seed ISO. Every volume must exist before a start, the seed ISO too: a destroy that
// failed after deleting the seed (decision: seed-before-destroy) leaves the VM stopped with
// ide2 naming it. A seed about to be swapped need not be there: the swap uploads the new
// one (a hibernated VM resumes from the old one first, so it is checked then).
func (p *updatePlan) planStart(ch Changes) {
	restart := p.restart(ch)
	p.agentCheck = ch.WaitForIP && p.running && !p.paused && restart && !ch.Stop && !p.agentSwitchedOn()
	p.agentUnknownWarn = ch.WaitForIP && !p.running && ch.Start && !ch.UserDataKnown
	p.seedChecked = ch.Reseed != nil && !p.hibernated
	willStart := (p.running && (restart || (ch.Start && p.paused))) || (!p.running && ch.Start)
	p.seedCheck = willStart && !p.seedChecked
}

// agentSwitchedOn says the update switches the guest agent option on (the agent
// RestartOption). The agent of the running VM is then not asked before the restart: the
// option may have been off when QEMU started, which gives the VM no agent channel until
// the restart, so no answer now says what the guest has; the address wait after the
// restart reports a guest without the agent.
func (p *updatePlan) agentSwitchedOn() bool {
	v, ok := p.params["agent"]
	return ok && agentEnabled(v)
}

// restart says the VM is restarted for a value it does not run with yet (not with
// DeferRestart, which leaves it pending).
func (p *updatePlan) restart(ch Changes) bool {
	return p.pending() && !ch.DeferRestart
}

// pending says the VM runs without a value it is given: it needs a restart.
func (p *updatePlan) pending() bool {
	return p.coresRestart || p.memRestart || p.seedRestart || len(p.optRestart) > 0
}

// powerStep is the power action that ends an update.
type powerStep int

const (
	powerNone          powerStep = iota
	powerStopPaused              // Stop of a paused VM: stopped
	powerShutdown                // Stop of a running VM: shut down
	powerRestartPaused           // a restart (or Start) of a paused VM: stopped, then started
	powerRestart                 // a restart: shut down, then started
	powerPending                 // a restart left to the VM's next stop or start (DeferRestart)
	powerStart                   // Start of a stopped (or hibernated) VM
)

// String is the power step's name in an update's did list ("" for none).
func (s powerStep) String() string {
	switch s {
	case powerStopPaused:
		return "stop"
	case powerShutdown:
		return "shutdown"
	case powerRestartPaused, powerRestart:
		return "restart"
	case powerPending:
		return "pending"
	case powerStart:
		return "start"
	}
	return ""
}

// powerFor is the power action for the VM as the plan (or its run, after a resume or a
// hotplug that fell back to a restart) has it: Stop wins, a paused VM is stopped rather
// than shut down.
func (p *updatePlan) powerFor(ch Changes) powerStep {
	restart := p.restart(ch)
	switch {
	case ch.Stop && p.running && p.paused:
		return powerStopPaused
	case ch.Stop && p.running:
		return powerShutdown
	case p.running && p.paused && (restart || ch.Start):
		return powerRestartPaused
	case p.running && restart:
		return powerRestart
	case p.running && p.pending():
		return powerPending
	case !p.running && ch.Start:
		return powerStart
	}
	return powerNone
}
