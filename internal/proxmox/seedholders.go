package proxmox

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// holderCache is the configs of other VMs a destroy's seed sweep read (decision: seed-sweep,
// decision: seed-in-use), kept for holderTTL per VMID, node and name and shared by the
// destroys of one provider instance, so that destroying N VMs on a node does not read every
// other VM N times. Which VMs to read comes from the destroy's listing: a VM made, moved or
// renamed since is read anew. It can miss a drive attached by hand within holderTTL.
type holderCache struct {
	mu     sync.Mutex
	m      map[int]*heldConfig
	shared map[string]heldShared // "<node>|<storage>"
	snaps  map[int]heldSnaps     // by VMID, kept past holderTTL while the digest stays
}

// heldSnaps is a VM's snapshot sections as read when its config's digest (GET .../pending)
// was digest. The digest is the SHA-1 of the whole config file, snapshot sections included
// (qemu-server src/PVE/QemuServer.pm parse_vm_config, line 1946), so while a later read
// of the config shows the same digest on the same node the sections are the same: a
// snapshot taken, deleted or rolled back changes it.
type heldSnaps struct {
	node, digest string
	sections     map[string]map[string]string // read only
}

// holderTTL is how long a holder read serves the destroys of one provider instance:
// Budgets.ListingWalk (10 s, the age Get's reads accept of the walk's listing), not
// ListingTTL (2 s). A cost traded for that window: a fleet's destroys read each other VM
// about once per 10 s, and with ListingTTL the reads per destroy grew with the fleet
// (at parallelism 20: 1.03 configs read per VM destroyed at 100 VMs, 8.19 at 500; with
// ListingWalk 1.08 and 1.83, bench/results.md's scale rows).
func (b *Backend) holderTTL() time.Duration {
	return max(b.cfg.Budgets.ListingWalk, b.cfg.Budgets.ListingTTL)
}

// forget drops what was read of vmid (this provider instance destroyed it): a VM made at
// that VMID later is read anew, whatever its name.
func (c *holderCache) forget(vmid int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, vmid)
	delete(c.snaps, vmid)
}

// holderUse is readVMUse with the snapshot sections of c.snaps when the config's digest
// is the one they were read at (heldSnaps): a VM's snapshot list is read again only when
// its config file changed, not every holderTTL.
func (b *Backend) holderUse(ctx context.Context, c *holderCache, r pveapi.Resource) (vmUse, error) {
	p, err := b.api.VMPending(ctx, r.Node, r.VMID)
	if err != nil {
		return vmUse{}, err
	}
	digest := p.Current["digest"]
	c.mu.Lock()
	h, ok := c.snaps[r.VMID]
	c.mu.Unlock()
	if ok && digest != "" && h.node == r.Node && h.digest == digest {
		return vmUse{cfg: p, snaps: h.sections}, nil
	}
	sections, err := b.readSnapshotSections(ctx, r.Node, r.VMID)
	if err != nil {
		return vmUse{}, err
	}
	if digest != "" {
		c.mu.Lock()
		if c.snaps == nil {
			c.snaps = map[int]heldSnaps{}
		}
		c.snaps[r.VMID] = heldSnaps{node: r.Node, digest: digest, sections: sections}
		c.mu.Unlock()
	}
	return vmUse{cfg: p, snaps: sections}, nil
}

// heldShared is a storage's shared flag as a status read said it.
type heldShared struct {
	shared bool
	at     time.Time
}

// storageShared says whether storage is shared on node (StorageStatus), or whether its status
// cannot be read (then any VM may use its one volume: counted as shared). A destroy's sweep
// (cached) keeps a read answer for holderTTL, as holderConfig does; only ctx ending
// is an error.
func (b *Backend) storageShared(ctx context.Context, cached bool, node, storage string) (bool, error) {
	c, key := b.holders, node+"|"+storage
	if cached && c != nil {
		c.mu.Lock()
		e, ok := c.shared[key]
		c.mu.Unlock()
		if ok && b.clock.Now().Sub(e.at) < b.holderTTL() {
			return e.shared, nil
		}
	}
	st, err := b.api.StorageStatus(ctx, node, storage)
	if err != nil {
		if ctx.Err() != nil {
			return false, err
		}
		return true, nil
	}
	if cached && c != nil {
		c.mu.Lock()
		if c.shared == nil {
			c.shared = map[string]heldShared{}
		}
		c.shared[key] = heldShared{shared: st.Shared == 1, at: b.clock.Now()}
		c.mu.Unlock()
	}
	return st.Shared == 1, nil
}

// heldConfig is what one VM uses as the orphan scan reads it (readVMUse: its current
// values, its pending section and its snapshot sections), or the read in flight (done
// open), of the VM the listing named with node and name.
type heldConfig struct {
	node string
	name string
	at   time.Time
	done chan struct{}
	cfg  vmUse
	err  error
}

// holderConfig is what r uses (readVMUse), from a read younger than holderTTL of the VM
// the listing names as r does (node and name), or read now. A failed read is not kept.
func (b *Backend) holderConfig(ctx context.Context, r pveapi.Resource) (vmUse, error) {
	c := b.holders
	if c == nil {
		return b.readVMUse(ctx, r.Node, r.VMID)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[int]*heldConfig{}
	}
	e, ok := c.m[r.VMID]
	fresh := ok && e.node == r.Node && e.name == r.Name
	if fresh {
		select {
		case <-e.done:
			fresh = e.err == nil && b.clock.Now().Sub(e.at) < b.holderTTL()
		default: // in flight
		}
	}
	if !fresh {
		e = &heldConfig{node: r.Node, name: r.Name, done: make(chan struct{})}
		c.m[r.VMID] = e
		c.mu.Unlock()
		e.cfg, e.err = b.holderUse(ctx, c, r)
		e.at = b.clock.Now()
		close(e.done)
		return e.cfg, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.done:
	case <-ctx.Done():
		return vmUse{}, ctx.Err()
	}
	if e.err != nil {
		return b.readVMUse(ctx, r.Node, r.VMID) // its reader's failure (its ctx ended) is not ours
	}
	return e.cfg, nil
}

// readHolderDrives adds to use the drives of each VM in vms, current, pending and in its
// snapshots (addVM), from holderConfig, as the orphan scan does (readSeedUse),
// ListConcurrency at a time. A VM gone meanwhile is passed; any other failed read fails
// the call, so a seed is never deleted unproved.
func (b *Backend) readHolderDrives(ctx context.Context, vms []pveapi.Resource, use *seedUse) error {
	type result struct {
		cfg vmUse
		err error
	}
	out := make([]result, len(vms))
	sem := make(chan struct{}, max(1, b.listConcurrency()))
	var wg sync.WaitGroup
	for i, r := range vms {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i].cfg, out[i].err = b.holderConfig(ctx, r)
		})
	}
	wg.Wait()
	for i, r := range vms {
		switch err := out[i].err; {
		case err == nil:
			use.addVM(r, out[i].cfg)
		case isNotExist(err):
		case ctx.Err() != nil:
			return Transientf("reading the configs of the VMs that may use a seed ISO: %w", ctx.Err())
		default:
			return apiErrorf("delete", err, "reading the config of VMID %d on node %s to tell which seed ISO it uses", r.VMID, r.Node)
		}
	}
	return nil
}

// sweepHolders reads which VM has each seed on a drive (readSeedHolders, the configs from
// holderConfig): the VMs of the listing other than the one destroyed, and the VM now at a
// gone VM's VMID from the config settle read.
func (b *Backend) sweepHolders(ctx context.Context, sw seedSweep, st settled, seeds []seedAt) (seedHolders, error) {
	use := seedUse{names: map[string]bool{}, vols: map[string]bool{}, uids: map[string]bool{}, drives: map[string]string{}}
	atVMID := sw.vmNode == "" && st.verdict == verdictForeign && st.r.Type == "qemu" && st.cfg != nil
	if atVMID {
		use.addDrives(st.r, st.cfg)
	}
	res := st.res
	if res == nil {
		// Settled without a listing (settleOn: the state's node proved the VM ours): the
		// shared one, younger than ListingTTL, which our own destroys void, says which other
		// VMs could have a seed (a VM made since the last destroy, at a new VMID or at the one
		// destroyed, is in it; one deleted since is not).
		var err error
		if res, err = b.listing(ctx, false); err != nil {
			return seedHolders{}, apiErrorf(
				"delete",
				err,
				"listing the cluster's VMs to check that no other VM has the VM's seed ISO on a drive",
			)
		}
	}
	var vms []pveapi.Resource
	for _, r := range res {
		// The VM at a gone VM's VMID is read again with the others (its pending section:
		// settle's config read shows only the pending values).
		if r.Type == "qemu" && r.VMID != sw.skipVMID {
			vms = append(vms, r)
		}
	}
	pairs := make([]Seed, len(seeds))
	for i, s := range seeds {
		pairs[i] = Seed{Node: s.node, VolID: s.v.volid()}
	}
	held, read, err := b.seedHolderVMs(ctx, "delete", pairs, vms, &use)
	if err != nil {
		return held, err
	}
	return held, b.readHolderDrives(ctx, read, &use)
}

// ownSeeds are the seeds a VM of ours names (its mark carries uid): the one its ide2 names
// (its own, whoever made the VM: <name>-seed.iso for the proxy operator's VMs), and the one
// the caller recorded or, when none was recorded, the one this provider would have uploaded
// for uid, when it differs (ide2 was ejected or removed, or a create stopped before its
// config step). A <name>-seed.iso is deleted only when ide2 names it. Every other
// generation is the sweep's to find (decision: seed-sweep).
func (b *Backend) ownSeeds(name string, cfg map[string]string, recorded, uid string) []seedVol {
	var out []seedVol
	if v, ok := vmSeed(name, cfg); ok {
		out = append(out, v)
	}
	rec, ok := b.recordedSeed(recorded)
	if !ok && uid != "" && b.cfg.ISOStorage != "" {
		rec, ok = seedVol{storage: b.cfg.ISOStorage, file: seedFile(name, uid)}, true
	}
	if ok && !slices.Contains(out, rec) && isSeedOf(name, rec.file) && rec.file != operatorSeedFile(name) {
		out = append(out, rec)
	}
	return out
}

// Seeds in use (decision: seed-in-use). One rule keeps a seed from every delete that is not
// its own VM's destroy: a seed some VM has on a drive (ide, sata, scsi, virtio; CD-ROM or
// not; the volume as driveVolume reads it, so file= and volume= forms too) is that VM's to
// use, whatever its name (a proxy VM renamed, a clone made from one in the UI, a rescue VM),
// and is never deleted: it is reported, naming the VM. On a storage that is not shared a VM
// uses its own node's copy; on a shared one (or one whose status cannot be read) any VM
// uses the one volume. The orphan cleanup (seedsUnused) and every destroy (sweepSeeds,
// decision: seed-sweep) both ask seedHolders.of, after readSeedHolders read the configs of
// the VMs that could have one.

// seedHolders says which VM has a seed on a drive.
type seedHolders struct {
	use    *seedUse
	shared map[string]bool // "<node>|<storage>": the storage is shared, or its status is not known
}

// of is the VM that has volid on a drive as node sees it ("VM <vmid> (<name>) as <drive>"),
// by volume id or by a path of its file name (isoPathKey), "" when none does.
func (h seedHolders) of(node, volid string) string {
	scope := node
	if h.shared[node+"|"+storageOf(volid)] {
		scope = ""
	}
	if d := h.use.drives[scope+"|"+volid]; d != "" {
		return d
	}
	if v, ok := parseISOVol(volid); ok {
		return h.use.drives[scope+"|path:"+v.file] // a drive attached by path (isoPathKey)
	}
	return ""
}

// readSeedHolders reads, when seeds is not empty, whether each seed's storage is shared on
// its node, then the configs of the VMs in vms that could have one of the seeds on a drive,
// and adds their drives to use: on a storage that is not shared (a directory per node, as
// iso_storage is as a rule) a seed on node N is only N's VMs' to use, so only the VMs on the
// seeds' nodes are read; on a shared one every VM is. A config that cannot be read fails
// the call (readSeedUse), so a seed is never deleted unproved; so does ctx ending.
func (b *Backend) readSeedHolders(ctx context.Context, op string, seeds []Seed, vms []pveapi.Resource, use *seedUse) (seedHolders, error) {
	held, read, err := b.seedHolderVMs(ctx, op, seeds, vms, use)
	if err != nil {
		return held, err
	}
	return held, b.readSeedUse(ctx, op, read, use)
}

// seedHolderVMs is readSeedHolders' first half: whether each seed's storage is shared on its
// node, and the VMs of vms whose configs tell who has one of the seeds on a drive.
func (b *Backend) seedHolderVMs(
	ctx context.Context,
	op string,
	seeds []Seed,
	vms []pveapi.Resource,
	use *seedUse,
) (seedHolders, []pveapi.Resource, error) {
	held := seedHolders{use: use, shared: map[string]bool{}}
	if len(seeds) == 0 {
		return held, nil, nil
	}
	anyShared := false
	nodes := map[string]bool{}
	for _, s := range seeds {
		nodes[s.Node] = true
		key := s.Node + "|" + storageOf(s.VolID)
		if _, ok := held.shared[key]; ok {
			continue
		}
		shared, err := b.storageShared(ctx, op == "delete", s.Node, storageOf(s.VolID))
		if err != nil {
			return held, nil, apiErrorf(op, err, "reading storage %s on node %s", storageOf(s.VolID), s.Node)
		}
		held.shared[key] = shared
		anyShared = anyShared || shared
	}
	var read []pveapi.Resource
	for _, r := range vms {
		if anyShared || nodes[r.Node] {
			read = append(read, r)
		}
	}
	return held, read, nil
}

// May this seed go (decision: seed-in-use): every seed delete other than a destroy's sweep
// (which reads the same holders through its cache, sweepHolders) and the clean-up (which
// reads them for all its seeds at once, seedsUnused) goes through deleteUnheld: a seed swap's
// old seed and the leftovers of a swap cut off, a migration's source copy, the seeds of an
// interrupted create taken over. A seed is kept when any VM has it (seedHolders.of): on a
// drive, in a pending value, or in any snapshot section, by volume id or by absolute path
// (addVM, isoPathKey), the VM that asks among them (its own snapshot may name the seed a
// swap replaced). A seed kept is noted, naming the VM and the snapshot; the VM's destroy
// (the sweep, which skips the VM destroyed) deletes it when the VM goes.

// seedHoldersFor reads who holds seeds: the QEMU VMs of the cluster's listing but skipVMID
// (a VM about to be destroyed; 0: none), and self (the VM that asks, when the listing does
// not show it yet), through readSeedHolders.
func (b *Backend) seedHoldersFor(ctx context.Context, op string, seeds []Seed, self pveapi.Resource, skipVMID int) (seedHolders, error) {
	use := seedUse{names: map[string]bool{}, vols: map[string]bool{}, uids: map[string]bool{}, drives: map[string]string{}}
	if len(seeds) == 0 {
		return seedHolders{use: &use}, nil
	}
	res, err := b.listing(ctx, false)
	if err != nil {
		return seedHolders{}, apiErrorf(
			op,
			err,
			"listing the cluster's VMs to check that no VM has the seed ISO on a drive or in a snapshot",
		)
	}
	var vms []pveapi.Resource
	seen := false
	for _, r := range res {
		if r.Type != "qemu" || r.VMID == skipVMID {
			continue
		}
		seen = seen || r.VMID == self.VMID
		vms = append(vms, r)
	}
	if self.VMID != 0 && self.VMID != skipVMID && !seen {
		vms = append(vms, self)
	}
	return b.readSeedHolders(ctx, op, seeds, vms, &use)
}

// deleteUnheld deletes each seed on node that no VM holds (seedHoldersFor) and notes each
// one kept, naming who has it. A failed read deletes nothing and fails the call.
func (b *Backend) deleteUnheld(ctx context.Context, op, node string, seeds []seedVol, self pveapi.Resource, skipVMID int) error {
	if len(seeds) == 0 {
		return nil
	}
	pairs := make([]Seed, len(seeds))
	for i, v := range seeds {
		pairs[i] = Seed{Node: node, VolID: v.volid()}
	}
	held, err := b.seedHoldersFor(ctx, op, pairs, self, skipVMID)
	if err != nil {
		return err
	}
	for _, v := range seeds {
		if by := held.of(node, v.volid()); by != "" {
			noteSeedKept(ctx, node, v, by)
			continue
		}
		if err := b.deleteSeed(ctx, op, node, v); err != nil {
			return err
		}
	}
	return nil
}

// noteSeedKept is the note of a seed not deleted because by (seedHolders.of) has it.
func noteSeedKept(ctx context.Context, node string, v seedVol, by string) {
	note(ctx, "the seed ISO %s was kept on node %s: it is attached to %s, so it stays while that VM may use it (a "+
		"rollback to a snapshot boots from it); the destroy of this resource's VM deletes it, or delete it by hand with "+
		"`pvesm free %s` on node %s once no VM uses it", v.volid(), node, by, v.volid(), node)
}

// deleteSeedsOfTakenOver deletes, on node, the seeds an interrupted create left that this
// Create takes over (the VM at vmid, which it destroys): the one its ide2 names (wherever
// it is) and the one its uid would have uploaded to iso_storage, unless another VM holds
// one (deleteUnheld).
func (b *Backend) deleteSeedsOfTakenOver(ctx context.Context, node string, vmid int, name, prevUID string, cfg map[string]string) error {
	var seeds []seedVol
	if v, ok := vmSeed(name, cfg); ok && v.file != operatorSeedFile(name) {
		seeds = append(seeds, v)
	}
	if prevUID != "" {
		if v := (seedVol{storage: b.cfg.ISOStorage, file: seedFile(name, prevUID)}); !slices.Contains(seeds, v) {
			seeds = append(seeds, v)
		}
	}
	return b.deleteUnheld(ctx, "create", node, seeds, pveapi.Resource{}, vmid)
}
