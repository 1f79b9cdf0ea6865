package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// The generated-configuration tests: the real `terraform plan -generate-config-out` and
// (Terraform 1.14+) `terraform query -generate-config-out` against VMs this provider made,
// then the generated file with only the cloud-init filled in: the plan imports every VM
// and changes nothing.

const genDigestKey = "e2e-digest-key-0123456789"

// genFleet applies three VMs in a workspace of their own and returns the provider
// configuration and the cloud-init of each VM by name ("" for none): a with cloud_init_wo
// and a machine type, b with explicit sizes, a static address and no cloud-init, c with
// cloud_init_wo and an explicit template VMID.
func genFleet(ctx context.Context, t *testing.T, sim *pvesim.Sim, prefix string) (tfrun.ProviderConfig, map[string]string) {
	t.Helper()
	pc := tfrun.SimConfig(sim)
	pc.Extra = fmt.Sprintf("  cloud_init_digest_key = %q\n", genDigestKey)
	texts := map[string]string{
		prefix + "a": "#cloud-config\n# sentinel-gen-a " + prefix + "\npackages: [squid]\n",
		prefix + "b": "",
		prefix + "c": "#cloud-config\n# sentinel-gen-c " + prefix + "\n",
	}
	hcl := tfrun.RequiredProviders + pc.HCL() + fmt.Sprintf(`
resource "proxy_vm" "a" {
  name          = "%sa"
  image         = "debian-13"
  machine_type  = "small"
  cloud_init_wo = %s
}

resource "proxy_vm" "b" {
  name       = "%sb"
  image      = "debian-13"
  cores      = 2
  memory_mib = 768
  static_ipv4 = {
    address = "10.30.0.12/24"
    gateway = "10.30.0.1"
    dns     = ["10.30.0.53"]
  }
}

resource "proxy_vm" "c" {
  name          = "%sc"
  template_vmid = %d
  cores         = 1
  memory_mib    = 512
  cloud_init_wo = %s
}
`, prefix, tfrun.Quote(texts[prefix+"a"]), prefix, prefix, sim.Templates["debian-13"], tfrun.Quote(texts[prefix+"c"]))
	ws := provider.NewWorkspace(t)
	ws.Timeout = commandTimeout
	if err := ws.WriteConfig(hcl); err != nil {
		t.Fatal(err)
	}
	if r := ws.Apply(ctx); !r.OK() {
		t.Fatalf("apply of the fleet: %s", r)
	}
	return pc, texts
}

// resourceBlockRE matches one generated resource block (Terraform writes them unindented,
// closing brace at the start of a line).
var resourceBlockRE = regexp.MustCompile(`(?ms)^resource "proxy_vm" "[^"]+" \{\n.*?^\}`)

// fillCloudInit writes each VM's cloud-init into the generated configuration: the only
// edit a user makes. It returns the new text and how many blocks it edited.
func fillCloudInit(t *testing.T, gen string, texts map[string]string) (string, int) {
	t.Helper()
	edited := 0
	out := resourceBlockRE.ReplaceAllStringFunc(gen, func(block string) string {
		for name, text := range texts {
			if text == "" || !regexp.MustCompile(`(?m)^\s*name\s*=\s*"`+regexp.QuoteMeta(name)+`"$`).MatchString(block) {
				continue
			}
			re := regexp.MustCompile(`(?m)^(\s*)cloud_init_wo\s*=\s*null.*$`)
			if !re.MatchString(block) {
				t.Fatalf("the generated block of %s has no cloud_init_wo line:\n%s", name, block)
			}
			edited++
			return re.ReplaceAllString(block, "${1}cloud_init_wo = "+strings.ReplaceAll(tfrun.Quote(text), "$", "$$"))
		}
		return block
	})
	return out, edited
}

// planSummaryRE is the plan's summary line.
var planSummaryRE = regexp.MustCompile(`Plan: (\d+) to import, (\d+) to add, (\d+) to change, (\d+) to destroy`)

func checkGenerated(t *testing.T, gen string, prefix string) {
	t.Helper()
	// What cannot be read back, or is computed, is not written into the resources.
	computed := regexp.MustCompile(`(?m)^\s*(cloud_init_digest|uid|vmid|id|ip_address|mac_address|status|created_at|agent_enabled)\s*=|timeouts`)
	for _, block := range resourceBlockRE.FindAllString(gen, -1) {
		if m := computed.FindString(block); m != "" {
			t.Errorf("a generated resource holds %q:\n%s", m, block)
		}
	}
	if strings.Contains(gen, "sentinel-gen") {
		t.Fatalf("the generated configuration holds a cloud-init text:\n%s", gen)
	}
	if n := strings.Count(gen, `resource "proxy_vm"`); n != 3 {
		t.Fatalf("the generated configuration has %d proxy_vm blocks, want 3:\n%s", n, gen)
	}
	// The static address is read back from the mark, whole.
	if !regexp.MustCompile(`(?s)static_ipv4 = \{.*address = "10\.30\.0\.12/24".*gateway = "10\.30\.0\.1"`).MatchString(gen) {
		t.Errorf("the generated configuration does not hold b's static_ipv4:\n%s", gen)
	}
}

// TestGenerateConfig_importPlansClean: `terraform plan -generate-config-out` with import
// blocks for three VMs writes a configuration that plans (the image beside its template
// VMID, the machine type beside its sizes), and once the cloud-init is filled in the plan
// is 3 to import, 0 to add, 0 to change, 0 to destroy; the apply then changes nothing.
func TestGenerateConfig_importPlansClean(t *testing.T) {
	needTF(t)
	sim := pvesim.NewForTest(t, pvesim.Options{Seed: runSeed, Speed: 50})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prefix := "proxy-gen-"
	pc, texts := genFleet(ctx, t, sim, prefix)

	ws := provider.NewWorkspace(t)
	ws.Timeout = commandTimeout
	imports := ""
	for _, s := range []string{"a", "b", "c"} {
		imports += fmt.Sprintf("\nimport {\n  to = proxy_vm.%s\n  id = %q\n}\n", s, prefix+s)
	}
	if err := ws.WriteConfig(tfrun.RequiredProviders + pc.HCL() + imports); err != nil {
		t.Fatal(err)
	}
	r := ws.Run(ctx, "plan", "-no-color", "-input=false", "-generate-config-out=generated.tf")
	genBytes, err := os.ReadFile(filepath.Join(ws.Dir, "generated.tf"))
	if err != nil {
		t.Fatalf("no generated.tf: %v\n%s", err, r)
	}
	gen := string(genBytes)
	if !r.OK() {
		t.Fatalf("the plan that generated the configuration failed (the generated configuration does not plan): %s\n--- generated.tf\n%s", r, gen)
	}
	checkGenerated(t, gen, prefix)
	filled, edited := fillCloudInit(t, gen, texts)
	if edited != 2 {
		t.Fatalf("filled the cloud-init of %d blocks, want 2 (a and c):\n%s", edited, filled)
	}
	if err := ws.WriteFile("generated.tf", filled); err != nil {
		t.Fatal(err)
	}
	r = ws.Run(ctx, "plan", "-no-color", "-input=false", "-out=import.tfplan")
	m := planSummaryRE.FindStringSubmatch(r.Stdout)
	if !r.OK() || m == nil || m[1] != "3" || m[2] != "0" || m[3] != "0" || m[4] != "0" {
		t.Fatalf("the plan with the generated configuration: want 3 to import, 0 to add, 0 to change, 0 to destroy: %s\n--- generated.tf\n%s", r, filled)
	}
	if r := ws.Apply(ctx, "import.tfplan"); !r.OK() {
		t.Fatalf("apply of the import plan: %s", r)
	}
	if r := ws.Plan(ctx); r.ExitCode != 0 {
		t.Fatalf("the plan after the import is not empty: %s", r)
	}
	// A different text in the generated configuration is a replacement, not silence.
	changed, _ := fillCloudInit(t, gen, map[string]string{prefix + "a": "#cloud-config\n# another\n", prefix + "c": texts[prefix+"c"]})
	if err := ws.WriteFile("generated.tf", changed); err != nil {
		t.Fatal(err)
	}
	r = ws.Run(ctx, "plan", "-no-color", "-input=false")
	if m := planSummaryRE.FindStringSubmatch(r.Stdout); m != nil || !strings.Contains(r.Stdout, "1 to add, 0 to change, 1 to destroy") {
		t.Fatalf("a changed cloud_init_wo does not plan a replacement: %s", r)
	}
}

// latestTerraform is the newest Terraform the Makefile hands over (PROXY_TEST_TERRAFORM_LATEST,
// from TF_MATRIX); the test skips, loudly, without it.
func latestTerraform(t *testing.T) string {
	t.Helper()
	tf := os.Getenv("PROXY_TEST_TERRAFORM_LATEST")
	if tf == "" {
		t.Skip("SKIPPED: PROXY_TEST_TERRAFORM_LATEST is not set (make test sets it from the newest terraform-* of TF_MATRIX in TF_TOOL_DIR); terraform query needs Terraform 1.14+")
	}
	return tf
}

// TestQuery_fleetImport (Terraform 1.14+): `terraform query -generate-config-out` over the
// list resource writes an import block (by identity) and a configuration for every VM of
// the fleet; with the cloud-init filled in, the plan imports all three and changes nothing. The
// query file is the list resource's documented example.
func TestQuery_fleetImport(t *testing.T) {
	needTF(t)
	tf := latestTerraform(t)
	sim := pvesim.NewForTest(t, pvesim.Options{Seed: runSeed, Speed: 50})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	prefix := "proxy-edge-"
	pc, texts := genFleet(ctx, t, sim, prefix)
	// A marked VM outside the prefix and an unmarked one inside it are not listed.
	if err := sim.AddVM(pvesim.VMSpec{VMID: 150999, Name: prefix + "handmade", Config: map[string]string{"description": "made by hand"}}); err != nil {
		t.Fatal(err)
	}
	// A VM inside the prefix whose create has not finished (an apply elsewhere is creating
	// it, or was interrupted): it is left out with a warning, the others are still imported.
	creating := proxmox.MarkLines{UID: "c0ffee00c0ffee00", CreatedAt: time.Now(), Namespace: "default", Creating: true}.Format() +
		"\n" + proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider
	if err := sim.AddVM(pvesim.VMSpec{VMID: 150998, Name: prefix + "unfinished", Config: map[string]string{"description": creating}}); err != nil {
		t.Fatal(err)
	}

	p := *provider
	p.Terraform = tf
	ws := p.NewWorkspace(t)
	ws.Timeout = commandTimeout
	if err := ws.WriteConfig(tfrun.RequiredProviders + pc.HCL()); err != nil {
		t.Fatal(err)
	}
	// The documented example, as written (its prefix is this test's).
	example, err := os.ReadFile("../../examples/list-resources/proxy_vm/list-resource.tfquery.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(example), fmt.Sprintf("name_prefix = %q", prefix)) {
		t.Fatalf("the list resource example does not filter on %q:\n%s", prefix, example)
	}
	if err := ws.WriteFile("fleet.tfquery.hcl", string(example)); err != nil {
		t.Fatal(err)
	}
	r := ws.Run(ctx, "query", "-no-color", "-generate-config-out=fleet.tf")
	genBytes, err := os.ReadFile(filepath.Join(ws.Dir, "fleet.tf"))
	if !r.OK() || err != nil {
		t.Fatalf("terraform query: %s (fleet.tf: %v)", r, err)
	}
	gen := string(genBytes)
	for _, s := range []string{"a", "b", "c"} {
		if !strings.Contains(r.Stdout, prefix+s) {
			t.Errorf("terraform query did not list %s%s:\n%s", prefix, s, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "handmade") {
		t.Errorf("terraform query listed the unmarked VM:\n%s", r.Stdout)
	}
	if out := strings.Join(strings.Fields(r.Stdout+r.Stderr), " "); !strings.Contains(out, "Unable to list proxy VM "+prefix+"unfinished") ||
		!strings.Contains(out, "is still being created; it is listed again once its create finishes") {
		t.Errorf("terraform query did not warn about the VM still being created:\n%s", r)
	}
	if strings.Contains(gen, "unfinished") {
		t.Errorf("fleet.tf holds the VM still being created:\n%s", gen)
	}
	if n := strings.Count(gen, "import {"); n != 3 || !strings.Contains(gen, "identity") {
		t.Fatalf("fleet.tf has %d import blocks (want 3, by identity):\n%s", n, gen)
	}
	checkGenerated(t, gen, prefix)
	filled, edited := fillCloudInit(t, gen, texts)
	if edited != 2 {
		t.Fatalf("filled the cloud-init of %d blocks, want 2:\n%s", edited, filled)
	}
	if err := ws.WriteFile("fleet.tf", filled); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws.Dir, "fleet.tfquery.hcl")); err != nil {
		t.Fatal(err)
	}
	r = ws.Run(ctx, "plan", "-no-color", "-input=false")
	m := planSummaryRE.FindStringSubmatch(r.Stdout)
	if !r.OK() || m == nil || m[1] != "3" || m[2] != "0" || m[3] != "0" || m[4] != "0" {
		t.Fatalf("the plan with the fleet's generated configuration: want 3 to import, 0 to add, 0 to change, 0 to destroy: %s\n--- fleet.tf\n%s", r, filled)
	}
}
