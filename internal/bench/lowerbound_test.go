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

func TestPath_followsTheCriticalPath(t *testing.T) {
	d := pvesim.DefaultDurations
	s := time.Second
	for _, c := range []struct {
		name string
		op   Op
		o    PathOptions
		want time.Duration
	}{
		{"create: max(clone 2, upload 1) + resize 1 + start 1 + agent install 42 + DHCP 3", OpCreate, PathOptions{Resize: true}, 49 * s},
		{"create without a resize", OpCreate, PathOptions{}, 48 * s},
		{"update: stop 1 + start 1 + agent boot 8 + DHCP 3", OpUpdate, PathOptions{Resize: true}, 13 * s},
		{"update with a graceful restart: shutdown 4 + start 1 + agent boot 8 + DHCP 3", OpUpdate, PathOptions{Shutdown: 4 * s}, 16 * s},
		{"destroy: max(stop 1, seed delete 0.5) + destroy 1", OpDestroy, PathOptions{}, 2 * s},
		{"plan", OpPlan, PathOptions{Resize: true}, 0},
	} {
		if got := Path(c.op, d, c.o); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	// The longer of two overlapped steps counts.
	d.Upload = 5 * s
	if got := Path(OpCreate, d, PathOptions{Resize: true}); got != 52*s {
		t.Errorf("an upload longer than the clone: %s, want 52s", got)
	}
	d.VolumeDelete = 3 * s
	if got := Path(OpDestroy, d, PathOptions{}); got != 4*s {
		t.Errorf("a seed delete longer than the stop: %s, want 4s", got)
	}
}

func TestLowerBound_wavesOverSpeed(t *testing.T) {
	d := pvesim.DefaultDurations
	rs := PathOptions{Resize: true}
	if got := LowerBound(OpCreate, 50, 10, d, rs, 10); got != 24500*time.Millisecond {
		t.Errorf("create 50 at P=10, speed 10: %s, want 24.5s (5 waves of 4.9s)", got)
	}
	if got := LowerBound(OpCreate, 1, 10, d, rs, 1); got != 49*time.Second {
		t.Errorf("create 1 at speed 1: %s, want 49s", got)
	}
	if got := LowerBound(OpDestroy, 10, 1, d, PathOptions{}, 20); got != time.Second {
		t.Errorf("destroy 10 at P=1, speed 20: %s, want 1s", got)
	}
	if got := LowerBound(OpPlan, 100, 10, d, rs, 10); got != 0 {
		t.Errorf("plan: %s, want 0", got)
	}
}

// TestLowerBound_createWithMigration: a create that clones on the template's node and
// migrates waits through the migration too (as long as a clone in the simulator); other
// operations do not change.
func TestLowerBound_createWithMigration(t *testing.T) {
	d := pvesim.DefaultDurations
	mig := PathOptions{Resize: true, Migrate: true}
	if got := LowerBound(OpCreate, 1, 10, d, mig, 1); got != 51*time.Second {
		t.Errorf("create with a migration: %s, want 51s (49s + the 2s migration)", got)
	}
	if got := LowerBound(OpUpdate, 1, 10, d, mig, 1); got != 13*time.Second {
		t.Errorf("update: %s, want 13s", got)
	}
}
