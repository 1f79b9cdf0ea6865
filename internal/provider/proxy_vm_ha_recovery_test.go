package provider

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// HA recovery of a VM whose seed ISO is on per-node storage: the HA manager moves the
// config to the recovery node and copies no volume (pvesim MoveVM), so the seed stays on the
// old node and the VM is left stopped on the new one. Nothing the provider made may outlive
// the resource: a destroy after such a move, right away or after an apply that brought the
// VM back up on the new node, leaves no VM and no seed ISO on any node.

// haRecovered moves the state's VM from node from to node as an HA recovery and checks the
// situation the next step starts from: the VM stopped on node, its seed ISO on from alone.
func haRecovered(t *testing.T, env *testEnv, c *cluster, name string, vmid *int, from, node string) func() {
	return func() {
		if err := env.Sim.MoveVM(*vmid, node); err != nil {
			t.Fatal(err)
		}
		vm, _ := env.Sim.VM(*vmid)
		seeds, err := c.seeds(name)
		if err != nil {
			t.Fatal(err)
		}
		if vm.Node != node || vm.Power != "stopped" || len(seeds) != 1 || !strings.HasPrefix(seeds[0], from+"/") {
			t.Fatalf("after the HA recovery: VM %+v, seeds %v; want it stopped on %s, its seed on %s alone", vm, seeds, node, from)
		}
	}
}

// TestAccProxyVM_haRecoveryThenDestroyLeavesNothing: destroy right after the recovery.
func TestAccProxyVM_haRecoveryThenDestroyLeavesNothing(t *testing.T) {
	env, c := multiNodeEnv(t, "pve1", "pve2")
	name := vmName("harec")
	config := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1\"\n  migrate_back = false\n  cloud_init = "+hclString(cloudInit("harec")))
	var vmid int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeTestCheckFunc(simVMOn(env, "pve1"), func(s *terraform.State) error {
					var err error
					vmid, err = vmidOf(s, vmAddr)
					return err
				}),
			},
			{
				PreConfig: haRecovered(t, env, c, name, &vmid, "pve1", "pve2"),
				Config:    config,
				Destroy:   true,
				// A destroy step's Check runs after the destroy; the test case's CheckDestroy
				// does not run when the state is already empty.
				Check: c.checkGone(name),
			},
		},
	})
}

// TestAccProxyVM_haRecoveryApplyThenDestroyLeavesNothing: an apply after the recovery
// (migrate_back = false: the VM stays on the recovery node and is started there), then the
// destroy.
func TestAccProxyVM_haRecoveryApplyThenDestroyLeavesNothing(t *testing.T) {
	env, c := multiNodeEnv(t, "pve1", "pve2")
	name := vmName("harecap")
	config := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1\"\n  migrate_back = false\n  cloud_init = "+hclString(cloudInit("harecap")))
	var vmid int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeTestCheckFunc(simVMOn(env, "pve1"), func(s *terraform.State) error {
					var err error
					vmid, err = vmidOf(s, vmAddr)
					return err
				}),
			},
			{
				PreConfig: haRecovered(t, env, c, name, &vmid, "pve1", "pve2"),
				Config:    config,
				Check: func(*terraform.State) error {
					if vm, _ := env.Sim.VM(vmid); vm.Node != "pve2" || vm.Power != "running" {
						return fmt.Errorf("after the apply: %+v, want running on pve2", vm)
					}
					return nil
				},
			},
		},
	})
}

// haMoveWithSeed is an HA recovery in a cluster that keeps every node's copy of the VM's
// seed ISO (a per-node ISO storage made available everywhere, which HA recovery needs: the
// recovery node's start activates every drive volume): the seed is copied to node, then the
// config moves and the VM keeps running there.
func haMoveWithSeed(t *testing.T, env *testEnv, c *cluster, vmid int, node string) {
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
	upid, err := c.api.UploadISO(ctx, node, storage, file, bytes.NewReader(data), int64(len(data)))
	if err == nil {
		err = c.wait(node, upid)
	}
	if err == nil {
		err = env.Sim.MoveVM(vmid, node)
	}
	if err != nil {
		t.Fatal(err)
	}
	if vm, _ := env.Sim.VM(vmid); vm.Node != node || vm.Power != "running" {
		t.Fatalf("after the HA recovery with the seed on %s: %+v, want running there", node, vm)
	}
}
