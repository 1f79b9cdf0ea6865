package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The examples a reader copies whole (a terraform block, a provider block, resources):
// applied as written but for what names the reader's cluster, which the test rewrites to
// the simulator's (endpoint, token and CA, which the examples take from the environment,
// the nodes and the seed storage).

// terraformBlockRE matches a top-level terraform block (its body holds one level of nested
// blocks: required_providers and the provider's entry).
var terraformBlockRE = regexp.MustCompile(`(?ms)^terraform \{\n.*?^\}\n`)

// readRepoExample reads a file of examples/ by its path under examples/.
func readRepoExample(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// standaloneExample is a whole example made to run against env: its terraform block removed
// (the test serves the provider), its provider block given env's endpoint, token and CA, and
// its nodes and iso_storage lines pointed at env's.
func standaloneExample(t *testing.T, env *testEnv, example string) string {
	t.Helper()
	if !terraformBlockRE.MatchString(example) || !strings.Contains(example, "provider \"proxy\" {\n") {
		t.Fatalf("the example has no terraform block or no provider block: the rewrite would be wrong:\n%s", example)
	}
	out := terraformBlockRE.ReplaceAllString(example, "")
	conn := fmt.Sprintf("provider \"proxy\" {\n  endpoint = %q\n  api_token = %q\n  ca_pem = %q\n", env.Endpoint, env.Token, env.CAPEM)
	out = strings.Replace(out, "provider \"proxy\" {\n", conn, 1)
	for attr, value := range map[string]string{"nodes": hclList(env.Nodes), "iso_storage": fmt.Sprintf("%q", env.ISOStorage)} {
		re := regexp.MustCompile(`(?m)^(\s*` + attr + `\s*=\s*)[^#\n]*`)
		if !re.MatchString(out) {
			t.Fatalf("the example's provider block sets no %s", attr)
		}
		out = re.ReplaceAllString(out, "${1}"+value+" ")
	}
	return out
}

// TestAccExamples_gettingStarted applies the index's Getting Started configuration
// (examples/getting-started/main.tf) as written: one proxy runs with the example's
// cloud-init, its output is the proxy's address and port, and the next plan is empty.
func TestAccExamples_gettingStarted(t *testing.T) {
	example := readRepoExample(t, "getting-started/main.tf")
	env := exampleEnv(t)
	c := newCluster(t, env)
	cfg := standaloneExample(t, env, example)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone("proxy-egress-1"),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("proxy_vm.egress", tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue("proxy_vm.egress", tfjsonpath.New("memory_mib"), knownvalue.Int64Exact(1024)),
					statecheck.ExpectKnownOutputValue("proxy", knownvalue.StringRegexp(regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+:3128$`))),
				},
				Check: c.checkOneVM("proxy_vm.egress", "proxy-egress-1"),
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// resourceExampleEnv is a fresh simulator with nodes for the proxy_vm examples that are
// resources only (the provider block comes from the test); it skips on a real cluster.
func resourceExampleEnv(t *testing.T, nodes ...string) *testEnv {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	env := newTestEnv(t, pvesim.Options{Nodes: nodes})
	if env.Sim == nil {
		t.Skip("the proxy_vm examples name the simulator's nodes")
	}
	return env
}

// TestAccExamples_pair applies examples/resources/proxy_vm/pair.tf: one VM on each node the
// variable names, and an empty plan after.
func TestAccExamples_pair(t *testing.T) {
	example := readExample(t, "pair.tf")
	env := resourceExampleEnv(t, "pv1-1", "pv1-2")
	c := newCluster(t, env)
	cfg := env.ProviderConfig("") + example
	vars := config.Variables{"proxy_pair_nodes": config.ListVariable(config.StringVariable("pv1-1"), config.StringVariable("pv1-2"))}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone("proxy-pair-1", "proxy-pair-2"),
		Steps: []resource.TestStep{
			{
				Config: cfg, ConfigVariables: vars,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("proxy_vm.pair[0]", tfjsonpath.New("node"), knownvalue.StringExact("pv1-1")),
					statecheck.ExpectKnownValue("proxy_vm.pair[1]", tfjsonpath.New("node"), knownvalue.StringExact("pv1-2")),
					statecheck.ExpectKnownOutputValue("proxy_pair", knownvalue.ListSizeExact(2)),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					c.checkOneVM("proxy_vm.pair.0", "proxy-pair-1"),
					c.checkOneVM("proxy_vm.pair.1", "proxy-pair-2"),
				),
			},
			{
				Config: cfg, ConfigVariables: vars,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccExamples_restart applies examples/resources/proxy_vm/restart.tf, then changes its
// cloud-init: the change is an update in place (cloud_init_change = "restart"), the VMID stays.
func TestAccExamples_restart(t *testing.T) {
	example := readExample(t, "restart.tf")
	changed := strings.Replace(example, "10.20.0.0/16", "10.30.0.0/16", 1)
	if changed == example {
		t.Fatal("restart.tf no longer allows 10.20.0.0/16: update the change this test makes")
	}
	env := resourceExampleEnv(t, exampleNode)
	c := newCluster(t, env)
	var vmid string
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone("proxy-acl"),
		Steps: []resource.TestStep{
			{
				Config: env.ProviderConfig("") + example,
				Check: resource.ComposeAggregateTestCheckFunc(
					c.checkOneVM("proxy_vm.acl", "proxy-acl"),
					func(s *terraform.State) error {
						vmid = s.RootModule().Resources["proxy_vm.acl"].Primary.Attributes["vmid"]
						return nil
					},
				),
			},
			{
				Config: env.ProviderConfig("") + changed,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("proxy_vm.acl", plancheck.ResourceActionUpdate),
				}},
				Check: func(s *terraform.State) error {
					if got := s.RootModule().Resources["proxy_vm.acl"].Primary.Attributes["vmid"]; got != vmid {
						return fmt.Errorf("VMID %s after the cloud-init change, want %s (restarted in place)", got, vmid)
					}
					return nil
				},
			},
		},
	})
}

// TestAccExamples_createBeforeDestroy applies examples/resources/proxy_vm/create-before-destroy.tf,
// then changes its cloud-init: the replacement creates the new VM before destroying the old, and
// one VM of that name is left.
func TestAccExamples_createBeforeDestroy(t *testing.T) {
	example := readExample(t, "create-before-destroy.tf")
	changed := strings.Replace(example, "packages: [squid]", "packages: [squid, curl]", 1)
	if changed == example {
		t.Fatal("create-before-destroy.tf installs no squid package list: update the change this test makes")
	}
	env := resourceExampleEnv(t, exampleNode)
	c := newCluster(t, env)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone("proxy-edge"),
		Steps: []resource.TestStep{
			{Config: env.ProviderConfig("") + example, Check: c.checkOneVM("proxy_vm.edge", "proxy-edge")},
			{
				Config: env.ProviderConfig("") + changed,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("proxy_vm.edge", plancheck.ResourceActionCreateBeforeDestroy),
				}},
				Check: c.checkOneVM("proxy_vm.edge", "proxy-edge"),
			},
		},
	})
}

// TestAccExamples_cloudInitWO applies examples/resources/proxy_vm/cloud-init-wo.tf with the
// digest key its comment asks for: the VM runs with a digest and no text in the state, and
// the next plan is empty.
func TestAccExamples_cloudInitWO(t *testing.T) {
	example := readExample(t, "cloud-init-wo.tf")
	if !strings.Contains(example, "cloud_init_digest_key") {
		t.Fatal("cloud-init-wo.tf no longer says the provider needs cloud_init_digest_key")
	}
	env := resourceExampleEnv(t, exampleNode)
	c := newCluster(t, env)
	cfg := env.ProviderConfig(`  cloud_init_digest_key = "example-digest-key-0123456789"`+"\n") + example
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone("proxy-private"),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("proxy_vm.private", tfjsonpath.New("cloud_init_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue("proxy_vm.private", tfjsonpath.New("cloud_init_digest"), knownvalue.StringRegexp(regexp.MustCompile(`^hmac-sha256:[0-9a-f]{64}$`))),
				},
				Check: c.checkOneVM("proxy_vm.private", "proxy-private"),
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
