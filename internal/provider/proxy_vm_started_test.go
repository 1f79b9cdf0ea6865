package provider

import (
	"fmt"
	"regexp"
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

// checkPower checks the simulated VM's power state.
func checkPower(env *testEnv, want string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, err := vmidOf(s, vmAddr)
		if err != nil {
			return err
		}
		vm, ok := env.Sim.VM(vmid)
		if !ok || vm.Power != want {
			return fmt.Errorf("VMID %d power %q (found %v), want %s", vmid, vm.Power, ok, want)
		}
		return nil
	}
}

// TestAccProxyVM_started: started = false makes the VM without starting it (no address
// wait), the next plan is empty, true starts it in place (its first boot: the address is
// read), false shuts it down in place, an import of the stopped VM reads started = false, and
// the destroy removes it.
func TestAccProxyVM_started(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("checks the simulator's power state")
	}
	c := newCluster(t, env)
	name := vmName("started")
	base := vmProviderConfig(env, "")
	stopped := base + vmResource(env, name, "  machine_type = \"small\"\n  started = false")
	running := base + vmResource(env, name, "  machine_type = \"small\"")
	vmid := statecheck.CompareValue(compare.ValuesSame())
	env.Sim.EnableRequestLog()
	power := &powerLog{env: env}
	var id int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: stopped,
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("stopped")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.Null()),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("started"), knownvalue.Bool(false)),
				},
				Check: checkPower(env, "stopped"),
			},
			{
				Config:           stopped,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ResourceName:            vmAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: importIgnore,
			},
			{
				Config: running,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringRegexp(regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`))),
				},
				Check: resource.ComposeAggregateTestCheckFunc(checkPower(env, "running"), checkSeed(env, vmAddr, ""), saveVMID(&id),
					func(*terraform.State) error { power.reset(); return nil }),
			},
			{
				Config: stopped,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("stopped")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ipv4_addresses"), knownvalue.Null()),
				},
				// Shut down as a restart is (the guest gets shutdown_timeout), never a hard stop.
				Check: resource.ComposeAggregateTestCheckFunc(checkPower(env, "stopped"), power.check(&id, "shutdown")),
			},
			{
				Config:           stopped,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
