package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-version"
	tfjson "github.com/hashicorp/terraform-json"
)

// TestProvidersSchema_readByTfplugindocs: the file parses as tfplugindocs parses it
// (terraform-json), under the key tfplugindocs looks up, and holds what the docs need from a
// CLI newer than the machine's: the list resource and the resource identity.
func TestProvidersSchema_readByTfplugindocs(t *testing.T) {
	const key = "registry.terraform.io/hashicorp/proxy"
	b, err := providersSchemaJSON(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var s tfjson.ProviderSchemas
	if err := s.UnmarshalJSON(b); err != nil {
		t.Fatalf("terraform-json refuses the file: %v", err)
	}
	p := s.Schemas[key]
	if p == nil {
		t.Fatalf("no provider under %s: %v", key, sortedKeys(s.Schemas))
	}
	if p.ConfigSchema == nil || p.ConfigSchema.Block.Attributes["endpoint"] == nil {
		t.Error("the provider block has no endpoint attribute")
	}
	l := p.ListResourceSchemas["proxy_vm"]
	if l == nil || l.Block.Attributes["name_prefix"] == nil || !l.Block.Attributes["name_prefix"].Optional {
		t.Errorf("the proxy_vm list resource is missing or has no optional name_prefix: %+v", l)
	}
	id := p.ResourceIdentitySchemas["proxy_vm"]
	if id == nil || id.Attributes["vmid"] == nil || !id.Attributes["vmid"].RequiredForImport {
		t.Errorf("the proxy_vm identity is missing or vmid is not required for import: %+v", id)
	}
	wo := p.ResourceSchemas["proxy_vm"].Block.Attributes["cloud_init_wo"]
	if wo == nil || !wo.WriteOnly || !wo.Sensitive {
		t.Errorf("cloud_init_wo is not a sensitive write-only attribute: %+v", wo)
	}
	if p.ResourceSchemas["proxy_vm"].Block.NestedBlocks["timeouts"] == nil {
		t.Error("proxy_vm has no timeouts block")
	}
}

// TestAccProvidersSchema_sameAsTheCLI runs `providers schema -json` of every CLI the test
// run has (the terraform on PATH, TF_ACC_TERRAFORM_PATH, PROXY_TEST_TERRAFORM_LATEST) on the
// built provider: a Terraform 1.14 or later prints exactly the bytes this command writes; an
// older CLI, or OpenTofu, prints the same value for every part it prints and leaves out only
// the parts its version predates (list resources before 1.14, identities before 1.12).
func TestAccProvidersSchema_sameAsTheCLI(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("TF_ACC is not set: this test builds the provider and runs the CLIs")
	}
	clis := map[string]bool{}
	if tf, err := exec.LookPath("terraform"); err == nil {
		clis[tf] = true
	}
	for _, env := range []string{"TF_ACC_TERRAFORM_PATH", "PROXY_TEST_TERRAFORM_LATEST"} {
		if v := os.Getenv(env); v != "" {
			clis[v] = true
		}
	}
	if len(clis) == 0 {
		t.Fatal("no CLI: terraform is not on PATH and neither TF_ACC_TERRAFORM_PATH nor PROXY_TEST_TERRAFORM_LATEST is set")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "terraform-provider-proxy"), ".")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "cli.tfrc")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n", defaultAddress, dir), 0o600); err != nil {
		t.Fatal(err)
	}
	// The full address: OpenTofu's default registry host is not registry.terraform.io.
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    proxy = { source = "`+defaultAddress+`" }
  }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := providersSchemaJSON(ctx, defaultAddress)
	if err != nil {
		t.Fatal(err)
	}
	wantParts := parts(t, want)

	newest := version.Must(version.NewVersion("1.14.0"))
	for _, cli := range sortedKeys(clis) {
		t.Run(filepath.Base(filepath.Dir(cli))+"/"+filepath.Base(cli), func(t *testing.T) {
			env := append(os.Environ(), "TF_CLI_CONFIG_FILE="+cfg, "CHECKPOINT_DISABLE=1")
			name, v := cliVersion(t, cli, env)
			cmd := exec.CommandContext(ctx, cli, "providers", "schema", "-json")
			cmd.Dir = dir
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			got, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s providers schema -json: %v\n%s", name, err, stderr.String())
			}
			if name == "Terraform" && !v.LessThan(newest) {
				if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
					t.Errorf("Terraform %s prints other bytes than this command (parts differing: %v)", v, differing(parts(t, got), wantParts))
				}
				return
			}
			gotParts := parts(t, got)
			if d := differing(gotParts, wantParts); len(d) > 0 {
				var missing, other []string
				for _, k := range d {
					if _, ok := gotParts[k]; ok {
						other = append(other, k)
					} else {
						missing = append(missing, k)
					}
				}
				if len(other) > 0 {
					t.Errorf("%s %s prints other values for %v than this command", name, v, other)
				}
				allowed := map[string]bool{}
				if name == "OpenTofu" || v.LessThan(newest) {
					allowed["list_resource_schemas"] = true
					allowed["action_schemas"] = true
				}
				if v.LessThan(version.Must(version.NewVersion("1.12.0"))) {
					allowed["resource_identity_schemas"] = true
				}
				for _, k := range missing {
					if !allowed[k] {
						t.Errorf("%s %s does not print %s, which it should know", name, v, k)
					}
				}
				t.Logf("%s %s leaves out %v (parts it does not have)", name, v, missing)
			}
		})
	}
}

// parts splits the provider's entry into its top-level parts, each as generic JSON.
func parts(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var doc struct {
		FormatVersion string                    `json:"format_version"`
		Schemas       map[string]map[string]any `json:"provider_schemas"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if doc.FormatVersion != "1.0" {
		t.Errorf("format_version %q, want 1.0", doc.FormatVersion)
	}
	p, ok := doc.Schemas[defaultAddress]
	if !ok || len(doc.Schemas) != 1 {
		t.Fatalf("provider_schemas holds %v, want only %s", sortedKeys(doc.Schemas), defaultAddress)
	}
	return p
}

// differing lists the parts present in either map whose values differ.
func differing(got, want map[string]any) []string {
	var d []string
	for k := range want {
		if !reflect.DeepEqual(got[k], want[k]) {
			d = append(d, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			d = append(d, k)
		}
	}
	sort.Strings(d)
	return d
}

// cliVersion is the CLI's name (Terraform or OpenTofu, from `version`'s first line) and version.
// env must name a CLI configuration that exists: OpenTofu prints its warning about a missing
// one on standard output, before the JSON.
func cliVersion(t *testing.T, cli string, env []string) (string, *version.Version) {
	t.Helper()
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(cli, args...)
		cmd.Env = env
		return cmd.Output()
	}
	out, err := run("version", "-json")
	if err != nil {
		t.Fatalf("%s version -json: %v", cli, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%s version -json: %v: %s", cli, err, out)
	}
	plain, err := run("version")
	if err != nil {
		t.Fatalf("%s version: %v", cli, err)
	}
	name := "Terraform"
	if strings.HasPrefix(string(plain), "OpenTofu") {
		name = "OpenTofu"
	}
	return name, version.Must(version.NewVersion(v.Version))
}
