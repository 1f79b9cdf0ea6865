package proxmox

import (
	"context"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// keyedLock is a one-slot semaphore per key (decision: per-name-lock), waitable with a ctx; a key's
// entry is removed from the map once nobody holds or waits for it. A lock that must wait
// says so at INFO.
type keyedLock struct {
	mu sync.Mutex
	m  map[string]*keyedSlot
}

type keyedSlot struct {
	ch   chan struct{} // holds one token while the slot is taken
	refs int           // holders plus waiters
}

// lock takes key's slot, or returns ctx.Err() when ctx ends first. The returned func
// releases it and must be called exactly once.
func (k *keyedLock) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedSlot{}
	}
	s := k.m[key]
	if s == nil {
		s = &keyedSlot{ch: make(chan struct{}, 1)}
		k.m[key] = s
	}
	s.refs++
	k.mu.Unlock()

	release := func() {
		k.mu.Lock()
		s.refs--
		if s.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; release() }, nil
	default:
	}
	// Another operation of this provider holds the name (a create_before_destroy pair, or a
	// replacement's destroy and create): say so, since nothing else would while it lasts.
	tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox wait started", map[string]any{
		"wait": "name lock", "what": "another operation on a VM of this name in this provider to finish", "name": key,
		"budget": "the operation's timeout",
	})
	select {
	case s.ch <- struct{}{}:
		return func() { <-s.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
