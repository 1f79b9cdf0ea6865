package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Stats returns request counts per endpoint. Keys are "<METHOD> <route template>", e.g.
// "GET /cluster/resources", "POST /nodes/{node}/qemu/{vmid}/clone"; requests that match no
// route count under "<METHOD> (unmatched)". Admin calls under /pvesim are not counted.
func (s *Sim) Stats() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.stats)
}

// ResetStats zeroes the request counts.
func (s *Sim) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.stats)
}

// State returns a snapshot of nodes, VMs, volumes and tasks, with every due task applied.
func (s *Sim) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advance(now)
	return s.snapshotLocked(now)
}

// VM returns one guest's snapshot.
func (s *Sim) VM(vmid int) (VMState, bool) {
	for _, v := range s.State().VMs {
		if v.VMID == vmid {
			return v, true
		}
	}
	return VMState{}, false
}

// Task returns one task's snapshot.
func (s *Sim) Task(upid string) (TaskState, bool) {
	for _, t := range s.State().Tasks {
		if t.UPID == upid {
			return t, true
		}
	}
	return TaskState{}, false
}

// GuestSeed returns what cloud-init read from the seed ISO at the VM's last boot with a
// new instance id: user-data, meta-data, vendor-data. It stays after the VM is destroyed,
// until its VMID is cloned onto again.
func (s *Sim) GuestSeed(vmid int) (SeedFiles, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	sf, ok := s.seeds[vmid]
	return sf, ok
}

// VMSpec describes a guest added with AddVM (a foreign VM, a template, a container).
type VMSpec struct {
	VMID int    `json:"vmid"`
	Node string `json:"node,omitempty"` // default: the first node
	Type string `json:"type,omitempty"` // qemu (default) or lxc
	Name string `json:"name,omitempty"`
	// Config is the raw config (name, description, tags, scsi0, net0, agent...). Name,
	// Template and a default scsi0/net0/memory/cores are filled in when absent.
	Config   map[string]string `json:"config,omitempty"`
	Template bool              `json:"template,omitempty"`
	// Power: stopped (default), running, paused or hibernated.
	Power string `json:"power,omitempty"`
	Lock  string `json:"lock,omitempty"`
	// ShipsAgent: the guest has qemu-guest-agent installed.
	ShipsAgent bool `json:"ships_agent,omitempty"`
	// CloneOf, when set, is the VMID of a VM whose config this one starts from as a clone
	// of it makes it (cloneConfig, clone_vm), Config's keys then written over it: a VM
	// someone cloned, or a create's clone left as it was.
	CloneOf int `json:"clone_of,omitempty"`
}

// AddVM adds a guest as if someone else had created it.
func (s *Sim) AddVM(spec VMSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advance(now)
	if spec.VMID < 100 || spec.VMID > 999999999 {
		return fmt.Errorf("pvesim: vmid %d out of range", spec.VMID)
	}
	if _, taken := s.vms[spec.VMID]; taken {
		return fmt.Errorf("pvesim: VMID %d is taken", spec.VMID)
	}
	if spec.Node == "" {
		spec.Node = s.nodeOrder[0]
	}
	if s.nodes[spec.Node] == nil {
		return fmt.Errorf("pvesim: no node %q", spec.Node)
	}
	typ := spec.Type
	if typ == "" {
		typ = "qemu"
	}
	if typ != "qemu" && typ != "lxc" {
		return fmt.Errorf("pvesim: type %q is not qemu or lxc", typ)
	}
	// The config as a file written by hand or by another tool holds it: a cdrom line reads
	// as ide2 (configFileKey).
	conf := map[string]string{}
	if spec.CloneOf != 0 {
		src := s.vms[spec.CloneOf]
		if src == nil || src.typ != "qemu" {
			return fmt.Errorf("pvesim: no QEMU VM %d to clone", spec.CloneOf)
		}
		conf = s.cloneConfig(src.conf, spec.VMID, "")
	}
	for k, val := range spec.Config {
		conf[configFileKey(k)] = val
	}
	if spec.Name != "" {
		conf["name"] = spec.Name
	}
	if spec.Template {
		conf["template"] = "1"
	}
	if typ == "qemu" {
		def := map[string]string{
			"cores": "1", "memory": "1024", "boot": "order=scsi0",
			"scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=4G", spec.VMID),
			"net0":  "virtio=" + s.newMAC() + ",bridge=vmbr0",
			// A VM made without smbios1 gets a generated uuid (qemu-server
			// src/PVE/API2/Qemu.pm:1514-1516, create_vm).
			"smbios1": "uuid=" + s.newUUID(),
		}
		if spec.Template {
			def["scsi0"] = fmt.Sprintf("local-lvm:base-%d-disk-0,size=4G", spec.VMID)
		}
		for k, v := range def {
			if _, ok := conf[k]; !ok {
				conf[k] = v
			}
		}
	} else if _, ok := conf["rootfs"]; !ok {
		conf["rootfs"] = fmt.Sprintf("local-lvm:vm-%d-disk-0,size=8G", spec.VMID)
	}
	v := &vm{vmid: spec.VMID, node: spec.Node, typ: typ, conf: conf, status: "stopped", qmp: "stopped",
		lock: spec.Lock, guest: guest{agentInstalled: spec.ShipsAgent}}
	if spec.CloneOf != 0 {
		v.recordVolumeSizes()
	}
	s.vms[spec.VMID] = v
	if spec.Power != "" && spec.Power != "stopped" {
		if err := s.setPower(v, spec.Power, now); err != nil {
			delete(s.vms, spec.VMID)
			return err
		}
	}
	// A guest someone else created has been there for a while: it has status data.
	s.sampleVM(v, now)
	return nil
}

// SnapshotStatus takes a /cluster/resources status snapshot now and restarts the snapshot
// period from here (no effect with Listing.Live).
func (s *Sim) SnapshotStatus() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advance(now)
	s.restartStatus(now)
}

// DeleteVM removes a guest at once, as if someone had destroyed it out of band.
func (s *Sim) DeleteVM(vmid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	v := s.vms[vmid]
	if v == nil {
		return fmt.Errorf("pvesim: no VM %d", vmid)
	}
	s.removeVM(v)
	s.removeVMAccess(vmid) // as a destroy through the API or the UI does
	return nil
}

// VMPatch changes a guest's state at once (admin function; nil/empty fields unchanged).
type VMPatch struct {
	// Power: running, stopped, paused (status running, qmpstatus paused; fact: paused-listed-running) or
	// hibernated (stopped, lock suspended, a vmstate volume).
	Power string `json:"power,omitempty"`
	// Lock sets the lock ("" clears it), e.g. "backup".
	Lock *string `json:"lock,omitempty"`
	// LockFor clears that lock after this simulated time (0: stays).
	LockFor time.Duration `json:"lock_for,omitempty"`
	// AgentInstalled: the guest has (or lacks) qemu-guest-agent from its next boot.
	AgentInstalled *bool `json:"agent_installed,omitempty"`
	// IgnoresACPI: the guest ignores the ACPI power button, so a shutdown without the
	// agent answering times out.
	IgnoresACPI *bool `json:"ignores_acpi,omitempty"`
	// AgentStopped: the guest agent stops answering now (it comes back at the next boot
	// when installed).
	AgentStopped bool `json:"agent_stopped,omitempty"`
	// Node moves the guest to another node (a migration done out of band).
	Node string `json:"node,omitempty"`
	// Config sets raw config keys; an empty value deletes the key.
	Config map[string]string `json:"config,omitempty"`
	// Snapshots adds snapshot sections of the config file, by name, as a file written by
	// hand holds them ([<name>] sections, qemu-server src/PVE/QemuServer.pm
	// parse_vm_config); the caller sets the main section's parent (and each section's).
	// A nil config deletes that snapshot as snapshot_delete does (snapshots.go: the
	// references to it as parent become its parent).
	Snapshots map[string]map[string]string `json:"snapshots,omitempty"`
	// SnapshotOps create, delete and roll back snapshots as Proxmox does to the config
	// file (snapshots.go), in order, after Config and Snapshots. No snapshot API is
	// modelled.
	SnapshotOps []SnapshotOp `json:"snapshot_ops,omitempty"`
}

// SetVMState applies p to the guest.
func (s *Sim) SetVMState(vmid int, p VMPatch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advance(now)
	v := s.vms[vmid]
	if v == nil {
		return fmt.Errorf("pvesim: no VM %d", vmid)
	}
	if p.Node != "" {
		if s.nodes[p.Node] == nil {
			return fmt.Errorf("pvesim: no node %q", p.Node)
		}
		v.node = p.Node
	}
	for _, name := range slices.Sorted(maps.Keys(p.Snapshots)) {
		conf := p.Snapshots[name]
		if conf == nil {
			if err := v.snapshotDelete(name); err != nil {
				return fmt.Errorf("pvesim: VM %d: %w", vmid, err)
			}
			continue
		}
		if v.snapshots == nil {
			v.snapshots = map[string]map[string]string{}
		}
		sec := map[string]string{}
		for k, val := range conf {
			sec[configFileKey(k)] = val
		}
		v.snapshots[name] = sec
	}
	for k, val := range p.Config {
		k = configFileKey(k) // a cdrom line reads as ide2
		if val == "" {
			delete(v.conf, k)
		} else {
			v.conf[k] = val
		}
	}
	for _, op := range p.SnapshotOps {
		if err := v.snapshotOp(op, now); err != nil {
			return fmt.Errorf("pvesim: VM %d: %w", vmid, err)
		}
	}
	if p.AgentInstalled != nil {
		v.guest.agentInstalled = *p.AgentInstalled
	}
	if p.IgnoresACPI != nil {
		v.guest.ignoresACPI = *p.IgnoresACPI
	}
	if p.AgentStopped {
		v.guest.agentAt, v.guest.ipAt = time.Time{}, time.Time{}
	}
	if p.Power != "" {
		if err := s.setPower(v, p.Power, now); err != nil {
			return err
		}
	}
	if p.Lock != nil {
		v.lock = *p.Lock
		v.lockUntil = time.Time{}
		if p.LockFor > 0 && v.lock != "" {
			v.lockUntil = now.Add(s.real(p.LockFor))
		}
	}
	return nil
}

func (s *Sim) setPower(v *vm, power string, now time.Time) error {
	wasHibernated := v.status == "stopped" && v.lock == "suspended"
	switch power {
	case "running", "paused":
		switch {
		case wasHibernated:
			v.lock = ""
			delete(v.conf, "vmstate")
			v.status, v.qmp = "running", "running"
			s.resumeGuest(v, now)
		case v.status != "running":
			v.applyPending() // a start applies the pending values
			v.status, v.qmp = "running", "running"
			v.bootAt = now
			if v.typ == "qemu" {
				s.bootGuest(v, now)
			}
		}
		v.qmp = map[string]string{"running": "running", "paused": "paused"}[power]
	case "stopped":
		if wasHibernated {
			v.lock = ""
			delete(v.conf, "vmstate")
		}
		s.powerOff(v)
	case "hibernated":
		if v.status != "running" {
			v.status, v.qmp = "running", "running"
		}
		s.hibernate(v, now)
	default:
		return fmt.Errorf("pvesim: power %q is not running, stopped, paused or hibernated", power)
	}
	return nil
}

// AddISO stores a file on a storage of a node, as a finished upload would.
func (s *Sim) AddISO(nodeName, storageID, name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.storages[storageID]
	if st == nil || s.nodes[nodeName] == nil {
		return fmt.Errorf("pvesim: no storage %q on node %q", storageID, nodeName)
	}
	if st.shared {
		nodeName = ""
	}
	vol := &volume{node: nodeName, storage: storageID, name: "iso/" + name, data: append([]byte(nil), data...), ctime: time.Now().Unix()}
	s.volumes[volKey(nodeName, vol.volid())] = vol
	return nil
}

// SetVolumeCTime sets the ctime of a volume on a node ("proxy-seeds:iso/x-seed.iso"), as
// the storage content listing reports it (pve-storage src/PVE/Storage/Plugin.pm
// $get_subdir_files: an ISO's ctime is its file's stat ctime), so that a test can have a
// volume written hours ago.
func (s *Sim) SetVolumeCTime(nodeName, volid string, t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	vol := s.volume(nodeName, volid)
	if vol == nil {
		return fmt.Errorf("pvesim: no volume %s on node %s", volid, nodeName)
	}
	vol.ctime = t.Unix()
	return nil
}

// ISO returns the content of a volume ("proxy-seeds:iso/x-seed.iso") on a node.
func (s *Sim) ISO(nodeName, volid string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	vol := s.volume(nodeName, volid)
	if vol == nil {
		return nil, false
	}
	return append([]byte(nil), vol.data...), true
}

// Deny removes a privilege from every token on an ACL path (and everything below it), on top
// of what the ACLs grant, e.g.
// Deny("/storage/proxy-seeds", "Datastore.Allocate") makes a seed delete a 403 (fact: volume-delete-task).
func (s *Sim) Deny(aclPath, privilege string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deny[Privilege{Path: aclPath, Privilege: privilege}] = true
}

// Allow undoes Deny.
func (s *Sim) Allow(aclPath, privilege string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.deny, Privilege{Path: aclPath, Privilege: privilege})
}

// Info is the standalone server's start-up line.
type Info struct {
	Endpoint   string         `json:"endpoint"`
	APIToken   string         `json:"api_token"`
	CAFile     string         `json:"ca_file"`
	Nodes      []string       `json:"nodes"`
	ISOStorage string         `json:"iso_storage"`
	Templates  map[string]int `json:"templates"`
}

// Info returns the connection details.
func (s *Sim) Info() Info {
	return Info{Endpoint: s.Endpoint, APIToken: s.APIToken, CAFile: s.CAFile, Nodes: s.Nodes,
		ISOStorage: s.ISOStorage, Templates: maps.Clone(s.Templates)}
}

func trimSlash(p string) string { return strings.Trim(p, "/") }
