package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

func TestHealthNodeFrom_unreachedDetailsAreNull(t *testing.T) {
	t.Parallel()
	// Failed at the storage step: version and kernel known, avail and templates not.
	got := healthNodeFrom(proxmox.NodeCheck{NodeHealth: proxmox.NodeHealth{
		Name: "pve1", Address: "https://127.0.0.1:8006", Reason: proxmox.ReasonForbidden, Message: "m",
		PVEVersion: "9.2.20", Kernel: "7.0.14-17-pve", TokenID: "u@pve!t", ISOStorage: "proxy-seeds",
	}})
	if !got.ISOStorageAvailGiB.IsNull() || !got.Templates.IsNull() {
		t.Errorf("avail %v templates %v, want null", got.ISOStorageAvailGiB, got.Templates)
	}
	if got.PVEVersion.ValueString() != "9.2.20" || got.Kernel.ValueString() != "7.0.14-17-pve" ||
		got.TokenID.ValueString() != "u@pve!t" || got.ISOStorage.ValueString() != "proxy-seeds" {
		t.Errorf("reached details lost: %+v", got)
	}
	if got.Ready.ValueBool() || got.Reason.ValueString() != "Forbidden" {
		t.Errorf("ready %v reason %v", got.Ready, got.Reason)
	}

	// The storage answered with 0 bytes free: a reading, not null.
	got = healthNodeFrom(proxmox.NodeCheck{StorageAnswered: true, NodeHealth: proxmox.NodeHealth{
		Reason: proxmox.ReasonStorageNotFound, ISOStorage: "proxy-seeds",
	}})
	if !got.ISOStorageAvailGiB.Equal(types.Float64Value(0)) {
		t.Errorf("avail %v, want 0", got.ISOStorageAvailGiB)
	}
	// Credentials unavailable: nothing reached, token id null.
	got = healthNodeFrom(proxmox.NodeCheck{NodeHealth: proxmox.NodeHealth{
		Name: "pve1", Reason: proxmox.ReasonCredentialsUnavailable, ISOStorage: "proxy-seeds",
	}})
	if !got.TokenID.IsNull() || !got.PVEVersion.IsNull() || !got.Kernel.IsNull() {
		t.Errorf("details of a check that made no request: %+v", got)
	}
}

// Acceptance tests of proxy_health: every reason from a fault injected in a fresh
// simulator, the request count of a round, gating with check and precondition, and a
// sentinel token that reaches no attribute, diagnostic or log line.

const healthDS = "data.proxy_health.h"

// healthConfig is a proxy_health block with a read timeout.
func healthConfig(read string) string {
	if read == "" {
		// The default (30 s) is a bound on a whole round that a loaded machine has outlasted
		// against the in-process simulator; only the tests about the bound set their own.
		read = healthTestRead
	}
	return fmt.Sprintf("\ndata \"proxy_health\" \"h\" {\n  timeouts {\n    read = %q\n  }\n}\n", read)
}

// healthTestRead is the health data source's timeouts.read in the tests that are not about it.
const healthTestRead = "3m"

// healthNode checks attribute attr of the i-th node's verdict.
func healthNode(i int, attr string, v knownvalue.Check) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(healthDS, tfjsonpath.New("nodes").AtSliceIndex(i).AtMapKey(attr), v)
}

// healthWant is one node's expected verdict; message is a regexp.
type healthWant struct{ name, reason, message string }

// healthChecks asserts the verdicts, in order, and the top-level ready.
func healthChecks(want ...healthWant) []statecheck.StateCheck {
	ready := true
	checks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(healthDS, tfjsonpath.New("nodes"), knownvalue.ListSizeExact(len(want))),
	}
	for i, w := range want {
		ready = ready && w.reason == "Reachable"
		checks = append(checks,
			healthNode(i, "name", knownvalue.StringExact(w.name)),
			healthNode(i, "reason", knownvalue.StringExact(w.reason)),
			healthNode(i, "ready", knownvalue.Bool(w.reason == "Reachable")),
			healthNode(i, "message", knownvalue.StringRegexp(regexp.MustCompile(w.message))),
			healthNode(i, "iso_storage", knownvalue.NotNull()),
		)
	}
	return append(checks, statecheck.ExpectKnownValue(healthDS, tfjsonpath.New("ready"), knownvalue.Bool(ready)))
}

// secretNotInState fails when the secret appears anywhere in the state.
type secretNotInState struct{ secret string }

func (c secretNotInState) CheckState(_ context.Context, req statecheck.CheckStateRequest, resp *statecheck.CheckStateResponse) {
	b, err := json.Marshal(req.State)
	if err != nil {
		resp.Error = err
		return
	}
	if strings.Contains(string(b), c.secret) {
		resp.Error = errors.New("the API token's secret is in the state")
	}
}

// tokenSecret is the part of a token after '='.
func tokenSecret(t *testing.T, token string) string {
	t.Helper()
	_, secret, ok := strings.Cut(token, "=")
	if !ok || len(secret) < 8 {
		t.Fatal("the token has no usable secret part")
	}
	return secret
}

func TestAccHealthDataSource_reachable(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	checks := healthChecks(healthWant{env.Nodes[0], "Reachable", `answers`})
	checks = append(checks,
		statecheck.ExpectKnownValue(healthDS, tfjsonpath.New("id"), knownvalue.StringExact(env.Endpoint)),
		healthNode(0, "address", knownvalue.StringExact(env.Endpoint)),
		healthNode(0, "pve_version", knownvalue.StringRegexp(regexp.MustCompile(`^\d+\.\d+`))),
		healthNode(0, "kernel", knownvalue.NotNull()),
		healthNode(0, "iso_storage", knownvalue.StringExact(env.ISOStorage)),
		healthNode(0, "iso_storage_avail_gib", knownvalue.NotNull()),
		healthNode(0, "templates", knownvalue.StringExact(fmt.Sprintf("%d/%d", len(env.Templates), len(env.Templates)))),
	)
	if env.Sim != nil {
		checks = append(checks,
			healthNode(0, "pve_version", knownvalue.StringExact("9.2.20")),
			healthNode(0, "kernel", knownvalue.StringExact("7.0.14-17-pve")),
			healthNode(0, "token_id", knownvalue.StringExact(env.Sim.TokenID())),
			healthNode(0, "iso_storage_avail_gib", knownvalue.Float64Exact(20)),
			secretNotInState{tokenSecret(t, env.Token)},
		)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    []resource.TestStep{{Config: env.ProviderConfig("") + healthConfig(""), ConfigStateChecks: checks}},
	})
}

// TestAccHealthDataSource_reasons injects one fault per reason into a fresh two-node
// simulator and reads the verdicts.
func TestAccHealthDataSource_reasons(t *testing.T) {
	nodes := []string{"pve1", "pve2"}
	both := func(reason, message string) []healthWant {
		return []healthWant{{"pve1", reason, message}, {"pve2", reason, message}}
	}
	tests := []struct {
		name string
		opts pvesim.Options
		// setup injects faults and returns the provider block's extra lines.
		setup func(t *testing.T, env *testEnv) string
		read  string
		want  []healthWant
		extra []statecheck.StateCheck
		// noRequests: the check must not have sent a single request.
		noRequests bool
	}{
		{
			name: "wrong token is Unauthorized",
			setup: func(*testing.T, *testEnv) string {
				return `api_token = "root@pam!tf=00000000-0000-4000-8000-000000000000"`
			},
			want:  both("Unauthorized", `Authentication failed!`),
			extra: []statecheck.StateCheck{healthNode(0, "token_id", knownvalue.StringExact("root@pam!tf"))},
		},
		{
			// The storage status takes either privilege (pve-storage Status.pm read_status:
			// any => 1), and the refusal names both.
			name: "missing privilege is Forbidden naming it",
			opts: pvesim.Options{Deny: []pvesim.Privilege{
				{Path: "/storage/proxy-seeds", Privilege: "Datastore.Audit"}, {Path: "/storage/proxy-seeds", Privilege: "Datastore.AllocateSpace"},
			}},
			want: both("Forbidden", `Permission check failed \(/storage/proxy-seeds, Datastore\.Audit\|Datastore\.AllocateSpace\)`),
			extra: []statecheck.StateCheck{
				healthNode(0, "kernel", knownvalue.StringExact("7.0.14-17-pve")),
				healthNode(0, "iso_storage_avail_gib", knownvalue.Null()),
				healthNode(0, "templates", knownvalue.Null()),
			},
		},
		{
			name:  "missing storage is StorageNotFound",
			setup: func(*testing.T, *testEnv) string { return `iso_storage = "nostorage"` },
			want:  both("StorageNotFound", `No such storage\.`),
			extra: []statecheck.StateCheck{healthNode(1, "iso_storage", knownvalue.StringExact("nostorage"))},
		},
		{
			name: "unusable storage (a 500 from its status) is StorageNotFound",
			setup: func(_ *testing.T, env *testEnv) string {
				env.Sim.InjectFault(pvesim.Fault{Method: "GET", Path: "/nodes/{node}/storage/{storage}/status", Node: "pve2",
					Status: 500, Message: "storage 'proxy-seeds' is not online"})
				return ""
			},
			want: []healthWant{{"pve1", "Reachable", `answers`}, {"pve2", "StorageNotFound", `is not online`}},
		},
		{
			name:  "storage without iso content is StorageNotFound",
			setup: func(*testing.T, *testEnv) string { return `iso_storage = "backups"` },
			want:  both("StorageNotFound", `does not hold iso content`),
			extra: []statecheck.StateCheck{healthNode(0, "iso_storage_avail_gib", knownvalue.NotNull())},
		},
		{
			name: "missing template and a VM that is no template are TemplateNotFound",
			setup: func(*testing.T, *testEnv) string {
				return "templates = {\n    \"debian-13\" = 9001\n    \"gone\" = 4242\n    \"web\" = 100\n  }"
			},
			want: both("TemplateNotFound", `gone: VM 4242 does not exist; web: VM 100 is not a template`),
			extra: []statecheck.StateCheck{
				healthNode(0, "templates", knownvalue.StringExact("1/3")),
				healthNode(1, "templates", knownvalue.StringExact("1/3")),
			},
		},
		{
			// The simulator's template 9000 (made as Proxmox's cloud-init guide makes one) is
			// a template, so the listing alone would count it; every create of it is refused
			// at plan, so the check says it is unusable and why.
			name: "a template with a Proxmox cloud-init drive on ide2 is TemplateNotFound",
			setup: func(*testing.T, *testEnv) string {
				return fmt.Sprintf("templates = {\n    \"debian-13\" = 9001\n    \"ubuntu-ci\" = %d\n  }", pvesim.CloudInitTemplateVMID)
			},
			want: both("TemplateNotFound", `ubuntu-ci: template 9000 has a Proxmox cloud-init drive on ide2.*remove that drive from the template`),
			extra: []statecheck.StateCheck{
				healthNode(0, "templates", knownvalue.StringExact("1/2")),
				healthNode(1, "templates", knownvalue.StringExact("1/2")),
			},
		},
		{
			name: "node down is Unreachable, the other node Reachable",
			setup: func(t *testing.T, env *testEnv) string {
				if err := env.Sim.SetNodeDown("pve2", true); err != nil {
					t.Fatal(err)
				}
				return ""
			},
			want: []healthWant{{"pve1", "Reachable", `answers`}, {"pve2", "Unreachable", `595`}},
			extra: []statecheck.StateCheck{
				healthNode(1, "pve_version", knownvalue.StringExact("9.2.20")),
				healthNode(1, "kernel", knownvalue.Null()),
			},
		},
		{
			name: "596 from pveproxy is Unreachable",
			setup: func(_ *testing.T, env *testEnv) string {
				env.Sim.InjectFault(pvesim.Fault{Method: "GET", Path: "/nodes/{node}/status", Node: "pve1",
					Status: 596, Message: "Connection reset by peer"})
				return ""
			},
			want: []healthWant{{"pve1", "Unreachable", `596`}, {"pve2", "Reachable", `answers`}},
		},
		{
			name: "unknown node name is APIError",
			setup: func(_ *testing.T, env *testEnv) string {
				env.Nodes = []string{"pve1", "ghost"}
				return ""
			},
			want: []healthWant{{"pve1", "Reachable", `answers`}, {"ghost", "APIError", `hostname lookup 'ghost' failed`}},
		},
		{
			name:       "a CA that did not sign the server's certificate is CertificateInvalid",
			setup:      func(t *testing.T, _ *testEnv) string { return fmt.Sprintf("ca_pem = %q", testCAPEM(t)) },
			want:       both("CertificateInvalid", `certificate`),
			noRequests: true,
		},
		// A missing or malformed api_token_file fails the provider's configuration on that
		// attribute before any data source runs (TestAccProvider_filesCheckedAtConfigure).
		{
			// The round's budget is far above what the healthy node's requests take even on a
			// loaded machine, and the hanging node's latency far above the budget.
			name: "a node that hangs is Timeout and costs the others nothing",
			setup: func(_ *testing.T, env *testEnv) string {
				env.Sim.InjectFault(pvesim.Fault{Method: "GET", Path: "/nodes/{node}/status", Node: "pve2", Latency: 40 * time.Second})
				return ""
			},
			read: "20s",
			want: []healthWant{{"pve1", "Reachable", `answers`}, {"pve2", "Timeout", `ran out of time reading the node status`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Nodes = nodes
			env := newTestEnv(t, opts)
			if env.Sim == nil {
				t.Skip("needs the simulator's fault injection")
			}
			extra := ""
			if tt.setup != nil {
				extra = tt.setup(t, env)
			}
			checks := append(healthChecks(tt.want...), tt.extra...)
			checks = append(checks, secretNotInState{tokenSecret(t, env.Sim.APIToken)})
			var requests []int
			resource.ParallelTest(t, resource.TestCase{
				PreCheck:                 func() { testAccPreCheck(t) },
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:            env.ProviderConfig(extra) + healthConfig(tt.read),
					ConfigStateChecks: checks,
					Check: func(*terraform.State) error {
						requests = append(requests, simRequests(env.Sim))
						return nil
					},
				}},
			})
			if tt.noRequests && len(requests) > 0 && requests[0] != 0 {
				t.Errorf("%d requests answered, want none: %v", requests[0], env.Sim.Stats())
			}
		})
	}
}

// simRequests is the number of API requests the simulator answered.
func simRequests(s *pvesim.Sim) int {
	n := 0
	for _, c := range s.Stats() {
		n += c
	}
	return n
}

// simPrivilegeRound is what the privilege round of one health read asks of the simulator with
// its template (9001): its config (1, the read the template check makes too, shared), and the
// token's privileges on /vms/9001, /vms, /storage/proxy-seeds, /storage/local-lvm (the
// template's disk) and /sdn/zones/localnetwork/vmbr0 (its NIC): 5.
var simPrivilegeRound = map[string]int{"GET /nodes/{node}/qemu/{vmid}/config": 1, "GET /access/permissions": 5}

// simHARound is what the HA round of one read of the data source adds (proxmox.CheckHA):
// the token's privileges on / and the HA status.
var simHARound = map[string]int{"GET /access/permissions": 1, "GET /cluster/ha/status/current": 1}

// TestAccHealthDataSource_fourRequestsPerNode reads a three-node cluster. Terraform reads
// the data source more than once per step, so the test measures the ratios: every read
// makes exactly one of each of the four requests per node, plus one privilege round shared
// by the nodes, and nothing else.
func TestAccHealthDataSource_fourRequestsPerNode(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{Nodes: []string{"pve1", "pve2", "pve3"}})
	if env.Sim == nil {
		t.Skip("needs the simulator's request counts")
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: env.Sim.ResetStats,
			Config:    env.ProviderConfig("") + healthConfig(""),
			ConfigStateChecks: healthChecks(
				healthWant{"pve1", "Reachable", `answers`}, healthWant{"pve2", "Reachable", `answers`},
				healthWant{"pve3", "Reachable", `answers`}),
			Check: func(*terraform.State) error {
				st := env.Sim.Stats()
				reads := st["GET /version"] / 3
				if reads == 0 || st["GET /version"] != 3*reads {
					return fmt.Errorf("GET /version made %d times for 3 nodes", st["GET /version"])
				}
				for _, k := range []string{"GET /nodes/{node}/status", "GET /nodes/{node}/storage/{storage}/status", "GET /cluster/resources"} {
					if st[k] != 3*reads {
						return fmt.Errorf("%s made %d times in %d reads of 3 nodes, want %d", k, st[k], reads, 3*reads)
					}
				}
				round := 0
				perRead := maps.Clone(simPrivilegeRound)
				for k, n := range simHARound {
					perRead[k] += n
				}
				for k, n := range perRead {
					if st[k] != n*reads {
						return fmt.Errorf("%s made %d times in %d reads, want %d", k, st[k], reads, n*reads)
					}
					round += n
				}
				if n := simRequests(env.Sim); n != (4*3+round)*reads {
					return fmt.Errorf("%d requests in %d reads of 3 nodes, want %d: %v", n, reads, (4*3+round)*reads, st)
				}
				t.Logf("%d reads of 3 nodes: %d requests, 4 per node per read and %d for the privileges and HA", reads, (4*3+round)*reads, round)
				return nil
			},
		}},
	})
}

// TestHealthCheck_threeNodeSimulatorRound counts one round exactly, through the real
// client against the simulator: 12 requests for 3 nodes, and the privilege round.
func TestHealthCheck_threeNodeSimulatorRound(t *testing.T) {
	t.Parallel()
	sim := pvesim.NewForTest(t, pvesim.Options{Nodes: []string{"pve1", "pve2", "pve3"}})
	c, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	b := proxmox.New(c, proxmox.Config{Endpoint: sim.Endpoint, Nodes: sim.Nodes, ISOStorage: sim.ISOStorage,
		Templates: sim.Templates, TokenID: c.TokenID})
	for _, h := range b.Check(context.Background()) {
		if !h.Ready {
			t.Errorf("%s: %s (%s)", h.Name, h.Reason, h.Message)
		}
	}
	want := map[string]int{
		"GET /version": 3, "GET /nodes/{node}/status": 3,
		"GET /nodes/{node}/storage/{storage}/status": 3, "GET /cluster/resources": 3,
		"GET /nodes/{node}/qemu/{vmid}/config": len(sim.Templates),
	}
	maps.Copy(want, simPrivilegeRound)
	if got := sim.Stats(); !maps.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

// TestAccHealthDataSource_gatesApply: a check block only warns, a precondition stops the
// apply with the node's reason, as the example shows.
func TestAccHealthDataSource_gatesApply(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{Nodes: []string{"pve1", "pve2"}})
	if env.Sim == nil {
		t.Skip("needs the simulator to take a node down")
	}
	if err := env.Sim.SetNodeDown("pve2", true); err != nil {
		t.Fatal(err)
	}
	const checkBlock = `
check "proxmox_ready" {
  assert {
    condition = data.proxy_health.h.ready
    error_message = join("\n", [
      for n in data.proxy_health.h.nodes : "${n.name}: ${n.reason}: ${n.message}" if !n.ready
    ])
  }
}
`
	const precondition = `
locals {
  pve2 = one([for n in data.proxy_health.h.nodes : n if n.name == "pve2"])
}

resource "terraform_data" "gate" {
  input = local.pve2.pve_version
  lifecycle {
    precondition {
      condition     = local.pve2.ready
      error_message = "Proxmox node pve2 is not ready (${local.pve2.reason}): ${local.pve2.message}"
    }
  }
}
`
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: env.ProviderConfig("") + healthConfig("") + checkBlock,
				ConfigStateChecks: healthChecks(healthWant{"pve1", "Reachable", `answers`},
					healthWant{"pve2", "Unreachable", `595`}),
			},
			{
				Config:      env.ProviderConfig("") + healthConfig("") + precondition,
				ExpectError: regexp.MustCompile(`Proxmox node pve2 is not ready \(Unreachable\)`),
			},
			{
				PreConfig: func() {
					if err := env.Sim.SetNodeDown("pve2", false); err != nil {
						t.Fatal(err)
					}
				},
				Config: env.ProviderConfig("") + healthConfig("") + precondition,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("terraform_data.gate", tfjsonpath.New("output"), knownvalue.StringExact("9.2.20")),
				},
			},
		},
	})
}

// TestAccHealthDataSource_sentinelTokenNeverLeaks reads proxy_health and proxy_vms with a
// wrong token whose secret is a sentinel, at TF_LOG=TRACE: the sentinel is in no
// attribute, diagnostic or log line. Not parallel: it sets TF_LOG and TF_LOG_PATH.
func TestAccHealthDataSource_sentinelTokenNeverLeaks(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	const sentinel = "5e471ne1-5ec7-4e7a-8ba5-5e471ne15ec7"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("root@pam!tf="+sentinel+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env.Token = ""
	logFile := filepath.Join(t.TempDir(), "terraform.log")
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_LOG_PATH", logFile)
	cfg := env.ProviderConfig(fmt.Sprintf("api_token_file = %q", file))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg + healthConfig(""),
				ConfigStateChecks: append(healthChecks(healthWant{env.Nodes[0], "Unauthorized", `401`}),
					secretNotInState{sentinel}, healthNode(0, "token_id", knownvalue.StringExact("root@pam!tf"))),
			},
			{
				Config:      cfg + "\ndata \"proxy_vms\" \"all\" {}\n",
				ExpectError: regexp.MustCompile(`Unable to list the marked VMs`),
			},
		},
	})
	if os.Getenv("TF_ACC") == "" {
		return
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	// The log holds what the test is about: the backend's verdict lines and the
	// diagnostics of the failed read.
	for _, want := range []string{"proxmox node checked", "Unable to list the marked VMs"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log has no %q line; the test would prove nothing", want)
		}
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, sentinel) {
			t.Errorf("the sentinel is in the log: %.300s", strings.ReplaceAll(line, sentinel, "<SENTINEL>"))
		}
	}
}

// TestAccHealthDataSource_example applies the documentation's example against a node
// named as in it, so the example cannot drift from the schema.
func TestAccHealthDataSource_example(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "data-sources", "proxy_health", "data-source.tf"))
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, pvesim.Options{Nodes: []string{"pv1-1"}})
	if env.Sim == nil {
		t.Skip("the example names node pv1-1")
	}
	// The example's 20 s round is a user's setting; on a loaded machine the test gives the
	// in-process simulator the budget the other tests do.
	const exampleRead = `read = "20s"`
	if !strings.Contains(string(example), exampleRead) {
		t.Fatalf("the example no longer sets %s: update this test", exampleRead)
	}
	config := strings.Replace(string(example), exampleRead, fmt.Sprintf("read = %q", healthTestRead), 1)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: env.ProviderConfig("") + config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.proxy_health.cluster", tfjsonpath.New("ready"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue("terraform_data.proxmox_gate", tfjsonpath.New("output"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("9.2.20")})),
				statecheck.ExpectKnownOutputValue("proxmox_nodes", knownvalue.MapExact(map[string]knownvalue.Check{
					"pv1-1": knownvalue.ObjectExact(map[string]knownvalue.Check{
						"reason": knownvalue.StringExact("Reachable"), "pve_version": knownvalue.StringExact("9.2.20"),
						"templates": knownvalue.StringExact(fmt.Sprintf("%d/%d", len(env.Templates), len(env.Templates))),
					}),
				})),
			},
		}},
	})
}
