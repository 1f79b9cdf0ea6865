package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Interrupts: SIGINT at a seeded random point of a create, an update and a destroy, then
// the recovery (apply, destroy) and the orphan count. The simulator runs slower than in
// the fault matrix (interruptSpeed) so that a signal lands inside a step, not between
// two commands.

const interruptSpeed = 200

// trigger is a random point of a command: when the simulator has counted at least
// Requests API requests since the command started, plus Delay of wall time.
type trigger struct {
	Requests int
	Delay    time.Duration
	// Group sends the signal to terraform's process group (Ctrl-C in a terminal) instead
	// of terraform alone (a CI runner cancelling the job).
	Group bool
}

func (tr trigger) String() string {
	who := "terraform"
	if tr.Group {
		who = "group"
	}
	return fmt.Sprintf("after %d requests + %s to %s", tr.Requests, tr.Delay, who)
}

// randomTrigger picks a point within the first maxRequests requests of a command.
func (s *scenario) randomTrigger(maxRequests int) trigger {
	return trigger{
		Requests: 1 + s.rng.IntN(maxRequests),
		Delay:    time.Duration(s.rng.IntN(20)) * time.Millisecond,
		Group:    s.rng.IntN(2) == 0,
	}
}

// startAndSignal runs terraform args, waits for the trigger, and then calls act (a signal
// or a kill). It returns the result and whether act ran before the command ended.
func (s *scenario) startAndSignal(tr trigger, act func(p *tfrun.Process) error, args ...string) (*tfrun.Result, bool) {
	s.t.Helper()
	s.write()
	base := tfrun.TotalRequests(s.sim.Stats())
	p, err := s.ws.Start(s.ctx, args...)
	if err != nil {
		s.t.Fatal(err)
	}
	fired := false
	reached := tfrun.WaitUntil(s.ctx, commandTimeout, func() bool {
		select {
		case <-p.Done():
			return true
		default:
		}
		return tfrun.TotalRequests(s.sim.Stats())-base >= tr.Requests
	})
	if reached {
		select {
		case <-p.Done():
		case <-time.After(tr.Delay):
			if err := act(p); err == nil {
				fired = true
			}
		}
	}
	r, _ := p.WaitGrace(2 * time.Second)
	return r, fired
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func interrupt(group bool) func(p *tfrun.Process) error {
	return func(p *tfrun.Process) error {
		if group {
			return p.InterruptGroup()
		}
		return p.Interrupt()
	}
}

// afterInterrupt checks what an interrupted command left, and runs the recovery.
func (s *scenario) afterInterrupt(r *tfrun.Result, fired bool, what string) {
	s.t.Helper()
	if fired {
		figures.note(s.cat, what+" interrupted")
		if r.OK() {
			figures.note(s.cat, what+" finished despite the interrupt")
		}
	} else {
		figures.note(s.cat, what+" ended before the signal")
	}
	s.t.Logf("the interrupted %s: exit %d, signaled %t; output ends:\n%s", what, r.ExitCode, r.Signaled, tail(tfrun.TrimOverridesWarning(r.Output()), 25))
	f := s.chk.Live(s.state())
	if len(f.Violations) > 0 {
		s.t.Errorf("after the interrupted %s: %v", what, f.Err())
	}
	if len(f.Orphans) > 0 {
		figures.note(s.cat, "untracked right after the interrupt")
		s.t.Logf("untracked right after the interrupted %s (the next run must adopt or remove them): %v", what, f.Orphans)
	}
	s.waitTasksIdle()
	s.converge()
}

func TestE2E_Interrupts(t *testing.T) {
	needTF(t)
	n := trials(3, 30)
	for i := 0; i < n; i++ {
		t.Run(fmt.Sprintf("create/%02d", i), func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "interrupts/create", scenarioOpts{Sim: pvesim.Options{Speed: interruptSpeed}})
			s.vms = []tfrun.VM{s.vm("a"), s.vm("b")}
			tr := s.randomTrigger(45)
			t.Logf("SIGINT %s", tr)
			r, fired := s.startAndSignal(tr, interrupt(tr.Group), "apply", "-auto-approve", "-input=false", "-no-color")
			s.afterInterrupt(r, fired, "create")
		})
	}
	for i := 0; i < trials(2, 15); i++ {
		t.Run(fmt.Sprintf("update/%02d", i), func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "interrupts/update", scenarioOpts{Sim: pvesim.Options{Speed: interruptSpeed}})
			v := s.vm("u")
			s.vms = []tfrun.VM{v}
			s.mustApply()
			// In place: more cores and memory (config write and a restart), a larger disk.
			s.vms[0].Cores, s.vms[0].MemoryMiB, s.vms[0].DiskGiB = 2, 1024, 6
			tr := s.randomTrigger(20)
			t.Logf("SIGINT %s", tr)
			r, fired := s.startAndSignal(tr, interrupt(tr.Group), "apply", "-auto-approve", "-input=false", "-no-color")
			s.afterInterrupt(r, fired, "update")
		})
	}
	for i := 0; i < trials(2, 15); i++ {
		t.Run(fmt.Sprintf("destroy/%02d", i), func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "interrupts/destroy", scenarioOpts{Sim: pvesim.Options{Speed: interruptSpeed}})
			s.vms = []tfrun.VM{s.vm("d1"), s.vm("d2")}
			s.mustApply()
			tr := s.randomTrigger(20)
			t.Logf("SIGINT %s", tr)
			r, fired := s.startAndSignal(tr, interrupt(tr.Group), "destroy", "-auto-approve", "-input=false", "-no-color")
			s.afterInterrupt(r, fired, "destroy")
		})
	}
}

// TestE2E_InterruptDuringCloneRequest interrupts a create while its clone request is in
// flight (the simulator holds the request 300 ms before it clones, so the VM is made but
// the answer never reaches the provider), then takes the VM out of the configuration, as
// a user who gave up on it would. DESIGN promises that an interrupted create leaves no
// untracked VM: the provider chose the VMID before the request, so the VM must be in the
// state (tainted) and this apply must destroy it. An untracked VM stays forever.
func TestE2E_InterruptDuringCloneRequest(t *testing.T) {
	needTF(t)
	for i := 0; i < trials(2, 10); i++ {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "interrupts/clone-in-flight", scenarioOpts{Sim: pvesim.Options{Speed: interruptSpeed}})
			s.vms = []tfrun.VM{s.vm("c")}
			s.write()
			s.sim.InjectFault(pvesim.Fault{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/clone", Latency: 300 * time.Millisecond, Times: 1})
			p, err := s.ws.Start(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color")
			if err != nil {
				t.Fatal(err)
			}
			fired := false
			if tfrun.WaitStat(s.ctx, s.sim, tfrun.StatClone, 1, 30*time.Second) {
				time.Sleep(time.Duration(20+40*i) * time.Millisecond)
				fired = p.Interrupt() == nil
			}
			r := p.Wait()
			t.Logf("interrupted (%t) create: exit %d; output ends:\n%s", fired, r.ExitCode, tail(tfrun.TrimOverridesWarning(r.Output()), 8))
			time.Sleep(400 * time.Millisecond) // the held request is served
			s.waitTasksIdle()
			if untracked := s.chk.Live(s.state()).Orphans; len(untracked) > 0 {
				figures.note(s.cat, "untracked right after the interrupt")
				t.Logf("untracked after the interrupt: %v", untracked)
			}
			// The user removes the VM from the configuration and applies.
			s.vms = nil
			ar := s.apply()
			if !ar.OK() {
				t.Errorf("the apply without the VM failed:\n%s", ar)
			}
			f := s.chk.Live(s.state()).Strict()
			for _, o := range f.Orphans {
				t.Errorf("orphan: %s: the interrupted create never saved it in the state, so removing the resource left it behind", o)
			}
			for _, v := range f.Violations {
				t.Errorf("violation: %s", v)
			}
			s.figure(func(row *figureRow) {
				row.Run++
				if f.OK() && ar.OK() {
					row.Converged++
				}
				row.Orphans += len(f.Orphans)
			})
			// Remove what is left so the scenario ends clean.
			for _, ids := range s.chk.VMIDs() {
				for _, id := range ids {
					_ = s.sim.DeleteVM(id)
				}
			}
		})
	}
}
