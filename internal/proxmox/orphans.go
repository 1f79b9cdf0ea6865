package proxmox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

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

// OrphanSeeds lists seed ISO volumes on each node's ISO storage that no VM references,
// with their age (decision: orphans).
//
// A seed whose VM was destroyed by its resource is deleted with it (decision: seed-location);
// these are what is left otherwise: the seeds of VMs destroyed outside Terraform whose
// state is gone too, and of a create whose seed delete failed after a failed clone. Each
// configured node's ISO storage is listed (GET .../storage/{iso}/content?content=iso,
// concurrently), then the cluster's VMs. A <name>-<uid>-seed.iso (this provider's, one per
// VM) is an orphan when no VM named <name> has it on ide2 or carries <uid> in its mark (a
// create between its clone and its config step); telling needs the config of the VMs of
// that name, read only when such a seed exists (ListConcurrency at a time). A
// <name>-seed.iso (the proxy operator's) is an orphan when no QEMU VM in the
// cluster has its name. The listing is taken after the contents, so a VM made meanwhile
// does not make its own seed look orphaned; but the seed of a create still cloning is
// uploaded beside the clone, while the VM is listed without a name and its config holds
// only the clone's lock (fact: nameless-mid-clone), so it does look orphaned then: its age
// (CreatedAt, the volume's ctime) tells it apart, which is what the cleanup's grace period
// is for. On a shared ISO storage every node lists the same volume, so an orphan shows
// once per node.
//
// "No VM" means none the API token sees: when the token may not see every VM (it lacks
// VM.Audit on /vms, propagated, as a token scoped to a pool does), each seed comes with
// Unproved saying so (listingIncomplete, one privilege read when there is a seed to
// report), and no cleanup deletes it.
//
// A node whose storage cannot be listed is left out, and the seeds of the other nodes come
// with a *SkippedNodesError naming it; the listing failing, a config that cannot be read,
// or ctx ending, fails the call with no seeds.
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
				// Only a seed named as this provider names them, <name>-<uid>-seed.iso: an ISO of
				// another tool (or the operator's <name>-seed.iso) is not ours to report or delete.
				if name, uid, ok := seedName(v.VolID); ok && uid != "" {
					perNode[i] = append(perNode[i], Seed{Node: node, VolID: v.VolID, Name: name, UID: uid, Size: v.Size, CreatedAt: ctimeOf(v.CTime)})
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
	byName := map[string][]int{}
	for i, r := range res {
		if r.Type == "qemu" && r.Name != "" {
			names[r.Name] = true
			byName[r.Name] = append(byName[r.Name], i)
		}
	}
	refs, err := b.seedRefs(ctx, res, byName, perNode)
	if err != nil {
		return nil, wrap("list", "", 0, err)
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
			if !seedReferenced(s, names, refs) {
				out = append(out, s)
			}
		}
	}
	unproved := ""
	if len(out) > 0 {
		why, err := b.listingIncomplete(ctx)
		if err != nil {
			return nil, wrap("list", "", 0, err)
		}
		unproved = why
		for i := range out {
			out[i].Unproved = why
		}
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox orphan seeds listed", map[string]any{
		"nodes": len(nodes), "seeds": seeds, "orphans": len(out), "skipped_nodes": len(skipped), "unproved": unproved,
	})
	if len(skipped) > 0 {
		return out, &SkippedNodesError{Nodes: skipped}
	}
	return out, nil
}

// SeedVisibilityPrivilege is what the API token needs for a seed no VM it sees uses to be
// proved an orphan (decision: orphan-visibility).
const SeedVisibilityPrivilege = "VM.Audit on /vms"

// listingIncomplete says why the cluster listing may leave out a VM that uses a seed, ""
// when it cannot (decision: orphan-visibility). GET /cluster/resources lists a guest only
// when the token has VM.Audit on /vms/<vmid> (pve-manager PVE/API2/Cluster.pm resources:
// check($authuser, "/vms/$vmid", ['VM.Audit'], 1)); that privilege reaches every VMID
// only from a grant on /vms (or /) with propagate set (pve-access-control
// src/PVE/AccessControl.pm roles: a role reaches the paths below only when propagated; a
// pool's roles reach its members only, RPCEnvironment.pm $compile_acl_path). GET
// /access/permissions?path=/vms answers the token's effective privileges there with that
// flag, for a privilege-separated token its user's and its own intersected, both flags
// and-ed (API2/AccessControl.pm permissions, RPCEnvironment.pm permissions). So the
// listing is known complete when that answer holds VM.Audit propagated; not when it lacks
// it, holds it unpropagated (it then covers /vms itself, no VM), or the read fails. What
// this cannot see: an ACL entry on one /vms/<vmid> or pool that takes VM.Audit away
// (NoAccess) under such a grant; the token cannot read it (get_effective_permissions
// leaves out paths without privileges, GET /access/acl needs Sys.Audit on /access), so
// the cleanup's documentation asks for a token that no such entry hides a VM from. ctx
// ending fails the call.
func (b *Backend) listingIncomplete(ctx context.Context) (string, error) {
	const todo = ", so a seed no VM it sees uses may belong to a VM it cannot see (one outside its pool): " +
		"run the cleanup with a token that has " + SeedVisibilityPrivilege + " (propagated), or delete the seed by hand " +
		"after checking that no VM uses it"
	privs, err := b.api.Permissions(ctx, "/vms")
	if err != nil {
		if ctx.Err() != nil {
			return "", apiErrorf("list", err, "reading the API token's privileges on /vms")
		}
		return "whether the API token sees every VM is not known (reading its privileges on /vms failed: " + err.Error() +
			"; it needs " + SeedVisibilityPrivilege + ", propagated)" + todo, nil
	}
	prop, ok := privs["VM.Audit"]
	switch {
	case ok && prop:
		return "", nil
	case ok:
		return "the API token has " + SeedVisibilityPrivilege + " without propagate, which reaches no VM" + todo, nil
	default:
		return "the API token lacks " + SeedVisibilityPrivilege + " (propagated)" + todo, nil
	}
}

// seedRefs are, per VM name that a <name>-<uid>-seed.iso carries, the seed volumes its
// VMs' ide2 name and the uids their marks carry, from one config read per such VM.
func (b *Backend) seedRefs(ctx context.Context, res []pveapi.Resource, byName map[string][]int, perNode [][]Seed) (map[string]bool, error) {
	want := map[int]bool{}
	for _, seeds := range perNode {
		for _, s := range seeds {
			if s.UID != "" {
				for _, i := range byName[s.Name] {
					want[i] = true
				}
			}
		}
	}
	entries := make([]pveapi.Resource, 0, len(want))
	for i := range want {
		entries = append(entries, res[i])
	}
	slices.SortFunc(entries, func(a, b pveapi.Resource) int { return a.VMID - b.VMID })
	refs := map[string]bool{}
	var firstErr error
	err := b.eachConfig(ctx, entries, func(r pveapi.Resource, cfg map[string]string, err error) bool {
		switch {
		case err == nil:
		case isNotExist(err):
			return true
		default:
			firstErr = apiErrorf("list", err, "reading the config of VMID %d on node %s to tell which seed ISO it uses", r.VMID, r.Node)
			return false
		}
		if v, ok := vmSeed(r.Name, cfg); ok {
			refs["vol:"+v.volid()] = true
		}
		if m, ok := markedAny(cfg); ok && m.UID != "" {
			refs["uid:"+r.Name+"/"+m.UID] = true
		}
		return true
	})
	if firstErr == nil && err != nil {
		firstErr = apiErrorf("list", err, "reading the configs of the VMs that may use a seed ISO")
	}
	return refs, firstErr
}

// ctimeOf is a volume's ctime (seconds since the epoch) as a time; the zero time when the
// storage did not report one.
func ctimeOf(sec int64) time.Time {
	if sec <= 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// seedReferenced says whether a VM may boot from s.
func seedReferenced(s Seed, names map[string]bool, refs map[string]bool) bool {
	_, file, _ := strings.Cut(s.VolID, ":iso/")
	if names[strings.TrimSuffix(file, seedSuffix)] {
		return true // a VM named like the whole prefix: a <name>-seed.iso of that VM
	}
	if s.UID == "" {
		return false
	}
	return refs["vol:"+s.VolID] || refs["uid:"+s.Name+"/"+s.UID]
}
