package e2e

import (
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Seeds follow their VM (decision: seed-location, decision: drift-gone): whatever happened
// to iso_storage or to the VM, nothing the provider uploaded is left once the resource is
// destroyed or replaced. Every test here counts the scenario's seed ISOs left in the
// cluster, on every storage and node, under "seeds/...".

// seedVolumes lists the scenario's seed ISOs in the cluster: node:volid, every storage.
func (s *scenario) seedVolumes() []string {
	var out []string
	for _, v := range s.sim.State().Volumes {
		if s.chk.Baseline.Volumes[v.Node+"|"+v.VolID] {
			continue
		}
		if n, _ := seedNameOf(v.VolID); n != "" && s.chk.Owns(n) {
			out = append(out, v.Node+":"+v.VolID)
		}
	}
	return out
}

// seedsFigures records one seeds scenario: ok, and the seeds it left (also counted in
// seeds-left when the scenario ends, countSeedsLeft).
func seedsFigures(s *scenario, ok bool, left int) {
	s.figure(func(row *figureRow) {
		row.Run++
		if ok && left == 0 {
			row.Converged++
		}
		row.Orphans += left
	})
}

// TestE2E_Seeds_DestroyAfterISOStorageChanged: VMs made with one iso_storage are destroyed
// after iso_storage was changed, to a storage that does not exist and to another that
// does (local). The destroy deletes each seed where its VM's ide2 names it: it succeeds
// and leaves no seed ISO anywhere.
func TestE2E_Seeds_DestroyAfterISOStorageChanged(t *testing.T) {
	for _, tc := range []struct{ name, storage string }{
		{"missing storage", "seeds-typo"},
		{"another storage", "local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newScenario(t, "seeds/iso_storage-changed", scenarioOpts{NoForeign: true})
			s.vms = []tfrun.VM{s.vm("a"), s.vm("b")}
			s.mustApply()
			before := s.seedVolumes()
			s.pc.ISOStorage = tc.storage
			d := s.destroy()
			left := s.seedVolumes()
			ok := d.OK() && len(left) == 0 && len(before) == 2
			if !d.OK() {
				t.Errorf("destroy with iso_storage changed to %s failed:\n%s", tc.storage, d)
			}
			if len(left) != 0 {
				t.Errorf("destroy with iso_storage changed to %s left seed ISOs %v (before: %v)\n%s", tc.storage, left, before, tail(tfrun.TrimOverridesWarning(d.Output()), 12))
			}
			if g := s.chk.Gone(); !g.OK() {
				ok = false
				t.Errorf("after destroy: %v", g.Err())
			}
			if st := s.state(); len(st.OfType("proxy_vm")) != 0 {
				ok = false
				t.Errorf("the state still holds %d proxy_vm", len(st.OfType("proxy_vm")))
			}
			t.Logf("iso_storage %s: %d seed ISOs before the destroy, %d after", tc.storage, len(before), len(left))
			seedsFigures(s, ok, len(left))
		})
	}
}

// TestE2E_Seeds_ISOStorageChangedThenApply: an iso_storage change on existing VMs changes
// nothing on them (their seeds stay where their ide2 names them, the plan is empty), a
// replacement made afterwards uploads its seed to the new storage and deletes the old VM's
// where it is, and the destroy leaves no seed.
func TestE2E_Seeds_ISOStorageChangedThenApply(t *testing.T) {
	s := newScenario(t, "seeds/iso_storage-changed", scenarioOpts{NoForeign: true})
	a, b := s.vm("a"), s.vm("b")
	s.vms = []tfrun.VM{a, b}
	s.mustApply()
	s.pc.ISOStorage = "local"
	ok := true
	if r := s.ws.Plan(s.ctx); r.ExitCode != 0 {
		ok = false
		t.Errorf("the plan after an iso_storage change is not empty (exit %d):\n%s", r.ExitCode, r)
	}
	s.write()
	if r := s.ws.Apply(s.ctx, "-replace="+a.Addr()); !r.OK() {
		t.Fatalf("apply -replace after the iso_storage change:\n%s", r)
	}
	seeds := s.seedVolumes()
	var onLocal, onOld int
	for _, v := range seeds {
		switch {
		case strings.Contains(v, ":local:iso/"+a.Name+"-"):
			onLocal++
		case strings.Contains(v, ":"+s.sim.ISOStorage+":iso/"+b.Name+"-"):
			onOld++
		default:
			ok = false
			t.Errorf("seed %s: want only %s's on local and %s's on %s", v, a.Name, b.Name, s.sim.ISOStorage)
		}
	}
	if onLocal != 1 || onOld != 1 {
		ok = false
		t.Errorf("seeds after the replacement %v: want %s's new one on local and %s's on %s", seeds, a.Name, b.Name, s.sim.ISOStorage)
	}
	if !ok {
		figures.note(s.cat, "checks before the recovery failed")
	}
	s.converge() // records the figures
}

// outOfBand is what happens to the VM outside Terraform.
type outOfBand struct {
	name string
	// reuse puts another VM at the deleted VM's VMID: a VM that is not ours, which no
	// path may touch.
	reuse bool
}

var outOfBandCases = []outOfBand{{"deleted", false}, {"deleted, VMID reused by another VM", true}}

// deleteOutOfBand destroys the scenario's VM named name as `qm destroy` would (its seed
// ISO stays) and, with reuse, puts a VM of somebody else at its VMID. It returns the seed
// the VM booted from and the VMID.
func (s *scenario) deleteOutOfBand(name string, reuse bool) (string, int) {
	s.t.Helper()
	var vmid int
	for id := range s.namedVMs(name) {
		vmid = id
	}
	if vmid == 0 {
		s.t.Fatalf("no VM %s to delete", name)
	}
	v, _ := s.sim.VM(vmid)
	seed, _, _ := strings.Cut(v.Config["ide2"], ",")
	if err := s.sim.DeleteVM(vmid); err != nil {
		s.t.Fatal(err)
	}
	if reuse {
		spec := pvesim.VMSpec{VMID: vmid, Name: "reused-" + name, Power: "running", ShipsAgent: true}
		if err := s.sim.AddVM(spec); err != nil {
			s.t.Fatal(err)
		}
		// The foreign VM is part of the baseline from now on: no path may touch it.
		s.chk.Baseline.VMs[vmid], _ = s.sim.VM(vmid)
	}
	return seed, vmid
}

// TestE2E_Seeds_OutOfBandDeleteThenApply: a VM deleted outside Terraform (its VMID free,
// or reused by somebody else's VM) is planned for replacement, saying so; the apply
// deletes the seed the old VM left and makes a new VM, with create_before_destroy too.
// No old seed is left, the foreign VM is untouched, and the next plan is empty.
func TestE2E_Seeds_OutOfBandDeleteThenApply(t *testing.T) {
	for _, cbd := range []bool{false, true} {
		for _, tc := range outOfBandCases {
			name := tc.name
			if cbd {
				name += ", create_before_destroy"
			}
			t.Run(name, func(t *testing.T) {
				s := newScenario(t, "seeds/out-of-band-delete", scenarioOpts{})
				v := s.vm("a")
				if cbd {
					v.Extra = "  lifecycle {\n    create_before_destroy = true\n  }\n"
				}
				s.vms = []tfrun.VM{v, s.vm("b")}
				s.mustApply()
				old, vmid := s.deleteOutOfBand(v.Name, tc.reuse)
				ok := true
				p := s.ws.Plan(s.ctx)
				out := strings.Join(strings.Fields(p.Output()), " ")
				if p.ExitCode != 2 || !strings.Contains(out, v.Addr()+" must be replaced") ||
					!strings.Contains(out, "Proxy VM deleted outside Terraform") || !strings.Contains(out, old) ||
					!strings.Contains(out, "1 to add, 0 to change, 1 to destroy") {
					ok = false
					t.Errorf("the plan after %s's VM was %s: want a replacement saying it was deleted outside Terraform and naming %s:\n%s", v.Name, tc.name, old, p)
				}
				if r := s.apply(); !r.OK() {
					t.Fatalf("apply after the out-of-band delete:\n%s", r)
				}
				for _, left := range s.seedVolumes() {
					if strings.HasSuffix(left, ":"+old) {
						ok = false
						t.Errorf("the deleted VM's seed %s is left after the apply", left)
					}
				}
				if tc.reuse {
					if got, there := s.sim.VM(vmid); !there || got.Name != "reused-"+v.Name || got.Power != "running" {
						ok = false
						t.Errorf("the foreign VM at VMID %d after the apply: %+v (present %v)", vmid, got, there)
					}
				}
				if n := len(s.namedVMs(v.Name)); n != 1 {
					ok = false
					t.Errorf("%d VMs named %s after the apply, want 1", n, v.Name)
				}
				if !ok {
					figures.note(s.cat, "checks before the recovery failed")
				}
				s.converge() // records the figures
			})
		}
	}
}

// TestE2E_Seeds_OutOfBandDeleteThenDestroy: after a VM was deleted outside Terraform, a
// plain `terraform destroy` (with its refresh) removes the seed it left; the other VM is
// destroyed as usual, a VM at the reused VMID is untouched, and no seed is left.
func TestE2E_Seeds_OutOfBandDeleteThenDestroy(t *testing.T) {
	for _, tc := range outOfBandCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScenario(t, "seeds/out-of-band-delete", scenarioOpts{})
			v := s.vm("a")
			s.vms = []tfrun.VM{v, s.vm("b")}
			s.mustApply()
			old, _ := s.deleteOutOfBand(v.Name, tc.reuse)
			d := s.destroy()
			left := s.seedVolumes()
			ok := d.OK() && len(left) == 0
			if !d.OK() {
				t.Errorf("destroy after the out-of-band delete failed:\n%s", d)
			}
			if !strings.Contains(strings.Join(strings.Fields(d.Output()), " "), "Proxy VM deleted outside Terraform") {
				ok = false
				t.Errorf("the destroy does not say the VM was deleted outside Terraform:\n%s", d)
			}
			if len(left) != 0 {
				t.Errorf("seed ISOs left after the destroy: %v (the deleted VM's was %s)", left, old)
			}
			if g := s.chk.Gone(); !g.OK() {
				ok = false
				t.Errorf("after destroy: %v", g.Err())
			}
			seedsFigures(s, ok, len(left))
		})
	}
}

// TestE2E_Seeds_OutOfBandDeleteRefreshFalse: with -refresh=false nothing is read, so the
// plan shows no change; a destroy with -refresh=false runs the delete, which removes the
// seed the state recorded.
func TestE2E_Seeds_OutOfBandDeleteRefreshFalse(t *testing.T) {
	s := newScenario(t, "seeds/out-of-band-delete", scenarioOpts{NoForeign: true})
	v := s.vm("a")
	s.vms = []tfrun.VM{v}
	s.mustApply()
	s.deleteOutOfBand(v.Name, false)
	ok := true
	if p := s.ws.Plan(s.ctx, "-refresh=false"); p.ExitCode != 0 {
		ok = false
		t.Errorf("plan -refresh=false after the out-of-band delete: want no changes (nothing was read):\n%s", p)
	}
	s.write()
	d := s.ws.Destroy(s.ctx, "-refresh=false")
	left := s.seedVolumes()
	if !d.OK() || len(left) != 0 {
		ok = false
		t.Errorf("destroy -refresh=false: want success and no seed left, got seeds %v:\n%s", left, d)
	}
	seedsFigures(s, ok, len(left))
}

// TestE2E_Seeds_DestroyThatCannotDeleteTheSeedFails: when the seed ISO cannot be deleted
// (the token lacks Datastore.Allocate on its storage), the destroy fails, naming the
// volume and what to do, and keeps the resource in the state, whether the VM is there
// (it is stopped, not destroyed) or was deleted outside Terraform; once the privilege is
// back, the same destroy finishes and leaves nothing.
func TestE2E_Seeds_DestroyThatCannotDeleteTheSeedFails(t *testing.T) {
	for _, gone := range []bool{false, true} {
		name := "VM there"
		if gone {
			name = "VM deleted outside Terraform"
		}
		t.Run(name, func(t *testing.T) {
			s := newScenario(t, "seeds/seed-delete-refused", scenarioOpts{NoForeign: true})
			v := s.vm("a")
			s.vms = []tfrun.VM{v}
			s.mustApply()
			seed := s.seedVolumes()
			if len(seed) != 1 {
				t.Fatalf("seeds after the apply: %v", seed)
			}
			volid := strings.TrimPrefix(seed[0], s.sim.Nodes[0]+":")
			if gone {
				s.deleteOutOfBand(v.Name, false)
			}
			acl := "/storage/" + s.sim.ISOStorage
			s.sim.Deny(acl, "Datastore.Allocate")
			d := s.destroy()
			out := strings.Join(strings.Fields(d.Output()), " ")
			ok := true
			if d.OK() || !strings.Contains(out, volid) || !strings.Contains(out, "Datastore.Allocate") || !strings.Contains(out, "pvesm free "+volid) {
				ok = false
				t.Errorf("destroy with the seed delete refused: want a failure naming %s and what to do:\n%s", volid, d)
			}
			if m := s.checkDiag(d, "seed"); m != "" {
				ok = false
				t.Errorf("the diagnostic: %s", m)
			}
			if st := s.state(); len(st.OfType("proxy_vm")) != 1 {
				ok = false
				t.Errorf("the resource left the state although its seed is still there")
			}
			if left := s.seedVolumes(); len(left) != 1 {
				ok = false
				t.Errorf("seeds after the refused destroy: %v, want %s", left, volid)
			}
			s.sim.Allow(acl, "Datastore.Allocate")
			if d := s.destroy(); !d.OK() {
				ok = false
				t.Errorf("the destroy once the privilege is back:\n%s", d)
			}
			left := s.seedVolumes()
			if g := s.chk.Gone(); !g.OK() {
				ok = false
				t.Errorf("after the second destroy: %v", g.Err())
			}
			seedsFigures(s, ok, len(left))
		})
	}
}
