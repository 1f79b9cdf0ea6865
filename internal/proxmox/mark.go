package proxmox

import (
	"strings"
	"time"
)

// The description mark (decision: mark-format), shared with the Kubernetes operator: its three
// key=value lines, written in the clone call, then this provider's own lines, which the
// operator's parser ignores: MarkKeyNamespace (the scope within which an interrupted create of
// the same name is resumed) and MarkKeyState=creating while a Create still works on the VM (a
// mark without it is a finished VM). ParseMark ignores keys it does not know.
const (
	MarkKeyManaged   = "proxy-operator-managed"
	MarkKeyUID       = "proxy-operator-uid"
	MarkKeyCreatedAt = "proxy-operator-created-at"
	// MarkKeyNamespace is the provider's uid_namespace, written by this provider only.
	MarkKeyNamespace = "proxy-operator-namespace"
	// MarkKeyState is the create phase; MarkStateCreating is its only value.
	MarkKeyState = "proxy-operator-state"
	// MarkKeyInstance is the SMBIOS uuid (smbios1's uuid=) of the VM the mark was written
	// for, read after its clone (decision: instance-binding).
	MarkKeyInstance   = "proxy-operator-instance"
	MarkStateCreating = "creating"
	// MarkManagedYes is the only value of MarkKeyManaged that marks a VM as managed.
	MarkManagedYes = "true"
	// ManagedTag is the Proxmox tag the config step sets (a hint, not the mark).
	ManagedTag = "proxy_operator"
)

// Mark is what ParseMark reads from a VM's description.
type Mark struct {
	// Managed is true only when the managed line says exactly "true".
	Managed bool
	// UID is empty when the uid line is missing.
	UID string
	// CreatedAt is the zero time when the line is missing or does not parse as RFC 3339.
	CreatedAt time.Time
	// Namespace is the namespace line's value; HasNamespace says the line is there (only
	// this provider writes it: a mark without it was written by the proxy operator).
	Namespace    string
	HasNamespace bool
	// Creating is set while the state line says "creating": a Create has not finished.
	Creating bool
	// Proof is the creating line's MarkKeyProof value (ownership.go), empty without one.
	Proof string
	// Instance is the MarkKeyInstance value, empty without the line (a mark written
	// before the create's config step, or by an older version, decision: instance-binding).
	Instance string
}

// MarkLines are the lines of a mark written by this provider.
type MarkLines struct {
	UID       string
	CreatedAt time.Time
	Namespace string
	Creating  bool
	// Proof is written after the state line while Creating (CreatingMark).
	Proof string
	// Instance, when set, is written after the namespace line (MarkKeyInstance).
	Instance string
}

// FormatMark returns the proxy operator's three-line mark, which this provider's mark starts with.
func FormatMark(uid string, createdAt time.Time) string {
	return MarkKeyManaged + "=" + MarkManagedYes + "\n" +
		MarkKeyUID + "=" + uid + "\n" +
		MarkKeyCreatedAt + "=" + createdAt.UTC().Format(time.RFC3339)
}

// Format returns the operator's three lines, then this provider's: the namespace line, the
// instance line when known, and while creating the state line and its proof.
func (l MarkLines) Format() string {
	s := FormatMark(l.UID, l.CreatedAt) + "\n" + MarkKeyNamespace + "=" + l.Namespace
	if l.Instance != "" {
		s += "\n" + MarkKeyInstance + "=" + l.Instance
	}
	if l.Creating {
		s += "\n" + MarkKeyState + "=" + MarkStateCreating
		if l.Proof != "" {
			s += "\n" + MarkKeyProof + "=" + l.Proof
		}
	}
	return s
}

// ParseMark reads the mark from a description, its lines as parseMarkLine reads them:
// CRLF, blank lines and any other lines an admin adds are tolerated, a line with blanks
// around its key or value is not a mark line; the first occurrence of a key wins.
func ParseMark(desc string) Mark {
	var m Mark
	seen := map[string]bool{}
	for line := range strings.SplitSeq(desc, "\n") {
		k, v, ok := parseMarkLine(line)
		if !ok || seen[k] {
			continue
		}
		switch k {
		case MarkKeyManaged:
			m.Managed = v == MarkManagedYes
		case MarkKeyUID:
			m.UID = v
		case MarkKeyCreatedAt:
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				m.CreatedAt = t.UTC()
			}
		case MarkKeyNamespace:
			m.Namespace, m.HasNamespace = v, true
		case MarkKeyState:
			m.Creating = v == MarkStateCreating
		case MarkKeyProof:
			m.Proof = v
		case MarkKeyInstance:
			m.Instance = v
		default:
			continue
		}
		seen[k] = true
	}
	return m
}

// parseMarkLine is the one reader of a mark line (decision: mark-format), for every path
// that reads or rewrites a mark: key=value exactly, the key of the proxy-operator-* family
// (lowercase letters, digits and hyphens after the prefix), nothing around either; the
// carriage return of a CRLF line is not part of the value. Any other line (an admin's,
// one with blanks around its key or value) is not a mark line, and ok is false. The key's
// alphabet already keeps blanks out of it; the value is refused when it starts or ends
// with white space, so a padded line never takes the first-occurrence slot of its key.
func parseMarkLine(line string) (key, value string, ok bool) {
	k, v, found := strings.Cut(strings.TrimSuffix(line, "\r"), "=")
	rest, prefixed := strings.CutPrefix(k, markKeyPrefix)
	if !found || !prefixed || rest == "" || v != strings.TrimSpace(v) {
		return "", "", false
	}
	for _, r := range rest {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return "", "", false
		}
	}
	return k, v, true
}
