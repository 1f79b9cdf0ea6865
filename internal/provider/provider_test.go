package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// testAccProtoV6ProviderFactories serve the provider in-process to terraform-plugin-testing.
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"proxy": providerserver.NewProtocol6WithError(New("test")()),
}

// testEnv is what one acceptance test runs against: a fresh simulator (or, later, a real
// cluster from PROXMOX_VE_* variables).
// NOTE(skeleton): the foundation issue extends this (real cluster variables); keep the names.
type testEnv struct {
	Sim *pvesim.Sim // nil against a real cluster
	// Endpoint, Token, CAPEM, Nodes, ISOStorage, Templates describe the target.
	Endpoint   string
	Token      string
	CAPEM      string
	Nodes      []string
	ISOStorage string
	Templates  map[string]int
}

// newTestEnv starts a fresh simulator for t.
func newTestEnv(t *testing.T, opts pvesim.Options) *testEnv {
	t.Helper()
	sim := pvesim.NewForTest(t, opts)
	return &testEnv{
		Sim: sim, Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM,
		Nodes: sim.Nodes, ISOStorage: sim.ISOStorage, Templates: sim.Templates,
	}
}

// ProviderConfig renders a provider block for the environment; extra is pasted inside it
// (e.g. machine_types, vmid_range).
func (e *testEnv) ProviderConfig(extra string) string {
	var tmpl []string
	for k, v := range e.Templates {
		tmpl = append(tmpl, fmt.Sprintf("    %q = %d", k, v))
	}
	return fmt.Sprintf(`
provider "proxy" {
  endpoint    = %q
  api_token   = %q
  ca_pem      = %q
  nodes       = %s
  iso_storage = %q
  templates = {
%s
  }
  machine_types = {
    small = { cores = 1, memory_mib = 512 }
  }
%s
}
`, e.Endpoint, e.Token, e.CAPEM, hclList(e.Nodes), e.ISOStorage, strings.Join(tmpl, "\n"), extra)
}

func hclList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
