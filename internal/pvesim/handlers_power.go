package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Power endpoints of a VM: start, stop, shutdown, suspend (with hibernation) and resume,
// each a task whose checks run inside it, as in qemu-server.

// hStart: every check runs in the task (qemu-server src/PVE/API2/Qemu.pm vm_start forks
// qmstart; vm_start's load_config fails there for a missing VM).
func (s *Sim) hStart(c *call) *response {
	v := s.vmOn(c.node, c.vmid)
	if v == nil {
		return s.missingVMTask(c, "qmstart", notExistMsg(c.node, c.vmid))
	}
	if r := s.haManaged(c.vmid); r != nil && c.params["stateuri"] == "" {
		return s.haPowerTask(c, r, "hastart", "started") // Qemu.pm:3631-3642 (ha_crm.go)
	}
	skiplock := c.params["skiplock"] == "1"
	resuming := false
	t := s.newTask(c, c.node, "qmstart", strconv.Itoa(c.vmid), c.vmid, true, s.dur.Start)
	t.begin = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		if v.lock != "" && v.lock != "suspended" && !skiplock {
			return lockedMsg(v.lock)
		}
		if v.status == "running" {
			return fmt.Sprintf("VM %d already running", v.vmid)
		}
		if v.isTemplate() {
			return "you can't start a vm if it's a template"
		}
		if vol := s.missingVolume(v); vol != "" {
			return fmt.Sprintf("volume '%s' does not exist", vol)
		}
		resuming = v.lock == "suspended"
		if !resuming {
			v.applyPending() // vm_start_nolock, not for a resume from a state file
		}
		if msg := memoryHotplugStartError(v.conf); msg != "" {
			return msg
		}
		v.status, v.qmp = "running", "prelaunch"
		return ""
	}
	t.finish = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		v.qmp = "running"
		if resuming {
			v.lock = ""
			delete(v.conf, "vmstate")
			s.resumeGuest(v, at)
			return ""
		}
		v.bootAt = at
		s.bootGuest(v, at)
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

// missingVolume is the first drive volume of v (in key order) on a storage with a path that
// v's node does not hold: vm_start activates every drive volume before it starts the guest
// (qemu-server src/PVE/QemuServer.pm vm_start_nolock, activate_volumes over
// get_current_vm_volumes; pve-storage src/PVE/Storage/Plugin.pm activate_volume dies
// "volume '<volid>' does not exist"). Empty when every one is there.
func (s *Sim) missingVolume(v *vm) string {
	for _, k := range slices.Sorted(maps.Keys(v.conf)) {
		if !driveKeyRe.MatchString(k) {
			continue
		}
		vol := driveVolume(v.conf[k])
		sid, _, ok := strings.Cut(vol, ":")
		if st := s.storages[sid]; ok && st != nil && st.hasPath && s.volume(v.node, vol) == nil {
			return vol
		}
	}
	return ""
}

// stopMissingMsg is qemu-server src/PVE/QemuConfig.pm assert_config_exists_on_node, which
// check_running calls first in _do_vm_stop.
func stopMissingMsg(nodeName string, vmid int) string {
	return fmt.Sprintf("unable to find configuration file for VM %d on node '%s'", vmid, nodeName)
}

// hStop: every check runs in the qmstop task (qemu-server src/PVE/QemuServer.pm
// _do_vm_stop): a missing config fails there, a VM not running ends OK at once, before the
// lock is checked.
func (s *Sim) hStop(c *call) *response {
	v := s.vmOn(c.node, c.vmid)
	if v == nil {
		return s.missingVMTask(c, "qmstop", stopMissingMsg(c.node, c.vmid))
	}
	if r := s.haManaged(c.vmid); r != nil && c.params["migratedfrom"] == "" {
		if c.params["overrule-shutdown"] == "1" {
			return paramError(map[string]string{"overrule-shutdown": "Not applicable for HA resources."}) // Qemu.pm:3755-3756
		}
		return s.haPowerTask(c, r, "hastop", "stopped") // Qemu.pm:3750-3768 (ha_crm.go)
	}
	skiplock := c.params["skiplock"] == "1"
	t := s.newTask(c, c.node, "qmstop", strconv.Itoa(c.vmid), c.vmid, true, s.dur.Stop)
	t.begin = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return stopMissingMsg(v.node, v.vmid)
		}
		if v.status != "running" {
			return ""
		}
		if v.lock != "" && !skiplock {
			return lockedMsg(v.lock)
		}
		return ""
	}
	t.finish = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		wasRunning := v.status == "running"
		s.powerOff(v)
		if wasRunning {
			v.applyPending() // vm_stop_cleanup with apply_pending_changes
		}
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

func (s *Sim) powerOff(v *vm) {
	v.status, v.qmp = "stopped", "stopped"
	v.bootAt = time.Time{}
	v.guest.agentAt, v.guest.ipAt = time.Time{}, time.Time{}
}

func (s *Sim) hSuspend(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if v.status != "running" {
		return apiError(500, fmt.Sprintf("VM %d not running", v.vmid))
	}
	todisk := c.params["todisk"] == "1"
	skiplock := c.params["skiplock"] == "1"
	t := s.newTask(c, c.node, "qmsuspend", strconv.Itoa(c.vmid), c.vmid, true, s.dur.Suspend)
	t.begin = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		if v.lock != "" && !skiplock {
			return lockedMsg(v.lock)
		}
		if v.status != "running" {
			return fmt.Sprintf("VM %d not running", v.vmid)
		}
		if todisk {
			v.lock = "suspending"
		}
		return ""
	}
	t.finish = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		if !todisk {
			v.qmp = "paused"
			return ""
		}
		s.hibernate(v, at)
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

// hibernate: stopped, lock suspended, a state volume in vmstate (fact: hibernated-vm).
func (s *Sim) hibernate(v *vm, at time.Time) {
	agentUp := !v.guest.agentAt.IsZero() && !at.Before(v.guest.agentAt)
	s.powerOff(v)
	v.lock = "suspended"
	v.guest.resumeAgent = agentUp
	sid := "local-lvm"
	if k := firstDisk(v.conf); k != "" {
		sid, _, _ = strings.Cut(driveVolume(v.conf[k]), ":")
	}
	v.conf["vmstate"] = fmt.Sprintf("%s:vm-%d-state-suspend-%s", sid, v.vmid, at.UTC().Format("2006-01-02"))
}

func (s *Sim) hResume(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if v.status != "running" {
		return apiError(500, fmt.Sprintf("VM %d not running", v.vmid))
	}
	t := s.newTask(c, c.node, "qmresume", strconv.Itoa(c.vmid), c.vmid, true, s.dur.Suspend)
	t.finish = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		if v.status == "running" {
			v.qmp = "running"
		}
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

// hShutdown is qemu-server's vm_shutdown (API2/Qemu.pm) and _do_vm_stop (QemuServer.pm) in
// the qmshutdown task: a paused VM is refused unless forceStop, which makes it a stop; the
// guest agent's guest-shutdown when it answers, else the ACPI button (ignored by a guest set
// to, VMPatch.IgnoresACPI); the guest powers off after Durations.Shutdown; past the timeout
// (the config's startup down=, else 60 s) the task fails, or with forceStop kills the VM and
// ends OK. A stop by the task applies the pending changes.
func (s *Sim) hShutdown(c *call) *response {
	v := s.vmOn(c.node, c.vmid)
	if v == nil {
		return s.missingVMTask(c, "qmshutdown", stopMissingMsg(c.node, c.vmid))
	}
	force := c.params["forceStop"] == "1"
	quit := false
	if v.status == "running" && v.qmp == "paused" {
		if !force {
			return apiError(500, "VM is paused - cannot shutdown")
		}
		quit = true // "VM is paused - stop instead of shutdown", warned outside the task
	}
	if r := s.haManaged(c.vmid); r != nil {
		return s.haPowerTask(c, r, "hastop", "stopped") // Qemu.pm:3932-3945 (ha_crm.go)
	}
	timeout := 60 * time.Second
	if n, err := strconv.Atoi(c.params["timeout"]); err == nil {
		timeout = time.Duration(n) * time.Second
	} else if n, err := strconv.Atoi(optValue(v.conf["startup"], "down")); err == nil && n > 0 {
		timeout = time.Duration(n) * time.Second
	}
	skiplock := c.params["skiplock"] == "1"
	// Whether the guest acts on the request is decided when the task sends it.
	viaAgent := agentEnabled(v.conf) && v.qmp == "running" && !v.guest.agentAt.IsZero() && !c.now.Before(v.guest.agentAt)
	d := s.dur.Shutdown
	if quit {
		d = s.dur.Stop
	}
	timedOut := !quit && (d > timeout || (v.guest.ignoresACPI && !viaAgent))
	if timedOut {
		d = timeout
	}
	t := s.newTask(c, c.node, "qmshutdown", strconv.Itoa(c.vmid), c.vmid, true, d)
	t.begin = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return stopMissingMsg(v.node, v.vmid)
		}
		if v.status != "running" {
			t.dur = 0
			return ""
		}
		if v.lock != "" && !skiplock {
			return lockedMsg(v.lock)
		}
		return ""
	}
	t.finish = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return stopMissingMsg(v.node, v.vmid)
		}
		if v.status != "running" {
			return ""
		}
		if timedOut {
			if !force {
				return "VM quit/powerdown failed - got timeout"
			}
			t.log = append(t.log, "VM still running - terminating now with SIGTERM")
		}
		s.powerOff(v)
		v.applyPending()
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}
