package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_Identity_FinishedUntrackedIsNamed is the kill between a create's last step and
// Terraform's state write, made deterministic: the VM is finished and then dropped from
// the state (terraform state rm), as if terraform had died before writing it. The next
// apply cannot tell it from another resource's VM, so it makes a new one, but it warns,
// naming that VMID and the import command. Following the advice (import, destroy) leaves
// nothing behind.
func TestE2E_Identity_FinishedUntrackedIsNamed(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/finished-untracked", scenarioOpts{})
	vm := s.vm("lost")
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	old := s.state().OfType("proxy_vm")[0].Int("vmid")
	if r := s.ws.Run(s.ctx, "state", "rm", "-no-color", vm.Addr()); !r.OK() {
		t.Fatalf("state rm failed:\n%s", r)
	}

	r := s.apply()
	if !r.OK() {
		t.Fatalf("the apply after the lost state failed:\n%s", r)
	}
	cur := s.state().OfType("proxy_vm")[0].Int("vmid")
	if cur == old {
		t.Fatalf("the create took over the finished VM %d", old)
	}
	out := strings.Join(strings.Fields(r.Output()), " ") // terraform wraps diagnostics
	for _, want := range []string{
		"Warning: Recent proxy VM of the same name left alone",
		fmt.Sprintf("VMID %d on node", old),
		fmt.Sprintf("terraform import <address> vms/%d/%s", old, vm.Name),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the apply's output lacks %q:\n%s", want, tfrun.TrimOverridesWarning(out))
		}
	}

	// The remedy: the new VM destroyed, the untracked one imported and destroyed.
	if r := s.destroy(); !r.OK() {
		t.Fatalf("destroy of the new VM failed:\n%s", r)
	}
	if r := s.ws.Import(s.ctx, vm.Addr(), fmt.Sprintf("vms/%d/%s", old, vm.Name)); !r.OK() {
		t.Fatalf("import of the untracked VM %d failed:\n%s", old, r)
	}
	if r := s.destroy(); !r.OK() {
		t.Fatalf("destroy of the imported VM failed:\n%s", r)
	}
	gone := s.chk.Gone()
	for _, v := range gone.Violations {
		t.Errorf("after destroy: %s", v)
	}
	for _, o := range gone.Orphans {
		t.Errorf("orphan: %s", o)
	}
}
