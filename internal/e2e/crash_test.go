package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Crashes: kill -9 of terraform, or of the provider process, at a random point of a
// create; then either the saved plan is applied again or a fresh plan is made. Every
// leftover must be adopted by that apply, or refused with a diagnostic that names it
// and the import command. Then the usual recovery (apply, destroy) must converge.

type crashCase struct {
	victim    string // "terraform" or "provider"
	savedPlan bool
}

func (c crashCase) String() string {
	p := "fresh-plan"
	if c.savedPlan {
		p = "saved-plan"
	}
	return "kill-" + c.victim + "/" + p
}

func TestE2E_Crashes(t *testing.T) {
	needTF(t)
	cases := []crashCase{{"terraform", true}, {"terraform", false}, {"provider", true}, {"provider", false}}
	n := trials(1, 8)
	for _, c := range cases {
		for i := 0; i < n; i++ {
			t.Run(fmt.Sprintf("%s/%02d", c, i), func(t *testing.T) {
				t.Parallel()
				runCrash(t, c)
			})
		}
	}
}

func runCrash(t *testing.T, c crashCase) {
	s := newScenario(t, "crashes/kill-"+c.victim, scenarioOpts{Sim: pvesim.Options{Speed: interruptSpeed}})
	s.vms = []tfrun.VM{s.vm("a"), s.vm("b")}
	s.write()
	if c.savedPlan {
		if r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-out=tfplan"); !r.OK() {
			t.Fatalf("plan -out failed:\n%s", r)
		}
	}
	tr := s.randomTrigger(45)
	s.sim.EnableRequestLog()
	var killedAt time.Time
	kill := func(p *tfrun.Process) error {
		defer func() { killedAt = time.Now() }()
		if c.victim == "provider" {
			if p.KillProviders() == 0 {
				return fmt.Errorf("no provider process to kill")
			}
			return nil
		}
		return p.Kill()
	}
	args := []string{"apply", "-auto-approve", "-input=false", "-no-color"}
	if c.savedPlan {
		args = append(args, "tfplan")
	}
	t.Logf("kill -9 %s after %d requests + %s", c.victim, tr.Requests, tr.Delay)
	r, fired := s.startAndSignal(tr, kill, args...)
	if fired {
		figures.note(s.cat, "killed mid-apply")
	} else {
		figures.note(s.cat, "apply ended before the kill")
	}
	t.Logf("the killed apply: exit %d, signaled %t; output ends:\n%s", r.ExitCode, r.Signaled, tail(tfrun.TrimOverridesWarning(r.Output()), 15))
	if fired && r.OK() {
		// The kill landed after the last RPC: terraform had its answers already.
		figures.note(s.cat, "apply completed before the kill took effect")
	}
	f := s.chk.Live(s.state())
	if len(f.Violations) > 0 {
		t.Errorf("right after the crash: %v", f.Err())
	}
	if len(f.Orphans) > 0 {
		figures.note(s.cat, "untracked right after the crash")
		t.Logf("untracked right after the crash: %v", f.Orphans)
	}
	s.waitTasksIdle()
	tl := s.timeline(killedAt)
	t.Logf("the requests around the kill:\n%s", tl)
	if c.victim == "terraform" && fired {
		// Its gRPC connection closed, the provider's create is cancelled: nothing but
		// what was already in flight may reach Proxmox.
		for vmid, n := range tl.Late {
			t.Errorf("VM %d got %d requests more than %s after terraform was killed: the provider went on without it", vmid, n, tailBound)
		}
	}
	s.importFinishedUntracked(tl)

	// The re-run: the saved plan again (it may be refused as stale when the killed
	// apply managed to write state, then a fresh plan), or a fresh apply.
	var rr *tfrun.Result
	if c.savedPlan {
		rr = s.ws.Apply(s.ctx, "tfplan")
		if !rr.OK() && strings.Contains(rr.Output(), "Saved plan is stale") {
			figures.note(s.cat, "saved plan stale")
			rr = s.apply()
		}
	} else {
		rr = s.apply()
	}
	if rr.OK() {
		figures.note(s.cat, "re-run adopted or replaced")
	} else {
		figures.note(s.cat, "re-run refused")
		out := rr.Output()
		if !strings.Contains(out, "terraform import") {
			t.Errorf("the re-run after the crash failed without naming the import command:\n%s", rr)
		}
		if !containsAny(out, s.prefix) {
			t.Errorf("the re-run after the crash failed without naming the VM:\n%s", rr)
		}
	}
	if f := s.chk.Live(s.state()); len(f.Violations) > 0 {
		t.Errorf("after the re-run: %v", f.Err())
	}
	s.converge()
}

// importFinishedUntracked handles the one window of a kill that cannot be closed
// (docs/design/identity.md): a create whose final mark write (the description without the
// "creating" line) was answered just before the kill, or was in flight when terraform
// died, leaves a finished VM that no state tracks and that no later create takes over (it
// cannot be told from another resource's VM). The remedy the docs give is to import it;
// the suite does so only when the final write lies within windowBound of the kill, and
// counts it by the time between the two. A finished untracked VM outside the window is a
// defect and fails the test. A VM still marked "creating" is left for the re-run.
func (s *scenario) importFinishedUntracked(tl crashTimeline) {
	s.t.Helper()
	tracked := map[int]bool{}
	for _, r := range s.state().OfType("proxy_vm") {
		tracked[r.Int("vmid")] = true
	}
	for _, v := range s.sim.State().VMs {
		if tracked[v.VMID] || v.Type != "qemu" || v.Template || !s.chk.Owns(v.Name) ||
			!strings.Contains(v.Description, "proxy-operator-managed=true") || strings.Contains(v.Description, "proxy-operator-state=creating") {
			continue
		}
		for _, vm := range s.vms {
			if vm.Name != v.Name {
				continue
			}
			d, ok := tl.finalPutToKill(v.VMID)
			if !ok || d > windowBound || -d > tailBound {
				s.t.Errorf("VM %d (%s) finished its create but is in no state, and its final mark write is not within %s of the kill (%s, known %t): "+
					"the crash promise is broken", v.VMID, v.Name, windowBound, d, ok)
				continue
			}
			figures.note(s.cat, "finished untracked, imported: final write "+windowBucket(d))
			s.t.Logf("VM %d (%s) finished its create %s before the kill but is in no state: importing it, as documented", v.VMID, v.Name, d)
			if r := s.ws.Import(s.ctx, vm.Addr(), fmt.Sprintf("vms/%d/%s", v.VMID, v.Name)); !r.OK() {
				s.t.Errorf("import of the finished untracked VM %d failed:\n%s", v.VMID, r)
			}
		}
	}
}
