package proxmox

import (
	"slices"
	"strings"
)

// A VM's user tags, human note and protection flag: the config keys tags, description
// (beside the mark) and protection.
//
// The description holds the mark lines (machine-owned: written by the clone, rewritten only
// by this provider's own mark steps) and, after a blank line, the note: every line that is
// not a mark line. A note never holds a mark line (the provider refuses one), so the two
// never mix.

// markKeyPrefix starts every mark key, the operator's and this provider's.
const markKeyPrefix = "proxy-operator-"

// isMarkLine reports whether a description line is a mark line (key=value, the key one of
// the proxy-operator-* family), as ParseMark and ParseMarkExtra read them.
func isMarkLine(line string) bool {
	_, _, ok := parseMarkLine(line)
	return ok
}

// NoteOf is the note of a description: its lines that are not mark lines, without the
// blank lines around them and trailing whitespace (which Proxmox strips anyway).
func NoteOf(desc string) string {
	var keep []string
	for line := range strings.SplitSeq(strings.ReplaceAll(desc, "\r\n", "\n"), "\n") {
		if !isMarkLine(line) {
			keep = append(keep, line)
		}
	}
	return strings.TrimRight(strings.Trim(strings.Join(keep, "\n"), "\n"), " \t\r\n")
}

// NoteHasMarkLine reports whether a note holds a line the mark parser would read, or
// would read without the blanks around its key and value: no reader of the mark, however
// loose, may take a note's line for one.
func NoteHasMarkLine(note string) bool {
	return slices.ContainsFunc(strings.Split(note, "\n"), func(line string) bool {
		k, v, ok := strings.Cut(line, "=")
		return ok && isMarkLine(strings.TrimSpace(k)+"="+strings.TrimSpace(v))
	})
}

// withNote appends a note to the mark lines of a description; an empty note adds nothing.
func withNote(mark, note string) string {
	if note = strings.TrimRight(note, " \t\r\n"); note == "" {
		return mark
	}
	return mark + "\n\n" + note
}

// noteOfSpec is the note a new VM gets (Spec.Note, "" when unset).
func noteOfSpec(s Spec) string {
	if s.Note == nil {
		return ""
	}
	return *s.Note
}

// replaceNote keeps a description's mark lines as they are, in their order, and puts
// note after them.
func replaceNote(desc, note string) string {
	var mark []string
	for line := range strings.SplitSeq(strings.ReplaceAll(desc, "\r\n", "\n"), "\n") {
		if isMarkLine(line) {
			mark = append(mark, line)
		}
	}
	return withNote(strings.Join(mark, "\n"), note)
}

// UserTags are a VM's tags without the provider's own (ManagedTag), as Proxmox stores them.
func UserTags(tags []string) []string {
	out := []string{}
	for _, t := range tags {
		if t != ManagedTag && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// tagsParam is the tags value for user tags plus ManagedTag: lowercase, deduplicated,
// sorted and ';'-joined, as Proxmox stores them with its default tag-style.
func tagsParam(user []string) string {
	out := []string{ManagedTag}
	for _, t := range user {
		if t = strings.ToLower(t); !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ";")
}

// tagsCreateParams adds a new VM's user tags to its config step (the note is in the
// mark's description, protection is set when the create finishes).
func tagsCreateParams(p map[string]string, s Spec) {
	if s.Tags != nil {
		p["tags"] = tagsParam(*s.Tags)
	}
}

// noteTagsUpdateParams adds the tags, note and protection changes to an update's config write.
func noteTagsUpdateParams(p map[string]string, ch Changes, cfg map[string]string) {
	if ch.Tags != nil {
		if v := tagsParam(*ch.Tags); v != tagsParam(UserTags(splitTags(strings.ToLower(cfg["tags"])))) {
			p["tags"] = v
		}
	}
	if ch.Note != nil && NoteOf(cfg["description"]) != strings.TrimRight(*ch.Note, " \t\r\n") {
		p["description"] = replaceNote(cfg["description"], *ch.Note)
	}
	if ch.Protection != nil && *ch.Protection != (cfg["protection"] == "1") {
		p["protection"] = boolParam(*ch.Protection)
	}
}

// finishParams adds what the create's last write sets besides the mark: the protection
// flag, set last so that a create that fails before leaves a VM its destroy can remove.
func finishParams(p map[string]string, s Spec) map[string]string {
	if s.Protection {
		p["protection"] = "1"
	}
	return p
}

// refuseProtected stops a destroy of a VM whose protection flag is set before anything is
// touched: Proxmox refuses the destroy itself, but only after the stop and the seed delete.
func refuseProtected(id ID, cfg map[string]string) error {
	if cfg["protection"] != "1" {
		return nil
	}
	return Permanentf("VM %s (VMID %d) has Proxmox's protection flag set, so Proxmox refuses to destroy it, and this provider "+
		"never clears the flag during a destroy: to destroy it, set protection = false on the resource and apply (that clears "+
		"the flag), then destroy; for a VM whose flag was set outside Terraform, clear it with `qm set %d --protection 0`. "+
		"Nothing was changed", id.Name, id.VMID, id.VMID)
}
