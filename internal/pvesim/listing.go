package pvesim

import (
	"strconv"
	"time"
)

// The status snapshot model of /cluster/resources.
//
// pve-manager PVE/API2/Cluster.pm (resources, the 'vm' branch) builds each guest entry with
// PVE::API2Tools::extract_vm_stats: id, vmid, node and type from the pmxcfs vmlist (live),
// status "unknown", and, only when the rrd status data has an entry for the guest, uptime,
// name, status, template, maxcpu, cpu, maxmem, mem, maxdisk, disk, netin, netout,
// diskread and diskwrite from it. lock and tags are then read live from the config
// (get_guest_config_properties). The status data is what pvestatd pushes every
// $updatetime = 10 s (PVE/Service/pvestatd.pm update_qemu_status over
// PVE::QemuServer::vmstatus): name is the config's name or "VM <vmid>"
// (qemu-server src/PVE/QemuServer.pm vmstatus), status is the QMP status of a running
// guest (running, paused, prelaunch) or "stopped". pmxcfs keeps an entry of a guest that
// is gone until it is 5 minutes old (status.c rrd_entry_is_old), so a VMID reused within
// that time is listed under the old guest's name until the next snapshot.

// statusEntry is one guest's status data, as of the snapshot that sampled it.
type statusEntry struct {
	at       time.Time // wall time of the sample
	name     string
	status   string
	uptime   int64
	template int
	maxcpu   int
	maxmem   int64
	maxdisk  int64
	running  bool
}

type statusData struct {
	entries map[int]statusEntry
	// next is the wall time of the next periodic snapshot.
	next time.Time
	// taken counts the snapshots taken (a pass over every VM each).
	taken int
}

// statusRetention is how long pmxcfs keeps the status data of a guest no longer sampled.
const statusRetention = 5 * time.Minute

func (s *Sim) snapshotting() bool { return !s.listing.Live }

func (s *Sim) statusInterval() time.Duration {
	d := s.real(s.dur.StatusInterval)
	if d <= 0 {
		d = time.Nanosecond
	}
	return d
}

// initStatus takes the first snapshot at the simulator's start.
func (s *Sim) initStatus() {
	s.status.entries = map[int]statusEntry{}
	if !s.snapshotting() {
		return
	}
	s.takeStatus(s.start)
	s.status.next = s.start.Add(s.statusInterval())
}

// sampleVM gives one guest status data as of at, leaving the others and the period as
// they are.
func (s *Sim) sampleVM(v *vm, at time.Time) {
	if !s.snapshotting() || s.nodeDown(v.node) {
		return
	}
	s.status.entries[v.vmid] = s.sample(v, at)
}

// takeStatus samples every guest of a reachable node at wall time at (pvestatd runs on
// each node and pushes its own guests).
func (s *Sim) takeStatus(at time.Time) {
	s.status.taken++
	for id, v := range s.vms {
		if s.nodeDown(v.node) {
			continue
		}
		s.status.entries[id] = s.sample(v, at)
	}
	for id, e := range s.status.entries {
		if _, live := s.vms[id]; !live && s.simSince(e.at, at) > statusRetention {
			delete(s.status.entries, id)
		}
	}
}

// sample is v's status data as pvestatd would push it at at.
func (s *Sim) sample(v *vm, at time.Time) statusEntry {
	e := statusEntry{
		at: at, name: v.name(), status: "stopped", maxcpu: cpuCount(v.conf),
		maxmem: memoryMiB(v.conf) << 20, maxdisk: bootDiskSize(v.conf),
	}
	if v.typ == "qemu" && e.name == "" {
		e.name = "VM " + strconv.Itoa(v.vmid)
	}
	if v.typ == "lxc" {
		e.maxdisk, _ = parseSize(optValue(v.conf["rootfs"], "size"))
	}
	if v.isTemplate() {
		e.template = 1
	}
	if v.status == "running" {
		e.running = true
		e.status = v.qmp
		if v.typ == "lxc" || e.status == "" {
			e.status = "running"
		}
		if !v.bootAt.IsZero() {
			e.uptime = int64(s.simSince(v.bootAt, at).Seconds())
		}
	}
	return e
}

// statusDue is the time of the periodic snapshot due at or before limit, if any.
//
// It is the last one due, not the first: the callers (advance) ask with a limit before
// which nothing changes, so the snapshots missed in between would all sample the same
// state, and catching up one period at a time costs a pass over every VM per period: at a
// high speed (a 10 s period is 10 µs at speed 1e6) an idle minute is millions of passes
// under the simulator's lock, and every request waits on them.
func (s *Sim) statusDue(limit time.Time) (time.Time, bool) {
	if !s.snapshotting() || s.status.next.After(limit) {
		return time.Time{}, false
	}
	iv := s.statusInterval()
	d := limit.Sub(s.status.next)
	return s.status.next.Add(d - d%iv), true
}

// runStatus takes the periodic snapshot due at at (the last one at or before at when
// several were missed while nothing changed) and schedules the next.
func (s *Sim) runStatus(at time.Time) {
	iv := s.statusInterval()
	if d := at.Sub(s.status.next); d >= iv {
		s.status.next = s.status.next.Add(d - d%iv) // the last due time at or before at
	}
	s.takeStatus(s.status.next)
	s.status.next = s.status.next.Add(iv)
}

// restartStatus takes a snapshot at at and restarts the period from there (the worst-case
// switches of Listing).
func (s *Sim) restartStatus(at time.Time) {
	if !s.snapshotting() {
		return
	}
	s.takeStatus(at)
	s.status.next = at.Add(s.statusInterval())
}

// vmEntry is one /cluster/resources entry.
func (s *Sim) vmEntry(v *vm, c *call) map[string]any {
	if !s.snapshotting() {
		return s.liveVMEntry(v, c)
	}
	e := map[string]any{"id": v.typ + "/" + strconv.Itoa(v.vmid), "vmid": v.vmid, "node": v.node, "type": v.typ, "status": "unknown"}
	// Status data older than 5 minutes is dropped (pmxcfs status.c rrd_entry_is_old): the
	// guests of a node down that long lose their name too.
	if d, ok := s.status.entries[v.vmid]; ok && s.simSince(d.at, c.now) <= statusRetention {
		e["uptime"], e["name"], e["status"], e["template"] = d.uptime, d.name, d.status, d.template
		e["maxcpu"], e["maxmem"], e["maxdisk"] = d.maxcpu, d.maxmem, d.maxdisk
		e["cpu"], e["mem"], e["disk"], e["netin"], e["netout"], e["diskread"], e["diskwrite"] = 0, 0, 0, 0, 0, 0, 0
		if d.running {
			e["cpu"] = 0.0123
			e["mem"] = d.maxmem / 4
			e["netin"], e["netout"] = 123456, 65432
		}
	}
	if t := v.conf["tags"]; t != "" && !v.cloning() {
		e["tags"] = t
	}
	if v.lock != "" {
		e["lock"] = v.lock
	}
	if s.nodeDown(v.node) {
		e["status"] = "unknown"
	}
	return e
}

// liveVMEntry is the entry of the Live listing model. Mid-clone: only type, vmid, id, node,
// lock and status unknown (fact: nameless-mid-clone). A VM seconds old, or on an unreachable node: status unknown.
func (s *Sim) liveVMEntry(v *vm, c *call) map[string]any {
	id := v.typ + "/" + strconv.Itoa(v.vmid)
	if v.cloning() {
		return map[string]any{"id": id, "vmid": v.vmid, "node": v.node, "type": v.typ, "lock": v.lock, "status": "unknown"}
	}
	e := map[string]any{
		"id": id, "vmid": v.vmid, "node": v.node, "type": v.typ, "name": v.name(),
		"status": v.status, "template": 0, "maxcpu": cpuCount(v.conf), "maxmem": memoryMiB(v.conf) << 20,
		"maxdisk": bootDiskSize(v.conf), "uptime": 0, "cpu": 0, "mem": 0, "disk": 0,
		"netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
	}
	if v.typ == "lxc" {
		n, _ := parseSize(optValue(v.conf["rootfs"], "size"))
		e["maxdisk"] = n
	}
	if v.isTemplate() {
		e["template"] = 1
	}
	if v.status == "running" {
		e["uptime"] = int64(s.simSince(v.bootAt, c.now).Seconds())
		e["cpu"] = 0.0123
		e["mem"] = (memoryMiB(v.conf) << 20) / 4
		e["netin"], e["netout"] = 123456, 65432
	}
	if t := v.conf["tags"]; t != "" {
		e["tags"] = t
	}
	if v.lock != "" {
		e["lock"] = v.lock
	}
	if s.nodeDown(v.node) || c.now.Before(v.freshUntil) {
		e["status"] = "unknown"
	}
	return e
}
