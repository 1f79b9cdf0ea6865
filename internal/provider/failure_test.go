package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	acc "github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestCheckFiles: a ca_file or api_token_file that is missing, unreadable or holds the
// wrong thing is an error on its attribute, never quoting a token.
func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	goodToken := write("token", "root@pam!tf=0c1d2e3f-4a5b-6c7d-8e9f-001122334455\n")
	junkToken := write("junk", "SENTINEL-SECRET-VALUE\n")
	junkCA := write("junk.pem", "-----BEGIN NOTHING-----\n")
	for name, tc := range map[string]struct {
		cfg  resolvedConfig
		attr string
		text string
	}{
		"ca missing":    {resolvedConfig{CAFile: filepath.Join(dir, "nope.pem")}, "ca_file", "does not exist"},
		"ca junk":       {resolvedConfig{CAFile: junkCA}, "ca_file", "holds no PEM certificate"},
		"token missing": {resolvedConfig{TokenFile: filepath.Join(dir, "nope")}, "api_token_file", "does not exist"},
		"token junk":    {resolvedConfig{TokenFile: junkToken}, "api_token_file", "does not hold a token"},
		"token good":    {resolvedConfig{TokenFile: goodToken}, "", ""},
	} {
		diags := checkFiles(tc.cfg)
		if tc.attr == "" {
			if diags.HasError() {
				t.Errorf("%s: %v", name, diags)
			}
			continue
		}
		if len(diags) != 1 || !diags.HasError() {
			t.Fatalf("%s: %v", name, diags)
		}
		d := diags[0]
		text := d.Summary() + " " + d.Detail()
		if !strings.Contains(text, tc.attr) || !strings.Contains(text, tc.text) || strings.Contains(text, "SENTINEL") {
			t.Errorf("%s: %q", name, text)
		}
		if p, ok := d.(diag.DiagnosticWithPath); !ok || p.Path().String() != tc.attr {
			t.Errorf("%s: not on %s: %v", name, tc.attr, d)
		}
	}
}

// TestAccProvider_filesCheckedAtConfigure: a missing api_token_file or ca_file fails the
// plan on its attribute before any request, not as "does not exist yet ... This may succeed
// if retried" at the first call.
func TestAccProvider_filesCheckedAtConfigure(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("counts the simulator's requests")
	}
	dir := t.TempDir()
	for _, tc := range []struct{ extra, want string }{
		{fmt.Sprintf("api_token_file = %q", filepath.Join(dir, "not-mounted")), `(?s)Unable to read the API token file.*api_token_file`},
		{fmt.Sprintf("ca_file = %q", filepath.Join(dir, "no-ca.pem")), `(?s)Unable to read the CA file.*ca_file`},
	} {
		e := *env
		if strings.Contains(tc.extra, "api_token_file") {
			e.Token = ""
		}
		acc.UnitTest(t, acc.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps: []acc.TestStep{{
				Config:      e.ProviderConfig(tc.extra) + healthConfig(""),
				ExpectError: regexp.MustCompile(tc.want),
			}},
		})
	}
	if n := simRequests(env.Sim); n != 0 {
		t.Errorf("%d requests with a missing file", n)
	}
}

// TestConnectionFix: the 401 names api_token, the token id and PROXMOX_VE_API_TOKEN,
// never the secret, and loses Proxmox's "!"; x509 names ca_file and insecure; an endpoint
// that does not answer names the address; none of them is reported as a lock.
func TestConnectionFix(t *testing.T) {
	const token = "root@pam!tf=0c1d2e3f-4a5b-6c7d-8e9f-001122334455"
	client, err := pveapi.New(pveapi.Options{Endpoint: "https://pve.example.com", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	d := &providerData{client: client, token: token, cfg: resolvedConfig{Endpoint: "https://pve.example.com", TokenSource: "api_token"}}
	r := &proxyVMResource{data: d}
	f := fixture.MustLoad("err_auth_failed")
	e401 := &pveapi.APIError{Status: f.Status, Message: f.Message()}
	got := r.vmErrorDetail("read", "p", 100, fmt.Errorf("listing the cluster's VMs: %w", e401), "")
	for _, want := range []string{"Authentication failed.", "api_token", "root@pam!tf", envAPIToken, "https://pve.example.com:8006"} {
		if !strings.Contains(got, want) {
			t.Errorf("401 detail lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "!.") || strings.Contains(got, "0c1d2e3f") {
		t.Errorf("401 detail has a stray !. or the secret:\n%s", got)
	}

	// A real unknown-authority failure, from a TLS server whose CA the client lacks.
	sim := pvesim.NewForTest(t, pvesim.Options{})
	noCA, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken})
	if err != nil {
		t.Fatal(err)
	}
	_, xerr := noCA.Version(context.Background())
	if !pveapi.IsTLSVerification(xerr) {
		t.Fatalf("want an x509 failure, got %v", xerr)
	}
	got = r.vmErrorDetail("read", "p", 100, xerr, "")
	for _, want := range []string{"ca_file", "insecure", "pve-root-ca.pem"} {
		if !strings.Contains(got, want) {
			t.Errorf("x509 detail lacks %q:\n%s", want, got)
		}
	}

	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	saved := pveapi.DialRetryDelays
	pveapi.DialRetryDelays = []time.Duration{time.Millisecond}
	defer func() { pveapi.DialRetryDelays = saved }()
	down, err := pveapi.New(pveapi.Options{Endpoint: "https://" + addr, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	_, uerr := down.Version(context.Background())
	r.data.client = down
	got = r.vmErrorDetail("read", "p", 100, uerr, "")
	if !strings.Contains(got, "https://"+addr) || !strings.Contains(got, "does not answer") || strings.Contains(got, "lock") {
		t.Errorf("unreachable detail:\n%s", got)
	}
}

// TestRead_failsWhenTheEndpointDoesNotAnswer: Read against an endpoint nothing listens on
// is an error naming the address, not a warning that keeps the saved values (after which the
// plan would say "No changes").
func TestRead_failsWhenTheEndpointDoesNotAnswer(t *testing.T) {
	e := newDirectEnv(t, pvesim.Options{TemplateAgent: true})
	vm := e.create(t, "down-1", directUID)
	st := e.state(t, vm, directUID)

	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	saved := pveapi.DialRetryDelays
	pveapi.DialRetryDelays = []time.Duration{time.Millisecond, time.Millisecond}
	defer func() { pveapi.DialRetryDelays = saved }()
	client, err := pveapi.New(pveapi.Options{Endpoint: "https://" + addr, Token: e.sim.APIToken})
	if err != nil {
		t.Fatal(err)
	}
	r := &proxyVMResource{data: &providerData{client: client, backend: proxmox.New(client, proxmox.Config{Nodes: e.sim.Nodes, ISOStorage: e.sim.ISOStorage})}}
	resp := resource.ReadResponse{State: st}
	r.Read(e.ctx, resource.ReadRequest{State: st}, &resp)
	if !resp.Diagnostics.HasError() {
		t.Fatalf("Read against %s: no error (%v)", addr, resp.Diagnostics)
	}
	detail := resp.Diagnostics.Errors()[0].Detail()
	if !strings.Contains(detail, "https://"+addr) || strings.Contains(detail, "kept") {
		t.Errorf("detail: %s", detail)
	}

	// A node that does not answer behind the endpoint (595) fails the refresh too, naming
	// the node and the ways to plan without it: the plan could not look at the VM.
	node := e.sim.Nodes[0]
	if err := e.sim.SetNodeDown(node, true); err != nil {
		t.Fatal(err)
	}
	resp = resource.ReadResponse{State: st}
	e.r.Read(e.ctx, resource.ReadRequest{State: st}, &resp)
	if !resp.Diagnostics.HasError() || len(resp.Diagnostics.Warnings()) != 0 {
		t.Fatalf("a node down: want one error and no warning, got %v", resp.Diagnostics)
	}
	detail = resp.Diagnostics.Errors()[0].Detail()
	for _, want := range []string{"Node " + node + " does not answer", "-refresh=false", "-target=", "nothing was changed"} {
		if !strings.Contains(detail, want) {
			t.Errorf("a node down: the detail lacks %q:\n%s", want, detail)
		}
	}
}

// TestKeepsPriorValues: only a task holding the VM keeps the saved values; a node behind
// the endpoint that does not answer (595/596) fails the plan like an endpoint that does not.
func TestKeepsPriorValues(t *testing.T) {
	locked := fixture.MustLoad("err_locked_clone")
	for _, tc := range []struct {
		err  error
		keep bool
	}{
		{&pveapi.APIError{Status: locked.Status, Message: locked.Message()}, true},
		{&pveapi.APIError{Status: 595, Message: "No route to host"}, false},
		{&pveapi.APIError{Status: 596, Message: "Connection timed out"}, false},
		{&pveapi.APIError{Status: 401, Message: "Authentication failed!"}, false},
		{&pveapi.UnreachableError{Address: "https://x:8006", Attempts: 4, Err: errors.New("refused")}, false},
		{context.DeadlineExceeded, false},
	} {
		if got := keepsPriorValues(tc.err); got != tc.keep {
			t.Errorf("keepsPriorValues(%v) = %v, want %v", tc.err, got, tc.keep)
		}
	}
}

// TestProxyVMSchema_timeoutsAboveZero: every timeouts attribute refuses "-5m" and "0s" and
// accepts "5m" (the timeouts package alone accepts a negative duration).
func TestProxyVMSchema_timeoutsAboveZero(t *testing.T) {
	ctx := context.Background()
	blk, ok := proxyVMSchema(ctx).Blocks["timeouts"].(schema.SingleNestedBlock)
	if !ok {
		t.Fatal("timeouts is not a single nested block")
	}
	for _, k := range []string{"create", "read", "update", "delete"} {
		a, ok := blk.Attributes[k].(schema.StringAttribute)
		if !ok {
			t.Fatalf("timeouts.%s missing", k)
		}
		for v, bad := range map[string]bool{"-5m": true, "0s": true, "5m": false} {
			var resp validator.StringResponse
			for _, val := range a.Validators {
				val.ValidateString(ctx, validator.StringRequest{ConfigValue: types.StringValue(v)}, &resp)
			}
			if resp.Diagnostics.HasError() != bad {
				t.Errorf("timeouts.%s = %q: error %v, want %v", k, v, resp.Diagnostics.HasError(), bad)
			}
		}
	}
}
