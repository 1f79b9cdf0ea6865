package provider

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// importForms lists the accepted import IDs, for messages.
const importForms = "vms/<vmid>/<name> (e.g. vms/105967/proxy-a), <vmid> (e.g. 105967), or <name> (e.g. proxy-a)"

// importRef is a parsed import ID: a VMID, a name, or both.
type importRef struct {
	VMID int
	Name string
}

// parseImportID parses an import ID strictly:
//   - vms/<vmid>/<name>: the resource's own ID (proxmox.ParseID's rules);
//   - <vmid>: only decimal digits, no leading zero, 100 to 999999999;
//   - <name>: a DNS label that is not all digits (a VM whose name is all digits is imported
//     by its full ID).
//
// Anything else is an error that lists the accepted forms.
func parseImportID(s string) (importRef, error) {
	bad := func(why string) (importRef, error) {
		return importRef{}, fmt.Errorf("the import ID %q %s. Accepted forms: %s", s, why, importForms)
	}
	switch {
	case s == "":
		return bad("is empty")
	case strings.Contains(s, "/"):
		id, err := proxmox.ParseID(s)
		if err != nil {
			return bad("is not of the form vms/<vmid>/<name> with a VMID between 100 and 999999999 without leading zeros and a non-empty name")
		}
		return importRef{VMID: id.VMID, Name: id.Name}, nil
	case allDigits(s):
		if s[0] == '0' || len(s) > 9 {
			return bad("is not a VMID: a VMID has no leading zero and at most 9 digits")
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			return bad("is not a VMID: a VMID is between 100 and 999999999")
		}
		return importRef{VMID: n}, nil
	case vmNameRE.MatchString(s):
		return importRef{Name: s}, nil
	default:
		return bad("is neither a VMID nor a VM name (a DNS label: lowercase letters, digits and hyphens)")
	}
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
