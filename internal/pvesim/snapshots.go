package pvesim

import (
	"fmt"
	"strconv"
	"time"
)

// Snapshot operations on a VM's config file, as pve-guest-common src/PVE/AbstractConfig.pm
// does them to the file (the volume snapshots, vmstate and replication are not modelled).
// They are reached through VMPatch.SnapshotOps (the admin API): no snapshot endpoint is
// modelled.

// SnapshotOp is one snapshot operation on a VM: Op is "create", "delete" or "rollback".
type SnapshotOp struct {
	Op   string `json:"op"`
	Name string `json:"name"`
}

// snapshotCopySkip are the keys __snapshot_copy_config leaves out of a copy
// (AbstractConfig.pm lines 691-706), besides unusedN.
var snapshotCopySkip = map[string]bool{"snapstate": true, "snaptime": true, "vmstate": true, "lock": true,
	"digest": true, "description": true}

// copySnapshotConfig is __snapshot_copy_config (AbstractConfig.pm lines 691-706): every key
// of src but the skipped ones into dst, parent included (that is how a new snapshot gets
// its parent).
func copySnapshotConfig(src, dst map[string]string) {
	for k, val := range src {
		if !snapshotCopySkip[k] && !unusedKeyRe.MatchString(k) {
			dst[k] = val
		}
	}
}

// snapshotOp applies op to v (the simulator's lock is held).
func (v *vm) snapshotOp(op SnapshotOp, now time.Time) error {
	switch op.Op {
	case "create":
		return v.snapshotCreate(op.Name, now)
	case "delete":
		return v.snapshotDelete(op.Name)
	case "rollback":
		return v.snapshotRollback(op.Name)
	}
	return fmt.Errorf("pvesim: unknown snapshot op %q", op.Op)
}

// snapshotCreate is what snapshot_create leaves in the file (AbstractConfig.pm lines
// 825-876): __snapshot_prepare (lines 730-785) refuses a template, a locked VM and a name in
// use, drops a parent reference to the new name from the other sections (lines 757-764),
// and copies the current config into the new section with its snaptime (lines 773-776);
// __snapshot_commit (lines 788-813, line 807) makes the new snapshot the config's parent. The pending
// section is not copied (a reconstruction: the copy is of the file's main section).
func (v *vm) snapshotCreate(name string, now time.Time) error {
	if v.conf["template"] == "1" {
		return fmt.Errorf("you can't take a snapshot if it's a template")
	}
	if v.lock != "" {
		return fmt.Errorf("VM is locked (%s)", v.lock)
	}
	if _, ok := v.snapshots[name]; ok {
		return fmt.Errorf("snapshot name '%s' already used", name)
	}
	for _, sec := range v.snapshots {
		if sec["parent"] == name {
			delete(sec, "parent")
		}
	}
	sec := map[string]string{}
	copySnapshotConfig(v.conf, sec)
	sec["snaptime"] = strconv.FormatInt(now.Unix(), 10)
	if v.snapshots == nil {
		v.snapshots = map[string]map[string]string{}
	}
	v.snapshots[name] = sec
	v.conf["parent"] = name
	return nil
}

// snapshotDelete is what snapshot_delete leaves in the file (AbstractConfig.pm lines
// 922-1052): the section is removed, and every reference to it as parent, in the config
// and in the other sections, is replaced by its own parent, or removed when it has none
// ($unlink_parent, lines 949-958, applied at lines 1036-1043). So deleting the config's
// parent makes that snapshot's parent the config's; deleting a root snapshot that is the
// config's parent leaves the config without parent while the other snapshots stay.
// A template is refused (lines 982-983).
func (v *vm) snapshotDelete(name string) error {
	snap, ok := v.snapshots[name]
	if !ok {
		return fmt.Errorf("snapshot '%s' does not exist", name)
	}
	if v.conf["template"] == "1" {
		return fmt.Errorf("you can't delete a snapshot if vm is a template")
	}
	unlink := func(conf map[string]string) {
		if conf["parent"] != "" && conf["parent"] == name {
			if p := snap["parent"]; p != "" {
				conf["parent"] = p
			} else {
				delete(conf, "parent")
			}
		}
	}
	unlink(v.conf)
	for other, sec := range v.snapshots {
		if other != name {
			unlink(sec)
		}
	}
	delete(v.snapshots, name)
	return nil
}

// snapshotRollback is what snapshot_rollback leaves in the file (AbstractConfig.pm lines
// 1124-1214): a template is refused (line 1134), a running VM too (lines 1172-1173; Proxmox stops it first when asked to, a
// step the admin API leaves to the caller), the config becomes the snapshot's
// (__snapshot_apply_config, lines 709-727: the description and unusedN kept, every other
// key from the snapshot but the skipped ones; the pending section is not carried) with the
// snapshot as its parent (line 1189).
func (v *vm) snapshotRollback(name string) error {
	snap, ok := v.snapshots[name]
	if !ok {
		return fmt.Errorf("snapshot '%s' does not exist", name)
	}
	if v.conf["template"] == "1" {
		return fmt.Errorf("you can't rollback if vm is a template")
	}
	if v.status == "running" {
		return fmt.Errorf("unable to rollback vm %d: vm is running", v.vmid)
	}
	next := map[string]string{}
	for k, val := range v.conf {
		if k == "description" || unusedKeyRe.MatchString(k) {
			next[k] = val
		}
	}
	copySnapshotConfig(snap, next)
	next["parent"] = name
	v.conf = next
	v.pending, v.pendingDelete = nil, nil
	return nil
}
