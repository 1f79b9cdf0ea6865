package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Identity: a proxy_vm owns only the VM it created or was given by import. Every test here
// drives the real terraform binary; each counts its wrong-workspace actions (a VM of
// another resource changed, adopted or destroyed, or one VM tracked twice) and orphans in
// the figures under "identity/...".

// namedVMs returns the scenario's VMs called name in the cluster, by VMID.
func (s *scenario) namedVMs(name string) map[int]pvesim.VMState {
	out := map[int]pvesim.VMState{}
	for _, v := range s.sim.State().VMs {
		if v.Name == name && v.Type == "qemu" && !v.Template {
			out[v.VMID] = v
		}
	}
	return out
}

// seedsOf lists the seed ISO volume ids of VM name in the cluster (every node).
func (s *scenario) seedsOf(name string) []string {
	var out []string
	for _, v := range s.sim.State().Volumes {
		if n, _ := seedNameOf(v.VolID); n == name {
			out = append(out, v.VolID)
		}
	}
	return out
}

// seedNameOf is tfrun's seed file parsing, for the tests of this package.
func seedNameOf(volid string) (name, uid string) {
	_, file, ok := strings.Cut(volid, ":iso/")
	if !ok || !strings.HasSuffix(file, "-seed.iso") {
		return "", ""
	}
	base := strings.TrimSuffix(file, "-seed.iso")
	if len(base) > 37 && base[len(base)-37] == '-' {
		return base[:len(base)-37], base[len(base)-36:]
	}
	return base, ""
}

// identityFigures records one identity scenario.
func identityFigures(s *scenario, ok bool, wrong, orphans int) {
	s.figure(func(row *figureRow) {
		row.Run++
		if ok && wrong == 0 && orphans == 0 {
			row.Converged++
		}
		row.WrongWS += wrong
		row.Orphans += orphans
	})
}

// finish checks the live invariants, an empty plan, then destroy and nothing left; it
// returns the orphans found and whether all went well.
func (s *scenario) finish(states ...*tfrun.State) (int, bool) {
	s.t.Helper()
	ok := true
	live := s.chk.Live(append([]*tfrun.State{s.state()}, states...)...).Strict()
	orphans := len(live.Orphans)
	if !live.OK() {
		ok = false
		s.t.Errorf("invariants: %v", live.Err())
	}
	if r := s.ws.Plan(s.ctx); r.ExitCode != 0 {
		ok = false
		s.t.Errorf("the plan after the apply is not empty (exit %d):\n%s", r.ExitCode, r)
	}
	if r := s.destroy(); !r.OK() {
		ok = false
		s.t.Errorf("destroy failed:\n%s", r)
	}
	if len(states) == 0 {
		gone := s.chk.Gone()
		orphans += len(gone.Orphans)
		if !gone.OK() {
			ok = false
			s.t.Errorf("after destroy: %v", gone.Err())
		}
	}
	return orphans, ok
}

// TestE2E_Identity_CreateBeforeDestroy: with create_before_destroy, a replacement (a
// cloud_init change, or -replace) makes a second VM of the same name while the first
// runs, then destroys the first: one VM of that name is left, it booted the new
// cloud-init from a seed ISO of its own, the state tracks it and the next plan is empty.
func TestE2E_Identity_CreateBeforeDestroy(t *testing.T) {
	needTF(t)
	for _, how := range []string{"cloud-init", "replace"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "identity/create-before-destroy", scenarioOpts{})
			vm := s.vm("cbd")
			vm.CloudInit = "#cloud-config\nwrite_files:\n  - path: /etc/generation\n    content: one\n"
			vm.Extra = "lifecycle {\n  create_before_destroy = true\n}\n"
			s.vms = []tfrun.VM{vm}
			s.mustApply()
			old, _ := s.sharedVM()
			args := []string{}
			if how == "cloud-init" {
				s.vms[0].CloudInit = strings.Replace(vm.CloudInit, "content: one", "content: two", 1)
			} else {
				args = append(args, "-replace="+vm.Addr())
			}
			wrong := 0
			r := s.apply(args...)
			if !r.OK() {
				t.Fatalf("the replacement failed:\n%s", r)
			}
			cur, _ := s.sharedVM()
			named := s.namedVMs(vm.Name)
			switch {
			case cur.Int("vmid") == old.Int("vmid") || cur.String("uid") == old.String("uid"):
				wrong++
				t.Errorf("the replacement adopted the old VM: VMID %d uid %s, was %d %s", cur.Int("vmid"), cur.String("uid"), old.Int("vmid"), old.String("uid"))
			case len(named) != 1:
				wrong++
				t.Errorf("%d VMs named %s after the replacement, want 1: %v", len(named), vm.Name, named)
			}
			if _, left := named[old.Int("vmid")]; left {
				t.Errorf("the old VM %d is still there", old.Int("vmid"))
			}
			if v, ok := named[cur.Int("vmid")]; !ok || v.Power != "running" {
				wrong++
				t.Errorf("the state's VM %d is not running in the cluster: %+v", cur.Int("vmid"), v)
			}
			seed, ok := s.sim.GuestSeed(cur.Int("vmid"))
			if !ok || string(seed.UserData) != s.vms[0].CloudInit {
				t.Errorf("the guest read user-data %q, want the configured %q", seed.UserData, s.vms[0].CloudInit)
			}
			seeds := s.seedsOf(vm.Name)
			want := tfrun.UIDSeedVolID(s.sim.ISOStorage, vm.Name, cur.String("uid"))
			if len(seeds) != 1 || seeds[0] != want {
				t.Errorf("seed ISOs of %s: %v, want only the new VM's %s", vm.Name, seeds, want)
			}
			orphans, ok := s.finish()
			identityFigures(s, ok, wrong, orphans)
		})
	}
}

// TestE2E_Identity_SameNameTwiceInOneConfig: two proxy_vm of one configuration with the
// same name get two distinct VMs, each with its own seed ISO; the plan after is empty and
// destroy removes both.
func TestE2E_Identity_SameNameTwiceInOneConfig(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/same-name-twice", scenarioOpts{})
	one, two := s.vm("twin"), s.vm("twin")
	one.Resource, two.Resource = "one", "two"
	two.Cores, two.MemoryMiB, two.MachineType = 2, 1024, ""
	s.vms = []tfrun.VM{one, two}
	s.mustApply()
	vms := s.state().OfType("proxy_vm")
	wrong := 0
	if len(vms) != 2 || vms[0].Int("vmid") == vms[1].Int("vmid") {
		t.Fatalf("state %+v, want two resources on two VMIDs", vms)
	}
	if n := len(s.namedVMs(one.Name)); n != 2 {
		wrong++
		t.Errorf("%d VMs named %s, want 2", n, one.Name)
	}
	if n := len(s.seedsOf(one.Name)); n != 2 {
		t.Errorf("%d seed ISOs of %s, want one per VM", n, one.Name)
	}
	orphans, ok := s.finish()
	identityFigures(s, ok, wrong, orphans)
}

// TestE2E_Identity_OperatorVMRefusedThenImported: a VM of our name with a mark but none
// of this provider's lines, met by a create, is refused, naming the VMID and the import
// command, and nothing is touched. Its mark has no uid line at first, so the import is
// refused too, saying how to give it one (nothing could ever prove such a VM to be the
// resource's); with the operator's three lines it is imported, the state taking its mark's
// uid, and its destroy removes it with the <name>-seed.iso its ide2 names.
func TestE2E_Identity_OperatorVMRefusedThenImported(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/operator-vm", scenarioOpts{})
	vm := s.vm("op")
	const vmid = vmidMin + 40
	if err := s.sim.AddISO(s.sim.Nodes[0], s.sim.ISOStorage, vm.Name+"-seed.iso", []byte("operator seed")); err != nil {
		t.Fatal(err)
	}
	if err := s.sim.AddVM(pvesim.VMSpec{VMID: vmid, Name: vm.Name, Power: "running", ShipsAgent: true, Config: map[string]string{
		"description": "proxy-operator-managed=true\nproxy-operator-created-at=2026-11-01T10:00:00Z",
		"ide2":        tfrun.SeedVolID(s.sim.ISOStorage, vm.Name) + ",media=cdrom",
		"agent":       "1",
	}}); err != nil {
		t.Fatal(err)
	}
	before, _ := s.sim.VM(vmid)
	s.chk.Refused = map[int]bool{vmid: true}
	s.vms = []tfrun.VM{vm}
	r := s.apply()
	wrong := 0
	flat := strings.Join(strings.Fields(r.Output()), " ")
	if r.OK() || len(s.state().OfType("proxy_vm")) != 0 {
		wrong++
		t.Errorf("the create adopted the operator's VM:\n%s", r)
	}
	for _, want := range []string{fmt.Sprintf("VMID %d", vmid), fmt.Sprintf("terraform import proxy_vm.<name> vms/%d/%s", vmid, vm.Name)} {
		if !strings.Contains(flat, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, r)
		}
	}
	if after, _ := s.sim.VM(vmid); !sameVM(before, after) {
		wrong++
		t.Errorf("the refused create changed the operator's VM:\nbefore %+v\nafter  %+v", before, after)
	}
	if live := s.chk.Live(s.state()); !live.OK() {
		t.Errorf("after the refusal: %v", live.Err())
	}
	if r := s.ws.Import(s.ctx, vm.Addr(), fmt.Sprint(vmid)); r.OK() || !strings.Contains(strings.Join(strings.Fields(r.Output()), " "), "add a line proxy-operator-uid=") {
		wrong++
		t.Errorf("the import of a mark without a uid line was not refused with the fix:\n%s", r)
	}
	if after, _ := s.sim.VM(vmid); !sameVM(before, after) {
		wrong++
		t.Errorf("the refused import changed the VM:\nbefore %+v\nafter  %+v", before, after)
	}
	const operatorUID = "5e0c1f3a-7b2d-4c8e-9f01-23456789abcd"
	client, err := pveapi.New(pveapi.Options{Endpoint: s.sim.Endpoint, Token: s.sim.APIToken, CAPEM: s.sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.SetVMConfig(s.ctx, before.Node, vmid, map[string]string{
		"description": "proxy-operator-managed=true\nproxy-operator-uid=" + operatorUID + "\nproxy-operator-created-at=2026-11-01T10:00:00Z",
	}); err != nil {
		t.Fatal(err)
	}
	if r := s.ws.Import(s.ctx, vm.Addr(), fmt.Sprint(vmid)); !r.OK() {
		t.Fatalf("import of the operator's VM failed:\n%s", r)
	}
	st := s.state().OfType("proxy_vm")
	if len(st) != 1 || st[0].Int("vmid") != vmid || st[0].String("uid") != operatorUID {
		t.Errorf("imported state %+v, want VMID %d with the mark's uid %s", st, vmid, operatorUID)
	}
	s.chk.Refused = nil
	if r := s.destroy(); !r.OK() {
		t.Errorf("destroy of the imported VM failed:\n%s", r)
	}
	if _, left := s.sim.VM(vmid); left {
		t.Errorf("the imported VM %d is still there", vmid)
	}
	gone := s.chk.Gone()
	if !gone.OK() {
		t.Errorf("after destroy: %v", gone.Err())
	}
	identityFigures(s, gone.OK(), wrong, len(gone.Orphans))
}
