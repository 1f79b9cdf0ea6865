package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Messages: each failure a user meets says what happened and what to do, not what a
// neighbouring failure would. Each test drives the real terraform and provider binary into
// one failure and reads the error diagnostics of its -json output.

// messageSpeed runs the simulator five times faster than a real host: a guest agent answers
// about 8 s after the start, long enough to act while a create waits for it.
const messageSpeed = 5

// jsonApply starts `terraform apply -json` in the scenario's workspace.
func (s *scenario) jsonApply() *tfrun.Process {
	s.t.Helper()
	s.write()
	p, err := s.ws.Start(s.ctx, "apply", "-auto-approve", "-input=false", "-json")
	if err != nil {
		s.t.Fatal(err)
	}
	return p
}

// errorDiags returns the provider's error diagnostics of a -json command ("Unable to ...";
// not Terraform's own, such as "execution halted" after an interrupt), failing the test when
// there are none.
func errorDiags(t *testing.T, r *tfrun.Result) []tfrun.Diagnostic {
	t.Helper()
	var errs []tfrun.Diagnostic
	for _, d := range tfrun.Errors(tfrun.ParseDiagnostics(r.Stdout)) {
		if strings.HasPrefix(d.Summary, "Unable to ") {
			errs = append(errs, d)
			t.Logf("%s (%s):\n%s", d.Summary, d.Address, d.Detail)
		}
	}
	if len(errs) == 0 {
		t.Fatalf("no error diagnostic (exit %d):\n%s", r.ExitCode, tail(tfrun.TrimOverridesWarning(r.Output()), 40))
	}
	return errs
}

// waitingForAddress waits until the guest agent of n of the scenario's VMs has been asked
// for the address: each of those creates has started its VM and waits for the address. The
// simulator's request log must be on (EnableRequestLog, before the command).
func (s *scenario) waitingForAddress(n int) bool {
	return tfrun.WaitUntil(s.ctx, commandTimeout, func() bool {
		names := map[int]string{}
		for _, v := range s.sim.State().VMs {
			names[v.VMID] = v.Name
		}
		asked := map[int]bool{}
		for _, r := range s.sim.RequestLog() {
			if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/agent/network-get-interfaces") && strings.HasPrefix(names[r.VMID], s.prefix) {
				asked[r.VMID] = true
			}
		}
		return len(asked) >= n
	})
}

// mustSay checks that text holds every want and none of the refused phrases.
func mustSay(t *testing.T, what, text string, want, refused []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
	for _, r := range refused {
		if strings.Contains(text, r) {
			t.Errorf("%s says %q:\n%s", what, r, text)
		}
	}
}

// TestE2E_Message_SameConfigurationTakenOver: two workspaces apply the same configuration
// at once (two pipelines of one repository). The second takes over the first one's creates
// (same names, same uid_namespace, still marked creating while they wait for the guest
// agent), stopping and rebuilding each VM. Every failed create of the first workspace must
// say that its VMID was taken over by another apply, never that something outside
// Terraform stopped the VM, and the first workspace's state must hold no entry pointing at
// the VMs the second one owns now. Nothing is left once the second destroys its VMs.
func TestE2E_Message_SameConfigurationTakenOver(t *testing.T) {
	needTF(t)
	t.Parallel()
	// The first workspace's guests never get their agent (it would end its wait first):
	// the second workspace does not wait for an address.
	s := newScenario(t, "messages", scenarioOpts{NoForeign: true,
		Sim: pvesim.Options{Speed: messageSpeed, Durations: pvesim.Durations{AgentInstall: time.Hour}}})
	names := []string{"a", "b", "c"}
	for _, n := range names {
		s.vms = append(s.vms, s.vm(n))
	}
	other := s.sibling(t)
	for _, n := range names {
		v := s.vm(n)
		v.WaitForIP = tfrun.Bool(false)
		other.vms = append(other.vms, v)
	}

	s.sim.EnableRequestLog()
	first := s.jsonApply()
	if !s.waitingForAddress(len(names)) {
		t.Fatalf("the first workspace's VMs never ran:\n%s", tfrun.Describe(s.sim.State()))
	}
	if r := other.apply(); !r.OK() {
		t.Fatalf("the second workspace's apply failed:\n%s", r)
	}
	r := first.Wait()
	errs := errorDiags(t, r)
	if len(errs) != len(names) {
		t.Errorf("%d error diagnostics, want one per VM (%d)", len(errs), len(names))
	}
	for _, d := range errs {
		mustSay(t, "the losing create's error", d.Text(),
			[]string{"was taken over by another apply", "the next apply of this resource creates its own VM", "Nothing is saved in the state"},
			[]string{"something outside Terraform", "stopped", "vanished"})
	}
	if got := s.state().OfType("proxy_vm"); len(got) != 0 {
		t.Errorf("the first workspace's state holds %d proxy_vm, want none (each would point at a VM the second owns): %v", len(got), got)
	}
	theirs := other.state().OfType("proxy_vm")
	if len(theirs) != len(names) {
		t.Fatalf("the second workspace holds %d proxy_vm, want %d", len(theirs), len(names))
	}
	if f := s.chk.Live(other.state()).Strict(); !f.OK() {
		t.Errorf("after both applies: %v", f.Err())
	}
	if r := other.destroy(); !r.OK() {
		t.Fatalf("the second workspace's destroy failed:\n%s", r)
	}
	if f := s.chk.Gone(); !f.OK() {
		t.Errorf("after the destroy: %v", f.Err())
	}
}

// TestE2E_Message_InterruptDuringAddressWait: Ctrl-C while a create waits for the guest
// agent's address says it was interrupted, not that the address did not come before the
// timeout or that the guest lacks the agent; the VM stays in the state, tainted, and a
// destroy leaves nothing.
func TestE2E_Message_InterruptDuringAddressWait(t *testing.T) {
	needTF(t)
	t.Parallel()
	s := newScenario(t, "messages", scenarioOpts{NoForeign: true,
		Sim: pvesim.Options{Speed: messageSpeed, Durations: pvesim.Durations{AgentInstall: 10 * time.Minute}}})
	s.vms = []tfrun.VM{s.vm("i")}
	s.sim.EnableRequestLog()
	p := s.jsonApply()
	if !s.waitingForAddress(1) {
		t.Fatalf("the VM never ran:\n%s", tfrun.Describe(s.sim.State()))
	}
	if err := p.Interrupt(); err != nil {
		t.Fatal(err)
	}
	r := p.Wait()
	errs := errorDiags(t, r)
	for _, d := range errs {
		mustSay(t, "the interrupted create's error", d.Text(),
			[]string{"interrupted while waiting for the guest agent", "The operation was interrupted", "tainted"},
			[]string{"before the timeout", "must run qemu-guest-agent", "ran out of time"})
	}
	st := s.state().OfType("proxy_vm")
	if len(st) != 1 || !st[0].Tainted {
		t.Errorf("the state holds %v, want the VM, tainted", st)
	}
	// The agent never comes in this simulator: the tainted VM is destroyed, not replaced.
	s.waitTasksIdle()
	if r := s.destroy(); !r.OK() {
		t.Fatalf("destroy after the interrupt failed:\n%s", r)
	}
	if f := s.chk.Gone(); !f.OK() {
		t.Errorf("after the destroy: %v", f.Err())
	}
}

// TestE2E_Message_EndpointDiesMidCreate: the endpoint stops answering while creates wait
// for the guest agent, after each VM was cloned, seeded, configured and started. The error
// says what was done and that the resource is replaced at the next apply, never "nothing
// was changed"; the state keeps each VM, tainted.
func TestE2E_Message_EndpointDiesMidCreate(t *testing.T) {
	needTF(t)
	t.Parallel()
	s := newScenario(t, "messages", scenarioOpts{NoForeign: true,
		Sim: pvesim.Options{Speed: messageSpeed, Durations: pvesim.Durations{AgentInstall: time.Hour}}})
	s.pc.RequestTimeout = "5s"
	s.vms = []tfrun.VM{s.vm("e1"), s.vm("e2")}
	s.sim.EnableRequestLog()
	p := s.jsonApply()
	if !s.waitingForAddress(len(s.vms)) {
		t.Fatalf("the VMs never ran:\n%s", tfrun.Describe(s.sim.State()))
	}
	s.sim.Close()
	r := p.Wait()
	errs := errorDiags(t, r)
	if len(errs) != len(s.vms) {
		t.Errorf("%d error diagnostics, want one per VM (%d)", len(errs), len(s.vms))
	}
	for _, d := range errs {
		mustSay(t, "the create's error", d.Text(),
			[]string{"does not answer", "stopped answering during the create, after the provider had cloned template",
				"uploaded its seed ISO", "started it", "The VM is saved in the state as tainted: the next apply destroys it and creates it again"},
			[]string{"nothing was changed"})
	}
	st := s.state().OfType("proxy_vm")
	if len(st) != len(s.vms) {
		t.Fatalf("the state holds %d proxy_vm, want %d (tainted)", len(st), len(s.vms))
	}
	for _, res := range st {
		if !res.Tainted {
			t.Errorf("%s is not tainted", res.Address)
		}
	}
}

// TestE2E_Message_VMIDRangeFull: every VMID the name probes in a small vmid_range holds
// another guest; the last one free is taken by another guest while the create's clone
// request is on its way (Proxmox answers "config file already exists"). The error says
// retrying will not help and what to change, never names another guest's VMID as the
// VM's, and the state keeps no entry (it would point at the other guest).
func TestE2E_Message_VMIDRangeFull(t *testing.T) {
	needTF(t)
	t.Parallel()
	s := newScenario(t, "messages", scenarioOpts{NoForeign: true, Sim: pvesim.Options{Speed: messageSpeed}})
	const lo, hi, free = vmidMin, vmidMin + 3, vmidMin + 2
	s.pc.VMIDMin, s.pc.VMIDMax = lo, hi
	for id := lo; id <= hi; id++ {
		if id == free {
			continue
		}
		if err := s.sim.AddVM(pvesim.VMSpec{VMID: id, Name: fmt.Sprintf("db-%d", id)}); err != nil {
			t.Fatal(err)
		}
	}
	// The clone request is held long enough for the test to add the other guest first, even
	// on a loaded machine.
	s.sim.InjectFault(pvesim.Fault{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/clone", Latency: 15 * time.Second, Times: 1})
	s.vms = []tfrun.VM{s.vm("full")}
	p := s.jsonApply()
	if !tfrun.WaitStat(s.ctx, s.sim, tfrun.StatClone, 1, commandTimeout) {
		t.Fatal("no clone request")
	}
	if err := s.sim.AddVM(pvesim.VMSpec{VMID: free, Name: "db-late"}); err != nil {
		t.Fatal(err)
	}
	r := p.Wait()
	errs := errorDiags(t, r)
	if len(errs) != 1 {
		t.Errorf("%d error diagnostics, want 1", len(errs))
	}
	for _, d := range errs {
		refused := []string{"may succeed if retried"}
		for id := lo; id <= hi; id++ {
			refused = append(refused, "VMID "+strconv.Itoa(id))
		}
		mustSay(t, "the create's error", d.Text(),
			[]string{"no free VMID", "vmid_range " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi), "widen vmid_range",
				"Retrying will not help", "Nothing is saved in the state"},
			refused)
	}
	if got := s.state().OfType("proxy_vm"); len(got) != 0 {
		t.Errorf("the state holds %d proxy_vm after a create that found no VMID, want none: %v", len(got), got)
	}
	if f := s.chk.Live().Strict(); !f.OK() {
		t.Errorf("after the failed create: %v", f.Err())
	}
}

// TestE2E_Message_ImportWordedForImport: `terraform import` of IDs that name nothing or a
// guest that is not ours is refused in an import's words: no "no VMID allocated yet" (there
// is no create), no "apply again" or "no longer exists" (nothing was applied), and what to
// do next is running the import again with a good ID.
func TestE2E_Message_ImportWordedForImport(t *testing.T) {
	needTF(t)
	t.Parallel()
	s := newScenario(t, "messages", scenarioOpts{})
	v := s.vm("imp")
	s.vms = []tfrun.VM{v}
	s.write()
	for _, tc := range []struct{ id, want string }{
		{"nosuch-proxy", "Nothing in the cluster answers to that ID"},
		{strconv.Itoa(vmidMax), "Nothing in the cluster answers to that ID"},
		{"db-primary", "then run the import again"},
		{"vms/1003/other-name", "then run the import again"},
	} {
		r := s.ws.Import(s.ctx, v.Addr(), tc.id)
		if r.OK() {
			t.Errorf("import %q succeeded", tc.id)
			continue
		}
		out := tfrun.TrimOverridesWarning(r.Output())
		t.Logf("import %q:\n%s", tc.id, strings.TrimSpace(out))
		mustSay(t, fmt.Sprintf("import %q", tc.id), out, []string{"Unable to import proxy VM", tc.want},
			[]string{"no VMID allocated yet", "apply again", "no longer exists"})
	}
	if f := s.chk.Gone(); !f.OK() {
		t.Errorf("after the refused imports: %v", f.Err())
	}
}

// TestE2E_Message_ProviderMistakeReportedOnce: one iso_storage typo in the provider block
// with ten proxy_vm is one mistake: the plan reports it once, naming the provider's
// attribute and saying it stops every proxy_vm, not ten identical errors, and nothing is
// touched.
func TestE2E_Message_ProviderMistakeReportedOnce(t *testing.T) {
	needTF(t)
	t.Parallel()
	s := newScenario(t, "messages", scenarioOpts{NoForeign: true})
	s.pc.ISOStorage = "seeds-typo"
	for i := range 10 {
		s.vms = append(s.vms, s.vm(fmt.Sprintf("m%02d", i)))
	}
	s.write()
	for _, cmd := range [][]string{{"plan", "-input=false", "-json"}, {"apply", "-auto-approve", "-input=false", "-json"}} {
		r := s.ws.Run(s.ctx, cmd...)
		if r.OK() {
			t.Fatalf("terraform %s succeeded with iso_storage = %q", cmd[0], s.pc.ISOStorage)
		}
		errs := errorDiags(t, r)
		if len(errs) != 1 {
			t.Errorf("terraform %s: %d error diagnostics for one iso_storage typo, want 1", cmd[0], len(errs))
		}
		mustSay(t, "terraform "+cmd[0]+"'s error", errs[0].Text(),
			[]string{`"seeds-typo"`, "fix iso_storage in the provider block", "every proxy_vm"}, nil)
	}
	if got := s.state().OfType("proxy_vm"); len(got) != 0 {
		t.Errorf("the state holds %d proxy_vm", len(got))
	}
	if n := s.sim.Stats()[tfrun.StatClone] + s.sim.Stats()[tfrun.StatUpload]; n != 0 {
		t.Errorf("%d clones or uploads for a configuration that cannot work", n)
	}
}

// TestE2E_Message_ConnectionMistakeReportedOnce: a wrong API token in the provider block
// makes every refresh fail the same way; the plan fails with one error naming the token,
// not one per proxy_vm.
func TestE2E_Message_ConnectionMistakeReportedOnce(t *testing.T) {
	needTF(t)
	t.Parallel()
	s := newScenario(t, "messages", scenarioOpts{NoForeign: true, Sim: pvesim.Options{TemplateAgent: true}})
	for i := range 3 {
		v := s.vm(fmt.Sprintf("c%d", i))
		v.WaitForIP = tfrun.Bool(false)
		s.vms = append(s.vms, v)
	}
	s.mustApply()
	good := s.pc.APIToken
	s.pc.APIToken = "root@pam!tf=00000000-0000-4000-8000-000000000000"
	s.write()
	r := s.ws.Run(s.ctx, "plan", "-input=false", "-json")
	if r.OK() {
		t.Fatal("the plan with a wrong token succeeded")
	}
	errs := errorDiags(t, r)
	if len(errs) != 1 {
		t.Errorf("%d error diagnostics for one wrong token, want 1", len(errs))
	}
	mustSay(t, "the plan's error", errs[0].Text(), []string{"refused the API token root@pam!tf (401)"}, nil)
	s.pc.APIToken = good
	if r := s.destroy(); !r.OK() {
		t.Fatalf("destroy failed:\n%s", r)
	}
	if f := s.chk.Gone(); !f.OK() {
		t.Errorf("after the destroy: %v", f.Err())
	}
}
