package proxmox

import (
	"context"
	"sync"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// listingCache shares one GET /cluster/resources among every read within Budgets.ListingTTL
// and coalesces concurrent callers into one request (decision: shared-listing); callers must
// not modify the shared slice. gen counts invalidations: a listing requested before one is
// not stored. walk is when the walk's first listing was stored (0: none yet, or closed by the
// first invalidation), which Get's reads may use for Budgets.ListingWalk (readListing).
type listingCache struct {
	mu     sync.Mutex
	res    []pveapi.Resource
	at     int64 // clock time (UnixNano) of the cached listing; 0: none
	gen    uint64
	flight *listingFlight
	walk   int64
	closed bool // an invalidation happened: no walk listing any more
}

// listingFlight is one request in progress; its waiters share the answer. The request
// runs detached from any one caller's ctx and is cancelled when every waiter has gone.
type listingFlight struct {
	done    chan struct{}
	res     []pveapi.Resource
	err     error
	waiters int
	cancel  context.CancelFunc
}

// listing returns the cluster's VM listing. fresh skips the cache and any request already
// in flight (Create and Delete decide on it); its answer still refreshes the cache.
func (b *Backend) listing(ctx context.Context, fresh bool) ([]pveapi.Resource, error) {
	c := b.listings
	if fresh {
		c.mu.Lock()
		gen := c.gen
		c.mu.Unlock()
		res, err := b.api.ClusterResources(ctx)
		if err == nil {
			c.mu.Lock()
			if c.gen == gen {
				c.store(res, b.clock.Now().UnixNano())
			}
			c.mu.Unlock()
		}
		return res, err
	}
	c.mu.Lock()
	if c.at != 0 && b.clock.Now().UnixNano()-c.at < int64(b.cfg.Budgets.ListingTTL) {
		res := c.res
		c.mu.Unlock()
		return res, nil
	}
	return b.listingRequest(ctx, c)
}

// readListing is the listing Get reads a VM's node from (decision: shared-listing): the
// walk's listing, the first this backend fetched, while no write of ours invalidated it
// and for at most Budgets.ListingWalk from its fetch (so a plan of a hundred VMs, whose
// reads outlast ListingTTL on a slow machine, makes one listing); else listing's, younger
// than ListingTTL. aged reports a listing served older than ListingTTL: a caller that
// finds its VMID missing or moved in it asks again with confirmListing before it answers
// NotFound, so an aged listing never makes a VM gone or misplaced.
func (b *Backend) readListing(ctx context.Context) (res []pveapi.Resource, aged bool, err error) {
	c := b.listings
	c.mu.Lock()
	if c.at != 0 && c.at == c.walk {
		age := b.clock.Now().UnixNano() - c.at
		if age < int64(max(b.cfg.Budgets.ListingWalk, b.cfg.Budgets.ListingTTL)) {
			res := c.res
			c.mu.Unlock()
			return res, age >= int64(b.cfg.Budgets.ListingTTL), nil
		}
	}
	c.mu.Unlock()
	res, err = b.listing(ctx, false)
	return res, false, err
}

// confirmListing is the listing a read that found its VMID missing or moved in an aged
// walk listing (readListing) decides on: one younger than ListingTTL, shared with the
// other reads (listing), so a walk that finds many VMs gone lists the cluster once more,
// not once per VM.
func (b *Backend) confirmListing(ctx context.Context) ([]pveapi.Resource, error) {
	c := b.listings
	c.mu.Lock()
	if c.at != 0 && b.clock.Now().UnixNano()-c.at < int64(b.cfg.Budgets.ListingTTL) {
		res := c.res
		c.mu.Unlock()
		return res, nil
	}
	if c.at == c.walk {
		// The walk's listing is aged: dropped, so that the next read asks anew.
		c.at = 0
	}
	return b.listingRequest(ctx, c)
}

// store keeps res, answered at at, as the cached listing (c.mu held); the first one while
// no invalidation happened is the walk's.
func (c *listingCache) store(res []pveapi.Resource, at int64) {
	c.res, c.at = res, at
	if c.walk == 0 && !c.closed {
		c.walk = at
	}
}

// listingRequest joins the listing request in flight, or starts one (c.mu held on entry,
// released).
func (b *Backend) listingRequest(ctx context.Context, c *listingCache) ([]pveapi.Resource, error) {
	f := c.flight
	if f == nil {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &listingFlight{done: make(chan struct{}), cancel: cancel}
		c.flight = f
		gen := c.gen
		go func() {
			res, err := b.api.ClusterResources(fctx)
			c.mu.Lock()
			f.res, f.err = res, err
			if c.flight == f {
				c.flight = nil
			}
			if err == nil && c.gen == gen {
				c.store(res, b.clock.Now().UnixNano())
			}
			c.mu.Unlock()
			cancel()
			close(f.done)
		}()
	}
	f.waiters++
	c.mu.Unlock()

	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		c.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			f.cancel()
			if c.flight == f {
				c.flight = nil
			}
		}
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// invalidateListing drops the cached listing after a change the next read must see, and
// keeps any listing requested before now out of the cache and away from later readers.
func (b *Backend) invalidateListing() {
	c := b.listings
	c.mu.Lock()
	c.at = 0
	c.gen++
	c.flight = nil
	c.walk, c.closed = 0, true
	c.mu.Unlock()
}

// findResource returns the entry at vmid, if any.
func findResource(res []pveapi.Resource, vmid int) (pveapi.Resource, bool) {
	for _, r := range res {
		if r.VMID == vmid {
			return r, true
		}
	}
	return pveapi.Resource{}, false
}
