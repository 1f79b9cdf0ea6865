package proxmox

import (
	"slices"
	"strings"
)

// propString is a Proxmox property string, "key=value,..." (a drive, a NIC, cpu, boot,
// smbios1, meta), read as pve-common's parse_property_string reads one: parts split on ',',
// a key=value part at its first '=', a part without '=' the value of the format's default key.
// Parts keep their order and their text, what Proxmox would refuse included, so that writing
// one option back leaves the others byte for byte. A value written into one passes optionValue
// first (no ',', ';', '=' or line break).
type propString struct {
	parts []propPart
}

// propPart is one part: keyed is false for a value without a key (the default key's).
type propPart struct {
	key, value string
	keyed      bool
}

// blank reports a part of nothing but white space, which Proxmox skips.
func (p propPart) blank() bool { return !p.keyed && strings.TrimSpace(p.value) == "" }

// isDefault reports a part that gives the default key (named names) its value.
func (p propPart) isDefault(names []string) bool {
	return (!p.keyed && !p.blank()) || (p.keyed && slices.Contains(names, p.key))
}

func (p propPart) String() string {
	if !p.keyed {
		return p.value
	}
	return p.key + "=" + p.value
}

// parsePropString reads s; it never fails (see propString).
func parsePropString(s string) propString {
	var p propString
	if s == "" {
		return p
	}
	for part := range strings.SplitSeq(s, ",") {
		k, v, keyed := strings.Cut(part, "=")
		if !keyed {
			p.parts = append(p.parts, propPart{value: part})
			continue
		}
		p.parts = append(p.parts, propPart{key: k, value: v, keyed: true})
	}
	return p
}

// String formats the parts in order, joined by ','.
func (p propString) String() string {
	out := make([]string, len(p.parts))
	for i, part := range p.parts {
		out[i] = part.String()
	}
	return strings.Join(out, ",")
}

// get returns the value of the first part keyed key.
func (p propString) get(key string) (string, bool) {
	for _, part := range p.parts {
		if part.keyed && part.key == key {
			return part.value, true
		}
	}
	return "", false
}

// defaultValue returns the format's default-key value: the first part that is keyless or
// keyed by one of names (the default key's name and its aliases: file and volume for a
// drive, cputype for cpu).
func (p propString) defaultValue(names ...string) (string, bool) {
	for _, part := range p.parts {
		if part.isDefault(names) {
			return part.value, true
		}
	}
	return "", false
}

// set gives key the value val: the first part keyed key in its place, else a new part at
// the end.
func (p *propString) set(key, val string) {
	for i, part := range p.parts {
		if part.keyed && part.key == key {
			p.parts[i].value = val
			return
		}
	}
	p.parts = append(p.parts, propPart{key: key, value: val, keyed: true})
}

// setDefault makes val the default-key value, first (where print_property_string writes
// the default key), and drops every other part that names one (keyless, or keyed by one of
// names) and every blank part: Proxmox refuses a second ("duplicate key in comma-separated
// list property").
func (p *propString) setDefault(val string, names ...string) {
	out := []propPart{{value: val}}
	for _, part := range p.parts {
		if part.isDefault(names) || part.blank() {
			continue
		}
		out = append(out, part)
	}
	p.parts = out
}

// del drops every part keyed key.
func (p *propString) del(key string) {
	out := p.parts[:0]
	for _, part := range p.parts {
		if part.keyed && part.key == key {
			continue
		}
		out = append(out, part)
	}
	p.parts = out
}

// getOption returns key's value in property string v, or "".
func getOption(v, key string) string {
	val, _ := parsePropString(v).get(key)
	return val
}
