package proxmox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestListing_concurrentGetsShareOneRequest(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	release := make(chan struct{})
	h.f.onCall("ClusterResources", func(ctx context.Context, _ fakeCall) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := h.b.Get(h.ctx, ID{VMID: testVMID0, Name: testName}, GetOptions{AnyOwner: true})
			errs <- err
		})
	}
	waitFor(t, func() bool {
		h.b.listings.mu.Lock()
		defer h.b.listings.mu.Unlock()
		return h.b.listings.flight != nil && h.b.listings.flight.waiters == n
	})
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := h.f.calls("ClusterResources"); got != 1 {
		t.Errorf("%d listings for %d concurrent Gets, want 1", got, n)
	}
}

// waitFor spins (yielding) until cond holds; it synchronises goroutines, it times nothing.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestListing_withinTTLServedFromCache(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	id := ID{VMID: testVMID0, Name: testName}
	h.b.invalidateListing() // after a write of ours: no walk listing (TestListing_walk*)
	for range 5 {
		if _, err := h.b.Get(h.ctx, id, GetOptions{AnyOwner: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.f.calls("ClusterResources"); got != 1 {
		t.Errorf("%d listings within the TTL, want 1", got)
	}
	h.clock.advance(h.b.cfg.Budgets.ListingTTL)
	if _, err := h.b.Get(h.ctx, id, GetOptions{AnyOwner: true}); err != nil {
		t.Fatal(err)
	}
	if got := h.f.calls("ClusterResources"); got != 2 {
		t.Errorf("%d listings after the TTL, want 2", got)
	}
}

func TestListing_freshBypassesTheCache(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	id := ID{VMID: testVMID0, Name: testName}
	for range 3 {
		if _, err := h.b.Get(h.ctx, id, GetOptions{FreshListing: true, AnyOwner: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.f.calls("ClusterResources"); got != 3 {
		t.Errorf("%d listings for 3 fresh Gets, want 3", got)
	}
}

func TestListing_failureIsNotCached(t *testing.T) {
	h := newHarness(t)
	h.f.failNext("ClusterResources", fixtureErr("err_595"))
	if _, err := h.b.listing(h.ctx, false); err == nil {
		t.Fatal("want the 595")
	}
	if _, err := h.b.listing(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	if got := h.f.calls("ClusterResources"); got != 2 {
		t.Errorf("%d listings, want 2", got)
	}
}

func TestListing_cancelledWaiterReturnsPromptlyOthersUnaffected(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	h.f.onCall("ClusterResources", func(ctx context.Context, _ fakeCall) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	ctx1, cancel1 := context.WithCancel(h.ctx)
	r1, r2 := make(chan error, 1), make(chan error, 1)
	go func() { _, err := h.b.listing(ctx1, false); r1 <- err }()
	go func() { _, err := h.b.listing(h.ctx, false); r2 <- err }()
	waitFor(t, func() bool {
		h.b.listings.mu.Lock()
		defer h.b.listings.mu.Unlock()
		return h.b.listings.flight != nil && h.b.listings.flight.waiters == 2
	})
	cancel1()
	if err := <-r1; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	close(release)
	if err := <-r2; err != nil {
		t.Errorf("the other waiter: %v", err)
	}
}

func TestKeyedLock_serialisesOneKeyAndCleansUp(t *testing.T) {
	var k keyedLock
	ctx := context.Background()
	unlockA, err := k.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := k.lock(ctx, "b") // another key is independent
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		u, _ := k.lock(ctx, "a")
		got <- u
	}()
	select {
	case <-got:
		t.Fatal("second holder of a got the lock while the first held it")
	case <-time.After(20 * time.Millisecond):
	}
	unlockA()
	(<-got)()
	unlockB()
	if k.size() != 0 {
		t.Errorf("%d keys left after every release, want 0", k.size())
	}
}

func TestKeyedLock_cancelledContextGivesUp(t *testing.T) {
	var k keyedLock
	unlock, _ := k.lock(context.Background(), "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := k.lock(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
	unlock()
	if k.size() != 0 {
		t.Errorf("%d keys left, want 0", k.size())
	}
}

// TestListing_changesInvalidateTheCache: after an Update, a Delete or a Create, the next
// cached Get lists again (the provider's post-update wait relies on it: its first poll
// must see the VM as the change left it, not as the listing before the change had it).
func TestListing_changesInvalidateTheCache(t *testing.T) {
	id := ID{VMID: testVMID0, Name: testName}
	for _, tc := range []struct {
		name    string
		change  func(h *harness) error
		wantErr bool // the change fails: the cache must go all the same
		gone    bool
	}{
		{"update", func(h *harness) error { return h.b.Update(h.ctx, id, Changes{UID: testUID, Cores: ptr(4)}) }, false, false},
		{"update that fails", func(h *harness) error {
			h.f.failNext("SetVMConfig", fixtureErr("err_bad_param"))
			return h.b.Update(h.ctx, id, Changes{UID: testUID, Cores: ptr(4)})
		}, true, false},
		{"delete", func(h *harness) error { return h.b.DeleteOwned(h.ctx, id, "", testUID) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			if _, err := h.b.Get(h.ctx, id, GetOptions{AnyOwner: true}); err != nil {
				t.Fatal(err)
			}
			if err := tc.change(h); (err != nil) != tc.wantErr {
				t.Fatalf("%s: err %v, want an error: %v", tc.name, err, tc.wantErr)
			}
			before := h.f.calls("ClusterResources")
			_, err := h.b.Get(h.ctx, id, GetOptions{AnyOwner: true})
			if tc.gone != errors.Is(err, ErrNotFound) || (!tc.gone && err != nil) {
				t.Fatalf("Get after the %s: %v", tc.name, err)
			}
			if got := h.f.calls("ClusterResources") - before; got != 1 {
				t.Errorf("%d listings for the Get after the %s, want 1 (the cache invalidated)", got, tc.name)
			}
		})
	}
}

// holdFirstListing holds the first ClusterResources call until release is closed.
func holdFirstListing(h *harness) chan struct{} {
	release := make(chan struct{})
	var once sync.Once
	h.f.onCall("ClusterResources", func(ctx context.Context, _ fakeCall) error {
		held := false
		once.Do(func() { held = true })
		if !held {
			return nil
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return release
}

// A listing requested before an invalidation answers from before the change: it must not
// be stored when it arrives after the invalidation.
func TestListing_answerRequestedBeforeAnInvalidationIsNotStored(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "fresh"}[fresh], func(t *testing.T) {
			h := newHarness(t)
			release := holdFirstListing(h)
			old := make(chan error, 1)
			go func() { _, err := h.b.listing(h.ctx, fresh); old <- err }()
			waitFor(t, func() bool { return h.f.calls("ClusterResources") == 1 })
			h.b.invalidateListing()
			close(release)
			if err := <-old; err != nil {
				t.Fatal(err)
			}
			if _, err := h.b.listing(h.ctx, false); err != nil {
				t.Fatal(err)
			}
			if got := h.f.calls("ClusterResources"); got != 2 {
				t.Errorf("%d listings, want 2: the read after the invalidation was served the answer requested before it", got)
			}
		})
	}
}

// A read after an invalidation does not join a request made before it.
func TestListing_readAfterAnInvalidationDoesNotJoinAnOlderRequest(t *testing.T) {
	h := newHarness(t)
	release := holdFirstListing(h)
	defer close(release)
	go func() { _, _ = h.b.listing(h.ctx, false) }()
	waitFor(t, func() bool { return h.f.calls("ClusterResources") == 1 })
	h.b.invalidateListing()
	got := make(chan error, 1)
	go func() { _, err := h.b.listing(h.ctx, false); got <- err }()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read after the invalidation waited for the request made before it")
	}
	if n := h.f.calls("ClusterResources"); n != 2 {
		t.Errorf("%d listings, want 2", n)
	}
}

// A plan's reads share the walk's listing (the first of the provider instance) past
// ListingTTL, up to ListingWalk: a plan of a hundred VMs whose reads outlast 2 s lists
// the cluster once.
func TestListing_walkListingServesReadsPastTheTTL(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.ourRunningVM(testVMID0+1, "proxy-b")
	id := ID{VMID: testVMID0, Name: testName}
	if _, err := h.b.Get(h.ctx, id, GetOptions{UID: testUID}); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(h.b.cfg.Budgets.ListingTTL + time.Second)
	vm, err := h.b.Get(h.ctx, ID{VMID: testVMID0 + 1, Name: "proxy-b"}, GetOptions{UID: testUID})
	if err != nil {
		t.Fatal(err)
	}
	if vm.Node != "pv1-1" {
		t.Errorf("node %q, want pv1-1", vm.Node)
	}
	if got := h.f.calls("ClusterResources"); got != 1 {
		t.Errorf("%d listings for a walk's reads %s apart, want 1", got, h.b.cfg.Budgets.ListingTTL+time.Second)
	}
	// Past ListingWalk the walk's listing is done with.
	h.clock.advance(h.b.cfg.Budgets.ListingWalk)
	if _, err := h.b.Get(h.ctx, id, GetOptions{UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if got := h.f.calls("ClusterResources"); got != 2 {
		t.Errorf("%d listings past ListingWalk, want 2", got)
	}
}

// A write of ours ends the walk's listing: the reads after it use listings younger than
// ListingTTL again.
func TestListing_walkListingEndsAtAnInvalidation(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	id := ID{VMID: testVMID0, Name: testName}
	if _, err := h.b.Get(h.ctx, id, GetOptions{UID: testUID}); err != nil {
		t.Fatal(err)
	}
	h.b.invalidateListing()
	for range 2 {
		if _, err := h.b.Get(h.ctx, id, GetOptions{UID: testUID}); err != nil {
			t.Fatal(err)
		}
		h.clock.advance(h.b.cfg.Budgets.ListingTTL)
	}
	if got := h.f.calls("ClusterResources"); got != 3 {
		t.Errorf("%d listings, want 3 (the walk's, then one per ListingTTL after the invalidation)", got)
	}
}

// An aged walk listing never makes a VM gone or misplaced: a VMID it does not list, or a
// config gone from the node it names, is looked up in a listing younger than ListingTTL.
func TestListing_agedWalkListingIsConfirmedBeforeNotFound(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.ourRunningVM(testVMID0, testName)
	h.ourRunningVM(testVMID0+1, "proxy-b")
	h.ourRunningVM(testVMID0+2, "proxy-c")
	if _, err := h.b.Get(h.ctx, ID{VMID: testVMID0, Name: testName}, GetOptions{UID: testUID}); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(h.b.cfg.Budgets.ListingTTL + time.Second)
	// Migrated outside Terraform after the walk's listing: its config is on pv1-2 now.
	h.f.mutate(testVMID0+1, func(v *fakeVM) { v.Node = "pv1-2" })
	vm, err := h.b.Get(h.ctx, ID{VMID: testVMID0 + 1, Name: "proxy-b"}, GetOptions{UID: testUID})
	if err != nil {
		t.Fatalf("a VM moved after the walk's listing: %v", err)
	}
	if vm.Node != "pv1-2" {
		t.Errorf("node %q, want pv1-2 (from the confirming listing)", vm.Node)
	}
	if got := h.f.calls("ClusterResources"); got != 2 {
		t.Errorf("%d listings, want 2 (the walk's, then one confirming the move)", got)
	}
	// Gone: NotFound, once a listing asked for after its config was found gone says so
	// (the cached one, younger than ListingTTL, still lists it).
	h.f.remove(testVMID0 + 2)
	_, err = h.b.Get(h.ctx, ID{VMID: testVMID0 + 2, Name: "proxy-c"}, GetOptions{UID: testUID})
	assertClass(t, err, pveapi.NotFound)
	if got := h.f.calls("ClusterResources"); got != 3 {
		t.Errorf("%d listings, want 3", got)
	}
}

// A VM migrated after a listing younger than ListingTTL was answered (the HA manager, or
// by hand, during a plan) is read on its new node, not reported deleted: a config gone from
// the node a listing names is NotFound only once a listing asked for after that says so.
func TestListing_youngListingIsConfirmedBeforeNotFound(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	h.ourRunningVM(testVMID0, testName)
	h.ourRunningVM(testVMID0+1, "proxy-b")
	if _, err := h.b.Get(h.ctx, ID{VMID: testVMID0, Name: testName}, GetOptions{UID: testUID}); err != nil {
		t.Fatal(err)
	}
	h.f.mutate(testVMID0+1, func(v *fakeVM) { v.Node = "pv1-2" })
	vm, err := h.b.Get(h.ctx, ID{VMID: testVMID0 + 1, Name: "proxy-b"}, GetOptions{UID: testUID})
	if err != nil {
		t.Fatalf("a VM moved after a young listing: %v", err)
	}
	if vm.Node != "pv1-2" {
		t.Errorf("node %q, want pv1-2", vm.Node)
	}
	if got := h.f.calls("ClusterResources"); got != 2 {
		t.Errorf("%d listings, want 2 (the walk's, then one after the config was found gone)", got)
	}
}

// A VM made after the walk's listing (not by us: our writes end the walk) is found once
// the listing is aged, not reported gone.
func TestListing_agedWalkListingFindsAVMItDidNotList(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	if _, err := h.b.Get(h.ctx, ID{VMID: testVMID0, Name: testName}, GetOptions{UID: testUID}); err != nil {
		t.Fatal(err)
	}
	h.clock.advance(h.b.cfg.Budgets.ListingTTL)
	h.ourRunningVM(testVMID0+1, "proxy-b") // restored from a backup, say
	if _, err := h.b.Get(h.ctx, ID{VMID: testVMID0 + 1, Name: "proxy-b"}, GetOptions{UID: testUID}); err != nil {
		t.Fatalf("a VM the aged walk listing did not list: %v", err)
	}
}
