package e2e

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// planFileHolds reports whether any file inside a saved plan (a zip) holds s.
func planFileHolds(t *testing.T, planFile, s string) bool {
	t.Helper()
	zr, err := zip.OpenReader(planFile)
	if err != nil {
		t.Fatalf("plan file %s: %v", planFile, err)
	}
	defer zr.Close()
	if len(zr.File) == 0 {
		t.Fatalf("plan file %s is empty", planFile)
	}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}

// TestWriteOnly_sentinel: a VM made (and then replaced) with cloud_init_wo (read from a file)
// at TF_LOG=TRACE boots with the text, and the text appears in neither the state, nor a saved plan file,
// nor `terraform show -json` of it, nor any TRACE log. The same flow with cloud_init is the
// control: there the text is in the state and the plan file, so the checks can see it.
func TestWriteOnly_sentinel(t *testing.T) {
	needTF(t)
	for _, attr := range []string{"cloud_init_wo", "cloud_init"} {
		t.Run(attr, func(t *testing.T) {
			sim := pvesim.NewForTest(t, pvesim.Options{Seed: runSeed, Speed: 50})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			pc := tfrun.SimConfig(sim)
			pc.Extra = "  cloud_init_digest_key = \"e2e-digest-key-0123456789\"\n"
			ws := provider.NewWorkspace(t)
			ws.Timeout = commandTimeout
			ws.Trace = true
			sentinels := []string{"5e471ne1-wo-" + fmt.Sprint(runSeed), "5e471ne2-wo-" + fmt.Sprint(runSeed)}
			for i, sentinel := range sentinels {
				text := "#cloud-config\n# " + sentinel + "\n"
				// From a file, as a real configuration has it: a saved plan holds a copy of
				// the .tf files, so a literal there would be in it whatever the attribute.
				hcl := tfrun.RequiredProviders + pc.HCL() + fmt.Sprintf(`
resource "proxy_vm" "s" {
  name         = "proxy-sentinel"
  image        = "debian-13"
  machine_type = "small"
  %s = file("${path.module}/cloud-init.yaml")
}
`, attr)
				if err := ws.WriteConfig(hcl); err != nil {
					t.Fatal(err)
				}
				if err := ws.WriteFile("cloud-init.yaml", text); err != nil {
					t.Fatal(err)
				}
				planFile := filepath.Join(ws.Dir, fmt.Sprintf("step%d.tfplan", i))
				if r := ws.Run(ctx, "plan", "-no-color", "-input=false", "-out="+planFile); !r.OK() {
					t.Fatalf("plan: %s", r)
				}
				show := ws.Run(ctx, "show", "-json", planFile)
				if !show.OK() {
					t.Fatalf("show: %s", show)
				}
				if r := ws.Apply(ctx, planFile); !r.OK() {
					t.Fatalf("apply: %s", r)
				}
				st, err := os.ReadFile(ws.StateFile())
				if err != nil {
					t.Fatal(err)
				}
				inState, inPlan := strings.Contains(string(st), sentinel), planFileHolds(t, planFile, sentinel)
				inShow, inLogs := strings.Contains(show.Stdout, sentinel), strings.Contains(ws.Logs(), sentinel)
				if attr == "cloud_init_wo" && (inState || inPlan || inShow || inLogs) {
					t.Fatalf("the cloud_init_wo text is in: state %v, plan file %v, show -json %v, TRACE logs %v", inState, inPlan, inShow, inLogs)
				}
				if attr == "cloud_init" && (!inState || !inPlan) {
					t.Fatalf("control: the cloud_init text should be in the state (%v) and the plan file (%v)", inState, inPlan)
				}
				if inLogs {
					t.Fatalf("the %s text is in a TRACE log", attr)
				}
				if len(ws.Logs()) < 10000 {
					t.Fatalf("the TRACE logs are %d bytes: the check would prove nothing", len(ws.Logs()))
				}
				// The guest booted with it, and a new text replaced the VM.
				var found bool
				for _, vm := range sim.State().VMs {
					if vm.Name != "proxy-sentinel" {
						continue
					}
					seed, ok := sim.GuestSeed(vm.VMID)
					found = ok && string(seed.UserData) == text
				}
				if !found {
					t.Fatalf("no VM booted with the step %d text", i)
				}
			}
			if r := ws.Destroy(ctx); !r.OK() {
				t.Fatalf("destroy: %s", r)
			}
		})
	}
}
