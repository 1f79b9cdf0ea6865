package provider

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// TestAccProxyVM_haRecoveryLeftoverSeedFoundWhenNodeIsBack: an HA
// recovery from a node that died leaves the copy of the VM's seed on that node's node-local
// ISO storage (the recovery node had its own copy, which the VM boots from). Once the node
// is back, that copy must not stay unnoticed while the VM lives on: the next apply deletes
// it, or proxy_vms lists it as an orphan seed for the clean-up action. It stays until the
// destroy otherwise, a copy of the cloud-init on a node the VM no longer uses.
//
// Known gap, so skipped unless PROXY_TEST_KNOWN_GAPS is set: it fails on this code. The orphan
// listing (internal/proxmox/orphans.go, seedUse.byItsVM) counts a seed as used whenever a VM
// of its name exists, on whatever node, so the copy on the node the VM left is never
// listed; and no apply deletes it. A fix there (on a storage that is not shared, a copy on a
// node its VM is not on is unused) makes this test pass.
func TestAccProxyVM_haRecoveryLeftoverSeedFoundWhenNodeIsBack(t *testing.T) {
	if os.Getenv("PROXY_TEST_KNOWN_GAPS") == "" {
		t.Skip("a known gap: the orphan listing does not report a seed copy on a node its VM left (set PROXY_TEST_KNOWN_GAPS=1 to run)")
	}
	env, c := multiNodeEnv(t, "pve1", "pve2", "pve3")
	name := vmName("haleft")
	config := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1\"\n  migrate_back = false\n  cloud_init = "+hclString(cloudInit("haleft"))) +
		vmsConfig("")
	var vmid int
	var seed string
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
				// pve1 dies; HA recovers the VM on pve3, where a copy of its seed was; pve1
				// comes back with its copy.
				PreConfig: func() {
					vm, _ := env.Sim.VM(vmid)
					seed, _, _ = strings.Cut(vm.Config["ide2"], ",")
					haMoveWithSeed(t, env, c, vmid, "pve3")
					for _, down := range []bool{true, false} {
						if err := env.Sim.SetNodeDown("pve1", down); err != nil {
							t.Fatal(err)
						}
					}
					if _, ok := env.Sim.ISO("pve1", seed); !ok {
						t.Fatalf("the set-up lost the copy on pve1 of %s", seed)
					}
				},
				Config: config,
				Check: func(s *terraform.State) error {
					if _, ok := env.Sim.ISO("pve1", seed); !ok {
						return nil // deleted by the apply
					}
					orphans := s.RootModule().Resources[vmsDS].Primary.Attributes
					for k, v := range orphans {
						if strings.HasPrefix(k, "orphan_seeds.") && strings.HasSuffix(k, ".volid") && v == seed &&
							orphans[strings.TrimSuffix(k, "volid")+"node"] == "pve1" {
							return nil // listed for the clean-up
						}
					}
					return fmt.Errorf("the copy of seed %s left on pve1 by the recovery to pve3 is neither deleted nor listed in proxy_vms' orphan_seeds", seed)
				},
			},
		},
	})
}
