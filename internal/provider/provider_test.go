package provider

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// testAccProtoV6ProviderFactories serve the provider in-process to terraform-plugin-testing.
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"proxy": providerserver.NewProtocol6WithError(New("test")()),
}

// Environment variables that point the acceptance tests at a real cluster instead of the
// simulator (PROXMOX_VE_ENDPOINT switches; the provider reads the PROXMOX_VE_* ones itself).
const (
	envTestNodes        = "PROXMOX_TEST_NODES"         // comma-separated node names
	envTestISOStorage   = "PROXMOX_TEST_ISO_STORAGE"   // seed ISO storage id
	envTestTemplateVMID = "PROXMOX_TEST_TEMPLATE_VMID" // a template VMID (cloud-init capable image)
	envTestTemplateKey  = "PROXMOX_TEST_TEMPLATE_KEY"  // its catalogue key; default "debian-13"
	envTestVMIDMin      = "PROXMOX_TEST_VMID_MIN"      // optional vmid_range.min
	envTestVMIDMax      = "PROXMOX_TEST_VMID_MAX"      // optional vmid_range.max
	envTestCAFile       = "PROXMOX_VE_CA_FILE"         // CA bundle of the real cluster
)

// testEnv is what one acceptance test runs against: a fresh simulator, or a real cluster
// from PROXMOX_VE_* and PROXMOX_TEST_* variables.
type testEnv struct {
	Sim *pvesim.Sim // nil against a real cluster
	// Endpoint, Token, CAPEM, Nodes, ISOStorage, Templates describe the target.
	Endpoint   string
	Token      string // empty against a real cluster: the provider reads PROXMOX_VE_API_TOKEN
	CAPEM      string
	CAFile     string // real cluster: PROXMOX_VE_CA_FILE
	Nodes      []string
	ISOStorage string
	Templates  map[string]int
	// VMIDMin and VMIDMax render vmid_range when set (real cluster).
	VMIDMin, VMIDMax int
}

// realCluster reports whether the acceptance tests target a real cluster.
func realCluster() bool { return os.Getenv(envEndpoint) != "" }

// testAccPreCheck checks what the target needs: against a real cluster every required
// variable must be set; against the simulator there is nothing to check.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	if !realCluster() {
		return
	}
	var missing []string
	for _, name := range []string{envAPIToken, envTestNodes, envTestISOStorage, envTestTemplateVMID} {
		if os.Getenv(name) == "" {
			missing = append(missing, name)
		}
	}
	if os.Getenv(envTestCAFile) == "" && os.Getenv(envInsecure) == "" {
		missing = append(missing, envTestCAFile+" or "+envInsecure)
	}
	if len(missing) > 0 {
		t.Fatalf("%s is set, so the acceptance tests run against a real cluster and need: %s", envEndpoint, strings.Join(missing, ", "))
	}
}

// newTestEnv starts a fresh simulator for t, or describes the real cluster when
// PROXMOX_VE_ENDPOINT is set (opts is then ignored).
func newTestEnv(t *testing.T, opts pvesim.Options) *testEnv {
	t.Helper()
	if realCluster() {
		testAccPreCheck(t)
		return realTestEnv(t)
	}
	sim := pvesim.NewForTest(t, opts)
	return &testEnv{
		Sim: sim, Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM,
		Nodes: sim.Nodes, ISOStorage: sim.ISOStorage, Templates: sim.Templates,
	}
}

func realTestEnv(t *testing.T) *testEnv {
	t.Helper()
	atoi := func(name string) int {
		v := os.Getenv(name)
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %q is not a number", name, v)
		}
		return n
	}
	var nodes []string
	for _, n := range strings.Split(os.Getenv(envTestNodes), ",") {
		if n = strings.TrimSpace(n); n != "" {
			nodes = append(nodes, n)
		}
	}
	key := os.Getenv(envTestTemplateKey)
	if key == "" {
		key = "debian-13"
	}
	return &testEnv{
		Endpoint:   os.Getenv(envEndpoint),
		CAFile:     os.Getenv(envTestCAFile),
		Nodes:      nodes,
		ISOStorage: os.Getenv(envTestISOStorage),
		Templates:  map[string]int{key: atoi(envTestTemplateVMID)},
		VMIDMin:    atoi(envTestVMIDMin),
		VMIDMax:    atoi(envTestVMIDMax),
	}
}

// TemplateKey returns a catalogue key of the environment's templates (the first in sorted
// order), for tests that need any template.
func (e *testEnv) TemplateKey() string {
	keys := sortedKeys(e.Templates)
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// ProviderConfig renders a provider block for the environment; extra is pasted inside it
// (e.g. machine_types, vmid_range, bridge). An attribute that extra sets is not rendered
// from the environment (machine_types defaults to small = 1 core, 512 MiB); api_token_file
// in extra drops api_token, and ca_pem, ca_file or insecure drops the environment's CA.
func (e *testEnv) ProviderConfig(extra string) string {
	var b strings.Builder
	b.WriteString("\nprovider \"proxy\" {\n")
	line := func(attr, format string, args ...any) {
		if !setsAttr(extra, attr) {
			fmt.Fprintf(&b, "  %-11s = "+format+"\n", append([]any{attr}, args...)...)
		}
	}
	line("endpoint", "%q", e.Endpoint)
	if e.Token != "" && !setsAttr(extra, "api_token_file") {
		line("api_token", "%q", e.Token)
	}
	if !setsAttr(extra, "ca_pem") && !setsAttr(extra, "ca_file") && !setsAttr(extra, "insecure") {
		if e.CAPEM != "" {
			line("ca_pem", "%q", e.CAPEM)
		}
		if e.CAFile != "" {
			line("ca_file", "%q", e.CAFile)
		}
	}
	line("nodes", "%s", hclList(e.Nodes))
	line("iso_storage", "%q", e.ISOStorage)
	if e.VMIDMin != 0 && e.VMIDMax != 0 {
		line("vmid_range", "{ min = %d, max = %d }", e.VMIDMin, e.VMIDMax)
	}
	if !setsAttr(extra, "templates") {
		keys := make([]string, 0, len(e.Templates))
		for k := range e.Templates {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("  templates = {\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "    %q = %d\n", k, e.Templates[k])
		}
		b.WriteString("  }\n")
	}
	if !setsAttr(extra, "machine_types") {
		b.WriteString("  machine_types = {\n    small = { cores = 1, memory_mib = 512 }\n  }\n")
	}
	if e.Sim != nil {
		// One request to the in-process simulator takes milliseconds; on a machine whose
		// cores are shared with other work it has taken over the default 30 s. No test
		// against the simulator is about a request's own timeout (one that is sets it).
		line("request_timeout", "%q", testRequestTimeout)
	}
	b.WriteString(extra)
	b.WriteString("\n}\n")
	return b.String()
}

// testRequestTimeout is the request_timeout of the acceptance tests' simulator: a guard
// against a hang, far above what a request takes even on a loaded machine.
const testRequestTimeout = "3m"

// harnessRequestTimeout is testRequestTimeout for the tests' own clients of the simulator
// (setting up VMs, looking at what the provider did).
const harnessRequestTimeout = 3 * time.Minute

// setsAttr reports whether the HCL fragment assigns attr at the start of a line.
func setsAttr(hcl, attr string) bool {
	return regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(attr) + `\s*=`).MatchString(hcl)
}

func hclList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
