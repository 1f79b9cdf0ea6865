package provider

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// The acceptance tests run under every CLI of the GNUmakefile's TF_MATRIX: Terraform, and
// OpenTofu through the same TF_ACC_TERRAFORM_PATH. What differs between them is handled here
// and listed in docs/index.md ("Terraform and OpenTofu"):
//
//   - OpenTofu's default registry host is registry.opentofu.org, so a configuration's
//     `provider "proxy"` means registry.opentofu.org/hashicorp/proxy there: the in-process
//     provider is attached under that host (TF_ACC_PROVIDER_HOST, which plugin-testing reads)
//     or OpenTofu would look it up in a registry;
//   - OpenTofu reports its own version (1.12.6) where plugin-testing expects Terraform's, so
//     a feature OpenTofu lacks is skipped by name (skipOnOpenTofu), never by a version number
//     that means something else there.

// testCLI is the CLI plugin-testing runs: TF_ACC_TERRAFORM_PATH, else terraform on PATH.
var testCLI = sync.OnceValues(func() (path string, openTofu bool) {
	path = os.Getenv("TF_ACC_TERRAFORM_PATH")
	if path == "" {
		var err error
		if path, err = exec.LookPath("terraform"); err != nil {
			return "", false
		}
	}
	return path, tfrun.IsOpenTofu(path)
})

// useOpenTofuRegistryHost attaches the in-process provider under OpenTofu's registry host
// when the tests run OpenTofu (and TF_ACC_PROVIDER_HOST is not set already). Called from
// TestMain, before any test starts terraform.
func useOpenTofuRegistryHost() {
	if _, tofu := testCLI(); tofu && os.Getenv("TF_ACC_PROVIDER_HOST") == "" {
		_ = os.Setenv("TF_ACC_PROVIDER_HOST", "registry.opentofu.org")
	}
}

// skipOnOpenTofu is a TerraformVersionCheck that skips the test under OpenTofu, saying which
// feature it lacks. Put it before version checks: OpenTofu's version numbers are its own.
func skipOnOpenTofu(feature string) tfversion.TerraformVersionCheck {
	return openTofuCheck{feature: feature}
}

type openTofuCheck struct{ feature string }

func (c openTofuCheck) CheckTerraformVersion(_ context.Context, req tfversion.CheckTerraformVersionRequest, resp *tfversion.CheckTerraformVersionResponse) {
	if _, tofu := testCLI(); tofu {
		resp.Skip = "SKIPPED on OpenTofu " + req.TerraformVersion.String() + ": it has no " + c.feature +
			" (Terraform only; docs/index.md, \"Terraform and OpenTofu\")"
	}
}

func TestMain(m *testing.M) {
	useOpenTofuRegistryHost()
	os.Exit(m.Run())
}
