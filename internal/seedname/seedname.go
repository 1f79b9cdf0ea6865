// Package seedname names the provider's seed ISOs and reads those names back: the one
// parser the backend (internal/proxmox) and the test harness (internal/tfrun) share, so
// that what the harness counts as a seed left behind is what the provider makes
// (decision: seed-swap).
package seedname

import (
	"regexp"
	"strconv"
	"strings"
)

// Suffix ends every seed ISO file name.
const Suffix = "-seed.iso"

// A VM's first seed, the one its create uploads, is <name>-<uid>-seed.iso, generation 1;
// a cloud-init change applied in place uploads <name>-<uid>-<g>-seed.iso (g = 2, 3...).
// The proxy operator's seed, shared by the VMs of one name, is <name>-seed.iso.
var uidRE = regexp.MustCompile(`^(.+)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:-([2-9]|[1-9][0-9]{1,8}))?` +
	regexp.QuoteMeta(Suffix) + `$`)

// File is generation gen of the seed of VM name with uid (<name>-<uid>-seed.iso for 1).
func File(name, uid string, gen int) string {
	if gen <= 1 {
		return name + "-" + uid + Suffix
	}
	return name + "-" + uid + "-" + strconv.Itoa(gen) + Suffix
}

// ParseUID splits a seed file of a VM's own, <name>-<uid>-seed.iso (generation 1) or
// <name>-<uid>-<g>-seed.iso, into the VM's name, uid and the generation.
func ParseUID(file string) (name, uid string, gen int, ok bool) {
	m := uidRE.FindStringSubmatch(file)
	if m == nil {
		return "", "", 0, false
	}
	gen = 1
	if m[3] != "" {
		gen, _ = strconv.Atoi(m[3])
	}
	return m[1], m[2], gen, true
}

// Parse reads any seed file name: a VM's own (uid set, ParseUID) or the proxy operator's
// <name>-seed.iso (uid empty).
func Parse(file string) (name, uid string, ok bool) {
	if n, u, _, ok := ParseUID(file); ok {
		return n, u, true
	}
	name, ok = strings.CutSuffix(file, Suffix)
	if !ok || name == "" {
		return "", "", false
	}
	return name, "", true
}
