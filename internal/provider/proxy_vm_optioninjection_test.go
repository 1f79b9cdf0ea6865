package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestAccProxyVM_bridgeInjectionRefusedAtPlan: a bridge that would add options to net0
// (bridge = "vmbr0,firewall=0,trunks=1;2;3,rate=1000") is refused at plan time with a
// diagnostic on bridge, for a create and for an update of an existing VM, and no request
// reaches Proxmox while it is refused; the VM's net0 is unchanged. The provider-level
// bridge and storages get the same check.
func TestAccProxyVM_bridgeInjectionRefusedAtPlan(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("counting requests needs the simulator")
	}
	c := newCluster(t, env)
	name := vmName("inject")
	const bad = `vmbr0,firewall=0,trunks=1;2;3,rate=1000`
	good := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  bridge = \"vmbr0\"")
	injected := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  bridge = "+hclString(bad))
	var vmid int
	var net0 string
	env.Sim.EnableRequestLog()
	mark := 0
	startLog := func() { mark = len(env.Sim.RequestLog()) }
	quiet := func(step string) func() {
		return func() {
			if got := env.Sim.RequestLog()[mark:]; len(got) != 0 {
				t.Errorf("%s: %d requests reached Proxmox while the configuration was refused: %+v", step, len(got), got)
			}
		}
	}
	onBridge := regexp.MustCompile(`(?s)Attribute bridge must be a Proxmox bridge id`)

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{PreConfig: startLog, Config: injected, PlanOnly: true, ExpectError: onBridge},
			{
				PreConfig: quiet("create"),
				Config:    good,
				Check: func(s *terraform.State) (err error) {
					if vmid, err = vmidOf(s, vmAddr); err != nil {
						return err
					}
					net0 = c.config(vmid)["net0"]
					return nil
				},
			},
			{PreConfig: startLog, Config: injected, ExpectError: onBridge},
			{
				PreConfig: func() {
					quiet("update")()
					if got := c.config(vmid)["net0"]; got != net0 {
						t.Errorf("net0 changed: %q -> %q", net0, got)
					}
				},
				Config:           good,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccProvider_optionStringsValidated: the provider-level values written into option
// strings or storage parameters are refused at plan time on their attribute.
func TestAccProvider_optionStringsValidated(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	name := vmName("pvfmt")
	res := vmResource(env, name, `  machine_type = "small"`)
	var steps []resource.TestStep
	for _, tc := range []struct{ extra, want string }{
		{"  bridge = \"vmbr0,tag=5\"\n", `Attribute bridge must be a Proxmox bridge id`},
		{"  storage = \"local-lvm,size=1\"\n", `Attribute storage must be a Proxmox storage id`},
		{"  storage = \"x\"\n", `Attribute storage must be a Proxmox storage id`},
		{"  iso_storage = \"seeds;x\"\n", `Attribute iso_storage must be a Proxmox storage id`},
		{"  nodes = [\"pve1,x\"]\n", `Attribute nodes\[0\] must be a Proxmox node name`},
	} {
		steps = append(steps, resource.TestStep{Config: vmProviderConfig(env, tc.extra) + res, PlanOnly: true,
			ExpectError: regexp.MustCompile(tc.want)})
	}
	steps = append(steps, resource.TestStep{
		Config: vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1/../x\""), PlanOnly: true,
		ExpectError: regexp.MustCompile(`Attribute node must be a Proxmox node name`)})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    steps,
	})
}
