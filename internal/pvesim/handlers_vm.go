package pvesim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (s *Sim) vmOrErr(c *call) (*vm, *response) {
	v := s.vmOn(c.node, c.vmid)
	if v == nil {
		return nil, apiError(500, notExistMsg(c.node, c.vmid))
	}
	return v, nil
}

// holderWait is how long until the task holding v's config lock ends (a guess for
// waiting tasks: a lock wait step).
func holderWait(v *vm, now time.Time) time.Duration {
	if v.flock == nil || v.flock.endAt.IsZero() {
		return 5 * time.Millisecond
	}
	return v.flock.endAt.Sub(now)
}

func (s *Sim) hConfigGet(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if v.cloning() {
		return okData(renderConfig(map[string]string{}, v.lock))
	}
	// snapshot= answers that snapshot section with the file's digest (vm_config,
	// pve-guest-common src/PVE/AbstractConfig.pm load_snapshot_config); not with current.
	if name := c.params["snapshot"]; name != "" {
		if c.params["current"] == "1" {
			return paramError(map[string]string{"snapshot": "cannot use 'snapshot' parameter with 'current'",
				"current": "cannot use 'snapshot' parameter with 'current'"})
		}
		snap, ok := v.snapshots[name]
		if !ok {
			return apiError(500, fmt.Sprintf("snapshot '%s' does not exist", name))
		}
		out := renderConfig(snap, "")
		out["digest"] = digest(v.digestConf())
		return okData(out)
	}
	// Pending values show unless current=1 (qemu-server src/PVE/API2/Qemu.pm vm_config).
	conf := v.withPending()
	if c.params["current"] == "1" {
		conf = v.conf
	}
	out := renderConfig(conf, v.lock)
	out["digest"] = digest(v.digestConf())
	return okData(out)
}

// hPending is GET .../pending (qemu-server src/PVE/API2/Qemu.pm vm_pending, pve-guest-common
// src/PVE/GuestHelpers.pm config_with_pending_array): one entry per key of the current
// config (digest and lock among them), with value, its pending value as pending and
// delete 1 (2 when forced) when the pending section deletes it; then one entry per key
// only the pending section sets (pending alone), and one per pending delete of a key the
// config lacks (delete alone). A cipassword shows masked. Perl's hash order is not kept:
// entries come sorted by key. The snapshot sections are left out.
func (s *Sim) hPending(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	cur := renderConfig(v.conf, v.lock)
	if v.cloning() {
		cur = renderConfig(map[string]string{}, v.lock)
	} else {
		cur["digest"] = digest(v.digestConf())
	}
	pend := renderConfig(v.pending, "")
	delete(pend, "digest")
	var out []map[string]any
	for _, k := range slices.Sorted(maps.Keys(cur)) {
		e := map[string]any{"key": k, "value": cur[k]}
		if p, ok := pend[k]; ok {
			e["pending"] = p
		}
		if force, ok := v.pendingDelete[k]; ok {
			e["delete"] = pendingDeleteFlag(force)
		}
		out = append(out, e)
	}
	for _, k := range slices.Sorted(maps.Keys(pend)) {
		if _, ok := cur[k]; !ok {
			out = append(out, map[string]any{"key": k, "pending": pend[k]})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(v.pendingDelete)) {
		if _, ok := cur[k]; !ok {
			out = append(out, map[string]any{"key": k, "delete": pendingDeleteFlag(v.pendingDelete[k])})
		}
	}
	for _, e := range out {
		if e["key"] == "cipassword" {
			if _, ok := e["value"]; ok {
				e["value"] = "**********"
			}
			if _, ok := e["pending"]; ok {
				e["pending"] = "********** "
			}
		}
	}
	return okData(out)
}

// hSnapshots is GET .../snapshot (qemu-server src/PVE/API2/Qemu.pm snapshot_list): one entry
// per snapshot section (name, snaptime, vmstate, description, parent when set), then
// current (digest, running, "You are here!", the config's parent when set). Perl's hash
// order is not kept: the sections come sorted by name.
func (s *Sim) hSnapshots(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	var out []map[string]any
	for _, name := range slices.Sorted(maps.Keys(v.snapshots)) {
		sec := v.snapshots[name]
		snaptime, _ := strconv.ParseInt(sec["snaptime"], 10, 64)
		e := map[string]any{"name": name, "snaptime": snaptime, "vmstate": 0, "description": sec["description"]}
		if sec["vmstate"] != "" {
			e["vmstate"] = 1
		}
		if sec["parent"] != "" {
			e["parent"] = sec["parent"]
		}
		out = append(out, e)
	}
	running := 0
	if v.status == "running" {
		running = 1
	}
	cur := map[string]any{"name": "current", "digest": digest(v.digestConf()), "running": running, "description": "You are here!"}
	if p := v.conf["parent"]; p != "" {
		cur["parent"] = p
	}
	return okData(append(out, cur))
}

// pendingDeleteFlag is a pending delete's delete field: 2 when forced, else 1.
func pendingDeleteFlag(force bool) int {
	if force {
		return 2
	}
	return 1
}

func (s *Sim) hConfigPut(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if r := s.writeConfig(c, v); r != nil {
		return r
	}
	return okData(nil)
}

// writeConfig is the part of a config write PUT and POST share: the lock refusal (fact: clone-lock), the
// wait behind a task holding the config file lock, and the write itself.
func (s *Sim) writeConfig(c *call, v *vm) *response {
	// A locked VM (clone, backup, suspended...) is refused at once (fact: clone-lock).
	if v.lock != "" && c.params["skiplock"] != "1" {
		return apiError(500, lockedMsg(v.lock))
	}
	// A task holding the config file lock (start, stop, destroy...) makes the write wait.
	if v.flock != nil {
		return retryAfter(holderWait(v, c.now))
	}
	resolveCDROMAlias(c.params)
	return s.applyConfig(c, v)
}

// resolveCDROMAlias is qemu-server src/PVE/API2/Qemu.pm $resolve_cdrom_alias, run by
// update_vm_api (PUT and POST .../config) and create_vm before anything else reads the
// parameters: cdrom is an alias of ide2 (QemuServer.pm $confdesc cdrom, "This is an alias
// for option -ide2"); its value becomes ide2's, with ",media=cdrom" appended when it names
// no media=, and cdrom is dropped. A config never holds a cdrom key.
func resolveCDROMAlias(params map[string]string) {
	if val := params["cdrom"]; val != "" {
		if !strings.Contains(val, "media=") {
			val += ",media=cdrom"
		}
		params["ide2"] = val
		delete(params, "cdrom")
	}
}

// configFileKey is the key a config file's line is read under: qemu-server
// src/PVE/QemuServer.pm parse_vm_config reads a cdrom line as ide2 ("$key = 'ide2' if $key
// eq 'cdrom'"), its value as written.
func configFileKey(k string) string {
	if k == "cdrom" {
		return "ide2"
	}
	return k
}

func (s *Sim) hConfigPost(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	if r := s.writeConfig(c, v); r != nil {
		return r
	}
	t := s.newTask(c, c.node, "qmconfig", strconv.Itoa(c.vmid), c.vmid, true, s.dur.Suspend/5)
	s.submitTask(t, c.now)
	return okData(t.upid)
}

var newDiskRe = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9\-_.]*[a-zA-Z0-9]):(\d+(?:\.\d+)?)$`)

// applyConfig validates the semantic rules of a config write and applies it: the digest,
// the delete list, each key set (its value rule, then pending or hotplug on a running VM),
// and the boot order.
func (s *Sim) applyConfig(c *call, v *vm) *response {
	if d := c.params["digest"]; d != "" && d != digest(v.digestConf()) {
		return apiError(500, "detected modified configuration - file changed by other user? Try again.")
	}
	conf := maps.Clone(v.conf)
	if r := applyConfigDeletes(c, v, conf); r != nil {
		return r
	}
	var added []string
	hotplugErrs := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(c.params)) {
		if configControlParams[k] {
			continue
		}
		if k == "lock" {
			v.lock = c.params[k]
			continue
		}
		val, r := s.configValue(v, conf, k, c.params[k])
		if r != nil {
			return r
		}
		// A key set leaves the pending delete line (update_vm_api:
		// remove_from_pending_delete after each key it writes).
		delete(v.pendingDelete, k)
		// Only a new CD-ROM drive joins an explicit boot order (update_vm_api, lines
		// 2438-2451: "append new CD drives to bootorder"; drive_is_cdrom($drive, 1)
		// excludes the cloud-init drive).
		if _, existed := conf[k]; !existed && driveKeyRe.MatchString(k) && isCDROM(val) && !strings.Contains(val, "cloudinit") {
			added = append(added, k)
		}
		if v.status == "running" {
			var kept bool
			if val, kept = applyRunning(v, conf, k, val, hotplugErrs); kept {
				continue
			}
		}
		conf[k] = val
	}
	if r := applyBootOrder(c, conf, added); r != nil {
		return r
	}
	v.conf = conf
	if len(hotplugErrs) > 0 {
		return paramError(hotplugErrs)
	}
	return nil
}

// configControlParams are the parameters of a config write that are not config keys.
var configControlParams = map[string]bool{"delete": true, "digest": true, "skiplock": true, "background_delay": true,
	"revert": true, "force": true}

// applyConfigDeletes removes the keys of the delete parameter from conf: an unknown key or
// one also set is a parameter error; deleting lock unlocks v.
func applyConfigDeletes(c *call, v *vm, conf map[string]string) *response {
	del := c.params["delete"]
	if del == "" {
		return nil
	}
	for _, k := range strings.FieldsFunc(del, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		// update_vm_api: "$opt = 'ide2' if $opt eq 'cdrom'" for each key of delete.
		k = configFileKey(k)
		// meta is a config option (option_exists, Qemu.pm:2143) though not a writable one.
		if _, ok := configSchema.lookup(k); !ok && k != "meta" {
			return paramError(map[string]string{"delete": fmt.Sprintf("invalid format - invalid configuration ID '%s'\n", k)})
		}
		if _, set := c.params[k]; set {
			return paramError(map[string]string{k: "can't set and delete the same option"})
		}
		if k == "lock" {
			v.lock = ""
		}
		if _, cur := conf[k]; cur && v.status == "running" && v.pendingDriveDelete(k) {
			// update_vm_api drops k's pending value, adds k to the pending section's
			// delete line (add_to_pending_delete, force with force=1) and takes k out of
			// the boot order there too ($conf->{pending}->{boot}, which a running VM
			// keeps pending as well); vmconfig_hotplug_pending then skips it, so the
			// drive stays in the current config until the next start.
			delete(v.pending, k)
			if v.pendingDelete == nil {
				v.pendingDelete = map[string]bool{}
			}
			v.pendingDelete[k] = c.params["force"] == "1"
			boot := conf["boot"]
			if pb, ok := v.pending["boot"]; ok {
				boot = pb
			}
			if order, ok := strings.CutPrefix(boot, "order="); ok {
				if v.pending == nil {
					v.pending = map[string]string{}
				}
				devs := slices.DeleteFunc(strings.Split(order, ";"), func(d string) bool { return d == k || d == "" })
				v.pending["boot"] = "order=" + strings.Join(devs, ";")
			}
			continue
		}
		delete(conf, k)
		// A removed device leaves the boot order too.
		if order, ok := strings.CutPrefix(conf["boot"], "order="); ok && (driveKeyRe.MatchString(k) || netKeyRe.MatchString(k)) {
			devs := slices.DeleteFunc(strings.Split(order, ";"), func(d string) bool { return d == k || d == "" })
			conf["boot"] = "order=" + strings.Join(devs, ";")
		}
	}
	return nil
}

// configValueRule is how a config write stores the value of the keys it matches.
type configValueRule struct {
	match func(k string) bool
	value func(s *Sim, v *vm, conf map[string]string, k, val string) (string, *response)
}

// configValueRules are the per-key rules of a config write; a key no rule matches is
// stored as sent.
var configValueRules = []configValueRule{
	{match: func(k string) bool { return k == "tags" }, value: func(_ *Sim, _ *vm, _ map[string]string, _, val string) (string, *response) {
		return normalizeTags(val), nil
	}},
	// parse_vm_config strips trailing whitespace (qemu-server src/PVE/QemuServer.pm, line
	// 1971: $descr =~ s/\s+$//).
	{match: func(k string) bool { return k == "description" }, value: func(_ *Sim, _ *vm, _ map[string]string, _,
		val string) (string, *response) {
		return trimTrailingSpace(val), nil
	}},
	{match: driveKeyRe.MatchString, value: func(s *Sim, v *vm, conf map[string]string, _, val string) (string, *response) {
		return s.driveValue(v, conf, val)
	}},
	{match: netKeyRe.MatchString, value: func(s *Sim, _ *vm, conf map[string]string, k, val string) (string, *response) {
		return s.netValue(conf, k, val), nil
	}},
}

// configValue is the value a config write stores for k (configValueRules).
func (s *Sim) configValue(v *vm, conf map[string]string, k, val string) (string, *response) {
	for _, r := range configValueRules {
		if r.match(k) {
			return r.value(s, v, conf, k, val)
		}
	}
	return val, nil
}

// driveValue is a drive's value: a new disk (<storage>:<GiB>) is allocated on a storage
// for images; an existing volume must exist; a CD-ROM ISO gets its size.
func (s *Sim) driveValue(v *vm, conf map[string]string, val string) (string, *response) {
	vol := driveVolume(val)
	if m := newDiskRe.FindStringSubmatch(vol); m != nil && !isCDROM(val) {
		st := s.storages[m[1]]
		if st == nil {
			return "", apiError(500, fmt.Sprintf("storage '%s' does not exist", m[1]))
		}
		if !st.has("images") {
			return "", apiError(500, fmt.Sprintf("storage '%s' does not support vm images", m[1]))
		}
		gib, _ := strconv.ParseFloat(m[2], 64)
		vol = fmt.Sprintf("%s:vm-%d-disk-%d", m[1], v.vmid, s.nextDiskIndex(conf, v.vmid))
		_, rest, _ := strings.Cut(val, ",")
		if rest != "" {
			return vol + "," + rest + ",size=" + formatSize(int64(gib*(1<<30))), nil
		}
		return vol + ",size=" + formatSize(int64(gib*(1<<30))), nil
	}
	if sid, _, ok := strings.Cut(vol, ":"); ok {
		if s.storages[sid] == nil {
			return "", apiError(500, fmt.Sprintf("storage '%s' does not exist", sid))
		}
		// An existing volume must exist (qemu-server src/PVE/API2/Qemu.pm
		// create_disks, lines 711-713: "volume $volid does not exist"); an ISO on a
		// CD-ROM drive gets its size recorded (vm_config_after_seed).
		iso := s.volume(v.node, vol)
		if st := s.storages[sid]; st.hasPath && iso == nil {
			return "", apiError(500, fmt.Sprintf("volume %s does not exist", vol))
		}
		if iso != nil && isCDROM(val) {
			val = setOpt(val, "size", formatSize(int64(len(iso.data))))
		}
		return val, nil
	}
	if vol != "none" && vol != "cdrom" && !strings.HasPrefix(vol, "/") {
		return "", apiError(500, fmt.Sprintf("unable to parse volume ID '%s'", vol))
	}
	return val, nil
}

// netValue is a NIC's value: <model>=<MAC> first, the MAC upper-cased, kept from the
// current NIC or generated when none is sent.
func (s *Sim) netValue(conf map[string]string, k, val string) string {
	first, rest, _ := strings.Cut(val, ",")
	model, mac, hasMAC := strings.Cut(first, "=")
	if model == "model" {
		model, mac, hasMAC = mac, optValue(val, "macaddr"), optValue(val, "macaddr") != ""
	}
	if !hasMAC || mac == "" {
		if old := macOf(conf[k]); old != "" {
			mac = old
		} else {
			mac = s.newMAC()
		}
	}
	val = model + "=" + strings.ToUpper(mac)
	if rest != "" {
		val += "," + rest
	}
	return val
}

// applyRunning is a key set on a running VM: a key that cannot change live stays pending
// (kept), memory is hotplugged (a failure keeps it pending and records the hotplug error);
// otherwise the value to store.
func applyRunning(v *vm, conf map[string]string, k, val string, hotplugErrs map[string]string) (string, bool) {
	if v.staysPending(k, val) {
		if v.pending == nil {
			v.pending = map[string]string{}
		}
		v.pending[k] = val
		// update_vm_api reloads the config after the write and runs
		// PVE::QemuConfig->cleanup_pending ("remove pending changes when nothing
		// changed", src/PVE/API2/Qemu.pm), which drops a pending value equal to the
		// current one (fact: status-current-values).
		if conf[k] == val {
			delete(v.pending, k)
		}
		return val, true
	}
	if k != "memory" {
		return val, false
	}
	// Memory hotplug (hotplug has memory): a failure leaves the value pending and
	// the write answers 400 "hotplug problem - ..." after writing it.
	applied, msg := hotplugMemory(conf, val)
	if msg != "" {
		if v.pending == nil {
			v.pending = map[string]string{}
		}
		v.pending[k] = val
		hotplugErrs[k] = "hotplug problem - " + msg
		return val, true
	}
	delete(v.pending, k)
	return strconv.FormatInt(applied, 10), false
}

// applyBootOrder: without a boot parameter, the new devices are appended (fact:
// ide2-boot-order) to an explicit boot order; with one, every device it names must exist.
func applyBootOrder(c *call, conf map[string]string, added []string) *response {
	if _, bootSet := c.params["boot"]; !bootSet {
		if order, ok := strings.CutPrefix(conf["boot"], "order="); ok {
			devs := strings.Split(order, ";")
			for _, k := range added {
				if !slices.Contains(devs, k) {
					devs = append(devs, k)
				}
			}
			devs = slices.DeleteFunc(devs, func(d string) bool { return d == "" })
			conf["boot"] = "order=" + strings.Join(devs, ";")
		}
		return nil
	}
	if order := optValue(conf["boot"], "order"); order != "" {
		for _, d := range strings.Split(order, ";") {
			if _, ok := conf[d]; !ok {
				return paramError(map[string]string{"boot": fmt.Sprintf("invalid bootorder: device '%s' does not exist'", d)})
			}
		}
	}
	return nil
}

// trimTrailingSpace is Perl's s/\s+$//.
func trimTrailingSpace(v string) string {
	return strings.TrimRight(v, " \t\n\r\f\v")
}

func withLockKey(conf map[string]string, lock string) map[string]string {
	out := maps.Clone(conf)
	if lock != "" {
		out["lock"] = lock
	}
	return out
}

func (s *Sim) nextDiskIndex(conf map[string]string, vmid int) int {
	used := map[int]bool{}
	prefix := fmt.Sprintf("vm-%d-disk-", vmid)
	for _, val := range conf {
		vol := driveVolume(val)
		if _, name, ok := strings.Cut(vol, ":"); ok {
			if n, ok := strings.CutPrefix(name, prefix); ok {
				if i, err := strconv.Atoi(n); err == nil {
					used[i] = true
				}
			}
		}
	}
	for i := 0; ; i++ {
		if !used[i] {
			return i
		}
	}
}

// normalizeTags folds case, drops duplicates and sorts, joined by ';' (fact: tag-rules): pve-guest-common
// src/PVE/GuestHelpers.pm get_unique_tags with the default tag-style (ordering not
// "config", case-sensitive off, lines 349-378).
func normalizeTags(v string) string {
	var out []string
	for _, t := range splitTags(v) {
		t = strings.ToLower(t)
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ";")
}

func (s *Sim) hClone(c *call) *response {
	src, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	newid, _ := strconv.Atoi(c.params["newid"])
	// The synchronous check only looks at the conffile on the node asked (qemu-server
	// src/PVE/API2/Qemu.pm clone_vm: -f config_file($newid)); a VMID another node holds
	// fails inside the task, when pmxcfs refuses the temporary config (memdb.c
	// vmlist_different_vm_exists; pve-common src/PVE/File.pm file_set_contents).
	if other, taken := s.vms[newid]; taken {
		return s.cloneOntoTaken(c, src, other, newid)
	}
	if r := s.cloneSyncChecks(c, src); r != nil {
		return r
	}
	targetNode, r := s.cloneTarget(c, src)
	if r != nil {
		return r
	}
	storageID := c.params["storage"]
	// clone_vm tests name and description for Perl truth (Qemu.pm:4603-4611): an empty
	// (or "0") name gives "Copy-of-VM-<name>", an empty description keeps the source's.
	name := perlOr(c.params["name"], "Copy-of-VM-"+src.name())
	desc := c.params["description"]
	hasDesc := perlTrue(desc)
	pool := c.params["pool"]
	srcConf := maps.Clone(src.conf)
	srcGuest := src.guest
	nv := &vm{vmid: newid, node: targetNode, typ: "qemu", status: "stopped", qmp: "stopped",
		conf: map[string]string{}, lock: "clone", midClone: true}
	s.vms[newid] = nv
	delete(s.seeds, newid)
	t := s.newTask(c, c.node, "qmclone", strconv.Itoa(c.vmid), newid, true, s.dur.Clone)
	t.log = append(t.log, fmt.Sprintf("create full clone of drive scsi0 (%s)", driveVolume(srcConf["scsi0"])))
	t.finish = func(at time.Time) string {
		if s.vms[newid] != nv {
			return notExistMsg(targetNode, newid)
		}
		if s.listing.StaleAfterClone {
			s.restartStatus(at)
		}
		conf := s.cloneConfig(srcConf, newid, storageID)
		conf["name"] = name
		if hasDesc {
			conf["description"] = trimTrailingSpace(desc)
		}
		nv.conf = conf
		nv.recordVolumeSizes()
		nv.lock = ""
		nv.midClone = false
		if !s.snapshotting() {
			nv.freshUntil = at.Add(s.real(s.dur.FreshUnknown))
		}
		nv.guest = guest{agentInstalled: srcGuest.agentInstalled, instanceID: srcGuest.instanceID}
		// The last step of the clone: the new VM joins the pool (clone_vm,
		// PVE::AccessControl::add_vm_to_pool, a no-op when the pool is gone meanwhile).
		if p := pool; p != "" {
			s.addVMToPool(newid, p)
		}
		return ""
	}
	t.onFail = func(at time.Time) {
		if s.vms[newid] == nv {
			delete(s.vms, newid)
		}
	}
	s.submitTask(t, c.now)
	if s.listing.SnapshotAtCloneStart {
		s.restartStatus(c.now)
	}
	return okData(t.upid)
}

// cloneOntoTaken answers a clone onto a VMID another VM holds: refused at once when its
// config is on the node asked, else a task that fails when pmxcfs refuses the temporary config.
func (s *Sim) cloneOntoTaken(c *call, src, other *vm, newid int) *response {
	if other.node == c.node {
		return apiError(500, fmt.Sprintf("unable to create VM %d: config file already exists", newid))
	}
	if r := s.cloneSyncChecks(c, src); r != nil {
		return r
	}
	t := s.newTask(c, c.node, "qmclone", strconv.Itoa(c.vmid), 0, false, s.dur.Clone)
	t.begin = func(at time.Time) string {
		return fmt.Sprintf("close (rename) atomic file '/etc/pve/nodes/%s/qemu-server/%d.conf' failed: File exists", c.node, newid)
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

// cloneTarget is a clone's target node (the node asked unless target names another), with
// clone_vm's refusals of a target node or storage before the task.
func (s *Sim) cloneTarget(c *call, src *vm) (string, *response) {
	targetNode := c.node
	if t := c.params["target"]; t != "" && t != c.node {
		if s.nodes[t] == nil {
			return "", apiError(500, fmt.Sprintf("no such cluster node '%s'", t))
		}
		targetNode = t
	}
	if storageID := c.params["storage"]; storageID != "" {
		st := s.storages[storageID]
		if st == nil {
			return "", apiError(500, fmt.Sprintf("storage '%s' does not exist", storageID))
		}
		if !st.has("images") {
			// Refused up front, no VM left (fact: clone-storage-no-images).
			return "", paramError(map[string]string{"storage": fmt.Sprintf("storage '%s' does not support vm images", storageID)})
		}
	}
	if targetNode != c.node {
		if r := s.crossNodeCloneRefusal(src, targetNode); r != nil {
			return "", r
		}
	}
	return targetNode, nil
}

// perlOr is v when Perl takes it for true (perlTrue), else otherwise.
func perlOr(v, otherwise string) string {
	if perlTrue(v) {
		return v
	}
	return otherwise
}

// cloneSyncChecks are clone_vm's checks before the task that do not depend on the new VMID.
func (s *Sim) cloneSyncChecks(c *call, src *vm) *response {
	if src.cloning() || (src.lock != "" && !src.isTemplate()) {
		return apiError(500, lockedMsg(src.lock))
	}
	if sid := c.params["storage"]; sid != "" {
		if st := s.storages[sid]; st != nil && !st.has("images") {
			return paramError(map[string]string{"storage": fmt.Sprintf("storage '%s' does not support vm images", sid)})
		}
	}
	return nil
}

// cloneConfig copies a config the way a full clone does (qemu-server src/PVE/API2/Qemu.pm
// clone_vm, 4510-4601): snapshot keys and unusedN not copied (4513-4525), new MACs
// (4531-4535), CD-ROMs copied as they are (4539-4540), other drives on new volumes without
// format= (4662-4674; src/PVE/QemuServer.pm clone_disk, 8105-8110), a new smbios uuid
// (4592-4595), a new vmgenid only when the source's is set (4596-4599), template dropped
// (4601), every other key copied, meta and description included (fact:
// description-verbatim, fact: meta-copied). Pending values are not copied (4682-4687):
// src holds none (v.pending is apart).
func (s *Sim) cloneConfig(src map[string]string, newid int, storageID string) map[string]string {
	conf := map[string]string{}
	disk := 0
	for _, k := range slices.Sorted(maps.Keys(src)) {
		val := src[k]
		switch {
		case k == "template" || unusedKeyRe.MatchString(k) || cloneSkipped[k]:
			continue
		case driveKeyRe.MatchString(k):
			vol := driveVolume(val)
			sid, volname, ok := strings.Cut(vol, ":")
			if !ok || (isCDROM(val) && !strings.Contains(volname, "cloudinit")) {
				conf[k] = val
				continue
			}
			if storageID != "" {
				sid = storageID
			}
			var nvol string
			if strings.Contains(volname, "cloudinit") {
				nvol = fmt.Sprintf("%s:vm-%d-cloudinit", sid, newid)
			} else {
				nvol = fmt.Sprintf("%s:vm-%d-disk-%d", sid, newid, disk)
				disk++
			}
			_, rest, _ := strings.Cut(val, ",")
			conf[k] = nvol
			for opt := range strings.SplitSeq(rest, ",") {
				if opt != "" && !strings.HasPrefix(opt, "format=") {
					conf[k] += "," + opt
				}
			}
		case netKeyRe.MatchString(k):
			first, rest, _ := strings.Cut(val, ",")
			model, _, _ := strings.Cut(first, "=")
			conf[k] = model + "=" + s.newMAC()
			if rest != "" {
				conf[k] += "," + rest
			}
		case k == "smbios1":
			continue // a new uuid, below
		case k == "vmgenid" && perlTrue(val):
			conf[k] = s.newUUID()
		default:
			conf[k] = val
		}
	}
	// Every clone gets a new SMBIOS uuid, whether the source set smbios1 or not (qemu-server
	// src/PVE/API2/Qemu.pm:4593-4595, clone_vm: parse_smbios1 of the source's value or '',
	// uuid = generate_uuid()).
	conf["smbios1"] = "uuid=" + s.newUUID()
	if v := src["smbios1"]; v != "" {
		conf["smbios1"] = setOpt(v, "uuid", s.newUUID())
	}
	return conf
}

// cloneSkipped are the snapshot keys clone_vm does not copy (Qemu.pm:4513-4522).
var cloneSkipped = map[string]bool{"snapshots": true, "parent": true, "snaptime": true, "vmstate": true, "snapstate": true,
	"runningcpu": true, "runningmachine": true, "running-nets-host-mtu": true}

// perlTrue is Perl's truth of a string parameter: neither empty nor "0".
func perlTrue(v string) bool { return v != "" && v != "0" }

// missingVMTask answers a call whose checks all run inside its task (start, stop,
// resize): a UPID whose task ends with exit.
func (s *Sim) missingVMTask(c *call, typ, exit string) *response {
	t := s.newTask(c, c.node, typ, strconv.Itoa(c.vmid), 0, false, 0)
	t.begin = func(time.Time) string { return exit }
	s.submitTask(t, c.now)
	return okData(t.upid)
}

// hResize: the task type is "resize" (qemu-server src/PVE/API2/Qemu.pm resize_vm:
// fork_worker('resize', ...)); a missing VM fails in the task (load_config in the worker).
func (s *Sim) hResize(c *call) *response {
	v := s.vmOn(c.node, c.vmid)
	if v == nil {
		return s.missingVMTask(c, "resize", notExistMsg(c.node, c.vmid))
	}
	disk, size := c.params["disk"], c.params["size"]
	skiplock := c.params["skiplock"] == "1"
	var newSize, curSize int64
	t := s.newTask(c, c.node, "resize", strconv.Itoa(c.vmid), c.vmid, true, s.dur.Resize)
	t.begin = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		if v.lock != "" && !skiplock {
			return lockedMsg(v.lock)
		}
		val, ok := v.conf[disk]
		if !ok {
			return fmt.Sprintf("disk '%s' does not exist", disk)
		}
		if isCDROM(val) {
			return "you can't resize a cdrom"
		}
		// Datastore.AllocateSpace on the disk's storage, checked in the task (qemu-server
		// src/PVE/API2/Qemu.pm resize_vm, $updatefn under the worker).
		sid, _, _ := strings.Cut(driveVolume(val), ":")
		if err := c.check("/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return err.Error()
		}
		// The volume's real size, not the config's size= (qemu-server
		// src/PVE/API2/Qemu.pm resize_vm: PVE::Storage::volume_size_info).
		curSize = v.volumeSize(val)
		m := sizeRe.FindStringSubmatch(size)
		n, _ := parseSize(m[2] + m[3])
		if m[1] == "+" {
			newSize = curSize + n
		} else {
			newSize = n
		}
		if newSize < curSize {
			return "shrinking disks is not supported"
		}
		return ""
	}
	t.finish = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		if newSize != curSize {
			v.conf[disk] = setOpt(v.conf[disk], "size", formatSize(newSize))
			v.setVolumeSize(v.conf[disk], newSize)
		}
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

func (s *Sim) hStatusCurrent(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	name := v.name()
	if name == "" {
		name = fmt.Sprintf("VM %d", v.vmid)
	}
	out := map[string]any{
		"vmid": v.vmid, "name": name, "status": v.status, "qmpstatus": v.qmp,
		"cpus": cpuCount(v.conf), "maxmem": memoryMiB(v.conf) << 20, "maxdisk": bootDiskSize(v.conf),
		"uptime": 0, "cpu": 0, "mem": 0, "disk": 0, "netin": 0, "netout": 0, "diskread": 0, "diskwrite": 0,
		"ha": s.haServiceStatus(v.vmid),
	}
	if agentEnabled(v.conf) {
		out["agent"] = 1
	}
	if v.lock != "" {
		out["lock"] = v.lock
	}
	if t := v.conf["tags"]; t != "" {
		out["tags"] = t
	}
	if v.isTemplate() {
		out["template"] = 1
	}
	if _, ok := v.conf["serial0"]; ok {
		out["serial"] = 1
	}
	if v.status == "running" {
		out["clipboard"] = nil
		out["pid"] = 4000 + v.vmid%60000
		out["running-machine"] = "pc-q35-11.0+pve0"
		out["running-qemu"] = "11.0.3"
		if !v.bootAt.IsZero() {
			out["uptime"] = int64(s.simSince(v.bootAt, c.now).Seconds())
		}
		out["cpu"] = 0.0123
		out["mem"] = (memoryMiB(v.conf) << 20) / 4
	}
	return okData(out)
}

func firstDisk(conf map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if driveKeyRe.MatchString(k) && !isCDROM(conf[k]) {
			return k
		}
	}
	return ""
}

func (s *Sim) hDestroy(c *call) *response {
	v, r := s.vmOrErr(c)
	if r != nil {
		return r
	}
	skiplock := c.params["skiplock"] == "1"
	// Protection first, then running: qemu-server src/PVE/API2/Qemu.pm destroy_vm
	// $early_checks calls PVE::QemuConfig->check_protection($conf, "can't remove VM $vmid")
	// (pve-guest-common src/PVE/AbstractConfig.pm check_protection: "$err_msg - protection
	// mode enabled") before check_running.
	if v.conf["protection"] == "1" {
		return apiError(500, fmt.Sprintf("can't remove VM %d - protection mode enabled", v.vmid))
	}
	if r := s.haDestroyRefusal(c, v.vmid); r != nil {
		return r
	}
	if v.status == "running" {
		return apiError(500, fmt.Sprintf("VM %d is running - destroy failed", v.vmid))
	}
	// The lock is checked in the task (qemu-server src/PVE/QemuServer.pm destroy_vm:
	// check_lock unless skiplock or the lock is suspended; a hibernated VM is destroyable,
	// fact: hibernated-vm); before it only existence, protection and running (destroy_vm's
	// $early_checks in src/PVE/API2/Qemu.pm).
	t := s.newTask(c, c.node, "qmdestroy", strconv.Itoa(c.vmid), c.vmid, true, s.dur.Destroy)
	t.begin = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		if v.status == "running" {
			return fmt.Sprintf("VM %d is running - destroy failed", v.vmid)
		}
		if v.lock != "" && v.lock != "suspended" && !skiplock {
			return lockedMsg(v.lock)
		}
		return ""
	}
	t.finish = func(at time.Time) string {
		if s.vms[v.vmid] != v {
			return notExistMsg(v.node, v.vmid)
		}
		s.removeVM(v)
		// qemu-server src/PVE/API2/Qemu.pm destroy_vm: PVE::AccessControl::remove_vm_access
		// drops the VM's ACL entries and its pool membership.
		s.removeVMAccess(v.vmid)
		s.haDestroyPurge(v.vmid, c.params["purge"] == "1", at)
		return ""
	}
	s.submitTask(t, c.now)
	return okData(t.upid)
}

func (s *Sim) removeVM(v *vm) {
	delete(s.vms, v.vmid)
	if v.guest.ip != "" && s.leases[v.guest.ip] == v.vmid {
		delete(s.leases, v.guest.ip)
	}
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
