package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// The peer comparison runs one scenario twice in one run, once with this provider and once
// with a second provider binary given on the command line (bpg/terraform-provider-proxmox,
// the most used Proxmox provider), each against its own fresh simulator started with the
// same options: N VMs full-cloned from template 9001, which ships the guest agent, at the
// same speed and request latency, both waiting for the agent's address; apply, a no-op plan,
// then destroy. It reports the ratios ours/peer.

// PeerSource is the peer provider's address, which the CLI configuration's dev_overrides
// points at the given binary (no registry, no terraform init).
const PeerSource = "registry.terraform.io/bpg/proxmox"

// peerBinaryName is what the binary is linked as in the override directory: terraform looks
// for terraform-provider-<type> there.
const peerBinaryName = "terraform-provider-proxmox"

// peerResourceType is the peer's VM resource.
const peerResourceType = "proxmox_virtual_environment_vm"

// peerTemplate is the simulator's template that ships the guest agent with TemplateAgent.
const peerTemplate = 9001

// PeerConfig shapes the peer comparison.
type PeerConfig struct {
	// Binary is the peer provider's executable ("": no comparison).
	Binary string
	// N VMs at terraform parallelism P, simulator at Speed; Rounds runs the pair that many
	// times, alternating which provider goes first (ours first in odd rounds), and the
	// figures are the rounds' means.
	N, P   int
	Speed  float64
	Rounds int
	// BaselineDir, when set, is a checkout of an earlier commit of this provider: the
	// second side is that build, run with our configuration (Binary is not used), so that
	// a figure can be compared with a first build's in one run.
	BaselineDir string
}

// ErrNoPeer says the comparison was not asked for; the command prints it loudly.
var ErrNoPeer = errors.New("peer comparison skipped: no peer provider binary given (-peer " +
	"/path/to/terraform-provider-proxmox or BENCH_PEER=...)")

// CheckPeer verifies the peer binary: ErrNoPeer when none is given, an error when the path
// is not an executable file.
func CheckPeer(path string) error {
	if path == "" {
		return ErrNoPeer
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("peer provider: %w", err)
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("peer provider: %s is not an executable file", path)
	}
	return nil
}

// PeerProvider makes a tfrun.Provider for the peer binary: a directory dir holding a link
// to it as terraform-provider-proxmox and a CLI configuration whose dev_overrides points
// PeerSource there.
func PeerProvider(binary, dir string) (*tfrun.Provider, error) {
	if err := CheckPeer(binary); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(binary)
	if err != nil {
		return nil, err
	}
	tf, err := tfrun.CLI()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	link := filepath.Join(dir, peerBinaryName)
	_ = os.Remove(link)
	if err := os.Symlink(abs, link); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "cli.tfrc")
	if err := os.WriteFile(cfg, []byte(peerCLIConfig(dir)), 0o600); err != nil {
		return nil, err
	}
	return &tfrun.Provider{Dir: dir, Binary: link, CLIConfig: cfg, Terraform: tf}, nil
}

// peerCLIConfig is the CLI configuration that makes terraform run the peer from dir.
func peerCLIConfig(dir string) string {
	return "provider_installation {\n  dev_overrides {\n    " + tfrun.Quote(PeerSource) + " = " + tfrun.Quote(dir) +
		"\n  }\n  direct {}\n}\n"
}

// PeerVMs is what the peer's configuration asks for, the same as ours: N VMs named
// bench-<i>, full clones of the template on node Node, Cores cores, MemoryMiB of memory, the
// disk grown to DiskGiB (0: the template's), the guest agent enabled and its address waited
// for, a stop (not a shutdown) before the destroy. VMIDs are the peer's default: the
// cluster's nextid.
type PeerVMs struct {
	Endpoint, APIToken, Node, Datastore string
	N, Template, Cores, MemoryMiB       int
	DiskGiB                             int
}

// HCL renders the peer's configuration: its required_providers, its provider block
// (the simulator's CA is given by SSL_CERT_FILE, see peerEnv; TLS is verified) and one
// proxmox_virtual_environment_vm with count. The peer waits for an address by default when
// agent.enabled is true (its proxmoxtf/resource/vm vmCreateClone then vmRead, through
// WaitForNetworkInterfacesFromVMAgent).
func (p PeerVMs) HCL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "terraform {\n  required_providers {\n    proxmox = {\n      source = %s\n    }\n  }\n}\n\n", tfrun.Quote("bpg/proxmox"))
	fmt.Fprintf(&b, "provider \"proxmox\" {\n  endpoint  = %s\n  api_token = %s\n  insecure  = false\n}\n\n",
		tfrun.Quote(strings.TrimSuffix(p.Endpoint, "/")+"/"), tfrun.Quote(p.APIToken))
	fmt.Fprintf(&b, "resource %q \"bench\" {\n  count     = %d\n  name      = \"%s${count.index}\"\n  node_name = %s\n",
		peerResourceType, p.N, benchPrefix, tfrun.Quote(p.Node))
	fmt.Fprintf(&b, "\n  clone {\n    vm_id = %d\n    full  = true\n  }\n", p.Template)
	b.WriteString("\n  agent {\n    enabled = true\n  }\n")
	// Destroy stops the VM, as ours does, rather than the peer's default graceful shutdown
	// (its vmDelete: stop_on_destroy), so that both do the same work.
	b.WriteString("\n  stop_on_destroy = true\n")
	fmt.Fprintf(&b, "\n  cpu {\n    cores = %d\n  }\n", p.Cores)
	fmt.Fprintf(&b, "\n  memory {\n    dedicated = %d\n  }\n", p.MemoryMiB)
	if p.DiskGiB > 0 {
		fmt.Fprintf(&b, "\n  disk {\n    datastore_id = %s\n    interface    = \"scsi0\"\n    size         = %d\n  }\n",
			tfrun.Quote(p.Datastore), p.DiskGiB)
	}
	b.WriteString("}\n")
	return b.String()
}

// peerEnv is the peer's environment in the workspace: the simulator's CA as the system
// roots (the peer has no CA option; Go on Linux reads SSL_CERT_FILE).
func peerEnv(caFile string) []string { return []string{"SSL_CERT_FILE=" + caFile} }

// Side is one provider's measurements in the comparison.
type Side struct {
	// Name is "ours" or "peer"; Binary the executable.
	Name, Binary string
	// Ops are create, plan and destroy (the means over the rounds).
	Ops []OpResult
	// Lags splits each op's time (create and destroy).
	Lags map[Op]Lags
	// Unserved counts the requests the simulator answered with an error, by method and
	// path shape ("GET /nodes/{node}/qemu/{vmid}/pending 501"): an endpoint it lacks or
	// serves differently from what this provider expects.
	Unserved map[string]int
	// Problems lists what went wrong.
	Problems []string
}

// Op returns the result of op (zero when it did not run).
func (s Side) Op(op Op) OpResult { return Result{Ops: s.Ops}.Op(op) }

// PeerResult is the comparison.
type PeerResult struct {
	Config PeerConfig
	// Latency is each request's service time at speed 1.
	Latency    time.Duration
	Ours, Peer Side
	// Load is /proc/loadavg's 1-minute figure before and after the run, and CPUs the
	// machine's.
	LoadBefore, LoadAfter float64
	CPUs                  int
	Elapsed               time.Duration
}

// Ratios are ours over the peer's; NaN when the peer's figure is zero.
type Ratios struct {
	ApplyWall, DestroyWall, PlanWall    float64
	PlanRequests, CreateRequestsPerVM   float64
	DestroyRequestsPerVM, PlanReqsPerVM float64
}

// Ratios computes ours/peer.
func (r PeerResult) Ratios() Ratios {
	div := func(a, b float64) float64 {
		if b == 0 {
			return nan()
		}
		return a / b
	}
	o, p := r.Ours, r.Peer
	n := float64(max(r.Config.N, 1))
	return Ratios{
		ApplyWall:            div(float64(o.Op(OpCreate).Wall), float64(p.Op(OpCreate).Wall)),
		DestroyWall:          div(float64(o.Op(OpDestroy).Wall), float64(p.Op(OpDestroy).Wall)),
		PlanWall:             div(float64(o.Op(OpPlan).Wall), float64(p.Op(OpPlan).Wall)),
		PlanRequests:         div(float64(o.Op(OpPlan).TotalRequests()), float64(p.Op(OpPlan).TotalRequests())),
		PlanReqsPerVM:        div(float64(o.Op(OpPlan).TotalRequests())/n, float64(p.Op(OpPlan).TotalRequests())/n),
		CreateRequestsPerVM:  div(float64(o.Op(OpCreate).TotalRequests())/n, float64(p.Op(OpCreate).TotalRequests())/n),
		DestroyRequestsPerVM: div(float64(o.Op(OpDestroy).TotalRequests())/n, float64(p.Op(OpDestroy).TotalRequests())/n),
	}
}

// buildPeerPair builds this provider and the one it is compared with (the baseline built
// from pc.BaselineDir, or the peer's binary) under work.
func buildPeerPair(ctx context.Context, cfg *Config, pc PeerConfig, work string) (ours, peer *tfrun.Provider, err error) {
	cfg.logf("building the provider")
	ours, err = tfrun.Build(ctx, tfrun.BuildOptions{Dir: filepath.Join(work, "provider")})
	if err != nil {
		return nil, nil, err
	}
	if pc.BaselineDir != "" {
		cfg.logf("building the baseline provider from %s", pc.BaselineDir)
		peer, err = tfrun.Build(ctx, tfrun.BuildOptions{Dir: filepath.Join(work, "baseline-provider"), RepoRoot: pc.BaselineDir})
	} else {
		peer, err = PeerProvider(pc.Binary, filepath.Join(work, "peer-provider"))
	}
	return ours, peer, err
}

// RunPeer runs the comparison: builds our provider, then for each round runs the scenario
// with ours and with the peer (alternating which goes first), each against a fresh simulator.
func RunPeer(ctx context.Context, cfg Config, pc PeerConfig) (PeerResult, error) {
	res := PeerResult{Config: pc, Latency: cfg.Latency, CPUs: numCPU()}
	if pc.BaselineDir == "" {
		if err := CheckPeer(pc.Binary); err != nil {
			return res, err
		}
	}
	if pc.N <= 0 || pc.P <= 0 || pc.Speed <= 0 {
		return res, fmt.Errorf("peer comparison: N, P and speed must be positive (N=%d P=%d speed=%g)", pc.N, pc.P, pc.Speed)
	}
	if pc.Rounds <= 0 {
		pc.Rounds = 1
		res.Config.Rounds = 1
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = 30 * time.Minute
	}
	if cfg.MemoryMiB <= 0 {
		cfg.MemoryMiB = 512
	}
	work := cfg.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "proxy-bench-peer-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(d)
		work = d
	}
	start := time.Now()
	res.LoadBefore = loadAvg()
	ours, peer, err := buildPeerPair(ctx, &cfg, pc, work)
	if err != nil {
		return res, err
	}
	var oursRuns, peerRuns []Side
	for round := range pc.Rounds {
		order := []bool{false, true} // peer?
		if round%2 == 1 {
			order = []bool{true, false}
		}
		for _, isPeer := range order {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			name, prov := "ours", ours
			if isPeer {
				name, prov = pc.sideName(), peer
			}
			cfg.logf("peer comparison round %d: %s (N=%d P=%d speed=%g)", round+1, name, pc.N, pc.P, pc.Speed)
			s, err := runSide(ctx, &cfg, pc, prov, isPeer, filepath.Join(work, fmt.Sprintf("%s-%d", name, round+1)))
			if err != nil {
				return res, fmt.Errorf("%s: %w", name, err)
			}
			for _, p := range s.Problems {
				cfg.logf("  problem: %s", p)
			}
			if isPeer {
				peerRuns = append(peerRuns, s)
			} else {
				oursRuns = append(oursRuns, s)
			}
		}
	}
	res.Ours, res.Peer = meanSide(oursRuns), meanSide(peerRuns)
	res.Ours.Binary, res.Peer.Binary = ours.Binary, pc.Binary
	res.LoadAfter = loadAvg()
	res.Elapsed = time.Since(start)
	return res, nil
}

// sideName is the second side's name: "peer", or "baseline" for an earlier build of ours.
func (pc PeerConfig) sideName() string {
	if pc.BaselineDir != "" {
		return "baseline"
	}
	return "peer"
}

// processChildren is the PIDs of p's children: the providers it runs.
func processChildren(p *tfrun.Process) []int { return childPIDs(p.PID()) }

// startSideSim starts a side's simulator, whose template ships the agent, with the run's
// latency and the request log on.
func startSideSim(cfg *Config, pc PeerConfig) (*pvesim.Sim, error) {
	sim, err := pvesim.Start(pvesim.Options{Speed: pc.Speed, Seed: cfg.Seed, TemplateAgent: true})
	if err != nil {
		return nil, err
	}
	if cfg.Latency > 0 {
		sim.InjectFault(pvesim.Fault{Latency: sim.WallTime(cfg.Latency)})
	}
	sim.EnableRequestLog()
	return sim, nil
}

// countUnserved counts into unserved the requests of reqs the simulator answered with an
// error (or not at all), by method, path shape and status.
func countUnserved(unserved map[string]int, reqs []pvesim.Request) {
	for _, r := range reqs {
		if r.Status >= 400 || r.Status == 0 {
			unserved[r.Method+" "+pathShape(r.Path)+" "+strconv.Itoa(r.Status)]++
		}
	}
}

// sideHCL is a side's configuration against sim: the peer's own (bpg), or ours with a
// machine type of the bench's size.
func sideHCL(sim *pvesim.Sim, cfg *Config, pc PeerConfig, bpg bool) string {
	if bpg {
		return PeerVMs{Endpoint: sim.Endpoint, APIToken: sim.APIToken, Node: sim.Nodes[0], Datastore: "local-lvm",
			N: pc.N, Template: peerTemplate, Cores: 1, MemoryMiB: cfg.MemoryMiB, DiskGiB: cfg.DiskGiB}.HCL()
	}
	c := tfrun.SimConfig(sim)
	c.MachineTypes = map[string]tfrun.MachineType{"small": {Cores: 1, MemoryMiB: cfg.MemoryMiB, DiskGiB: cfg.DiskGiB}}
	c.MaxRequestsInFlight = cfg.MaxInFlight
	// The template ships the agent (TemplateAgent), as the peer's configuration assumes:
	// the configuration a user of such a template writes has nothing to install.
	c.InstallGuestAgent = tfrun.Bool(false)
	vm := tfrun.VM{Resource: "bench", Name: benchPrefix + "${count.index}", Image: "debian-13",
		MachineType: "small", MemoryMiB: cfg.MemoryMiB, Count: pc.N}
	return tfrun.RequiredProviders + "\n" + c.HCL() + "\n" + vm.HCL()
}

// runSide runs create, a no-op plan and destroy with one provider against a fresh simulator.
func runSide(ctx context.Context, cfg *Config, pc PeerConfig, prov *tfrun.Provider, isPeer bool, dir string) (Side, error) {
	side := Side{Name: "ours", Lags: map[Op]Lags{}, Unserved: map[string]int{}}
	if isPeer {
		side.Name = pc.sideName()
	}
	bpg := isPeer && pc.BaselineDir == "" // the peer's own configuration, else ours
	sim, err := startSideSim(cfg, pc)
	if err != nil {
		return side, err
	}
	defer sim.Close()
	w, err := prov.WorkspaceAt(dir)
	if err != nil {
		return side, err
	}
	w.Timeout = cfg.CommandTimeout
	if bpg {
		w.Env = peerEnv(sim.CAFile)
	}
	if err := w.WriteConfig(sideHCL(sim, cfg, pc, bpg)); err != nil {
		return side, err
	}
	par := fmt.Sprintf("-parallelism=%d", pc.P)
	d := sim.Durations()
	agent := sim.WallTime(d.AgentBoot + d.DHCP) // the template ships the agent
	vmids := map[string]int{}
	run := func(op Op, args ...string) OpResult {
		cfg.logf("  %s %s: %s", side.Name, op, strings.Join(args, " "))
		start := time.Now()
		o, stdout := measure(ctx, sim, w, op, args, processChildren)
		reqs := sim.RequestLog() // this command's: measure resets the log
		countUnserved(side.Unserved, reqs)
		if op != OpPlan {
			tasks := opRecords(sim, start, vmids)
			times := resourceTimes(stdout)
			wait := time.Duration(0)
			if op == OpCreate {
				wait = agent
			}
			o.Breakdown = breakdown(times, vmids, tasks, wait)
			side.Lags[op] = lags(o, times, vmids, tasks, reqs, wait)
		}
		cfg.logf("  %s %s: exit %d in %s, %d requests, peak RSS %.1f MiB", side.Name, op, o.ExitCode,
			o.Wall.Round(time.Millisecond), o.TotalRequests(), float64(o.PeakRSS)/(1<<20))
		side.Ops = append(side.Ops, o)
		return o
	}
	create := run(OpCreate, "apply", "-auto-approve", "-input=false", "-no-color", "-json", par)
	if create.ExitCode != 0 {
		side.Problems = append(side.Problems, fmt.Sprintf("create: terraform exited %d: %s", create.ExitCode, strings.Join(create.Errors, "; ")))
	}
	plan := run(OpPlan, "plan", "-input=false", "-no-color", "-detailed-exitcode", "-json", par)
	if plan.ExitCode != 0 {
		side.Problems = append(side.Problems, fmt.Sprintf("plan after create: exit %d, want 0 (no changes): %s",
			plan.ExitCode, strings.Join(plan.Errors, "; ")))
	}
	del := run(OpDestroy, "destroy", "-auto-approve", "-input=false", "-no-color", "-json", par)
	if del.ExitCode != 0 {
		side.Problems = append(side.Problems, fmt.Sprintf("destroy: terraform exited %d: %s", del.ExitCode, strings.Join(del.Errors, "; ")))
	}
	if left := leftovers(sim); len(left) > 0 {
		side.Problems = append(side.Problems, fmt.Sprintf("after destroy: %d leftovers (%s)", len(left), strings.Join(left, ", ")))
	}
	return side, nil
}

// pathShape replaces a request path's node, VMID, UPID, storage and volume with the
// simulator's route placeholders, so that requests to the same endpoint count together.
func pathShape(p string) string {
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i := range segs {
		if i == 0 {
			continue
		}
		switch segs[i-1] {
		case "nodes":
			segs[i] = "{node}"
		case "qemu", "lxc":
			if _, err := strconv.Atoi(segs[i]); err == nil {
				segs[i] = "{vmid}"
			}
		case "tasks":
			segs[i] = "{upid}"
		case "storage":
			if i >= 3 {
				segs[i] = "{storage}"
			}
		case "content":
			segs[i] = "{volume}"
		}
	}
	return "/" + strings.Join(segs, "/")
}

// meanSide averages the rounds' op figures (wall, span, requests, CPU, breakdown, lags);
// the peak RSS is the largest; problems and unserved requests are summed over the rounds.
func meanSide(runs []Side) Side {
	if len(runs) == 0 {
		return Side{}
	}
	if len(runs) == 1 {
		return runs[0]
	}
	out := Side{Name: runs[0].Name, Lags: map[Op]Lags{}, Unserved: map[string]int{}}
	n := time.Duration(len(runs))
	for _, op := range []Op{OpCreate, OpPlan, OpDestroy} {
		var m OpResult
		m.Op = op
		m.Requests = map[string]int{}
		var lg Lags
		for _, r := range runs {
			o := r.Op(op)
			m.Wall += o.Wall / n
			m.Span += o.Span / n
			m.ProviderCPU += o.ProviderCPU / n
			m.TerraformCPU += o.TerraformCPU / n
			m.PeakRSS = max(m.PeakRSS, o.PeakRSS)
			m.ExitCode = max(m.ExitCode, o.ExitCode)
			for k, v := range o.Requests {
				m.Requests[k] += v
			}
			l := r.Lags[op]
			lg.VMs += l.VMs
			lg.Resource += l.Resource / n
			lg.Tasks += l.Tasks / n
			lg.Agent += l.Agent / n
			lg.TaskPoll += l.TaskPoll / n
			lg.AgentPoll += l.AgentPoll / n
			lg.Terraform += l.Terraform / n
		}
		// Requests: the rounds' mean, rounded.
		for k, v := range m.Requests {
			m.Requests[k] = (v + len(runs)/2) / len(runs)
		}
		lg.VMs /= len(runs)
		out.Ops = append(out.Ops, m)
		out.Lags[op] = lg
	}
	for _, r := range runs {
		out.Problems = append(out.Problems, r.Problems...)
		for k, v := range r.Unserved {
			out.Unserved[k] += v
		}
	}
	return out
}

// loadAvg is the 1-minute load average (0 when unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
