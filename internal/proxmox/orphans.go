package proxmox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// seedSuffix ends every seed ISO's file name: <name>-seed.iso (entry 8).
const seedSuffix = "-seed.iso"

// NodeError is one node that could not be read.
type NodeError struct {
	Node string
	Err  error
}

// SkippedNodesError comes with a partial OrphanSeeds result: the ISO storage of these
// nodes could not be listed, so their orphans are missing from it.
type SkippedNodesError struct {
	Nodes []NodeError // config order
}

func (e *SkippedNodesError) Error() string {
	parts := make([]string, len(e.Nodes))
	for i, n := range e.Nodes {
		parts[i] = fmt.Sprintf("node %s: %v", n.Node, n.Err)
	}
	return "the ISO storage could not be listed on " + strings.Join(parts, "; ")
}

// OrphanSeeds lists *-seed.iso volumes on each node's ISO storage that no VM of that name
// references.
//
// These are the seeds of VMs destroyed outside the provider, which nothing else ever
// deletes (entry 24). Each configured node's ISO storage is listed (GET
// .../storage/{iso}/content?content=iso, concurrently), then the cluster's VMs: a seed is
// an orphan when no QEMU VM in the cluster has its name. The listing is taken after the
// contents, so a VM being created meanwhile does not make its own seed look orphaned. On a
// shared ISO storage every node lists the same volume, so an orphan shows once per node.
//
// A node whose storage cannot be listed is left out, and the seeds of the other nodes come
// with a *SkippedNodesError naming it; the listing failing, or ctx ending, fails the call
// with no seeds.
func (b *Backend) OrphanSeeds(ctx context.Context) ([]Seed, error) {
	return b.OrphanSeedsOn(ctx, b.cfg.Nodes)
}

// OrphanSeedsOn is OrphanSeeds over the given nodes only, in that order.
func (b *Backend) OrphanSeedsOn(ctx context.Context, nodes []string) ([]Seed, error) {
	perNode := make([][]Seed, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Go(func() {
			vols, err := b.api.StorageContent(ctx, node, b.cfg.ISOStorage, "iso")
			if err != nil {
				errs[i] = err
				return
			}
			for _, v := range vols {
				if name, ok := seedName(v.VolID); ok {
					perNode[i] = append(perNode[i], Seed{Node: node, VolID: v.VolID, Name: name, Size: v.Size})
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, wrap("list", "", 0, apiErrorf("list", err, "listing the seed ISOs"))
	}
	res, err := b.listing(ctx, true)
	if err != nil {
		return nil, wrap("list", "", 0, apiErrorf("list", err, "listing the cluster's VMs"))
	}
	names := map[string]bool{}
	for _, r := range res {
		if r.Type == "qemu" && r.Name != "" {
			names[r.Name] = true
		}
	}
	var (
		out     []Seed
		skipped []NodeError
		seeds   int
	)
	for i, node := range nodes {
		if errs[i] != nil {
			skipped = append(skipped, NodeError{Node: node, Err: errs[i]})
			tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed listing skipped", map[string]any{
				"node": node, "storage": b.cfg.ISOStorage, "error": errs[i].Error(),
			})
			continue
		}
		slices.SortFunc(perNode[i], func(a, b Seed) int { return strings.Compare(a.VolID, b.VolID) })
		for _, s := range perNode[i] {
			seeds++
			if !names[s.Name] {
				out = append(out, s)
			}
		}
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox orphan seeds listed", map[string]any{
		"nodes": len(nodes), "seeds": seeds, "orphans": len(out), "skipped_nodes": len(skipped),
	})
	if len(skipped) > 0 {
		return out, &SkippedNodesError{Nodes: skipped}
	}
	return out, nil
}

// seedName returns the VM name of a seed ISO's volid (<storage>:iso/<name>-seed.iso).
func seedName(volid string) (string, bool) {
	_, file, ok := strings.Cut(volid, ":")
	if !ok {
		return "", false
	}
	file, ok = strings.CutPrefix(file, "iso/")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(file, seedSuffix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	return name, true
}
