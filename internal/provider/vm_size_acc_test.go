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
)

// TestAccProxyVM_cpuType: cpu_type is written at create (the template's other cpu
// properties kept), shown by both data sources, and changed in place with a graceful
// restart of the running VM (config, shutdown, start), which the plan warns about; with
// reboot_on_change = false the change is written and left pending in Proxmox, with no power
// request; a type changed outside Terraform shows as drift and is written back with a
// restart; a value that would break out of the cpu option string is refused at plan on
// cpu_type.
func TestAccProxyVM_cpuType(t *testing.T) {
	f := newPowerFixture(t, "cpu", "reads the simulator's request log")
	env, c, name, base, log := f.env, f.c, f.name, f.base, f.log
	cfg := func(cpu, extra string) string {
		return base + vmResource(env, name, fmt.Sprintf("  cores = 1\n  memory_mib = 512\n  cpu_type = %q\n%s", cpu, extra)) + `
data "proxy_vm" "x" {
  name       = proxy_vm.test.name
  depends_on = [proxy_vm.test]
}
data "proxy_vms" "f" {
  name_prefix = proxy_vm.test.name
  depends_on  = [proxy_vm.test]
}
`
	}
	var vmid int
	same := statecheck.CompareValue(compare.ValuesSame())
	shows := func(cpu string) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			same.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
			statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cpu_type"), knownvalue.StringExact(cpu)),
			statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("cpu_type"), knownvalue.StringExact(cpu)),
			statecheck.ExpectKnownValue("data.proxy_vms.f", tfjsonpath.New("vms").AtSliceIndex(0).AtMapKey("cpu_type"), knownvalue.StringExact(cpu)),
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config:      cfg("host,flags=+aes", ""),
				ExpectError: regexp.MustCompile(`(?s)cpu_type.*must be a CPU model name`),
			},
			{
				// A create with a model the node does not know: refused at plan, before the
				// clone (the config write after it would refuse it and taint the VM).
				Config:      cfg("Skylake-Server-v9", ""),
				ExpectError: regexp.MustCompile(`(?s)cpu_type.*"Skylake-Server-v9" is not a CPU model.*such\s+as\s+Skylake-Server-v4,`),
			},
			{
				PreConfig: func() {
					if ids, err := c.vmsNamed(name); err != nil || len(ids) != 0 {
						t.Errorf("after the refused plan: VMs %v, %v; want none cloned", ids, err)
					}
				},
				Config:            cfg("host", ""),
				ConfigStateChecks: shows("host"),
				Check: resource.ComposeTestCheckFunc(saveVMID(&vmid),
					checkSimConfig(env, &vmid, map[string]string{"cpu": "host"}, nil),
					func(*terraform.State) error { log.reset(); return nil }),
			},
			{
				Config: cfg("x86-64-v2-AES", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")),
				}},
				ConfigStateChecks: shows("x86-64-v2-AES"),
				Check: resource.ComposeTestCheckFunc(
					log.check(&vmid, "config", "shutdown", "start"),
					checkSimConfig(env, &vmid, map[string]string{"cpu": "x86-64-v2-AES"}, nil),
					checkPower(env, "running")),
			},
			{
				Config:           cfg("x86-64-v2-AES", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// reboot_on_change = false: written, pending in Proxmox, no power request.
				PreConfig: func() { log.reset() },
				Config:    cfg("host", "  reboot_on_change = false"),
				Check: resource.ComposeTestCheckFunc(
					log.check(&vmid, "config"),
					checkSimConfig(env, &vmid, map[string]string{"cpu": "x86-64-v2-AES"}, map[string]string{"cpu": "host"}),
					checkPower(env, "running")),
			},
			{
				// An admin changes the type in Proxmox (pending on the running VM): the plan
				// shows the drift and the apply writes it back with a restart.
				PreConfig: func() {
					putConfig(t, env, c, vmid, map[string]string{"cpu": "kvm64"})
					log.reset()
				},
				Config: cfg("host", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cpu_type"), knownvalue.StringExact("host")),
				}},
				ConfigStateChecks: shows("host"),
				Check: resource.ComposeTestCheckFunc(
					log.check(&vmid, "config", "shutdown", "start"),
					checkSimConfig(env, &vmid, map[string]string{"cpu": "host"}, nil),
					checkPower(env, "running")),
			},
			{
				// A well-formed name the node does not list (GET .../capabilities/qemu/cpu):
				// refused at plan on cpu_type, naming a few it does, before any write (the
				// config write would refuse it, CPUConfig.pm validate_vm_cpu_conf).
				PreConfig:   func() { log.reset() },
				Config:      cfg("x86-64-v5", ""),
				ExpectError: regexp.MustCompile(`(?s)cpu_type.*"x86-64-v5" is not a CPU model node\s+\S+\s+knows.*such\s+as\s+x86-64-v2,`),
			},
			{
				// Nothing was written to the VM by the refused plan.
				Config:            cfg("host", ""),
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: shows("host"),
				Check:             log.check(&vmid),
			},
		},
	})
}

// TestAccProxyVM_cpuUnits: cpu_units is written at create as cpuunits, shown by both data
// sources, and changed in place with no power request (qemu-server applies cpuunits to a
// running VM at once); a weight changed outside Terraform shows as drift and is written
// back, again without a restart; a value outside 1 to 262144 is refused at plan on
// cpu_units, before any write; left out, the VM keeps the weight it has.
func TestAccProxyVM_cpuUnits(t *testing.T) {
	f := newPowerFixture(t, "cpuu", "reads the simulator's request log")
	env, c, name, base, log := f.env, f.c, f.name, f.base, f.log
	cfg := func(units string) string {
		return base + vmResource(env, name, "  cores = 1\n  memory_mib = 512\n"+units) + `
data "proxy_vm" "x" {
  name       = proxy_vm.test.name
  depends_on = [proxy_vm.test]
}
data "proxy_vms" "f" {
  name_prefix = proxy_vm.test.name
  depends_on  = [proxy_vm.test]
}
`
	}
	var vmid int
	same := statecheck.CompareValue(compare.ValuesSame())
	shows := func(units int64) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			same.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
			statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cpu_units"), knownvalue.Int64Exact(units)),
			statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("cpu_units"), knownvalue.Int64Exact(units)),
			statecheck.ExpectKnownValue("data.proxy_vms.f", tfjsonpath.New("vms").AtSliceIndex(0).AtMapKey("cpu_units"), knownvalue.Int64Exact(units)),
		}
	}
	f.run(t, []resource.TestStep{
		{
			Config:      cfg("  cpu_units = 0\n"),
			ExpectError: regexp.MustCompile(`(?s)cpu_units.*must be between 1 and 262144`),
		},
		{
			Config:            cfg("  cpu_units = 300\n"),
			ConfigStateChecks: shows(300),
			Check: resource.ComposeTestCheckFunc(saveVMID(&vmid),
				checkSimConfig(env, &vmid, map[string]string{"cpuunits": "300"}, nil),
				func(*terraform.State) error { log.reset(); return nil }),
		},
		{
			Config: cfg("  cpu_units = 500\n"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
			}},
			ConfigStateChecks: shows(500),
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "config"),
				checkSimConfig(env, &vmid, map[string]string{"cpuunits": "500"}, map[string]string{"cpuunits": ""}),
				checkPower(env, "running")),
		},
		{
			// An admin changes the weight in Proxmox: the plan shows the drift and the apply
			// writes it back, without a restart.
			PreConfig: func() {
				putConfig(t, env, c, vmid, map[string]string{"cpuunits": "50"})
				log.reset()
			},
			Config: cfg("  cpu_units = 500\n"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cpu_units"), knownvalue.Int64Exact(500)),
			}},
			ConfigStateChecks: shows(500),
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "config"),
				checkSimConfig(env, &vmid, map[string]string{"cpuunits": "500"}, nil),
				checkPower(env, "running")),
		},
		{
			Config:      cfg("  cpu_units = 262145\n"),
			ExpectError: regexp.MustCompile(`(?s)cpu_units.*must be between 1 and 262144`),
		},
		{
			// Left out: nothing to change, the VM keeps its weight, and nothing was written by
			// the refused plan.
			Config:            cfg(""),
			ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			ConfigStateChecks: shows(500),
			Check:             log.check(&vmid),
		},
	})
}
