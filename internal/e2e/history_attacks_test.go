package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// historyLost returns a VMID, node and the creating text a create of vm's name would have
// written there at createdAt (the lost VM's own clone and destroy ran under the provider's
// token: nothing of it shows as another user's). No apply: no start of ours in the window.
func historyLost(t *testing.T, s *scenario, vm tfrun.VM, createdAt time.Time, vmids ...int) (int, string, string) {
	t.Helper()
	vmid := vmidMin + 5
	if len(vmids) > 0 {
		vmid = vmids[0]
	}
	key, _ := pveapi.DeriveKey(s.sim.APIToken, proxmox.ProofKeyLabel)
	copied := proxmox.CreatingMark(key, proxmox.MarkLines{UID: "0b3c5e0e-4a57-4b8e-9d55-2f7a0e7e1c11", CreatedAt: createdAt.UTC().Truncate(time.Second)}, vmid, vm.Name) +
		"\n" + proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider
	s.vms = []tfrun.VM{vm}
	return vmid, "pve1", copied
}

func historyCleanup(t *testing.T, s *scenario) string {
	r := s.runCleanup(t, latestTerraform(t))
	t.Logf("cleanup output:\n%s", tfrun.TrimOverridesWarning(r.Stdout))
	return strings.Join(strings.Fields(r.Output()), " ")
}

// The golden-image attack on the clean-up (decision: clone-history): mallory made template 600
// long ago from a clone of catalogue template 9001 (so its clones have 9001's clone config and
// meta). She clones 600 onto the freed VMID and writes the copied creating text: her clone of a
// VM with the template's meta is a sign, so nothing is sent to the VM.
func TestE2E_History_GoldenImageCloneNeedsALook(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/history-tmpl-from-clone", scenarioOpts{NoForeign: true})
	vm := s.vm("tc")
	vmid, node, copied := historyLost(t, s, vm, time.Now().Add(-3*time.Hour))
	if err := s.sim.AddVM(pvesim.VMSpec{VMID: 600, Name: "mallory-golden", CloneOf: 9001, Template: true}); err != nil {
		t.Fatal(err)
	}
	a := newActor(t, s, "mallory@pve", "Administrator", "/")
	tv, _ := s.sim.VM(600)
	upid, err := a.client.Clone(s.ctx, tv.Node, 600, pveapi.CloneParams{NewID: vmid, Name: vm.Name, Target: node})
	a.wait(s.ctx, t, tv.Node, upid, err)
	if err := a.client.SetVMConfig(s.ctx, node, vmid, map[string]string{"description": copied}); err != nil {
		t.Fatal(err)
	}
	out := historyCleanup(t, s)
	noWritesTo(t, s, vmid)
	if _, ok := s.sim.VM(vmid); !ok || !strings.Contains(out, "needs a look") || !strings.Contains(out, "mallory@pve!hand cloned VM 600") {
		t.Errorf("VM %d there %v; want it kept as needing a look, naming mallory's clone of 600: %s", vmid, ok, out)
	}
}

// The other-node attack on the clean-up: nodes pve1, pve2, the provider configured with pve1
// only. Mallory clones her VM 600 (a clone of 9001) onto the freed VMID on pve2, starts and stops
// it there, and migrates both to pve1, so pve2 holds no guest. Every node GET /nodes lists is
// read: the start on pve2 is found.
func TestE2E_History_StartedOnAnotherNodeNeedsALook(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/history-empty-node", scenarioOpts{NoForeign: true, Sim: pvesim.Options{Nodes: []string{"pve1", "pve2"}}})
	s.pc.Nodes = []string{"pve1"}
	vm := s.vm("en")
	vmid, node, copied := historyLost(t, s, vm, time.Now().Add(-3*time.Hour))
	t.Logf("lost VM %d was on %s", vmid, node)
	if err := s.sim.AddVM(pvesim.VMSpec{VMID: 600, Node: "pve2", Name: "mallory-work", CloneOf: 9001}); err != nil {
		t.Fatal(err)
	}
	a := newActor(t, s, "mallory@pve", "Administrator", "/")
	upid, err := a.client.Clone(s.ctx, "pve2", 600, pveapi.CloneParams{NewID: vmid, Name: vm.Name, Target: "pve2"})
	a.wait(s.ctx, t, "pve2", upid, err)
	upid, err = a.client.Start(s.ctx, "pve2", vmid)
	a.wait(s.ctx, t, "pve2", upid, err)
	upid, err = a.client.Stop(s.ctx, "pve2", vmid)
	a.wait(s.ctx, t, "pve2", upid, err)
	upid, err = a.client.Migrate(s.ctx, "pve2", vmid, pveapi.MigrateParams{Target: "pve1", WithLocalDisks: true})
	a.wait(s.ctx, t, "pve2", upid, err)
	upid, err = a.client.Migrate(s.ctx, "pve2", 600, pveapi.MigrateParams{Target: "pve1", WithLocalDisks: true})
	a.wait(s.ctx, t, "pve2", upid, err)
	if err := a.client.SetVMConfig(s.ctx, "pve1", vmid, map[string]string{"description": copied}); err != nil {
		t.Fatal(err)
	}
	out := historyCleanup(t, s)
	noWritesTo(t, s, vmid)
	if _, ok := s.sim.VM(vmid); !ok || !strings.Contains(out, "node pve2's task list shows mallory@pve!hand started it") {
		t.Errorf("VM %d there %v; want it kept, naming the start on pve2: %s", vmid, ok, out)
	}
}

// The fast-clock attack on a retry: the lost create ran while its host's clock was 20 minutes
// fast, so its mark's created-at is ahead. Mallory's hand clone, start and stop happen now. The
// window opens at the earlier of created-at and now, so the start is found and the retry sends
// the VM nothing.
func TestE2E_History_FastClockRetryLeavesAUsedClone(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/history-clock-ahead", scenarioOpts{NoForeign: true})
	vm := s.vm("ca")
	vmid, a := usedHandClone(t, s, vm, -20*time.Minute) // created-at 20 minutes ahead
	before, _ := s.sim.VM(vmid)
	s.sim.EnableRequestLog()
	r := s.apply()
	noWritesTo(t, s, vmid)
	if after, ok := s.sim.VM(vmid); !r.OK() || !ok || before.Description != after.Description ||
		!strings.Contains(strings.Join(strings.Fields(r.Output()), " "), a.id+" started it") {
		t.Errorf("VM %d there %v; want it left alone, naming the start:\n%s", vmid, ok, r.Output())
	}
	if r := s.destroy(); !r.OK() {
		t.Errorf("destroy:\n%s", r)
	}
}

// The busy-cluster case, invariant 2: a genuine kill mid-clone, then a colleague clones an
// unrelated VM (web01, other meta), routine on a shared cluster. The retry takes its own VM over
// (the colleague's clone is no sign), and after destroy and a clean-up nothing is left.
func TestE2E_History_GenuineRetryOnABusyCluster(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/history-genuine-busy", scenarioOpts{NoForeign: true, Sim: pvesim.Options{Speed: 20, Durations: pvesim.Durations{Clone: 40 * time.Second}}})
	vm := s.vm("gb")
	s.vms = []tfrun.VM{vm}
	s.write()
	p, err := s.ws.Start(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	if !tfrun.WaitStat(s.ctx, s.sim, tfrun.StatClone, 1, 60*time.Second) {
		t.Fatal("no clone request")
	}
	time.Sleep(300 * time.Millisecond)
	if p.KillProviders() == 0 {
		t.Fatal("no provider to kill")
	}
	p.Wait()
	half := s.namedOrCloning(vm.Name)
	t.Logf("half-made: %v", half)
	a := newActor(t, s, "alice@pve", "Administrator", "/")
	web, ok := s.sim.VM(100)
	if !ok {
		t.Fatal("no VM 100")
	}
	upid, err := a.client.Clone(s.ctx, web.Node, 100, pveapi.CloneParams{NewID: 500, Name: "web02"})
	a.wait(s.ctx, t, web.Node, upid, err)
	time.Sleep(3 * time.Second) // let the killed clone finish
	r := s.apply()
	t.Logf("retry ok %v:\n%s", r.OK(), tfrun.TrimOverridesWarning(r.Output()))
	if !r.OK() || strings.Contains(r.Output(), "left alone") {
		t.Errorf("the retry did not take its own VM over:\n%s", r.Output())
	}
	if r := s.destroy(); !r.OK() {
		t.Errorf("destroy:\n%s", r)
	}
	for _, id := range half {
		if v, ok := s.sim.VM(id); ok {
			t.Errorf("LEFT after destroy: VM %d %q lock %q desc %q", id, v.Name, v.Lock, v.Description)
		}
	}
	if left := s.chk.SeedsLeft(); len(left) != 0 {
		t.Errorf("seeds left after destroy: %v", left)
	}
	time.Sleep(65 * time.Second)
	pr := *provider
	pr.Terraform = latestTerraform(t)
	cw := pr.NewWorkspace(t)
	cw.Timeout = commandTimeout
	act := "\naction \"proxy_orphan_cleanup\" \"all\" {\n  config {\n    dry_run = false\n    grace_period = \"1m\"\n  }\n}\n"
	if err := cw.WriteConfig(tfrun.RequiredProviders + s.pc.HCL() + act); err != nil {
		t.Fatal(err)
	}
	cr := cw.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_orphan_cleanup.all")
	t.Logf("cleanup ok %v:\n%s", cr.OK(), tfrun.TrimOverridesWarning(cr.Stdout))
	for _, id := range half {
		if v, ok := s.sim.VM(id); ok {
			t.Errorf("LEFT after cleanup: VM %d %q", id, v.Name)
		}
	}
}
