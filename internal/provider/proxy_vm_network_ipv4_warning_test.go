package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestAccProxyVM_networkConfigWithoutIPv4: a network_config that configures no interface
// leaves the simulator's guest without an IPv4; with wait_for_ip (the default) the create
// fails about a minute after the agent first answers (the static-address budget), saying
// the network_config gave no IPv4 and that retrying will not help, instead of waiting out
// the create timeout and advising a retry. It runs for about that minute.
func TestAccProxyVM_networkConfigWithoutIPv4(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	needsAddressPlan(t, env)
	c := newCluster(t, env)
	name := vmName("netnov4")
	cfg := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  network_config = "+hclString("version: 2\nethernets: {}\n"))
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{{
			Config:      cfg,
			ExpectError: regexp.MustCompile(`(?s)network_config\s+gave\s+the\s+guest\s+no\s+IPv4\s+address.*wait_for_ip\s+=\s+false.*Retrying\s+will\s+not\s+help`),
		}},
	})
}
