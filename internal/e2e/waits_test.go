package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_ImportedVMWithoutAgentRestart: a running VM the proxy operator made, whose guest
// has no qemu-guest-agent, is imported; a cores change (which restarts it) with the
// default wait_for_ip must fail within seconds naming the guest agent, before anything is
// changed, not spin until the update timeout. With wait_for_ip = false the same change
// then applies.
func TestE2E_ImportedVMWithoutAgentRestart(t *testing.T) {
	s := newScenario(t, "waits", scenarioOpts{NoForeign: true})
	name := s.prefix + "op"
	vmid := vmidMin + 5
	err := s.sim.AddVM(pvesim.VMSpec{
		VMID: vmid, Name: name, Power: "running", ShipsAgent: false,
		Config: map[string]string{
			"description": proxmox.FormatMark("5d3c1a2b-1111-4222-8333-444455556666", time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)),
			"tags":        proxmox.ManagedTag, "agent": "1", "cores": "1", "memory": "512", "onboot": "1",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Let the guest run well past a first boot (the simulator's clock runs fast).
	time.Sleep(300 * time.Millisecond)
	const updateTimeout = 60 * time.Second
	v := s.vm("op")
	v.Timeouts = map[string]string{"update": updateTimeout.String()}
	s.vms = []tfrun.VM{v}
	s.write()
	if r := s.ws.Import(s.ctx, v.Addr(), strconv.Itoa(vmid)); !r.OK() {
		t.Fatalf("import:\n%s", r)
	}

	s.vms[0].Cores = 2
	r := s.apply()
	if r.OK() {
		t.Fatalf("the restart of a VM whose agent never answers succeeded:\n%s", r)
	}
	out := strings.Join(strings.Fields(r.Output()), " ") // the diagnostic is wrapped
	if !strings.Contains(out, "guest agent does not answer") || !strings.Contains(out, "wait_for_ip = false") {
		t.Errorf("the error does not name the guest agent and what to do:\n%s", r)
	}
	t.Logf("the refused apply took %s", r.Duration)
	if r.Duration > updateTimeout/3 {
		t.Errorf("the update failed after %s: it waited instead of refusing (timeout %s)", r.Duration, updateTimeout)
	}
	if m := s.checkDiag(r, "agent"); m != "" {
		t.Errorf("diagnostic: %s\n%s", m, r)
	}
	got, _ := s.sim.VM(vmid)
	if got.Config["cores"] != "1" || got.Power != "running" {
		t.Errorf("the VM was changed before the refusal: cores %q, power %s", got.Config["cores"], got.Power)
	}
	for _, task := range s.sim.State().Tasks {
		if task.Type == "qmstop" || task.Type == "qmshutdown" || task.Type == "qmstart" {
			t.Errorf("a %s task was started", task.Type)
		}
	}

	s.vms[0].WaitForIP = tfrun.Bool(false)
	if r := s.apply(); !r.OK() {
		t.Fatalf("with wait_for_ip = false the change did not apply:\n%s", r)
	}
	if got, _ := s.sim.VM(vmid); got.Config["cores"] != "2" || got.Power != "running" {
		t.Errorf("after the apply: cores %q, power %s", got.Config["cores"], got.Power)
	}
	if r := s.destroy(); !r.OK() {
		t.Fatalf("destroy:\n%s", r)
	}
	if f := s.chk.Gone(); !f.OK() {
		t.Errorf("after destroy: %v", f.Err())
	}
}

// TestE2E_StoppedOutOfBandDuringUpdateSettle: while an update that restarted a VM waits for
// its address, someone stops the VM in Proxmox; the apply must fail at once saying the VM
// is not running, not wait until the update timeout.
func TestE2E_StoppedOutOfBandDuringUpdateSettle(t *testing.T) {
	// Slower than the default so the agent of the restarted VM takes about a second of
	// wall time to answer (100 s simulated), a window to stop the VM in.
	s := newScenario(t, "waits", scenarioOpts{NoForeign: true, Sim: pvesim.Options{Speed: 100, Durations: pvesim.Durations{AgentBoot: 100 * time.Second}}})
	const updateTimeout = 60 * time.Second
	v := s.vm("a")
	v.Timeouts = map[string]string{"update": updateTimeout.String()}
	s.vms = []tfrun.VM{v}
	s.mustApply()
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")

	s.vms[0].Cores = 2
	since := time.Now()
	s.write()
	p, err := s.ws.Start(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	// The restart's start task, the VM running again, then the settle's first agent poll
	// (the update asks the agent once before the restart too).
	if !tfrun.WaitTask(s.ctx, s.sim, "qmstart", since, 60*time.Second) {
		t.Fatalf("no start task:\n%s", p.Wait())
	}
	agentCalls := s.sim.Stats()[tfrun.StatAgent]
	if !tfrun.WaitUntil(s.ctx, 60*time.Second, func() bool { st, _ := s.sim.VM(vmid); return st.Power == "running" }) {
		t.Fatalf("the VM never ran again:\n%s", p.Wait())
	}
	if !tfrun.WaitStat(s.ctx, s.sim, tfrun.StatAgent, agentCalls+1, 60*time.Second) {
		t.Fatalf("the settle never asked the agent:\n%s", p.Wait())
	}
	if st, _ := s.sim.VM(vmid); st.AgentRunning {
		t.Skip("the agent answered before the VM could be stopped (machine too slow for the window)")
	}
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Power: "stopped"}); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	r := p.Wait()
	took := time.Since(stopped)
	t.Logf("the apply ended %s after the out-of-band stop", took)
	if r.OK() {
		t.Fatalf("the apply succeeded with the VM stopped:\n%s", r)
	}
	if took > updateTimeout/3 {
		t.Errorf("the apply ended %s after the stop: it waited instead of failing (timeout %s)", took, updateTimeout)
	}
	out := strings.Join(strings.Fields(r.Output()), " ") // the diagnostic is wrapped
	if !containsAny(out, "not running after the update started it", "the VM stopped") || !strings.Contains(out, "outside Terraform") {
		t.Errorf("the error does not say the VM was stopped:\n%s", r)
	}
	if m := s.checkDiag(r, "waiting for"); m != "" {
		t.Errorf("diagnostic: %s\n%s", m, r)
	}
	s.converge()
}

// TestE2E_ImportedStoppedVMWithoutAgentStart: a stopped VM the proxy operator made, whose
// guest has no agent, is imported; the apply that starts it warns that the agent is not
// known to be there, and the address wait ends once the VM has run for Budgets.AgentStart
// (3 min, simulated) without the agent answering, naming the agent, instead of spinning
// until the update timeout.
func TestE2E_ImportedStoppedVMWithoutAgentStart(t *testing.T) {
	s := newScenario(t, "waits", scenarioOpts{NoForeign: true})
	name := s.prefix + "cold"
	vmid := vmidMin + 6
	err := s.sim.AddVM(pvesim.VMSpec{
		VMID: vmid, Name: name, Power: "stopped",
		Config: map[string]string{
			"description": proxmox.FormatMark("7a6b5c4d-2222-4333-8444-555566667777", time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)),
			"tags":        proxmox.ManagedTag, "agent": "1", "cores": "1", "memory": "512", "onboot": "1",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const updateTimeout = 60 * time.Second
	v := s.vm("cold")
	v.Timeouts = map[string]string{"update": updateTimeout.String()}
	s.vms = []tfrun.VM{v}
	s.write()
	if r := s.ws.Import(s.ctx, v.Addr(), strconv.Itoa(vmid)); !r.OK() {
		t.Fatalf("import:\n%s", r)
	}
	// TF_LOG=INFO alone must explain the wait.
	logFile := filepath.Join(t.TempDir(), "info.log")
	s.ws.Env = append(s.ws.Env, "TF_LOG=INFO", "TF_LOG_PATH="+logFile)
	r := s.apply()
	s.ws.Env = nil
	if r.OK() {
		t.Fatalf("the start of a VM whose agent never answers succeeded:\n%s", r)
	}
	logs, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(logs), "\n") {
		if strings.Contains(l, "proxmox wait") {
			t.Log(l)
		}
	}
	for _, want := range []string{"proxmox wait started", "an IPv4 address from the guest agent", "must answer within 3m0s of the boot",
		"proxmox wait cannot succeed", "agent not running"} {
		if !strings.Contains(string(logs), want) {
			t.Errorf("the TF_LOG=INFO log lacks %q", want)
		}
	}
	out := strings.Join(strings.Fields(r.Output()), " ")
	for _, want := range []string{"Guest agent of the imported proxy VM not known", "guest agent has not answered", "wait_for_ip = false"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, r)
		}
	}
	t.Logf("the failed start took %s", r.Duration)
	if r.Duration > updateTimeout/3 {
		t.Errorf("the update failed after %s (timeout %s)", r.Duration, updateTimeout)
	}
	s.vms[0].WaitForIP = tfrun.Bool(false)
	if r := s.apply(); !r.OK() {
		t.Fatalf("with wait_for_ip = false:\n%s", r)
	}
	if r := s.destroy(); !r.OK() {
		t.Fatalf("destroy:\n%s", r)
	}
	if f := s.chk.Gone(); !f.OK() {
		t.Errorf("after destroy: %v", f.Err())
	}
}
