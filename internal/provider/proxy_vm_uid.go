package provider

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
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

// seedRecord is the value of privateKeySeed: the seed ISO the VM boots from
// (proxmox.VM.Seed: its volume id, wherever it is), so that a destroy of a VM already gone
// deletes exactly that one (decision: seed-location).
type seedRecord struct {
	// VolID is the seed's volume id, <storage>:iso/<file>.
	VolID string `json:"volid,omitempty"`
}

// writeSeed records the VM's seed volume; "" leaves the record as it is.
func writeSeed(ctx context.Context, p privateSetter, volid string) diag.Diagnostics {
	if volid == "" {
		return nil
	}
	return privateKeySeed.write(ctx, p, seedRecord{VolID: volid})
}

// readSeed returns the recorded seed's volume id; "" when none.
func readSeed(ctx context.Context, p privateGetter) string {
	r, _, _ := privateKeySeed.read(ctx, p)
	return r.VolID
}
