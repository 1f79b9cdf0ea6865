package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The ha attribute of proxy_vm (decision: ha-placement) against the simulator's HA model:
// the HA resource follows the configuration, a destroy leaves none, a node loss recovered by
// HA plans no replacement and no migration back, and an HA resource the provider did not
// make is never changed. Three nodes: with two, one down leaves no quorum and HA stops.

var haNodes3 = []string{"pve1", "pve2", "pve3"}

// simHA checks the state's VM's HA resource in the simulator: its configured state and
// values (nil: no HA resource).
func simHA(env *testEnv, want *[4]string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, err := vmidOf(s, vmAddr)
		if err != nil {
			return err
		}
		r, ok := env.Sim.HAResourceOf(vmid)
		switch {
		case want == nil && ok:
			return fmt.Errorf("VM %d has HA resource %+v, want none", vmid, r)
		case want == nil:
			return nil
		case !ok:
			return fmt.Errorf("VM %d has no HA resource", vmid)
		}
		got := [4]string{r.State, ptrText(r.MaxRestart), ptrText(r.MaxRelocate), ptrText(r.Failback)}
		if got != *want {
			return fmt.Errorf("VM %d HA resource (state, max_restart, max_relocate, failback) = %v, want %v", vmid, got, *want)
		}
		return nil
	}
}

func ptrText[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// simPower checks the state's VM's power in the simulator.
func simPower(env *testEnv, want string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, err := vmidOf(s, vmAddr)
		if err != nil {
			return err
		}
		if vm, _ := env.Sim.VM(vmid); vm.Power != want {
			return fmt.Errorf("VM %d is %s, want %s", vmid, vm.Power, want)
		}
		return nil
	}
}

// noHALeft is a CheckDestroy: no HA resource but those listed remain.
func noHALeft(env *testEnv, keep ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, r := range env.Sim.HAResources() {
			found := false
			for _, k := range keep {
				found = found || r.SID == k
			}
			if !found {
				return fmt.Errorf("HA resource %s left after the destroy: %+v", r.SID, r)
			}
		}
		return nil
	}
}

// inPlaceOnly is a plan check: the VM is updated in place or left alone, never replaced.
type inPlaceOnly struct{ addr string }

func (c inPlaceOnly) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.addr {
			continue
		}
		if rc.Change.Actions.Replace() || rc.Change.Actions.Delete() || rc.Change.Actions.Create() {
			resp.Error = fmt.Errorf("%s planned %v, want an in-place update or nothing", c.addr, rc.Change.Actions)
		}
		return
	}
	resp.Error = fmt.Errorf("%s is not in the plan", c.addr)
}

func TestAccProxyVM_haLifecycle(t *testing.T) {
	env, c := multiNodeEnv(t, haNodes3...)
	name := vmName("ha")
	base := "  machine_type = \"small\"\n  node = \"pve1\"\n  cloud_init = " + hclString(cloudInit("ha")) + "\n"
	config := func(extra string) string { return vmProviderConfig(env, "") + vmResource(env, name, base+extra) }
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate)}}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(c.checkGone(name), noHALeft(env)),
		Steps: []resource.TestStep{
			{
				// started = false contradicts HA's started: refused at plan, nothing made.
				Config:      config("  started = false\n  ha = {}\n"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`started is false, but ha.state is "started"`),
			},
			{
				Config: config("  ha = { max_restart = 2, max_relocate = 3, failback = false }\n"),
				Check: resource.ComposeTestCheckFunc(simVMOn(env, "pve1"),
					simHA(env, &[4]string{"started", "2", "3", "false"})),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ha").AtMapKey("state"), knownvalue.StringExact("started")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ha").AtMapKey("max_relocate"), knownvalue.Int64Exact(3)),
				},
			},
			{
				Config:           config("  ha = { max_restart = 4 }\n"),
				ConfigPlanChecks: update,
				Check:            simHA(env, &[4]string{"started", "4", "1", "true"}),
			},
			{
				Config:           config(""),
				ConfigPlanChecks: update,
				Check:            resource.ComposeTestCheckFunc(simHA(env, nil), simPower(env, "running")),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ha"), knownvalue.Null()),
				},
			},
			{
				// Added to an existing VM, kept stopped by HA.
				Config:           config("  started = false\n  ha = { state = \"stopped\" }\n"),
				ConfigPlanChecks: update,
				Check:            resource.ComposeTestCheckFunc(simHA(env, &[4]string{"stopped", "1", "1", "true"}), simPower(env, "stopped")),
			},
			{
				// Started again: the start is HA's (hastart), and the apply waits for it.
				Config:           config("  ha = {}\n"),
				ConfigPlanChecks: update,
				Check:            resource.ComposeTestCheckFunc(simHA(env, &[4]string{"started", "1", "1", "true"}), simPower(env, "running")),
			},
			{
				// Removed outside Terraform: the refresh sees it gone, the apply adds it again.
				PreConfig: func() {
					ctx, cancel := c.ctx()
					defer cancel()
					res, err := c.resources()
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range res {
						if r.Name == name {
							if err := c.api.DeleteHAResource(ctx, fmt.Sprintf("vm:%d", r.VMID), true); err != nil {
								t.Fatal(err)
							}
						}
					}
				},
				Config:           config("  ha = {}\n"),
				ConfigPlanChecks: update,
				Check:            simHA(env, &[4]string{"started", "1", "1", "true"}),
			},
		},
	})
}

// TestAccProxyVM_haNodeLossNoReplacement: the VM's node goes down; HA fences it and starts
// the VM on another node; the next plan changes nothing on the VM (no replacement, no
// migration back), the VM stays where HA put it, and the destroy leaves nothing.
func TestAccProxyVM_haNodeLossNoReplacement(t *testing.T) {
	env, c := multiNodeEnv(t, haNodes3...)
	name := vmName("haloss")
	config := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  node = \"pve1\"\n  cloud_init = "+
		hclString(cloudInit("haloss"))+"\n  ha = {}\n")
	var vmid int
	var recovered string
	vmidSame := statecheck.CompareValue(compare.ValuesSame())
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(c.checkGone(name), noHALeft(env)),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeTestCheckFunc(simVMOn(env, "pve1"), simHA(env, &[4]string{"started", "1", "1", "true"}),
					func(s *terraform.State) error {
						var err error
						vmid, err = vmidOf(s, vmAddr)
						return err
					}),
				ConfigStateChecks: []statecheck.StateCheck{vmidSame.AddStateValue(vmAddr, tfjsonpath.New("vmid"))},
			},
			{
				PreConfig: func() { recovered = nodeLoss(t, env, c, vmid, "pve1") },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					inPlaceOnly{vmAddr},
				}},
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						if got := s.RootModule().Resources[vmAddr].Primary.Attributes["node"]; got != recovered {
							return fmt.Errorf("state node %s, want %s (where HA put it)", got, recovered)
						}
						return nil
					},
					func(*terraform.State) error {
						if vm, _ := env.Sim.VM(vmid); vm.Node != recovered || vm.Power != "running" {
							return fmt.Errorf("VM %d after the apply: %+v, want running on %s (never migrated back)", vmid, vm, recovered)
						}
						return nil
					}),
				ConfigStateChecks: []statecheck.StateCheck{vmidSame.AddStateValue(vmAddr, tfjsonpath.New("vmid"))},
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// nodeLoss takes node down with the VM on it, waits until HA runs the VM on another node,
// brings node back, and returns where the VM runs. The VM's seed ISO is copied to the other
// nodes first, as an iso_storage every node reads would hold it (a seed on node-local
// storage keeps HA from starting the VM elsewhere).
func nodeLoss(t *testing.T, env *testEnv, c *cluster, vmid int, node string) string {
	t.Helper()
	vm, ok := env.Sim.VM(vmid)
	if !ok || vm.Node != node {
		t.Fatalf("VM %d before the node loss: %+v, want it on %s", vmid, vm, node)
	}
	volid, _, _ := strings.Cut(vm.Config["ide2"], ",")
	data, ok := env.Sim.ISO(node, volid)
	if !ok {
		t.Fatalf("no seed %s on %s", volid, node)
	}
	_, file, _ := strings.Cut(volid, ":iso/")
	for _, n := range env.Nodes {
		if n != node {
			if err := env.Sim.AddISO(n, env.ISOStorage, file, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := env.Sim.SetNodeDown(node, true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		r, _ := env.Sim.HAResourceOf(vmid)
		v, _ := env.Sim.VM(vmid)
		if r.CRMState == "started" && v.Node != node && v.Power == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HA did not recover VM %d within a minute: %+v, VM %+v", vmid, r, v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := env.Sim.SetNodeDown(node, false); err != nil {
		t.Fatal(err)
	}
	v, _ := env.Sim.VM(vmid)
	// The copies on the nodes HA did not choose are this test's, not the provider's.
	ctx, cancel := c.ctx()
	defer cancel()
	for _, n := range env.Nodes {
		if n != node && n != v.Node {
			if _, err := c.api.DeleteVolume(ctx, n, env.ISOStorage, volid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return v.Node
}

// TestAccProxyVM_haForeignResourceUntouched: an HA resource made by hand for a VM that is
// not this resource's survives the create, update and destroy of a proxy VM with ha.
func TestAccProxyVM_haForeignResourceUntouched(t *testing.T) {
	env, _ := multiNodeEnv(t, haNodes3...)
	name := vmName("hafor")
	const foreign = 4242
	if err := env.Sim.AddVM(pvesim.VMSpec{VMID: foreign, Node: "pve2", Name: "made-by-hand", Power: "running"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Sim.AddHAResource(foreign, "started"); err != nil {
		t.Fatal(err)
	}
	before, _ := env.Sim.HAResourceOf(foreign)
	untouched := func(*terraform.State) error {
		r, ok := env.Sim.HAResourceOf(foreign)
		if !ok || r.State != before.State || r.MaxRestart != nil || r.MaxRelocate != nil || r.Failback != nil {
			return fmt.Errorf("the foreign HA resource changed: %+v -> %+v (present %v)", before, r, ok)
		}
		if vm, ok := env.Sim.VM(foreign); !ok || vm.Power != "running" {
			return fmt.Errorf("the foreign VM changed: %+v (present %v)", vm, ok)
		}
		return nil
	}
	base := "  machine_type = \"small\"\n  node = \"pve1\"\n  cloud_init = " + hclString(cloudInit("hafor")) + "\n"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             resource.ComposeTestCheckFunc(untouched, noHALeft(env, "vm:4242")),
		Steps: []resource.TestStep{
			{
				Config: vmProviderConfig(env, "") + vmResource(env, name, base+"  ha = { max_restart = 3 }\n"),
				Check:  resource.ComposeTestCheckFunc(untouched, simHA(env, &[4]string{"started", "3", "1", "true"})),
			},
			{
				Config: vmProviderConfig(env, "") + vmResource(env, name, base),
				Check:  resource.ComposeTestCheckFunc(untouched, simHA(env, nil)),
			},
		},
	})
}
