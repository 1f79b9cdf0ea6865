package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Acceptance tests of the provider configuration: they read the proxy_vms data source, the
// cheapest real call, through each way of configuring the connection.

const listVMs = `
data "proxy_vms" "all" {}
`

func TestAccProvider_apiToken(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	checks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue("data.proxy_vms.all", tfjsonpath.New("id"), knownvalue.NotNull()),
	}
	if env.Sim != nil {
		checks = append(checks, statecheck.ExpectKnownValue("data.proxy_vms.all", tfjsonpath.New("vms"), knownvalue.ListExact(nil)))
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    []resource.TestStep{{Config: env.ProviderConfig("") + listVMs, ConfigStateChecks: checks}},
	})
}

func TestAccProvider_apiTokenFile(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	token := env.Token
	if token == "" {
		token = os.Getenv(envAPIToken)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: env.ProviderConfig(`api_token_file = "`+file+`"`) + listVMs,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.proxy_vms.all", tfjsonpath.New("id"), knownvalue.NotNull()),
			},
		}},
	})
}

// TestAccProvider_connectionErrors: Configure accepts each of these; the first call fails
// with a diagnostic, never a crash or a hang.
func TestAccProvider_connectionErrors(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	missing := filepath.Join(t.TempDir(), "not-yet-mounted")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      env.ProviderConfig(`api_token = "nobody@pve!wrong=00000000-0000-0000-0000-000000000000"`) + listVMs,
				ExpectError: regexp.MustCompile(`(?i)401|authenticat|unauthori|permission|token`),
			},
			{
				Config:      env.ProviderConfig(`api_token_file = "`+missing+`"`) + listVMs,
				ExpectError: regexp.MustCompile(`(?i)token`),
			},
			{
				// A CA that did not sign the server's certificate.
				Config:      env.ProviderConfig(`ca_pem = "`+strings.ReplaceAll(testCAPEM(t), "\n", `\n`)+`"`) + listVMs,
				ExpectError: regexp.MustCompile(`(?i)certificate`),
			},
		},
	})
}

// TestAccProvider_tokenNeverLogged runs a real read at TF_LOG=TRACE (client and backend
// subsystems included) and reads the provider's log: the token's secret is not in it.
func TestAccProvider_tokenNeverLogged(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	token := env.Token
	if token == "" {
		token = os.Getenv(envAPIToken)
	}
	_, secret, _ := strings.Cut(token, "=")
	if len(secret) < 8 {
		t.Fatalf("the environment's token has no usable secret part")
	}
	dir := t.TempDir()
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_LOG_PATH_MASK", filepath.Join(dir, "%s.log"))
	// The token goes through the environment: terraform-plugin-testing logs the
	// configuration text itself at TRACE, and that is not the provider's doing.
	t.Setenv(envAPIToken, token)
	noToken := *env
	noToken.Token = ""
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    []resource.TestStep{{Config: noToken.ProviderConfig("") + listVMs}},
	})
	if t.Failed() || os.Getenv("TF_ACC") == "" {
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "__")+".log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"provider configured", "proxy.pveapi:", "proxy.proxmox:"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("the log file lacks %q: the provider's, client's or backend's lines are not in it", want)
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, secret) {
			t.Errorf("the token's secret is in the log: %.300s", strings.ReplaceAll(line, secret, "<SECRET>"))
		}
	}
}
