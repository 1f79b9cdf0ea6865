package bench

import (
	"flag"
	"io"
	"slices"
	"testing"
	"time"
)

func TestOptions_defaultScenarios(t *testing.T) {
	cfg, err := DefaultOptions().Config()
	if err != nil {
		t.Fatal(err)
	}
	// N = 1 and 5 at a real host's pace, the others at speed 5; N = 10 at parallelism 1.
	want := []Scenario{{1, 10, 1}, {5, 10, 1}, {10, 10, 5}, {50, 10, 5}, {100, 10, 5}, {10, 1, 5}}
	if !slices.Equal(cfg.Scenarios, want) {
		t.Errorf("default scenarios %v, want %v", cfg.Scenarios, want)
	}
	if len(cfg.ScaleNs) != 0 {
		t.Errorf("scale scenarios %v without -full or -scale", cfg.ScaleNs)
	}
}

func TestOptions_fullRunsEveryPair(t *testing.T) {
	o := DefaultOptions()
	o.Full = true
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := []Scenario{{1, 10, 1}, {5, 10, 1}, {10, 10, 5}, {50, 10, 5}, {100, 10, 5},
		{1, 1, 1}, {5, 1, 1}, {10, 1, 5}, {50, 1, 5}, {100, 1, 5},
		{100, 20, 10}, {500, 20, 10}} // the scale pair: N = 100 and 500 at parallelism 20
	if !slices.Equal(cfg.Scenarios, want) {
		t.Errorf("full scenarios %v, want %v", cfg.Scenarios, want)
	}
	if !slices.Equal(cfg.ScaleNs, []int{100, 500}) || cfg.ScaleP != 20 || cfg.ScaleSpeed != 10 {
		t.Errorf("scale %v P=%d speed %g", cfg.ScaleNs, cfg.ScaleP, cfg.ScaleSpeed)
	}
}

func TestOptions_scaleAlone(t *testing.T) {
	o := DefaultOptions()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs)
	if err := fs.Parse([]string{"-n", "1", "-scale", "-scale-n", "20,40", "-scale-p", "4", "-scale-speed", "50"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if want := []Scenario{{1, 10, 1}, {20, 4, 50}, {40, 4, 50}}; !slices.Equal(cfg.Scenarios, want) {
		t.Errorf("scenarios %v, want %v", cfg.Scenarios, want)
	}
}

func TestOptions_flags(t *testing.T) {
	o := DefaultOptions()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs)
	if err := fs.Parse([]string{"-n", "1,20", "-p", "5", "-speed", "40", "-single-speed", "2", "-max-in-flight", "4", "-update-shutdown", "4s"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if want := []Scenario{{1, 5, 2}, {20, 5, 40}}; !slices.Equal(cfg.Scenarios, want) || cfg.MaxInFlight != 4 || cfg.UpdateShutdown != 4*time.Second {
		t.Errorf("scenarios %v max in flight %d update shutdown %s, want %v, 4 and 4s", cfg.Scenarios, cfg.MaxInFlight, cfg.UpdateShutdown, want)
	}
	for _, bad := range [][]string{{"-n", "0"}, {"-p", "x"}, {"-n", "1,,2"}} {
		fs := flag.NewFlagSet("bench", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := DefaultOptions()
		o.Register(fs)
		if err := fs.Parse(bad); err == nil {
			t.Errorf("flags %q accepted", bad)
		}
	}
	o = DefaultOptions()
	o.Speed = 0
	if _, err := o.Config(); err == nil {
		t.Error("speed 0 accepted")
	}
	o = DefaultOptions()
	o.Ns, o.Ps = []int{100}, []int{1}
	if _, err := o.Config(); err == nil {
		t.Error("a run with every scenario skipped accepted")
	}
}
