package e2e

import (
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_PlanSaysRestart: with the real terraform binary, a cores change on a running VM
// plans with a warning that the VM will be restarted; with reboot_on_change = false the
// apply leaves the change pending (no power task), and the next plan still shows the
// change with a warning that it is pending.
func TestE2E_PlanSaysRestart(t *testing.T) {
	s := newScenario(t, "power", scenarioOpts{NoForeign: true})
	v := s.vm("a")
	s.vms = []tfrun.VM{v}
	s.mustApply()

	s.vms[0].Cores = 2
	s.write()
	r := s.ws.Plan(s.ctx)
	out := strings.Join(strings.Fields(r.Output()), " ") // the diagnostic is wrapped
	if r.ExitCode != 2 || !strings.Contains(out, "proxy VM "+v.Name+" will be restarted to apply cores 1 → 2") {
		t.Fatalf("plan (exit %d) does not say the VM will be restarted:\n%s", r.ExitCode, r)
	}

	s.vms[0].Extra = "  reboot_on_change = false"
	tasks := len(s.sim.State().Tasks)
	s.mustApply()
	for _, task := range s.sim.State().Tasks[tasks:] {
		if task.Type == "qmshutdown" || task.Type == "qmstop" || task.Type == "qmstart" {
			t.Errorf("reboot_on_change = false made a %s task", task.Type)
		}
	}
	r = s.ws.Plan(s.ctx)
	out = strings.Join(strings.Fields(r.Output()), " ")
	if r.ExitCode != 2 || !strings.Contains(out, "cores 2 is pending until the VM restarts; set reboot_on_change = true or restart it") ||
		!strings.Contains(out, "~ cores") {
		t.Fatalf("plan (exit %d) after the deferred apply does not show the pending change:\n%s", r.ExitCode, r)
	}
	if r := s.destroy(); !r.OK() {
		t.Fatalf("destroy:\n%s", r)
	}
}
