package provider

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Multi-node behaviour on two- and three-node simulators: node drift and node changes are
// migrations (never replacements), creates from the node-local template work on every
// node, and VMs without a node spread. These need the simulator's HA-style moves and
// faults, so they skip against a real cluster.

// multiNodeEnv is a simulator with the given nodes whose template ships the guest agent (so
// every VM reports an address quickly); template 9001 is on the first node, on local-lvm.
func multiNodeEnv(t *testing.T, nodes ...string) (*testEnv, *cluster) {
	t.Helper()
	if realCluster() {
		t.Skip("needs the simulator's HA-style moves and faults")
	}
	env := newTestEnv(t, pvesim.Options{Nodes: nodes, TemplateAgent: true})
	return env, newCluster(t, env)
}

// newSameIdentity returns checks asserting, across the steps that add them, that vmid,
// mac_address and ip_address stay the same: the VM was neither replaced nor re-addressed.
func newSameIdentity() func() []statecheck.StateCheck {
	vmid := statecheck.CompareValue(compare.ValuesSame())
	mac := statecheck.CompareValue(compare.ValuesSame())
	ip := statecheck.CompareValue(compare.ValuesSame())
	return func() []statecheck.StateCheck {
		return []statecheck.StateCheck{
			vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
			mac.AddStateValue(vmAddr, tfjsonpath.New("mac_address")),
			ip.AddStateValue(vmAddr, tfjsonpath.New("ip_address")),
		}
	}
}

// simVMOn checks that the simulator holds the state's VM on node, running, with its seed
// ISO on that node's ISO storage and on no other node.
func simVMOn(env *testEnv, node string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, err := vmidOf(s, vmAddr)
		if err != nil {
			return err
		}
		vm, ok := env.Sim.VM(vmid)
		if !ok || vm.Node != node || vm.Power != "running" || vm.Lock != "" {
			return fmt.Errorf("VM %d: %+v, want running on %s", vmid, vm, node)
		}
		seed, _, _ := strings.Cut(vm.Config["ide2"], ",")
		if !strings.HasPrefix(seed, env.ISOStorage+":iso/") {
			return fmt.Errorf("VM %d: ide2 %q does not name its seed", vmid, vm.Config["ide2"])
		}
		for _, n := range env.Nodes {
			if _, has := env.Sim.ISO(n, seed); has != (n == node) {
				return fmt.Errorf("seed %s on node %s: %v, want it only on %s", seed, n, has, node)
			}
		}
		return nil
	}
}

// TestAccProxyVM_multiNodeDriftIsNotReplacement: a VM moved to another node outside
// Terraform gives an empty plan with migrate_back = false, and with the default a plan that
// migrates it back in place, keeping VMID, MAC and address.
func TestAccProxyVM_multiNodeDriftIsNotReplacement(t *testing.T) {
	env, c := multiNodeEnv(t, "pve1", "pve2")
	name := vmName("drift")
	base := vmProviderConfig(env, "")
	same := newSameIdentity()
	var vmid int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: base + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1\"\n  migrate_back = false\n  cloud_init = "+hclString(cloudInit("drift"))),
				ConfigStateChecks: append(same(),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact("pve1"))),
				Check: func(s *terraform.State) error {
					var err error
					vmid, err = vmidOf(s, vmAddr)
					return err
				},
			},
			{
				// An HA recovery (the seed on both nodes): with migrate_back = false the node Proxmox
				// has is accepted.
				PreConfig: func() {
					haMoveWithSeed(t, env, c, vmid, "pve2")
				},
				Config:           base + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1\"\n  migrate_back = false\n  cloud_init = "+hclString(cloudInit("drift"))),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: append(same(),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact("pve2"))),
			},
			{
				// The default migrates it back, in place.
				Config: base + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1\"\n  cloud_init = "+hclString(cloudInit("drift"))),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact("pve1")),
				}},
				ConfigStateChecks: append(same(),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact("pve1"))),
				Check: simVMOn(env, "pve1"),
			},
			{
				// And once more, by default, after another move.
				PreConfig: func() {
					haMoveWithSeed(t, env, c, vmid, "pve2")
				},
				Config: base + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1\"\n  cloud_init = "+hclString(cloudInit("drift"))),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: same(),
				Check:             simVMOn(env, "pve1"),
			},
		},
	})
}

// TestAccProxyVM_multiNodeChangeMigratesRunning: changing node migrates the running VM
// online: same VMID, MAC and address, the guest not rebooted (cloud-init not run again),
// and the seed ISO moved with it.
func TestAccProxyVM_multiNodeChangeMigratesRunning(t *testing.T) {
	env, c := multiNodeEnv(t, "pve1", "pve2")
	name := vmName("move")
	base := vmProviderConfig(env, "")
	same := newSameIdentity()
	body := func(node string) string {
		return "  machine_type = \"small\"\n  node = \"" + node + "\"\n  cloud_init = " + hclString(cloudInit("move"))
	}
	var seedBefore string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config:            base + vmResource(env, name, body("pve1")),
				ConfigStateChecks: same(),
				Check: resource.ComposeTestCheckFunc(simVMOn(env, "pve1"), func(s *terraform.State) error {
					vmid, _ := vmidOf(s, vmAddr)
					sf, _ := env.Sim.GuestSeed(vmid)
					seedBefore = string(sf.MetaData)
					return nil
				}),
			},
			{
				Config: base + vmResource(env, name, body("pve2")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
				}},
				ConfigStateChecks: append(same(),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact("pve2"))),
				Check: resource.ComposeTestCheckFunc(simVMOn(env, "pve2"), func(s *terraform.State) error {
					vmid, _ := vmidOf(s, vmAddr)
					if st := env.Sim.Stats()["POST /nodes/{node}/qemu/{vmid}/status/start"]; st != 1 {
						return fmt.Errorf("%d starts: the migration restarted the VM", st)
					}
					if sf, _ := env.Sim.GuestSeed(vmid); string(sf.MetaData) != seedBefore {
						return fmt.Errorf("the guest read another seed after the migration")
					}
					return nil
				}),
			},
		},
	})
}

// TestAccProxyVM_multiNodeCreateOffTemplateNode: a VM for the node without the template
// (local-lvm, so PVE refuses a cross-node clone) is cloned on the template's node and
// migrated before its seed and start; on a three-node cluster too, and proxy_health still
// reports every node.
func TestAccProxyVM_multiNodeCreateOffTemplateNode(t *testing.T) {
	env, c := multiNodeEnv(t, "pve1", "pve2", "pve3")
	name := vmName("far")
	base := vmProviderConfig(env, "")
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: base + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve3\"") + `
data "proxy_health" "h" {
  depends_on = [proxy_vm.test]
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact("pve3")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue("data.proxy_health.h", tfjsonpath.New("nodes"), knownvalue.ListSizeExact(3)),
					statecheck.ExpectKnownValue("data.proxy_health.h", tfjsonpath.New("nodes").AtSliceIndex(2).AtMapKey("name"), knownvalue.StringExact("pve3")),
					statecheck.ExpectKnownValue("data.proxy_health.h", tfjsonpath.New("ready"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(simVMOn(env, "pve3"), func(s *terraform.State) error {
					st := env.Sim.Stats()
					if st["POST /nodes/{node}/qemu/{vmid}/clone"] != 1 || st["POST /nodes/{node}/qemu/{vmid}/migrate"] != 1 {
						return fmt.Errorf("clones %d migrations %d, want 1 and 1", st["POST /nodes/{node}/qemu/{vmid}/clone"], st["POST /nodes/{node}/qemu/{vmid}/migrate"])
					}
					return nil
				}),
			},
		},
	})
}

// TestAccProxyVM_multiNodeFourWithoutNodeSpread: four VMs without node land two per node,
// known after apply, and stay (the next plan is empty).
func TestAccProxyVM_multiNodeFourWithoutNodeSpread(t *testing.T) {
	env, c := multiNodeEnv(t, "pve1", "pve2")
	prefix := vmName("spread")
	names := make([]string, 4)
	for i := range names {
		names[i] = prefix + "-" + strconv.Itoa(i)
	}
	config := vmProviderConfig(env, "") + fmt.Sprintf(`
resource "proxy_vm" "p" {
  count        = 4
  name         = "%s-${count.index}"
  image        = %q
  machine_type = "small"
}
`, prefix, imageKey(env))
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(names...),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue("proxy_vm.p[0]", tfjsonpath.New("node")),
				}},
				Check: func(s *terraform.State) error {
					per := map[string]int{}
					for i := range 4 {
						r := s.RootModule().Resources[fmt.Sprintf("proxy_vm.p.%d", i)]
						if r == nil {
							return fmt.Errorf("proxy_vm.p[%d] missing", i)
						}
						per[r.Primary.Attributes["node"]]++
						vmid, _ := strconv.Atoi(r.Primary.Attributes["vmid"])
						if vm, ok := env.Sim.VM(vmid); !ok || vm.Node != r.Primary.Attributes["node"] {
							return fmt.Errorf("proxy_vm.p[%d] on %q in the state, %+v in the cluster", i, r.Primary.Attributes["node"], vm)
						}
					}
					if per["pve1"] != 2 || per["pve2"] != 2 {
						return fmt.Errorf("VMs per node %v, want two on each", per)
					}
					return nil
				},
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccProxyVM_multiNodeFailedMigrationConverges: a migration whose task fails (the
// target failing mid-migration) fails the apply naming both nodes, leaves the VM on its node
// with its seed, and the next apply migrates it: same VMID, nothing lost or left behind.
func TestAccProxyVM_multiNodeFailedMigrationConverges(t *testing.T) {
	env, c := multiNodeEnv(t, "pve1", "pve2")
	name := vmName("fail")
	base := vmProviderConfig(env, "")
	same := newSameIdentity()
	body := func(node string) string {
		return "  machine_type = \"small\"\n  node = \"" + node + "\"\n  cloud_init = " + hclString(cloudInit("fail"))
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{Config: base + vmResource(env, name, body("pve1")), ConfigStateChecks: same()},
			{
				PreConfig: func() {
					env.Sim.InjectFault(pvesim.Fault{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/migrate", Times: 1,
						TaskExit: "migration aborted (duration 00:00:03): target node pve2 went down"})
				},
				Config:      base + vmResource(env, name, body("pve2")),
				ExpectError: regexp.MustCompile(`(?s)from node pve1\s+to node pve2.*migration\s+aborted`),
			},
			{
				// The failed migration left the VM where it was; the plan still wants pve2.
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check:              resource.ComposeTestCheckFunc(resource.TestCheckResourceAttr(vmAddr, "node", "pve1"), simVMOn(env, "pve1")),
			},
			{
				Config:            base + vmResource(env, name, body("pve2")),
				ConfigStateChecks: append(same(), statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact("pve2"))),
				Check:             simVMOn(env, "pve2"),
			},
		},
	})
}
