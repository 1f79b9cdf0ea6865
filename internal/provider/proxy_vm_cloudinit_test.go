package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/acctest"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

const testDigestKey = "test-digest-key-0123456789"

var digestRE = regexp.MustCompile(`^hmac-sha256:[0-9a-f]{64}$`)

// checkNoText fails when text appears anywhere in the state's attributes.
func checkNoText(addr, text string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s is not in the state", addr)
		}
		for k, v := range rs.Primary.Attributes {
			if strings.Contains(v, text) {
				return fmt.Errorf("the state's %s holds the cloud_init_wo text", k)
			}
		}
		return nil
	}
}

// checkMarkDigest checks that the VM's mark carries the digest the state holds.
func checkMarkDigest(c *cluster, addr string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, err := vmidOf(s, addr)
		if err != nil {
			return err
		}
		want := s.RootModule().Resources[addr].Primary.Attributes["cloud_init_digest"]
		got := proxmox.ParseMarkExtra(c.config(vmid)["description"]).UserDataDigest
		if want == "" || got != want {
			return fmt.Errorf("the mark's digest %q, the state's %q", got, want)
		}
		return nil
	}
}

// TestAccProxyVM_cloudInitWO: a VM made with the write-only cloud_init_wo boots with it,
// keeps it out of the state, and carries its keyed digest in the state and the mark; the
// same configuration plans nothing; an import block with it plans nothing (the digest read
// back from the mark); a changed text replaces the VM; moving the same text to cloud_init
// does not.
func TestAccProxyVM_cloudInitWO(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("wo")
	ud1 := cloudInit("sentinel-wo-" + acctest.RandString(12))
	ud2 := cloudInit("sentinel-wo-" + acctest.RandString(12))
	provider := vmProviderConfig(env, fmt.Sprintf("  cloud_init_digest_key = %q\n", testDigestKey))
	withWO := func(ud string) string {
		return provider + vmResourceBare(env, name, "  machine_type = \"small\"\n  cloud_init_wo = "+hclString(ud))
	}

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: withWO(ud1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cloud_init_wo"), knownvalue.Null()),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cloud_init_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cloud_init"), knownvalue.Null()),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cloud_init_digest"), knownvalue.StringRegexp(digestRE)),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkSeed(env, vmAddr, ud1),
					checkNoText(vmAddr, "sentinel-wo-"),
					checkMarkDigest(c, vmAddr),
				),
			},
			{
				Config:           withWO(ud1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The import plan is empty: 0 to add, 0 to change, 0 to destroy.
				Config:          withWO(ud1),
				ResourceName:    vmAddr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop),
				}},
			},
			{
				Config: withWO(ud2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(checkSeed(env, vmAddr, ud2), checkMarkDigest(c, vmAddr), checkNoText(vmAddr, "sentinel-wo-")),
			},
			{
				// The same text, now in cloud_init: recorded, no replacement.
				Config: provider + vmResourceBare(env, name, "  machine_type = \"small\"\n  cloud_init = "+hclString(ud2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
			},
			{
				// And back to cloud_init_wo with the same text: no replacement either.
				Config: withWO(ud2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cloud_init"), knownvalue.Null()),
				},
			},
		},
	})
}

// TestAccProxyVM_cloudInitWORefusals: both cloud_init and cloud_init_wo, and cloud_init_wo
// without a digest key, are refused at plan on the attribute, before anything is made.
func TestAccProxyVM_cloudInitWORefusals(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("worf")
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: vmProviderConfig(env, fmt.Sprintf("  cloud_init_digest_key = %q\n", testDigestKey)) +
					vmResource(env, name, "  machine_type = \"small\"\n  cloud_init = \"a\"\n  cloud_init_wo = \"a\""),
				ExpectError: regexp.MustCompile(`(?s)cloud_init_wo.*cloud_init|cloud_init.*cloud_init_wo`),
				PlanOnly:    true,
			},
			{
				Config:      vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  cloud_init_wo = \"#cloud-config\\n\""),
				ExpectError: regexp.MustCompile(`(?s)cloud_init_digest_key`),
				PlanOnly:    true,
			},
		},
	})
}
