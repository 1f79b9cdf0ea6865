package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Concurrency: two workspaces (two teams, two CI pipelines) apply 20 VMs each at the
// same moment into the same VMID range, which foreign VMs share. No VM may be adopted,
// changed or destroyed by the workspace that does not own it.

const concurrencyVMs = 20

// ownerOf returns the workspace index owning a VM name, or -1.
func ownerOf(prefixes []string, name string) int {
	for i, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return i
		}
	}
	return -1
}

// wrongWorkspace counts the state entries of each workspace whose VMID holds a VM that
// another workspace owns, or that also appears in another workspace's state.
func wrongWorkspace(sim *pvesim.Sim, prefixes []string, states []*tfrun.State) []string {
	byID := map[int]pvesim.VMState{}
	for _, v := range sim.State().VMs {
		byID[v.VMID] = v
	}
	var out []string
	seen := map[int]int{}
	for wi, st := range states {
		for _, r := range st.OfType("proxy_vm") {
			vmid := r.Int("vmid")
			if prev, ok := seen[vmid]; ok && prev != wi {
				out = append(out, fmt.Sprintf("VMID %d is in the state of workspaces %d and %d", vmid, prev, wi))
			}
			seen[vmid] = wi
			if v, ok := byID[vmid]; ok {
				if o := ownerOf(prefixes, v.Name); o != wi {
					out = append(out, fmt.Sprintf("workspace %d tracks VM %d named %q (owner %d)", wi, vmid, v.Name, o))
				}
			}
		}
	}
	return out
}

func TestE2E_ConcurrentWorkspaces(t *testing.T) {
	needTF(t)
	rounds := trials(1, 4)
	for round := 0; round < rounds; round++ {
		t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) {
			t.Parallel()
			runConcurrent(t)
		})
	}
}

func runConcurrent(t *testing.T) {
	// 20 + 20 VMs and 6 foreign guests in a range of 60.
	s := newScenario(t, "concurrency", scenarioOpts{})
	s.pc.VMIDMin, s.pc.VMIDMax = vmidMin, vmidMin+59
	prefixes := []string{s.prefix + "a-", s.prefix + "b-"}
	ws := []*scenario{s, s.sibling(t)}
	for i, w := range ws {
		w.vms = nil
		for j := 0; j < concurrencyVMs; j++ {
			w.vms = append(w.vms, tfrun.VM{Name: fmt.Sprintf("%s%02d", prefixes[i], j), Image: "debian-13", MachineType: "small",
				WaitForIP: tfrun.Bool(j%2 == 0)})
		}
		w.write()
	}
	var wg sync.WaitGroup
	res := make([]*tfrun.Result, 2)
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = w.ws.Apply(w.ctx, "-parallelism=10")
		}()
	}
	wg.Wait()
	for i, r := range res {
		if !r.OK() {
			t.Errorf("workspace %d: the concurrent apply failed:\n%s", i, r)
		}
	}
	states := []*tfrun.State{ws[0].state(), ws[1].state()}
	var wrong []string
	wrong = append(wrong, wrongWorkspace(s.sim, prefixes, states)...)
	live := s.chk.Live(states...).Strict()
	for i, st := range states {
		if got := len(st.OfType("proxy_vm")); got != concurrencyVMs {
			t.Errorf("workspace %d holds %d VMs, want %d", i, got, concurrencyVMs)
		}
	}

	// Destroy A while B stays: every VM of B must survive untouched.
	before := ws[1].vmSnapshot(prefixes[1])
	if r := ws[0].destroy(); !r.OK() {
		t.Errorf("workspace 0: destroy failed:\n%s", r)
	}
	after := ws[1].vmSnapshot(prefixes[1])
	for id, v := range before {
		a, ok := after[id]
		switch {
		case !ok:
			wrong = append(wrong, fmt.Sprintf("destroying workspace 0 removed VM %d (%s) of workspace 1", id, v.Name))
		case a.Power != v.Power || a.Config["description"] != v.Config["description"]:
			wrong = append(wrong, fmt.Sprintf("destroying workspace 0 changed VM %d (%s) of workspace 1: %s -> %s", id, v.Name, v.Power, a.Power))
		}
	}
	if r := ws[1].destroy(); !r.OK() {
		t.Errorf("workspace 1: destroy failed:\n%s", r)
	}
	gone := s.chk.Gone()
	foreign := 0
	for _, v := range append(live.Violations, gone.Violations...) {
		if strings.Contains(v, "foreign guest") {
			foreign++
		}
		t.Errorf("invariant: %s", v)
	}
	orphans := append(append([]string(nil), live.Orphans...), gone.Orphans...)
	for _, o := range orphans {
		t.Errorf("orphan: %s", o)
	}
	for _, w := range wrong {
		t.Errorf("wrong workspace: %s", w)
	}
	ok := len(wrong) == 0 && len(orphans) == 0 && len(live.Violations) == 0 && len(gone.Violations) == 0 && res[0].OK() && res[1].OK()
	s.figure(func(r *figureRow) {
		r.Run++
		if ok {
			r.Converged++
		}
		r.Orphans += len(orphans)
		r.WrongWS += len(wrong) + foreign
	})
}

// sibling is a second workspace on the same simulator and checker.
func (s *scenario) sibling(t *testing.T) *scenario {
	c := *s
	c.ws = provider.NewWorkspace(t)
	c.ws.Timeout = commandTimeout
	c.vms = nil
	return &c
}

// vmSnapshot returns the scenario's VMs whose names start with prefix, by VMID.
func (s *scenario) vmSnapshot(prefix string) map[int]pvesim.VMState {
	out := map[int]pvesim.VMState{}
	for _, v := range s.sim.State().VMs {
		if strings.HasPrefix(v.Name, prefix) {
			out[v.VMID] = v
		}
	}
	return out
}

// TestE2E_SameNameOtherWorkspace: two workspaces (two teams' configurations) on one
// cluster declare a proxy_vm with the same name, with the default uid_namespace and with
// different ones. Each VM has a random uid of its own and a resource owns only the VM it
// created, so the second workspace gets a VM of its own (never adopting, changing or
// destroying the first one's), with a seed ISO of its own; destroying the second
// workspace leaves the first one's VM running and unchanged, and its plan empty.
func TestE2E_SameNameOtherWorkspace(t *testing.T) {
	needTF(t)
	for _, tc := range []struct{ name, nsA, nsB string }{
		{"same-namespace", "", ""},
		{"different-namespaces", `uid_namespace = "team-a"`, `uid_namespace = "team-b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "concurrency", scenarioOpts{})
			s.pc.Extra = tc.nsA
			s.vms = []tfrun.VM{s.vm("shared")}
			s.mustApply()
			owner, before := s.sharedVM()
			other := s.sibling(t)
			other.pc.Extra = tc.nsB
			other.vms = []tfrun.VM{s.vm("shared")}
			wrong := 0
			if r := other.apply(); !r.OK() {
				t.Fatalf("workspace 1's apply failed:\n%s", r)
			}
			theirs := other.state().OfType("proxy_vm")
			switch {
			case len(theirs) != 1:
				t.Fatalf("workspace 1 holds %d proxy_vm, want 1", len(theirs))
			case theirs[0].Int("vmid") == owner.Int("vmid") || theirs[0].String("uid") == owner.String("uid"):
				wrong++
				t.Errorf("workspace 1 adopted workspace 0's VM %d (uid %s)", owner.Int("vmid"), owner.String("uid"))
			}
			if _, after := s.sharedVM(); !sameVM(before, after) {
				wrong++
				t.Errorf("workspace 1's apply changed workspace 0's VM:\nbefore %+v\nafter  %+v", before, after)
			}
			if live := s.chk.Live(s.state(), other.state()).Strict(); !live.OK() {
				t.Errorf("both workspaces applied: %v", live.Err())
			}
			seedA := tfrun.UIDSeedVolID(s.sim.ISOStorage, s.prefix+"shared", owner.String("uid"))
			seedB := tfrun.UIDSeedVolID(s.sim.ISOStorage, s.prefix+"shared", theirs[0].String("uid"))
			if seeds := s.seedsOf(s.prefix + "shared"); len(seeds) != 2 || !slices.Contains(seeds, seedA) || !slices.Contains(seeds, seedB) {
				t.Errorf("seed ISOs %v, want %s and %s", seeds, seedA, seedB)
			}
			if r := other.destroy(); !r.OK() {
				t.Errorf("workspace 1's destroy failed:\n%s", r)
			}
			if _, after := s.sharedVM(); !sameVM(before, after) || after.Power != "running" {
				wrong++
				t.Errorf("workspace 1's destroy touched workspace 0's VM:\nbefore %+v\nafter  %+v", before, after)
			}
			if _, left := s.sim.VM(theirs[0].Int("vmid")); left {
				t.Errorf("workspace 1's VM %d is left after its destroy", theirs[0].Int("vmid"))
			}
			if seeds := s.seedsOf(s.prefix + "shared"); len(seeds) != 1 || seeds[0] != seedA {
				t.Errorf("seed ISOs after workspace 1's destroy %v, want only workspace 0's %s", seeds, seedA)
			}
			orphans, ok := s.finish()
			s.figure(func(row *figureRow) {
				row.Run++
				if ok && wrong == 0 && orphans == 0 {
					row.Converged++
				}
				row.WrongWS += wrong
				row.Orphans += orphans
			})
		})
	}
}

// sharedVM returns the scenario's one proxy_vm in its state and the simulator's VM at its
// VMID (fatal when either is missing).
func (s *scenario) sharedVM() (tfrun.Resource, pvesim.VMState) {
	s.t.Helper()
	vms := s.state().OfType("proxy_vm")
	if len(vms) != 1 {
		s.t.Fatalf("workspace 0 holds %d proxy_vm, want 1", len(vms))
	}
	v, ok := s.sim.VM(vms[0].Int("vmid"))
	if !ok {
		s.t.Fatalf("VM %d of workspace 0 is not in the cluster", vms[0].Int("vmid"))
	}
	return vms[0], v
}

// sameVM reports whether a VM is as it was: power, lock, description and whole config.
func sameVM(a, b pvesim.VMState) bool {
	return a.VMID == b.VMID && a.Name == b.Name && a.Power == b.Power && a.Lock == b.Lock &&
		a.Description == b.Description && maps.Equal(a.Config, b.Config)
}
