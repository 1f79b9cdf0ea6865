package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Failure semantics for a one-shot tool: a plan that cannot look fails, a configuration
// mistake is found before anything is touched (on the attribute that holds it, nothing
// cloned, uploaded or tainted, and a destroy that finishes), and the connection's own
// failures (no answer, x509, 401, missing files) name the setting to check.

// closedEndpoint is an https address nothing listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "https://" + addr
}

// untouched asserts that the simulator saw no write (no clone, upload, config write,
// resize, start, stop, destroy, volume delete) and the state holds no tainted resource.
func untouched(t *testing.T, s *scenario) bool {
	t.Helper()
	ok := true
	stats := s.sim.Stats()
	for _, k := range []string{tfrun.StatClone, tfrun.StatUpload, tfrun.StatConfigPut, tfrun.StatConfigPost, tfrun.StatResize,
		tfrun.StatStart, tfrun.StatStop, tfrun.StatDestroy, tfrun.StatVolumeDelete} {
		if stats[k] != 0 {
			ok = false
			t.Errorf("the refused run made %d %s request(s)", stats[k], k)
		}
	}
	if f := s.chk.Gone(); !f.OK() {
		ok = false
		t.Errorf("the cluster holds something of the scenario: %v", f.Err())
	}
	if _, err := os.Stat(s.ws.StateFile()); err == nil {
		st := s.state()
		for _, r := range st.OfType("proxy_vm") {
			ok = false
			t.Errorf("the state holds %s (tainted %v) after a refused create", r.Address, r.Tainted)
		}
	}
	return ok
}

// TestE2E_Failure_UnreachableEndpoint: a refresh against an endpoint nothing listens on
// fails the plan (exit 1 with -detailed-exitcode, never 0 "No changes"), naming the
// address; an apply fails within seconds and never blames a lock.
func TestE2E_Failure_UnreachableEndpoint(t *testing.T) {
	s := newScenario(t, "bad-input/environment", scenarioOpts{NoForeign: true})
	s.vms = []tfrun.VM{s.vm("down")}
	s.mustApply()
	ep := closedEndpoint(t)
	live := s.pc
	s.pc.Endpoint = ep
	s.write()

	r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-detailed-exitcode")
	out := r.Output()
	addr := strings.TrimPrefix(ep, "https://")
	ok := r.ExitCode == 1 && strings.Contains(out, addr) && strings.Contains(out, "does not answer") && !strings.Contains(out, "No changes")
	if !ok {
		t.Errorf("plan against %s: want exit 1 naming the address, got exit %d:\n%s", ep, r.ExitCode, r)
	}
	start := time.Now()
	a := s.apply()
	took := time.Since(start)
	aout := a.Output()
	aout = tfrun.TrimOverridesWarning(aout)
	okApply := !a.OK() && strings.Contains(aout, addr) && !strings.Contains(aout, "unlock") && !strings.Contains(aout, "locked") &&
		!strings.Contains(aout, "still busy") && took < 60*time.Second
	if !okApply {
		t.Errorf("apply against %s (%s): want a fast failure naming the address, without a lock:\n%s", ep, took, a)
	}
	t.Logf("plan exit %d, apply failed after %s:\n%s", r.ExitCode, took.Round(time.Millisecond), tail(tfrun.TrimOverridesWarning(a.Stderr), 12))
	s.pc = live
	if d := s.destroy(); !d.OK() {
		ok = false
		t.Errorf("destroy with the endpoint back: %v", d)
	}
	envOutcome(s, ok && okApply)
}

// preflightCase is a configuration mistake the preflight must catch at plan time.
type preflightCase struct {
	name string
	attr string // the attribute the diagnostic must name
	pc   func(c *tfrun.ProviderConfig)
	vm   func(v *tfrun.VM)
}

var preflightCases = []preflightCase{
	{name: "iso_storage-typo", attr: "iso_storage", pc: func(c *tfrun.ProviderConfig) { c.ISOStorage = "seeds-typo" }},
	{name: "iso_storage-no-iso", attr: "iso_storage", pc: func(c *tfrun.ProviderConfig) { c.ISOStorage = "backups" }},
	{name: "storage-typo", attr: "storage", pc: func(c *tfrun.ProviderConfig) { c.Storage = "local-lvm-typo" }},
	{name: "storage-no-images", attr: "storage", pc: func(c *tfrun.ProviderConfig) { c.Storage = "local" }},
	{name: "nodes-unknown", attr: "nodes", pc: func(c *tfrun.ProviderConfig) { c.Nodes = []string{"pve9"} }},
	{name: "node-unknown", attr: "node", pc: func(c *tfrun.ProviderConfig) { c.Nodes = []string{"pve1", "pve9"} },
		vm: func(v *tfrun.VM) { v.Node = "pve9" }},
	{name: "disk_gib-below-template", attr: "disk_gib", vm: func(v *tfrun.VM) { v.DiskGiB = 2 }},
	{name: "template_vmid-missing", attr: "template_vmid", vm: func(v *tfrun.VM) { v.Image = ""; v.Extra = "template_vmid = 9555" }},
	{name: "template_vmid-not-template", attr: "template_vmid", vm: func(v *tfrun.VM) { v.Image = ""; v.Extra = "template_vmid = 100" }},
	{name: "image-cloud-init-drive", attr: "image",
		pc: func(c *tfrun.ProviderConfig) { c.Templates["ubuntu-ci"] = pvesim.CloudInitTemplateVMID },
		vm: func(v *tfrun.VM) { v.Image = "ubuntu-ci" }},
	{name: "bridge-typo", attr: "bridge", vm: func(v *tfrun.VM) { v.Bridge = "vmbr9" }},
	{name: "provider-bridge-typo", attr: "bridge", pc: func(c *tfrun.ProviderConfig) { c.Bridge = "vmbr7" }},
}

// TestE2E_BadInput_Preflight: every mistake of preflightCases fails the plan with a
// diagnostic naming its attribute, and an apply fails the same way; nothing is cloned or
// uploaded, no resource is left in the state (tainted or not), and a destroy finishes.
func TestE2E_BadInput_Preflight(t *testing.T) {
	needTF(t)
	for _, c := range preflightCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "bad-input/preflight", scenarioOpts{Sim: pvesim.Options{Nodes: []string{"pve1"}}})
			v := s.vm("pf")
			if c.pc != nil {
				c.pc(&s.pc)
			}
			if c.vm != nil {
				c.vm(&v)
			}
			s.vms = []tfrun.VM{v}
			s.write()
			s.sim.ResetStats()
			r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-json")
			diags := tfrun.Errors(tfrun.ParseDiagnostics(r.Stdout))
			ok := !r.OK() && len(diags) > 0 && onAttribute(diags, c.attr)
			if !ok {
				t.Errorf("plan: want an error naming %s, got exit %d:\n%s\n%s", c.attr, r.ExitCode, describeDiags(diags), tail(r.Output(), 20))
			}
			a := s.apply()
			// Terraform wraps a diagnostic's text at the terminal width: compare words.
			words := strings.Join(strings.Fields(a.Output()), " ")
			if a.OK() || !strings.Contains(words, c.attr) || !strings.Contains(words, "Nothing was cloned") {
				ok = false
				t.Errorf("apply: want the same refusal:\n%s", a)
			}
			if !untouched(t, s) {
				ok = false
			}
			if d := s.destroy(); !d.OK() {
				ok = false
				t.Errorf("destroy after the refused apply: %v", d)
			}
			t.Logf("diagnostic: %s", describeDiags(diags))
			s.figure(func(row *figureRow) {
				row.Run++
				row.DiagRun++
				if ok {
					row.Converged++
					row.DiagOK++
				}
			})
		})
	}
}

// TestE2E_BadInput_MissingFiles: a ca_file or api_token_file that does not exist fails the
// plan on its attribute, before any request.
func TestE2E_BadInput_MissingFiles(t *testing.T) {
	needTF(t)
	for name, tc := range map[string]struct {
		attr string
		pc   func(c *tfrun.ProviderConfig, dir string)
	}{
		"ca_file": {"ca_file", func(c *tfrun.ProviderConfig, dir string) { c.CAFile = filepath.Join(dir, "missing-ca.pem") }},
		"api_token_file": {"api_token_file", func(c *tfrun.ProviderConfig, dir string) {
			c.APIToken, c.APITokenFile = "", filepath.Join(dir, "missing-token")
		}},
		"api_token_file-junk": {"api_token_file", func(c *tfrun.ProviderConfig, dir string) {
			c.APIToken, c.APITokenFile = "", filepath.Join(dir, "junk-token")
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "bad-input/attributes", scenarioOpts{NoForeign: true})
			if err := os.WriteFile(filepath.Join(s.ws.Dir, "junk-token"), []byte("SENTINEL-NOT-A-TOKEN\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			tc.pc(&s.pc, s.ws.Dir)
			s.vms = []tfrun.VM{s.vm("f")}
			s.write()
			s.sim.ResetStats()
			r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-json")
			diags := tfrun.Errors(tfrun.ParseDiagnostics(r.Stdout))
			ok := !r.OK() && onAttribute(diags, tc.attr) && tfrun.TotalRequests(s.sim.Stats()) == 0 &&
				!strings.Contains(r.Output(), "SENTINEL-NOT-A-TOKEN") && !strings.Contains(r.Output(), "retried")
			if !ok {
				t.Errorf("want a plan error on %s without a request (made %d):\n%s", tc.attr, tfrun.TotalRequests(s.sim.Stats()), describeDiags(diags))
			}
			s.figure(func(row *figureRow) {
				row.Run++
				row.DiagRun++
				if ok {
					row.Converged++
					row.DiagOK++
				}
			})
		})
	}
}

// TestE2E_BadInput_WrongSecret: a token whose secret is wrong fails the plan of a create,
// naming api_token and the token id, never the secret, and without a stray "!.".
func TestE2E_BadInput_WrongSecret(t *testing.T) {
	s := newScenario(t, "bad-input/environment", scenarioOpts{NoForeign: true})
	id, _, _ := strings.Cut(s.sim.APIToken, "=")
	secret := "00000000-dead-beef-0000-000000000000"
	s.pc.APIToken = id + "=" + secret
	s.vms = []tfrun.VM{s.vm("sec")}
	s.write()
	r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color")
	out := r.Output()
	ok := !r.OK() && strings.Contains(out, "api_token") && strings.Contains(out, id) && strings.Contains(out, envTokenName) &&
		!strings.Contains(out, secret) && !strings.Contains(out, "!.") && strings.Contains(out, "Authentication failed.")
	if !ok {
		t.Errorf("a wrong secret: want a plan error naming api_token and %s:\n%s", id, r)
	}
	t.Logf("diagnostic:\n%s", tail(tfrun.TrimOverridesWarning(r.Stderr), 14))
	if !untouched(t, s) {
		ok = false
	}
	envOutcome(s, ok)
}

const envTokenName = "PROXMOX_VE_API_TOKEN"

// TestE2E_BadInput_NoCA: without ca_file the simulator's certificate does not verify, and
// the diagnostic names ca_file and insecure.
func TestE2E_BadInput_NoCA(t *testing.T) {
	s := newScenario(t, "bad-input/environment", scenarioOpts{NoForeign: true})
	s.pc.CAFile = ""
	s.vms = []tfrun.VM{s.vm("noca")}
	s.write()
	r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color")
	out := r.Output()
	ok := !r.OK() && strings.Contains(out, "x509") && strings.Contains(out, "ca_file") && strings.Contains(out, "insecure")
	if !ok {
		t.Errorf("no CA: want a plan error naming ca_file and insecure:\n%s", r)
	}
	t.Logf("diagnostic:\n%s", tail(tfrun.TrimOverridesWarning(r.Stderr), 12))
	if !untouched(t, s) {
		ok = false
	}
	envOutcome(s, ok)
}

// TestE2E_BadInput_CloudInitFormat: a cloud_init in no cloud-init format plans with a
// warning on cloud_init that does not quote it, while the recognised formats plan quietly.
// (Negative and zero timeouts and an empty cloud_init are refused in
// TestE2E_BadInput_Attributes.)
func TestE2E_BadInput_CloudInitFormat(t *testing.T) {
	needTF(t)
	cases := []struct {
		name, attr string
		vm         func(v *tfrun.VM)
		warn       bool
	}{
		{"cloud_init-unknown-format", "cloud_init", func(v *tfrun.VM) { v.CloudInit = "hostname: proxy\npackages: [squid]\n" }, true},
		{"cloud_init-script", "", func(v *tfrun.VM) { v.CloudInit = "#!/bin/sh\necho squid\n" }, false},
		{"cloud_init-jinja", "", func(v *tfrun.VM) { v.CloudInit = "## template: jinja\n#cloud-config\nhostname: squid\n" }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newScenario(t, "bad-input/attributes", scenarioOpts{NoForeign: true})
			v := s.vm("x")
			c.vm(&v)
			s.vms = []tfrun.VM{v}
			s.write()
			s.sim.ResetStats()
			r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-json")
			all := tfrun.ParseDiagnostics(r.Stdout)
			errs := tfrun.Errors(all)
			var ok bool
			if c.warn {
				var warns []tfrun.Diagnostic
				for _, d := range all {
					if d.Severity == "warning" {
						warns = append(warns, d)
					}
				}
				ok = r.OK() && onAttribute(warns, c.attr)
				for _, d := range warns {
					// terraform's snippet quotes the source line; the provider's text must not.
					if strings.Contains(d.Summary+d.Detail, "squid") {
						ok = false
						t.Errorf("the warning quotes cloud_init: %s", d.Detail)
					}
				}
				if !ok {
					t.Errorf("want a plan with a warning on %s:\n%s\n%s", c.attr, describeDiags(all), tail(r.Output(), 30))
				}
			} else {
				ok = r.OK() && len(errs) == 0 && !strings.Contains(r.Output(), "cloud_init is not in a format")
				if !ok {
					t.Errorf("want a plan without a cloud_init warning:\n%s", describeDiags(all))
				}
			}
			s.figure(func(row *figureRow) {
				row.Run++
				row.DiagRun++
				if ok {
					row.Converged++
					row.DiagOK++
				}
			})
		})
	}
}

// preflightStats are the requests only the preflight makes during an apply (the node
// status, the storage statuses, the node network); it also reads the shared listing and
// one template config per provider instance, which creates read too.
var preflightStats = []string{"GET /nodes/{node}/status", "GET /nodes/{node}/storage/{storage}/status", "GET /nodes/{node}/network"}

// TestE2E_Failure_PreflightRequests measures what the preflight costs: an apply of 1 and
// of 100 VMs (a bridge set, so every check runs) makes the same constant number of
// preflight requests (terraform plans and applies with two provider instances, each
// checking once), and a no-op plan makes none of them and stays near two requests per VM.
func TestE2E_Failure_PreflightRequests(t *testing.T) {
	needTF(t)
	counts := []int{1, 100}
	if testing.Short() {
		counts = []int{1, 10}
	}
	perApply := map[int]int{}
	for _, n := range counts {
		s := newScenario(t, "bad-input/preflight-cost", scenarioOpts{NoForeign: true})
		s.ws.Timeout = 10 * time.Minute
		s.pc.VMIDMin, s.pc.VMIDMax = 1000, 1999
		v := s.vm("m${count.index}")
		v.Count, v.Bridge = n, "vmbr1"
		v.WaitForIP = new(bool)
		s.vms = []tfrun.VM{v}
		s.sim.ResetStats()
		s.mustApply()
		stats := s.sim.Stats()
		pre := 0
		for _, k := range preflightStats {
			pre += stats[k]
		}
		perApply[n] = pre
		s.sim.ResetStats()
		r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-detailed-exitcode")
		if r.ExitCode != 0 {
			t.Fatalf("the plan after the apply of %d VMs is not empty (exit %d):\n%s", n, r.ExitCode, r)
		}
		plan := s.sim.Stats()
		planPre := 0
		for _, k := range preflightStats {
			planPre += plan[k]
		}
		total := tfrun.TotalRequests(plan)
		t.Logf("%d VMs: apply made %d preflight requests (%v); the no-op plan made %d requests (%.2f per VM), %d of them preflight",
			n, pre, pick(stats, preflightStats), total, float64(total)/float64(n), planPre)
		figures.note(s.cat, fmt.Sprintf("apply of %d VMs: %d preflight requests; no-op plan %.2f requests/VM", n, pre, float64(total)/float64(n)))
		if planPre != 0 {
			t.Errorf("a no-op plan of %d VMs ran the preflight (%d requests)", n, planPre)
		}
		// Per VM at most two requests; the cluster listing is shared by the reads of one
		// provider instance within a window of proxmox's ListingTTL on the provider's clock,
		// so how many listings a plan makes depends on how long it runs (a loaded machine
		// stretches it): at most one per window it spans, plus the one in flight.
		listings := plan[tfrun.StatResources]
		windows := int(r.Duration/proxmox.DefaultBudgets().ListingTTL) + 2
		if perVM := total - listings; perVM > 2*n+2 {
			t.Errorf("a no-op plan of %d VMs made %d requests besides the listings, more than 2 per VM + 2", n, perVM)
		}
		if listings > windows {
			t.Errorf("a no-op plan of %d VMs made %d listings in %s, more than one per %s window (%d)", n, listings,
				r.Duration.Round(time.Second), proxmox.DefaultBudgets().ListingTTL, windows)
		}
		if d := s.destroy(); !d.OK() {
			t.Errorf("destroy: %v", d)
		}
	}
	ok := perApply[counts[0]] == perApply[counts[1]] && perApply[counts[0]] <= 8
	if !ok {
		t.Errorf("preflight requests per apply: %v, want the same constant (at most 4 per provider instance)", perApply)
	}
	figures.update("bad-input/preflight-cost", func(row *figureRow) {
		row.Run++
		if ok && !t.Failed() {
			row.Converged++
		}
	})
}

func pick(m map[string]int, keys []string) map[string]int {
	out := map[string]int{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}
