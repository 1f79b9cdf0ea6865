package proxmox

import (
	"regexp"
	"strconv"
	"strings"
)

const gib = int64(1) << 30

var diskKeyRE = regexp.MustCompile(`^(ide|sata|scsi|virtio)[0-9]+$`)

// isDiskKey reports whether a config key is a drive slot (scsiN, virtioN, sataN, ideN).
func isDiskKey(k string) bool { return diskKeyRE.MatchString(k) }

// driveVolume returns the volume a drive value names, "" when it names none. The drive
// format's default key is file and volume is an alias of it (qemu-server
// PVE/QemuServer/Drive.pm, the drive property formats), and a property string is read as
// pve-common PVE::JSONSchema parse_property_string reads it: an option without '=' is the
// default key's value, in any position. So "<vol>,media=cdrom", "file=<vol>,media=cdrom",
// "media=cdrom,file=<vol>" and "volume=<vol>,media=cdrom" all name <vol>: a config
// written by hand (or by another tool) keeps the explicit form.
func driveVolume(v string) string {
	vol, _ := parsePropString(v).defaultValue("file", "volume")
	return vol
}

// isCDROM reports whether a drive value is a CD-ROM.
func isCDROM(v string) bool { return getOption(v, "media") == "cdrom" }

// bootDisk finds the boot disk key (decision: boot-disk): the first entry of boot's order= that is a
// present drive and not a CD-ROM, else bootdisk, else the first present of scsi0,
// virtio0, sata0, ide0.
func bootDisk(cfg map[string]string) (string, bool) {
	usable := func(k string) bool {
		v, ok := cfg[k]
		return ok && isDiskKey(k) && !isCDROM(v)
	}
	if order := getOption(cfg["boot"], "order"); order != "" {
		for k := range strings.SplitSeq(order, ";") {
			if usable(strings.TrimSpace(k)) {
				return strings.TrimSpace(k), true
			}
		}
	}
	if k := cfg["bootdisk"]; usable(k) {
		return k, true
	}
	for _, k := range []string{"scsi0", "virtio0", "sata0", "ide0"} {
		if usable(k) {
			return k, true
		}
	}
	return "", false
}

// bootDiskSize returns the boot disk key and its size in bytes; ok is false when there is
// no boot disk or its size= is missing or unreadable.
func bootDiskSize(cfg map[string]string) (string, int64, bool) {
	k, ok := bootDisk(cfg)
	if !ok {
		return "", 0, false
	}
	n, ok := diskSizeBytes(cfg[k])
	return k, n, ok
}

// diskSizeBytes reads a drive value's size= option.
func diskSizeBytes(v string) (int64, bool) {
	s := getOption(v, "size")
	if s == "" {
		return 0, false
	}
	return parseSizeBytes(s)
}

// parseSizeBytes parses Proxmox sizes: a number with an optional K, M, G or T suffix
// (binary units); no suffix means bytes.
func parseSizeBytes(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'K', 'k':
		mult = 1 << 10
	case 'M', 'm':
		mult = 1 << 20
	case 'G', 'g':
		mult = 1 << 30
	case 'T', 't':
		mult = 1 << 40
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return int64(f * float64(mult)), true
}

// ceilGiB rounds bytes up to whole GiB.
func ceilGiB(n int64) int { return int((n + gib - 1) / gib) }

// cloudInitDrive returns the slot of a Proxmox cloud-init drive, if any (decision: template-checks).
func cloudInitDrive(cfg map[string]string) (string, bool) {
	var found []string
	for k, v := range cfg {
		if isDiskKey(k) && strings.Contains(v, "cloudinit") {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return "", false
	}
	slicesSort(found)
	return found[0], true
}
