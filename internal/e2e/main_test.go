// Package e2e is the reliability suite: the real terraform CLI driving the real
// provider binary against an in-process Proxmox simulator, under faults, interrupts,
// crashes, concurrency, bad input, and with sentinel secrets. It runs when TF_ACC is set
// (make test, make reliability); E2E_SOAK=1 runs many more trials. The figures table is
// printed at the end of the run.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

var (
	soakFlag = flag.Bool("soak", false, "run the long soak (same as E2E_SOAK=1)")
	seedFlag = flag.Uint64("e2e.seed", 0, "seed of the random points (0: from E2E_SEED or the clock)")
)

// provider is the binary built once by TestMain (nil without TF_ACC).
var provider *tfrun.Provider

// runSeed seeds every random choice of the run; printed so a failure can be replayed.
var runSeed uint64

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("TF_ACC") == "" {
		os.Exit(m.Run()) // every test skips
	}
	runSeed = *seedFlag
	if runSeed == 0 {
		if v, err := strconv.ParseUint(os.Getenv("E2E_SEED"), 10, 64); err == nil {
			runSeed = v
		}
	}
	if runSeed == 0 {
		runSeed = uint64(time.Now().UnixNano())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	p, err := tfrun.Build(ctx, tfrun.BuildOptions{Race: os.Getenv("E2E_RACE") != ""})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	provider = p
	fmt.Printf("e2e: provider built at %s; seed %d (E2E_SEED=%d replays); soak %t\n", p.Binary, runSeed, runSeed, soak())
	code := m.Run()
	fmt.Print(figures.table())
	if path := os.Getenv("E2E_REPORT"); path != "" {
		_ = os.WriteFile(path, []byte(figures.table()), 0o644)
	}
	_ = p.Remove()
	if release.dist != "" {
		_ = os.RemoveAll(release.dist)
	}
	os.Exit(code)
}

// soak reports whether the long run was asked for.
func soak() bool { return *soakFlag || os.Getenv("E2E_SOAK") != "" }

// trials picks the default or the soak count.
func trials(def, soakN int) int {
	if soak() {
		return soakN
	}
	return def
}

// needTF skips the test without TF_ACC.
func needTF(t *testing.T) {
	t.Helper()
	if provider == nil {
		t.Skip("TF_ACC is not set: the end-to-end suite drives the real terraform binary")
	}
}
