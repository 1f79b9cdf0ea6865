package pvesim

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Parameter checks with PVE::JSONSchema's wording. A failed check is a 400 with reason
// "Parameter verification failed." and one entry per parameter in "errors".

type ptype int

const (
	tString ptype = iota
	tInt
	tNum
	tBool
)

type pspec struct {
	typ      ptype
	optional bool
	min, max *int64
	maxLen   int
	enum     []string
	format   func(string) string // returns the error text after "invalid format - ", or ""
}

const (
	errMissing   = "property is missing and it is not optional"
	errUndefined = "property is not defined in schema and the schema does not allow additional properties"
	paramFailed  = "Parameter verification failed."
)

func i64(v int64) *int64 { return &v }

// check validates one value against its spec and returns the error text, or "".
func (p pspec) check(v string) string {
	switch p.typ {
	case tInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || !intRe.MatchString(v) {
			return fmt.Sprintf("type check ('integer') failed - got '%s'", v)
		}
		if p.min != nil && n < *p.min {
			return fmt.Sprintf("value must have a minimum value of %d", *p.min)
		}
		if p.max != nil && n > *p.max {
			return fmt.Sprintf("value must have a maximum value of %d", *p.max)
		}
	case tNum:
		if _, err := strconv.ParseFloat(v, 64); err != nil || !numRe.MatchString(v) {
			return fmt.Sprintf("type check ('number') failed - got '%s'", v)
		}
	case tBool:
		if v != "0" && v != "1" {
			return fmt.Sprintf("type check ('boolean') failed - got '%s'", v)
		}
	case tString:
		if p.maxLen > 0 && len(v) > p.maxLen {
			return fmt.Sprintf("value may only be %d characters long", p.maxLen)
		}
	}
	if len(p.enum) > 0 && !slices.Contains(p.enum, v) {
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", v, strings.Join(p.enum, ", "))
	}
	if p.format != nil {
		if e := p.format(v); e != "" {
			// A format check dies with its text and a newline, which add_error keeps
			// (pve-common src/PVE/JSONSchema.pm check_format, line 1631).
			if e == errPattern {
				// A pattern is not a format: its error has neither prefix nor newline
				// (check_type, the pattern branch after the format one).
				return e
			}
			return "invalid format - " + e + "\n"
		}
	}
	return ""
}

var (
	intRe = regexp.MustCompile(`^[+-]?\d+$`)
	numRe = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)
)

// schema maps parameter names to specs. Names matching a pattern key (driveKeyRe...) are
// resolved by patterned.
type schema struct {
	fixed     map[string]pspec
	patterned []patternSpec
}

type patternSpec struct {
	re   *regexp.Regexp
	spec pspec
}

func (sc *schema) lookup(name string) (pspec, bool) {
	if sc == nil {
		return pspec{}, false
	}
	if p, ok := sc.fixed[name]; ok {
		return p, true
	}
	for _, ps := range sc.patterned {
		if ps.re.MatchString(name) {
			return ps.spec, true
		}
	}
	return pspec{}, false
}

// validate checks params (path variables excluded) and returns the errors map.
func (sc *schema) validate(params map[string]string) map[string]string {
	errs := map[string]string{}
	for name, v := range params {
		p, ok := sc.lookup(name)
		if !ok {
			errs[name] = errUndefined
			continue
		}
		if e := p.check(v); e != "" {
			errs[name] = e
		}
	}
	if sc != nil {
		for name, p := range sc.fixed {
			if _, ok := params[name]; !ok && !p.optional {
				errs[name] = errMissing
			}
		}
	}
	return errs
}

// Formats.

var (
	nodeNameRe  = regexp.MustCompile(`^(?i:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)$`)
	storageIDRe = regexp.MustCompile(`^(?i:[a-z][a-z0-9\-_.]*[a-z0-9])$`)
	dnsNameRe   = regexp.MustCompile(`^(?i:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)(?:\.(?i:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?))*$`)
	tagRe       = regexp.MustCompile(`^(?i:[a-z0-9_][a-z0-9_\-+.]*)$`)
	sizeRe      = regexp.MustCompile(`^(\+?)(\d+(?:\.\d+)?)([KMGT])?$`)
	macRe       = regexp.MustCompile(`^(?i:[0-9a-f]{2}(?::[0-9a-f]{2}){5})$`)
	driveKeyRe  = regexp.MustCompile(`^(?:ide[0-3]|sata[0-5]|scsi(?:[0-9]|[12][0-9]|30)|virtio(?:[0-9]|1[0-5])|efidisk0|tpmstate0)$`)
	netKeyRe    = regexp.MustCompile(`^net(?:[0-9]|[12][0-9]|3[01])$`)
	unusedKeyRe = regexp.MustCompile(`^unused\d+$`)
	otherKeyRe  = regexp.MustCompile(`^(?:ipconfig\d+|serial[0-3]|usb\d+|hostpci\d+|numa\d+|parallel[0-2]|virtiofs\d+)$`)
)

func fmtNode(v string) string {
	if !nodeNameRe.MatchString(v) {
		return "value does not look like a valid node name"
	}
	return ""
}

func fmtStorageID(v string) string {
	if !storageIDRe.MatchString(v) {
		return fmt.Sprintf("storage ID '%s' contains illegal characters", v)
	}
	return ""
}

func fmtDNSName(v string) string {
	if !dnsNameRe.MatchString(v) {
		return "value does not look like a valid DNS name"
	}
	return ""
}

func fmtTagList(v string) string {
	for _, t := range splitTags(v) {
		if !tagRe.MatchString(t) {
			return "invalid characters in tag"
		}
	}
	return ""
}

// splitTags is pve-common src/PVE/ParseUtils.pm split_list: ',', ';' and whitespace
// separate.
func splitTags(v string) []string {
	var out []string
	for _, t := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' || unicode.IsSpace(r) }) {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

const errPattern = "value does not match the regex pattern"

func fmtSize(v string) string {
	if !sizeRe.MatchString(v) {
		return errPattern
	}
	return ""
}

// fmtDrive accepts "<volume>[,key=value...]" with a non-empty volume.
func fmtDrive(v string) string {
	parts := strings.Split(v, ",")
	first := parts[0]
	if strings.Contains(first, "=") {
		k, val, _ := strings.Cut(first, "=")
		if k != "file" || val == "" {
			return "format error\nfile: property is missing and it is not optional"
		}
	} else if first == "" {
		return "format error\nfile: property is missing and it is not optional"
	}
	for _, p := range parts[1:] {
		k, _, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return fmt.Sprintf("format error\n%s: property is not defined in schema and the schema does not allow additional properties", p)
		}
		if k == "size" {
			if e := fmtSize(optValue(v, "size")); e != "" {
				return "format error\nsize: " + e
			}
		}
	}
	return ""
}

var netModels = []string{"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551", "i82557b",
	"i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3"}

func fmtNet(v string) string {
	parts := strings.Split(v, ",")
	hasModel := false
	for _, p := range parts {
		k, val, ok := strings.Cut(p, "=")
		switch {
		case slices.Contains(netModels, k):
			hasModel = true
			if ok && val != "" && !macRe.MatchString(val) {
				return "format error\nmacaddr: value does not look like a valid MAC address"
			}
		case k == "model":
			hasModel = true
		case !ok:
			return "format error\nmodel: property is missing and it is not optional"
		case k == "tag":
			n, err := strconv.Atoi(val)
			if err != nil {
				return fmt.Sprintf("format error\ntag: type check ('integer') failed - got '%s'", val)
			}
			if n < 1 || n > 4094 {
				if n < 1 {
					return "format error\ntag: value must have a minimum value of 1"
				}
				return "format error\ntag: value must have a maximum value of 4094"
			}
		case k == "bridge", k == "firewall", k == "macaddr", k == "mtu", k == "queues", k == "rate", k == "link_down", k == "trunks":
		default:
			return fmt.Sprintf("format error\n%s: property is not defined in schema and the schema does not allow additional properties", k)
		}
	}
	if !hasModel {
		return "format error\nmodel: property is missing and it is not optional"
	}
	return ""
}

func fmtAgent(v string) string {
	for i, p := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(p, "=")
		if !ok {
			if i != 0 {
				return "format error\nenabled: duplicate key in comma-separated list property"
			}
			val, k = k, "enabled"
		}
		switch k {
		case "enabled", "fstrim_cloned_disks", "freeze-fs-on-backup":
			if val != "0" && val != "1" {
				return fmt.Sprintf("format error\n%s: type check ('boolean') failed - got '%s'", k, val)
			}
		case "type":
			if val != "virtio" && val != "isa" {
				return fmt.Sprintf("format error\ntype: value '%s' does not have a value in the enumeration 'virtio, isa'", val)
			}
		default:
			return fmt.Sprintf("format error\n%s: property is not defined in schema and the schema does not allow additional properties", k)
		}
	}
	return ""
}

var memoryRe = regexp.MustCompile(`^(?:current=)?(\d+)$`)

func fmtMemory(v string) string {
	m := memoryRe.FindStringSubmatch(v)
	if m == nil {
		return "format error\ncurrent: type check ('integer') failed - got '" + strings.TrimPrefix(v, "current=") + "'"
	}
	if n, _ := strconv.Atoi(m[1]); n < 16 {
		return "format error\ncurrent: value must have a minimum value of 16"
	}
	return ""
}

var bootOrderRe = regexp.MustCompile(`^(?:(?:legacy=)?[acdn]{1,4}|order=[a-z0-9;]*)(?:,order=[a-z0-9;]*)?$`)

func fmtBoot(v string) string {
	if !bootOrderRe.MatchString(v) {
		return "format error\norder: value does not match the regex pattern"
	}
	return ""
}

// Schemas of the endpoints.

var (
	pNode    = pspec{format: fmtNode}
	pVMID    = pspec{typ: tInt, min: i64(100), max: i64(999999999)}
	pStorage = pspec{format: fmtStorageID}
	pBool    = pspec{typ: tBool, optional: true}
	pStr     = pspec{optional: true}
)

func optional(p pspec) pspec { p.optional = true; return p }

// configSchema is the config write's parameters: json_config_properties without the
// snapshot info (qemu-server src/PVE/API2/Qemu.pm:2653-2660 and 2726-2732), which leaves out
// meta (src/PVE/QemuServer.pm:1730-1740), so meta cannot be written through the API.
var configSchema = &schema{
	fixed: map[string]pspec{
		"acpi": pBool, "agent": {optional: true, format: fmtAgent}, "autostart": pBool,
		"balloon": {typ: tInt, optional: true, min: i64(0)}, "bios": {optional: true, enum: []string{"seabios", "ovmf"}},
		"boot": {optional: true, format: fmtBoot}, "bootdisk": pStr, "cdrom": pStr,
		"cicustom": pStr, "cipassword": pStr, "citype": pStr, "ciupgrade": pBool, "ciuser": pStr,
		"cores": {typ: tInt, optional: true, min: i64(1), max: i64(16384)}, "cpu": {optional: true, format: fmtVMCPU},
		"cpulimit": {typ: tNum, optional: true}, "cpuunits": {typ: tInt, optional: true, min: i64(1), max: i64(262144)},
		"delete": pStr, "description": {optional: true, maxLen: 8192}, "digest": {optional: true, maxLen: 64},
		"force": pBool, "freeze": pBool, "hookscript": pStr, "hotplug": pStr, "hugepages": pStr,
		"keyboard": pStr, "kvm": pBool, "localtime": pBool, "lock": pStr, "machine": pStr,
		"memory": {optional: true, format: fmtMemory}, "name": {optional: true, format: fmtDNSName},
		"nameserver": pStr, "numa": pBool, "onboot": pBool,
		"ostype": {optional: true, enum: []string{"other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8",
			"win10", "win11", "l24", "l26", "solaris"}},
		"protection": pBool, "reboot": pBool, "revert": pStr, "rng0": pStr,
		"scsihw":       {optional: true, enum: []string{"lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi"}},
		"searchdomain": pStr, "shares": {typ: tInt, optional: true, min: i64(0), max: i64(50000)},
		"skiplock": pBool, "smbios1": pStr, "sockets": {typ: tInt, optional: true, min: i64(1), max: i64(4)},
		"sshkeys": pStr, "startup": pStr, "tablet": pBool, "tags": {optional: true, format: fmtTagList},
		"tdf": pBool, "template": pBool, "vcpus": {typ: tInt, optional: true, min: i64(1)}, "vga": pStr,
		"vmgenid": pStr, "vmstatestorage": pStr, "watchdog": pStr, "background_delay": {typ: tInt, optional: true, min: i64(1), max: i64(30)},
	},
	patterned: []patternSpec{
		{driveKeyRe, pspec{optional: true, format: fmtDrive}},
		{netKeyRe, pspec{optional: true, format: fmtNet}},
		{unusedKeyRe, pStr},
		{otherKeyRe, pStr},
	},
}

func optValue(v, key string) string {
	for _, p := range strings.Split(v, ",") {
		if k, val, ok := strings.Cut(p, "="); ok && k == key {
			return val
		}
	}
	return ""
}
