package pvesim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// What a config write to a running VM applies at once and what it leaves pending, after
// qemu-server src/PVE/QemuServer.pm vmconfig_hotplug_pending (run by update_vm_api in
// src/PVE/API2/Qemu.pm on the keys the write names) and src/PVE/QemuServer/Memory.pm.

// hotplugFeatures is qemu-server parse_hotplug_features: "0" is none, "1" or no value the
// default "network,disk,usb" (the hotplug option's default in $confdesc).
func hotplugFeatures(v string) map[string]bool {
	out := map[string]bool{}
	switch v {
	case "0":
		return out
	case "", "1":
		v = "network,disk,usb"
	}
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		out[f] = true
	}
	return out
}

// staysPending reports whether k=val written to a running VM stays in the pending section:
// cores, sockets, cpu and numa always (no branch of vmconfig_hotplug_pending takes them);
// vcpus unless the running config's hotplug has cpu; memory unless it has memory; hotplug
// itself when the new or the running value names cpu or memory.
func (v *vm) staysPending(k, val string) bool {
	feat := hotplugFeatures(v.conf["hotplug"])
	switch k {
	case "cores", "sockets", "cpu", "numa":
		return true
	case "vcpus":
		return !feat["cpu"]
	case "memory":
		return !feat["memory"]
	case "hotplug":
		cur := v.conf["hotplug"]
		return strings.Contains(val, "memory") || strings.Contains(cur, "memory") ||
			strings.Contains(val, "cpu") || strings.Contains(cur, "cpu")
	}
	return false
}

// pendingDriveDelete reports whether deleting drive k of the running VM stays pending until
// its next start: vmconfig_hotplug_pending's pending-delete loop skips a drive ("die
// "skip\n"") when hotplug lacks disk or the drive is efidisk, ide, sata or tpmstate
// (is_valid_drivename branch: $opt =~ m/(efidisk|ide|sata|tpmstate)(\d+)/), whatever its
// media, so an ide2 CD-ROM stays in the running VM's config; scsi and virtio drives are
// unplugged live (vm_deviceunplug) and go at once. Not modelled: the unplug of a boot disk,
// which fails ("can't unplug bootdisk") and leaves that delete pending with a hotplug
// problem.
func (v *vm) pendingDriveDelete(k string) bool {
	if !driveKeyRe.MatchString(k) {
		return false
	}
	return !hotplugFeatures(v.conf["hotplug"])["disk"] || noLiveUnplugRe.MatchString(k)
}

// noLiveUnplugRe is vmconfig_hotplug_pending's m/(efidisk|ide|sata|tpmstate)(\d+)/.
var noLiveUnplugRe = regexp.MustCompile(`(efidisk|ide|sata|tpmstate)(\d+)`)

// staticMemory and dimmStep are Memory.pm's $STATICMEM (1024 MiB, times the sockets with
// 1 GiB hugepages) and foreach_dimm's first DIMM size (512 MiB, 1024 with 1 GiB hugepages).
func staticMemory(conf map[string]string) (static, dimm int64) {
	static, dimm = 1024, 512
	if conf["hugepages"] == "1024" {
		sockets, err := strconv.ParseInt(conf["sockets"], 10, 64)
		if err != nil || sockets < 1 {
			sockets = 1
		}
		static, dimm = 1024*sockets, 1024
	}
	return static, dimm
}

// dimmBoundaries are the sizes foreach_dimm steps through: the static memory plus 32
// DIMMs of each size, the size doubling after each 32, 8 times.
func dimmBoundaries(conf map[string]string) []int64 {
	cur, dimm := staticMemory(conf)
	out := []int64{cur}
	for j := 0; j < 8; j++ {
		for i := 0; i < 32; i++ {
			cur += dimm
			out = append(out, cur)
		}
		dimm *= 2
	}
	return out
}

// hotplugMemory is qemu_memory_hotplug on a running VM whose hotplug has memory: below
// the static memory it dies (without a newline, so Perl appends where); a grow plugs
// DIMMs until the size reaches the value (so it rounds up to the next DIMM boundary), a
// shrink unplugs the highest DIMMs while the size is above it (rounding down). The config
// gets the size reached.
func hotplugMemory(conf map[string]string, val string) (applied int64, errMsg string) {
	m := memoryRe.FindStringSubmatch(val)
	if m == nil {
		return 0, "unable to parse memory " + val
	}
	want, _ := strconv.ParseInt(m[1], 10, 64)
	static, _ := staticMemory(conf)
	if want < static {
		return 0, fmt.Sprintf("memory can't be lower than %d MB at /usr/share/perl5/PVE/QemuServer/Memory.pm line 219.\n", static)
	}
	cur := memoryMiB(conf)
	b := dimmBoundaries(conf)
	if want >= cur {
		for _, s := range b {
			if s >= want {
				return s, ""
			}
		}
		return b[len(b)-1], ""
	}
	got := static
	for _, s := range b {
		if s <= want {
			got = s
		}
	}
	return got, ""
}

// memoryHotplugStartError is Memory.pm config, run by every start: with memory hotplug the
// VM needs numa, and its memory must sit on a DIMM boundary.
func memoryHotplugStartError(conf map[string]string) string {
	if !hotplugFeatures(conf["hotplug"])["memory"] {
		return ""
	}
	if conf["numa"] != "1" {
		return "NUMA needs to be enabled for memory hotplug"
	}
	mem := memoryMiB(conf)
	static, dimm := staticMemory(conf)
	if mem < static {
		return fmt.Sprintf("minimum memory must be %dMB", static)
	}
	cur := static
	for j := 0; j < 8 && cur < mem; j++ {
		for i := 0; i < 32 && cur < mem; i++ {
			cur += dimm
			if cur > mem {
				return fmt.Sprintf("memory size (%d) must be aligned to %d for hotplugging", mem, dimm)
			}
		}
		dimm *= 2
	}
	return ""
}
