package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
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
