package provider

import (
	"fmt"
	"net/http"
	"slices"
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

// powerCalls are the VM's power requests (shutdown, stop, start) and config writes the
// simulator received since mark, in order, as "shutdown", "stop", "start", "config".
type powerLog struct {
	env  *testEnv
	mark int
}

func (p *powerLog) reset() { p.mark = len(p.env.Sim.RequestLog()) }

func (p *powerLog) calls(vmid int) []string {
	var out []string
	for _, r := range p.env.Sim.RequestLog()[p.mark:] {
		if r.VMID != vmid || r.Method == http.MethodGet {
			continue
		}
		switch {
		case strings.HasSuffix(r.Path, "/status/shutdown"):
			out = append(out, "shutdown")
		case strings.HasSuffix(r.Path, "/status/stop"):
			out = append(out, "stop")
		case strings.HasSuffix(r.Path, "/status/start"):
			out = append(out, "start")
		case strings.HasSuffix(r.Path, "/config"):
			out = append(out, "config")
		}
	}
	return out
}

// checkPowerCalls checks the requests since the last reset, then resets.
func (p *powerLog) check(vmid *int, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := p.calls(*vmid)
		p.reset()
		if !slices.Equal(got, want) {
			return fmt.Errorf("VM %d: requests %v, want %v", *vmid, got, want)
		}
		return nil
	}
}

// powerFixture is what the power acceptance tests share: a simulator with its request log
// on (they skip on a real cluster), a client of it, the VM's name, the provider block, and
// the log of the VM's power requests.
type powerFixture struct {
	env  *testEnv
	c    *cluster
	name string
	base string
	log  *powerLog
}

// newPowerFixture skips, saying why, without a simulator.
func newPowerFixture(t *testing.T, prefix, why string) *powerFixture {
	t.Helper()
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip(why)
	}
	env.Sim.EnableRequestLog()
	return &powerFixture{env: env, c: newCluster(t, env), name: vmName(prefix), base: vmProviderConfig(env, ""), log: &powerLog{env: env}}
}

// run runs steps as a parallel acceptance test whose destroy must leave no VM of the
// fixture's name.
func (f *powerFixture) run(t *testing.T, steps []resource.TestStep) {
	t.Helper()
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             f.c.checkGone(f.name),
		Steps:                    steps,
	})
}

// sized is the configuration of the fixture's VM with cores, memory and extra lines.
func (f *powerFixture) sized(cores, mem int, extra string) string {
	return f.base + vmResource(f.env, f.name, fmt.Sprintf("  cores = %d\n  memory_mib = %d\n%s", cores, mem, extra))
}

// saveVMID records the VMID of vmAddr for later steps.
func saveVMID(dst *int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		v, err := vmidOf(s, vmAddr)
		*dst = v
		return err
	}
}

// checkSimConfig checks the VM's current config values and its pending section.
func checkSimConfig(env *testEnv, vmid *int, current, pending map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vm, ok := env.Sim.VM(*vmid)
		if !ok {
			return fmt.Errorf("VM %d gone", *vmid)
		}
		for k, v := range current {
			if vm.Config[k] != v {
				return fmt.Errorf("VM %d: current %s %q, want %q", *vmid, k, vm.Config[k], v)
			}
		}
		for k, v := range pending {
			if vm.Pending[k] != v {
				return fmt.Errorf("VM %d: pending %s %q, want %q (pending %v)", *vmid, k, vm.Pending[k], v, vm.Pending)
			}
		}
		if len(pending) == 0 && len(vm.Pending) > 0 {
			return fmt.Errorf("VM %d: pending %v, want none", *vmid, vm.Pending)
		}
		return nil
	}
}

// TestAccProxyVM_gracefulRestart: a cores change on a running VM is written, then the VM
// is shut down (never stopped first) and started; the next plan is empty, the import
// plans nothing, the destroy removes it. A guest that ignores the ACPI power button (and
// whose agent does not answer) is stopped by Proxmox once shutdown_timeout has passed:
// the shutdown task logs the kill, and the restart goes on.
func TestAccProxyVM_gracefulRestart(t *testing.T) {
	f := newPowerFixture(t, "restart", "reads the simulator's request log")
	env, log := f.env, f.log
	sized := func(cores int, extra string) string { return f.sized(cores, 512, extra) }
	var vmid int
	same := statecheck.CompareValue(compare.ValuesSame())
	f.run(t, []resource.TestStep{
		{
			Config:            sized(1, ""),
			ConfigStateChecks: []statecheck.StateCheck{same.AddStateValue(vmAddr, tfjsonpath.New("vmid"))},
			Check:             resource.ComposeTestCheckFunc(saveVMID(&vmid), func(*terraform.State) error { log.reset(); return nil }),
		},
		{
			Config: sized(2, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				same.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(2)),
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
			},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "config", "shutdown", "start"),
				checkSimConfig(env, &vmid, map[string]string{"cores": "2"}, nil),
				checkPower(env, "running")),
		},
		{
			Config:           sized(2, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		},
		{
			ResourceName:            vmAddr,
			ImportState:             true,
			ImportStateVerify:       true,
			ImportStateVerifyIgnore: importIgnore,
		},
		{
			// The guest no longer acts on ACPI and its agent stopped answering: the
			// shutdown times out after 5 s and Proxmox stops the VM in the same task.
			PreConfig: func() {
				yes := true
				if err := env.Sim.SetVMState(vmid, pvesim.VMPatch{IgnoresACPI: &yes, AgentStopped: true}); err != nil {
					t.Fatal(err)
				}
				log.reset()
			},
			Config: sized(3, "  shutdown_timeout = \"5s\"\n  wait_for_ip = false"),
			ConfigStateChecks: []statecheck.StateCheck{
				same.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(3)),
			},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "config", "shutdown", "start"),
				checkForcedShutdown(env, &vmid),
				checkSimConfig(env, &vmid, map[string]string{"cores": "3"}, nil),
				checkPower(env, "running")),
		},
	})
}

// checkForcedShutdown checks the VM's last qmshutdown task: it ended OK, lasted the 5 s
// timeout (simulated), and logged that the VM was killed.
func checkForcedShutdown(env *testEnv, vmid *int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		var last *pvesim.TaskState
		for _, task := range env.Sim.State().Tasks {
			if task.Type == "qmshutdown" && task.VMID == *vmid {
				last = &task
			}
		}
		switch {
		case last == nil:
			return fmt.Errorf("VM %d: no shutdown task", *vmid)
		case last.ExitStatus != "OK" || !slices.Contains(last.Log, "VM still running - terminating now with SIGTERM"):
			return fmt.Errorf("shutdown task %s ended %q with log %q, want OK after a kill", last.UPID, last.ExitStatus, last.Log)
		case last.Ended.Sub(last.Submitted) < env.Sim.WallTime(5e9):
			return fmt.Errorf("shutdown task took %s, want the 5 s timeout (%s at this speed)", last.Ended.Sub(last.Submitted), env.Sim.WallTime(5e9))
		}
		return nil
	}
}

// TestAccProxyVM_rebootOnChangeFalse: with reboot_on_change = false a cores change on a
// running VM is written and left pending, with no power request; the state holds the
// planned value after the apply, and the next plan shows the change again (the VM runs
// with the old value); applying it again writes nothing; a restart outside Terraform
// applies it, and the plan is then empty; the import plans nothing; the destroy removes it.
func TestAccProxyVM_rebootOnChangeFalse(t *testing.T) {
	f := newPowerFixture(t, "pending", "reads the simulator's request log and pending values")
	env, log := f.env, f.log
	cfg := func(cores int) string { return f.sized(cores, 512, "  reboot_on_change = false") }
	var vmid int
	f.run(t, []resource.TestStep{
		{
			Config: cfg(1),
			Check:  resource.ComposeTestCheckFunc(saveVMID(&vmid), func(*terraform.State) error { log.reset(); return nil }),
		},
		{
			Config: cfg(2),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(2)),
			},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "config"),
				checkSimConfig(env, &vmid, map[string]string{"cores": "1"}, map[string]string{"cores": "2"}),
				checkPower(env, "running")),
			// The refresh after the apply reads what the VM runs with: cores 1.
			ExpectNonEmptyPlan: true,
		},
		{
			// The plan shows the pending change again; applying it writes nothing.
			Config: cfg(2),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(2)),
			}},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid),
				checkSimConfig(env, &vmid, map[string]string{"cores": "1"}, map[string]string{"cores": "2"})),
			ExpectNonEmptyPlan: true,
		},
		{
			// Stopped and started outside Terraform: the pending cores apply.
			PreConfig: func() {
				for _, p := range []string{"stopped", "running"} {
					if err := env.Sim.SetVMState(vmid, pvesim.VMPatch{Power: p}); err != nil {
						t.Fatal(err)
					}
				}
			},
			Config:           cfg(2),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check:            checkSimConfig(env, &vmid, map[string]string{"cores": "2"}, nil),
		},
		{
			ResourceName:            vmAddr,
			ImportState:             true,
			ImportStateVerify:       true,
			ImportStateVerifyIgnore: append(slices.Clone(importIgnore), "reboot_on_change"),
		},
	})
}

// TestAccProxyVM_memoryHotplug: on a VM whose hotplug option names memory (numa on), a
// memory change applies to the running VM with one config write and no power request,
// the address stays known in the plan, and the next plan is empty.
func TestAccProxyVM_memoryHotplug(t *testing.T) {
	f := newPowerFixture(t, "hotplug", "sets the simulated VM's hotplug option")
	env, log := f.env, f.log
	cfg := func(mem int) string { return f.sized(1, mem, "") }
	var vmid int
	f.run(t, []resource.TestStep{
		{
			Config: cfg(1024),
			Check: resource.ComposeTestCheckFunc(saveVMID(&vmid), func(*terraform.State) error {
				// Memory hotplug is set, and the VM restarted outside to run with it.
				for _, p := range []pvesim.VMPatch{
					{Config: map[string]string{"hotplug": "network,disk,usb,memory", "numa": "1"}},
					{Power: "stopped"}, {Power: "running"},
				} {
					if err := env.Sim.SetVMState(vmid, p); err != nil {
						return err
					}
				}
				log.reset()
				return nil
			}),
		},
		{
			Config: cfg(2048),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("memory_mib"), knownvalue.Int64Exact(2048)),
			},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "config"),
				checkSimConfig(env, &vmid, map[string]string{"memory": "2048"}, nil),
				checkPower(env, "running")),
		},
		{
			Config:           cfg(2048),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		},
		{
			ResourceName:            vmAddr,
			ImportState:             true,
			ImportStateVerify:       true,
			ImportStateVerifyIgnore: importIgnore,
		},
	})
}

// putConfig writes params to the VM's config through the API, as an admin would in
// Proxmox: on a running VM, cores stays pending.
func putConfig(t *testing.T, env *testEnv, c *cluster, vmid int, params map[string]string) {
	t.Helper()
	vm, ok := env.Sim.VM(vmid)
	if !ok {
		t.Fatalf("VM %d gone", vmid)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	if err := c.api.SetVMConfig(ctx, vm.Node, vmid, params); err != nil {
		t.Fatal(err)
	}
}

// TestAccProxyVM_pendingReverted: a cores value pending in the VM's config that differs
// from the configuration never applies through Terraform. A deferred change reverted in
// the configuration plans nothing and writes nothing; the apply with a memory change and
// reboot_on_change = true writes the configured cores before the restart, so the VM comes
// back with them. A cores value written outside Terraform while the VM runs plans nothing,
// and is written back before started = false shuts the VM down, so the stopped VM holds the
// configured value.
func TestAccProxyVM_pendingReverted(t *testing.T) {
	f := newPowerFixture(t, "revert", "reads the simulator's request log and pending values")
	env, c, log := f.env, f.c, f.log
	cfg := f.sized
	var vmid int
	f.run(t, []resource.TestStep{
		{
			Config: cfg(1, 512, ""),
			Check:  resource.ComposeTestCheckFunc(saveVMID(&vmid), func(*terraform.State) error { log.reset(); return nil }),
		},
		{
			Config:             cfg(2, 512, "  reboot_on_change = false"),
			Check:              checkSimConfig(env, &vmid, map[string]string{"cores": "1"}, map[string]string{"cores": "2"}),
			ExpectNonEmptyPlan: true,
		},
		{
			// Reverted: the VM runs with the configured cores 1, so nothing to change (a
			// warning names the pending 2); nothing is written.
			PreConfig: func() { log.reset() },
			Config:    cfg(1, 512, "  reboot_on_change = false"),
			Check: resource.ComposeTestCheckFunc(
				checkSimConfig(env, &vmid, map[string]string{"cores": "1"}, map[string]string{"cores": "2"}),
				log.check(&vmid)),
		},
		{
			PreConfig: func() { log.reset() },
			Config:    cfg(1, 1024, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(1)),
			}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(1)),
			},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "config", "shutdown", "start"),
				checkSimConfig(env, &vmid, map[string]string{"cores": "1", "memory": "1024"}, nil),
				checkPower(env, "running")),
		},
		{
			// cores 8 written outside Terraform while the VM runs: pending, and the VM runs
			// with the configured 1: no change planned, nothing written.
			PreConfig: func() {
				putConfig(t, env, c, vmid, map[string]string{"cores": "8"})
				log.reset()
			},
			Config: cfg(1, 1024, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectEmptyPlan(),
			}},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid),
				checkSimConfig(env, &vmid, map[string]string{"cores": "1"}, map[string]string{"cores": "8"})),
		},
		{
			// started = false: the configured cores 1 is written before the shutdown, so
			// the pending 8 never applies.
			PreConfig: func() { log.reset() },
			Config:    cfg(1, 1024, "  started = false"),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(1)),
			},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "config", "shutdown"),
				checkSimConfig(env, &vmid, map[string]string{"cores": "1"}, nil),
				checkPower(env, "stopped")),
		},
	})
}

// TestAccProxyVM_memoryHotplugPending: hotplug (naming memory) and numa written by an
// admin to a running VM stay pending (a restart applies them), so the VM has no memory
// hotplug yet: the plan of a memory change says the VM restarts (the address unknown),
// and the apply restarts it.
func TestAccProxyVM_memoryHotplugPending(t *testing.T) {
	f := newPowerFixture(t, "hotpend", "reads the simulator's request log and pending values")
	env, c, log := f.env, f.c, f.log
	cfg := func(mem int) string { return f.sized(1, mem, "") }
	var vmid int
	f.run(t, []resource.TestStep{
		{
			Config: cfg(1024),
			Check: resource.ComposeTestCheckFunc(saveVMID(&vmid), func(*terraform.State) error {
				putConfig(t, env, c, vmid, map[string]string{"hotplug": "network,disk,usb,memory", "numa": "1"})
				log.reset()
				return nil
			}),
		},
		{
			Config: cfg(2048),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")),
			}},
			Check: resource.ComposeTestCheckFunc(
				checkSimConfig(env, &vmid, map[string]string{"memory": "2048", "hotplug": "network,disk,usb,memory", "numa": "1"}, nil),
				log.check(&vmid, "config", "shutdown", "start"),
				checkPower(env, "running")),
		},
	})
}

// TestAccProxyVM_interruptedUpdateConverges: an update interrupted after its config write
// leaves the new cores pending and the VM running with the old ones; the next plan shows
// the change again, with its restart, and its apply converges.
func TestAccProxyVM_interruptedUpdateConverges(t *testing.T) {
	f := newPowerFixture(t, "interr", "writes the simulator's config directly")
	env, c, log := f.env, f.c, f.log
	cfg := func(cores int) string { return f.sized(cores, 512, "") }
	var vmid int
	f.run(t, []resource.TestStep{
		{Config: cfg(1), Check: saveVMID(&vmid)},
		{
			// What the interrupted apply left: cores 2 written, pending, no restart.
			PreConfig: func() {
				putConfig(t, env, c, vmid, map[string]string{"cores": "2"})
				log.reset()
			},
			Config: cfg(2),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")),
			}},
			Check: resource.ComposeTestCheckFunc(
				log.check(&vmid, "shutdown", "start"),
				checkSimConfig(env, &vmid, map[string]string{"cores": "2"}, nil)),
		},
		{
			Config:           cfg(2),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		},
	})
}
