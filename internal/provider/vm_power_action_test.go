package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// withActionTerraform makes the test run a Terraform with actions (1.14 and later): the
// run's CLI when it is one, else PROXY_TEST_TERRAFORM_LATEST (make test sets it to the
// newest Terraform of TF_MATRIX), given to plugin-testing for this test only, so the test
// must not be parallel. Without either it skips, loudly.
func withActionTerraform(t *testing.T) {
	t.Helper()
	want := version.Must(version.NewVersion("1.14.0"))
	cli, _ := testCLI()
	var seen []string
	for i, c := range []string{cli, os.Getenv("PROXY_TEST_TERRAFORM_LATEST")} {
		if c == "" {
			continue
		}
		v, err := terraformVersion(c)
		if err != nil {
			t.Fatal(err)
		}
		if v != nil && !v.LessThan(want) {
			if i > 0 {
				t.Setenv("TF_ACC_TERRAFORM_PATH", c)
			}
			return
		}
		name := "OpenTofu"
		if v != nil {
			name = "Terraform " + v.String()
		}
		seen = append(seen, name)
	}
	t.Skipf("SKIPPED: actions need Terraform 1.14 or later; the run has %s (make test hands the newest Terraform of TF_MATRIX over as PROXY_TEST_TERRAFORM_LATEST)",
		strings.Join(seen, " and "))
}

// terraformVersion is a Terraform CLI's version; nil for OpenTofu (no actions).
func terraformVersion(cli string) (*version.Version, error) {
	if tfrun.IsOpenTofu(cli) {
		return nil, nil
	}
	cmd := exec.Command(cli, "version", "-json")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s version -json: %w", cli, err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("%s version -json: %w", cli, err)
	}
	return version.NewVersion(v.Version)
}

// powerTriggered is the configuration of the power tests: the VM, a proxy_vm_power action
// with power op on it, and a terraform_data whose create or update (input changes with
// step) triggers the action.
func powerTriggered(base, vm, action string, step int) string {
	return base + vm + action + fmt.Sprintf(`
resource "terraform_data" "trigger" {
  input = %d
  lifecycle {
    action_trigger {
      events  = [after_create, after_update]
      actions = [action.proxy_vm_power.this]
    }
  }
}
`, step)
}

func powerAction(op string) string {
	return fmt.Sprintf(`
action "proxy_vm_power" "this" {
  config {
    id               = proxy_vm.test.id
    uid              = proxy_vm.test.uid
    power            = %q
    shutdown_timeout = "30s"
  }
}
`, op)
}

// checkVMStatus checks the VM's status in the simulator.
func checkVMStatus(env *testEnv, vmid *int, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vm, ok := env.Sim.VM(*vmid)
		if !ok {
			return fmt.Errorf("VM %d gone", *vmid)
		}
		if vm.Status != want {
			return fmt.Errorf("VM %d is %s, want %s", *vmid, vm.Status, want)
		}
		return nil
	}
}

// TestAccVMPowerAction_eachPower (Terraform 1.14+): proxy_vm_power from an action_trigger,
// each power value in turn on the VM, with the requests it sends: reboot (a graceful
// shutdown, then a start; the plan after is empty), shutdown (graceful), start, stop (no
// shutdown). After shutdown and stop the plan is not empty, since started = true contradicts
// the VM's state, nor after start with started = false. Last, the action aimed at another
// workspace's VM of the same name (its mark carries another uid) fails, and that VM gets no
// request.
func TestAccVMPowerAction_eachPower(t *testing.T) {
	withActionTerraform(t)
	f := newPowerFixture(t, "power", "reads the simulator's request log")
	env, c, name, base, log := f.env, f.c, f.name, f.base, f.log
	vm := func(started bool) string {
		return vmResource(env, name, fmt.Sprintf("  machine_type = \"small\"\n  started = %t", started))
	}
	var vmid int
	// Another workspace's VM of the same name: the same mark lines, another uid.
	const foreignVMID = 150990
	foreign := func() {
		desc := proxmox.MarkLines{UID: "7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35", CreatedAt: time.Now().UTC().Truncate(time.Second)}.Format() +
			"\n" + proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider
		if err := env.Sim.AddVM(pvesim.VMSpec{VMID: foreignVMID, Name: name, Node: env.Nodes[0], Power: "running",
			Config: map[string]string{"description": desc}}); err != nil {
			t.Fatal(err)
		}
		log.reset()
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		// Ours is gone with its seed; the foreign VM of the same name is left as it was, with
		// no request but reads since it was added.
		CheckDestroy: func(s *terraform.State) error {
			for _, r := range env.Sim.RequestLog()[log.mark:] {
				if r.VMID == foreignVMID && r.Method != http.MethodGet {
					return fmt.Errorf("the foreign VM got %s %s", r.Method, r.Path)
				}
			}
			if vm, ok := env.Sim.VM(foreignVMID); !ok || vm.Status != "running" {
				return fmt.Errorf("the foreign VM is gone or not running")
			}
			vms, err := c.vmsNamed(name)
			if err != nil {
				return err
			}
			if len(vms) != 1 || vms[0] != foreignVMID {
				return fmt.Errorf("VMs named %s after the destroy: %v, want only the foreign %d", name, vms, foreignVMID)
			}
			seeds, err := c.seeds(name)
			if err != nil {
				return err
			}
			if len(seeds) > 0 {
				return fmt.Errorf("seeds of %s after the destroy: %v", name, seeds)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{Config: base + vm(true), Check: resource.ComposeTestCheckFunc(saveVMID(&vmid), func(*terraform.State) error { log.reset(); return nil })},
			{
				Config: powerTriggered(base, vm(true), powerAction("reboot"), 1),
				Check:  resource.ComposeTestCheckFunc(log.check(&vmid, "shutdown", "start"), checkVMStatus(env, &vmid, "running")),
			},
			{
				Config:             powerTriggered(base, vm(true), powerAction("shutdown"), 2),
				Check:              resource.ComposeTestCheckFunc(log.check(&vmid, "shutdown"), checkVMStatus(env, &vmid, "stopped")),
				ExpectNonEmptyPlan: true, // started = true: the next apply starts it
			},
			{
				Config: powerTriggered(base, vm(false), powerAction("start"), 3),
				Check:  resource.ComposeTestCheckFunc(log.check(&vmid, "start"), checkVMStatus(env, &vmid, "running")),
				// started = false contradicts the running VM.
				ExpectNonEmptyPlan: true,
			},
			{
				Config:             powerTriggered(base, vm(true), powerAction("stop"), 4),
				Check:              resource.ComposeTestCheckFunc(log.check(&vmid, "stop"), checkVMStatus(env, &vmid, "stopped")),
				ExpectNonEmptyPlan: true,
			},
			{
				// Aimed at the foreign VM (its VMID, our name, our uid): refused. CheckDestroy
				// checks it got no request.
				PreConfig: foreign,
				Config: powerTriggered(base, vm(true), strings.Replace(powerAction("stop"), "proxy_vm.test.id",
					fmt.Sprintf("%q", fmt.Sprintf("vms/%d/%s", foreignVMID, name)), 1), 5),
				ExpectError: regexp.MustCompile(`another workspace's VM`),
			},
		},
	})
}
