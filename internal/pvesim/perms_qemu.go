package pvesim

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The permission checks of the qemu-server methods beyond their declared ones.

// configOptionPrivs is qemu-server src/PVE/API2/Qemu.pm $cpuoptions, $memoryoptions,
// $hwtypeoptions, $generaloptions, $vmpoweroptions and $diskoptions: the privilege a
// config option needs.
var configOptionPrivs = func() map[string]string {
	m := map[string]string{}
	for priv, opts := range map[string][]string{
		"VM.Config.CPU":    {"cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus"},
		"VM.Config.Memory": {"memory", "balloon", "shares", "allow-ksm"},
		"VM.Config.HWType": {"acpi", "hotplug", "kvm", "machine", "runningmachine", "scsihw", "smbios1", "tablet",
			"vga", "watchdog", "audio0", "rng0"},
		"VM.Config.Options": {"agent", "autostart", "bios", "description", "keyboard", "localtime", "migrate_downtime", "migrate_speed",
			"name", "onboot", "ostype", "protection", "reboot", "startdate", "startup", "tdf", "template"},
		"VM.PowerMgmt":   {"freeze"},
		"VM.Config.Disk": {"boot", "bootdisk", "vmstatestorage"},
	} {
		for _, o := range opts {
			m[o] = priv
		}
	}
	return m
}()

var (
	cloudinitOptions = map[string]bool{"cicustom": true, "cipassword": true, "citype": true, "ciuser": true, "ciupgrade": true,
		"nameserver": true, "searchdomain": true, "sshkeys": true}
	skippedConfigKeyRe = regexp.MustCompile(`^(?:unused|serial|usb|hostpci|virtiofs)\d+$`)
	numaKeyRe          = regexp.MustCompile(`^numa\d+$`)
	ipconfigKeyRe      = regexp.MustCompile(`^ipconfig\d+$`)
	// newDiskPermRe is qemu-server src/PVE/QemuServer/Drive.pm $NEW_DISK_RE: "<storage>:<size>".
	newDiskPermRe = regexp.MustCompile(`^(?:([^/:\s]+):)?(\d+(?:\.\d+)?)$`)
	// ownedVolumeRe names a VM disk volume's owner: vm-<vmid>-..., base-<vmid>-...
	ownedVolumeRe = regexp.MustCompile(`^(?:[^/]+/)?(?:vm|base)-(\d+)-`)
)

// checkModifyConfigPerm is qemu-server src/PVE/API2/Qemu.pm $check_vm_modify_config_perm
// (with no pool): the privilege each option needs on /vms/<vmid>; drives, serial, usb,
// hostpci, virtiofs and tags are checked elsewhere; an option of no list is root@pam's
// alone ("only root can set '<opt>' config", a 500).
func (c *call) checkModifyConfigPerm(keys []string) error {
	vmid := strconv.Itoa(c.vmid)
	for _, opt := range keys {
		switch {
		case driveKeyRe.MatchString(opt), opt == "cdrom", skippedConfigKeyRe.MatchString(opt), opt == "tags":
			continue
		case numaKeyRe.MatchString(opt):
			if err := c.checkVMPerm(vmid, "VM.Config.CPU"); err != nil {
				return err
			}
		case configOptionPrivs[opt] != "":
			if err := c.checkVMPerm(vmid, configOptionPrivs[opt]); err != nil {
				return err
			}
			if opt == "startup" {
				if err := c.check("/", "Sys.Modify"); err != nil {
					return err
				}
			}
		case netKeyRe.MatchString(opt), opt == "running-nets-host-mtu":
			if err := c.checkVMPerm(vmid, "VM.Config.Network"); err != nil {
				return err
			}
		case cloudinitOptions[opt], ipconfigKeyRe.MatchString(opt):
			if !c.canAny("/vms/"+vmid, "VM.Config.Cloudinit", "VM.Config.Network") {
				return &permError{"/vms/" + vmid + ", VM.Config.Cloudinit|VM.Config.Network"}
			}
		case opt == "vmstate":
			if err := c.checkVMPerm(vmid, "VM.Config.Disk", "VM.PowerMgmt"); err != nil {
				return err
			}
		default:
			return fmt.Errorf("only root can set '%s' config", opt)
		}
	}
	return nil
}

// configPerms are update_vm_api's checks before it writes (qemu-server src/PVE/API2/Qemu.pm
// update_vm_api): the options deleted and set ($check_vm_modify_config_perm), the volumes
// ($check_storage_access), the bridges (check_bridge_access), then, in the update itself,
// each drive's privilege ($check_drive_perms: VM.Config.CDROM for a CD-ROM, VM.Config.Disk
// otherwise), tags (assert_tag_permissions: VM.Config.Options) and the bridge of a NIC
// being deleted. The update runs synchronously for PUT and in a task for POST; the
// simulator checks both before answering.
func configPerms(c *call) error {
	deleted := splitList(c.params["delete"])
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(c.params)) {
		if !configControlParams[k] {
			keys = append(keys, k)
		}
	}
	if err := c.checkModifyConfigPerm(deleted); err != nil {
		return err
	}
	if err := c.checkModifyConfigPerm(keys); err != nil {
		return err
	}
	if err := c.checkSetValues(keys, driveKeyRe.MatchString, c.checkStorageAccess); err != nil {
		return err
	}
	if err := c.checkSetValues(keys, netKeyRe.MatchString, c.checkVnetAccess); err != nil {
		return err
	}
	if err := c.checkDeletedPerms(deleted); err != nil {
		return err
	}
	return c.checkSetPerms(keys)
}

// checkSetValues runs check on the value sent for each of keys that match matches, in order.
func (c *call) checkSetValues(keys []string, match func(string) bool, check func(string) error) error {
	for _, k := range keys {
		if match(k) {
			if err := check(c.params[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDeletedPerms is update_vm_api's check of the keys deleted, against the VM's values
// (pending included): VM.Config.Disk for an unused disk, the drive's privilege, VM.Config.Options
// for tags, the bridge of a NIC.
func (c *call) checkDeletedPerms(deleted []string) error {
	vmid := strconv.Itoa(c.vmid)
	cur := map[string]string{}
	if v := c.sim.vms[c.vmid]; v != nil {
		cur = v.withPending()
	}
	for _, k := range deleted {
		var err error
		switch {
		case unusedKeyRe.MatchString(k):
			err = c.checkVMPerm(vmid, "VM.Config.Disk")
		case driveKeyRe.MatchString(k) && cur[k] != "":
			err = c.checkDrivePerm(cur[k])
		case k == "tags":
			err = c.checkVMPerm(vmid, "VM.Config.Options")
		case netKeyRe.MatchString(k) && cur[k] != "":
			err = c.checkVnetAccess(cur[k])
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSetPerms is update_vm_api's check of the keys set, in the update itself: each
// drive's privilege, VM.Config.Options for tags.
func (c *call) checkSetPerms(keys []string) error {
	vmid := strconv.Itoa(c.vmid)
	for _, k := range keys {
		var err error
		switch {
		case driveKeyRe.MatchString(k):
			err = c.checkDrivePerm(c.params[k])
		case k == "tags":
			err = c.checkVMPerm(vmid, "VM.Config.Options")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkDrivePerm is update_vm_api's $check_drive_perms.
func (c *call) checkDrivePerm(drive string) error {
	vmid := strconv.Itoa(c.vmid)
	vol := driveVolume(drive)
	switch {
	case vol == "cloudinit" || strings.HasSuffix(vol, "-cloudinit") || strings.HasSuffix(vol, ":cloudinit"):
		return c.checkVMPerm(vmid, "VM.Config.Cloudinit", "VM.Config.CDROM")
	case isCDROM(drive):
		return c.checkVMPerm(vmid, "VM.Config.CDROM")
	}
	return c.checkVMPerm(vmid, "VM.Config.Disk")
}

// checkStorageAccess is qemu-server src/PVE/API2/Qemu.pm $check_storage_access for one
// drive value: nothing for none or a cloud-init drive, Sys.Console on / for the host's
// CD-ROM, Datastore.AllocateSpace on the storage of a new disk, check_volume_access for an
// existing volume.
func (c *call) checkStorageAccess(drive string) error {
	vol := driveVolume(drive)
	switch {
	case vol == "" || vol == "none" || vol == "cloudinit" || strings.HasSuffix(vol, ":cloudinit"):
		return nil
	case isCDROM(drive) && vol == "cdrom":
		return c.check("/", "Sys.Console")
	case !isCDROM(drive) && newDiskPermRe.MatchString(vol):
		sid := newDiskPermRe.FindStringSubmatch(vol)[1]
		if sid == "" {
			return fmt.Errorf("no storage ID specified (and no default storage)")
		}
		return c.check("/storage/"+sid, "Datastore.AllocateSpace")
	}
	return c.checkVolumeAccess(vol, c.vmid)
}

// checkVolumeAccess is pve-storage src/PVE/Storage.pm check_volume_access: Datastore.Allocate
// on the storage allows anything; else an ISO (or template) needs Datastore.AllocateSpace or
// Datastore.Audit, the VM's own disk nothing, another VM's disk Datastore.Audit plus
// VM.Config.Disk on its owner. vmid 0: no VM asks.
func (c *call) checkVolumeAccess(volid string, vmid int) error {
	sid, volname, ok := strings.Cut(volid, ":")
	if !ok {
		return errors.New("Only root can pass arbitrary filesystem paths.") //nolint:staticcheck,revive // Proxmox's text
	}
	if c.can("/storage/"+sid, "Datastore.Allocate") {
		return nil
	}
	if strings.HasPrefix(volname, "iso/") || strings.HasPrefix(volname, "vztmpl/") || strings.HasPrefix(volname, "import/") {
		return c.checkAny("/storage/"+sid, "Datastore.AllocateSpace", "Datastore.Audit")
	}
	if m := ownedVolumeRe.FindStringSubmatch(volname); m != nil {
		owner, _ := strconv.Atoi(m[1])
		if vmid != 0 && owner == vmid {
			return nil
		}
		if err := c.check("/storage/"+sid, "Datastore.Audit"); err != nil {
			return err
		}
		return c.check("/vms/"+m[1], "VM.Config.Disk")
	}
	return fmt.Errorf("missing privileges to access %s", volid)
}

// checkVnetAccess is pve-guest-common src/PVE/GuestHelpers.pm check_vnet_access for a NIC
// value (zone localnetwork, there being no SDN vnets): SDN.Use on
// /sdn/zones/localnetwork/<bridge>/<tag> with a tag (a propagated grant on the bridge covers
// it), on each VLAN of trunks, on the bridge itself without either.
func (c *call) checkVnetAccess(net string) error {
	bridge := optValue(net, "bridge")
	if bridge == "" {
		return nil
	}
	path := "/sdn/zones/localnetwork/" + bridge
	tag, trunks := optValue(net, "tag"), optValue(net, "trunks")
	if tag != "" {
		if err := c.check(path+"/"+tag, "SDN.Use"); err != nil {
			return err
		}
	}
	if trunks != "" {
		for _, t := range trunkTags(trunks) {
			if err := c.check(path+"/"+strconv.Itoa(t), "SDN.Use"); err != nil {
				return err
			}
		}
	}
	if tag == "" && trunks == "" {
		return c.check(path, "SDN.Use")
	}
	return nil
}

// trunkTags is GuestHelpers.pm get_tags_from_trunk: "10;20-22" is 10, 20, 21, 22, sorted.
func trunkTags(trunks string) []int {
	seen := map[int]bool{}
	for _, part := range strings.Split(trunks, ";") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for t := a; t <= b && t-a < 4096; t++ {
			seen[t] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// checkBridgeAccess is qemu-server src/PVE/QemuServer.pm check_bridge_access: every NIC of a
// config, in key order.
func (c *call) checkBridgeAccess(conf map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if netKeyRe.MatchString(k) {
			if err := c.checkVnetAccess(conf[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// clonePerms is clone_vm's declared check (qemu-server src/PVE/API2/Qemu.pm): VM.Clone on
// the source, and VM.Allocate on /vms/{newid} or, when pool is given, on /pool/{pool}. When
// neither branch of that 'or' passes, the refusal names nothing (RPCEnvironment.pm
// exec_api2_perm_check: raise_perm_exc()).
func clonePerms(c *call) error {
	if err := c.check(c.tmpl("/vms/{vmid}"), "VM.Clone"); err != nil {
		return err
	}
	if c.can(c.tmpl("/vms/{newid}"), "VM.Allocate") {
		return nil
	}
	if c.params["pool"] != "" && c.can(c.tmpl("/pool/{pool}"), "VM.Allocate") {
		return nil
	}
	return &permError{}
}

// cloneCodePerms are clone_vm's early checks ($load_and_check) that concern permissions, in
// their order: the pool exists (check_pool_exist: "Permission check failed (pool '<pool>'
// does not exist)"), Datastore.AllocateSpace on the storage of every disk of the source,
// or on the storage parameter when given ($check_storage_access_clone; a CD-ROM ISO is
// allowed, the host's CD-ROM needs Sys.Console on /), then SDN.Use on the source's bridges
// (check_bridge_access on the old config).
func cloneCodePerms(c *call) error {
	if p := c.params["pool"]; p != "" && c.sim.access.pools[p] == nil {
		return &permError{fmt.Sprintf("pool '%s' does not exist", p)}
	}
	src := c.sim.vms[c.vmid]
	if src == nil || src.node != c.node || src.typ != "qemu" {
		return nil // the handler answers the missing config
	}
	for _, k := range slices.Sorted(maps.Keys(src.conf)) {
		if !driveKeyRe.MatchString(k) {
			continue
		}
		val := src.conf[k]
		vol := driveVolume(val)
		if vol == "" || vol == "none" {
			continue
		}
		if isCDROM(val) {
			if vol == "cdrom" {
				if err := c.check("/", "Sys.Console"); err != nil {
					return err
				}
			}
			continue
		}
		sid, _, _ := strings.Cut(vol, ":")
		if st := c.params["storage"]; st != "" {
			sid = st
		}
		if err := c.check("/storage/"+sid, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	if st := src.conf["vmstatestorage"]; st != "" {
		if err := c.check("/storage/"+st, "Datastore.AllocateSpace"); err != nil {
			return err
		}
	}
	return c.checkBridgeAccess(src.conf)
}
