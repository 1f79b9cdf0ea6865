package proxmox

import (
	"strings"
)

// Proxmox reads a drive or NIC option string ("virtio=...,bridge=vmbr0,tag=4", "<volid>,
// media=cdrom") by splitting it on ',' and each option on '=' (pve-common
// PVE::JSONSchema parse_property_string), and a list such as trunks= on ';'. A value the
// provider writes into such a string that carried one of those characters, or a line
// break, would add options of its own choosing (bridge = "vmbr0,firewall=0,trunks=1;2"
// reconfigures the NIC). The provider validates every such attribute at plan time with
// Proxmox's own format; optionValue is the last line of defence where the strings are
// composed, before any request.

// optionBreakers are the characters that end or split a value inside an option string.
const optionBreakers = ",=;\n\r"

// optionValue returns val, or a Permanent error naming key when val would break out of
// its place in an option string (or is empty).
func optionValue(key, val string) (string, error) {
	if val == "" || strings.ContainsAny(val, optionBreakers) {
		return "", Permanentf("the %s value %q cannot be written into a Proxmox option string: it is empty or holds "+
			"',', '=', ';' or a line break "+
			"(a provider bug: the value should have been refused at plan time)", key, val)
	}
	return val, nil
}

// checkSpecOptions runs optionValue over every value of s (and of the backend's
// configuration) that a create writes into an option string or a parameter naming a
// storage, so that a bad one fails the create before its first request.
func (b *Backend) checkSpecOptions(s *Spec) error {
	checks := [][2]string{{"iso_storage", b.cfg.ISOStorage}, {"name", s.Name}}
	if s.Bridge != "" {
		checks = append(checks, [2]string{"bridge", s.Bridge})
	}
	if b.cfg.Storage != "" {
		checks = append(checks, [2]string{"storage", b.cfg.Storage})
	}
	if s.Node != "" {
		checks = append(checks, [2]string{"node", s.Node})
	}
	for _, c := range checks {
		if _, err := optionValue(c[0], c[1]); err != nil {
			return err
		}
	}
	return nil
}
