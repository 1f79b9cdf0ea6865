package e2e

import (
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Bad input: invalid values for every provider and resource attribute are refused at
// plan time, on the attribute, without a single request to the cluster; malformed import
// IDs are refused with the accepted forms; and the environment's own bad inputs (an
// endpoint that is not Proxmox, the wrong CA, a token revoked mid-apply, a template
// deleted between plan and apply, a node dropped from the configuration while VMs live
// on it) fail cleanly and leave nothing behind.

// badAttr is one invalid value: attr is the attribute (its name must show in the
// diagnostic's source line or text); edit changes the scenario's configuration.
type badAttr struct {
	name string
	attr string
	pc   func(c *tfrun.ProviderConfig)
	vm   func(v *tfrun.VM)
}

var badProviderAttrs = []badAttr{
	{name: "endpoint-http", attr: "endpoint", pc: func(c *tfrun.ProviderConfig) { c.Endpoint = "http://127.0.0.1:8006" }},
	{name: "endpoint-garbage", attr: "endpoint", pc: func(c *tfrun.ProviderConfig) { c.Endpoint = "not a url" }},
	{name: "endpoint-path", attr: "endpoint", pc: func(c *tfrun.ProviderConfig) { c.Endpoint = "https://127.0.0.1:8006/somewhere" }},
	{name: "api_token-shape", attr: "api_token", pc: func(c *tfrun.ProviderConfig) { c.APIToken = "root@pam-no-id" }},
	{name: "api_token-empty-secret", attr: "api_token", pc: func(c *tfrun.ProviderConfig) { c.APIToken = "root@pam!tf=" }},
	{name: "api_token-and-file", attr: "api_token", pc: func(c *tfrun.ProviderConfig) { c.APITokenFile = "/nonexistent/token" }},
	{name: "ca_pem-garbage", attr: "ca_pem", pc: func(c *tfrun.ProviderConfig) { c.CAFile, c.CAPEM = "", "-----BEGIN NOTHING-----" }},
	{name: "insecure-with-ca", attr: "insecure", pc: func(c *tfrun.ProviderConfig) { c.Insecure = true }},
	{name: "nodes-empty", attr: "nodes", pc: func(c *tfrun.ProviderConfig) { c.Nodes = nil; c.Extra = "nodes = []" }},
	{name: "nodes-uppercase", attr: "nodes", pc: func(c *tfrun.ProviderConfig) { c.Nodes = []string{"pve1", "PVE2"} }},
	{name: "nodes-duplicate", attr: "nodes", pc: func(c *tfrun.ProviderConfig) { c.Nodes = []string{"pve1", "pve1"} }},
	{name: "iso_storage", attr: "iso_storage", pc: func(c *tfrun.ProviderConfig) { c.ISOStorage = "9seeds" }},
	{name: "storage", attr: "storage", pc: func(c *tfrun.ProviderConfig) { c.Storage = "local lvm" }},
	{name: "bridge", attr: "bridge", pc: func(c *tfrun.ProviderConfig) { c.Bridge = "vmbr0,firewall=0" }},
	{name: "vlan_tag-zero", attr: "vlan_tag", pc: func(c *tfrun.ProviderConfig) { c.Extra = "vlan_tag = 0" }},
	{name: "vlan_tag-high", attr: "vlan_tag", pc: func(c *tfrun.ProviderConfig) { c.VLANTag = 4095 }},
	{name: "vmid_range-low", attr: "vmid_range", pc: func(c *tfrun.ProviderConfig) { c.VMIDMin, c.VMIDMax = 99, 200 }},
	{name: "vmid_range-inverted", attr: "vmid_range", pc: func(c *tfrun.ProviderConfig) { c.VMIDMin, c.VMIDMax = 500, 400 }},
	{name: "vmid_range-high", attr: "vmid_range", pc: func(c *tfrun.ProviderConfig) { c.VMIDMin, c.VMIDMax = 100, 1000000000 }},
	{name: "templates-empty", attr: "templates", pc: func(c *tfrun.ProviderConfig) { c.Templates = nil; c.Extra = "templates = {}" }},
	{name: "templates-key", attr: "templates", pc: func(c *tfrun.ProviderConfig) { c.Templates["bad key!"] = 9001 }},
	{name: "templates-vmid", attr: "templates", pc: func(c *tfrun.ProviderConfig) { c.Templates["low"] = 99 }},
	{name: "machine_types-empty", attr: "machine_types", pc: func(c *tfrun.ProviderConfig) {
		c.MachineTypes = map[string]tfrun.MachineType{"small": {Cores: 1, MemoryMiB: 512}}
		c.Extra = "# machine_types replaced below"
	}},
	{name: "machine_types-cores", attr: "cores", pc: func(c *tfrun.ProviderConfig) {
		c.MachineTypes = map[string]tfrun.MachineType{"small": {Cores: 0, MemoryMiB: 512}}
	}},
	{name: "machine_types-memory", attr: "memory_mib", pc: func(c *tfrun.ProviderConfig) {
		c.MachineTypes = map[string]tfrun.MachineType{"small": {Cores: 1, MemoryMiB: -1}}
	}},
	{name: "machine_types-disk", attr: "disk_gib", pc: func(c *tfrun.ProviderConfig) {
		c.MachineTypes = map[string]tfrun.MachineType{"small": {Cores: 1, MemoryMiB: 512, DiskGiB: -1}}
	}},
	{name: "request_timeout-unitless", attr: "request_timeout", pc: func(c *tfrun.ProviderConfig) { c.RequestTimeout = "30" }},
	{name: "request_timeout-negative", attr: "request_timeout", pc: func(c *tfrun.ProviderConfig) { c.RequestTimeout = "-1s" }},
	{name: "max_requests_in_flight-zero", attr: "max_requests_in_flight", pc: func(c *tfrun.ProviderConfig) { c.Extra = "max_requests_in_flight = 0" }},
	{name: "max_requests_in_flight-high", attr: "max_requests_in_flight", pc: func(c *tfrun.ProviderConfig) { c.MaxRequestsInFlight = 65 }},
}

var badResourceAttrs = []badAttr{
	{name: "name-uppercase", attr: "name", vm: func(v *tfrun.VM) { v.Name = "Proxy-A" }},
	{name: "name-hyphen", attr: "name", vm: func(v *tfrun.VM) { v.Name = "-proxy" }},
	{name: "name-long", attr: "name", vm: func(v *tfrun.VM) { v.Name = strings.Repeat("p", 64) }},
	{name: "name-slash", attr: "name", vm: func(v *tfrun.VM) { v.Name = "a/b" }},
	{name: "node-empty", attr: "node", vm: func(v *tfrun.VM) { v.Extra = `node = ""` }},
	{name: "node-unknown", attr: "node", vm: func(v *tfrun.VM) { v.Node = "pve9" }},
	{name: "image-empty", attr: "image", vm: func(v *tfrun.VM) { v.Image = ""; v.Extra = `image = ""` }},
	{name: "image-unknown-key", attr: "image", vm: func(v *tfrun.VM) { v.Image = "windows-95" }},
	{name: "image-and-another-template_vmid", attr: "template_vmid", vm: func(v *tfrun.VM) { v.Extra = "template_vmid = 9002" }},
	{name: "no-image-no-template", attr: "image", vm: func(v *tfrun.VM) { v.Image = "" }},
	{name: "template_vmid-low", attr: "template_vmid", vm: func(v *tfrun.VM) { v.Image = ""; v.Extra = "template_vmid = 99" }},
	{name: "machine_type-empty", attr: "machine_type", vm: func(v *tfrun.VM) { v.MachineType = ""; v.Extra = `machine_type = ""` }},
	{name: "machine_type-unknown", attr: "machine_type", vm: func(v *tfrun.VM) { v.MachineType = "huge" }},
	{name: "no-size", attr: "cores", vm: func(v *tfrun.VM) { v.MachineType = "" }},
	{name: "cores-zero", attr: "cores", vm: func(v *tfrun.VM) { v.Extra = "cores = 0" }},
	{name: "cores-high", attr: "cores", vm: func(v *tfrun.VM) { v.Cores = 513 }},
	{name: "memory_mib-low", attr: "memory_mib", vm: func(v *tfrun.VM) { v.MemoryMiB = 15 }},
	{name: "disk_gib-zero", attr: "disk_gib", vm: func(v *tfrun.VM) { v.Extra = "disk_gib = 0" }},
	{name: "disk_gib-high", attr: "disk_gib", vm: func(v *tfrun.VM) { v.DiskGiB = 65537 }},
	{name: "bridge-empty", attr: "bridge", vm: func(v *tfrun.VM) { v.Extra = `bridge = ""` }},
	{name: "vlan_tag-zero", attr: "vlan_tag", vm: func(v *tfrun.VM) { v.Extra = "vlan_tag = 0" }},
	{name: "vlan_tag-high", attr: "vlan_tag", vm: func(v *tfrun.VM) { v.VLANTag = 4095 }},
	{name: "timeouts-create", attr: "create", vm: func(v *tfrun.VM) { v.Timeouts = map[string]string{"create": "soon"} }},
	{name: "timeouts-delete", attr: "delete", vm: func(v *tfrun.VM) { v.Timeouts = map[string]string{"delete": "5 minutes"} }},
	{name: "timeouts-create-negative", attr: "create", vm: func(v *tfrun.VM) { v.Timeouts = map[string]string{"create": "-5m"} }},
	{name: "timeouts-read-negative", attr: "read", vm: func(v *tfrun.VM) { v.Timeouts = map[string]string{"read": "-1s"} }},
	{name: "timeouts-update-zero", attr: "update", vm: func(v *tfrun.VM) { v.Timeouts = map[string]string{"update": "0s"} }},
	{name: "timeouts-delete-zero", attr: "delete", vm: func(v *tfrun.VM) { v.Timeouts = map[string]string{"delete": "0m"} }},
	{name: "cloud_init-empty", attr: "cloud_init", vm: func(v *tfrun.VM) { v.Extra = `cloud_init = ""` }},
}

func TestE2E_BadInput_Attributes(t *testing.T) {
	needTF(t)
	run := func(t *testing.T, b badAttr) {
		s := newScenario(t, "bad-input/attributes", scenarioOpts{NoForeign: true})
		v := s.vm("x")
		s.pc.Nodes = []string{"pve1"}
		if b.pc != nil {
			b.pc(&s.pc)
		}
		if b.vm != nil {
			b.vm(&v)
		}
		v.Resource = "x"
		s.vms = []tfrun.VM{v}
		cfg := s.config()
		if b.name == "machine_types-empty" {
			cfg = regexp.MustCompile(`(?s)  machine_types = \{.*?\n  \}\n`).ReplaceAllString(cfg, "  machine_types = {}\n")
		}
		if err := s.ws.WriteConfig(cfg); err != nil {
			t.Fatal(err)
		}
		s.sim.ResetStats()
		r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-json")
		diags := tfrun.Errors(tfrun.ParseDiagnostics(r.Stdout))
		requests := tfrun.TotalRequests(s.sim.Stats())
		ok := true
		switch {
		case r.OK():
			ok = false
			t.Errorf("the plan accepted %s:\n%s", b.name, cfg)
		case len(diags) == 0:
			ok = false
			t.Errorf("the plan failed without an error diagnostic:\n%s", r)
		default:
			if !onAttribute(diags, b.attr) {
				ok = false
				t.Errorf("no diagnostic points at %s:\n%s", b.attr, describeDiags(diags))
			}
		}
		if requests != 0 {
			ok = false
			t.Errorf("the refused plan made %d request(s) to the cluster: %v", requests, s.sim.Stats())
		}
		s.figure(func(row *figureRow) {
			row.Run++
			row.DiagRun++
			if ok {
				row.Converged++
				row.DiagOK++
			}
		})
	}
	for _, b := range badProviderAttrs {
		t.Run("provider/"+b.name, func(t *testing.T) { t.Parallel(); run(t, b) })
	}
	for _, b := range badResourceAttrs {
		t.Run("proxy_vm/"+b.name, func(t *testing.T) { t.Parallel(); run(t, b) })
	}
}

// onAttribute: a diagnostic's highlighted source line assigns attr, or (when terraform
// cannot resolve a nested path to a line) its text names attr.
func onAttribute(diags []tfrun.Diagnostic, attr string) bool {
	assign := regexp.MustCompile(`(^|[\s{,])` + regexp.QuoteMeta(attr) + `\s*=`)
	for _, d := range diags {
		if d.Snippet != nil && assign.MatchString(d.Snippet.Code) {
			return true
		}
		if strings.Contains(d.Summary+" "+d.Detail, attr) {
			return true
		}
	}
	return false
}

func describeDiags(diags []tfrun.Diagnostic) string {
	var b strings.Builder
	for _, d := range diags {
		code := ""
		if d.Snippet != nil {
			code = d.Snippet.Code
		}
		fmt.Fprintf(&b, "- %s | %s | line %d: %s\n", d.Summary, d.Detail, d.Line(), code)
	}
	return b.String()
}

func TestE2E_BadInput_ImportIDs(t *testing.T) {
	s := newScenario(t, "bad-input/import-ids", scenarioOpts{})
	v := s.vm("imp")
	s.vms = []tfrun.VM{v}
	s.write()
	ids := []string{"", " ", "vms/abc/x", "vms/0100/x", "vms/99/x", "vms/100/", "vm/100/x", "vms/100/a/b",
		"BAD NAME", "-5", "0100", "1000000000", "proxy_a", "vms//x", "%2e%2e", "../../etc/passwd"}
	for _, id := range ids {
		s.sim.ResetStats()
		r := s.ws.Import(s.ctx, v.Addr(), id)
		ok := !r.OK() && strings.Contains(r.Output(), "Accepted forms") && tfrun.TotalRequests(s.sim.Stats()) == 0
		if !ok {
			t.Errorf("import %q: want a refusal listing the accepted forms without any request (made %d):\n%s", id, tfrun.TotalRequests(s.sim.Stats()), r)
		}
		s.figure(func(row *figureRow) {
			row.Run++
			row.DiagRun++
			if ok {
				row.Converged++
				row.DiagOK++
			}
		})
	}
	// Well-formed IDs of VMs that are not ours: refused with the reason, nothing changed.
	for _, id := range []string{"1003", "db-primary", "vms/9001/debian-13-template", "101", "vms/1003/other-name"} {
		r := s.ws.Import(s.ctx, v.Addr(), id)
		ok := !r.OK() && strings.Contains(r.Output(), "Unable to import")
		if !ok {
			t.Errorf("import %q of a guest that is not ours: want a refusal:\n%s", id, r)
		}
		s.figure(func(row *figureRow) {
			row.Run++
			row.DiagRun++
			if ok {
				row.Converged++
				row.DiagOK++
			}
		})
	}
	if f := s.chk.Gone(); !f.OK() {
		t.Errorf("after the refused imports: %v", f.Err())
	}
}

// envScenario records the outcome of one bad-environment scenario.
func envOutcome(s *scenario, ok bool) {
	s.figure(func(row *figureRow) {
		row.Run++
		if ok {
			row.Converged++
		}
	})
}

func TestE2E_BadInput_NotProxmox(t *testing.T) {
	needTF(t)
	s := newScenario(t, "bad-input/environment", scenarioOpts{NoForeign: true})
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"))
	}))
	defer srv.Close()
	caFile := filepath.Join(s.ws.Dir, "other-ca.pem")
	writeCert(t, caFile, srv.TLS)
	s.pc.Endpoint, s.pc.CAFile = srv.URL, caFile
	s.vms = []tfrun.VM{s.vm("np")}
	r := s.apply()
	out := r.Output()
	// The answer will never change: the diagnostic must say that the endpoint is not a
	// Proxmox VE API and that retrying will not help.
	ok := !r.OK() && !strings.Contains(out, "panic") && strings.Contains(out, "endpoint") && strings.Contains(out, "Retrying will not help")
	if !ok {
		t.Errorf("an endpoint that is not Proxmox: want a permanent failure that points at the endpoint:\n%s", r)
	}
	if hits.Load() == 0 {
		t.Errorf("the provider never reached the endpoint")
	}
	t.Logf("diagnostic:\n%s", tail(tfrun.TrimOverridesWarning(r.Stderr), 12))
	if st := s.state(); len(st.OfType("proxy_vm")) != 0 {
		t.Errorf("a VM is in the state after the failed apply against a non-Proxmox endpoint")
	}
	envOutcome(s, ok)
}

// writeCert writes the leaf certificate of an httptest TLS server as a PEM CA file.
func writeCert(t *testing.T, file string, cfg *tls.Config) {
	t.Helper()
	var b strings.Builder
	for _, c := range cfg.Certificates {
		for _, der := range c.Certificate {
			_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der})
		}
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestE2E_BadInput_WrongCA(t *testing.T) {
	needTF(t)
	s := newScenario(t, "bad-input/environment", scenarioOpts{NoForeign: true})
	other := pvesim.NewForTest(t, pvesim.Options{})
	s.pc.CAFile = other.CAFile
	s.vms = []tfrun.VM{s.vm("ca")}
	s.sim.ResetStats()
	r := s.apply()
	out := r.Output()
	ok := !r.OK() && containsAny(out, "certificate", "x509", "CA") && strings.Contains(out, "Retrying will not help") &&
		tfrun.TotalRequests(s.sim.Stats()) == 0
	if !ok {
		t.Errorf("the wrong CA: want a permanent TLS failure before any request reaches the API (requests: %d):\n%s", tfrun.TotalRequests(s.sim.Stats()), r)
	}
	t.Logf("diagnostic:\n%s", tail(tfrun.TrimOverridesWarning(r.Stderr), 12))
	envOutcome(s, ok)
}

func TestE2E_BadInput_TokenRevokedMidApply(t *testing.T) {
	needTF(t)
	s := newScenario(t, "bad-input/environment", scenarioOpts{Sim: pvesim.Options{Speed: interruptSpeed}})
	s.vms = []tfrun.VM{s.vm("tok")}
	s.write()
	p, err := s.ws.Start(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	// Revoke once the clone is accepted: every call then gets 401 Authentication failed!.
	if tfrun.WaitStat(s.ctx, s.sim, tfrun.StatClone, 1, 30*time.Second) {
		s.sim.InjectFault(pvesim.Fault{Status: 401})
	}
	r := p.Wait()
	out := r.Output()
	ok := !r.OK() && containsAny(out, "token", "Authentication") && strings.Contains(out, "Retrying will not help")
	if !ok {
		t.Errorf("a token revoked mid-apply: want a permanent failure that names the token:\n%s", r)
	}
	t.Logf("diagnostic:\n%s", tail(tfrun.TrimOverridesWarning(r.Stderr), 12))
	if f := s.chk.Live(s.state()); len(f.Violations) > 0 {
		t.Errorf("after the revoked token: %v", f.Err())
	}
	s.sim.ClearFaults()
	s.waitTasksIdle()
	o := s.converge()
	_ = o
	s.figure(func(row *figureRow) {
		row.DiagRun++
		if ok {
			row.DiagOK++
		}
	})
}

func TestE2E_BadInput_TemplateDeletedBetweenPlanAndApply(t *testing.T) {
	needTF(t)
	s := newScenario(t, "bad-input/environment", scenarioOpts{})
	s.vms = []tfrun.VM{s.vm("tpl")}
	s.write()
	if r := s.ws.Run(s.ctx, "plan", "-input=false", "-no-color", "-out=tfplan"); !r.OK() {
		t.Fatalf("plan failed:\n%s", r)
	}
	tmpl := s.sim.Templates["debian-13"]
	if err := s.sim.DeleteVM(tmpl); err != nil {
		t.Fatal(err)
	}
	delete(s.chk.Baseline.VMs, tmpl) // deleted by the test, not by the provider
	r := s.ws.Apply(s.ctx, "tfplan")
	out := r.Output()
	ok := !r.OK() && strings.Contains(out, "template") && strings.Contains(out, fmt.Sprint(tmpl)) && strings.Contains(out, "Retrying will not help")
	if !ok {
		t.Errorf("a template deleted after the plan: want a permanent failure naming template %d:\n%s", tmpl, r)
	}
	t.Logf("diagnostic:\n%s", tail(tfrun.TrimOverridesWarning(r.Stderr), 12))
	f := s.chk.Gone() // nothing may have been created
	if !f.OK() {
		ok = false
		t.Errorf("after the failed apply: %v", f.Err())
	}
	if st := s.state(); len(st.OfType("proxy_vm")) != 0 {
		ok = false
		t.Errorf("the state holds a VM that could not be cloned")
	}
	envOutcome(s, ok)
}

func TestE2E_BadInput_NodeRemovedFromConfig(t *testing.T) {
	needTF(t)
	s := newScenario(t, "bad-input/environment", scenarioOpts{Sim: pvesim.Options{Nodes: []string{"pve1", "pve2"}}})
	s.pc.Nodes = []string{"pve1", "pve2"}
	s.pc.Storage = "ceph-vm" // shared: the template on pve1 clones onto pve2
	v1, v2 := s.vm("n1"), s.vm("n2")
	v1.Node, v2.Node = "pve1", "pve2"
	s.vms = []tfrun.VM{v1, v2}
	s.mustApply()
	before := s.vmSnapshot(s.prefix)

	// pve2 leaves the provider's nodes; the VM on it stays in the configuration.
	s.pc.Nodes = []string{"pve1"}
	s.write()
	r := s.ws.Plan(s.ctx)
	planOut := r.Output()
	t.Logf("plan with pve2 dropped: exit %d\n%s", r.ExitCode, tail(tfrun.TrimOverridesWarning(planOut), 15))
	ok := true
	if strings.Contains(planOut, "must be replaced") || strings.Contains(planOut, "will be destroyed") {
		ok = false
		t.Errorf("dropping a node from the provider plans to replace or destroy its VMs without saying why:\n%s", planOut)
	}
	// An apply must not touch the VMs; then the VM on pve2 leaves the configuration and a
	// destroy must still find and remove it (its node is no longer configured).
	ar := s.apply()
	after := s.vmSnapshot(s.prefix)
	for id, b := range before {
		if a, okv := after[id]; !okv || a.Config["description"] != b.Config["description"] {
			ok = false
			t.Errorf("the apply with pve2 dropped removed or replaced VM %d (%s):\n%s", id, b.Name, ar)
		}
	}
	s.vms = []tfrun.VM{v1}
	rr := s.apply()
	if !rr.OK() {
		ok = false
		t.Errorf("removing the VM on the unconfigured node pve2 failed:\n%s", rr)
	}
	if d := s.destroy(); !d.OK() {
		ok = false
		t.Errorf("destroy failed:\n%s", d)
	}
	if f := s.chk.Gone(); !f.OK() {
		ok = false
		t.Errorf("after destroy: %v", f.Err())
	}
	envOutcome(s, ok)
}
