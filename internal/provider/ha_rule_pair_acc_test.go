package provider

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The usual HA example: a pair of proxies (count = 2, ha set) on pve1 and pve2 of a
// three-node cluster, kept apart by a negative resource-affinity rule. The node of one goes
// down; the HA manager starts it on the one node the rule allows (pve3, not its partner's);
// the next plan is empty or in place; destroy leaves no VM, seed, HA resource or rule. With a
// strict node-affinity rule on pve1 and pve2 there is nowhere to go, and the VM stays down
// until its node is back.

const pairAddr = "proxy_vm.pair"

// needVMHA skips a test that sets ha on proxy_vm while this build's proxy_vm has no such
// attribute (it comes with the branch that adds the VM's HA resource).
func needVMHA(t *testing.T) {
	t.Helper()
	if _, ok := proxyVMSchema(context.Background()).Attributes["ha"]; !ok {
		t.Skip("proxy_vm has no ha attribute in this build")
	}
}

// pairConfig is the pair with its negative rule, and extra (another rule) after it.
func pairConfig(env *testEnv, prefix, extra string) string {
	return vmProviderConfig(env, "") + fmt.Sprintf(`
resource "proxy_vm" "pair" {
  count        = 2
  name         = "%s-${count.index}"
  image        = %q
  machine_type = "small"
  node         = ["pve1", "pve2"][count.index]
  ha           = {}
  cloud_init   = %s
  timeouts {
    create = %q
    delete = %q
  }
}

resource "proxy_ha_rule" "apart" {
  name     = "%s-apart"
  type     = "resource-affinity"
  affinity = "negative"
  vms      = proxy_vm.pair[*].vmid
}
%s`, prefix, imageKey(env), hclString(cloudInit(prefix)), testTimeout(env), testTimeout(env), prefix, extra)
}

// pairVMIDs reads the pair's VMIDs from a state.
func pairVMIDs(s *terraform.State) ([2]int, error) {
	var out [2]int
	for i := range out {
		v, err := vmidOf(s, pairAddr+"."+strconv.Itoa(i)) // the state names a count instance so
		if err != nil {
			return out, err
		}
		out[i] = v
	}
	return out, nil
}

// copySeed puts a copy of the VM's seed on node, as a cluster whose ISO storage the HA
// recovery node can read must have it (the recovery moves the config alone; a start on a
// node without the seed fails and HA relocates or gives up).
func copySeed(t *testing.T, env *testEnv, c *cluster, vmid int, node string) {
	t.Helper()
	vm, _ := env.Sim.VM(vmid)
	volid, _, _ := strings.Cut(vm.Config["ide2"], ",")
	storage, file, ok := strings.Cut(volid, ":iso/")
	data, has := env.Sim.ISO(vm.Node, volid)
	if !ok || !has {
		t.Fatalf("VM %d: no seed ISO %q on node %s", vmid, volid, vm.Node)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	upid, err := c.api.UploadISO(ctx, node, storage, file, strings.NewReader(string(data)), int64(len(data)))
	if err == nil {
		err = c.wait(node, upid)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// dropSeedCopy deletes the copy copySeed put on node, once the test no longer needs it: the
// provider deletes the copies it made, never one an admin made.
func dropSeedCopy(t *testing.T, env *testEnv, c *cluster, volid, node string) {
	t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	upid, err := c.api.DeleteVolume(ctx, node, env.ISOStorage, volid)
	if err == nil {
		err = c.wait(node, upid)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// fillerVMID is a guest of someone else's that is an HA resource.
const fillerVMID = 7009

func addFillerHA(t *testing.T, env *testEnv, node string) {
	t.Helper()
	if err := env.Sim.AddVM(pvesim.VMSpec{VMID: fillerVMID, Node: node, Power: "running"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Sim.AddHAResource(fillerVMID, ""); err != nil {
		t.Fatal(err)
	}
}

// dropFillerHA takes the filler out of HA, so that the destroy's check sees only the pair's.
func dropFillerHA(t *testing.T, c *cluster) {
	t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	if err := c.api.DeleteHAResource(ctx, "vm:"+strconv.Itoa(fillerVMID), true); err != nil {
		t.Fatal(err)
	}
}

// seedOf is the seed volume VM vmid boots from.
func seedOf(env *testEnv, vmid int) string {
	vm, _ := env.Sim.VM(vmid)
	volid, _, _ := strings.Cut(vm.Config["ide2"], ",")
	return volid
}

// waitHA polls the simulator until ok holds for VM vmid (its CRM state and node), within a
// few seconds of real time (the simulator's fencing delays are minutes of simulated time).
func waitHA(t *testing.T, env *testEnv, vmid int, what string, ok func(pvesim.HAResourceState, pvesim.VMState) bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, _ := env.Sim.HAResourceOf(vmid)
		vm, _ := env.Sim.VM(vmid)
		if ok(r, vm) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("VM %d: %s did not happen: HA %+v, VM on %s %s; HA log %v", vmid, what, r, vm.Node, vm.Power, env.Sim.HALog())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkPairGone is a CheckDestroy: no VM or seed of the pair, no HA resource, no rule.
func checkPairGone(env *testEnv, c *cluster, prefix string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if err := c.checkGone(prefix+"-0", prefix+"-1")(s); err != nil {
			return err
		}
		if rs := env.Sim.HAResources(); len(rs) != 0 {
			return fmt.Errorf("HA resources left: %+v", rs)
		}
		if rs := env.Sim.HARules(); len(rs) != 0 {
			return fmt.Errorf("HA rules left: %+v", rs)
		}
		return nil
	}
}

// pairInPlaceOnly are plan checks: none of addrs is created, destroyed or replaced.
func pairInPlaceOnly(addrs ...string) []plancheck.PlanCheck {
	var out []plancheck.PlanCheck
	for _, a := range addrs {
		out = append(out, inPlaceOnly{a})
	}
	return out
}

// TestAccHARule_pairSurvivesNodeLoss is that example end to end.
func TestAccHARule_pairSurvivesNodeLoss(t *testing.T) {
	needVMHA(t)
	env, c := multiNodeEnv(t, "pve1", "pve2", "pve3")
	prefix := vmName("pair")
	cfg := pairConfig(env, prefix, "")
	var ids [2]int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPairGone(env, c, prefix),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(s *terraform.State) error {
					var err error
					if ids, err = pairVMIDs(s); err != nil {
						return err
					}
					r, ok := simRule(env, prefix+"-apart")
					want := []string{"vm:" + strconv.Itoa(min(ids[0], ids[1])), "vm:" + strconv.Itoa(max(ids[0], ids[1]))}
					if !ok || r.Affinity != "negative" || !slices.Equal(r.Resources, want) {
						return fmt.Errorf("rule: %+v, want negative on %v", r, want)
					}
					for i, node := range []string{"pve1", "pve2"} {
						if h, ok := env.Sim.HAResourceOf(ids[i]); !ok || h.Node != node {
							return fmt.Errorf("VM %d: HA resource %+v (%v), want one on %s", ids[i], h, ok, node)
						}
					}
					return nil
				},
			},
			{
				// pve1 goes down: the VM there is fenced and recovered on pve3, never on
				// pve2, where its partner runs.
				PreConfig: func() {
					copySeed(t, env, c, ids[0], "pve3")
					copySeed(t, env, c, ids[0], "pve2") // so that only the rule keeps it off pve2
					// An HA guest on pve3 too: pve2 and pve3 then tie on HA services, and the
					// CRM, without the rule, would pick pve2 by name.
					addFillerHA(t, env, "pve3")
					if err := env.Sim.SetNodeDown("pve1", true); err != nil {
						t.Fatal(err)
					}
					waitHA(t, env, ids[0], "the recovery on pve3", func(h pvesim.HAResourceState, vm pvesim.VMState) bool {
						return h.CRMState == "started" && vm.Node == "pve3" && vm.Power == "running"
					})
					if vm, _ := env.Sim.VM(ids[1]); vm.Node != "pve2" || vm.Power != "running" {
						t.Fatalf("the partner moved: %+v", vm)
					}
				},
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: pairInPlaceOnly(pairAddr+"[0]", pairAddr+"[1]", "proxy_ha_rule.apart")},
			},
			{
				// Nothing left to do: the next plan is empty.
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// pve1 is back before the destroy, so its copy of the seed can go too; the
				// copy the test put on pve2 goes with the test.
				PreConfig: func() {
					if err := env.Sim.SetNodeDown("pve1", false); err != nil {
						t.Fatal(err)
					}
					dropSeedCopy(t, env, c, seedOf(env, ids[0]), "pve2")
					dropFillerHA(t, c)
				},
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: pairInPlaceOnly(pairAddr+"[0]", pairAddr+"[1]", "proxy_ha_rule.apart")},
			},
		},
	})
}

// TestAccHARule_pairStrictNowhereStaysDown: with a strict node-affinity rule on pve1 and
// pve2, the VM of a dead pve1 has no allowed node (pve2 holds its partner): HA keeps it down
// and says so; once pve1 is back it runs there again, and nothing is left after destroy.
func TestAccHARule_pairStrictNowhereStaysDown(t *testing.T) {
	needVMHA(t)
	env, c := multiNodeEnv(t, "pve1", "pve2", "pve3")
	prefix := vmName("strict")
	cfg := pairConfig(env, prefix, fmt.Sprintf(`
resource "proxy_ha_rule" "nodes" {
  name   = "%s-nodes"
  type   = "node-affinity"
  nodes  = { pve1 = 0, pve2 = 0 }
  strict = true
  vms    = proxy_vm.pair[*].vmid
}
`, prefix))
	var ids [2]int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPairGone(env, c, prefix),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(s *terraform.State) error {
					var err error
					ids, err = pairVMIDs(s)
					return err
				},
			},
			{
				PreConfig: func() {
					copySeed(t, env, c, ids[0], "pve3")
					if err := env.Sim.SetNodeDown("pve1", true); err != nil {
						t.Fatal(err)
					}
					waitHA(t, env, ids[0], "the failed recovery", func(h pvesim.HAResourceState, vm pvesim.VMState) bool {
						return h.CRMState == "recovery"
					})
					re := regexp.MustCompile(`recovering service 'vm:` + strconv.Itoa(ids[0]) + `' from fenced node 'pve1' failed, no recovery node found`)
					if !slices.ContainsFunc(env.Sim.HALog(), func(e pvesim.HAEvent) bool { return re.MatchString(e.Message) }) {
						t.Fatalf("HA log: %v", env.Sim.HALog())
					}
					if vm, _ := env.Sim.VM(ids[0]); vm.Power == "running" && vm.Node != "pve1" {
						t.Fatalf("the VM runs on %s, which the strict rule forbids", vm.Node)
					}
					// pve1 back: HA starts the VM there again.
					if err := env.Sim.SetNodeDown("pve1", false); err != nil {
						t.Fatal(err)
					}
					waitHA(t, env, ids[0], "the start on pve1", func(h pvesim.HAResourceState, vm pvesim.VMState) bool {
						return h.CRMState == "started" && vm.Node == "pve1" && vm.Power == "running"
					})
					dropSeedCopy(t, env, c, seedOf(env, ids[0]), "pve3") // the test's, not the provider's
				},
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccExamples_proxyHARule applies examples/resources/proxy_ha_rule/resource.tf as
// written on a two-node cluster named as the example names it: both rules in Proxmox, the
// next plan empty, and nothing left after the destroy.
func TestAccExamples_proxyHARule(t *testing.T) {
	needVMHA(t)
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "resources", "proxy_ha_rule", "resource.tf"))
	if err != nil {
		t.Fatal(err)
	}
	env, c := multiNodeEnv(t, "pve1", "pve2")
	cfg := vmProviderConfig(env, "") + string(example)
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPairGone(env, c, "proxy"),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(*terraform.State) error {
					apart, ok1 := simRule(env, "proxy-pair-apart")
					nodes, ok2 := simRule(env, "proxy-pair-nodes")
					if !ok1 || !ok2 || apart.Affinity != "negative" || !nodes.Strict || len(apart.Resources) != 2 || len(nodes.Resources) != 2 {
						return fmt.Errorf("rules in Proxmox: %+v, %+v", apart, nodes)
					}
					return nil
				},
			},
			{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
	})
}

// TestAccHARule_pairReplacedKeepsRule: a cloud-init change replaces both VMs of the pair at
// the same VMIDs (a name probes the same ones); their destroys remove their HA resources
// without purge (decision: ha-placement), so the rule keeps naming the VMIDs, the new VMs
// rejoin it, and one apply converges: the rule unchanged, the next plan empty. With purge
// the rule was deleted and only the next apply made it again.
func TestAccHARule_pairReplacedKeepsRule(t *testing.T) {
	needVMHA(t)
	env, c := multiNodeEnv(t, "pve1", "pve2", "pve3")
	prefix := vmName("repl")
	cfg := pairConfig(env, prefix, "")
	cfg2 := strings.Replace(cfg, hclString(cloudInit(prefix)), hclString(cloudInit(prefix+"-v2")), 1)
	env.Sim.EnableRequestLog()
	var uid string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPairGone(env, c, prefix),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(s *terraform.State) error {
					uid = s.RootModule().Resources["proxy_ha_rule.apart"].Primary.Attributes["uid"]
					return nil
				},
			},
			{
				Config: cfg2,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(pairAddr+"[0]", plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectResourceAction(pairAddr+"[1]", plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: func(s *terraform.State) error {
					ids, err := pairVMIDs(s)
					if err != nil {
						return err
					}
					r, ok := simRule(env, prefix+"-apart")
					want := []string{"vm:" + strconv.Itoa(min(ids[0], ids[1])), "vm:" + strconv.Itoa(max(ids[0], ids[1]))}
					if !ok || !slices.Equal(r.Resources, want) || !strings.HasSuffix(r.Comment, "proxy-operator-ha-rule="+uid) {
						var log []string
						for _, q := range env.Sim.RequestLog() {
							if strings.Contains(q.Path, "/cluster/ha") && q.Method != http.MethodGet {
								log = append(log, q.Method+" "+q.Path+" "+strconv.Itoa(q.Status))
							}
						}
						return fmt.Errorf("rule after the replacement: %+v (%v), want %v with uid %s; %v", r, ok, want, uid, log)
					}
					return nil
				},
			},
			{Config: cfg2, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
	})
}
