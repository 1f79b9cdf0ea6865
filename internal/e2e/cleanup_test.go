package e2e

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// runCleanup runs the documented clean-up (dry_run = false) with Terraform tf, in a
// workspace of its own on the scenario's provider block, the simulator's request log on.
func (s *scenario) runCleanup(t *testing.T, tf string) *tfrun.Result {
	t.Helper()
	p := *provider
	p.Terraform = tf
	cw := p.NewWorkspace(t)
	cw.Timeout = commandTimeout
	if err := cw.WriteConfig(tfrun.RequiredProviders + s.pc.HCL() + cleanupAction(t, true)); err != nil {
		t.Fatal(err)
	}
	s.sim.EnableRequestLog()
	return cw.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_orphan_cleanup.all")
}

// cleanupAction is the configuration of the proxy_orphan_cleanup action the tests invoke:
// the documented example (grace_period = "2h") with dry_run = false for a real run, the same
// action with an empty config (a dry run, grace_period 1h) otherwise.
func cleanupAction(t *testing.T, deleting bool) string {
	t.Helper()
	if !deleting {
		return "\naction \"proxy_orphan_cleanup\" \"all\" {\n  config {}\n}\n"
	}
	example, err := os.ReadFile("../../examples/actions/proxy_orphan_cleanup/action.tf")
	if err != nil {
		t.Fatal(err)
	}
	// The example runs dry as written (a copy-paste deletes nothing); its comment says to set
	// dry_run = false for the real run, which is what this test does.
	if !strings.Contains(string(example), "dry_run      = true") || !strings.Contains(string(example), `grace_period = "2h"`) {
		t.Fatalf("the action example is not the dry run with a 2h grace period this test expects:\n%s", example)
	}
	return "\n" + strings.Replace(string(example), "dry_run      = true", "dry_run      = false", 1)
}

// leftover is an orphan the test plants: a seed ISO no VM uses, or a half-made VM and the
// seed its create uploaded, written age ago.
type leftover struct {
	name string
	vm   bool
	age  time.Duration
}

// plant puts the leftover in the simulator and returns what names it: the seed's volume
// id, or the VM's VMID and its seed's volume id.
func (s *scenario) plant(l leftover, vmid int) (string, int) {
	s.t.Helper()
	node, storage := s.sim.Nodes[0], s.sim.ISOStorage
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", vmid, vmid)
	name := s.prefix + l.name
	file := name + "-" + uid + "-seed.iso"
	volid := storage + ":iso/" + file
	if err := s.sim.AddISO(node, storage, file, []byte("seed of "+name)); err != nil {
		s.t.Fatal(err)
	}
	if err := s.sim.SetVolumeCTime(node, volid, time.Now().Add(-l.age)); err != nil {
		s.t.Fatal(err)
	}
	if !l.vm {
		return volid, 0
	}
	// The mark a create writes with its clone (decision: mark-format), still "creating",
	// in the provider's default uid_namespace "", proved for this VMID under the key the
	// provider derives from the token (decision: creating-proof).
	key, err := pveapi.DeriveKey(s.sim.APIToken, proxmox.ProofKeyLabel)
	if err != nil {
		s.t.Fatal(err)
	}
	desc := proxmox.CreatingMark(key, proxmox.MarkLines{UID: uid, CreatedAt: time.Now().Add(-l.age).UTC().Truncate(time.Second)}, vmid, name) +
		"\n" + proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider
	// Interrupted between its clone and its config step: a clone of the catalogue's template
	// as Proxmox makes it, its seed uploaded beside the clone, not attached yet, stopped (the
	// only half-made VM the clean-up deletes, decision: instance-binding).
	if err := s.sim.AddVM(pvesim.VMSpec{VMID: vmid, Name: name, CloneOf: 9001, Config: map[string]string{
		"description": desc,
	}}); err != nil {
		s.t.Fatal(err)
	}
	return volid, vmid
}

// TestE2E_Cleanup_OrphansOlderThanTheGracePeriod (Terraform 1.14+): the proxy_orphan_cleanup
// action, run while another workspace's create is cloning (its seed uploaded, its VM not
// named yet: it looks like an orphan), with an orphan seed and a half-made VM written 3
// hours ago and others 5 minutes ago. The dry run (the default) lists each with its fate
// and changes nothing; the real run (the documented example, grace period 2h) deletes
// exactly the old ones (the VM with its seed) and leaves the young ones, the running create
// and every VM of a workspace alone; the create then finishes. Once the young ones are old,
// another run deletes them; nothing is left.
func TestE2E_Cleanup_OrphansOlderThanTheGracePeriod(t *testing.T) {
	needTF(t)
	tf := latestTerraform(t)
	// A clone of 20 s of wall time: the create is in flight while the action runs.
	s := newScenario(t, "seeds/orphan-cleanup", scenarioOpts{NoForeign: true,
		Sim: pvesim.Options{Durations: pvesim.Durations{Clone: 20000 * time.Second}}})
	olds := []leftover{{name: "gone-old", age: 3 * time.Hour}, {name: "half-old", vm: true, age: 3 * time.Hour}}
	youngs := []leftover{{name: "gone-young", age: 5 * time.Minute}, {name: "half-young", vm: true, age: 5 * time.Minute}}
	type planted struct {
		seed string
		vmid int
	}
	var oldP, youngP []planted
	for i, l := range olds {
		seed, vmid := s.plant(l, vmidMax-i)
		oldP = append(oldP, planted{seed, vmid})
	}
	for i, l := range youngs {
		seed, vmid := s.plant(l, vmidMax-2-i)
		youngP = append(youngP, planted{seed, vmid})
	}

	// The in-flight create, in its own workspace.
	inflight := s.vm("inflight")
	s.vms = []tfrun.VM{inflight}
	s.write()
	apply, err := s.ws.Start(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	var inflightSeed string
	if !tfrun.WaitUntil(s.ctx, time.Minute, func() bool {
		for _, v := range s.seedVolumes() {
			if strings.Contains(v, inflight.Name+"-") {
				inflightSeed = v
				return true
			}
		}
		return false
	}) {
		t.Fatalf("the in-flight create did not upload its seed:\n%s", apply.Wait())
	}

	// The cleanup workspace: the provider and the action, Terraform 1.14+.
	p := *provider
	p.Terraform = tf
	cw := p.NewWorkspace(t)
	cw.Timeout = commandTimeout
	invoke := func(deleting bool) *tfrun.Result {
		t.Helper()
		if err := cw.WriteConfig(tfrun.RequiredProviders + s.pc.HCL() + cleanupAction(t, deleting)); err != nil {
			t.Fatal(err)
		}
		return cw.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_orphan_cleanup.all")
	}
	volumes := func() map[string]bool {
		out := map[string]bool{}
		for _, v := range s.seedVolumes() {
			out[v] = true
		}
		return out
	}
	vmExists := func(vmid int) bool { _, ok := s.sim.VM(vmid); return ok }
	ok := true
	fail := func(format string, args ...any) {
		ok = false
		t.Errorf(format, args...)
	}

	before := volumes()
	dry := invoke(false)
	out := strings.Join(strings.Fields(dry.Output()), " ")
	if !dry.OK() {
		t.Fatalf("the dry run failed:\n%s", dry)
	}
	for _, want := range []string{
		"would delete half-made VM " + s.prefix + "half-old", "would delete seed ISO " + oldP[0].seed, "grace period 1h0m0s",
		"kept half-made VM " + s.prefix + "half-young", "kept seed ISO " + youngP[0].seed,
		"kept seed ISO " + strings.TrimPrefix(inflightSeed, s.sim.Nodes[0]+":"),
		"set dry_run = false to delete them",
	} {
		if !strings.Contains(out, want) {
			fail("the dry run output lacks %q:\n%s", want, tfrun.TrimOverridesWarning(dry.Stdout))
		}
	}
	if after := volumes(); len(after) != len(before) || !vmExists(oldP[1].vmid) {
		fail("the dry run changed something: volumes %d -> %d, old half-made VM there %v", len(before), len(after), vmExists(oldP[1].vmid))
	}

	clean := invoke(true)
	if !clean.OK() {
		t.Fatalf("the cleanup failed:\n%s", clean)
	}
	t.Logf("cleanup output:\n%s", tail(tfrun.TrimOverridesWarning(clean.Stdout), 12))
	left := volumes()
	for _, o := range oldP {
		if left[s.sim.Nodes[0]+":"+o.seed] {
			fail("the old orphan %s is left", o.seed)
		}
		if o.vmid != 0 && vmExists(o.vmid) {
			fail("the old half-made VM %d is left", o.vmid)
		}
	}
	for _, o := range youngP {
		if !left[s.sim.Nodes[0]+":"+o.seed] || o.vmid != 0 && !vmExists(o.vmid) {
			fail("the young orphan %s (VM %d) was deleted", o.seed, o.vmid)
		}
	}
	if !left[inflightSeed] {
		fail("the in-flight create's seed %s was deleted", inflightSeed)
	}
	if r := apply.Wait(); !r.OK() {
		fail("the in-flight create failed after the cleanup:\n%s", r)
	}
	if n := len(s.namedVMs(inflight.Name)); n != 1 {
		fail("%d VMs named %s after the in-flight create, want 1", n, inflight.Name)
	}
	figures.note(s.cat, fmt.Sprintf("deleted %d old orphans, kept %d young ones and the in-flight create", len(oldP), len(youngP)+1))

	// Once old, the young ones go too.
	for _, o := range youngP {
		for _, n := range s.sim.Nodes {
			_ = s.sim.SetVolumeCTime(n, o.seed, time.Now().Add(-3*time.Hour))
		}
		if o.vmid != 0 {
			// Time passes: the mark a create would have written three hours ago. The
			// created-at is under the proof, so the proof is made again for it with the key
			// (a rewritten created-at line alone would fail the proof and be left alone).
			v, _ := s.sim.VM(o.vmid)
			m := proxmox.ParseMark(v.Description)
			key, err := pveapi.DeriveKey(s.sim.APIToken, proxmox.ProofKeyLabel)
			if err != nil {
				t.Fatal(err)
			}
			lines := []string{proxmox.CreatingMark(key, proxmox.MarkLines{UID: m.UID, CreatedAt: time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second)}, o.vmid, v.Name),
				proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider}
			if err := s.sim.SetVMState(o.vmid, pvesim.VMPatch{Config: map[string]string{"description": strings.Join(lines, "\n")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if r := invoke(true); !r.OK() {
		fail("the second cleanup failed:\n%s", r)
	}
	for _, o := range youngP {
		if o.vmid != 0 && vmExists(o.vmid) {
			fail("the half-made VM %d is left once old", o.vmid)
		}
	}
	if !ok {
		figures.note(s.cat, "cleanup checks failed")
	}
	s.converge() // the in-flight create's VM: plan empty, destroy, nothing left
}

// TestE2E_Cleanup_ReplayedCreatingTextNeedsALook is the replayed-creating-text threat (decision:
// instance-binding), with the built provider and the terraform CLI: a VM made by an apply
// three hours ago, running and in the state, whose description a user who may only edit
// Notes (VM.Config.Options) replaced with the creating text they read while it was being
// created (its proof verifies for that VMID). The plan still says no changes; the
// proxy_orphan_cleanup action (the documented real run) must leave the VM untouched (no
// request but reads reaches it) and say it needs a look, with the VMID and the qm destroy
// advice. Before that decision the cleanup stopped and deleted the VM with its seed.
func TestE2E_Cleanup_ReplayedCreatingTextNeedsALook(t *testing.T) {
	needTF(t)
	tf := latestTerraform(t)
	s := newScenario(t, "identity/replayed-creating-text", scenarioOpts{NoForeign: true})
	vm := s.vm("live")
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	st := s.state().OfType("proxy_vm")
	if len(st) != 1 {
		t.Fatalf("state %+v", st)
	}
	vmid, uid := st[0].Int("vmid"), st[0].String("uid")
	key, err := pveapi.DeriveKey(s.sim.APIToken, proxmox.ProofKeyLabel)
	if err != nil {
		t.Fatal(err)
	}
	// The text the clone wrote (before the config step), as the VM would show it had it
	// been made three hours ago: the created-at is under the proof, so it is made for it.
	replayed := proxmox.CreatingMark(key, proxmox.MarkLines{UID: uid, CreatedAt: time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second)}, vmid, vm.Name) +
		"\n" + proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider
	finished, _ := s.sim.VM(vmid)
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"description": replayed}}); err != nil {
		t.Fatal(err)
	}
	before, _ := s.sim.VM(vmid)
	if before.Power != "running" {
		t.Fatalf("the VM is %s, want running", before.Power)
	}

	r := s.runCleanup(t, tf)
	if !r.OK() {
		t.Fatalf("the cleanup failed:\n%s", r)
	}
	out := strings.Join(strings.Fields(r.Output()), " ")
	writes := 0
	for _, req := range s.sim.RequestLog() {
		if req.VMID == vmid && req.Method != http.MethodGet {
			writes++
			t.Errorf("the cleanup wrote to the live VM: %s %s", req.Method, req.Path)
		}
	}
	after, ok := s.sim.VM(vmid)
	if !ok || after.Power != "running" || after.Description != before.Description || after.Config["ide2"] != before.Config["ide2"] {
		writes++
		t.Errorf("the live VM changed or is gone (there %v):\nbefore %+v\nafter  %+v", ok, before, after)
	}
	for _, want := range []string{fmt.Sprintf("(VMID %d)", vmid), "needs a look", "it is running",
		fmt.Sprintf("qm stop %d && qm destroy %d --purge", vmid, vmid), "Half-made VMs need a look"} {
		if !strings.Contains(out, want) {
			t.Errorf("the cleanup's output lacks %q:\n%s", want, tfrun.TrimOverridesWarning(r.Stdout))
		}
	}
	figures.note(s.cat, fmt.Sprintf("replayed creating text on a live VM: %d writes by the cleanup", writes))
	// The person who looked restores the description; the configuration then converges.
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"description": finished.Description}}); err != nil {
		t.Fatal(err)
	}
	s.converge()
}
