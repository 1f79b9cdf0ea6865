package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/e2e/tfrun"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
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
	orphans := append(live.Orphans, gone.Orphans...)
	for _, o := range orphans {
		t.Errorf("orphan: %s", o)
	}
	for _, w := range wrong {
		t.Errorf("wrong workspace: %s", w)
	}
	ok := len(wrong) == 0 && len(orphans) == 0 && len(live.Violations) == 0 && len(gone.Violations) == 0 && res[0].OK() && res[1].OK()
	figures.update(s.cat, func(r *figureRow) {
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

// TestE2E_SameNameOtherWorkspace: a second workspace that declares a name the first one
// already runs must not take that VM over (DESIGN: a new proxy_vm gets its own UID; our
// name without our UID is refused with the VMID and the import command). A workspace
// that adopted it would destroy the other team's VM on its next destroy.
func TestE2E_SameNameOtherWorkspace(t *testing.T) {
	s := newScenario(t, "concurrency", scenarioOpts{})
	s.vms = []tfrun.VM{s.vm("shared")}
	s.mustApply()
	other := s.sibling(t)
	other.vms = []tfrun.VM{s.vm("shared")}
	r := other.apply()
	states := []*tfrun.State{s.state(), other.state()}
	wrong := 0
	if r.OK() && len(states[1].OfType("proxy_vm")) == 1 {
		wrong++
		t.Errorf("workspace 1 adopted workspace 0's VM %q (VMID %d): both states now track it, and either destroy removes the other team's VM",
			s.prefix+"shared", states[1].OfType("proxy_vm")[0].Int("vmid"))
	} else if !strings.Contains(r.Output(), "terraform import") {
		t.Errorf("the refusal does not name the import command:\n%s", r)
	}
	// Clean up in the owner's workspace only.
	_ = other.ws.Run(other.ctx, "state", "rm", "-no-color", tfrun.VM{Name: s.prefix + "shared"}.Addr())
	if r := s.destroy(); !r.OK() {
		t.Errorf("destroy failed:\n%s", r)
	}
	gone := s.chk.Gone()
	for _, v := range append(gone.Violations, gone.Orphans...) {
		t.Errorf("after destroy: %s", v)
	}
	figures.update(s.cat, func(row *figureRow) {
		row.Run++
		if wrong == 0 && gone.OK() {
			row.Converged++
		}
		row.WrongWS += wrong
		row.Orphans += len(gone.Orphans)
	})
}
