package pvesim

import (
	"testing"
	"time"
)

// TestListing_idleCatchUpIsOneSnapshot: after an idle gap, the periodic snapshots missed
// sample a state that did not change, so advance takes one, the last due, not one per
// period: at speed 1e6 (a 10 s period is 10 µs) a one-second gap was 100,000 passes over
// every VM under the simulator's lock, and an idle minute held every request for minutes.
func TestListing_idleCatchUpIsOneSnapshot(t *testing.T) {
	s := NewForTest(t, Options{Speed: 1e6})
	if !s.snapshotting() {
		t.Fatal("the default listing takes snapshots")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	iv := s.statusInterval()
	before, next := s.status.taken, s.status.next
	now := next.Add(time.Second) // 100,000 periods of 10 µs
	s.advance(now)
	if n := s.status.taken - before; n != 1 {
		t.Errorf("%d snapshots for an idle second of %s periods, want 1", n, iv)
	}
	if !s.status.next.After(now) || s.status.next.After(now.Add(iv)) {
		t.Errorf("next snapshot at %s, want within one period after %s", s.status.next, now)
	}
}
