package e2e

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestE2E_NodeFailsMidMigration: the target node goes down while a node change migrates a
// running proxy. The apply fails naming the migration and both nodes; the VM stays on its
// node with its seed. With the node back, the next apply migrates it: the same VMID, the
// seed ISO on the new node only, nothing orphaned; then the usual convergence (empty plan,
// destroy leaves nothing).
func TestE2E_NodeFailsMidMigration(t *testing.T) {
	needTF(t)
	// A migration lasts the clone's duration in the simulator: 0.5 s of wall time, long
	// enough to take the node down while it runs.
	s := newScenario(t, "migration/node-fails", scenarioOpts{Sim: pvesim.Options{
		Nodes: []string{"pve1", "pve2"}, Durations: pvesim.Durations{Clone: 500 * time.Second},
	}})
	v := s.vm("mig")
	v.Node = "pve1"
	v.CloudInit = "#cloud-config\n"
	s.vms = []tfrun.VM{v}
	s.mustApply()
	vmid := s.chk.VMIDs()[v.Name]
	if len(vmid) != 1 {
		t.Fatalf("VMs named %s: %v", v.Name, vmid)
	}

	// Take pve2 down as soon as the migration task runs.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			for _, tk := range s.sim.State().Tasks {
				if tk.Type == "qmigrate" && tk.Status == "running" {
					_ = s.sim.SetNodeDown("pve2", true)
					return
				}
			}
		}
	}()
	s.vms[0].Node = "pve2"
	r := s.apply()
	close(stop)
	wg.Wait()
	ok := true
	if r.OK() {
		ok = false
		t.Errorf("the apply succeeded although pve2 went down during the migration:\n%s", r)
	} else if m := s.checkDiag(r, "migrat"); m != "" || !strings.Contains(r.Output(), "pve1") || !strings.Contains(r.Output(), "pve2") {
		ok = false
		t.Errorf("the failure diagnostic (%s) must name the migration and both nodes:\n%s", m, r)
	}
	if vm, found := s.sim.VM(vmid[0]); !found || vm.Node != "pve1" || vm.Lock != "" || !strings.Contains(vm.Config["ide2"], "-seed.iso") {
		ok = false
		t.Errorf("after the failed migration: %+v, want the VM on pve1, unlocked, its seed attached", vm)
	}

	// The node is back: the next apply migrates.
	s.sim.ClearFaults()
	if r := s.apply(); !r.OK() {
		ok = false
		t.Errorf("the apply after the node came back failed:\n%s", r)
	}
	if ids := s.chk.VMIDs()[v.Name]; len(ids) != 1 || ids[0] != vmid[0] {
		ok = false
		t.Errorf("VMIDs named %s after the retry: %v, want the same VM %d", v.Name, ids, vmid[0])
	}
	vm, _ := s.sim.VM(vmid[0])
	if vm.Node != "pve2" || vm.Power != "running" {
		ok = false
		t.Errorf("after the retry: %+v, want running on pve2", vm)
	}
	seed, _, _ := strings.Cut(vm.Config["ide2"], ",")
	for _, n := range []string{"pve1", "pve2"} {
		if _, has := s.sim.ISO(n, seed); has != (n == "pve2") {
			ok = false
			t.Errorf("seed %q on %s: %v, want it on pve2 only", seed, n, has)
		}
	}
	if f := s.chk.Live(s.state()).Strict(); !f.OK() {
		ok = false
		t.Errorf("after the retry: %v", f.Err())
	}
	s.figure(func(row *figureRow) {
		if !ok {
			row.Notes["retry did not converge"]++
		}
	})
	s.converge()
}
