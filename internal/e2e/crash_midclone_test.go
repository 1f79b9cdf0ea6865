package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_CrashMidClone: kill -9 of terraform or of the provider while the clone task
// runs, so before Terraform saved any state; then the saved plan is applied again, or a
// fresh plan is made. The re-run mints a new uid, walks the same VMIDs, waits for the
// clone lock, and takes the half-made VM (still marked "creating") over: exactly one VM
// of that name, at the VMID the killed apply cloned onto, tracked by the state with the
// re-run's uid, no second clone, nothing untracked; then the usual recovery converges.
func TestE2E_CrashMidClone(t *testing.T) {
	needTF(t)
	for _, c := range []crashCase{{"terraform", true}, {"terraform", false}, {"provider", true}, {"provider", false}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			// A clone of 40 simulated seconds at speed 20: 2 s of wall time to kill it in.
			s := newScenario(t, "crashes/mid-clone", scenarioOpts{Sim: pvesim.Options{Speed: 20, Durations: pvesim.Durations{Clone: 40 * time.Second}}})
			vm := s.vm("mc")
			s.vms = []tfrun.VM{vm}
			s.write()
			args := []string{"apply", "-auto-approve", "-input=false", "-no-color"}
			if c.savedPlan {
				if r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-out=tfplan"); !r.OK() {
					t.Fatalf("plan -out failed:\n%s", r)
				}
				args = append(args, "tfplan")
			}
			p, err := s.ws.Start(s.ctx, args...)
			if err != nil {
				t.Fatal(err)
			}
			if !tfrun.WaitStat(s.ctx, s.sim, tfrun.StatClone, 1, 60*time.Second) {
				t.Fatal("no clone request")
			}
			time.Sleep(300 * time.Millisecond)
			if c.victim == "provider" {
				if p.KillProviders() == 0 {
					t.Fatal("no provider process to kill")
				}
			} else if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			r := p.Wait()
			_ = p.KillProviders() // a provider left behind by a killed terraform
			cloning := s.namedOrCloning(vm.Name)
			if len(cloning) != 1 {
				t.Fatalf("right after the kill: %d VMs of the scenario, want the one being cloned:\n%s", len(cloning), tfrun.Describe(s.sim.State()))
			}
			vmid := cloning[0]
			if v, _ := s.sim.VM(vmid); v.Lock != "clone" {
				t.Logf("the clone had ended before the kill (lock %q)", v.Lock)
			}
			if n := len(s.state().OfType("proxy_vm")); n != 0 {
				t.Logf("the killed apply (exit %d) saved %d proxy_vm", r.ExitCode, n)
			}
			var rr *tfrun.Result
			if c.savedPlan {
				rr = s.ws.Apply(s.ctx, "tfplan")
				if !rr.OK() && strings.Contains(rr.Output(), "Saved plan is stale") {
					rr = s.apply()
				}
			} else {
				rr = s.apply()
			}
			if !rr.OK() {
				t.Fatalf("the re-run failed:\n%s", rr)
			}
			st := s.state().OfType("proxy_vm")
			named := s.namedVMs(vm.Name)
			wrong := 0
			switch {
			case len(named) != 1:
				wrong++
				t.Errorf("%d VMs named %s after the re-run, want 1:\n%s", len(named), vm.Name, tfrun.Describe(s.sim.State()))
			case len(st) != 1 || st[0].Int("vmid") != vmid:
				t.Errorf("the state holds %+v, want the half-made VM %d adopted", st, vmid)
			}
			// The takeover destroys the half-made VM and clones afresh (a proof can be copied, so
			// only a VM the create cloned itself gets its seed, decision: creating-proof): the
			// killed apply's clone and the re-run's, onto the same VMID.
			if n := s.sim.Stats()[tfrun.StatClone]; n != 2 {
				t.Errorf("%d clone requests in all, want 2: the killed apply's and the takeover's afresh", n)
			}
			// A takeover is never silent: a warning names the VMID (decision: creating-proof).
			if flat := strings.Join(strings.Fields(rr.Output()), " "); !strings.Contains(flat, "Warning: Proxy VM create took over an interrupted create") ||
				!strings.Contains(flat, fmt.Sprintf("VMID %d", vmid)) {
				t.Errorf("the re-run took the VM over without the warning naming VMID %d:\n%s", vmid, rr)
			}
			if v, ok := s.sim.VM(vmid); !ok || len(st) != 1 || !strings.Contains(v.Description, "proxy-operator-uid="+st[0].String("uid")) ||
				strings.Contains(v.Description, "proxy-operator-state=creating") {
				t.Errorf("VM %d's mark %q, want the re-run's uid, finished", vmid, v.Description)
			}
			o := s.converge()
			figures.note(s.cat, fmt.Sprintf("taken over: %t", o.Converged && wrong == 0))
		})
	}
}

// namedOrCloning returns the VMIDs of the scenario's VMs called name, and of VMs being
// cloned (nameless), in the order the simulator lists them.
func (s *scenario) namedOrCloning(name string) []int {
	var out []int
	for _, v := range s.sim.State().VMs {
		if _, base := s.chk.Baseline.VMs[v.VMID]; base {
			continue
		}
		if v.Type == "qemu" && !v.Template && (v.Name == name || v.Name == "" || v.Lock == "clone") {
			out = append(out, v.VMID)
		}
	}
	return out
}
