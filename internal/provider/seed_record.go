package provider

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// seedRecord is the value of privateKeySeed: the seed ISO the VM boots from
// (proxmox.VM.Seed: its volume id, wherever it is), so that a destroy of a VM already gone
// deletes exactly that one, and the nodes a copy of it was put on, so that a destroy of a
// VM that moved without the provider (an HA recovery moves the config alone) deletes the
// copy it left (decision: seed-location).
type seedRecord struct {
	// VolID is the seed's volume id, <storage>:iso/<file>.
	VolID string `json:"volid,omitempty"`
	// Nodes are every node a copy of VolID, or of an earlier generation of it, was put on.
	// A migration's source stays: the migration deletes there the generation it moved, not
	// an earlier one a move outside Terraform left (decision: seed-sweep). Empty: the node
	// the state last saw the VM on.
	Nodes []string `json:"nodes,omitempty"`
}

// seedWrite is what a write of the seed record knows.
type seedWrite struct {
	// volid is the seed the VM names now; "" leaves the record as it is.
	volid string
	// lastSeen is the node the state saw the VM on before this write: where the seed of a
	// record without nodes is.
	lastSeen string
	// put is the node a seed of volid is on after an apply (Create, Update, import); a
	// refresh puts nothing.
	put string
	// maybe are nodes a copy may be on although no apply put one there: an import's (the
	// provider's nodes), since nothing tells where the VM's seed was uploaded before an HA
	// move; the destroy lists each and deletes only what is there.
	maybe []string
}

// writeSeed records the VM's seed volume and the nodes a copy of it is on: the ones in's
// record names (or lastSeen, for a record without nodes), with w.put.
func writeSeed(ctx context.Context, in privateGetter, out privateSetter, w seedWrite) diag.Diagnostics {
	if w.volid == "" {
		return nil
	}
	rec := seedRecord{VolID: w.volid}
	if prev, ok, _ := privateKeySeed.read(ctx, in); ok {
		// The nodes of an earlier generation are kept too: a seed swap deletes the old
		// generation on the VM's node only, so a copy an HA move left elsewhere is still
		// there, and the destroy deletes every generation of the VM's seeds on those nodes.
		rec.Nodes = slices.Clone(prev.Nodes)
		if len(rec.Nodes) == 0 && w.lastSeen != "" {
			rec.Nodes = []string{w.lastSeen}
		}
	}
	for _, n := range append([]string{w.put}, w.maybe...) {
		if n != "" && !slices.Contains(rec.Nodes, n) {
			rec.Nodes = append(rec.Nodes, n)
		}
	}
	return privateKeySeed.write(ctx, out, rec)
}

// readSeed returns the recorded seed's volume id; "" when none.
func readSeed(ctx context.Context, p privateGetter) string {
	r, _, _ := privateKeySeed.read(ctx, p)
	return r.VolID
}

// readSeedNodes returns the nodes a copy of the recorded seed was put on; none for a
// record without nodes.
func readSeedNodes(ctx context.Context, p privateGetter) []string {
	r, _, _ := privateKeySeed.read(ctx, p)
	return r.Nodes
}
