package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
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
			desc := proxmox.CreatingMark(key, lines, vmid, vm.Name)
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
