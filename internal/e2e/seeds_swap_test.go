package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// writesTo are the requests other than GET the simulator logged for VM vmid.
func (s *scenario) writesTo(vmid int) []string {
	var out []string
	for _, req := range s.sim.RequestLog() {
		if req.VMID == vmid && req.Method != http.MethodGet {
			out = append(out, req.Method+" "+req.Path)
		}
	}
	return out
}

// TestE2E_Seeds_EjectedSeedBuysNoRestart (decision: seed-swap): an actor with
// VM.Config.CDROM and VM.Config.Options, but not VM.PowerMgmt, ejects a running proxy VM's
// seed (ide2 = none) and, in the second case, forges the mark's seed-swap line. The seed on
// storage is the generation the state holds, so it is no leftover of a cut-off swap: the
// plan is empty, with a warning that the seed is not attached, and the apply sends nothing
// to the VM (no shutdown, no start on a new generation the actor could not make). The
// destroy deletes the ejected seed.
func TestE2E_Seeds_EjectedSeedBuysNoRestart(t *testing.T) {
	for _, forge := range []bool{false, true} {
		name := "ejected"
		if forge {
			name = "ejected and swap line forged"
		}
		t.Run(name, func(t *testing.T) {
			s := newScenario(t, "seeds/ejected", scenarioOpts{NoForeign: true})
			vm := s.vm("cf")
			vm.CloudInit = "#cloud-config\nruncmd: [echo one]\n"
			vm.Extra = "  cloud_init_change = \"restart\"\n"
			s.vms = []tfrun.VM{vm}
			s.mustApply()
			vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
			v, _ := s.sim.VM(vmid)
			patch := map[string]string{"ide2": "none,media=cdrom"}
			if forge {
				patch["description"] = v.Description + "\n" + proxmox.MarkKeySeedSwap + "=7"
			}
			if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: patch}); err != nil {
				t.Fatal(err)
			}
			s.sim.EnableRequestLog()
			p := s.ws.Run(s.ctx, "plan", "-detailed-exitcode", "-input=false", "-no-color")
			out := strings.Join(strings.Fields(p.Output()), " ")
			if p.ExitCode != 0 {
				t.Errorf("the plan is not empty (exit %d):\n%s", p.ExitCode, p.Output())
			}
			if !strings.Contains(out, "Proxy VM seed ISO not attached") || !strings.Contains(out, "seed generation 1") {
				t.Errorf("the plan does not warn that the seed is not attached:\n%s", p.Output())
			}
			if strings.Contains(out, "was interrupted") {
				t.Errorf("the plan calls the ejected seed a cut-off swap:\n%s", p.Output())
			}
			if r := s.apply(); !r.OK() {
				t.Fatalf("apply failed:\n%s", r)
			}
			if w := s.writesTo(vmid); len(w) != 0 {
				t.Errorf("the apply wrote to the VM: %v", w)
			}
			if after, _ := s.sim.VM(vmid); after.Power != "running" {
				t.Errorf("the VM is %s, want running", after.Power)
			}
			if g := s.state().OfType("proxy_vm")[0].Values["seed_generation"]; g != float64(1) {
				t.Errorf("seed_generation is %v after the apply, want 1 kept", g)
			}
			if r := s.destroy(); !r.OK() {
				t.Fatalf("destroy failed:\n%s", r)
			}
		})
	}
}

// TestE2E_Seeds_SwapKeepsTheSeedItsSnapshotNames (decision: seed-in-use): a proxy VM's own
// snapshot s1, in a config without parent (what PVE's snapshot_delete leaves), names its
// first seed; a cloud_init change with cloud_init_change = "restart" swaps the seed. The
// first seed stays (a rollback to s1 boots from it), with a warning naming the VM and the
// snapshot; the destroy deletes both generations.
func TestE2E_Seeds_SwapKeepsTheSeedItsSnapshotNames(t *testing.T) {
	s := newScenario(t, "seeds/referenced", scenarioOpts{NoForeign: true})
	vm := s.vm("sw")
	vm.CloudInit = "#cloud-config\nruncmd: [echo one]\n"
	vm.Extra = "  cloud_init_change = \"restart\"\n"
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
	v, _ := s.sim.VM(vmid)
	gen1, _, _ := strings.Cut(v.Config["ide2"], ",")
	snap := map[string]string{"snaptime": "1700000000"}
	for k, val := range v.Config {
		if k != "description" && k != "digest" && k != "parent" {
			snap[k] = val
		}
	}
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Snapshots: map[string]map[string]string{"s1": snap}}); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.sim.VM(vmid); after.Config["parent"] != "" {
		t.Fatalf("the VM's config names parent %q, want none", after.Config["parent"])
	}
	s.vms[0].CloudInit = "#cloud-config\nruncmd: [echo two]\n"
	r := s.apply()
	if !r.OK() {
		t.Fatalf("the swap failed:\n%s", r)
	}
	out := strings.Join(strings.Fields(r.Output()), " ")
	if want := fmt.Sprintf("attached to VM %d (%s) as ide2 in its snapshot s1", vmid, vm.Name); !strings.Contains(out, want) {
		t.Errorf("the apply does not warn %q:\n%s", want, r.Output())
	}
	seeds, ide2 := s.swapSeeds(vm.Name, vmid)
	if ide2 == gen1 || !slices.ContainsFunc(seeds, func(x string) bool { return strings.HasSuffix(x, "/"+gen1) }) {
		t.Errorf("seeds %v, ide2 %s: want the first seed %s kept beside the new one", seeds, ide2, gen1)
	}
	if d := s.destroy(); !d.OK() {
		t.Fatalf("destroy failed:\n%s", d)
	}
	if seeds, _ := s.swapSeeds(vm.Name, vmid); len(seeds) != 0 {
		t.Errorf("seeds left after the destroy: %v", seeds)
	}
}

// TestE2E_Seeds_MigrateRefusedForASeedItsSnapshotNames: a proxy VM whose own snapshot s1 (a
// config without parent) names its seed ISO on per-node storage cannot move to another node:
// Proxmox refuses a local CD-ROM image any snapshot names (the simulator follows
// scan_local_volumes), and no eject reaches a snapshot. The apply of a node change fails
// before anything is written, naming the snapshot; the VM stays where it was with its seed,
// and the destroy leaves nothing.
func TestE2E_Seeds_MigrateRefusedForASeedItsSnapshotNames(t *testing.T) {
	s := newScenario(t, "seeds/referenced", scenarioOpts{NoForeign: true, Sim: pvesim.Options{Nodes: []string{"pve1", "pve2"}}})
	vm := s.vm("mg")
	vm.Node = s.sim.Nodes[0]
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	vmid := s.state().OfType("proxy_vm")[0].Int("vmid")
	v, _ := s.sim.VM(vmid)
	seed, _, _ := strings.Cut(v.Config["ide2"], ",")
	snap := map[string]string{"ide2": v.Config["ide2"], "scsi0": v.Config["scsi0"], "snaptime": "1700000000"}
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Snapshots: map[string]map[string]string{"s1": snap}}); err != nil {
		t.Fatal(err)
	}
	s.vms[0].Node = s.sim.Nodes[1]
	s.sim.EnableRequestLog()
	r := s.apply()
	out := strings.Join(strings.Fields(r.Output()), " ")
	if r.OK() || !strings.Contains(out, "ide2 in its snapshot s1 names "+seed) || !strings.Contains(out, "qm delsnapshot") {
		t.Errorf("the node change did not fail naming the snapshot (ok %v):\n%s", r.OK(), r.Output())
	}
	if w := s.writesTo(vmid); len(w) != 0 {
		t.Errorf("writes to the VM before the refusal: %v", w)
	}
	if after, _ := s.sim.VM(vmid); after.Node != s.sim.Nodes[0] || after.Config["ide2"] != v.Config["ide2"] {
		t.Errorf("after the refusal: node %s ide2 %q, want %s and %q", after.Node, after.Config["ide2"], s.sim.Nodes[0], v.Config["ide2"])
	}
	s.vms[0].Node = s.sim.Nodes[0]
	if d := s.destroy(); !d.OK() {
		t.Fatalf("destroy failed:\n%s", d)
	}
}
