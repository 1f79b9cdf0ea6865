package proxmox

import (
	"strings"
	"time"
)

// The description mark (entry 8), shared with the Kubernetes operator: three key=value
// lines written in the clone call.
const (
	MarkKeyManaged   = "proxy-operator-managed"
	MarkKeyUID       = "proxy-operator-uid"
	MarkKeyCreatedAt = "proxy-operator-created-at"
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
}

// FormatMark returns the three-line mark for a description.
func FormatMark(uid string, createdAt time.Time) string {
	return MarkKeyManaged + "=" + MarkManagedYes + "\n" +
		MarkKeyUID + "=" + uid + "\n" +
		MarkKeyCreatedAt + "=" + createdAt.UTC().Format(time.RFC3339)
}

// ParseMark reads the mark from a description. It tolerates CRLF, blank lines, spaces
// around keys and values, and any other lines an admin adds; the first occurrence of a
// key wins.
func ParseMark(desc string) Mark {
	var m Mark
	seen := map[string]bool{}
	for line := range strings.SplitSeq(desc, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if seen[k] {
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
		default:
			continue
		}
		seen[k] = true
	}
	return m
}
