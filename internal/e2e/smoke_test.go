package e2e

import (
	"os"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_Lifecycle is the baseline every other scenario perturbs: apply two VMs, check
// the invariants, empty plan, destroy, nothing left.
func TestE2E_Lifecycle(t *testing.T) {
	s := newScenario(t, "lifecycle", scenarioOpts{Trace: os.Getenv("E2E_TRACE") != ""})
	defer func() {
		if t.Failed() {
			t.Logf("sim:\n%s", tfrun.Describe(s.sim.State()))
			t.Logf("logs: %v", s.ws.LogFiles())
		}
	}()
	s.vms = append(s.vms, s.vm("a"), s.vm("b"))
	s.mustApply()
	if f := s.chk.Live(s.state()); !f.OK() {
		t.Fatalf("after apply: %v", f.Err())
	}
	s.converge()
}
