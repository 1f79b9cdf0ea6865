package e2e

import (
	"encoding/json"
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

// The binding of a proxy_vm to its VM's SMBIOS uuid kept in the state (decision:
// state-binding), with the built provider and the terraform CLI: a Notes-only user (the
// VM.Config.Options privilege) can delete the mark's instance line, never change smbios1
// or the state.

// withoutInstanceLine is desc with its proxy-operator-instance line deleted: what a
// Notes-only user makes of a finished description they read.
func withoutInstanceLine(desc string) string {
	var kept []string
	for _, l := range strings.Split(desc, "\n") {
		if !strings.HasPrefix(l, proxmox.MarkKeyInstance+"=") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// writesTo are the requests other than reads that reached vmid since the request log was
// last reset.
func writesTo(s *scenario, vmid int) []string {
	var out []string
	for _, req := range s.sim.RequestLog() {
		if req.VMID == vmid && req.Method != http.MethodGet {
			out = append(out, req.Method+" "+req.Path)
		}
	}
	return out
}

// handMadeAt replaces the VM at vmid (deleted out of band) with one made by hand under the
// same name, running, with two disks of its own and its own SMBIOS uuid, carrying desc.
func handMadeAt(t *testing.T, s *scenario, vmid int, name, desc string) pvesim.VMState {
	t.Helper()
	lost, _ := s.sim.VM(vmid)
	if err := s.sim.DeleteVM(vmid); err != nil {
		t.Fatal(err)
	}
	if err := s.sim.AddVM(pvesim.VMSpec{VMID: vmid, Node: lost.Node, Name: name, Power: "running", Config: map[string]string{
		"description": desc,
		"scsi0":       fmt.Sprintf("local-lvm:vm-%d-disk-0,size=32G", vmid),
		"scsi1":       fmt.Sprintf("local-lvm:vm-%d-disk-1,size=100G", vmid),
	}}); err != nil {
		t.Fatal(err)
	}
	hm, _ := s.sim.VM(vmid)
	if hm.Config["smbios1"] == lost.Config["smbios1"] {
		t.Fatalf("the hand-made VM has the lost VM's smbios1 %q", hm.Config["smbios1"])
	}
	return hm
}

// TestE2E_Binding_StrippedMarkOnHandMadeVM: the resource's VM is deleted out of band, a VM
// is made by hand at its VMID with its name, and a Notes-only user writes on it the
// finished description of the lost VM without its instance line. The plan replaces the
// resource, saying the VM's SMBIOS uuid is not the recorded one; the apply makes the new
// VM at another VMID and the destroy removes it; the hand-made VM receives no write and
// keeps running (review finding 1: it was stopped and destroyed).
func TestE2E_Binding_StrippedMarkOnHandMadeVM(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/stripped-mark", scenarioOpts{NoForeign: true})
	vm := s.vm("sm")
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	st := s.state().OfType("proxy_vm")
	if len(st) != 1 {
		t.Fatalf("state %+v", st)
	}
	vmid := st[0].Int("vmid")
	made, _ := s.sim.VM(vmid)
	if got, want := st[0].String("smbios_uuid"), proxmox.ParseMark(made.Description).Instance; got == "" || got != want {
		t.Errorf("smbios_uuid %q after the create, want the mark's instance %q", got, want)
	}
	hm := handMadeAt(t, s, vmid, vm.Name, withoutInstanceLine(made.Description))
	s.sim.EnableRequestLog()

	plan := s.ws.Plan(s.ctx)
	flat := strings.Join(strings.Fields(plan.Output()), " ")
	if plan.ExitCode != 2 || !strings.Contains(flat, "must be replaced") && !strings.Contains(flat, "1 to add") {
		t.Errorf("plan: want the resource replaced (exit 2), got exit %d:\n%s", plan.ExitCode, plan)
	}
	if !strings.Contains(flat, "is not the one this resource's VM had") {
		t.Errorf("the plan does not say the VM's SMBIOS uuid is not the recorded one:\n%s", plan)
	}
	if r := s.apply(); !r.OK() {
		t.Fatalf("apply:\n%s", r)
	}
	if after := s.state().OfType("proxy_vm"); len(after) != 1 || after[0].Int("vmid") == vmid {
		t.Errorf("state %+v: want the new VM at another VMID than the hand-made %d", after, vmid)
	}
	if r := s.destroy(); !r.OK() {
		t.Errorf("destroy:\n%s", r)
	}
	if w := writesTo(s, vmid); len(w) != 0 {
		t.Errorf("writes reached the hand-made VM %d: %v", vmid, w)
	}
	after, ok := s.sim.VM(vmid)
	if !ok || after.Power != "running" || after.Description != hm.Description || after.Config["scsi1"] != hm.Config["scsi1"] {
		t.Errorf("the hand-made VM changed (there %v):\nbefore %+v\nafter  %+v", ok, hm, after)
	}
}

// TestE2E_Binding_StrippedMarkPowerAndImport (Terraform 1.14+, actions): on the same
// hand-made VM, proxy_vm_power refuses to act (its mark has no instance line: the action
// has no state to check the VM by) and sends nothing; an import refuses it too: a mark
// without an instance line is imported only with the resource's seed on a drive, which a
// Notes-only user cannot attach (review finding 1: the action stopped it, the import was
// silent; adv3 B2: the next apply then destroyed it).
func TestE2E_Binding_StrippedMarkPowerAndImport(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/stripped-mark-power", scenarioOpts{NoForeign: true})
	p := *provider
	p.Terraform = latestTerraform(t)
	s.ws = p.NewWorkspace(t)
	s.ws.Timeout = commandTimeout
	vm := s.vm("sp")
	vm.Resource = "edge"
	s.vms = []tfrun.VM{vm}
	action := "\naction \"proxy_vm_power\" \"stop_edge\" {\n  config {\n    id = proxy_vm.edge.id\n    uid = proxy_vm.edge.uid\n    power = \"stop\"\n  }\n}\n"
	if err := s.ws.WriteConfig(s.config() + action); err != nil {
		t.Fatal(err)
	}
	if r := s.ws.Apply(s.ctx); !r.OK() {
		t.Fatalf("apply:\n%s", r)
	}
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
	made, _ := s.sim.VM(vmid)
	handMadeAt(t, s, vmid, vm.Name, withoutInstanceLine(made.Description))
	s.sim.EnableRequestLog()

	r := s.ws.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_vm_power.stop_edge")
	flat := strings.Join(strings.Fields(r.Output()), " ")
	if r.OK() || !strings.Contains(flat, "apply the proxy_vm once with this version to bind it") {
		t.Errorf("the power action: want a refusal saying to bind the VM first:\n%s", r)
	}
	if w := writesTo(s, vmid); len(w) != 0 {
		t.Errorf("the power action wrote to the hand-made VM %d: %v", vmid, w)
	}
	if v, _ := s.sim.VM(vmid); v.Power != "running" {
		t.Errorf("the hand-made VM is %s", v.Power)
	}

	if r := s.ws.Run(s.ctx, "state", "rm", vm.Addr()); !r.OK() {
		t.Fatalf("state rm:\n%s", r)
	}
	s.sim.ResetRequestLog()
	r = s.ws.Import(s.ctx, vm.Addr(), fmt.Sprintf("vms/%d/%s", vmid, vm.Name))
	flat = strings.Join(strings.Fields(r.Output()), " ")
	if r.OK() || !strings.Contains(flat, "none of its drives names a seed ISO of that mark") {
		t.Errorf("import: want the hand-made VM refused (its drives name no seed ISO of the mark):\n%s", r)
	}
	if got := s.state().OfType("proxy_vm"); len(got) != 0 {
		t.Errorf("the import put the hand-made VM in the state: %+v", got)
	}
	if w := writesTo(s, vmid); len(w) != 0 {
		t.Errorf("the import wrote to VM %d: %v", vmid, w)
	}
	// Nothing in this workspace owns the hand-made VM, nor the seed the lost VM left (the
	// replacement's destroy would delete it): both are removed by hand.
	s.ws.Run(s.ctx, "state", "rm", vm.Addr())
	_ = s.sim.DeleteVM(vmid)
	client, err := pveapi.New(pveapi.Options{Endpoint: s.sim.Endpoint, Token: s.sim.APIToken, CAPEM: s.sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	seed, _, _ := strings.Cut(made.Config["ide2"], ",")
	storage, _, _ := strings.Cut(seed, ":")
	upid, err := client.DeleteVolume(s.ctx, made.Node, storage, seed)
	if err != nil {
		t.Fatalf("deleting the lost VM's seed %s: %v", seed, err)
	}
	for range 200 {
		if ts, err := client.TaskStatus(s.ctx, made.Node, upid); err != nil || ts.Status == "stopped" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stripStateUUID removes smbios_uuid from every proxy_vm of the workspace's state file:
// the state version 0.1.0 wrote.
func stripStateUUID(t *testing.T, s *scenario) {
	t.Helper()
	raw, err := os.ReadFile(s.ws.StateFile())
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range st["resources"].([]any) {
		res := r.(map[string]any)
		if res["type"] != "proxy_vm" {
			continue
		}
		for _, in := range res["instances"].([]any) {
			delete(in.(map[string]any)["attributes"].(map[string]any), "smbios_uuid")
			n++
		}
	}
	if n == 0 {
		t.Fatal("no proxy_vm in the state")
	}
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.ws.StateFile(), out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestE2E_Binding_OlderStateBindsOnce: a state made by version 0.1.0 (no smbios_uuid) of
// a VM whose mark has no instance line plans one in-place update, with the warning saying
// the mark is being bound; the apply writes the instance line naming the VM's SMBIOS uuid
// and records it, and the next plan has no changes.
func TestE2E_Binding_OlderStateBindsOnce(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/older-state", scenarioOpts{NoForeign: true})
	vm := s.vm("os")
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
	made, _ := s.sim.VM(vmid)
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"description": withoutInstanceLine(made.Description)}}); err != nil {
		t.Fatal(err)
	}
	stripStateUUID(t, s)
	s.sim.EnableRequestLog()

	plan := s.ws.Plan(s.ctx)
	flat := strings.Join(strings.Fields(plan.Output()), " ")
	if plan.ExitCode != 2 || !strings.Contains(flat, "0 to add, 1 to change, 0 to destroy") || !strings.Contains(flat, "Proxy VM mark to be bound to its SMBIOS uuid") {
		t.Errorf("plan: want one in-place update with the binding warning, got exit %d:\n%s", plan.ExitCode, plan)
	}
	if r := s.apply(); !r.OK() {
		t.Fatalf("apply:\n%s", r)
	}
	v, _ := s.sim.VM(vmid)
	inst := proxmox.ParseMark(v.Description).Instance
	if want := strings.TrimPrefix(strings.Split(v.Config["smbios1"], ",")[0], "uuid="); inst == "" || inst != want {
		t.Errorf("the mark's instance line %q after the apply, want the VM's SMBIOS uuid %q:\n%s", inst, want, v.Description)
	}
	if got := s.state().OfType("proxy_vm")[0].String("smbios_uuid"); got != inst {
		t.Errorf("smbios_uuid %q after the apply, want %q", got, inst)
	}
	if v.Power != "running" {
		t.Errorf("the VM is %s after binding", v.Power)
	}
	for _, w := range writesTo(s, vmid) {
		if !strings.HasSuffix(w, "/config") {
			t.Errorf("binding sent more than a config write: %s", w)
		}
	}
	if again := s.ws.Plan(s.ctx); again.ExitCode != 0 {
		t.Errorf("the plan after binding is not empty (exit %d):\n%s", again.ExitCode, again)
	}
}

// TestE2E_Binding_ReplayedCreatingMarkFinished: a Notes-only user writes back, on the
// resource's running VM, the creating text its create wrote after its config step (the
// state line and the proof). An update's config write (a description change) writes the
// finished mark again, bound, and the next plan has no changes (review finding 7: the
// creating line and the proof were kept).
func TestE2E_Binding_ReplayedCreatingMarkFinished(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/replayed-creating", scenarioOpts{NoForeign: true})
	vm := s.vm("rc")
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
	made, _ := s.sim.VM(vmid)
	replayed := made.Description + "\n" + proxmox.MarkKeyState + "=" + proxmox.MarkStateCreating + "\n" + proxmox.MarkKeyProof + "=copied-proof"
	if m := proxmox.ParseMark(replayed); !m.Creating || m.Proof == "" || m.Instance == "" {
		t.Fatalf("the replayed text does not read as a creating mark after the config step: %+v", m)
	}
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"description": replayed}}); err != nil {
		t.Fatal(err)
	}
	vm.Extra = "  description = \"edge for team A\"\n"
	s.vms = []tfrun.VM{vm}
	if r := s.apply(); !r.OK() {
		t.Fatalf("apply:\n%s", r)
	}
	v, _ := s.sim.VM(vmid)
	m := proxmox.ParseMark(v.Description)
	if m.Creating || m.Proof != "" || m.Instance == "" || proxmox.NoteOf(v.Description) != "edge for team A" {
		t.Errorf("the description after the update is not the finished, bound mark with the note: %+v\n%s", m, v.Description)
	}
	if again := s.ws.Plan(s.ctx); again.ExitCode != 0 {
		t.Errorf("the plan after the update is not empty (exit %d):\n%s", again.ExitCode, again)
	}
}

// TestE2E_Binding_RenamedByOptionsActor: someone with VM.Config.Options (the right that
// writes the description) renames the resource's VM. Its mark carries the resource's uid
// and its SMBIOS uuid is the recorded one, so it is still the resource's: the plan warns
// and updates it in place, the apply names it back, the next plan has no changes, and the
// destroy removes it and its seed (review finding 12: the plan replaced it and the VM and
// its seed outlived the resource).
func TestE2E_Binding_RenamedByOptionsActor(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/renamed", scenarioOpts{NoForeign: true})
	vm := s.vm("rn")
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"name": "renamed-by-actor"}}); err != nil {
		t.Fatal(err)
	}
	plan := s.ws.Plan(s.ctx)
	flat := strings.Join(strings.Fields(plan.Output()), " ")
	if plan.ExitCode != 2 || !strings.Contains(flat, "0 to add, 1 to change, 0 to destroy") || !strings.Contains(flat, "Proxy VM renamed outside Terraform") {
		t.Errorf("plan: want one in-place update with the rename warning, got exit %d:\n%s", plan.ExitCode, plan)
	}
	if r := s.apply(); !r.OK() {
		t.Fatalf("apply:\n%s", r)
	}
	if v, _ := s.sim.VM(vmid); v.Config["name"] != vm.Name {
		t.Errorf("the VM is named %q after the apply, want %q", v.Config["name"], vm.Name)
	}
	if st := s.state().OfType("proxy_vm"); len(st) != 1 || st[0].Int("vmid") != vmid {
		t.Errorf("state %+v: want the same VM at %d", st, vmid)
	}
	if again := s.ws.Plan(s.ctx); again.ExitCode != 0 {
		t.Errorf("the plan after the rename back is not empty (exit %d):\n%s", again.ExitCode, again)
	}
	if r := s.destroy(); !r.OK() {
		t.Errorf("destroy:\n%s", r)
	}
	if _, ok := s.sim.VM(vmid); ok {
		t.Errorf("the destroy left VM %d", vmid)
	}
}
