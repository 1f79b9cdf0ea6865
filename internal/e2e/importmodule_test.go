package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-version"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// TestImport_blockInModule (Terraform 1.16+): a module that declares proxy VMs carries the
// `import` blocks that adopt them, as a platform team's shared module does. A VM made by one
// configuration and taken out of its state is imported by a second one whose import block
// sits inside the module: the plan is 1 to import and nothing else, the apply changes
// nothing, the next plan is empty, and the destroy leaves no VM. Terraform before 1.16 and
// OpenTofu 1.12 accept import blocks only in the root module (docs/index.md, "Terraform and
// OpenTofu").
func TestImport_blockInModule(t *testing.T) {
	needTF(t)
	tf := terraformAtLeast(t, "1.16.0", "import blocks inside a module")
	sim := pvesim.NewForTest(t, pvesim.Options{Seed: runSeed, Speed: 50})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	pc := tfrun.SimConfig(sim)
	name := "proxy-modimp-a"
	vm := fmt.Sprintf(`
resource "proxy_vm" "a" {
  name       = %q
  image      = "debian-13"
  cores      = 2
  memory_mib = 768
}
`, name)

	p := *provider
	p.Terraform = tf
	made := p.NewWorkspace(t)
	made.Timeout = commandTimeout
	if err := made.WriteConfig(tfrun.RequiredProviders + pc.HCL() + vm); err != nil {
		t.Fatal(err)
	}
	if r := made.Apply(ctx); !r.OK() {
		t.Fatalf("apply of the VM: %s", r)
	}
	if r := made.Run(ctx, "state", "rm", "-no-color", "proxy_vm.a"); !r.OK() {
		t.Fatalf("state rm: %s", r)
	}

	ws := p.NewWorkspace(t)
	ws.Timeout = commandTimeout
	if err := ws.WriteConfig(tfrun.RequiredProviders + pc.HCL() + "\nmodule \"proxies\" {\n  source = \"./proxies\"\n}\n"); err != nil {
		t.Fatal(err)
	}
	module := tfrun.RequiredProviders + fmt.Sprintf("\nimport {\n  to = proxy_vm.a\n  id = %q\n}\n", name) + vm
	if err := ws.WriteFile("proxies/main.tf", module); err != nil {
		t.Fatal(err)
	}
	// A local module is installed by `terraform get` (init would look the provider up).
	if r := ws.Run(ctx, "get", "-no-color"); !r.OK() {
		t.Fatalf("terraform get: %s", r)
	}
	r := ws.Run(ctx, "plan", "-no-color", "-input=false")
	if m := planSummaryRE.FindStringSubmatch(r.Stdout); !r.OK() || m == nil || m[1] != "1" || m[2] != "0" || m[3] != "0" || m[4] != "0" {
		t.Fatalf("the plan with an import block in the module: want 1 to import, 0 to add, 0 to change, 0 to destroy: %s", r)
	}
	if !strings.Contains(r.Stdout, "module.proxies.proxy_vm.a") {
		t.Fatalf("the plan does not import module.proxies.proxy_vm.a: %s", r)
	}
	if r := ws.Apply(ctx); !r.OK() || !strings.Contains(r.Stdout, "1 imported, 0 added, 0 changed, 0 destroyed") {
		t.Fatalf("apply of the import: %s", r)
	}
	if r := ws.Plan(ctx); r.ExitCode != 0 {
		t.Fatalf("the plan after the import is not empty (exit %d): %s", r.ExitCode, r)
	}
	if r := ws.Destroy(ctx); !r.OK() {
		t.Fatalf("destroy: %s", r)
	}
	for _, v := range sim.State().VMs {
		if v.Name == name {
			t.Fatalf("VM %d (%s) is left after the destroy:\n%s", v.VMID, name, tfrun.Describe(sim.State()))
		}
	}
}

// terraformAtLeast is a Terraform CLI of at least version least: the suite's CLI when it is
// one, else PROXY_TEST_TERRAFORM_LATEST when it is one; the test skips, loudly, naming the
// feature, without either.
func terraformAtLeast(t *testing.T, least, feature string) string {
	t.Helper()
	want := version.Must(version.NewVersion(least))
	var seen []string
	for _, cli := range []string{provider.Terraform, latestTerraformOrEmpty()} {
		if cli == "" {
			continue
		}
		name, v, err := cliVersion(cli)
		if err != nil {
			t.Fatal(err)
		}
		if name == "Terraform" && !v.LessThan(want) {
			return cli
		}
		seen = append(seen, name+" "+v.String())
	}
	t.Skipf("SKIPPED: %s need Terraform %s or later; the run has %s (make test hands the newest Terraform of TF_MATRIX over as PROXY_TEST_TERRAFORM_LATEST)",
		feature, least, strings.Join(seen, " and "))
	return ""
}

func latestTerraformOrEmpty() string { return os.Getenv("PROXY_TEST_TERRAFORM_LATEST") }

// cliVersion is the CLI's name (Terraform or OpenTofu) and version.
func cliVersion(cli string) (string, *version.Version, error) {
	name := "Terraform"
	if tfrun.IsOpenTofu(cli) {
		name = "OpenTofu"
	}
	cmd := exec.Command(cli, "version", "-json")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		return "", nil, fmt.Errorf("%s version -json: %w", cli, err)
	}
	// OpenTofu may print a warning about its CLI configuration before the JSON.
	if i := strings.Index(string(out), "{"); i > 0 {
		out = out[i:]
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", nil, fmt.Errorf("%s version -json: %w: %s", cli, err, out)
	}
	ver, err := version.NewVersion(v.Version)
	return name, ver, err
}
