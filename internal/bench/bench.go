// Package bench measures the provider at scale: it drives the real terraform
// binary with the built provider against an in-process simulator (pvesim) and, for N VMs
// at a given terraform parallelism, times create, a no-op plan, an in-place memory update
// and destroy against their lower bound, counts the API requests per VM by endpoint, the
// most requests the simulator served at once and the provider process's peak RSS.
//
// Command bench (internal/bench/cmd/bench, `make bench`) runs the scenarios and writes
// bench/results.md and bench/results.png.
package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Scenario is N VMs at terraform parallelism P against a simulator at Speed.
type Scenario struct {
	N, P  int
	Speed float64
}

func (s Scenario) String() string { return fmt.Sprintf("N=%d P=%d speed=%g", s.N, s.P, s.Speed) }

// Config shapes a run.
type Config struct {
	Scenarios []Scenario
	// Latency is each API request's service time at the simulator's real pace; the
	// simulator holds every request Latency/Speed (it is a simulated duration like the
	// tasks).
	Latency time.Duration
	// DiskGiB is the machine type's disk; larger than the template's 4 GiB puts a resize
	// on the create path. 0: no resize.
	DiskGiB int
	// MemoryMiB is the memory at create; the update sets MemoryMiB*2.
	MemoryMiB int
	// MaxInFlight is the provider's max_requests_in_flight (0: its default).
	MaxInFlight int
	// ScaleNs, ScaleP and ScaleSpeed name the scale scenarios (none when ScaleNs is
	// empty): the report shows how the figures grow from the first N to the last.
	ScaleNs    []int
	ScaleP     int
	ScaleSpeed float64
	// UpdateShutdown is the guest's graceful shutdown time (speed 1) the simulator gives
	// the update's restart; 0 keeps the simulator's (Durations.Shutdown). The update's bound
	// is this shutdown + start + agent boot + DHCP.
	UpdateShutdown time.Duration
	// WorkDir holds the workspaces (empty: a temporary directory, removed at the end).
	WorkDir string
	// Seed seeds the simulator (MACs, PIDs); 0: random.
	Seed uint64
	// ListNs are the listing scenarios' numbers of marked VMs (listing.go), at ListSpeed;
	// QueryTerraform, a Terraform 1.14+ binary, adds the list resource to them ("": only
	// proxy_vms). ListOnly skips Scenarios.
	ListNs         []int
	ListSpeed      float64
	QueryTerraform string
	ListOnly       bool
	// CommandTimeout bounds each terraform command (default 30 minutes).
	CommandTimeout time.Duration
	// Logf receives progress lines (nil: none).
	Logf func(format string, args ...any)
}

// OpResult is one measured terraform command.
type OpResult struct {
	Op Op
	// Wall is the terraform command's wall time, start to exit (what a user waits).
	Wall time.Duration
	// Span is from the first resource change's start to the last one's end (for the
	// plan: the refreshes), from terraform's -json events: Wall without terraform's own
	// start-up, plan and state writing before and after.
	Span time.Duration
	// Idle is terraform's own time inside Span (idleSlots): parallelism slots it left
	// empty between one change's end and the next one's start (apply only).
	Idle time.Duration
	// LowerBound is the critical path (Path) times ceil(N/P), at the run's speed; 0 for
	// the plan.
	LowerBound time.Duration
	// Shutdown (update only) is the longest graceful shutdown task (qmshutdown) of the
	// update, and ShutdownBound its share of one VM's path (the simulated shutdown time),
	// both at the run's speed.
	Shutdown, ShutdownBound time.Duration
	// Requests counts API requests by simulator endpoint ("GET /cluster/resources"...).
	Requests map[string]int
	// MaxInFlight is the most API requests the simulator served at once.
	MaxInFlight int
	// PeakRSS is the largest VmHWM of the provider processes terraform ran, in bytes.
	PeakRSS int64
	// ProviderCPU is the CPU time (user + system) of the provider processes; TerraformCPU
	// terraform's own (both as last sampled, up to 20 ms before they ended).
	ProviderCPU, TerraformCPU time.Duration
	// Providers is how many provider processes were sampled.
	Providers int
	// Breakdown splits the mean per-VM resource time (changes only, not the plan).
	Breakdown Breakdown
	// ExitCode of terraform (plan: 0 no changes, 2 changes).
	ExitCode int
	// Completed and Errored count the changes terraform reported done and failed,
	// Refreshed the refreshes (-json events).
	Completed, Errored, Refreshed int
	// Errors are terraform's error diagnostics (and a start failure).
	Errors []string
}

// Ratio is Wall over LowerBound (0 when there is no bound).
func (o OpResult) Ratio() float64 {
	if o.LowerBound <= 0 {
		return 0
	}
	return float64(o.Wall) / float64(o.LowerBound)
}

// SpanRatio is Span over LowerBound (0 when there is no bound).
func (o OpResult) SpanRatio() float64 {
	if o.LowerBound <= 0 {
		return 0
	}
	return float64(o.Span) / float64(o.LowerBound)
}

// OwnSpan is Span less Idle: the span without terraform's own time inside it.
func (o OpResult) OwnSpan() time.Duration { return max(o.Span-o.Idle, 0) }

// OwnSpanRatio is OwnSpan over LowerBound (0 when there is no bound).
func (o OpResult) OwnSpanRatio() float64 {
	if o.LowerBound <= 0 {
		return 0
	}
	return float64(o.OwnSpan()) / float64(o.LowerBound)
}

// TotalRequests sums Requests.
func (o OpResult) TotalRequests() int { return tfrun.TotalRequests(o.Requests) }

// Result is one scenario's measurements and checks.
type Result struct {
	Scenario
	Ops []OpResult
	// VMs is how many bench VMs the simulator held after create; DistinctVMIDs how many
	// different VMIDs the state recorded for them (N when no two share one).
	VMs, DistinctVMIDs int
	// CloneCollisions is clone requests beyond one per VM: a VMID taken between the
	// listing and the clone, solved inside the provider by probing the next one.
	CloneCollisions int
	// Leftovers lists bench VMs and seed ISOs still in the simulator after destroy.
	Leftovers []string
	// Problems lists what went wrong (a failed command, a plan with changes...).
	Problems []string
}

// Op returns the result of op (zero when it did not run).
func (r Result) Op(op Op) OpResult {
	for _, o := range r.Ops {
		if o.Op == op {
			return o
		}
	}
	return OpResult{Op: op}
}

func (c *Config) logf(format string, args ...any) {
	if c.Logf != nil {
		c.Logf(format, args...)
	}
}

// Run builds the provider and runs every scenario in order, then the listing scenarios,
// each against its own fresh simulator. A scenario that fails records its problems and the
// run goes on.
func Run(ctx context.Context, cfg Config) ([]Result, []ListResult, error) {
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = 30 * time.Minute
	}
	if cfg.MemoryMiB <= 0 {
		cfg.MemoryMiB = 512
	}
	work := cfg.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "proxy-bench-")
		if err != nil {
			return nil, nil, err
		}
		defer os.RemoveAll(d)
		work = d
	}
	cfg.logf("building the provider")
	prov, err := tfrun.Build(ctx, tfrun.BuildOptions{Dir: filepath.Join(work, "provider")})
	if err != nil {
		return nil, nil, err
	}
	var out []Result
	for _, sc := range cfg.Scenarios {
		if cfg.ListOnly {
			break
		}
		if err := ctx.Err(); err != nil {
			return out, nil, err
		}
		cfg.logf("scenario %s", sc)
		r, err := runScenario(ctx, &cfg, prov, sc, filepath.Join(work, fmt.Sprintf("n%d-p%d", sc.N, sc.P)))
		if err != nil {
			return out, nil, fmt.Errorf("%s: %w", sc, err)
		}
		for _, p := range r.Problems {
			cfg.logf("  problem: %s", p)
		}
		out = append(out, r)
	}
	var lists []ListResult
	for _, n := range cfg.ListNs {
		if err := ctx.Err(); err != nil {
			return out, lists, err
		}
		cfg.logf("listing scenario N=%d speed=%g", n, cfg.ListSpeed)
		r, err := runListing(ctx, &cfg, prov, n, filepath.Join(work, fmt.Sprintf("list-n%d", n)))
		if err != nil {
			return out, lists, fmt.Errorf("listing N=%d: %w", n, err)
		}
		for _, p := range r.Problems {
			cfg.logf("  problem: %s", p)
		}
		lists = append(lists, r)
	}
	return out, lists, nil
}

// benchPrefix names the bench VMs.
const benchPrefix = "bench-"

// opRecords is what the simulator recorded of an operation begun at start: the tasks
// submitted since, and the bench VMs' VMIDs, added to vmids.
func opRecords(sim *pvesim.Sim, start time.Time, vmids map[string]int) []pvesim.TaskState {
	st := sim.State()
	for _, v := range st.VMs {
		if strings.HasPrefix(v.Name, benchPrefix) {
			vmids[v.Name] = v.VMID
		}
	}
	var tasks []pvesim.TaskState
	for _, t := range st.Tasks {
		if !t.Submitted.Before(start) {
			tasks = append(tasks, t)
		}
	}
	return tasks
}

// configWriter writes w's configuration: the provider against sim, and n bench VMs of the
// machine type "small" with mem MiB of memory.
func configWriter(w *tfrun.Workspace, sim *pvesim.Sim, cfg *Config, n int) func(mem int) error {
	pc := tfrun.SimConfig(sim)
	pc.MachineTypes = map[string]tfrun.MachineType{"small": {Cores: 1, MemoryMiB: cfg.MemoryMiB, DiskGiB: cfg.DiskGiB}}
	pc.MaxRequestsInFlight = cfg.MaxInFlight
	return func(mem int) error {
		vm := tfrun.VM{Resource: "bench", Name: benchPrefix + "${count.index}", Image: "debian-13",
			MachineType: "small", MemoryMiB: mem, Count: n}
		return w.WriteConfig(tfrun.RequiredProviders + "\n" + pc.HCL() + "\n" + vm.HCL())
	}
}

// attribute splits o, an operation that changed VMs begun at start, along the simulator's
// records: each VM's tasks since then and the agent's share, terraform's hand-off and idle
// slots (at parallelism p), and for an update the longest graceful shutdown.
func attribute(o *OpResult, sim *pvesim.Sim, op Op, start time.Time, stdout string, vmids map[string]int, agent time.Duration,
	p int, d pvesim.Durations) {
	tasks := opRecords(sim, start, vmids)
	times := resourceTimes(stdout)
	o.Breakdown = breakdown(times, vmids, tasks, agent)
	// Terraform's own time inside the span: the slots it left empty, and those it
	// held after the provider's last answer for a change (handoffs).
	own, handoff := handoffs(times, vmids, sim.RequestLog())
	o.Breakdown.Handoff = min(handoff, o.Breakdown.After)
	o.Idle = max(o.Span-(spanOf(own)-idleSlots(own, p)), 0)
	if op == OpUpdate {
		o.ShutdownBound = sim.WallTime(d.Shutdown)
		for _, t := range tasks {
			if t.Type == "qmshutdown" && !t.Ended.IsZero() {
				o.Shutdown = max(o.Shutdown, t.Ended.Sub(t.Submitted))
			}
		}
	}
}

func runScenario(ctx context.Context, cfg *Config, prov *tfrun.Provider, sc Scenario, dir string) (Result, error) {
	res := Result{Scenario: sc}
	sim, err := pvesim.Start(pvesim.Options{Speed: sc.Speed, Seed: cfg.Seed, Durations: pvesim.Durations{Shutdown: cfg.UpdateShutdown}})
	if err != nil {
		return res, err
	}
	sim.EnableRequestLog() // terraform's hand-off (handoffs); measure resets it per command
	defer sim.Close()
	if cfg.Latency > 0 {
		sim.InjectFault(pvesim.Fault{Latency: sim.WallTime(cfg.Latency)})
	}
	w, err := prov.WorkspaceAt(dir)
	if err != nil {
		return res, err
	}
	w.Timeout = cfg.CommandTimeout
	writeConfig := configWriter(w, sim, cfg, sc.N)
	par := fmt.Sprintf("-parallelism=%d", sc.P)
	d := sim.Durations()
	// The simulator's templates have a smaller disk; the update restarts gracefully.
	path := PathOptions{Resize: cfg.DiskGiB > 4, Shutdown: d.Shutdown}

	vmids := map[string]int{}
	agent := map[Op]time.Duration{OpCreate: sim.WallTime(d.AgentInstall + d.DHCP), OpUpdate: sim.WallTime(d.AgentBoot + d.DHCP)}
	run := func(op Op, args ...string) OpResult {
		cfg.logf("  %s: %s", op, strings.Join(args, " "))
		start := time.Now()
		o, stdout := measure(ctx, sim, w, op, args, (*tfrun.Process).ProviderPIDs)
		o.LowerBound = LowerBound(op, sc.N, sc.P, d, path, sc.Speed) // one node: no create migrates
		if op != OpPlan {
			attribute(&o, sim, op, start, stdout, vmids, agent[op], sc.P, d)
		}
		cfg.logf("  %s: exit %d in %s (bound %s), %d requests, %d in flight at most, peak RSS %.1f MiB",
			op, o.ExitCode, o.Wall.Round(time.Millisecond), o.LowerBound.Round(time.Millisecond), o.TotalRequests(),
			o.MaxInFlight, float64(o.PeakRSS)/(1<<20))
		res.Ops = append(res.Ops, o)
		return o
	}

	if err := writeConfig(cfg.MemoryMiB); err != nil {
		return res, err
	}
	create := run(OpCreate, "apply", "-auto-approve", "-input=false", "-no-color", "-json", par)
	if create.ExitCode != 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("create: terraform exited %d (a retry left to the user): %s",
			create.ExitCode, strings.Join(create.Errors, "; ")))
	}
	res.CloneCollisions = create.Requests[tfrun.StatClone] - sc.N
	res.VMs, res.DistinctVMIDs = countVMs(ctx, sim, w, &res)

	plan := run(OpPlan, "plan", "-input=false", "-no-color", "-detailed-exitcode", "-json", par)
	if plan.ExitCode != 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("plan after create: exit %d, want 0 (no changes): %s",
			plan.ExitCode, strings.Join(plan.Errors, "; ")))
	}

	if err := writeConfig(cfg.MemoryMiB * 2); err != nil {
		return res, err
	}
	upd := run(OpUpdate, "apply", "-auto-approve", "-input=false", "-no-color", "-json", par)
	if upd.ExitCode != 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("update: terraform exited %d: %s", upd.ExitCode, strings.Join(upd.Errors, "; ")))
	} else if upd.Completed != sc.N {
		res.Problems = append(res.Problems, fmt.Sprintf("update: %d resources changed, want %d", upd.Completed, sc.N))
	}

	del := run(OpDestroy, "destroy", "-auto-approve", "-input=false", "-no-color", "-json", par)
	if del.ExitCode != 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("destroy: terraform exited %d: %s", del.ExitCode, strings.Join(del.Errors, "; ")))
	}
	res.Leftovers = leftovers(sim)
	if len(res.Leftovers) > 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("after destroy: %d leftovers (%s)", len(res.Leftovers),
			strings.Join(res.Leftovers, ", ")))
	}
	return res, nil
}

// measure runs one terraform command and samples the RSS and CPU of the provider processes
// providers lists while it runs.
func measure(ctx context.Context, sim *pvesim.Sim, w *tfrun.Workspace, op Op, args []string,
	providers func(*tfrun.Process) []int) (OpResult, string) {
	o := OpResult{Op: op, ExitCode: -1}
	sim.ResetStats()
	sim.ResetConcurrency()
	sim.ResetRequestLog()
	p, err := w.Start(ctx, args...)
	if err != nil {
		o.Errors = []string{err.Error()}
		return o, ""
	}
	wctx, stop := context.WithCancel(ctx)
	prov := watchProcs(wctx, 20*time.Millisecond, func() []int { return providers(p) })
	tf := watchProcs(wctx, 20*time.Millisecond, func() []int { return []int{p.PID()} })
	r := p.Wait()
	stop()
	o.Wall, o.ExitCode = r.Duration, r.ExitCode
	o.Requests = sim.Stats()
	o.MaxInFlight = sim.Concurrency().Max
	o.PeakRSS, o.ProviderCPU, o.Providers = prov.result()
	_, o.TerraformCPU, _ = tf.result()
	ev := parseEvents(r.Stdout)
	o.Span = ev.ApplySpan
	if op == OpPlan {
		o.Span = ev.RefreshSpan
	}
	o.Completed, o.Errored, o.Refreshed, o.Errors = ev.Completed, ev.Errored, ev.Refreshed, ev.Errors
	if r.Err != nil {
		o.Errors = append(o.Errors, r.Err.Error())
	}
	if r.ExitCode != 0 && len(o.Errors) == 0 && op != OpPlan {
		o.Errors = append(o.Errors, lastLines(r.Stdout+r.Stderr, 5))
	}
	return o, r.Stdout
}

// countVMs counts the bench VMs in the simulator and the distinct VMIDs the state holds.
func countVMs(ctx context.Context, sim *pvesim.Sim, w *tfrun.Workspace, res *Result) (int, int) {
	n := 0
	for _, v := range sim.State().VMs {
		if strings.HasPrefix(v.Name, benchPrefix) {
			n++
		}
	}
	st, err := w.Show(ctx)
	if err != nil {
		res.Problems = append(res.Problems, "terraform show: "+err.Error())
		return n, 0
	}
	ids := map[int]bool{}
	for _, r := range st.OfType("proxy_vm") {
		ids[r.Int("vmid")] = true
	}
	if len(ids) != res.N {
		res.Problems = append(res.Problems, fmt.Sprintf("the state holds %d distinct VMIDs for %d VMs", len(ids), res.N))
	}
	if n != res.N {
		res.Problems = append(res.Problems, fmt.Sprintf("the simulator holds %d bench VMs, want %d", n, res.N))
	}
	return n, len(ids)
}

// leftovers lists bench VMs and seed ISOs still in the simulator.
func leftovers(sim *pvesim.Sim) []string {
	st := sim.State()
	var out []string
	for _, v := range st.VMs {
		if strings.HasPrefix(v.Name, benchPrefix) {
			out = append(out, fmt.Sprintf("vm %d %s", v.VMID, v.Name))
		}
	}
	for _, v := range st.Volumes {
		if strings.Contains(v.VolID, ":iso/"+benchPrefix) {
			out = append(out, v.VolID)
		}
	}
	slices.Sort(out)
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Endpoints lists every endpoint any result counted, sorted.
func Endpoints(rs []Result) []string {
	set := map[string]bool{}
	for _, r := range rs {
		for _, o := range r.Ops {
			for k := range o.Requests {
				set[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}
