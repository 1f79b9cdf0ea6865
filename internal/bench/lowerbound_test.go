package bench

import (
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

func TestWaves(t *testing.T) {
	for _, c := range []struct{ n, p, want int }{
		{1, 10, 1}, {10, 10, 1}, {11, 10, 2}, {50, 10, 5}, {100, 10, 10}, {100, 1, 100}, {0, 10, 0}, {5, 0, 5},
	} {
		if got := Waves(c.n, c.p); got != c.want {
			t.Errorf("Waves(%d, %d) = %d, want %d", c.n, c.p, got, c.want)
		}
	}
}

func TestPath_followsTheSimulatorsDurations(t *testing.T) {
	d := pvesim.DefaultDurations
	s := time.Second
	for _, c := range []struct {
		op     Op
		resize bool
		want   time.Duration
	}{
		{OpCreate, true, 50 * s},  // clone 2 + upload 1 + resize 1 + start 1 + agent install 42 + DHCP 3
		{OpCreate, false, 49 * s}, // no resize
		{OpUpdate, true, 13 * s},  // stop 1 + start 1 + agent boot 8 + DHCP 3
		{OpDestroy, false, 2500 * time.Millisecond},
		{OpPlan, true, 0},
	} {
		if got := Path(c.op, d, c.resize); got != c.want {
			t.Errorf("Path(%s, resize %t) = %s, want %s", c.op, c.resize, got, c.want)
		}
	}
	d.Clone = 10 * s
	if got := Path(OpCreate, d, true); got != 58*s {
		t.Errorf("a longer clone: %s, want 58s", got)
	}
}

func TestLowerBound_wavesOverSpeed(t *testing.T) {
	d := pvesim.DefaultDurations
	if got := LowerBound(OpCreate, 50, 10, d, true, false, 10); got != 25*time.Second {
		t.Errorf("create 50 at P=10, speed 10: %s, want 25s (5 waves of 5s)", got)
	}
	if got := LowerBound(OpCreate, 1, 10, d, true, false, 1); got != 50*time.Second {
		t.Errorf("create 1 at speed 1: %s, want 50s", got)
	}
	if got := LowerBound(OpDestroy, 10, 1, d, false, true, 20); got != 1250*time.Millisecond {
		t.Errorf("destroy 10 at P=1, speed 20: %s, want 1.25s", got)
	}
	if got := LowerBound(OpPlan, 100, 10, d, true, true, 10); got != 0 {
		t.Errorf("plan: %s, want 0", got)
	}
}

// TestLowerBound_createWithMigration: a create that clones on the template's node and
// migrates waits through the migration too (as long as a clone in the simulator); other
// operations do not change.
func TestLowerBound_createWithMigration(t *testing.T) {
	d := pvesim.DefaultDurations
	if got := LowerBound(OpCreate, 1, 10, d, true, true, 1); got != 52*time.Second {
		t.Errorf("create with a migration: %s, want 52s (50s + the 2s migration)", got)
	}
	if got := LowerBound(OpUpdate, 1, 10, d, true, true, 1); got != 13*time.Second {
		t.Errorf("update: %s, want 13s", got)
	}
}
