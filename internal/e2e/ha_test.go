package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Node loss with HA: a pair of proxies with ha set and a negative resource-affinity
// proxy_ha_rule on a three-node cluster, beside a foreign HA pair and a foreign rule inside
// the VMID range; the provider never fights HA's placement (decision: ha-placement). The
// simulator's HA durations (fencing delay, lock timeout) are minutes of simulated time, a
// fraction of a second at its speed.

// The foreign HA guests: running on pve3, HA resources, kept there by a rule of their own.
const (
	haForeignA    = vmidMin + 35
	haForeignB    = vmidMin + 36
	haForeignRule = "foreign-keep"
)

// haWait bounds a wait for the HA manager: a recovery takes the lock timeout (120 s
// simulated, 0.12 s of wall time) and a few rounds.
const haWait = 30 * time.Second

// newHAScenario is a scenario on pve1..pve3 with the foreign HA guests and their rule in the
// baseline (the checker reports them changed or deleted), and the request log on (every
// write naming them is counted). pve3 comes first, so the foreign guests and templates are
// there: a node that goes down and comes back has its guests stopped, which would read as
// a change of the foreign guests that no request made.
func newHAScenario(t *testing.T, cat string) *scenario {
	t.Helper()
	s := newScenario(t, cat, scenarioOpts{Sim: pvesim.Options{Nodes: []string{"pve3", "pve1", "pve2"}}})
	for _, id := range []int{haForeignA, haForeignB} {
		if err := s.sim.AddVM(pvesim.VMSpec{VMID: id, Name: "ha-app-" + strconv.Itoa(id), Node: "pve3", Power: "running"}); err != nil {
			t.Fatal(err)
		}
		if err := s.sim.AddHAResource(id, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.sim.AddHARule(pvesim.HARuleState{ID: haForeignRule, Type: "node-affinity", Nodes: map[string]int{"pve3": 1},
		Resources: []string{haSID(haForeignA), haSID(haForeignB)}, Comment: "made by hand"}); err != nil {
		t.Fatal(err)
	}
	s.chk.Baseline = tfrun.TakeBaseline(s.sim)
	s.sim.EnableRequestLog()
	return s
}

func haSID(vmid int) string { return "vm:" + strconv.Itoa(vmid) }

// haPair configures the pair, a on pve1 and b on pve2, with ha set and their negative rule;
// extra is more HCL (another rule) after it.
func (s *scenario) haPair(extra string) (a, b tfrun.VM) {
	a, b = s.vm("ha-a"), s.vm("ha-b")
	a.Node, b.Node = "pve1", "pve2"
	for _, v := range []*tfrun.VM{&a, &b} {
		v.CloudInit = "#cloud-config\n"
		v.Extra = "  ha = {}\n"
		// A destroy that waits for a dead node gives up within a bound of the scenario.
		v.Timeouts = map[string]string{"delete": "30s"}
	}
	s.vms = []tfrun.VM{a, b}
	s.tail = fmt.Sprintf(`
resource "proxy_ha_rule" "apart" {
  name     = %q
  type     = "resource-affinity"
  affinity = "negative"
  vms      = [%s.vmid, %s.vmid]
}
`, s.prefix+"apart", a.Addr(), b.Addr()) + extra
	return a, b
}

// onlyVMID is the VMID of the scenario's one VM named name.
func (s *scenario) onlyVMID(name string) int {
	s.t.Helper()
	ids := s.chk.VMIDs()[name]
	if len(ids) != 1 {
		s.t.Fatalf("VMs named %s: %v", name, ids)
	}
	return ids[0]
}

// copySeed puts a copy of the VM's seed ISO on the nodes, as a cluster whose HA recovery
// nodes can read the seed has it (the simulator has no shared ISO storage; the recovery
// moves the config alone). It returns the seed's volume id.
func (s *scenario) copySeed(vmid int, nodes ...string) string {
	s.t.Helper()
	vm, _ := s.sim.VM(vmid)
	volid, _, _ := strings.Cut(vm.Config["ide2"], ",")
	storage, file, ok := strings.Cut(volid, ":iso/")
	data, has := s.sim.ISO(vm.Node, volid)
	if !ok || !has {
		s.t.Fatalf("VM %d: no seed ISO %q on %s", vmid, volid, vm.Node)
	}
	for _, n := range nodes {
		if err := s.sim.AddISO(n, storage, file, data); err != nil {
			s.t.Fatal(err)
		}
	}
	return volid
}

// dropSeedCopy deletes a copy copySeed made that the provider has no reason to delete (on
// a node the VM never ran on), through the API as an admin would.
func (s *scenario) dropSeedCopy(node, volid string) {
	s.t.Helper()
	c, err := pveapi.New(pveapi.Options{Endpoint: s.sim.Endpoint, Token: s.sim.APIToken, CAPEM: s.sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		s.t.Fatal(err)
	}
	storage, _, _ := strings.Cut(volid, ":")
	if _, err := c.DeleteVolume(s.ctx, node, storage, volid); err != nil {
		s.t.Fatalf("delete the test's copy %s on %s: %v", volid, node, err)
	}
	if !tfrun.WaitUntil(s.ctx, haWait, func() bool { _, has := s.sim.ISO(node, volid); return !has }) {
		s.t.Fatalf("the test's copy %s on %s is still there", volid, node)
	}
}

// waitHA waits until cond holds for VM vmid's HA resource and VM, and fails the test
// otherwise; never reports whether the VM was ever seen on one of the nodes meanwhile.
func (s *scenario) waitHA(vmid int, what string, never []string, cond func(pvesim.HAResourceState, pvesim.VMState) bool) {
	s.t.Helper()
	var seen []string
	ok := tfrun.WaitUntil(s.ctx, haWait, func() bool {
		h, _ := s.sim.HAResourceOf(vmid)
		vm, _ := s.sim.VM(vmid)
		if slices.Contains(never, vm.Node) && vm.Power == "running" && !slices.Contains(seen, vm.Node) {
			seen = append(seen, vm.Node)
		}
		return cond(h, vm)
	})
	h, _ := s.sim.HAResourceOf(vmid)
	vm, _ := s.sim.VM(vmid)
	if len(seen) > 0 {
		s.t.Errorf("VM %d ran on %v, which its rules forbid", vmid, seen)
	}
	if !ok {
		s.t.Fatalf("VM %d: %s did not happen: HA %+v, VM on %s %s; HA log %v", vmid, what, h, vm.Node, vm.Power, s.sim.HALog())
	}
}

// planNoReplacement runs a plan and fails the test on a replacement, a create or a destroy
// of any resource, or a failed plan; it notes whether the plan was empty or in place. With
// downNode set, a plan that cannot read a VM on that dead node may fail instead, when its
// diagnostic names the VM, the node and what to do; the plan without refresh must then be
// empty or in place.
func (s *scenario) planNoReplacement(when, downNode string, extra ...string) {
	s.t.Helper()
	r := s.ws.Plan(s.ctx, extra...)
	out := r.Stdout + r.Stderr
	switch {
	case r.ExitCode == 0:
		s.figure(func(row *figureRow) { row.Notes["plan "+when+": empty"]++ })
	case r.ExitCode == 2 && !containsAny(out, "must be replaced", "will be created", "will be destroyed", "forces replacement"):
		s.figure(func(row *figureRow) { row.Notes["plan "+when+": in place"]++ })
		s.t.Logf("the plan %s (in place):\n%s", when, tail(tfrun.TrimOverridesWarning(r.Stdout), 30))
	case r.ExitCode == 1 && downNode != "" && len(extra) == 0 && strings.Contains(out, "Node "+downNode+" does not answer"):
		s.figure(func(row *figureRow) { row.Notes["plan "+when+": refused, node down"]++ })
		if m := s.checkDiag(r, downNode); m != "" {
			s.t.Errorf("the plan %s failed without saying why (%s):\n%s", when, m, out)
		}
		s.planNoReplacement(when+" without refresh", "", "-refresh=false")
	default:
		s.figure(func(row *figureRow) { row.Notes["plan "+when+": replace or failed"]++ })
		s.t.Errorf("the plan %s is neither empty nor in place only (exit %d):\n%s", when, r.ExitCode, out)
	}
}

// countForeignHAWrites counts the requests other than GET that name the foreign HA guests
// (their VMIDs or SIDs) or their rule, into the figures' wrong-ws column, and fails the
// test on any.
func (s *scenario) countForeignHAWrites() {
	s.t.Helper()
	var writes []string
	for _, r := range s.sim.RequestLog() {
		if r.Method == http.MethodGet {
			continue
		}
		if r.VMID == haForeignA || r.VMID == haForeignB || containsAny(r.Path, haSID(haForeignA), haSID(haForeignB), "/cluster/ha/rules/"+haForeignRule) {
			writes = append(writes, r.Method+" "+r.Path)
		}
	}
	s.figure(func(row *figureRow) {
		row.WrongWS += len(writes)
		row.Notes["foreign HA writes"] += len(writes)
	})
	for _, w := range writes {
		s.t.Errorf("a write named a foreign HA resource or rule: %s", w)
	}
}

// checkPairHA checks that both VMs are HA resources on their nodes and the rule keeps them
// apart.
func (s *scenario) checkPairHA(ida, idb int) {
	s.t.Helper()
	for id, node := range map[int]string{ida: "pve1", idb: "pve2"} {
		if h, ok := s.sim.HAResourceOf(id); !ok || h.Node != node {
			s.t.Fatalf("VM %d: HA resource %+v (%v), want one on %s", id, h, ok, node)
		}
	}
	want := []string{haSID(min(ida, idb)), haSID(max(ida, idb))}
	i := slices.IndexFunc(s.sim.HARules(), func(r pvesim.HARuleState) bool { return r.ID == s.prefix+"apart" })
	if i < 0 {
		s.t.Fatalf("no rule %s: %+v", s.prefix+"apart", s.sim.HARules())
	}
	if r := s.sim.HARules()[i]; r.Affinity != "negative" || !slices.Equal(r.Resources, want) {
		s.t.Fatalf("rule %+v, want negative on %v", r, want)
	}
}

// nodeBack brings a node back as an admin would, with the HA manager told.
func (s *scenario) nodeBack(node string) {
	s.t.Helper()
	if err := s.sim.SetNodeDown(node, false); err != nil {
		s.t.Fatal(err)
	}
}

// TestE2E_HA_NodeLossRecoversApart: pve1, holding one VM of the pair, goes down. HA fences
// it and starts the VM on pve3, never on pve2 beside its partner (which holds a copy of the
// seed and fewer HA guests than pve3, so only the rule keeps it off). The next plan is empty
// or in place; its apply leaves the VM where HA put it; with pve1 back the suite's
// convergence follows: destroy leaves no VM, seed (the copy on dead pve1 included), HA
// resource or rule, and nothing foreign is written.
func TestE2E_HA_NodeLossRecoversApart(t *testing.T) {
	start := time.Now()
	s := newHAScenario(t, "ha/node-loss")
	a, b := s.haPair("")
	s.mustApply()
	ida, idb := s.onlyVMID(a.Name), s.onlyVMID(b.Name)
	s.checkPairHA(ida, idb)

	seed := s.copySeed(ida, "pve2", "pve3")
	if err := s.sim.SetNodeDown("pve1", true); err != nil {
		t.Fatal(err)
	}
	s.waitHA(ida, "the recovery on pve3", []string{"pve2"}, func(h pvesim.HAResourceState, vm pvesim.VMState) bool {
		return h.CRMState == "started" && vm.Node == "pve3" && vm.Power == "running"
	})
	if vm, _ := s.sim.VM(idb); vm.Node != "pve2" || vm.Power != "running" {
		t.Errorf("the partner moved: %+v", vm)
	}

	s.planNoReplacement("after the recovery", "")
	if r := s.apply(); !r.OK() {
		t.Errorf("the apply after the recovery failed:\n%s", r)
	}
	if vm, _ := s.sim.VM(ida); vm.Node != "pve3" || vm.Power != "running" {
		t.Errorf("after the apply that followed the recovery: %+v, want it left running on pve3", vm)
	}
	if ids := s.chk.VMIDs()[a.Name]; len(ids) != 1 || ids[0] != ida {
		t.Errorf("VMs named %s: %v, want the same VM %d", a.Name, ids, ida)
	}

	s.nodeBack("pve1")
	s.dropSeedCopy("pve2", seed)
	s.converge()
	s.countForeignHAWrites()
	t.Logf("scenario wall time: %s", time.Since(start).Round(time.Millisecond))
}

// TestE2E_HA_StrictNowhereStaysDown: a strict node-affinity rule on pve1 and pve2 beside the
// negative one leaves the VM of a dead pve1 nowhere to go (pve2 holds its partner): HA keeps
// it down and says so; the plan does not replace it. A destroy while pve1 is down either
// succeeds or fails naming the VM and what to do; once pve1 is back, the suite's
// convergence leaves nothing (no VM, seed, HA resource or rule) and nothing foreign is
// written.
func TestE2E_HA_StrictNowhereStaysDown(t *testing.T) {
	start := time.Now()
	s := newHAScenario(t, "ha/strict-nowhere")
	a, b := s.haPair(fmt.Sprintf(`
resource "proxy_ha_rule" "nodes" {
  name   = %q
  type   = "node-affinity"
  nodes  = { pve1 = 0, pve2 = 0 }
  strict = true
  vms    = [%s.vmid, %s.vmid]
}
`, s.prefix+"nodes", s.vm("ha-a").Addr(), s.vm("ha-b").Addr()))
	s.mustApply()
	ida, idb := s.onlyVMID(a.Name), s.onlyVMID(b.Name)
	s.checkPairHA(ida, idb)

	seed := s.copySeed(ida, "pve3")
	if err := s.sim.SetNodeDown("pve1", true); err != nil {
		t.Fatal(err)
	}
	s.waitHA(ida, "the failed recovery", []string{"pve2", "pve3"}, func(h pvesim.HAResourceState, _ pvesim.VMState) bool {
		return h.CRMState == "recovery"
	})
	want := "recovering service '" + haSID(ida) + "' from fenced node 'pve1' failed, no recovery node found"
	if !slices.ContainsFunc(s.sim.HALog(), func(e pvesim.HAEvent) bool { return strings.Contains(e.Message, want) }) {
		t.Errorf("the HA log lacks %q: %v", want, s.sim.HALog())
	}

	s.planNoReplacement("with the VM down", "pve1")
	r := s.destroy()
	if r.OK() {
		s.figure(func(row *figureRow) { row.Notes["destroy with the node down: succeeded"]++ })
	} else {
		s.figure(func(row *figureRow) { row.Notes["destroy with the node down: failed"]++ })
		if m := s.checkDiag(r, "pve1", "node"); m != "" {
			t.Errorf("the destroy with pve1 down failed without saying why (%s):\n%s", m, r)
		}
		t.Logf("the destroy with pve1 down failed:\n%s", tail(tfrun.TrimOverridesWarning(r.Output()), 30))
	}
	if vm, ok := s.sim.VM(ida); ok && vm.Power == "running" {
		t.Errorf("VM %d runs on %s while its only allowed free node is down", ida, vm.Node)
	}

	s.nodeBack("pve1")
	if _, ok := s.sim.VM(ida); ok {
		s.waitHA(ida, "the start on pve1", []string{"pve2", "pve3"}, func(h pvesim.HAResourceState, vm pvesim.VMState) bool {
			return h.CRMState == "started" && vm.Node == "pve1" && vm.Power == "running"
		})
	}
	s.dropSeedCopy("pve3", seed)
	s.converge()
	s.countForeignHAWrites()
	t.Logf("scenario wall time: %s", time.Since(start).Round(time.Millisecond))
}

// TestE2E_HA_ForeignNeverWritten: the pair's HA settings and rule change in place, then
// pve2 goes down and HA recovers its VM on pve3, next to the foreign HA guests and under
// their rule's eyes; the convergence destroys everything. No request other than a GET
// names the foreign HA resources, their VMs or their rule, and they come out unchanged.
func TestE2E_HA_ForeignNeverWritten(t *testing.T) {
	start := time.Now()
	s := newHAScenario(t, "ha/foreign")
	a, b := s.haPair("")
	s.mustApply()
	ida, idb := s.onlyVMID(a.Name), s.onlyVMID(b.Name)
	s.checkPairHA(ida, idb)

	for i := range s.vms {
		s.vms[i].Extra = "  ha = { max_restart = 2, max_relocate = 2 }\n"
	}
	s.tail = strings.Replace(s.tail, `affinity = "negative"`, "affinity = \"negative\"\n  comment  = \"one per node\"", 1)
	s.write()
	s.planNoReplacement("of the HA changes", "")
	s.mustApply()
	if h, _ := s.sim.HAResourceOf(idb); h.MaxRestart == nil || *h.MaxRestart != 2 {
		t.Errorf("VM %d: HA resource %+v, want max_restart 2", idb, h)
	}

	s.copySeed(idb, "pve3")
	if err := s.sim.SetNodeDown("pve2", true); err != nil {
		t.Fatal(err)
	}
	s.waitHA(idb, "the recovery on pve3", []string{"pve1"}, func(h pvesim.HAResourceState, vm pvesim.VMState) bool {
		return h.CRMState == "started" && vm.Node == "pve3" && vm.Power == "running"
	})
	s.planNoReplacement("after the recovery", "")
	s.nodeBack("pve2")
	s.converge()
	s.countForeignHAWrites()
	t.Logf("scenario wall time: %s", time.Since(start).Round(time.Millisecond))
}
