package proxmox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// deleteSeed deletes v on node and waits for the task; a missing volume is still a
// successful task (fact: volume-delete-task). A storage that does not exist (on that node,
// or at all) holds no seed: nothing is left, and the skip is noted for the caller to show.
// Any other failure is an error naming the volume, the node and what to do.
func (b *Backend) deleteSeed(ctx context.Context, op, node string, v seedVol) error {
	upid, err := b.api.DeleteVolume(ctx, node, v.storage, v.volid())
	if err == nil {
		err = b.waitTask(ctx, upid, b.cfg.Budgets.SeedDelete)
		if err == nil {
			return nil
		}
		return &Error{
			Class: ClassOf(err),
			Err:   fmt.Errorf("deleting the seed ISO %s on node %s: %w; %s", v.volid(), node, err, seedDeleteFix(node, v)),
		}
	}
	if pveapi.IsMissingStorage(err) {
		noteSeedSkipped(ctx, node, v.volid(), err)
		return nil
	}
	if pveapi.IsForbidden(err) {
		return apiErrorf(
			op,
			err,
			"deleting the seed ISO %s on node %s (the token needs Datastore.Allocate on /storage/%s; grant it, or %s)",
			v.volid(),
			node,
			v.storage,
			seedDeleteManually(node, v),
		)
	}
	return apiErrorf(op, err, "deleting the seed ISO %s on node %s (%s)", v.volid(), node, seedDeleteFix(node, v))
}

// seedDeleteFix is what to do about a seed delete that failed.
func seedDeleteFix(node string, v seedVol) string {
	return "run the same command again once node " + node + " answers, or " + seedDeleteManually(node, v)
}

// seedDeleteManually says how to remove a seed by hand.
func seedDeleteManually(node string, v seedVol) string {
	return fmt.Sprintf("delete it by hand with `pvesm free %s` on node %s", v.volid(), node)
}

// noteSeedSkipped is the note of a seed delete skipped because its storage does not exist.
func noteSeedSkipped(ctx context.Context, node, volid string, err error) {
	note(ctx, "the seed ISO %s was not deleted on node %s: its storage %s does not exist there (%v), so there can be no seed on it",
		volid, node, storageOf(volid), err)
}

// seedDelete is a seed ISO delete running beside the stop: the seed must be gone before
// the destroy (so that a failure leaves the VM, and the next Delete, to retry it), not
// before the stop, so Delete sends both at once and joins the delete before the destroy.
type seedDelete struct {
	done chan struct{}
	err  error
}

// startSeedDelete runs the destroy's seed sweep (sweepSeeds) in a goroutine.
func (b *Backend) startSeedDelete(ctx context.Context, sw seedSweep, st settled) *seedDelete {
	d := &seedDelete{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.err = b.sweepSeeds(ctx, sw, st)
	}()
	return d
}

// join waits for the delete and returns its error.
func (d *seedDelete) join() error {
	<-d.done
	return d.err
}

// Seed sweep (decision: seed-sweep). One rule says what a destroy deletes, whatever path it
// takes (a VM of ours, a VM gone, the VMID holding a VM not ours, the replacement of a VM
// gone): every generation of the VM's seed (<name>-<uid>-seed.iso, <name>-<uid>-<g>-seed.iso,
// parseSeedGen) on the VM's own node (its node now, or for a VM not there the node the
// state last saw it on) and on every node the seed record names (DeleteOptions.SeedNodes:
// an HA recovery moves the config alone and leaves the seed where it was; a cloud-init
// change made after it swaps the seed on the new node only), except a copy some other VM
// has on a drive (decision: seed-in-use: kept, with a note naming that VM). Those nodes are
// the homes: their ISO storages are listed and a failure there fails the destroy, naming
// what to fix, so a seed is never left behind silently. A recorded node that is not among
// the provider's nodes is not listed (it may be gone for good): the named seeds are deleted
// there by name when it answers, and a note names what may remain. The volumes named
// (ide2's, the recorded one) are deleted by name without a listing when one generation on
// one node is all that ever existed (sweepNeedsListing). For a VM not there, the named
// seeds are also deleted by name on the other configured nodes, a failure there logged.

// seedSweep is what a destroy's seed sweep deletes.
type seedSweep struct {
	id        ID
	name, uid string // the generations swept are the seeds of name with uid; no uid: named alone
	// named are the seeds the state knows by name: the one ide2 names, the one recorded (or,
	// without a record, the one a Create of uid uploads), for a VM not there the proxy
	// operator's <name>-seed.iso too. A <name>-seed.iso is deleted only on vmNode (a live VM)
	// and never when a VM of that name is listed elsewhere (sameNameElsewhere).
	named []seedVol
	// vmNode is the node of a VM of ours; "" when the VM is not there.
	vmNode string
	// homes are swept (listed, when list) and fail the destroy when they fail.
	homes []string
	list  bool
	// others (a VM not there: the configured nodes outside homes) get named deleted by name,
	// a failure logged; unconfigured (recorded nodes not among the provider's nodes) too, a
	// failure noted with what may remain.
	others, unconfigured []string
	// skipVMID is the VM whose drives do not keep a seed (the VM destroyed); 0: none.
	skipVMID int
	// swept are the seeds ("<node>|<volid>") an earlier sweep of the same delete deleted:
	// not deleted again; the sweep adds those it deletes. nil: none kept.
	swept map[string]bool
}

// seedAt is a seed a sweep deletes on a node.
type seedAt struct {
	node string
	v    seedVol
	kind sweepKind
}

type sweepKind int

const (
	sweepHome sweepKind = iota
	sweepOther
	sweepUnconfigured
)

// liveSweep is the sweep of a VM of ours on node whose config is cfg (ownSeeds named).
func (b *Backend) liveSweep(
	ctx context.Context,
	id ID,
	node string,
	cfg map[string]string,
	opts DeleteOptions,
	res []pveapi.Resource,
) seedSweep {
	sw := seedSweep{id: id, name: id.Name, uid: opts.UID, vmNode: node, skipVMID: id.VMID}
	sw.named = dropSharedOperatorSeed(ctx, id, res, b.ownSeeds(id.Name, cfg, opts.Seed, opts.UID))
	sw.homes = []string{node}
	b.addRecordedNodes(&sw, opts.SeedNodes)
	sw.list = sweepNeedsListing(sw, opts.SeedSwaps)
	return sw
}

// goneSweep is the sweep of a VM that is gone or not ours (st.verdict): the named seeds
// are the recorded one or, without a record, <name>-<uid>-seed.iso and <name>-seed.iso on
// iso_storage.
func (b *Backend) goneSweep(ctx context.Context, id ID, st settled, opts DeleteOptions) seedSweep {
	sw := seedSweep{id: id, name: id.Name, uid: opts.UID}
	if v, ok := b.recordedSeed(opts.Seed); ok {
		sw.named = []seedVol{v}
		if n, u, ok := parseUIDSeed(v.file); ok && n == id.Name && sw.uid == "" {
			sw.uid = u // the state records no uid: the recorded seed's name carries it
		}
	} else if b.cfg.ISOStorage != "" {
		if opts.UID != "" {
			sw.named = append(sw.named, seedVol{storage: b.cfg.ISOStorage, file: seedFile(id.Name, opts.UID)})
		}
		sw.named = append(sw.named, seedVol{storage: b.cfg.ISOStorage, file: operatorSeedFile(id.Name)})
	}
	sw.named = dropSharedOperatorSeed(ctx, id, st.res, sw.named)
	b.addRecordedNodes(&sw, append([]string{opts.Node}, opts.SeedNodes...))
	for _, n := range b.cfg.Nodes {
		if !slices.Contains(sw.homes, n) {
			sw.others = append(sw.others, n)
		}
	}
	sw.list = sweepNeedsListing(sw, opts.SeedSwaps)
	return sw
}

// addRecordedNodes adds nodes to sw: a configured node (or any, when the provider lists
// none) as a home, another as unconfigured.
func (b *Backend) addRecordedNodes(sw *seedSweep, nodes []string) {
	for _, n := range nodes {
		switch {
		case n == "", slices.Contains(sw.homes, n), slices.Contains(sw.unconfigured, n):
		case len(b.cfg.Nodes) == 0 || slices.Contains(b.cfg.Nodes, n):
			sw.homes = append(sw.homes, n)
		default:
			sw.unconfigured = append(sw.unconfigured, n)
		}
	}
}

// dropSharedOperatorSeed leaves out of seeds the proxy operator's <name>-seed.iso when a VM
// of that name is listed at another VMID: it may boot from it.
func dropSharedOperatorSeed(ctx context.Context, id ID, res []pveapi.Resource, seeds []seedVol) []seedVol {
	return slices.DeleteFunc(seeds, func(v seedVol) bool {
		if v.file != operatorSeedFile(id.Name) {
			return false
		}
		r, ok := sameNameElsewhere(res, id)
		if ok {
			tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed left alone: a VM of the same name may boot from it", map[string]any{
				"vmid": id.VMID, "name": id.Name, "other_vmid": r.VMID, "other_node": r.Node, "seed": v.volid(),
			})
		}
		return ok
	})
}

// sweepNeedsListing says whether the homes are listed: not when the record proves one
// generation of the seed on one node is all there ever was (the named seeds are then
// deleted by name, and the destroy sends no request more than it always did): one home and
// no unconfigured node recorded, no named seed of a later generation, and a resource that
// does not swap its seed (SeedSwaps: a swap cut off leaves the next generation whatever ide2
// names). Without a uid there are no generations to find.
func sweepNeedsListing(sw seedSweep, swaps bool) bool {
	if sw.uid == "" {
		return false
	}
	if swaps || len(sw.homes)+len(sw.unconfigured) > 1 {
		return true
	}
	for _, v := range sw.named {
		if _, _, gen, ok := parseSeedGen(v.file); ok && gen > 1 {
			return true
		}
	}
	return false
}

// isGeneration says whether v is a generation of the sweep's seed.
func (sw seedSweep) isGeneration(v seedVol) bool {
	n, u, _, ok := parseSeedGen(v.file)
	return ok && sw.uid != "" && n == sw.name && u == sw.uid
}

// namedOn are the named seeds deleted on node: a <name>-seed.iso only on a live VM's node.
func (sw seedSweep) namedOn(node string) []seedVol {
	var out []seedVol
	for _, v := range sw.named {
		if v.file == operatorSeedFile(sw.name) && sw.vmNode != "" && node != sw.vmNode {
			continue
		}
		out = append(out, v)
	}
	return out
}

// sweepStorages are the storages listed on a home: the named seeds' and iso_storage (where
// every later generation was uploaded).
func (b *Backend) sweepStorages(sw seedSweep) []string {
	var out []string
	for _, v := range sw.named {
		if !slices.Contains(out, v.storage) {
			out = append(out, v.storage)
		}
	}
	if b.cfg.ISOStorage != "" && !slices.Contains(out, b.cfg.ISOStorage) {
		out = append(out, b.cfg.ISOStorage)
	}
	return out
}

// sweepHome lists node's ISO storages for every generation of sw's seed, and the named
// seeds there. A storage that does not exist there holds none; any other failure fails
// the destroy, saying what to fix (a 403: the privilege the listing needs).
func (b *Backend) sweepHome(ctx context.Context, sw seedSweep, node string) ([]seedVol, error) {
	named := sw.namedOn(node)
	if !sw.list {
		return named, nil
	}
	var out []seedVol
	for _, st := range b.sweepStorages(sw) {
		vols, err := b.api.StorageContent(ctx, node, st, "iso")
		switch {
		case err == nil:
		case pveapi.IsMissingStorage(err):
			continue
		case ctx.Err() != nil:
			return nil, Transientf("listing storage %s on node %s for the VM's seed ISOs: %w", st, node, ctx.Err())
		case pveapi.IsForbidden(err):
			return nil, apiErrorf(
				"delete",
				err,
				"listing storage %s on node %s for every generation of the VM's seed ISO (%s, %s) was refused: "+
					"the API token needs Datastore.Audit on /storage/%s to find them; grant it and destroy again, or delete them by hand "+
					"(`pvesm list %s --content iso` on node %s shows them, `pvesm free` deletes each)",
				st,
				node,
				seedFile(sw.name, sw.uid),
				seedFileGen(sw.name, sw.uid, 2),
				st,
				st,
				node,
			)
		default:
			return nil, apiErrorf("delete", err, "listing storage %s on node %s for the VM's seed ISOs (%s and its later generations); "+
				"run the same command again once node %s answers", st, node, seedFile(sw.name, sw.uid), node)
		}
		for _, vol := range vols {
			v, ok := parseISOVol(vol.VolID)
			if ok && !slices.Contains(out, v) && (sw.isGeneration(v) || slices.Contains(named, v)) {
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// sweepSeeds deletes what sw names (decision: seed-sweep), except a copy a VM has on a
// drive (decision: seed-in-use), which is noted naming that VM. st is what settle read:
// its listing says which VMs could have a seed, and the VM now at a gone VM's VMID (st.r,
// st.cfg) is one of them.
func (b *Backend) sweepSeeds(ctx context.Context, sw seedSweep, st settled) error {
	var seeds []seedAt
	for _, n := range sw.homes {
		vs, err := b.sweepHome(ctx, sw, n)
		if err != nil {
			return sw.onHome(n, err)
		}
		for _, v := range vs {
			seeds = append(seeds, seedAt{node: n, v: v, kind: sweepHome})
		}
	}
	for kind, nodes := range map[sweepKind][]string{sweepOther: sw.others, sweepUnconfigured: sw.unconfigured} {
		for _, n := range nodes {
			for _, v := range sw.namedOn(n) {
				seeds = append(seeds, seedAt{node: n, v: v, kind: kind})
			}
		}
	}
	slices.SortStableFunc(seeds, func(a, b seedAt) int { return int(a.kind) - int(b.kind) })
	if len(seeds) == 0 {
		b.noteUnconfigured(ctx, sw, nil)
		return nil
	}
	held, err := b.sweepHolders(ctx, sw, st, seeds)
	if err != nil {
		return err
	}
	failed := map[string]bool{}
	for _, s := range seeds {
		if sw.swept[s.node+"|"+s.v.volid()] {
			continue
		}
		if by := held.of(s.node, s.v.volid()); by != "" {
			note(ctx, "the seed ISO %s was not deleted on node %s: %s has it on a drive, so it is that VM's to use now; "+
				"delete it by hand with `pvesm free %s` on node %s once that VM no longer uses it", s.v.volid(), s.node, by, s.v.volid(), s.node)
			continue
		}
		err := b.deleteSeed(ctx, "delete", s.node, s.v)
		switch {
		case err == nil:
			if sw.swept != nil {
				sw.swept[s.node+"|"+s.v.volid()] = true
			}
			continue
		case ctx.Err() != nil:
			return Transientf("deleting the seed ISO %s: %w; %s", s.v.volid(), ctx.Err(), seedDeleteFix(s.node, s.v))
		case s.kind == sweepHome:
			return sw.onHome(s.node, err)
		case s.kind == sweepUnconfigured:
			failed[s.node] = true
		case ClassOf(err) == pveapi.Permanent:
			return err
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed delete skipped on node", map[string]any{
			"seed": s.v.volid(), "node": s.node, "error": err.Error(),
		})
	}
	b.noteUnconfigured(ctx, sw, failed)
	return nil
}

// onHome is err of a home, said as the move it comes from when the live VM is elsewhere.
func (sw seedSweep) onHome(node string, err error) error {
	if sw.vmNode == "" || node == sw.vmNode {
		return err
	}
	return &Error{
		Class: ClassOf(err),
		Err: fmt.Errorf(
			"the VM is on node %s now, but its seed ISO was uploaded on node %s and is deleted there too: %w",
			sw.vmNode,
			node,
			err,
		),
	}
}

// noteUnconfigured notes, for each recorded node that is not among the provider's nodes,
// the seed files that may remain there: all of them where the delete failed (failed),
// the generations the sweep did not list for where it did not.
func (b *Backend) noteUnconfigured(ctx context.Context, sw seedSweep, failed map[string]bool) {
	for _, n := range sw.unconfigured {
		if !failed[n] && !sw.list {
			continue
		}
		// Which generations that node holds is not known without its listing: the pattern,
		// and the named seeds where their delete by name failed.
		var files []string
		if failed[n] || sw.uid == "" {
			for _, v := range sw.namedOn(n) {
				files = append(files, v.volid())
			}
		}
		if sw.uid != "" {
			files = append(
				files,
				"any generation of this VM's seed ISO ("+sw.name+"-"+sw.uid+"-seed.iso, "+sw.name+"-"+sw.uid+"-<n>-seed.iso)",
			)
		}
		if len(files) == 0 {
			continue
		}
		why := "its ISO storage was not listed"
		if failed[n] {
			why = "it did not answer, and its ISO storage was not listed"
		}
		note(ctx, "node %s, where a copy of this VM's seed ISO was put, is not among the provider's nodes, so %s: %s may remain there; "+
			"delete them by hand with `pvesm free <volid>` on node %s (`pvesm list <storage> --content iso` shows them)",
			n, why, strings.Join(files, ", "), n)
	}
}
