package e2e

import (
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_Binding_UnboundDriftStopsThePlan: a 0.1.0 state (no smbios_uuid) whose genuine
// VM an Options or Notes user changed before the first apply with this version: renamed
// (adv3 N6), a forged instance line added (U4), its guest agent switched off (adv1 #13 on
// an unbound state). The plan fails, saying what differs and the ways out, and nothing is
// written; once the change is undone, one apply binds the resource and the destroy
// removes the VM and its seed (invariant 2: before, the plan replaced it and the VM and
// its seed outlived the resource, or the VM was stopped and deleted).
func TestE2E_Binding_UnboundDriftStopsThePlan(t *testing.T) {
	needTF(t)
	for _, tc := range []struct {
		name, say string
		edit      func(desc string) map[string]string
	}{
		{"rename", "renamed outside Terraform", func(desc string) map[string]string {
			return map[string]string{"description": desc, "name": "renamed-by-actor"}
		}},
		{"forged-instance", "names another VM", func(desc string) map[string]string {
			return map[string]string{"description": desc + "\n" + proxmox.MarkKeyInstance + "=11111111-2222-4333-8444-999999999999"}
		}},
		{"agent-off", "agent_enabled = false", func(desc string) map[string]string {
			return map[string]string{"description": desc, "agent": "0"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScenario(t, "identity/unbound-"+tc.name, scenarioOpts{NoForeign: true})
			vm := s.vm("ub")
			s.vms = []tfrun.VM{vm}
			s.mustApply()
			vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
			made, _ := s.sim.VM(vmid)
			old := withoutInstanceLine(made.Description)
			if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: tc.edit(old)}); err != nil {
				t.Fatal(err)
			}
			stripStateUUID(t, s)
			s.sim.EnableRequestLog()
			r := s.apply()
			flat := strings.Join(strings.Fields(r.Output()), " ")
			if r.OK() || !strings.Contains(flat, "Unable to replace proxy VM") || !strings.Contains(flat, tc.say) ||
				!strings.Contains(flat, "terraform state rm") {
				t.Errorf("apply: want the plan refused, saying %q and the ways out:\n%s", tc.say, r)
			}
			if w := writesTo(s, vmid); len(w) != 0 {
				t.Errorf("the refused apply wrote to VM %d: %v", vmid, w)
			}
			if st := s.state().OfType("proxy_vm"); len(st) != 1 || st[0].Int("vmid") != vmid {
				t.Errorf("state %+v after the refused apply: want the resource at VMID %d still", st, vmid)
			}
			// The user restores what changed (the configuration sets no agent: the default, on).
			if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"description": old, "name": vm.Name, "agent": made.Config["agent"]}}); err != nil {
				t.Fatal(err)
			}
			if r := s.apply(); !r.OK() {
				t.Fatalf("apply after the restore:\n%s", r)
			}
			if got := s.state().OfType("proxy_vm")[0].String("smbios_uuid"); got == "" {
				t.Errorf("the apply after the restore did not bind the resource")
			}
			if r := s.destroy(); !r.OK() {
				t.Fatalf("destroy:\n%s", r)
			}
			if _, ok := s.sim.VM(vmid); ok {
				t.Errorf("the destroy left VM %d", vmid)
			}
			if seeds := s.seedVolumes(); len(seeds) != 0 {
				t.Errorf("the destroy left seeds %v", seeds)
			}
		})
	}
}
