package provider

import (
	"crypto/rand"
	"fmt"
)

// newUID is the uid of a VM a Create makes: a random UUID (version 4, RFC 9562 section
// 5.4), minted at apply. It is unknown in the plan of a create (Terraform would reject a
// random value planned twice) and kept in the state afterwards. Where a create looks for a
// VMID stays deterministic: uidFor(uid_namespace, name), the allocation key.
func newUID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("reading random bytes for the VM's uid: %w", err)
	}
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 9562 variant
	return formatUUID(u), nil
}
