package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// handMadeAtLostVMID applies one proxy_vm, takes it out of the state (as a kill before
// Terraform saved it leaves it), deletes its VM and makes a stopped VM by hand at the same
// VMID and name with config, carrying the creating text the lost VM's clone wrote (before
// its config step: no instance line; its proof verifies for that VMID), dated age ago. It
// returns the VMID.
func handMadeAtLostVMID(t *testing.T, s *scenario, vm tfrun.VM, age time.Duration, config func(vmid int) map[string]string) int {
	t.Helper()
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	first := s.state().OfType("proxy_vm")
	if len(first) != 1 {
		t.Fatalf("state %+v", first)
	}
	vmid, uid := first[0].Int("vmid"), first[0].String("uid")
	if r := s.ws.Run(s.ctx, "state", "rm", vm.Addr()); !r.OK() {
		t.Fatalf("state rm:\n%s", r)
	}
	key, err := pveapi.DeriveKey(s.sim.APIToken, proxmox.ProofKeyLabel)
	if err != nil {
		t.Fatal(err)
	}
	copied := proxmox.CreatingMark(key, proxmox.MarkLines{UID: uid, CreatedAt: time.Now().UTC().Add(-age).Truncate(time.Second)}, vmid, vm.Name) +
		"\n" + proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider
	lost, _ := s.sim.VM(vmid)
	if err := s.sim.DeleteVM(vmid); err != nil {
		t.Fatal(err)
	}
	cfg := config(vmid)
	cfg["description"] = copied
	if err := s.sim.AddVM(pvesim.VMSpec{VMID: vmid, Node: lost.Node, Name: vm.Name, Power: "stopped", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	return vmid
}

// noWritesTo counts (and reports) the requests other than reads that reached vmid since the
// request log was enabled.
func noWritesTo(t *testing.T, s *scenario, vmid int) int {
	t.Helper()
	n := 0
	for _, req := range s.sim.RequestLog() {
		if req.VMID == vmid && req.Method != http.MethodGet {
			n++
			t.Errorf("a write reached the hand-made VM %d: %s %s", vmid, req.Method, req.Path)
		}
	}
	return n
}

// TestE2E_Cleanup_HandMadeStoppedVMNeedsALook is the clean-up half of the copied-mark threat (decision:
// instance-binding): a stopped VM made by hand at a reused VMID (scsi0 32G, scsi1 100G, an
// installer ISO on ide2) carrying the copied creating text, three hours old, past the
// documented action's 2h grace period. The clean-up (the documented real run) must send it
// nothing and report it as needing a look, with the VMID, the sign (not an untouched clone
// of a catalogue template) and the qm destroy advice. Before the untouched-clone check it
// claimed, stopped and deleted the VM.
func TestE2E_Cleanup_HandMadeStoppedVMNeedsALook(t *testing.T) {
	needTF(t)
	tf := latestTerraform(t)
	s := newScenario(t, "identity/handmade-stopped-cleanup", scenarioOpts{NoForeign: true})
	vm := s.vm("hm")
	vmid := handMadeAtLostVMID(t, s, vm, 3*time.Hour, func(vmid int) map[string]string {
		return map[string]string{
			"scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=32G", vmid),
			"scsi1": fmt.Sprintf("local-lvm:vm-%d-disk-1,size=100G", vmid),
			"ide2":  "local:iso/debian-13-netinst.iso,media=cdrom",
		}
	})
	before, _ := s.sim.VM(vmid)
	r := s.runCleanup(t, tf)
	if !r.OK() {
		t.Fatalf("the cleanup failed:\n%s", r)
	}
	out := strings.Join(strings.Fields(r.Output()), " ")
	wrong := noWritesTo(t, s, vmid)
	if after, ok := s.sim.VM(vmid); !ok || after.Description != before.Description || after.Power != "stopped" || after.Config["scsi1"] != before.Config["scsi1"] {
		wrong++
		t.Errorf("the hand-made VM changed or is gone (there %v):\nbefore %+v\nafter  %+v", ok, before, after)
	}
	for _, want := range []string{fmt.Sprintf("(VMID %d)", vmid), "needs a look", "not shown to be a clone the provider made",
		fmt.Sprintf("qm stop %d && qm destroy %d --purge", vmid, vmid)} {
		if !strings.Contains(out, want) {
			t.Errorf("the cleanup's output lacks %q:\n%s", want, tfrun.TrimOverridesWarning(r.Stdout))
		}
	}
	figures.note(s.cat, fmt.Sprintf("stopped hand-made VM with a copied creating text: %d writes by the cleanup", wrong))
	identityFigures(s, wrong == 0, wrong, 0)
}

// TestE2E_Ownership_RetryLeavesAHandMadeVMWithTheTemplatesDisk is the retry half of
// the copied-mark threat (decision: instance-binding): a stopped VM made by hand at a reused VMID whose
// only disk is the template's boot disk at its size, but with 8 cores and 8 GiB the create
// never wrote, carrying the copied creating text a minute old (within TakeoverWindow). The
// next apply must send it nothing, warn naming the VMID, why (not an untouched clone of the
// template) and the qm destroy advice, and create its VM at another VMID; destroy leaves
// the hand-made VM. Before the untouched-clone check the retry destroyed and re-cloned it.
func TestE2E_Ownership_RetryLeavesAHandMadeVMWithTheTemplatesDisk(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/handmade-template-disk-retry", scenarioOpts{NoForeign: true})
	vm := s.vm("hs")
	vmid := handMadeAtLostVMID(t, s, vm, time.Minute, func(vmid int) map[string]string {
		return map[string]string{"scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-1,size=3G", vmid), "memory": "8192", "cores": "8"}
	})
	before, _ := s.sim.VM(vmid)
	s.sim.EnableRequestLog()
	r := s.apply()
	if !r.OK() {
		t.Fatalf("the apply failed:\n%s", r)
	}
	flat := strings.Join(strings.Fields(r.Output()), " ")
	wrong := noWritesTo(t, s, vmid)
	if st := s.state().OfType("proxy_vm"); len(st) != 1 || st[0].Int("vmid") == vmid {
		wrong++
		t.Errorf("state %+v: want one VM at another VMID than the hand-made %d", st, vmid)
	}
	for _, want := range []string{"Warning: Half-made proxy VM left alone", fmt.Sprintf("VMID %d", vmid),
		"not an untouched clone of template 9001", "cores is 8", fmt.Sprintf("qm stop %d && qm destroy %d --purge", vmid, vmid)} {
		if !strings.Contains(flat, want) {
			t.Errorf("the apply does not say %q:\n%s", want, r)
		}
	}
	if after, ok := s.sim.VM(vmid); !ok || after.Description != before.Description || after.Config["cores"] != "8" || after.Config["memory"] != "8192" {
		wrong++
		t.Errorf("the hand-made VM changed (there %v):\nbefore %+v\nafter  %+v", ok, before, after)
	}
	if r := s.destroy(); !r.OK() {
		t.Errorf("destroy:\n%s", r)
	}
	if _, ok := s.sim.VM(vmid); !ok {
		wrong++
		t.Errorf("destroy removed the hand-made VM")
	}
	identityFigures(s, wrong == 0, wrong, 0)
}
