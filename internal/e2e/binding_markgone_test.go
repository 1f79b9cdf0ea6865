package e2e

import (
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// userNotes is what a Notes-only user leaves in the description of a bound resource's VM
// after wiping its mark.
const userNotes = "maintenance window: Sundays 02:00"

// withoutMarkLine is desc without its lines of key.
func withoutMarkLine(desc, key string) string {
	var kept []string
	for _, l := range strings.Split(desc, "\n") {
		if !strings.HasPrefix(l, key+"=") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// TestE2E_Binding_BoundMarkGoneRepaired (Terraform 1.14+, actions): a Notes-only user
// wipes the whole mark of a bound resource's VM (leaving a note of their own; renaming the
// VM too), deletes its uid line, or rewrites its uid. The VM's SMBIOS uuid is still the
// one the state recorded, so it is still the resource's: proxy_vm_power (no state) refuses
// it with no write, saying that an apply of the proxy_vm writes the name and mark back; the
// plan warns that the mark was edited outside Terraform and updates in place (nothing to
// add, nothing to destroy); the apply writes the whole finished mark the create wrote (and
// the name) back with one config write on the same VMID, keeping the user's note; the next
// plan is empty, the action acts again, and the destroy leaves nothing. Before, the
// refresh took the VM for another at its VMID and the apply dropped it from the state
// (creating another VM, or failing to), leaving it and its seed behind for good.
func TestE2E_Binding_BoundMarkGoneRepaired(t *testing.T) {
	needTF(t)
	edits := []struct {
		name   string
		edit   func(desc string) string
		rename bool
	}{
		{"wiped", func(string) string { return userNotes }, false},
		{"wiped and renamed", func(string) string { return userNotes }, true},
		{"uid deleted", func(desc string) string { return withoutMarkLine(desc, proxmox.MarkKeyUID) }, false},
		{"uid rewritten", func(desc string) string {
			return strings.Replace(withoutMarkLine(desc, proxmox.MarkKeyUID), proxmox.MarkKeyManaged+"=true",
				proxmox.MarkKeyManaged+"=true\n"+proxmox.MarkKeyUID+"=0f0f0f0f-1111-4222-8333-444444444444", 1)
		}, false},
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			s := newScenario(t, "identity/bound-gone", scenarioOpts{NoForeign: true})
			p := *provider
			p.Terraform = latestTerraform(t)
			s.ws = p.NewWorkspace(t)
			s.ws.Timeout = commandTimeout
			s.pc.Extra += "\n  uid_namespace = \"team-a\"\n  cloud_init_digest_key = \"e2e-digest-key-0123456789\"\n"
			vm := s.vm("mg")
			vm.Resource = "edge"
			vm.CloudInit = "#cloud-config\nhostname: edge\n"
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
			if x := proxmox.ParseMarkExtra(made.Description); x.UserDataDigest == "" || x.CreatedBy == "" ||
				!strings.Contains(made.Description, proxmox.MarkKeyNamespace+"=team-a") {
				t.Fatalf("the create wrote %q, want the namespace, created-by and user-data digest lines", made.Description)
			}
			patch := map[string]string{"description": e.edit(made.Description)}
			if e.rename {
				patch["name"] = "renamed-by-actor"
			}
			if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: patch}); err != nil {
				t.Fatal(err)
			}
			invoke := func() *tfrun.Result {
				return s.ws.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_vm_power.reboot_edge")
			}
			s.sim.EnableRequestLog()
			if r := invoke(); r.OK() || len(writesTo(s, vmid)) != 0 ||
				!strings.Contains(strings.Join(strings.Fields(r.Output()), " "), "its apply writes the name and mark back") {
				t.Fatalf("the power action on the edited mark: want a refusal saying an apply writes the mark back, with no write, "+
					"got writes %v:\n%s", writesTo(s, vmid), r)
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
			if w := writesTo(s, vmid); len(w) != 1 || !strings.HasSuffix(w[0], "/config") {
				t.Errorf("the repair sent %v, want one config write", w)
			}
			if ids := s.chk.VMIDs()[vm.Name]; len(ids) != 1 || ids[0] != vmid {
				t.Errorf("VMs named %s after the repair: %v, want only VMID %d", vm.Name, ids, vmid)
			}
			if got := s.state().OfType("proxy_vm"); len(got) != 1 || got[0].Int("vmid") != vmid {
				t.Errorf("the state after the repair does not hold VMID %d alone", vmid)
			}
			v, _ := s.sim.VM(vmid)
			want := made.Description
			if strings.HasPrefix(e.name, "wiped") {
				want += "\n\n" + userNotes
			}
			if v.Name != vm.Name {
				t.Errorf("the VM is named %q after the repair, want %q", v.Name, vm.Name)
			}
			if v.Description != want {
				t.Errorf("the description after the repair:\n%s\nwant the finished mark as the create wrote it:\n%s", v.Description, want)
			}
			if again := s.ws.Plan(s.ctx); again.ExitCode != 0 {
				t.Errorf("the plan after the repair is not empty (exit %d):\n%s", again.ExitCode, again)
			}
			if r := invoke(); !r.OK() {
				t.Errorf("the power action after the repair:\n%s", r)
			}
			if r := s.destroy(); !r.OK() {
				t.Fatalf("destroy:\n%s", r)
			}
			if f := s.chk.Gone(); len(f.Orphans) != 0 || len(f.Violations) != 0 {
				t.Errorf("after the destroy: %+v", f)
			}
		})
	}
}
