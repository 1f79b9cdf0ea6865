package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Endpoints that clients written for real PVE call first (go-proxmox, other Terraform
// providers), from the PVE 9 sources.

// nodeIP is the address a node's corosync link would have.
func (s *Sim) nodeIP(n string) string {
	return "192.168.0." + strconv.Itoa(10+slices.Index(s.nodeOrder, n))
}

// hClusterStatus is pve-manager PVE/API2/Cluster.pm get_status: on a cluster a "cluster"
// entry (nodes, version, name, quorate) and one "node" entry per member (id, name,
// nodeid, local, online, ip, level); a single node without a cluster gets the fake local
// entry with nodeid 0.
func (s *Sim) hClusterStatus(c *call) *response {
	out := []map[string]any{}
	if len(s.nodeOrder) == 1 {
		n := s.nodeOrder[0]
		return okData(append(out, map[string]any{
			"type": "node", "id": "node/" + n, "name": n, "ip": s.nodeIP(n), "local": 1,
			"nodeid": 0, "online": 1, "level": "",
		}))
	}
	online := 0
	for _, n := range s.nodeOrder {
		if !s.nodeDown(n) {
			online++
		}
	}
	out = append(out, map[string]any{
		"type": "cluster", "id": "cluster", "nodes": len(s.nodeOrder), "version": len(s.nodeOrder),
		"name": "pvesim", "quorate": b2i(online*2 > len(s.nodeOrder)),
	})
	for i, n := range s.nodeOrder {
		e := map[string]any{
			"type": "node", "id": "node/" + n, "name": n, "nodeid": i + 1, "local": b2i(i == 0),
			"online": b2i(!s.nodeDown(n)), "ip": s.nodeIP(n),
		}
		if !s.nodeDown(n) {
			e["level"] = ""
		}
		out = append(out, e)
	}
	return okData(out)
}

// hNodeVersion is pve-manager PVE/API2/Nodes.pm version: PVE::pvecfg::version_info.
func (s *Sim) hNodeVersion(c *call) *response {
	return okData(map[string]any{"version": pveVersion, "release": pveRelease, "repoid": pveRepoID})
}

// hClusterTasks is pve-manager PVE/API2/Cluster.pm tasks: the cluster-wide recent task
// list (pvestatd broadcasts each node's), the token user split into user and tokenid.
func (s *Sim) hClusterTasks(c *call) *response {
	out := []map[string]any{}
	for i := len(s.taskList) - 1; i >= 0 && len(out) < 50; i-- {
		t := s.taskList[i]
		e := map[string]any{
			"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart, "starttime": t.submitted.Unix(),
			"type": t.typ, "id": t.id, "user": t.user, "tokenid": t.tokenid,
		}
		if t.done {
			e["status"] = t.exit
			e["endtime"] = t.endAt.Unix()
		}
		out = append(out, e)
	}
	return okData(out)
}

// hQemuList is qemu-server src/PVE/API2/Qemu.pm vmlist over src/PVE/QemuServer.pm
// vmstatus: every VM of the node with vmid, status, name ("VM <vmid>" without one),
// cpus, maxmem, maxdisk, disk, uptime, cpu, mem, memhost, netin, netout, pid when
// running, lock, tags, template when set; qmpstatus, diskread and diskwrite with full=1.
func (s *Sim) hQemuList(c *call) *response {
	full := c.params["full"] == "1"
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.vms)) {
		v := s.vms[id]
		// Only the VMs the caller may audit (qemu-server src/PVE/API2/Qemu.pm vmlist).
		if v.node != c.node || v.typ != "qemu" || !c.can("/vms/"+strconv.Itoa(id), "VM.Audit") {
			continue
		}
		name := v.name()
		if name == "" {
			name = fmt.Sprintf("VM %d", v.vmid)
		}
		e := map[string]any{
			"vmid": v.vmid, "status": v.status, "name": name, "maxmem": memoryMiB(v.conf) << 20,
			"maxdisk": bootDiskSize(v.conf), "disk": 0, "cpus": cpuCount(v.conf), "uptime": 0,
			"cpu": 0, "mem": 0, "memhost": 0, "netin": 0, "netout": 0,
		}
		if v.lock != "" {
			e["lock"] = v.lock
		}
		if v.isTemplate() {
			e["template"] = 1
		}
		if _, ok := v.conf["serial0"]; ok {
			e["serial"] = 1
		}
		if t, ok := v.conf["tags"]; ok {
			e["tags"] = t
		}
		if v.status == "running" {
			e["pid"] = 4000 + v.vmid%60000
			if !v.bootAt.IsZero() {
				e["uptime"] = int64(s.simSince(v.bootAt, c.now).Seconds())
			}
			e["cpu"] = 0.0123
			e["mem"] = (memoryMiB(v.conf) << 20) / 4
			e["memhost"] = (memoryMiB(v.conf) << 20) / 4
			e["netin"], e["netout"] = 123456, 65432
		}
		if full {
			e["qmpstatus"] = v.qmp
			e["diskread"], e["diskwrite"] = 0, 0
		}
		out = append(out, e)
	}
	return okData(out)
}

// hShutdown is qemu-server src/PVE/API2/Qemu.pm vm_shutdown and src/PVE/QemuServer.pm
// _do_vm_stop in the qmshutdown task. Before the task: a paused VM is refused unless
// forceStop, which turns the shutdown into a stop (quit, at once). In the task: a missing
// config fails, a VM not running ends OK at once, a lock refuses; without timeout the
// config's startup down= value, else 60 s. The guest agent's guest-shutdown is used when
// the agent is configured and answers, else the ACPI power button, which a guest set to
// ignore it (VMPatch.IgnoresACPI) never acts on. The guest powers off after
// Durations.Shutdown; past timeout the task fails "VM quit/powerdown failed - got
// timeout", or with forceStop logs "VM still running - terminating now with SIGTERM" (a
// plain Perl warn, which pvedaemon prints to the task log without counting it as a
// warning, so the task still ends OK) and kills the VM. A stop by the task applies the
// pending changes (vm_stop_cleanup with apply_pending_changes).
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
