package pvesim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Migration, the cross-node clone refusal and HA-style moves, reconstructed from qemu-server:
//
//   - src/PVE/API2/Qemu.pm migrate_vm checks before the task: the target is not the local
//     node (a parameter error), the target node exists, the VM is not locked, a running VM
//     needs online, and a targetstorage exists. The task is qmigrate, id the VMID, on the
//     source node.
//   - src/PVE/QemuMigrate.pm prepare and scan_local_volumes, inside the task: every volume on
//     non-shared storage is local; a local CD-ROM image is refused ("local cdrom image", even
//     when the target node holds a file of the same name: the code never looks there), a
//     CD-ROM "none" is skipped, and a running VM's local disks need with-local-disks ("can't
//     live migrate attached local disks without with-local-disks option"); any of these ends
//     the task with "can't migrate VM - check log". phase1 sets lock migrate; phase3_cleanup
//     moves the config to the target node (move_config_to_node), which drops the lock. A
//     failed migration leaves the VM on the source node, unlocked.
//   - src/PVE/API2/Qemu.pm clone_vm, $check_storage_access_clone: a clone with a target is
//     refused when any source volume, a CD-ROM ISO included, is on non-shared storage, whatever
//     the storage parameter says.

const migrateTmpl = "/nodes/{node}/qemu/{vmid}/migrate"

func init() {
	routes = append(routes, &route{method: "POST", tmpl: migrateTmpl, segs: strings.Split(strings.TrimPrefix(migrateTmpl, "/"), "/"),
		schema: fixed(map[string]pspec{
			"target": {format: fmtNode}, "online": pBool, "force": pBool, "with-local-disks": pBool,
			"targetstorage": pStr, "bwlimit": {typ: tInt, optional: true, min: i64(0)},
			"migration_type": {optional: true, enum: []string{"secure", "insecure"}}, "migration_network": pStr,
			"with-conntrack-state": pBool,
		}),
		perms: vmPriv("VM.Migrate"), h: (*Sim).hMigrate})
}

// crossNodeCloneRefusal is clone_vm's refusal of a target for a VM with a volume on
// non-shared storage, and a target node that is not online.
func (s *Sim) crossNodeCloneRefusal(src *vm, target string) *response {
	for _, k := range slices.Sorted(maps.Keys(src.conf)) {
		if !driveKeyRe.MatchString(k) {
			continue
		}
		vol := driveVolume(src.conf[k])
		if vol == "" || vol == "none" || vol == "cdrom" {
			continue
		}
		sid, _, ok := strings.Cut(vol, ":")
		if st := s.storages[sid]; ok && st != nil && !st.shared {
			return apiError(500, fmt.Sprintf("can't clone VM to node '%s' (VM uses local storage)", target))
		}
	}
	if s.nodeDown(target) {
		return apiError(500, fmt.Sprintf("target node '%s' is not online", target))
	}
	return nil
}

// volRef is what foreach_volid gathers of one volume over the VM's config, its pending
// section and its snapshot sections (qemu-server src/PVE/QemuServer.pm foreach_volid, lines
// 4526-4590): a CD-ROM only when every reference is one, attached when the current config
// names it, and the snapshots and pending section that name it.
type volRef struct {
	cdrom, attached, pending bool
	snaps                    []string
}

// volRefs walks v's drives as foreach_volid does: the config, the pending values, each
// snapshot section.
func volRefs(v *vm) map[string]*volRef {
	refs := map[string]*volRef{}
	add := func(conf map[string]string, snap string, pending bool) {
		for k, val := range conf {
			if !driveKeyRe.MatchString(k) && k != "vmstate" {
				continue
			}
			vol := driveVolume(val)
			if vol == "" {
				continue
			}
			r := refs[vol]
			if r == nil {
				r = &volRef{cdrom: true}
				refs[vol] = r
			}
			r.cdrom = r.cdrom && isCDROM(val)
			switch {
			case snap != "":
				r.snaps = append(r.snaps, snap)
			case pending:
				r.pending = true
			default:
				r.attached = true
			}
		}
	}
	add(v.conf, "", false)
	add(v.pending, "", true)
	for name, sec := range v.snapshots {
		add(sec, name, false)
	}
	return refs
}

// localVolumes is QemuMigrate.pm's scan_local_volumes: the volumes of v on non-shared storage
// (config, pending values or snapshots, volRefs), each with where it is referenced, and the
// reasons the migration is refused (empty: it may go ahead), each logged as "can't migrate
// local disk '<volid>': <reason>". A local CD-ROM image is refused unless it is a cloud-init
// drive; a running VM's local disks need with-local-disks. Snapshot formats are not modelled.
func (s *Sim) localVolumes(v *vm, running, withLocalDisks bool) (local []string, refusals []string) {
	refs := volRefs(v)
	for _, vol := range slices.Sorted(maps.Keys(refs)) {
		r := refs[vol]
		switch {
		case vol == "none" && r.cdrom:
			continue
		case vol == "cdrom" && r.cdrom:
			refusals = append(refusals, "can't migrate local cdrom drive")
			continue
		case strings.HasPrefix(vol, "/"):
			refusals = append(refusals, fmt.Sprintf("can't migrate local disk '%s': local file/device", vol))
			continue
		}
		sid, volname, ok := strings.Cut(vol, ":")
		st := s.storages[sid]
		if !ok || st == nil || st.shared {
			continue
		}
		local = append(local, fmt.Sprintf("found local disk '%s' (%s)", vol, r.refWord()))
		switch {
		case r.cdrom && strings.Contains(volname, "cloudinit"):
		case r.cdrom:
			refusals = append(refusals, fmt.Sprintf("can't migrate local disk '%s': local cdrom image", vol))
		case r.attached && running && !withLocalDisks:
			refusals = append(refusals, fmt.Sprintf("can't migrate local disk '%s': can't live migrate attached local "+
				"disks without with-local-disks option", vol))
		}
	}
	return local, refusals
}

// refWord is the log's word for where a local volume is referenced (QemuMigrate.pm lines
// 536-556: attached wins over snapshot, snapshot over pending).
func (r *volRef) refWord() string {
	switch {
	case r.attached:
		return "attached"
	case len(r.snaps) > 0:
		return "referenced by snapshot(s)"
	default:
		return "pending change"
	}
}

func (s *Sim) hMigrate(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if r := s.migrateRefusal(c, v); r != nil {
		return r
	}
	if r := s.haManaged(c.vmid); r != nil {
		return s.haMigrateTask(c, r, c.params["target"]) // Qemu.pm:5639-5651 (ha_crm.go)
	}
	m := &migration{s: s, v: v, source: c.node, target: c.params["target"], targetStorage: c.params["targetstorage"],
		online: c.params["online"] == "1", withLocal: c.params["with-local-disks"] == "1"}
	t := s.newTask(c, c.node, "qmigrate", strconv.Itoa(c.vmid), c.vmid, true, s.dur.Clone)
	t.begin = func(time.Time) string { return m.begin(t) }
	t.finish = func(time.Time) string { return m.finish() }
	t.onFail = func(time.Time) { m.fail() }
	s.submitTask(t, c.now)
	return okData(t.upid)
}

// migrateRefusal is migrate_vm's checks before the task: the target is not the local node
// (a parameter error), it exists, the VM is not locked, a running VM needs online, and a
// targetstorage exists.
func (s *Sim) migrateRefusal(c *call, v *vm) *response {
	target := c.params["target"]
	if target == c.node {
		return paramError(map[string]string{"target": "target is local node."})
	}
	if s.nodes[target] == nil {
		return apiError(500, fmt.Sprintf("no such cluster node '%s'", target))
	}
	if v.cloning() || v.lock != "" {
		return apiError(500, lockedMsg(v.lock))
	}
	if v.status == "running" && c.params["online"] != "1" {
		return apiError(500, "can't migrate running VM without --online")
	}
	if ts := c.params["targetstorage"]; ts != "" && s.storages[ts] == nil {
		return apiError(500, fmt.Sprintf("storage '%s' does not exist", ts))
	}
	return nil
}

// migration is one qmigrate task of VM v from node source to node target (QemuMigrate.pm).
type migration struct {
	s                 *Sim
	v                 *vm
	source, target    string
	targetStorage     string
	online, withLocal bool
	live              bool // the VM was running when the task began
}

// begin is prepare and scan_local_volumes, then phase1's lock: it answers the task's
// failure, empty when the migration goes ahead. Its log lines go to t.
func (m *migration) begin(t *task) string {
	s, v := m.s, m.v
	if s.vms[v.vmid] != v || v.node != m.source {
		return notExistMsg(m.source, v.vmid)
	}
	if v.lock != "" {
		return lockedMsg(v.lock)
	}
	m.live = v.status == "running"
	if m.live && !m.online {
		return "can't migrate running VM without --online"
	}
	if !m.live && m.online {
		t.log = append(t.log, "VM isn't running. Doing offline migration instead.")
	}
	local, refusals := s.localVolumes(v, m.live, m.withLocal)
	t.log = append(t.log, local...)
	if len(refusals) > 0 {
		t.log = append(t.log, refusals...)
		return "can't migrate VM - check log"
	}
	if s.nodeDown(m.target) {
		return fmt.Sprintf("migration aborted: target node '%s' is not online", m.target)
	}
	v.lock = "migrate"
	return ""
}

// finish is phase3_cleanup: the lock dropped, the config moved to the target.
func (m *migration) finish() string {
	s, v := m.s, m.v
	if s.vms[v.vmid] != v {
		return notExistMsg(m.source, v.vmid)
	}
	if v.lock == "migrate" {
		v.lock = ""
	}
	if s.nodeDown(m.target) {
		return fmt.Sprintf("migration aborted: target node '%s' is not online", m.target)
	}
	if m.live && v.status != "running" {
		return "migration aborted: the VM stopped during the migration"
	}
	s.moveGuest(v, m.target, m.targetStorage)
	return ""
}

// fail leaves a failed migration's VM on the source node, unlocked.
func (m *migration) fail() {
	if m.s.vms[m.v.vmid] == m.v && m.v.lock == "migrate" {
		m.v.lock = ""
	}
}

// moveGuest moves v's config to target; with targetStorage its disks on non-shared storage
// land there. The guest keeps running (a live migration) with its MAC and address.
func (s *Sim) moveGuest(v *vm, target, targetStorage string) {
	if targetStorage != "" {
		for _, k := range slices.Sorted(maps.Keys(v.conf)) {
			if !driveKeyRe.MatchString(k) || isCDROM(v.conf[k]) {
				continue
			}
			vol := driveVolume(v.conf[k])
			sid, volname, ok := strings.Cut(vol, ":")
			if st := s.storages[sid]; ok && st != nil && !st.shared && sid != targetStorage {
				v.conf[k] = strings.Replace(v.conf[k], vol, targetStorage+":"+volname, 1)
			}
		}
	}
	v.node = target
}

// MoveVM moves a guest to another node at once, as the HA manager recovers a service from a
// fenced node (pve-ha-manager's steal_service renames the config into the recovery node's
// directory and copies no volume), so a seed on per-node storage stays behind. The recovery
// node then starts the guest, and a volume missing there fails that start
// (task_status_start_volume_missing), leaving it stopped; otherwise it keeps running with its
// MAC and address. A locked or cloning guest is refused.
func (s *Sim) MoveVM(vmid int, target string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	v := s.vms[vmid]
	switch {
	case v == nil:
		return fmt.Errorf("pvesim: no VM %d", vmid)
	case s.nodes[target] == nil:
		return fmt.Errorf("pvesim: no node %q", target)
	case v.node == target:
		return fmt.Errorf("pvesim: VM %d is already on node %q", vmid, target)
	case v.cloning() || v.lock != "":
		return fmt.Errorf("pvesim: VM %d is locked (%s)", vmid, v.lock)
	case v.flock != nil:
		return errors.New("pvesim: a task holds the VM's config lock")
	}
	v.node = target
	if v.status == "running" && s.missingVolume(v) != "" {
		s.powerOff(v)
	}
	return nil
}

// adminMove is the admin route POST /pvesim/vms/{vmid}/move {"target": "<node>"} (MoveVM).
func (s *Sim) adminMove(a *adminCall) *response {
	id, r := a.vmid()
	if r != nil {
		return r
	}
	var body struct {
		Target string `json:"target"`
	}
	if r := a.decode(&body); r != nil {
		return r
	}
	return adminResult(s.MoveVM(id, body.Target))
}
