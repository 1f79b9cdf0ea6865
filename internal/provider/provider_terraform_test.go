package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// These tests drive the real terraform binary (resource.UnitTest: no TF_ACC needed, no
// backend call). A proxy data source with count = 0 makes Terraform validate and configure
// the provider without reading anything.

const noReads = `
data "proxy_vms" "all" {
  count = 0
}
`

// tfProviderBlock is a valid provider block with extra pasted inside.
func tfProviderBlock(extra string) string {
	return `
provider "proxy" {
  endpoint      = "https://127.0.0.1:1"
  nodes         = ["pve1"]
  iso_storage   = "proxy-seeds"
  templates     = { "debian-13" = 9001 }
  machine_types = { small = { cores = 1, memory_mib = 512 } }
` + extra + `
}
` + noReads
}

func TestProvider_terraformValidation(t *testing.T) {
	t.Setenv(envAPIToken, "terraform@pve!ci=00000000-1111-2222-3333-444444444444")
	step := func(extra, want string) resource.TestStep {
		return resource.TestStep{Config: tfProviderBlock(extra), PlanOnly: true, ExpectError: regexp.MustCompile(want)}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			step(`vmid_range = { min = 500, max = 400 }`, `vmid_range.max \(400\) must be above vmid_range.min \(500\)`),
			step(`api_token_file = "/t"
  api_token = "a@pve!b=c"`, `Attribute "api_token" cannot be specified when "api_token_file" is specified`),
			step(`vlan_tag = 0`, `Attribute vlan_tag value must be between 1 and 4094, got: 0`),
			step(`request_timeout = "30"`, `Attribute request_timeout must be a duration above zero`),
			{
				Config:   strings.Replace(tfProviderBlock(""), `nodes         = ["pve1"]`, `nodes = ["pve1", "Bad"]`, 1),
				PlanOnly: true, ExpectError: regexp.MustCompile(`Attribute nodes\[1\] must be a Proxmox node name`),
			},
		},
	})
}

// TestProvider_terraformUnknown: a node name known only after apply passes validation, and
// Configure then says which attribute is unknown (Terraform 1.11 does not allow deferral).
func TestProvider_terraformUnknown(t *testing.T) {
	t.Setenv(envAPIToken, "terraform@pve!ci=00000000-1111-2222-3333-444444444444")
	cfg := strings.Replace(tfProviderBlock(""), `nodes         = ["pve1"]`, `nodes = [terraform_data.node.output]`, 1) + `
resource "terraform_data" "node" {
  input = "pve1"
}
`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: cfg, PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)Unknown provider configuration value.*cannot be configured while nodes is\s+unknown`),
		}},
	})
}

// TestProvider_terraformTokenNeverLogged runs terraform at TF_LOG=TRACE with the token in
// the environment, and reads the provider's log file: the token never appears, and the
// configuration and insecure lines do.
func TestProvider_terraformTokenNeverLogged(t *testing.T) {
	const secret = "SENTINEL-e4d1b2a7-tf-log"
	dir := t.TempDir()
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_LOG_PATH_MASK", filepath.Join(dir, "%s.log"))
	t.Setenv(envAPIToken, "terraform@pve!ci="+secret)
	t.Setenv(envInsecure, "true")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    []resource.TestStep{{Config: tfProviderBlock(`vendor_data = "#cloud-config\n"`), PlanOnly: true}},
	})
	b, err := os.ReadFile(filepath.Join(dir, t.Name()+".log"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{"provider configured", "token_source=" + envAPIToken, "TLS certificate verification is disabled", "vendor_data_bytes=14"} {
		if !strings.Contains(log, want) {
			t.Errorf("the TRACE log lacks %q", want)
		}
	}
	if strings.Contains(log, secret) {
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, secret) {
				t.Errorf("the token is in the log: %.300s", line)
			}
		}
	}
}
