package proxmox

import (
	"context"
	"sync"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// listingCache shares one GET /cluster/resources among every read within
// Budgets.ListingTTL, and coalesces concurrent callers into one request
// (singleflight-style). The shared slice must not be modified by callers.
//
// gen counts invalidations: a listing is stored only if no invalidation happened since it
// was requested (its answer may predate the change), and an invalidation detaches the
// request in flight so that later readers ask anew.
type listingCache struct {
	mu     sync.Mutex
	res    []pveapi.Resource
	at     int64 // clock time (UnixNano) of the cached listing; 0: none
	gen    uint64
	flight *listingFlight
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
				c.res, c.at = res, b.clock.Now().UnixNano()
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
				c.res, c.at = res, b.clock.Now().UnixNano()
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
