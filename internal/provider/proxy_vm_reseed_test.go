package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/acctest"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// checkGuestRan checks (simulator) that the guest's last cloud-init run read userData, from a
// seed whose instance-id is want (the name: the create's seed) or, with want "", another one
// than the name (a seed swapped in place).
func checkGuestRan(env *testEnv, vmid *int, name, userData, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		seed, ok := env.Sim.GuestSeed(*vmid)
		if !ok {
			return fmt.Errorf("VMID %d booted without a seed", *vmid)
		}
		if string(seed.UserData) != userData {
			return fmt.Errorf("VMID %d: cloud-init ran user-data %q, want %q", *vmid, seed.UserData, userData)
		}
		if want != "" && seed.InstanceID != want || want == "" && (seed.InstanceID == name || !strings.HasPrefix(seed.InstanceID, name+"-")) {
			return fmt.Errorf("VMID %d: instance-id %q (want %q; \"\" is a new one)", *vmid, seed.InstanceID, want)
		}
		return nil
	}
}

// checkOneSeed checks that VM name has exactly one seed ISO, the one its ide2 names.
func checkOneSeed(c *cluster, vmid *int, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		seeds, err := c.seeds(name)
		if err != nil {
			return err
		}
		ide2, _, _ := strings.Cut(c.config(*vmid)["ide2"], ",")
		if len(seeds) != 1 || !strings.HasSuffix(seeds[0], "/"+ide2) {
			return fmt.Errorf("seeds of %s: %v, want only the one ide2 names (%s)", name, seeds, ide2)
		}
		return nil
	}
}

// TestAccProxyVM_cloudInitRestart: with cloud_init_change = "restart", a cloud_init change
// is an update: the same VMID and MAC, the guest restarted (shutdown, start) and running the
// new user-data from a seed with a new instance-id, one seed left, and an empty plan after.
// Then the old seed's delete fails (a task fault in the simulator): the apply fails naming
// it, and the next apply of the same configuration converges to one seed again. Last, a
// static address set in place: the same VMID and MAC, the guest on the static address.
func TestAccProxyVM_cloudInitRestart(t *testing.T) {
	f := newPowerFixture(t, "reseed", "reads the guest's seed and the request log in the simulator")
	env, c, name, log := f.env, f.c, f.name, f.log
	// With a digest key: the digest in the VM's mark follows the change, so an import reads it back.
	base := vmProviderConfig(env, fmt.Sprintf("  cloud_init_digest_key = %q\n", testDigestKey))
	ud1, ud2, ud3 := cloudInit("v1-"+acctest.RandString(6)), cloudInit("v2-"+acctest.RandString(6)), cloudInit("v3-"+acctest.RandString(6))
	cfgNet := func(ud, net string) string {
		return base + vmResource(env, name, "  machine_type = \"small\"\n  cloud_init_change = \"restart\"\n  cloud_init = "+hclString(ud)+"\n"+net)
	}
	cfg := func(ud string) string { return cfgNet(ud, "") }
	var vmid int
	sameVMID := statecheck.CompareValue(compare.ValuesSame())
	sameMAC := statecheck.CompareValue(compare.ValuesSame())
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg(ud1),
				ConfigStateChecks: []statecheck.StateCheck{
					sameVMID.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					sameMAC.AddStateValue(vmAddr, tfjsonpath.New("mac_address")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cloud_init_change"), knownvalue.StringExact("restart")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("seed_generation"), knownvalue.Int64Exact(1)),
				},
				Check: resource.ComposeTestCheckFunc(saveVMID(&vmid), checkGuestRan(env, &vmid, name, ud1, name),
					func(*terraform.State) error { log.reset(); return nil }),
			},
			{
				Config: cfg(ud2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")), // the restart, announced
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameVMID.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					sameMAC.AddStateValue(vmAddr, tfjsonpath.New("mac_address")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("seed_generation"), knownvalue.Int64Exact(2)),
				},
				Check: resource.ComposeTestCheckFunc(
					log.check(&vmid, "config", "config", "shutdown", "start"), // the swap recorded in the mark, then ide2
					checkGuestRan(env, &vmid, name, ud2, ""),
					checkOneSeed(c, &vmid, name),
					checkMarkDigest(c, vmAddr)),
			},
			{
				Config:           cfg(ud2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The old seed's delete task fails once: the VM runs on the new seed, the
				// old one is named in the error.
				PreConfig: func() {
					env.Sim.InjectFault(pvesim.Fault{Method: "DELETE", Path: "/nodes/{node}/storage/{storage}/content/{volume}", Times: 1, TaskExit: "storage busy"})
				},
				Config:      cfg(ud3),
				ExpectError: regexp.MustCompile(`old one was not deleted`),
			},
			{
				Config: cfg(ud3),
				ConfigStateChecks: []statecheck.StateCheck{
					sameVMID.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
				},
				Check: resource.ComposeTestCheckFunc(checkGuestRan(env, &vmid, name, ud3, ""), checkOneSeed(c, &vmid, name)),
			},
			{
				// A static address set in place: the guest applies the new network-config as a
				// new instance, and the address wait confirms the static address.
				Config: cfgNet(ud3, staticHCL("10.20.0.77/24")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.77")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameVMID.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					sameMAC.AddStateValue(vmAddr, tfjsonpath.New("mac_address")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.77")),
				},
				Check: resource.ComposeTestCheckFunc(checkNetworkSeed(env, c, staticSeed("10.20.0.77/24")), checkOneSeed(c, &vmid, name)),
			},
		},
	})
}

// TestAccProxyVM_cloudInitRestartCutOffAfterItsWrite: with cloud_init_change = "restart",
// an apply of a new cloud_init cut off after its config write landed (ide2 names the next
// seed generation, with the new text) while the state kept the old text; the configuration
// is then set back to the old text. The refresh sees that ide2 names another generation
// than the one the last apply recorded: the plan is an update (with a warning), which swaps
// the seed for one with the configured text; the guest restarts on it, one seed is left,
// and the plan after it is empty.
func TestAccProxyVM_cloudInitRestartCutOffAfterItsWrite(t *testing.T) {
	f := newPowerFixture(t, "reseedcut", "writes the cut-off swap's seed into the simulator")
	env, c, name := f.env, f.c, f.name
	ud1, ud2 := cloudInit("v1-"+acctest.RandString(6)), cloudInit("v2-"+acctest.RandString(6))
	cfg := f.base + vmResource(env, name, "  machine_type = \"small\"\n  cloud_init_change = \"restart\"\n  cloud_init = "+hclString(ud1)+"\n")
	var vmid int
	var uid string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeTestCheckFunc(saveVMID(&vmid), func(s *terraform.State) error {
					uid = s.RootModule().Resources[vmAddr].Primary.Attributes["uid"]
					return nil
				}),
			},
			{
				// What the cut-off apply of ud2 left: generation 2 uploaded and named on ide2.
				PreConfig: func() {
					file := name + "-" + uid + "-2-seed.iso"
					iso, err := nocloud.Build(nocloud.Seed{Name: name, InstanceID: name + "-" + uid + "-2", UserData: []byte(ud2)})
					if err != nil {
						t.Fatal(err)
					}
					r, err := c.resource(vmid)
					if err != nil {
						t.Fatal(err)
					}
					if err := env.Sim.AddISO(r.Node, env.Sim.ISOStorage, file, iso); err != nil {
						t.Fatal(err)
					}
					c.setConfig(vmid, map[string]string{"ide2": env.Sim.ISOStorage + ":iso/" + file + ",media=cdrom"})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(checkGuestRan(env, &vmid, name, ud1, ""), checkOneSeed(c, &vmid, name)),
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccProxyVM_cloudInitRestartKilledBeforeItsWrite: with cloud_init_change = "restart",
// an apply of a new cloud_init killed (kill -9: no answer, the private state dropped) after
// it recorded the swap in the mark and uploaded the next seed generation, before the config
// write that names it; the configuration is then set back to the old text. The refresh
// finds the swap's line and the seed ide2 does not name: the plan is an update (with a
// warning), which swaps the seed again; the seed the killed apply left is deleted, the
// guest runs the configured text, the line is gone, and the plan after it is empty.
func TestAccProxyVM_cloudInitRestartKilledBeforeItsWrite(t *testing.T) {
	f := newPowerFixture(t, "reseedkill", "writes the killed swap's seed and mark line into the simulator")
	env, c, name := f.env, f.c, f.name
	ud1, ud2 := cloudInit("v1-"+acctest.RandString(6)), cloudInit("v2-"+acctest.RandString(6))
	cfg := f.base + vmResource(env, name, "  machine_type = \"small\"\n  cloud_init_change = \"restart\"\n  cloud_init = "+hclString(ud1)+"\n")
	var vmid int
	var uid string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeTestCheckFunc(saveVMID(&vmid), func(s *terraform.State) error {
					uid = s.RootModule().Resources[vmAddr].Primary.Attributes["uid"]
					return nil
				}),
			},
			{
				// What the killed apply of ud2 left: the mark's swap line, generation 2 uploaded.
				PreConfig: func() {
					file := name + "-" + uid + "-2-seed.iso"
					iso, err := nocloud.Build(nocloud.Seed{Name: name, InstanceID: name + "-" + uid + "-2", UserData: []byte(ud2)})
					if err != nil {
						t.Fatal(err)
					}
					r, err := c.resource(vmid)
					if err != nil {
						t.Fatal(err)
					}
					if err := env.Sim.AddISO(r.Node, env.Sim.ISOStorage, file, iso); err != nil {
						t.Fatal(err)
					}
					c.setConfig(vmid, map[string]string{"description": c.config(vmid)["description"] + "\n" + seedSwapLine + "=2"})
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(checkGuestRan(env, &vmid, name, ud1, ""), checkOneSeed(c, &vmid, name),
					func(*terraform.State) error {
						if d := c.config(vmid)["description"]; strings.Contains(d, seedSwapLine) {
							return fmt.Errorf("the mark keeps the swap's line: %q", d)
						}
						return nil
					}),
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// seedSwapLine is the mark key of a seed swap under way (proxmox.MarkKeySeedSwap), spelt
// out: the mark is an interface the tests pin.
const seedSwapLine = "proxy-operator-seed-swap"

// TestAccProxyVM_seedEjectedThenUpdate: a CD-ROM actor ejects the seed (ide2 none); the
// user's next in-place update (a tag) succeeds and keeps seed_generation (a refresh keeps
// it, so the update must too: no "inconsistent result after apply"), so the plans after it
// still see the eject (readSeedDrift warns while the state holds a generation). Adversary
// finding E1.
func TestAccProxyVM_seedEjectedThenUpdate(t *testing.T) {
	f := newPowerFixture(t, "eject", "ejects the seed in the simulator")
	env, c, name := f.env, f.c, f.name
	cfg := func(extra string) string { return f.base + vmResource(env, name, "  machine_type = \"small\"\n"+extra) }
	keeps := []statecheck.StateCheck{statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("seed_generation"), knownvalue.Int64Exact(1))}
	var vmid int
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{Config: cfg(""), Check: saveVMID(&vmid), ConfigStateChecks: keeps},
			{
				PreConfig: func() { c.setConfig(vmid, map[string]string{"ide2": "none,media=cdrom"}) },
				Config:    cfg("  tags = [\"eject\"]\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: keeps,
			},
			{
				Config:            cfg("  tags = [\"eject\"]\n"),
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: keeps,
			},
		},
	})
}
