package tfrun

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Baseline is the cluster before a scenario: every guest (foreign VMs, templates,
// containers), every volume, every HA resource and rule. Whatever it holds must come out of
// the scenario unchanged (an HA resource's configuration, not the CRM's view of it).
type Baseline struct {
	VMs         map[int]pvesim.VMState
	Volumes     map[string]bool // node + "|" + volid
	HAResources map[string]pvesim.HAResourceState
	HARules     map[string]pvesim.HARuleState
}

// TakeBaseline snapshots the simulator.
func TakeBaseline(s *pvesim.Sim) Baseline {
	st := s.State()
	b := Baseline{VMs: map[int]pvesim.VMState{}, Volumes: map[string]bool{},
		HAResources: map[string]pvesim.HAResourceState{}, HARules: map[string]pvesim.HARuleState{}}
	for _, v := range st.VMs {
		b.VMs[v.VMID] = v
	}
	for _, v := range st.Volumes {
		b.Volumes[v.Node+"|"+v.VolID] = true
	}
	for _, r := range s.HAResources() {
		b.HAResources[r.SID] = r
	}
	for _, r := range s.HARules() {
		b.HARules[r.ID] = r
	}
	return b
}

// Checker holds a scenario's invariants against the simulator's state.
type Checker struct {
	Sim      *pvesim.Sim
	Baseline Baseline
	// Owns reports whether a VM name belongs to the scenario (its workspaces' VMs).
	Owns func(name string) bool
	// ISOStorage is the seed storage (default: the simulator's).
	ISOStorage string
	// Refused are VMIDs of the scenario's VMs that no state tracks on purpose: a VM a
	// create met and refused (the operator's, say), which the test made itself.
	Refused map[int]bool
}

// NewChecker snapshots the baseline now; names with prefix belong to the scenario.
func NewChecker(s *pvesim.Sim, prefix string) *Checker {
	return &Checker{Sim: s, Baseline: TakeBaseline(s), Owns: func(n string) bool {
		return strings.HasPrefix(n,
			prefix)
	}, ISOStorage: s.ISOStorage}
}

// Findings are what a check found. Violations break an invariant; Orphans are leftovers
// of the scenario that no state tracks (a VM, or a seed ISO whose VM is gone).
type Findings struct {
	Violations []string
	Orphans    []string
	// Stale are state entries whose VM is gone. Right after a failed or interrupted
	// command that is expected (the next refresh drops them); after a successful apply it
	// is a violation (see Strict).
	Stale []string
}

// Strict returns f with the stale entries counted as violations.
func (f Findings) Strict() Findings {
	f.Violations = append(append([]string(nil), f.Violations...), f.Stale...)
	f.Stale = nil
	return f
}

// OK reports no violation and no orphan.
func (f Findings) OK() bool { return len(f.Violations) == 0 && len(f.Orphans) == 0 }

// Err is nil when OK, else an error listing everything.
func (f Findings) Err() error {
	if f.OK() {
		return nil
	}
	var b strings.Builder
	for _, v := range f.Violations {
		b.WriteString("violation: " + v + "\n")
	}
	for _, o := range f.Orphans {
		b.WriteString("orphan: " + o + "\n")
	}
	return fmt.Errorf("%s", strings.TrimSuffix(b.String(), "\n"))
}

func (f *Findings) violate(format string, args ...any) {
	f.Violations = append(f.Violations, fmt.Sprintf(format, args...))
}

// Add merges g into f.
func (f *Findings) Add(g Findings) {
	f.Violations = append(f.Violations, g.Violations...)
	f.Orphans = append(f.Orphans, g.Orphans...)
	f.Stale = append(f.Stale, g.Stale...)
}

// Live checks the invariants that hold at any quiet moment (no terraform running):
//   - no VM is held by two state entries (of one workspace or of two);
//   - every baseline guest is still there, on the same node, with the same config, power
//     and lock (a foreign VM is never touched);
//   - every proxy_vm in the given states (one per workspace; tainted or deposed instances
//     excepted, as the next apply refreshes them) exists with the same VMID and name,
//     carries a mark, and no two workspaces hold the same VMID.
//
// Orphans: the scenario's VMs that no state holds, and its seed ISOs whose VM is gone.
// Stale: state entries (not tainted) whose VM is not in the cluster.
func (c *Checker) Live(states ...*State) Findings {
	var f Findings
	st := c.Sim.State()
	byID := map[int]pvesim.VMState{}
	for _, v := range st.VMs {
		byID[v.VMID] = v
	}
	byName := c.scenarioVMs(st)
	f.Add(c.foreign(byID))

	tracked := map[int]string{} // vmid -> address (first workspace holding it)
	for wi, s := range states {
		if s == nil {
			continue
		}
		for _, r := range s.OfType("proxy_vm") {
			checkEntry(&f, tracked, wi, r, byID)
		}
	}
	for name, ids := range byName {
		for _, id := range ids {
			if _, ok := tracked[id]; !ok && !c.Refused[id] {
				f.Orphans = append(f.Orphans, fmt.Sprintf("VM %d (%s) is in no state", id, name))
			}
		}
	}
	f.Orphans = append(f.Orphans, c.orphanSeeds(st, byName)...)
	return f
}

// scenarioVMs are the VMIDs of the scenario's VMs (qemu, not templates) by name.
func (c *Checker) scenarioVMs(st pvesim.State) map[string][]int {
	byName := map[string][]int{}
	for _, v := range st.VMs {
		if v.Type == "qemu" && !v.Template && v.Name != "" && c.Owns(v.Name) {
			byName[v.Name] = append(byName[v.Name], v.VMID)
		}
	}
	return byName
}

// checkEntry checks one proxy_vm entry r of workspace wi against the cluster (byID) and
// records the VMID it holds in tracked (vmid -> where).
func checkEntry(f *Findings, tracked map[int]string, wi int, r Resource, byID map[int]pvesim.VMState) {
	vmid, name := r.Int("vmid"), r.String("name")
	if vmid == 0 {
		return
	}
	where := fmt.Sprintf("workspace %d %s (vmid %d)", wi, r.Address, vmid)
	v, ok := byID[vmid]
	tainted := r.Tainted || r.DeposedKey != ""
	uid := r.String("uid")
	// A state without a uid owns no VM (decision: identity-and-adoption).
	otherUID := ok && (uid == "" || !strings.Contains(v.Description, "proxy-operator-uid="+uid))
	if tainted && (!ok || v.Name != name || otherUID) {
		// A create saves the VMID it chose before the clone request, so an interrupted
		// or failed create may leave a tainted entry naming a VMID that it never got or
		// that another VM holds under another name, or one another apply took over (its
		// mark carries another uid). Harmless: refresh drops the entry and destroy
		// leaves that VM alone. It holds nothing.
		return
	}
	if prev, held := tracked[vmid]; held {
		f.violate("%s and %s both hold VMID %d", prev, where, vmid)
	}
	tracked[vmid] = where
	if tainted {
		return
	}
	switch {
	case !ok:
		f.Stale = append(f.Stale, fmt.Sprintf("%s: no VM %d in the cluster", where, vmid))
	case v.Name != name:
		f.violate("%s: VM %d is named %q, the state says %q", where, vmid, v.Name, name)
	case !strings.Contains(v.Description, "proxy-operator-managed=true"):
		f.violate("%s: VM %d carries no mark", where, vmid)
	case otherUID:
		f.violate("%s: VM %d carries another uid than the state's %s", where, vmid, uid)
	}
}

// Gone checks that nothing of the scenario is left (after a destroy): no VM with one of
// its names, no seed ISO of one of them, no HA resource or rule the baseline did not hold;
// and the baseline is intact. Leftovers are orphans.
func (c *Checker) Gone() Findings {
	var f Findings
	st := c.Sim.State()
	byID := map[int]pvesim.VMState{}
	for _, v := range st.VMs {
		byID[v.VMID] = v
		if _, base := c.Baseline.VMs[v.VMID]; base {
			continue
		}
		if v.Name == "" || c.Owns(v.Name) {
			f.Orphans = append(f.Orphans, fmt.Sprintf("VM %d (%q, %s, lock %q) left after destroy", v.VMID, v.Name, v.Power, v.Lock))
		}
	}
	f.Add(c.foreign(byID))
	for _, vol := range st.Volumes {
		if c.Baseline.Volumes[vol.Node+"|"+vol.VolID] {
			continue
		}
		if n, _ := seedName(vol.VolID); n != "" && c.Owns(n) {
			f.Orphans = append(f.Orphans, fmt.Sprintf("seed %s on %s left after destroy", vol.VolID, vol.Node))
		}
	}
	for _, r := range c.Sim.HAResources() {
		if _, base := c.Baseline.HAResources[r.SID]; !base {
			f.Orphans = append(f.Orphans, fmt.Sprintf("HA resource %s left after destroy", r.SID))
		}
	}
	for _, r := range c.Sim.HARules() {
		if _, base := c.Baseline.HARules[r.ID]; !base {
			f.Orphans = append(f.Orphans, fmt.Sprintf("HA rule %s (%s on %v) left after destroy", r.ID, r.Type, r.Resources))
		}
	}
	return f
}

// SeedsLeft are the scenario's seed ISOs (any storage, any node) that no VM uses, as
// orphanSeeds tells them: what the reliability suite counts when a scenario ends.
func (c *Checker) SeedsLeft() []string {
	st := c.Sim.State()
	return c.orphanSeeds(st, c.scenarioVMs(st))
}

// orphanSeeds are the scenario's seed ISOs no VM references: a <name>-<uid>-seed.iso when
// no VM's ide2 names it and no VM of that name carries the uid (a create between its
// clone and its config step); a <name>-seed.iso when no VM has the name.
func (c *Checker) orphanSeeds(st pvesim.State, byName map[string][]int) []string {
	var out []string
	for _, vol := range st.Volumes {
		if c.Baseline.Volumes[vol.Node+"|"+vol.VolID] {
			continue
		}
		n, uid := seedName(vol.VolID)
		if n == "" || !c.Owns(n) {
			continue
		}
		used := false
		if uid == "" {
			used = len(byName[n]) > 0
		}
		for _, v := range st.VMs {
			if used {
				break
			}
			ide2, _, _ := strings.Cut(v.Config["ide2"], ",")
			used = ide2 == vol.VolID || (v.Name == n && uid != "" && strings.Contains(v.Description, "proxy-operator-uid="+uid))
		}
		if !used {
			out = append(out, fmt.Sprintf("seed %s on %s: no VM uses it", vol.VolID, vol.Node))
		}
	}
	return out
}

func (c *Checker) foreign(now map[int]pvesim.VMState) Findings {
	var f Findings
	for _, id := range sortedInts(c.Baseline.VMs) {
		was := c.Baseline.VMs[id]
		v, ok := now[id]
		if !ok {
			f.violate("foreign guest %d (%s) was destroyed", id, was.Name)
			continue
		}
		if d := diffVM(was, v); d != "" {
			f.violate("foreign guest %d (%s) was changed: %s", id, was.Name, d)
		}
	}
	f.Add(c.foreignHA())
	return f
}

// foreignHA checks the baseline's HA resources (their configuration: the CRM's state and
// node follow the cluster) and rules: none deleted or changed.
func (c *Checker) foreignHA() Findings {
	var f Findings
	if len(c.Baseline.HAResources)+len(c.Baseline.HARules) == 0 {
		return f
	}
	res := map[string]pvesim.HAResourceState{}
	for _, r := range c.Sim.HAResources() {
		res[r.SID] = r
	}
	for _, sid := range slices.Sorted(maps.Keys(c.Baseline.HAResources)) {
		was := c.Baseline.HAResources[sid]
		now, ok := res[sid]
		switch {
		case !ok:
			f.violate("foreign HA resource %s was deleted", sid)
		case haConfig(was) != haConfig(now):
			f.violate("foreign HA resource %s was changed: %s -> %s", sid, haConfig(was), haConfig(now))
		}
	}
	rules := map[string]pvesim.HARuleState{}
	for _, r := range c.Sim.HARules() {
		rules[r.ID] = r
	}
	for _, id := range slices.Sorted(maps.Keys(c.Baseline.HARules)) {
		was := c.Baseline.HARules[id]
		now, ok := rules[id]
		switch {
		case !ok:
			f.violate("foreign HA rule %s was deleted", id)
		case fmt.Sprintf("%+v", was) != fmt.Sprintf("%+v", now):
			f.violate("foreign HA rule %s was changed: %+v -> %+v", id, was, now)
		}
	}
	return f
}

// haConfig is an HA resource's configuration as ha/resources.cfg holds it.
func haConfig(r pvesim.HAResourceState) string {
	deref := func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	fb := "-"
	if r.Failback != nil {
		fb = fmt.Sprint(*r.Failback)
	}
	return fmt.Sprintf("state=%q max_restart=%s max_relocate=%s failback=%s comment=%q", r.State, deref(r.MaxRestart),
		deref(r.MaxRelocate), fb, r.Comment)
}

func diffVM(a, b pvesim.VMState) string {
	var d []string
	if a.Node != b.Node {
		d = append(d, fmt.Sprintf("node %s -> %s", a.Node, b.Node))
	}
	if a.Power != b.Power {
		d = append(d, fmt.Sprintf("power %s -> %s", a.Power, b.Power))
	}
	if a.Lock != b.Lock {
		d = append(d, fmt.Sprintf("lock %q -> %q", a.Lock, b.Lock))
	}
	if !maps.Equal(a.Config, b.Config) {
		for _, k := range unionKeys(a.Config, b.Config) {
			if a.Config[k] != b.Config[k] {
				d = append(d, fmt.Sprintf("config %s %q -> %q", k, a.Config[k], b.Config[k]))
			}
		}
	}
	return strings.Join(d, "; ")
}

func unionKeys(a, b map[string]string) []string {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return sortedKeys(m)
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// VMIDs of the scenario's VMs in the cluster now, by name.
func (c *Checker) VMIDs() map[string][]int {
	out := map[string][]int{}
	for _, v := range c.Sim.State().VMs {
		if v.Type == "qemu" && !v.Template && v.Name != "" && c.Owns(v.Name) {
			out[v.Name] = append(out[v.Name], v.VMID)
		}
	}
	return out
}
