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

// TestE2E_Ownership_CreatingProof (decision: creating-proof), with the built provider and
// the terraform CLI: a VM made by an apply whose state was lost (removed from the state,
// as a kill before Terraform saved it leaves it) and marked "creating" again is taken over
// by the next apply only when its mark's proof, made with the provider's API token for
// that VMID, verifies, and the apply says so in a warning naming the VMID. With the same
// creating line and no proof (written by hand) the VM is left alone, with a warning, and
// receives no request but reads: the apply makes a VM of its own at the next VMID.
func TestE2E_Ownership_CreatingProof(t *testing.T) {
	needTF(t)
	for _, proved := range []bool{true, false} {
		name := map[bool]string{true: "proved", false: "forged"}[proved]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "identity/creating-proof", scenarioOpts{NoForeign: true})
			vm := s.vm("cp")
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
			lines := proxmox.MarkLines{UID: uid, CreatedAt: time.Now().UTC().Add(-time.Minute).Truncate(time.Second)}
			// A create interrupted after its start left its mark bound to the VM (its config
			// step wrote the instance line, decision: instance-binding).
			made, _ := s.sim.VM(vmid)
			bound := lines
			bound.Instance = proxmox.ParseMark(made.Description).Instance
			desc := proxmox.CreatingMark(key, bound, vmid, vm.Name)
			if !proved {
				lines.Creating = true
				desc = lines.Format()
			}
			client, err := pveapi.New(pveapi.Options{Endpoint: s.sim.Endpoint, Token: s.sim.APIToken, CAPEM: s.sim.CAPEM, RequestTimeout: harnessRequestTimeout})
			if err != nil {
				t.Fatal(err)
			}
			before, _ := s.sim.VM(vmid)
			if err := client.SetVMConfig(s.ctx, before.Node, vmid, map[string]string{"description": desc}); err != nil {
				t.Fatal(err)
			}
			before, _ = s.sim.VM(vmid)
			s.sim.EnableRequestLog()

			r := s.apply()
			if !r.OK() {
				t.Fatalf("the apply failed:\n%s", r)
			}
			flat := strings.Join(strings.Fields(r.Output()), " ")
			st := s.state().OfType("proxy_vm")
			if len(st) != 1 {
				t.Fatalf("state %+v", st)
			}
			if proved {
				if st[0].Int("vmid") != vmid || st[0].String("uid") == uid {
					t.Errorf("state vmid %d uid %s, want the taken-over VM %d with a new uid", st[0].Int("vmid"), st[0].String("uid"), vmid)
				}
				for _, want := range []string{"Warning: Proxy VM create took over an interrupted create", fmt.Sprintf("VMID %d", vmid), uid} {
					if !strings.Contains(flat, want) {
						t.Errorf("the apply does not say %q:\n%s", want, r)
					}
				}
				if v, _ := s.sim.VM(vmid); strings.Contains(v.Description, proxmox.MarkKeyState) || strings.Contains(v.Description, proxmox.MarkKeyProof) {
					t.Errorf("the taken-over VM's mark is not finished: %q", v.Description)
				}
				orphans, ok := s.finish()
				identityFigures(s, ok, 0, orphans)
				return
			}
			wrong := 0
			if st[0].Int("vmid") == vmid {
				wrong++
				t.Errorf("the forged creating mark at VMID %d was taken over", vmid)
			}
			for _, want := range []string{"Warning: Half-made proxy VM left alone", fmt.Sprintf("VMID %d", vmid), proxmox.MarkKeyProof} {
				if !strings.Contains(flat, want) {
					t.Errorf("the apply does not say %q:\n%s", want, r)
				}
			}
			for _, req := range s.sim.RequestLog() {
				if req.VMID == vmid && req.Method != http.MethodGet {
					wrong++
					t.Errorf("a write reached the VM left alone: %s %s", req.Method, req.Path)
				}
			}
			if after, _ := s.sim.VM(vmid); after.Description != before.Description || after.Power != before.Power || after.Config["ide2"] != before.Config["ide2"] {
				wrong++
				t.Errorf("the VM left alone changed:\nbefore %+v\nafter  %+v", before, after)
			}
			// It is nobody's: destroy removes this apply's VM and leaves it.
			if r := s.destroy(); !r.OK() {
				t.Errorf("destroy:\n%s", r)
			}
			if _, ok := s.sim.VM(vmid); !ok {
				wrong++
				t.Errorf("destroy removed the VM left alone")
			}
			identityFigures(s, wrong == 0, wrong, 0)
		})
	}
}

// TestE2E_Ownership_CopiedCreatingTextOnAHandMadeVM is the copied-creating-text threat (decision:
// instance-binding): an apply's VM is lost from the state (as a kill before Terraform saved
// it leaves it), someone deletes it and makes a VM of their own at the same VMID with the
// same name, two disks of 32G and 100G, running, and the creating text copied from the
// lost VM (its proof verifies for that VMID, dated a minute ago: within the takeover
// window). The next apply must leave that VM alone (no request but reads), say so in a
// warning naming the VMID with the qm destroy advice, and create its own VM at the next
// VMID; destroy leaves the hand-made VM. Before that decision the retry destroyed it.
func TestE2E_Ownership_CopiedCreatingTextOnAHandMadeVM(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/copied-creating-text", scenarioOpts{NoForeign: true})
	vm := s.vm("hm")
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
	copied := proxmox.CreatingMark(key, proxmox.MarkLines{UID: uid, CreatedAt: time.Now().UTC().Add(-time.Minute).Truncate(time.Second)}, vmid, vm.Name) +
		"\n" + proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider
	lost, _ := s.sim.VM(vmid)
	if err := s.sim.DeleteVM(vmid); err != nil {
		t.Fatal(err)
	}
	if err := s.sim.AddVM(pvesim.VMSpec{VMID: vmid, Node: lost.Node, Name: vm.Name, Power: "running", Config: map[string]string{
		"description": copied,
		"scsi0":       fmt.Sprintf("local-lvm:vm-%d-disk-0,size=32G", vmid),
		"scsi1":       fmt.Sprintf("local-lvm:vm-%d-disk-1,size=100G", vmid),
	}}); err != nil {
		t.Fatal(err)
	}
	before, _ := s.sim.VM(vmid)
	s.sim.EnableRequestLog()
	r := s.apply()
	if !r.OK() {
		t.Fatalf("the apply failed:\n%s", r)
	}
	flat := strings.Join(strings.Fields(r.Output()), " ")
	wrong := 0
	if st := s.state().OfType("proxy_vm"); len(st) != 1 || st[0].Int("vmid") == vmid {
		wrong++
		t.Errorf("state %+v: want one VM at another VMID than the hand-made %d", st, vmid)
	}
	for _, want := range []string{"Warning: Half-made proxy VM left alone", fmt.Sprintf("VMID %d", vmid),
		"its disks (scsi0, scsi1) are not those of template", fmt.Sprintf("qm stop %d && qm destroy %d --purge", vmid, vmid)} {
		if !strings.Contains(flat, want) {
			t.Errorf("the apply does not say %q:\n%s", want, r)
		}
	}
	for _, req := range s.sim.RequestLog() {
		if req.VMID == vmid && req.Method != http.MethodGet {
			wrong++
			t.Errorf("a write reached the hand-made VM: %s %s", req.Method, req.Path)
		}
	}
	if after, ok := s.sim.VM(vmid); !ok || after.Description != before.Description || after.Power != before.Power || after.Config["scsi1"] != before.Config["scsi1"] {
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
