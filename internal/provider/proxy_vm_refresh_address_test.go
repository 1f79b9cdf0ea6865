package provider

import (
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestAccProxyVM_refreshFillsAddress: a VM started without the address wait
// (wait_for_ip = false) has no address in the state, and its refreshes do not ask the
// agent; once wait_for_ip is true, a refresh asks it once and fills ip_address and the
// address lists in.
func TestAccProxyVM_refreshFillsAddress(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("times the simulated agent")
	}
	c := newCluster(t, env)
	name := vmName("fill")
	cfg := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  wait_for_ip = false")
	waiting := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"")
	ipv4 := knownvalue.StringRegexp(regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`))
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.Null()),
				},
			},
			{
				// The agent answers after its install and DHCP (45 s simulated); with
				// wait_for_ip = false the refresh does not ask it.
				PreConfig: func() { time.Sleep(env.Sim.WallTime(60 * time.Second)) },
				Config:    cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.Null()),
				},
			},
			// wait_for_ip = true changes nothing on the VM; the refreshes from then on ask.
			{Config: waiting},
			{
				Config: waiting,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), ipv4),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ipv4_addresses").AtSliceIndex(0), ipv4),
				},
			},
		},
	})
}
