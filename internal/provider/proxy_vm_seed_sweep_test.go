package provider

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// The destroy deletes every generation of a VM's seed ISO on its node and on every node a
// copy was put on (decision: seed-sweep), whatever path it takes. These are the histories an
// adversary found seeds (and their cloud-init) left after, with real terraform against the
// simulator: HA recoveries (the config moves, the seed stays), cloud-init changes applied in
// place after them (each swaps the seed on the VM's node only), a start rebuilding a seed on
// the new node, a provider migration, and the VM deleted outside Terraform before the
// destroy or the replacement.

// seedSweepConfig is a proxy_vm on pve1 that stays where an HA recovery puts it and applies
// cloud-init changes in place; gen names its cloud-init (a change per gen).
func seedSweepConfig(env *testEnv, name, node string, gen int) string {
	return vmProviderConfig(env, "") + vmResource(env, name, fmt.Sprintf("  machine_type = \"small\"\n  node = %q\n  migrate_back = false\n"+
		"  cloud_init_change = \"restart\"\n  cloud_init = %s", node, hclString(cloudInit(fmt.Sprintf("%s-%d", name, gen)))))
}

// haMove is an HA recovery of the state's VM to node: the config moves, no volume does.
func haMove(t *testing.T, env *testEnv, vmid *int, node string) func() {
	return func() {
		if err := env.Sim.MoveVM(*vmid, node); err != nil {
			t.Fatal(err)
		}
	}
}

// seedGenRE reads the generation of a seed ISO of this provider from its volume id.
var seedGenRE = regexp.MustCompile(`-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:-([0-9]+))?-seed\.iso$`)

// seedsOn checks the seeds of name are exactly want, each "<node>/<generation>".
func seedsOn(c *cluster, name string, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		seeds, err := c.seeds(name)
		if err != nil {
			return err
		}
		var got []string
		for _, s := range seeds {
			node, _, _ := strings.Cut(s, "/")
			m := seedGenRE.FindStringSubmatch(s)
			if m == nil {
				return fmt.Errorf("seed %s is not named as this provider names them", s)
			}
			gen := m[1]
			if gen == "" {
				gen = "1"
			}
			got = append(got, node+"/"+gen)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("seeds (node/generation) %v, want %v", got, want)
		}
		return nil
	}
}

// TestAccProxyVM_seedSweepGoneVMAfterHAMoveAndSwap: generation 1 stays on pve1 after the HA
// recovery, generation 2 is made on pve2 by a cloud-init change; the VM is then deleted
// outside Terraform. Both a destroy and a replacement delete both generations.
func TestAccProxyVM_seedSweepGoneVMAfterHAMoveAndSwap(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replace=%v", replace), func(t *testing.T) {
			env, c := multiNodeEnv(t, "pve1", "pve2")
			name := vmName("sweep1")
			var vmid int
			steps := []resource.TestStep{
				{
					Config: seedSweepConfig(env, name, "pve1", 1),
					Check: func(s *terraform.State) (err error) {
						vmid, err = vmidOf(s, vmAddr)
						return err
					},
				},
				{
					PreConfig: haMove(t, env, &vmid, "pve2"),
					Config:    seedSweepConfig(env, name, "pve1", 2),
					Check:     seedsOn(c, name, "pve1/1", "pve2/2"),
				},
			}
			gone := func() {
				if err := env.Sim.DeleteVM(vmid); err != nil {
					t.Fatal(err)
				}
			}
			if replace {
				steps = append(steps, resource.TestStep{
					PreConfig: gone,
					Config:    seedSweepConfig(env, name, "pve1", 2),
					// The old VM's seeds are gone; the replacement's generation 1 is on pve1.
					Check: seedsOn(c, name, "pve1/1"),
				}, resource.TestStep{
					Config:  seedSweepConfig(env, name, "pve1", 2),
					Destroy: true,
					Check:   c.checkGone(name),
				})
			} else {
				steps = append(steps, resource.TestStep{
					PreConfig: gone,
					Config:    seedSweepConfig(env, name, "pve1", 2),
					Destroy:   true,
					Check:     c.checkGone(name),
				})
			}
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				CheckDestroy:             c.checkGone(name),
				Steps:                    steps,
			})
		})
	}
}

// TestAccProxyVM_seedSweepOwnNodeKeepsNoOlderGeneration: HA to pve2 + a change (generation 2
// there), HA to pve1 + two changes (generation 4 there), then to pve2 again, by HA and an
// apply (the start rebuilds generation 4 there) or by a provider migration: generation 2
// is on the VM's own node, which ide2 does not name. The destroy deletes every generation.
func TestAccProxyVM_seedSweepOwnNodeKeepsNoOlderGeneration(t *testing.T) {
	for _, migrate := range []bool{false, true} {
		t.Run(fmt.Sprintf("migration=%v", migrate), func(t *testing.T) {
			env, c := multiNodeEnv(t, "pve1", "pve2")
			name := vmName("sweep2")
			var vmid int
			last := resource.TestStep{
				PreConfig: haMove(t, env, &vmid, "pve2"),
				Config:    seedSweepConfig(env, name, "pve1", 4),
			}
			if migrate {
				last = resource.TestStep{Config: seedSweepConfig(env, name, "pve2", 4)}
			}
			last.Check = func(*terraform.State) error {
				if vm, _ := env.Sim.VM(vmid); vm.Node != "pve2" {
					return fmt.Errorf("the VM is on %s, want pve2", vm.Node)
				}
				return nil
			}
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				CheckDestroy:             c.checkGone(name),
				Steps: []resource.TestStep{
					{
						Config: seedSweepConfig(env, name, "pve1", 1),
						Check: func(s *terraform.State) (err error) {
							vmid, err = vmidOf(s, vmAddr)
							return err
						},
					},
					{PreConfig: haMove(t, env, &vmid, "pve2"), Config: seedSweepConfig(env, name, "pve1", 2)},
					{PreConfig: haMove(t, env, &vmid, "pve1"), Config: seedSweepConfig(env, name, "pve1", 3)},
					{Config: seedSweepConfig(env, name, "pve1", 4), Check: seedsOn(c, name, "pve2/2", "pve1/4")},
					last,
					{Config: last.Config, Destroy: true, Check: c.checkGone(name)},
				},
			})
		})
	}
}
