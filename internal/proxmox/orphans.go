package proxmox

import (
	"context"
	"fmt"
	"maps"
	"path"
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

// OrphanSeeds lists the seed ISO volumes on each node's ISO storage that no VM the API token
// sees has on any drive, with their age (decision: orphans, decision: seed-in-use). The VMs
// are listed after the contents, so a VM made meanwhile does not make its own seed look
// orphaned. When the token may not see every VM, each seed says so in Unproved (decision:
// orphan-visibility). A node whose storage cannot be listed is left out, named by a
// *SkippedNodesError beside the other nodes' seeds; any other failure returns no seeds.
func (b *Backend) OrphanSeeds(ctx context.Context) ([]Seed, error) {
	return b.OrphanSeedsOn(ctx, b.cfg.Nodes)
}

// OrphanSeedsOn is OrphanSeeds over the given nodes only, in that order.
func (b *Backend) OrphanSeedsOn(ctx context.Context, nodes []string) ([]Seed, error) {
	found, err := b.seedsUnused(ctx, nodes)
	var out []Seed
	for _, f := range found {
		if f.attachedTo == "" {
			out = append(out, f.Seed)
		}
	}
	return out, err
}

// unusedSeed is a seed of this provider's naming that no VM of its name uses: an orphan,
// unless attachedTo names a VM of another name that has it on a drive.
type unusedSeed struct {
	Seed
	attachedTo string // "VM <vmid> (<name>) as <drive>"; "" for an orphan
}

// seedsUnused lists, per node in nodes' order and by volume id, the seeds no VM of their
// name uses, each orphan or attached elsewhere (OrphanSeeds says how it is told).
func (b *Backend) seedsUnused(ctx context.Context, nodes []string) ([]unusedSeed, error) {
	perNode, errs := b.listSeedVolumes(ctx, nodes)
	if err := ctx.Err(); err != nil {
		return nil, wrap("list", "", 0, apiErrorf("list", err, "listing the seed ISOs"))
	}
	res, err := b.listing(ctx, true)
	if err != nil {
		return nil, wrap("list", "", 0, apiErrorf("list", err, "listing the cluster's VMs"))
	}
	// First the VMs named like a seed; then, when a seed is left, every other VM.
	named, others := seedReaders(res, perNode)
	use := seedUse{names: map[string]bool{}, vols: map[string]bool{}, uids: map[string]bool{}, drives: map[string]string{}}
	for _, r := range res {
		if r.Type == "qemu" && r.Name != "" {
			use.names[r.Name] = true
		}
	}
	if err := b.readSeedUse(ctx, "list", named, &use); err != nil {
		return nil, wrap("list", "", 0, err)
	}
	var (
		out     []unusedSeed
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
		seeds += len(perNode[i])
		for _, s := range perNode[i] {
			if !use.byItsVM(s) {
				out = append(out, unusedSeed{Seed: s})
			}
		}
	}
	left := make([]Seed, len(out))
	for i, s := range out {
		left[i] = s.Seed
	}
	held, err := b.readSeedHolders(ctx, "list", left, others, &use)
	if err != nil {
		return nil, wrap("list", "", 0, err)
	}
	orphans, err := b.markOrphans(ctx, out, held)
	if err != nil {
		return nil, err
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox orphan seeds listed", map[string]any{
		"nodes": len(nodes), "seeds": seeds, "orphans": orphans, "attached_elsewhere": len(out) - orphans,
		"skipped_nodes": len(skipped), "unproved": unprovedOf(out),
	})
	if len(skipped) > 0 {
		return out, &SkippedNodesError{Nodes: skipped}
	}
	return out, nil
}

// listSeedVolumes lists each node's ISO storage, concurrently: per node, the volumes named
// as this provider names seeds, <name>-<uid>-seed.iso, sorted by volume id, or the error
// the listing ended with. An ISO of another tool (or the operator's <name>-seed.iso) is
// not ours to report or delete.
func (b *Backend) listSeedVolumes(ctx context.Context, nodes []string) ([][]Seed, []error) {
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
				if name, uid, ok := seedName(v.VolID); ok && uid != "" {
					perNode[i] = append(perNode[i], Seed{Node: node, VolID: v.VolID, Name: name, UID: uid, Size: v.Size, CreatedAt: ctimeOf(v.CTime)})
				}
			}
			slices.SortFunc(perNode[i], func(a, b Seed) int { return strings.Compare(a.VolID, b.VolID) })
		})
	}
	wg.Wait()
	return perNode, errs
}

// markOrphans sets attachedTo on the seeds a VM has on a drive (seedHolders.of, the rule
// the destroy of a gone VM follows too), and Unproved on the others (listingIncomplete,
// asked once when there is such an orphan); it returns how many orphans there are.
func (b *Backend) markOrphans(ctx context.Context, seeds []unusedSeed, held seedHolders) (int, error) {
	orphans := 0
	for i := range seeds {
		if seeds[i].attachedTo = held.of(seeds[i].Node, seeds[i].VolID); seeds[i].attachedTo == "" {
			orphans++
		}
	}
	if orphans == 0 {
		return 0, nil
	}
	why, err := b.listingIncomplete(ctx)
	if err != nil {
		return 0, wrap("list", "", 0, err)
	}
	for i := range seeds {
		if seeds[i].attachedTo == "" {
			seeds[i].Unproved = why
		}
	}
	return orphans, nil
}

// unprovedOf is the Unproved of the first orphan, for the log.
func unprovedOf(seeds []unusedSeed) string {
	for _, s := range seeds {
		if s.attachedTo == "" {
			return s.Unproved
		}
	}
	return ""
}

// SeedVisibilityPrivilege is what the API token needs for a seed no VM it sees uses to be
// proved an orphan (decision: orphan-visibility).
const SeedVisibilityPrivilege = "VM.Audit on /vms"

// listingIncomplete says why the cluster listing may leave out a VM that uses a seed, ""
// when it cannot: the listing is complete only when the token's effective privileges on /vms
// hold VM.Audit propagated (GET /access/permissions?path=/vms, fact: access-permissions);
// not when they lack it, hold it unpropagated, or the read fails (decision:
// orphan-visibility, which also says what this cannot see). ctx ending fails the call.
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

// seedUse is what the listing and the configs read say about the seeds: the VMs' names,
// the seed volumes VMs' ide2 name
// (vmSeed) and the name/uid pairs their marks carry, by the VMs named like a seed; and
// every ISO volume on any drive of any VM read, with the first VM (by VMID) that has it.
type seedUse struct {
	names      map[string]bool // every listed QEMU VM's name, from the listing
	vols, uids map[string]bool
	drives     map[string]string // "<node>|<volume id or isoPathKey>" and "|<...>" (any node) -> "VM <vmid> (<name>) as <drive>"
}

// byItsVM says whether a VM of s's name may boot from s: it has s on ide2, or its mark
// carries s's uid; or a VM is named like the whole prefix of s's file (the <name>-seed.iso
// of a VM named <name>-<uid>).
func (u seedUse) byItsVM(s Seed) bool {
	_, file, _ := strings.Cut(s.VolID, ":iso/")
	return u.names[strings.TrimSuffix(file, seedSuffix)] || u.vols[s.VolID] || u.uids[s.Name+"/"+s.UID]
}

// seedReaders splits the listed QEMU VMs in two, each by VMID: named is the VMs named like
// a seed in perNode, others the rest.
func seedReaders(res []pveapi.Resource, perNode [][]Seed) (named, others []pveapi.Resource) {
	names := map[string]bool{}
	for _, seeds := range perNode {
		for _, s := range seeds {
			names[s.Name] = true
		}
	}
	for _, r := range res {
		switch {
		case r.Type != "qemu":
		case r.Name != "" && names[r.Name]:
			named = append(named, r)
		default:
			others = append(others, r)
		}
	}
	byVMID := func(a, b pveapi.Resource) int { return a.VMID - b.VMID }
	slices.SortFunc(named, byVMID)
	slices.SortFunc(others, byVMID)
	return named, others
}

// readSeedUse reads what each VM in vms uses (readVMUse, ListConcurrency at a time) and
// adds it to use. A VM gone meanwhile is passed; any other failed read fails the call.
func (b *Backend) readSeedUse(ctx context.Context, op string, vms []pveapi.Resource, use *seedUse) error {
	var firstErr error
	err := eachRead(ctx, b, vms, b.readVMUse, func(r pveapi.Resource, u vmUse, err error) bool {
		switch {
		case err == nil:
		case isNotExist(err):
			return true
		default:
			firstErr = apiErrorf(op, err, "reading the config of VMID %d on node %s to tell which seed ISO it uses", r.VMID, r.Node)
			return false
		}
		p := u.cfg
		for _, cfg := range []map[string]string{p.WithPending(), p.Current} {
			if v, ok := vmSeed(r.Name, cfg); ok {
				use.vols[v.volid()] = true
			}
			if m, ok := markedAny(cfg); ok && m.UID != "" {
				use.uids[r.Name+"/"+m.UID] = true
			}
		}
		use.addVM(r, u)
		return true
	})
	if firstErr == nil && err != nil {
		firstErr = apiErrorf(op, err, "reading the configs of the VMs that may use a seed ISO")
	}
	return firstErr
}

// vmUse is what one VM's config file says of the volumes it uses: its current values with
// its pending section (GET .../pending), and each snapshot section by name.
type vmUse struct {
	cfg   pveapi.PendingConfig
	snaps map[string]map[string]string
}

// readVMUse reads what the VM at vmid on node uses (decision: seed-in-use): its config with
// the pending section (GET .../pending, so that a drive whose removal waits for a restart
// still counts) and every snapshot's drives, since a rollback makes them the VM's again and
// nothing else shows which VMs have snapshots (TestSeedUse_snapshotRequestCost). A snapshot
// deleted between its listing and its read fails the call: a seed is never deleted unproved.
func (b *Backend) readVMUse(ctx context.Context, node string, vmid int) (vmUse, error) {
	p, err := b.api.VMPending(ctx, node, vmid)
	if err != nil {
		return vmUse{}, err
	}
	snaps, err := b.readSnapshotSections(ctx, node, vmid)
	return vmUse{cfg: p, snaps: snaps}, err
}

// readSnapshotSections reads the VM's snapshot sections by name (nil when it has none).
func (b *Backend) readSnapshotSections(ctx context.Context, node string, vmid int) (map[string]map[string]string, error) {
	snaps, err := b.api.VMSnapshots(ctx, node, vmid)
	if err != nil {
		return nil, wrapMsg("listing its snapshots", err)
	}
	var out map[string]map[string]string
	for _, s := range snaps {
		if s.Name == "current" {
			continue
		}
		cfg, err := b.api.VMSnapshotConfig(ctx, node, vmid, s.Name)
		if err != nil {
			return nil, wrapMsg("reading its snapshot "+s.Name, err)
		}
		if out == nil {
			out = map[string]map[string]string{}
		}
		out[s.Name] = cfg
	}
	return out, nil
}

// addVM records the ISO volumes on the drives of the VM r that u tells of: current and
// pending (addPendingDrives), and in each snapshot section, named by the VM's current name
// (a snapshot section holds the name the VM had when it was taken, or none).
func (u *seedUse) addVM(r pveapi.Resource, vu vmUse) {
	u.addPendingDrives(r, vu.cfg)
	name := vu.cfg.WithPending()["name"]
	if name == "" {
		name = r.Name
	}
	for _, s := range slices.Sorted(maps.Keys(vu.snaps)) {
		cfg := vu.snaps[s]
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			if isDriveKey(k) {
				u.addDrive(r, name, k+" in its snapshot "+s, cfg[k])
			}
		}
	}
}

// addPendingDrives records the ISO volumes on the drives of the VM r, as addDrives does,
// from both its config with the pending values applied and its current one: a drive whose
// removal or replacement is pending still holds its volume until the VM restarts, and is
// named so.
func (u *seedUse) addPendingDrives(r pveapi.Resource, p pveapi.PendingConfig) {
	cfg := p.WithPending()
	u.addDrives(r, cfg)
	for _, k := range slices.Sorted(maps.Keys(p.Current)) {
		if !isDriveKey(k) || driveVolume(cfg[k]) == driveVolume(p.Current[k]) {
			continue
		}
		u.addDrive(r, cfg["name"], k+" until it restarts (its removal is pending)", p.Current[k])
	}
}

// addDrives records the ISO volumes on the drives (ide, sata, scsi, virtio; CD-ROM or not)
// of the VM r whose config is cfg, unless a VM read before has them.
func (u *seedUse) addDrives(r pveapi.Resource, cfg map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if isDriveKey(k) {
			u.addDrive(r, cfg["name"], k, cfg[k])
		}
	}
}

// addDrive records the ISO volume drive names, by volume id or by absolute path
// (isoPathKey), on the VM r named name as what, unless a VM read before has it.
func (u *seedUse) addDrive(r pveapi.Resource, name, what, drive string) {
	vol := driveVolume(drive)
	if key, ok := isoPathKey(vol); ok {
		what += " (by path " + vol + ")"
		vol = key
	} else if _, ok := parseISOVol(vol); !ok {
		return
	}
	for _, key := range []string{r.Node + "|" + vol, "|" + vol} {
		if u.drives[key] == "" {
			u.drives[key] = fmt.Sprintf("VM %d (%s) as %s", r.VMID, name, what)
		}
	}
}

// isDriveKey reports a config key of a disk or CD-ROM drive: ide0-3, sata0-5, scsi0-30,
// virtio0-15 (qemu-server PVE/QemuServer/Drive.pm, the drive buses).
func isDriveKey(k string) bool {
	for _, bus := range []string{"ide", "sata", "scsi", "virtio"} {
		if n, ok := strings.CutPrefix(k, bus); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}

// ctimeOf is a volume's ctime (seconds since the epoch) as a time; the zero time when the
// storage did not report one.
func ctimeOf(sec int64) time.Time {
	if sec <= 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// seedsNamedBy lists, sorted, the seed ISOs (this provider's naming, seedName) the VM at
// vmid on node names on any drive, in its current values, its pending section or any
// snapshot section (readVMUse): by volume id, or by absolute path as the path itself. The
// clean-up asks it before deleting a half-made VM with its seed. A failed read is returned
// as it is (isNotExist: the VM is gone).
func (b *Backend) seedsNamedBy(ctx context.Context, node string, vmid int) ([]string, error) {
	u, err := b.readVMUse(ctx, node, vmid)
	if err != nil {
		return nil, err
	}
	found := map[string]bool{}
	add := func(cfg map[string]string) {
		for k, v := range cfg {
			if !isDriveKey(k) {
				continue
			}
			vol := driveVolume(v)
			if _, ok := isoPathKey(vol); ok {
				if _, _, ok := seedFileName(path.Base(vol)); ok {
					found[vol] = true
				}
			} else if _, _, ok := seedName(vol); ok {
				found[vol] = true
			}
		}
	}
	add(u.cfg.Current)
	add(u.cfg.WithPending())
	for _, s := range u.snaps {
		add(s)
	}
	return slices.Sorted(maps.Keys(found)), nil
}
