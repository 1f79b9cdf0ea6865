package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// The listing lags: at a real host's pace (speed 1), with the status snapshot model in its
// worst case (a snapshot right when the clone starts, the next a full 10 s interval after
// it ends) and a clone of a big template (30 s), /cluster/resources lists the new VM as
// "VM <vmid>", stopped, lock clone, for the whole clone and 10 s after it. The config is
// the authority meanwhile; the backend must wait such an entry out, never clone a second
// VM, never report a live VM gone.

const lagClone = 30 * time.Second

func lagScenario(t *testing.T, cat string) *scenario {
	t.Helper()
	s := newScenario(t, cat, scenarioOpts{NoForeign: true, Sim: pvesim.Options{
		Speed:     1,
		Durations: pvesim.Durations{Clone: lagClone},
		Listing:   pvesim.Listing{SnapshotAtCloneStart: true, StaleAfterClone: true},
	}})
	v := s.vm("lag")
	noWait := false
	v.WaitForIP = &noWait
	s.vms = []tfrun.VM{v}
	return s
}

// ourVMs are the simulator's VMs in the scenario's VMID range (named or not yet).
func (s *scenario) ourVMs() []pvesim.VMState {
	var out []pvesim.VMState
	for _, v := range s.sim.State().VMs {
		if v.VMID >= vmidMin && v.VMID <= vmidMax && !v.Template {
			out = append(out, v)
		}
	}
	return out
}

// cloneRunning reports whether a clone task has been running for at least d.
func (s *scenario) cloneRunning(d time.Duration) bool {
	for _, t := range s.sim.State().Tasks {
		if t.Type == "qmclone" && t.Status == "running" && time.Since(t.Submitted) >= d {
			return true
		}
	}
	return false
}

func TestE2E_LaggingListing_KillMidCloneAdoptsTheOneVM(t *testing.T) {
	needTF(t)
	for _, victim := range []string{"terraform", "provider"} {
		t.Run("kill-"+victim, func(t *testing.T) {
			t.Parallel()
			s := lagScenario(t, "lagging-listing/kill-"+victim)
			s.write()
			p, err := s.ws.Start(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color")
			if err != nil {
				t.Fatal(err)
			}
			// Kill a third into the clone: the entry reads "VM <vmid>", lock clone.
			if !tfrun.WaitUntil(s.ctx, 2*time.Minute, func() bool { return s.cloneRunning(lagClone / 3) }) {
				_ = p.Kill()
				t.Fatalf("no clone ran:\n%s", p.Stdout()+p.Stderr())
			}
			if victim == "provider" {
				if p.KillProviders() == 0 {
					t.Fatal("no provider process to kill")
				}
			} else if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			p.WaitGrace(2 * time.Second)
			if n := len(s.ourVMs()); n != 1 {
				t.Fatalf("%d VMs right after the kill, want the one being cloned", n)
			}
			// Re-apply at once, the clone still running and the listing stale.
			r := s.apply()
			if !r.OK() {
				t.Fatalf("the re-apply after the kill failed:\n%s", r)
			}
			vms := s.ourVMs()
			if len(vms) != 1 {
				t.Fatalf("%d VMs after the re-apply, want exactly one: %+v", len(vms), vms)
			}
			res := s.state().OfType("proxy_vm")
			if len(res) != 1 || res[0].Int("vmid") != vms[0].VMID {
				t.Fatalf("state %+v, want the one VM %d adopted", res, vms[0].VMID)
			}
			if f := s.chk.Live(s.state()).Strict(); len(f.Violations) > 0 {
				t.Errorf("after the re-apply: %v", f.Err())
			}
		})
	}
}

func TestE2E_LaggingListing_CreateWithoutWaitThenPlanIsEmpty(t *testing.T) {
	t.Parallel()
	s := lagScenario(t, "lagging-listing/create-then-plan")
	s.mustApply()
	// At once: the listing still names the VM "VM <vmid>" (sampled mid-clone).
	r := s.ws.Plan(s.ctx)
	if r.ExitCode != 0 {
		t.Fatalf("the plan right after the create: exit %d, want 0 (no error, no change):\n%s", r.ExitCode, r)
	}
	if res := s.state().OfType("proxy_vm"); len(res) != 1 {
		t.Fatalf("state %+v after the plan, want the VM kept", res)
	}
}

func TestE2E_LaggingListing_DestroyRightAfterCreateLeavesNothing(t *testing.T) {
	t.Parallel()
	s := lagScenario(t, "lagging-listing/destroy-after-create")
	s.mustApply()
	if r := s.destroy(); !r.OK() {
		t.Fatalf("the destroy right after the create failed:\n%s", r)
	}
	if vms := s.ourVMs(); len(vms) != 0 {
		t.Errorf("VMs left after the destroy: %+v", vms)
	}
	for _, v := range s.sim.State().Volumes {
		if strings.Contains(v.VolID, s.prefix) {
			t.Errorf("seed ISO left after the destroy: %s", v.VolID)
		}
	}
	if res := s.state().OfType("proxy_vm"); len(res) != 0 {
		t.Errorf("state after the destroy: %+v", res)
	}
}
