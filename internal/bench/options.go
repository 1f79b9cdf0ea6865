package bench

import (
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options are the command's flags.
type Options struct {
	Ns, Ps []int
	// RealNs are the Ns run at SingleSpeed (a real host's pace) rather than Speed.
	RealNs []int
	// Speed is the simulator's speed factor for the other scenarios.
	Speed float64
	// SingleSpeed is the speed of the RealNs scenarios (the N = 1 targets' anchor).
	SingleSpeed float64
	// Full runs every N at every parallelism, then the scale pair; without it the
	// scenarios over FullOnly waves are skipped and the RealNs run at the first
	// parallelism only.
	Full bool
	// FullOnly: without Full, scenarios with more waves than this are skipped.
	FullOnly int
	// Scale runs ScaleNs at ScaleP and ScaleSpeed (also with Full): the growth from the
	// first to the last of them is reported.
	Scale      bool
	ScaleNs    []int
	ScaleP     int
	ScaleSpeed float64
	Latency    time.Duration
	DiskGiB    int
	MemoryMiB  int
	// MaxInFlight is the provider's max_requests_in_flight (0: its default).
	MaxInFlight int
	Out         string
	WorkDir     string
	Seed        uint64
	// UpdateShutdown: the update restarts with a graceful shutdown of this simulated
	// duration (speed 1) instead of a stop; its bound follows (Config.UpdateShutdown).
	UpdateShutdown time.Duration
	// Note is printed in bold at the top of results.md (e.g. "noisy: a shared machine").
	Note string
	// ListNs are the listing scenarios' fleet sizes (listing.go), run at Speed; ListOnly
	// runs only them.
	ListNs   []int
	ListOnly bool
	// Peer is a second provider's binary (bpg/terraform-provider-proxmox) to compare with,
	// side by side in the same run (peer.go); "" skips the comparison. PeerOnly runs only
	// it and replaces only its section of results.md. PeerN VMs at PeerP and PeerSpeed,
	// PeerRounds times.
	Peer     string
	PeerOnly bool
	// Baseline is a checkout of an earlier commit of this provider: the comparison's second
	// side is that build with our configuration, instead of the peer (PeerConfig.BaselineDir).
	Baseline   string
	PeerN      int
	PeerP      int
	PeerSpeed  float64
	PeerRounds int
}

// DefaultOptions are what `make bench` runs.
func DefaultOptions() Options {
	return Options{
		Ns: []int{1, 5, 10, 50, 100}, Ps: []int{10, 1}, RealNs: []int{1, 5},
		Speed: 5, SingleSpeed: 1, FullOnly: 10,
		ScaleNs: []int{100, 500}, ScaleP: 20, ScaleSpeed: 10,
		Latency: 10 * time.Millisecond, DiskGiB: 8, MemoryMiB: 512,
		Out: "bench", Seed: 8,
		ListNs: []int{1000, 10000},
		PeerN:  5, PeerP: 10, PeerSpeed: 1, PeerRounds: 1,
	}
}

// Register adds the flags to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.Var((*intList)(&o.Ns), "n", "comma-separated numbers of VMs")
	fs.Var((*intList)(&o.Ps), "p", "comma-separated terraform parallelisms")
	fs.Var((*intList)(&o.RealNs), "real-n", "comma-separated numbers of VMs run at -single-speed (a real host's pace) instead of -speed")
	fs.Float64Var(&o.Speed, "speed", o.Speed, "simulator speed factor for the other scenarios (simulated durations are divided by it)")
	fs.Float64Var(&o.SingleSpeed, "single-speed", o.SingleSpeed, "simulator speed factor for the -real-n scenarios (1: a real host's pace)")
	fs.BoolVar(&o.Full, "full", o.Full, "run every N at every parallelism, then the scale scenarios (also "+
		"BENCH_FULL=1); default skips scenarios of more than -full-only waves")
	fs.IntVar(&o.FullOnly, "full-only", o.FullOnly, "without -full, skip scenarios needing more than this many waves (ceil(N/P))")
	fs.BoolVar(&o.Scale, "scale", o.Scale, "run the scale scenarios (-scale-n at -scale-p and -scale-speed; -full runs them too)")
	fs.Var((*intList)(&o.ScaleNs), "scale-n", "comma-separated numbers of VMs of the scale scenarios (growth is "+
		"reported from the first to the last)")
	fs.IntVar(&o.ScaleP, "scale-p", o.ScaleP, "terraform parallelism of the scale scenarios")
	fs.Float64Var(&o.ScaleSpeed, "scale-speed", o.ScaleSpeed, "simulator speed factor of the scale scenarios")
	fs.DurationVar(&o.Latency, "latency", o.Latency, "each API request's service time at a real host's pace (divided "+
		"by the speed like the tasks)")
	fs.IntVar(&o.DiskGiB, "disk-gib", o.DiskGiB, "machine type disk size in GiB (the template's is smaller: larger "+
		"puts a resize on the create path; 0: none)")
	fs.IntVar(&o.MemoryMiB, "memory-mib", o.MemoryMiB, "memory at create in MiB (the update doubles it)")
	fs.IntVar(&o.MaxInFlight, "max-in-flight", o.MaxInFlight, "provider max_requests_in_flight (0: the provider's default)")
	fs.StringVar(&o.Out, "out", o.Out, "directory for results.md and results.png")
	fs.StringVar(&o.WorkDir, "work", o.WorkDir, "directory for the terraform workspaces, kept (default: a temporary directory, removed)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "simulator seed (0: random)")
	fs.DurationVar(&o.UpdateShutdown, "update-shutdown", o.UpdateShutdown, "the guest's graceful shutdown time at a "+
		"real host's pace in the update's restart (0: the simulator's, 4s); the update's bound is shutdown + start + agent boot + DHCP")
	fs.Var((*intList)(&o.ListNs), "list-n", "comma-separated numbers of marked VMs the listing scenarios list with "+
		"proxy_vms (and terraform query, with PROXY_TEST_TERRAFORM_LATEST)")
	fs.BoolVar(&o.ListOnly, "list-only", o.ListOnly, "run only the listing scenarios")
	fs.StringVar(&o.Peer, "peer", o.Peer, "a second provider's binary, bpg/terraform-provider-proxmox, to run the "+
		"same scenario with side by side and report ours/peer ratios (also BENCH_PEER; skipped, loudly, when not given)")
	fs.BoolVar(&o.PeerOnly, "peer-only", o.PeerOnly, "run only the peer comparison (needs -peer) and replace only its section of results.md")
	fs.StringVar(&o.Baseline, "baseline", o.Baseline, "a checkout of an earlier commit of this provider (a git "+
		"worktree): the comparison's second side is that build, with our configuration, instead of the peer (e.g. the "+
		"no-op plan's wall against the first build's); implies -peer-only, results.md untouched")
	fs.IntVar(&o.PeerN, "peer-n", o.PeerN, "number of VMs of the peer comparison")
	fs.IntVar(&o.PeerP, "peer-p", o.PeerP, "terraform parallelism of the peer comparison")
	fs.Float64Var(&o.PeerSpeed, "peer-speed", o.PeerSpeed, "simulator speed factor of the peer comparison (1: a real "+
		"host's pace; both providers poll on wall-clock intervals)")
	fs.IntVar(&o.PeerRounds, "peer-rounds", o.PeerRounds, "rounds of the peer comparison, alternating which provider "+
		"goes first (means reported)")
	fs.StringVar(&o.Note, "note", o.Note, "a line printed in bold at the top of results.md, e.g. that the machine was busy (also BENCH_NOTE)")
}

// PeerConfig is the peer comparison's shape (Binary "" when not asked for).
func (o Options) PeerConfig() PeerConfig {
	return PeerConfig{Binary: o.Peer, N: o.PeerN, P: o.PeerP, Speed: o.PeerSpeed, Rounds: o.PeerRounds, BaselineDir: o.Baseline}
}

// PeerCommandLine is how the peer comparison was asked for, for its section.
func (o Options) PeerCommandLine() string {
	if o.Baseline != "" {
		return fmt.Sprintf("-baseline %s -peer-n %d -peer-p %d -peer-speed %g -peer-rounds %d -latency %s -disk-gib %d -memory-mib %d",
			o.Baseline, o.PeerN, o.PeerP, o.PeerSpeed, o.PeerRounds, o.Latency, o.DiskGiB, o.MemoryMiB)
	}
	return fmt.Sprintf("-peer-only -peer %s -peer-n %d -peer-p %d -peer-speed %g -peer-rounds %d -latency %s -disk-gib %d -memory-mib %d",
		filepath.Base(o.Peer), o.PeerN, o.PeerP, o.PeerSpeed, o.PeerRounds, o.Latency, o.DiskGiB, o.MemoryMiB)
}

// CommandLine is how the run was asked for, for the report.
func (o Options) CommandLine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "-n %s -p %s -real-n %s -speed %g -single-speed %g -latency %s -disk-gib %d -memory-mib %d",
		joinInts(o.Ns), joinInts(o.Ps), joinInts(o.RealNs), o.Speed, o.SingleSpeed, o.Latency, o.DiskGiB, o.MemoryMiB)
	if o.MaxInFlight != 0 {
		fmt.Fprintf(&b, " -max-in-flight %d", o.MaxInFlight)
	}
	if o.UpdateShutdown != 0 {
		fmt.Fprintf(&b, " -update-shutdown %s", o.UpdateShutdown)
	}
	if len(o.ListNs) > 0 {
		fmt.Fprintf(&b, " -list-n %s", joinInts(o.ListNs))
	}
	if o.ListOnly {
		b.WriteString(" -list-only")
	}
	if o.PeerOnly {
		b.WriteString(" -peer-only")
	}
	if o.Peer != "" {
		fmt.Fprintf(&b, " -peer %s -peer-n %d -peer-p %d -peer-speed %g -peer-rounds %d", filepath.Base(o.Peer),
			o.PeerN, o.PeerP, o.PeerSpeed, o.PeerRounds)
	}
	if o.Full {
		b.WriteString(" -full")
	} else {
		fmt.Fprintf(&b, " -full-only %d", o.FullOnly)
	}
	if o.Full || o.Scale {
		fmt.Fprintf(&b, " -scale-n %s -scale-p %d -scale-speed %g", joinInts(o.ScaleNs), o.ScaleP, o.ScaleSpeed)
	}
	return b.String()
}

// Config turns the options into a run's configuration: every (P, N) pair in flag order
// (the RealNs at the first P only, at SingleSpeed, unless Full), then with Scale or Full
// the scale scenarios.
func (o Options) Config() (Config, error) {
	if err := o.validate(); err != nil {
		return Config{}, err
	}
	cfg := Config{Latency: o.Latency, DiskGiB: o.DiskGiB, MemoryMiB: o.MemoryMiB, MaxInFlight: o.MaxInFlight, WorkDir: o.WorkDir, Seed: o.Seed,
		UpdateShutdown: o.UpdateShutdown, ListNs: o.ListNs, ListSpeed: o.Speed, ListOnly: o.ListOnly, QueryTerraform: queryTerraform()}
	sc, err := o.scenarios()
	if err != nil {
		return Config{}, err
	}
	cfg.Scenarios = sc
	if o.Full || o.Scale {
		if o.ScaleP <= 0 || o.ScaleSpeed <= 0 || len(o.ScaleNs) == 0 {
			return Config{}, errors.New("-scale-n, -scale-p and -scale-speed must be positive")
		}
		for _, n := range o.ScaleNs {
			sc := Scenario{N: n, P: o.ScaleP, Speed: o.ScaleSpeed}
			if !slices.Contains(cfg.Scenarios, sc) {
				cfg.Scenarios = append(cfg.Scenarios, sc)
			}
		}
		cfg.ScaleNs, cfg.ScaleP, cfg.ScaleSpeed = o.ScaleNs, o.ScaleP, o.ScaleSpeed
	}
	if o.PeerOnly || o.Baseline != "" {
		cfg.Scenarios, cfg.ListNs = nil, nil
		return cfg, nil
	}
	if len(cfg.Scenarios) == 0 && !o.ListOnly {
		return Config{}, errors.New("no scenario left to run (see -full)")
	}
	return cfg, nil
}

// validate refuses options no run can follow.
func (o Options) validate() error {
	if o.PeerOnly && o.Peer == "" && o.Baseline == "" {
		return errors.New("-peer-only needs -peer /path/to/terraform-provider-proxmox (or BENCH_PEER)")
	}
	if len(o.Ns) == 0 || len(o.Ps) == 0 {
		return errors.New("-n and -p need at least one value")
	}
	if o.Speed <= 0 || o.SingleSpeed <= 0 {
		return errors.New("-speed and -single-speed must be positive")
	}
	return nil
}

// scenarios are the (P, N) pairs in flag order: the RealNs at the first P only, at
// SingleSpeed, unless Full; without Full, none of more than FullOnly waves.
func (o Options) scenarios() ([]Scenario, error) {
	var out []Scenario
	for i, p := range o.Ps {
		for _, n := range o.Ns {
			if n <= 0 || p <= 0 {
				return nil, fmt.Errorf("n and p must be positive (got N=%d P=%d)", n, p)
			}
			if !o.Full && Waves(n, p) > o.FullOnly {
				continue
			}
			speed := o.Speed
			if slices.Contains(o.RealNs, n) {
				if i > 0 && !o.Full {
					continue
				}
				speed = o.SingleSpeed
			}
			out = append(out, Scenario{N: n, P: p, Speed: speed})
		}
	}
	return out, nil
}

type intList []int

func (l *intList) String() string { return joinInts(*l) }

func (l *intList) Set(s string) error {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	*l = out
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
