package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Default VMID range of the scenarios: small, so foreign VMs inside it get probed past.
const (
	vmidMin = 1000
	vmidMax = 1039
)

// commandTimeout bounds one terraform command of a scenario (E2E_CMD_TIMEOUT overrides): a
// guard against a hang, far above what a command takes, also on a machine whose cores are
// shared with other work.
var commandTimeout = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("E2E_CMD_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return 4 * time.Minute
}()

// scenarioRequestTimeout is the provider's request_timeout in the scenarios that are not
// about it: one request to the in-process simulator takes milliseconds, but has taken over
// the default 30 s on a loaded machine.
const scenarioRequestTimeout = "3m"

// harnessRequestTimeout is scenarioRequestTimeout for the tests' own clients of the
// simulator.
const harnessRequestTimeout = 3 * time.Minute

// scenario is one simulator, one workspace (more for concurrency), one checker.
type scenario struct {
	t      *testing.T
	ctx    context.Context
	cat    string // figures category
	sim    *pvesim.Sim
	ws     *tfrun.Workspace
	chk    *tfrun.Checker
	prefix string
	pc     tfrun.ProviderConfig
	vms    []tfrun.VM
	tail   string // HCL after the VMs (other resources, e.g. proxy_ha_rule)
	rng    *rand.Rand
	// counted says the scenario's outcome went into the figures (figure); countSeedsLeft
	// counts the others.
	counted *atomic.Bool
}

// figure updates the scenario's row of the figures; one that counts a run marks the
// scenario counted.
func (s *scenario) figure(fn func(r *figureRow)) {
	figures.update(s.cat, func(r *figureRow) {
		run := r.Run
		fn(r)
		if r.Run != run {
			s.counted.Store(true)
		}
	})
}

type scenarioOpts struct {
	Sim pvesim.Options
	// NoForeign skips adding the foreign VMs inside the VMID range.
	NoForeign bool
	// Trace runs terraform with TF_LOG=TRACE into the workspace's logs.
	Trace bool
}

// foreignVMs are guests somebody else made inside our VMID range: a plain VM, a running
// one, one named like a proxy without our mark, a hibernated one, one under a backup
// lock, and a container.
func foreignVMs(prefix string) []pvesim.VMSpec {
	return []pvesim.VMSpec{
		{VMID: vmidMin + 3, Name: "db-" + "primary"},
		{VMID: vmidMin + 7, Name: "web-2", Power: "running", ShipsAgent: true},
		{VMID: vmidMin + 12, Name: "proxy-handmade", Config: map[string]string{"description": "made by hand"}},
		{VMID: vmidMin + 18, Name: "sleeper", Power: "hibernated"},
		{VMID: vmidMin + 25, Name: "backup-target", Lock: "backup"},
		{VMID: vmidMin + 31, Name: "ct-dns", Type: "lxc"},
	}
}

// newScenario starts a simulator (seeded from the run seed and the test name), adds the
// foreign VMs, snapshots the baseline and prepares a workspace. VM names start with a
// prefix derived from the test name, so the checker knows which VMs are the scenario's.
func newScenario(t *testing.T, cat string, o scenarioOpts) *scenario {
	t.Helper()
	needTF(t)
	h := fnv64(t.Name())
	if o.Sim.Seed == 0 {
		o.Sim.Seed = runSeed ^ h
	}
	sim := pvesim.NewForTest(t, o.Sim)
	prefix := "px" + fmt.Sprintf("%04x", h&0xffff) + "-"
	if !o.NoForeign {
		for _, f := range foreignVMs(prefix) {
			if err := sim.AddVM(f); err != nil {
				t.Fatalf("add foreign VM %d: %v", f.VMID, err)
			}
		}
	}
	ws := provider.NewWorkspace(t)
	ws.Trace = o.Trace
	ws.Timeout = commandTimeout
	pc := tfrun.SimConfig(sim)
	pc.VMIDMin, pc.VMIDMax = vmidMin, vmidMax
	pc.RequestTimeout = scenarioRequestTimeout
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	s := &scenario{
		t: t, ctx: ctx, cat: cat, sim: sim, ws: ws, chk: tfrun.NewChecker(sim, prefix), prefix: prefix, pc: pc,
		rng: rand.New(rand.NewPCG(runSeed, h)), counted: new(atomic.Bool),
	}
	// Nothing the provider uploaded outlives its VM: every scenario ends with no seed ISO
	// that no VM uses (the figures' seeds-left column). Registered after the simulator's
	// cleanup, so it runs before the simulator closes.
	t.Cleanup(s.countSeedsLeft)
	return s
}

// countSeedsLeft counts, when the scenario ends, its seed ISOs that no VM uses, on every
// storage and node, into the figures, and fails the test on any. A scenario whose outcome
// no figure counted (it asserts its own end state, without converge) is counted here:
// run, and converged when it passed and left no seed.
func (s *scenario) countSeedsLeft() {
	left := s.chk.SeedsLeft()
	counted := s.counted.Load()
	figures.update(s.cat, func(r *figureRow) {
		r.Seeds += len(left)
		if !counted {
			r.Run++
			if !s.t.Failed() && len(left) == 0 {
				r.Converged++
			}
		}
	})
	for _, l := range left {
		s.t.Errorf("seed ISO left when the scenario ended: %s", l)
	}
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// vm returns a VM of the scenario named prefix+suffix with the defaults of the suite.
func (s *scenario) vm(suffix string) tfrun.VM {
	return tfrun.VM{Name: s.prefix + suffix, Image: "debian-13", MachineType: "small"}
}

// config renders the whole configuration.
func (s *scenario) config() string {
	var b strings.Builder
	b.WriteString(tfrun.RequiredProviders)
	b.WriteString(s.pc.HCL())
	for _, v := range s.vms {
		b.WriteString(v.HCL())
	}
	b.WriteString(s.tail)
	return b.String()
}

// write writes main.tf from the scenario's provider config and VMs.
func (s *scenario) write() {
	s.t.Helper()
	if err := s.ws.WriteConfig(s.config()); err != nil {
		s.t.Fatal(err)
	}
}

func (s *scenario) apply(extra ...string) *tfrun.Result {
	s.write()
	return s.ws.Apply(s.ctx, extra...)
}

func (s *scenario) destroy() *tfrun.Result {
	s.write()
	return s.ws.Destroy(s.ctx)
}

// state reads the workspace's state (fatal when terraform show fails).
func (s *scenario) state() *tfrun.State {
	s.t.Helper()
	st, err := s.ws.Show(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return st
}

// mustApply applies and fails the test on an error.
func (s *scenario) mustApply() {
	s.t.Helper()
	if r := s.apply(); !r.OK() {
		s.t.Fatalf("apply failed:\n%s", r)
	}
}

// outcome is what converge saw.
type outcome struct {
	Converged bool
	Orphans   []string
	Problems  []string
}

// converge is the recovery every fault, interrupt and crash scenario ends with: with the
// faults cleared, a plain apply must succeed, the cluster must match the state with no
// orphan and no foreign VM touched, the next plan must be empty, then a destroy must
// succeed and leave nothing of the scenario. It records the figures and reports problems
// as test errors.
func (s *scenario) converge() outcome {
	s.t.Helper()
	var o outcome
	problem := func(format string, args ...any) {
		o.Problems = append(o.Problems, fmt.Sprintf(format, args...))
	}
	s.sim.ClearFaults()

	if r := s.apply(); !r.OK() {
		problem("the recovery apply failed:\n%s", r)
		// One more try tells a slow convergence from none; the figures count it as not converged.
		if r2 := s.apply(); !r2.OK() {
			problem("a second recovery apply failed too:\n%s", r2)
		}
	}
	st := s.state()
	live := s.chk.Live(st).Strict()
	o.Orphans = append(o.Orphans, live.Orphans...)
	for _, v := range live.Violations {
		problem("after the recovery apply: %s", v)
	}
	if r := s.ws.Plan(s.ctx); r.ExitCode != 0 {
		problem("the plan after the recovery apply is not empty (exit %d):\n%s", r.ExitCode, r.Stdout+r.Stderr)
	}
	if r := s.destroy(); !r.OK() {
		problem("destroy failed:\n%s", r)
		if r2 := s.destroy(); !r2.OK() {
			problem("a second destroy failed too:\n%s", r2)
		}
	}
	gone := s.chk.Gone()
	o.Orphans = append(o.Orphans, gone.Orphans...)
	for _, v := range gone.Violations {
		problem("after destroy: %s", v)
	}
	if st := s.state(); len(st.OfType("proxy_vm")) != 0 {
		problem("the state still holds %d proxy_vm after destroy", len(st.OfType("proxy_vm")))
	}
	o.Converged = len(o.Problems) == 0 && len(o.Orphans) == 0
	wrong := 0
	for _, p := range o.Problems {
		if strings.Contains(p, "foreign guest") || strings.Contains(p, "foreign HA") {
			wrong++
		}
	}
	s.figure(func(r *figureRow) {
		r.Run++
		if o.Converged {
			r.Converged++
		}
		r.Orphans += len(o.Orphans)
		r.WrongWS += wrong
	})
	for _, p := range o.Problems {
		s.t.Error(p)
	}
	for _, p := range o.Orphans {
		s.t.Errorf("orphan: %s", p)
	}
	if !o.Converged {
		s.t.Logf("cluster at the end:\n%s", tfrun.Describe(s.sim.State()))
	}
	return o
}

// whatToDo are the phrases a failure diagnostic uses to say what to do next.
var whatToDo = []string{
	"may succeed if retried", "Retrying will not help", "ran out of time", "was interrupted",
	"apply again", "run the same command again", "terraform import", "destroy", "no longer exists",
}

// checkDiag checks that a failed command's error diagnostics name the VM and say what to
// do; steps, when given, are words of which at least one must appear (the step). It
// records the figure and returns what is missing ("" when fine).
func (s *scenario) checkDiag(r *tfrun.Result, steps ...string) string {
	out := r.Stdout + r.Stderr
	var missing []string
	if !strings.Contains(out, "Error:") {
		missing = append(missing, "no error diagnostic")
	}
	if !strings.Contains(out, "Proxy VM") && !strings.Contains(out, "proxy VM") {
		missing = append(missing, "the VM is not named")
	}
	if !containsAny(out, whatToDo...) {
		missing = append(missing, "no advice on what to do")
	}
	if len(steps) > 0 && !containsAny(strings.ToLower(out), steps...) {
		missing = append(missing, fmt.Sprintf("the step is not named (any of %q)", steps))
	}
	m := strings.Join(missing, "; ")
	s.figure(func(row *figureRow) {
		row.DiagRun++
		if m == "" {
			row.DiagOK++
		}
	})
	return m
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
