package pvesim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The state model. Everything here is guarded by Sim.mu.

type node struct {
	name     string
	bootTime time.Time
	archive  taskArchive // its finished tasks (handlers_tasks.go)
}

type storage struct {
	id      string
	typ     string   // lvmthin, dir, rbd
	content []string // in configuration order ("unsorted comma list")
	shared  bool
	total   int64
	hasPath bool // a directory storage: uploads allowed
}

func (st *storage) has(content string) bool { return slices.Contains(st.content, content) }

type volume struct {
	node    string // "" on shared storage
	storage string
	name    string // "iso/<file>"
	data    []byte
	ctime   int64
}

func (v *volume) volid() string { return v.storage + ":" + v.name }

type vm struct {
	vmid   int
	node   string
	typ    string // qemu or lxc
	conf   map[string]string
	lock   string
	status string // running or stopped
	qmp    string // running, paused, prelaunch, stopped
	bootAt time.Time
	// freshUntil: /cluster/resources lists the VM as status unknown until then (a VM
	// seconds old, fact: listing-lag).
	freshUntil time.Time
	// flock is the task holding the VM's config file lock; waiters queue behind it (fact: start-queues-behind-lock).
	flock   *task
	waiters []*task
	guest   guest
	// lockUntil clears an injected lock at that time (zero: stays).
	lockUntil time.Time
	// midClone: the clone task has not written the config yet (fact: nameless-mid-clone).
	midClone bool
	// volSizes are the real sizes of the VM's disk volumes by volume id, as the storage
	// has them (the config's size= is only what was last written there).
	volSizes map[string]int64
	// pending holds config values written while the VM ran that apply at its next start
	// or at a stop or shutdown through the API (vm.staysPending, hotplug.go).
	pending map[string]string
	// pendingDelete holds the keys a config write to the running VM deleted that stay in
	// the config until its next start (the pending section's delete line; the value is the
	// force flag): a drive that cannot be unplugged live (pendingDriveDelete, hotplug.go).
	pendingDelete map[string]bool
	// snapshots are the config file's snapshot sections by name (VMPatch.Snapshots); no
	// config read but GET .../config?snapshot= shows them.
	snapshots map[string]map[string]string
}

// withPending is the config as GET .../config shows it without current=1: the pending
// values taken in, the pending deletes left out (pve-guest-common src/PVE/AbstractConfig.pm
// load_current_config).
func (v *vm) withPending() map[string]string {
	if len(v.pending) == 0 && len(v.pendingDelete) == 0 {
		return v.conf
	}
	out := maps.Clone(v.conf)
	maps.Copy(out, v.pending)
	for k := range v.pendingDelete {
		delete(out, k)
	}
	return out
}

// digestConf is the config the digest covers: the file, its pending section included.
func (v *vm) digestConf() map[string]string {
	out := withLockKey(v.conf, v.lock)
	for k, val := range v.pending {
		out["[PENDING] "+k] = val
	}
	if len(v.pendingDelete) > 0 {
		out["[PENDING] delete"] = strings.Join(slices.Sorted(maps.Keys(v.pendingDelete)), ",")
	}
	for name, sec := range v.snapshots {
		for k, val := range sec {
			out["["+name+"] "+k] = val
		}
	}
	return out
}

// applyPending applies the pending values and deletes: at a start (vm_start_nolock) and at
// a stop or shutdown through the API (_do_vm_stop calls vm_stop_cleanup with
// apply_pending_changes; qemu-server src/PVE/QemuServer.pm vmconfig_apply_pending).
func (v *vm) applyPending() {
	for k := range v.pendingDelete {
		delete(v.conf, k)
	}
	maps.Copy(v.conf, v.pending)
	v.pending, v.pendingDelete = nil, nil
}

func (v *vm) cloning() bool { return v.midClone }

func (v *vm) name() string { return v.conf["name"] }

func (v *vm) isTemplate() bool { return v.conf["template"] == "1" }

// guest is what runs inside the VM, as far as the agent is concerned.
type guest struct {
	// agentInstalled: the disk has qemu-guest-agent (shipped by the template, or installed
	// by cloud-init at an earlier boot).
	agentInstalled bool
	// instanceID of the last NoCloud seed cloud-init ran.
	instanceID string
	// seed the last cloud-init run read.
	seed *SeedFiles
	// Per boot: agentAt is when the agent answers, ipAt when DHCP has given an address.
	agentAt, ipAt time.Time
	ip            string
	// nics is the IPv4 configuration cloud-init wrote from the last seed's network-config
	// (guestnet.go); nil: none written yet, DHCP on net0.
	nics map[int]nicNet
	// resumeAgent: the agent was up when the VM hibernated.
	resumeAgent bool
	// ignoresACPI: the guest does not act on the ACPI power button (no acpid, a hung
	// kernel), so only the agent's guest-shutdown or a stop powers it off.
	ignoresACPI bool
}

func (s *Sim) vmOn(nodeName string, vmid int) *vm {
	v := s.vms[vmid]
	if v == nil || v.node != nodeName || v.typ != "qemu" {
		return nil
	}
	return v
}

func notExistMsg(nodeName string, vmid int) string {
	return fmt.Sprintf("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", nodeName, vmid)
}

func lockedMsg(lock string) string { return fmt.Sprintf("VM is locked (%s)", lock) }

func flockTimeoutMsg(vmid int) string {
	return fmt.Sprintf("can't lock file '/var/lock/qemu-server/lock-%d.conf' - got timeout", vmid)
}

// digest is the sha1 of the config file text, as PVE computes it.
func digest(conf map[string]string) string {
	h := sha1.New()
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if k == "description" {
			continue
		}
		fmt.Fprintf(h, "%s: %s\n", k, conf[k])
	}
	for _, line := range strings.Split(conf["description"], "\n") {
		if conf["description"] != "" {
			fmt.Fprintf(h, "#%s\n", line)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// numericKeys are the config keys PVE returns as JSON numbers (integer and boolean schema
// types); everything else, memory included, is a string.
var numericKeys = map[string]bool{
	"cores": true, "sockets": true, "vcpus": true, "balloon": true, "shares": true, "cpuunits": true,
	"template": true, "onboot": true, "numa": true, "acpi": true, "kvm": true, "tablet": true,
	"protection": true, "reboot": true, "localtime": true, "freeze": true, "autostart": true,
	"tdf": true, "ciupgrade": true, "cpulimit": true,
}

func renderConfig(conf map[string]string, lock string) map[string]any {
	out := make(map[string]any, len(conf)+2)
	for k, v := range conf {
		if numericKeys[k] {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				out[k] = jsonNumber(n)
				continue
			}
		}
		out[k] = v
	}
	withLock := maps.Clone(conf)
	if lock != "" {
		out["lock"] = lock
		withLock["lock"] = lock
	}
	out["digest"] = digest(withLock)
	return out
}

// jsonNumber renders integral floats without a fraction.
type jsonNumber float64

func (n jsonNumber) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if f == float64(int64(f)) {
		return []byte(strconv.FormatInt(int64(f), 10)), nil
	}
	return []byte(strconv.FormatFloat(f, 'f', -1, 64)), nil
}

// Sizes.

func parseSize(s string) (int64, bool) {
	m := sizeRe.FindStringSubmatch(s)
	if m == nil || m[1] != "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return 0, false
	}
	mult := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[m[3]]
	return int64(f * mult), true
}

func formatSize(n int64) string {
	switch {
	case n > 0 && n%(1<<40) == 0:
		return fmt.Sprintf("%dT", n>>40)
	case n > 0 && n%(1<<30) == 0:
		return fmt.Sprintf("%dG", n>>30)
	case n > 0 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n > 0 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return strconv.FormatInt(n, 10)
}

// setOpt replaces or appends key=value in a comma list, keeping the order of the others.
func setOpt(v, key, val string) string {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		if k, _, ok := strings.Cut(p, "="); ok && k == key {
			parts[i] = key + "=" + val
			return strings.Join(parts, ",")
		}
	}
	return v + "," + key + "=" + val
}

// driveVolume is the volume part of a drive value ("local-lvm:vm-100-disk-0,size=3G").
func driveVolume(v string) string {
	first, _, _ := strings.Cut(v, ",")
	if f, ok := strings.CutPrefix(first, "file="); ok {
		return f
	}
	return first
}

func isCDROM(v string) bool { return optValue(v, "media") == "cdrom" }

// bootDiskSize is the size of the first disk of the boot order, or of scsi0/virtio0...
func bootDiskSize(conf map[string]string) int64 {
	order := strings.TrimPrefix(optValue(conf["boot"], "order"), "")
	for _, k := range strings.Split(order, ";") {
		if v, ok := conf[k]; ok && driveKeyRe.MatchString(k) && !isCDROM(v) {
			n, _ := parseSize(optValue(v, "size"))
			return n
		}
	}
	for _, k := range []string{"scsi0", "virtio0", "sata0", "ide0"} {
		if v, ok := conf[k]; ok && !isCDROM(v) {
			n, _ := parseSize(optValue(v, "size"))
			return n
		}
	}
	return 0
}

// memoryMiB is the configured memory, 512 MiB when unset (qemu-server
// src/PVE/QemuServer/Memory.pm, the memory property's default).
func memoryMiB(conf map[string]string) int64 {
	m := memoryRe.FindStringSubmatch(conf["memory"])
	if m == nil {
		return 512
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func cpuCount(conf map[string]string) int {
	cores, err := strconv.Atoi(conf["cores"])
	if err != nil || cores < 1 {
		cores = 1
	}
	sockets, err := strconv.Atoi(conf["sockets"])
	if err != nil || sockets < 1 {
		sockets = 1
	}
	return cores * sockets
}

func agentEnabled(conf map[string]string) bool {
	v, ok := conf["agent"]
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(v, ",")
	if k, val, ok := strings.Cut(first, "="); ok {
		if k != "enabled" {
			return optValue(v, "enabled") == "1"
		}
		return val == "1"
	}
	return first == "1"
}

// macOf returns the MAC of a net value ("virtio=BC:24:11:EE:48:83,bridge=vmbr0").
func macOf(v string) string {
	first, _, _ := strings.Cut(v, ",")
	if _, mac, ok := strings.Cut(first, "="); ok && macRe.MatchString(mac) {
		return mac
	}
	if mac := optValue(v, "macaddr"); mac != "" {
		return mac
	}
	return ""
}

func (s *Sim) newMAC() string {
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", s.rng.IntN(256), s.rng.IntN(256), s.rng.IntN(256))
}

func (s *Sim) newUUID() string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(s.rng.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// addDefaults builds the default topology: storages local-lvm (images), proxy-seeds (iso
// only), local (iso, vztmpl, backup; no images), backups (backup only), ceph-vm (shared
// images, with more than one node); templates 9001 and 9000, a foreign VM 100 and a
// container 101.
func (s *Sim) addDefaults(templateAgent bool) {
	s.storages = map[string]*storage{
		"local-lvm":   {id: "local-lvm", typ: "lvmthin", content: []string{"rootdir", "images"}, total: 100 << 30},
		"proxy-seeds": {id: "proxy-seeds", typ: "dir", content: []string{"iso"}, total: 20 << 30, hasPath: true},
		"local":       {id: "local", typ: "dir", content: []string{"iso", "vztmpl", "backup"}, total: 60 << 30, hasPath: true},
		"backups":     {id: "backups", typ: "dir", content: []string{"backup"}, total: 200 << 30, hasPath: true},
	}
	if len(s.nodeOrder) > 1 {
		s.storages["ceph-vm"] = &storage{id: "ceph-vm", typ: "rbd", content: []string{"images", "rootdir"}, shared: true, total: 500 << 30}
	}
	first := s.nodeOrder[0]
	meta := "creation-qemu=11.0.3,ctime=1790145676"
	s.vms[9001] = &vm{vmid: 9001, node: first, typ: "qemu", status: "stopped", qmp: "stopped", conf: map[string]string{
		"agent": "1", "bios": "ovmf", "boot": "order=scsi0", "cores": "2", "cpu": "x86-64-v2-AES",
		"efidisk0": "local-lvm:base-9001-disk-1,efitype=4m,pre-enrolled-keys=0,size=4M",
		"machine":  "q35", "memory": "2048", "meta": meta, "name": "debian-13-template",
		"net0": "virtio=" + s.newMAC() + ",bridge=vmbr0", "ostype": "l26",
		"scsi0": "local-lvm:base-9001-disk-0,size=3G", "scsihw": "virtio-scsi-single",
		"serial0": "socket", "smbios1": "uuid=" + s.newUUID(), "template": "1",
		"vga": "serial0", "vmgenid": s.newUUID(),
	}, guest: guest{agentInstalled: templateAgent}}
	s.vms[9000] = &vm{vmid: 9000, node: first, typ: "qemu", status: "stopped", qmp: "stopped", conf: map[string]string{
		"agent": "1", "boot": "order=scsi0", "cores": "2", "ide2": "local-lvm:vm-9000-cloudinit,media=cdrom",
		"ipconfig0": "ip=dhcp", "memory": "2048", "meta": "creation-qemu=11.0.3,ctime=1790140000",
		"name": "ubuntu-2404-template", "ciuser": "ubuntu", "net0": "virtio=" + s.newMAC() + ",bridge=vmbr0,tag=4", "ostype": "l26",
		"scsi0": "local-lvm:base-9000-disk-0,size=3584M", "scsihw": "virtio-scsi-pci",
		"serial0": "socket", "smbios1": "uuid=" + s.newUUID(), "template": "1", "vga": "serial0",
		"vmgenid": s.newUUID(),
	}, guest: guest{agentInstalled: true}}
	web := &vm{vmid: 100, node: first, typ: "qemu", status: "running", qmp: "running", conf: map[string]string{
		"agent": "1", "boot": "order=scsi0;net0", "cores": "2", "memory": "4096", "name": "web01",
		"net0": "virtio=" + s.newMAC() + ",bridge=vmbr0", "ostype": "l26", "onboot": "1",
		"scsi0": "local-lvm:vm-100-disk-0,size=32G", "scsihw": "virtio-scsi-single",
		"smbios1": "uuid=" + s.newUUID(), "tags": "prod;web", "vmgenid": s.newUUID(),
	}, guest: guest{agentInstalled: true}}
	web.bootAt = s.start.Add(-3 * time.Hour)
	s.bootGuest(web, web.bootAt)
	s.vms[100] = web
	s.vms[101] = &vm{vmid: 101, node: first, typ: "lxc", status: "running", qmp: "running", conf: map[string]string{
		"hostname": "dns01", "name": "dns01", "cores": "1", "memory": "512", "rootfs": "local-lvm:vm-101-disk-0,size=8G",
	}, bootAt: s.start.Add(-3 * time.Hour)}
}

// Snapshot types, for tests and the admin API.

// State is a snapshot of everything the simulator holds.
type State struct {
	Nodes   []NodeState   `json:"nodes"`
	VMs     []VMState     `json:"vms"`
	Volumes []VolumeState `json:"volumes"`
	Tasks   []TaskState   `json:"tasks"`
}

// NodeState is one node.
type NodeState struct {
	Name   string `json:"name"`
	Online bool   `json:"online"`
}

// VMState is one guest. Power is running, stopped, paused, hibernated or starting.
type VMState struct {
	VMID        int               `json:"vmid"`
	Node        string            `json:"node"`
	Type        string            `json:"type"`
	Name        string            `json:"name,omitempty"`
	Status      string            `json:"status"`
	QMPStatus   string            `json:"qmpstatus"`
	Power       string            `json:"power"`
	Lock        string            `json:"lock,omitempty"`
	Template    bool              `json:"template"`
	Tags        string            `json:"tags,omitempty"`
	Description string            `json:"description,omitempty"`
	Config      map[string]string `json:"config"`
	// Pending is the config's pending section: values written while the VM ran that
	// apply at its next start (Config holds the current ones).
	Pending map[string]string `json:"pending,omitempty"`
	// PendingDelete are the keys the pending section deletes at the next start (Config
	// still holds them).
	PendingDelete  []string `json:"pending_delete,omitempty"`
	AgentInstalled bool     `json:"agent_installed"`
	AgentRunning   bool     `json:"agent_running"`
	IP             string   `json:"ip,omitempty"`
	// TaskHolding is the UPID of the task holding the config lock, if any.
	TaskHolding string `json:"task_holding,omitempty"`
}

// VolumeState is one stored volume (ISO images; VM disks are in the VM config).
type VolumeState struct {
	Node  string `json:"node"`
	VolID string `json:"volid"`
	Size  int64  `json:"size"`
	CTime int64  `json:"ctime"`
}

// TaskState is one task.
type TaskState struct {
	UPID       string    `json:"upid"`
	Node       string    `json:"node"`
	Type       string    `json:"type"`
	ID         string    `json:"id"`
	VMID       int       `json:"vmid,omitempty"`
	Status     string    `json:"status"`
	ExitStatus string    `json:"exitstatus,omitempty"`
	Submitted  time.Time `json:"submitted"`
	Ended      time.Time `json:"ended,omitzero"`
	// Log holds the task log lines the simulator writes (warnings and notes).
	Log []string `json:"log,omitempty"`
}

func (s *Sim) power(v *vm) string {
	switch {
	case v.status == "stopped" && v.lock == "suspended":
		return "hibernated"
	case v.status == "running" && v.qmp == "paused":
		return "paused"
	case v.status == "running" && v.qmp == "prelaunch":
		return "starting"
	}
	return v.status
}

func (s *Sim) snapshotLocked(now time.Time) State {
	var st State
	for _, n := range s.nodeOrder {
		st.Nodes = append(st.Nodes, NodeState{Name: n, Online: !s.nodeDown(n)})
	}
	for _, id := range slices.Sorted(maps.Keys(s.vms)) {
		v := s.vms[id]
		vs := VMState{
			VMID: id, Node: v.node, Type: v.typ, Name: v.name(), Status: v.status, QMPStatus: v.qmp,
			Power: s.power(v), Lock: v.lock, Template: v.isTemplate(), Tags: v.conf["tags"],
			Description: v.conf["description"], Config: maps.Clone(v.conf), Pending: maps.Clone(v.pending),
			PendingDelete:  slices.Sorted(maps.Keys(v.pendingDelete)),
			AgentInstalled: v.guest.agentInstalled,
			AgentRunning:   v.status == "running" && v.qmp == "running" && !v.guest.agentAt.IsZero() && !now.Before(v.guest.agentAt),
		}
		if !v.guest.ipAt.IsZero() && !now.Before(v.guest.ipAt) && v.status == "running" {
			vs.IP = v.guest.ip
		}
		if v.flock != nil {
			vs.TaskHolding = v.flock.upid
		}
		st.VMs = append(st.VMs, vs)
	}
	for _, k := range slices.Sorted(maps.Keys(s.volumes)) {
		vol := s.volumes[k]
		st.Volumes = append(st.Volumes, VolumeState{Node: vol.node, VolID: vol.volid(), Size: int64(len(vol.data)), CTime: vol.ctime})
	}
	for _, t := range s.taskList {
		ts := TaskState{UPID: t.upid, Node: t.node, Type: t.typ, ID: t.id, VMID: t.vmid, Status: "running", Submitted: t.submitted,
			Log: slices.Clone(t.log)}
		if t.done {
			ts.Status, ts.ExitStatus, ts.Ended = "stopped", t.exit, t.endAt
		}
		st.Tasks = append(st.Tasks, ts)
	}
	return st
}

func volKey(nodeName, volid string) string { return nodeName + "/" + volid }

// recordVolumeSizes takes the disks' sizes from the config, as a clone leaves them.
func (v *vm) recordVolumeSizes() {
	for k, val := range v.conf {
		if driveKeyRe.MatchString(k) && !isCDROM(val) {
			if n, ok := parseSize(optValue(val, "size")); ok {
				v.setVolumeSize(val, n)
			}
		}
	}
}

func (v *vm) setVolumeSize(drive string, n int64) {
	if v.volSizes == nil {
		v.volSizes = map[string]int64{}
	}
	v.volSizes[driveVolume(drive)] = n
}

// volumeSize is the real size of a drive's volume (the config's size= when unknown).
func (v *vm) volumeSize(drive string) int64 {
	if n, ok := v.volSizes[driveVolume(drive)]; ok {
		return n
	}
	n, _ := parseSize(optValue(drive, "size"))
	return n
}
