package proxmox

import (
	"strconv"
	"strings"
)

// VMID bounds of an ID (decision: id-format): Proxmox's own limits for a guest id.
const (
	minVMID = 100
	maxVMID = 999999999
)

// ParseID parses "vms/<vmid>/<name>" strictly: exactly three segments, the
// literal "vms", a decimal VMID without sign or leading zeros between 100 and 999999999,
// and a non-empty name. Anything else is a Permanent error.
func ParseID(s string) (ID, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] != "vms" {
		return ID{}, Permanentf("ID %q is not of the form vms/<vmid>/<name>", s)
	}
	vmid, ok := parseVMID(parts[1])
	if !ok {
		return ID{}, Permanentf("ID %q: VMID %q is not a decimal number between %d and %d without leading zeros",
			s, parts[1], minVMID, maxVMID)
	}
	if parts[2] == "" {
		return ID{}, Permanentf("ID %q has an empty name", s)
	}
	return ID{VMID: vmid, Name: parts[2]}, nil
}

// parseVMID accepts only canonical decimal VMIDs in [minVMID, maxVMID].
func parseVMID(s string) (int, bool) {
	if s == "" || len(s) > 9 || s[0] == '0' {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < minVMID || n > maxVMID {
		return 0, false
	}
	return n, true
}

// String formats the ID as vms/<vmid>/<name>.
func (id ID) String() string { return "vms/" + strconv.Itoa(id.VMID) + "/" + id.Name }

// Validate applies ParseID's rules to an ID built in code (a VMID in range, a non-empty
// name without "/"). It returns a Permanent error.
func (id ID) Validate() error {
	if id.VMID < minVMID || id.VMID > maxVMID {
		return Permanentf("ID %q: VMID %d is outside %d to %d", id.String(), id.VMID, minVMID, maxVMID)
	}
	if id.Name == "" || strings.Contains(id.Name, "/") {
		return Permanentf("ID %q: the name must be non-empty and contain no /", id.String())
	}
	return nil
}
