// Command bench runs the provider's scale benchmark and writes a markdown table
// and a PNG plot.
//
//	go run ./internal/bench/cmd/bench                 # what `make bench` runs
//	go run ./internal/bench/cmd/bench -full           # every N at both parallelisms
//	go run ./internal/bench/cmd/bench -n 1,10 -p 10 -speed 20
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/bench"
)

func main() {
	os.Exit(mainExit())
}

// mainExit runs the command and returns its exit code, so that deferred clean-up runs
// before os.Exit.
func mainExit() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	opts := bench.DefaultOptions()
	opts.Register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if os.Getenv("BENCH_FULL") == "1" {
		opts.Full = true
	}
	if p := os.Getenv("BENCH_PEER"); p != "" && opts.Peer == "" {
		opts.Peer = p
	}
	if n := os.Getenv("BENCH_NOTE"); n != "" && opts.Note == "" {
		opts.Note = n
	}
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	start := time.Now()
	cfg.Logf = func(format string, a ...any) {
		fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
	}
	// The peer binary is checked first: a wrong path fails before an hour of scenarios.
	if opts.Baseline != "" {
		return runBaseline(ctx, opts, cfg, start, stdout)
	}
	peerErr := bench.CheckPeer(opts.Peer)
	if peerErr != nil && !errors.Is(peerErr, bench.ErrNoPeer) {
		return peerErr
	}
	if !opts.PeerOnly {
		if err := runScenarios(ctx, opts, cfg, start, stdout, stderr); err != nil {
			return err
		}
	}
	if peerErr != nil {
		reportSkip(stdout, stderr, peerErr)
		return nil
	}
	res, err := bench.RunPeer(ctx, cfg, opts.PeerConfig())
	if err != nil {
		return err
	}
	rep := bench.PeerReport{PeerResult: res, Command: opts.PeerCommandLine(), Host: host(ctx), Date: time.Now()}
	md := rep.Markdown()
	if err := bench.WritePeerSection(opts.Out, md); err != nil {
		return err
	}
	fmt.Fprint(stdout, "\n"+md)
	r := res.Ratios()
	fmt.Fprintf(stdout, "\nPeer comparison (ours/peer): apply %.2fx, destroy %.2fx, no-op plan requests %.2fx (load "+
		"%.2f -> %.2f on %d CPUs)\n",
		r.ApplyWall, r.DestroyWall, r.PlanRequests, res.LoadBefore, res.LoadAfter, res.CPUs)
	fmt.Fprintf(stderr, "wrote the peer section of %s in %s\n", opts.Out+"/results.md", time.Since(start).Round(time.Second))
	return nil
}

// runBaseline runs the comparison against an earlier build of ours (-baseline) and prints
// it, leaving results.md alone.
func runBaseline(ctx context.Context, opts bench.Options, cfg bench.Config, start time.Time, stdout io.Writer) error {
	res, err := bench.RunPeer(ctx, cfg, opts.PeerConfig())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Baseline comparison: %s, %s, load average %.2f before and %.2f after on %d CPUs, in %s\n",
		opts.PeerCommandLine(), host(ctx), res.LoadBefore, res.LoadAfter, res.CPUs, time.Since(start).Round(time.Second))
	fmt.Fprint(stdout, bench.BaselineTable(res))
	return nil
}

// reportSkip says loudly that the peer comparison did not run: on stderr and last on
// stdout, so that nobody reads an absent comparison as a passed one.
func reportSkip(stdout, stderr io.Writer, err error) {
	msg := "*** " + err.Error() + "; results.md keeps its earlier peer section, if any ***"
	fmt.Fprintln(stderr, msg)
	fmt.Fprintln(stdout, "\n"+msg)
}

// runScenarios runs the scale scenarios and writes results.md (keeping its peer section)
// and results.png.
func runScenarios(ctx context.Context, opts bench.Options, cfg bench.Config, start time.Time, stdout, stderr io.Writer) error {
	results, lists, err := bench.Run(ctx, cfg)
	if len(results) > 0 || len(lists) > 0 {
		rep := bench.Report{Results: results, Listings: lists, Config: cfg, Elapsed: time.Since(start), Command: opts.CommandLine(),
			Host: host(ctx), Date: time.Now(), Note: opts.Note}
		// A run without a peer keeps the peer section of the earlier run (it says when and
		// under which load it was measured).
		old, _ := os.ReadFile(filepath.Join(opts.Out, "results.md"))
		if werr := rep.Write(opts.Out); werr != nil {
			return errors.Join(err, werr)
		}
		if sec := bench.PeerSection(string(old)); sec != "" {
			if werr := bench.WritePeerSection(opts.Out, sec); werr != nil {
				return errors.Join(err, werr)
			}
		}
		fmt.Fprint(stdout, rep.Markdown())
		// The verdicts once more, one line each, last on the screen.
		fmt.Fprintln(stdout, "\nTargets:")
		for _, t := range rep.Targets() {
			fmt.Fprintln(stdout, "  "+t.Line())
		}
		fmt.Fprintf(stderr, "wrote %s and %s in %s\n", opts.Out+"/results.md", opts.Out+"/results.png", time.Since(start).Round(time.Second))
	}
	return err
}

// host describes the machine and the tools for the report.
func host(ctx context.Context) string {
	tf := "terraform ?"
	if out, err := exec.CommandContext(ctx, "terraform", "version", "-json").Output(); err == nil {
		var v struct {
			Version string `json:"terraform_version"`
		}
		if json.Unmarshal(out, &v) == nil && v.Version != "" {
			tf = "terraform " + v.Version
		}
	}
	return fmt.Sprintf("%d CPUs (%s/%s), %s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), tf)
}
