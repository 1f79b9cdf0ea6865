package e2e

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_VMPower_invoke (Terraform 1.14+): the documented proxy_vm_power example, run with
// `terraform apply -invoke`: the proxy is shut down gracefully and started again (no hard
// stop, no config write), Terraform prints the action's progress, and the next plan of the
// VM is empty.
func TestE2E_VMPower_invoke(t *testing.T) {
	needTF(t)
	tf := terraformAtLeast(t, "1.14.0", "actions (terraform apply -invoke)")
	s := newScenario(t, "actions/vm-power", scenarioOpts{NoForeign: true})
	p := *provider
	p.Terraform = tf
	s.ws = p.NewWorkspace(t)
	s.ws.Timeout = commandTimeout
	s.sim.EnableRequestLog()
	edge := s.vm("edge")
	edge.Resource = "edge"
	s.vms = []tfrun.VM{edge}
	example, err := os.ReadFile("../../examples/actions/proxy_vm_power/action.tf")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ws.WriteConfig(s.config() + "\n" + string(example)); err != nil {
		t.Fatal(err)
	}
	if r := s.ws.Apply(s.ctx); !r.OK() {
		t.Fatalf("apply failed:\n%s", r)
	}
	vmid := 0
	for _, v := range s.sim.State().VMs {
		if v.Name == edge.Name {
			vmid = v.VMID
		}
	}
	mark := len(s.sim.RequestLog())
	r := s.ws.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_vm_power.reboot_edge")
	if !r.OK() {
		t.Fatalf("the invoke failed:\n%s", r)
	}
	out := strings.Join(strings.Fields(r.Output()), " ")
	for _, want := range []string{"proxy_vm_power reboot: " + edge.Name, "shutting down on node", "is running (shutdown, then start)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the invoke's output lacks %q:\n%s", want, tfrun.TrimOverridesWarning(r.Stdout))
		}
	}
	var writes []string
	for _, req := range s.sim.RequestLog()[mark:] {
		if req.VMID == vmid && req.Method != http.MethodGet {
			writes = append(writes, req.Path[strings.LastIndex(req.Path, "/")+1:])
		}
	}
	if strings.Join(writes, ",") != "shutdown,start" {
		t.Errorf("requests to the VM %v, want a shutdown then a start", writes)
	}
	if p := s.ws.Plan(s.ctx); p.ExitCode != 0 {
		t.Errorf("the plan after the reboot is not empty (exit %d):\n%s", p.ExitCode, p)
	}
	if r := s.ws.Destroy(s.ctx); !r.OK() {
		t.Fatalf("destroy failed:\n%s", r)
	}
}
