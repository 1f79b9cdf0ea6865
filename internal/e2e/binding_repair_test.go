package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_Binding_BoundMarkEditedRepaired (Terraform 1.14+, actions): a Notes-only user
// deletes (forge=false) or rewrites (forge=true) the instance line of a bound resource's
// VM. The plan warns that the mark was edited outside Terraform and updates in place, the
// apply writes the line back with one config write, the next plan has no changes, and
// proxy_vm_power, refused before, acts again (adv3 S1: "No changes", and the action
// refused for good).
func TestE2E_Binding_BoundMarkEditedRepaired(t *testing.T) {
	needTF(t)
	for _, forge := range []bool{false, true} {
		t.Run(fmt.Sprintf("forge=%v", forge), func(t *testing.T) {
			s := newScenario(t, "identity/bound-edit", scenarioOpts{NoForeign: true})
			p := *provider
			p.Terraform = latestTerraform(t)
			s.ws = p.NewWorkspace(t)
			s.ws.Timeout = commandTimeout
			vm := s.vm("be")
			vm.Resource = "edge"
			s.vms = []tfrun.VM{vm}
			action := "\naction \"proxy_vm_power\" \"reboot_edge\" {\n  config {\n    id = proxy_vm.edge.id\n    uid = proxy_vm.edge.uid\n    power = \"reboot\"\n  }\n}\n"
			if err := s.ws.WriteConfig(s.config() + action); err != nil {
				t.Fatal(err)
			}
			if r := s.ws.Apply(s.ctx); !r.OK() {
				t.Fatalf("apply:\n%s", r)
			}
			vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
			made, _ := s.sim.VM(vmid)
			desc := withoutInstanceLine(made.Description)
			if forge {
				desc += "\n" + proxmox.MarkKeyInstance + "=11111111-2222-4333-8444-777777777777"
			}
			if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"description": desc}}); err != nil {
				t.Fatal(err)
			}
			invoke := func() *tfrun.Result {
				return s.ws.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_vm_power.reboot_edge")
			}
			s.sim.EnableRequestLog()
			if r := invoke(); r.OK() || len(writesTo(s, vmid)) != 0 {
				t.Fatalf("the power action on the edited mark: want a refusal with no write, got writes %v:\n%s", writesTo(s, vmid), r)
			}
			plan := s.ws.Plan(s.ctx)
			flat := strings.Join(strings.Fields(plan.Output()), " ")
			if plan.ExitCode != 2 || !strings.Contains(flat, "0 to add, 1 to change, 0 to destroy") ||
				!strings.Contains(flat, "Proxy VM mark edited outside Terraform") {
				t.Fatalf("plan: want one in-place update with the mark-edited warning, got exit %d:\n%s", plan.ExitCode, plan)
			}
			s.sim.ResetRequestLog()
			if r := s.ws.Apply(s.ctx); !r.OK() {
				t.Fatalf("apply:\n%s", r)
			}
			w := writesTo(s, vmid)
			if len(w) != 1 || !strings.HasSuffix(w[0], "/config") {
				t.Errorf("the repair sent %v, want one config write", w)
			}
			v, _ := s.sim.VM(vmid)
			want := strings.TrimPrefix(strings.Split(v.Config["smbios1"], ",")[0], "uuid=")
			if inst := proxmox.ParseMark(v.Description).Instance; inst != want {
				t.Errorf("instance line %q after the apply, want the VM's SMBIOS uuid %q:\n%s", inst, want, v.Description)
			}
			if strings.Count(v.Description, proxmox.MarkKeyInstance+"=") != 1 {
				t.Errorf("the repaired mark has not exactly one instance line:\n%s", v.Description)
			}
			if again := s.ws.Plan(s.ctx); again.ExitCode != 0 {
				t.Errorf("the plan after the repair is not empty (exit %d):\n%s", again.ExitCode, again)
			}
			if r := invoke(); !r.OK() {
				t.Errorf("the power action after the repair:\n%s", r)
			}
		})
	}
}

// TestE2E_Binding_RenamedPowerSaysRenamed (Terraform 1.14+, actions): an Options user
// renames a bound resource's VM; proxy_vm_power refuses it with no write, saying it was
// renamed and that an apply names it back, not that its VMID was reused (adv3 R1).
func TestE2E_Binding_RenamedPowerSaysRenamed(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/renamed-power", scenarioOpts{NoForeign: true})
	p := *provider
	p.Terraform = latestTerraform(t)
	s.ws = p.NewWorkspace(t)
	s.ws.Timeout = commandTimeout
	vm := s.vm("rp")
	vm.Resource = "edge"
	s.vms = []tfrun.VM{vm}
	action := "\naction \"proxy_vm_power\" \"reboot_edge\" {\n  config {\n    id = proxy_vm.edge.id\n    uid = proxy_vm.edge.uid\n    power = \"reboot\"\n  }\n}\n"
	if err := s.ws.WriteConfig(s.config() + action); err != nil {
		t.Fatal(err)
	}
	if r := s.ws.Apply(s.ctx); !r.OK() {
		t.Fatalf("apply:\n%s", r)
	}
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"name": "renamed-by-actor"}}); err != nil {
		t.Fatal(err)
	}
	s.sim.EnableRequestLog()
	r := s.ws.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_vm_power.reboot_edge")
	flat := strings.Join(strings.Fields(r.Output()), " ")
	if r.OK() || !strings.Contains(flat, "was renamed outside Terraform") || strings.Contains(flat, "VMID reused") ||
		strings.Contains(flat, "not this resource's any more") {
		t.Errorf("the power action on the renamed VM: want a refusal saying it was renamed:\n%s", r)
	}
	if w := writesTo(s, vmid); len(w) != 0 {
		t.Errorf("the power action wrote to VM %d: %v", vmid, w)
	}
}

// TestE2E_Binding_OldStatePowerSaysBind (Terraform 1.14+, actions): on a 0.1.0 state's VM
// (no instance line, no smbios_uuid) proxy_vm_power refuses with no write, saying to
// apply once to bind it, and not that the VM is "not this resource's any more" or that a
// plan replaces it; after that apply the action acts.
func TestE2E_Binding_OldStatePowerSaysBind(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/old-power", scenarioOpts{NoForeign: true})
	p := *provider
	p.Terraform = latestTerraform(t)
	s.ws = p.NewWorkspace(t)
	s.ws.Timeout = commandTimeout
	vm := s.vm("op")
	vm.Resource = "edge"
	s.vms = []tfrun.VM{vm}
	action := "\naction \"proxy_vm_power\" \"reboot_edge\" {\n  config {\n    id = proxy_vm.edge.id\n    uid = proxy_vm.edge.uid\n    power = \"reboot\"\n  }\n}\n"
	if err := s.ws.WriteConfig(s.config() + action); err != nil {
		t.Fatal(err)
	}
	if r := s.ws.Apply(s.ctx); !r.OK() {
		t.Fatalf("apply:\n%s", r)
	}
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
	made, _ := s.sim.VM(vmid)
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"description": withoutInstanceLine(made.Description)}}); err != nil {
		t.Fatal(err)
	}
	stripStateUUID(t, s)
	s.sim.EnableRequestLog()
	invoke := func() *tfrun.Result {
		return s.ws.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_vm_power.reboot_edge")
	}
	r := invoke()
	flat := strings.Join(strings.Fields(r.Output()), " ")
	if r.OK() || !strings.Contains(flat, "apply the proxy_vm once with this version to bind it") ||
		strings.Contains(flat, "any more") || strings.Contains(flat, "replaces") {
		t.Errorf("the power action before binding: want a refusal saying only to bind:\n%s", r)
	}
	if w := writesTo(s, vmid); len(w) != 0 {
		t.Errorf("the refused action wrote to VM %d: %v", vmid, w)
	}
	if r := s.ws.Apply(s.ctx); !r.OK() {
		t.Fatalf("binding apply:\n%s", r)
	}
	if r := invoke(); !r.OK() {
		t.Errorf("the power action after binding:\n%s", r)
	}
}
