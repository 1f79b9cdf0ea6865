package proxmox

import (
	"context"
	"sync"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// holderCache is the configs of other VMs a destroy's seed sweep read to tell whether one of
// them has a seed on a drive (decision: seed-sweep, decision: seed-in-use), kept for
// holderTTL per VMID, node and name and shared by the destroys of one provider instance
// (concurrent ones wait for one read of a VM): a destroy of N VMs on one node would
// otherwise read every other VM's config on each destroy. Which VMs to read comes from the
// destroy's listing, younger than ListingTTL and voided by each of our writes: a VM made
// since (at a new VMID, or at one we destroyed: forget), or listed on another node or under
// another name, is read anew (a rename the listing does not show yet is not), and
// a VM deleted since is not counted. A drive attached by hand to a VM already read, within
// holderTTL, is what the cache can miss, as is a VM deleted and made again by hand at the same
// VMID, node and name within it.
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
