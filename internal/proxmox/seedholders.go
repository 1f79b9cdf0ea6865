package proxmox

import (
	"context"
	"sync"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// holderCache is the configs of other VMs a destroy's seed sweep read to tell whether one of
// them has a seed on a drive (decision: seed-sweep, decision: seed-in-use), kept for
// holderTTL per VMID and node and shared by the destroys of one provider instance
// (concurrent ones wait for one read of a VM): a destroy of N VMs on one node would
// otherwise read every other VM's config on each destroy. The listing the destroys take is
// younger than ListingTTL (othersListing): a VM made or moved since a config was kept is
// read again; a drive attached by hand to a VM within holderTTL is what the cache can miss,
// the window a walk's listing has too (decision: shared-listing).
type holderCache struct {
	mu     sync.Mutex
	m      map[int]*heldConfig
	shared map[string]heldShared // "<node>|<storage>"
	// destroyed is when each VMID's destroy by this provider instance ended (clock
	// UnixNano): a listing answered before then names a VM that holds nothing now.
	destroyed map[int]int64
}

// holderTTL is how long a holder read serves the destroys of one provider instance: the
// walk's listing's Budgets.ListingWalk (10 s, the listing's own lag, fact: listing-lag),
// so that a fleet's destroys read each other VM about once per walk, not once per
// ListingTTL: the reads per destroy then stay flat as the fleet grows.
func (b *Backend) holderTTL() time.Duration {
	return max(b.cfg.Budgets.ListingWalk, b.cfg.Budgets.ListingTTL)
}

// destroyedVM records that this provider instance destroyed vmid now.
func (c *holderCache) destroyedVM(vmid int, at int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.destroyed == nil {
		c.destroyed = map[int]int64{}
	}
	c.destroyed[vmid] = at
}

// destroyedSince says whether this provider instance destroyed vmid after at (a listing's
// answer time): the listing's entry for it is a VM that is gone.
func (c *holderCache) destroyedSince(vmid int, at int64) bool {
	if c == nil || at == 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.destroyed[vmid]
	return ok && d > at
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

// heldConfig is one VM's config read (GET .../pending: its current values and its pending
// section, as the orphan scan reads it, readSeedUse), or the read in flight (done open).
type heldConfig struct {
	node string
	at   time.Time
	done chan struct{}
	cfg  pveapi.PendingConfig
	err  error
}

// holderConfig is r's config with its pending section, from a read younger than holderTTL
// on r's node, or read now. A failed read is not kept.
func (b *Backend) holderConfig(ctx context.Context, r pveapi.Resource) (pveapi.PendingConfig, error) {
	c := b.holders
	if c == nil {
		return b.api.VMPending(ctx, r.Node, r.VMID)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[int]*heldConfig{}
	}
	e, ok := c.m[r.VMID]
	fresh := ok && e.node == r.Node
	if fresh {
		select {
		case <-e.done:
			fresh = e.err == nil && b.clock.Now().Sub(e.at) < b.holderTTL()
		default: // in flight
		}
	}
	if !fresh {
		e = &heldConfig{node: r.Node, done: make(chan struct{})}
		c.m[r.VMID] = e
		c.mu.Unlock()
		e.cfg, e.err = b.api.VMPending(ctx, r.Node, r.VMID)
		e.at = b.clock.Now()
		close(e.done)
		return e.cfg, e.err
	}
	c.mu.Unlock()
	select {
	case <-e.done:
	case <-ctx.Done():
		return pveapi.PendingConfig{}, ctx.Err()
	}
	if e.err != nil {
		return b.api.VMPending(ctx, r.Node, r.VMID) // its reader's failure (its ctx ended) is not ours
	}
	return e.cfg, nil
}

// readHolderDrives adds to use the drives of each VM in vms, current and pending
// (addPendingDrives), from holderConfig, and of its snapshots when its config has a parent
// (readSnapshotDrives), as the orphan scan does (readSeedUse),
// ListConcurrency at a time. A VM gone meanwhile is passed; any other failed read fails
// the call, so a seed is never deleted unproved.
func (b *Backend) readHolderDrives(ctx context.Context, vms []pveapi.Resource, use *seedUse) error {
	type result struct {
		cfg pveapi.PendingConfig
		err error
	}
	out := make([]result, len(vms))
	var snapped []pveapi.Resource // the VMs whose config has a parent: they have snapshots
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
			use.addPendingDrives(r, out[i].cfg)
			if out[i].cfg.Current["parent"] != "" || out[i].cfg.Pending["parent"] != "" {
				snapped = append(snapped, r)
			}
		case isNotExist(err):
		case ctx.Err() != nil:
			return Transientf("reading the configs of the VMs that may use a seed ISO: %w", ctx.Err())
		default:
			return apiErrorf("delete", err, "reading the config of VMID %d on node %s to tell which seed ISO it uses", r.VMID, r.Node)
		}
	}
	for _, r := range snapped {
		if err := b.readSnapshotDrives(ctx, "delete", r, use); err != nil {
			return err
		}
	}
	return nil
}
