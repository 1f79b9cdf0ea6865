package provider

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"
)

// configure runs the provider's Configure on c with env as the environment, logging into
// logs (JSON lines, every level) when logs is not nil.
func configure(t *testing.T, c cfg, env map[string]string, logs *bytes.Buffer, deferralAllowed bool) *provider.ConfigureResponse {
	t.Helper()
	ctx := context.Background()
	if logs != nil {
		ctx = tflogtest.RootLogger(ctx, logs)
	}
	p := &proxyProvider{version: "test", lookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}}
	var sresp provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &sresp)
	typ := sresp.Schema.Type().TerraformType(ctx)
	req := provider.ConfigureRequest{
		TerraformVersion:   "1.11.4",
		Config:             tfsdk.Config{Schema: sresp.Schema, Raw: tfValue(t, typ, map[string]any(c))},
		ClientCapabilities: provider.ConfigureProviderClientCapabilities{DeferralAllowed: deferralAllowed},
	}
	var resp provider.ConfigureResponse
	p.Configure(ctx, req, &resp)
	return &resp
}

// configured asserts Configure succeeded without errors and returns its provider data.
func configured(t *testing.T, resp *provider.ConfigureResponse) *providerData {
	t.Helper()
	if resp.Diagnostics.HasError() {
		t.Fatalf("Configure failed:%s", describeDiags(resp.Diagnostics))
	}
	pd, ok := resp.ResourceData.(*providerData)
	if !ok || pd == nil {
		t.Fatalf("ResourceData = %T, want *providerData", resp.ResourceData)
	}
	if resp.DataSourceData != resp.ResourceData {
		t.Error("DataSourceData and ResourceData differ")
	}
	if pd.client == nil || pd.backend == nil {
		t.Error("providerData lacks the client or the backend")
	}
	return pd
}

func describeDiags(diags diag.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		at := ""
		if wp, ok := d.(diag.DiagnosticWithPath); ok {
			at = wp.Path().String()
		}
		b.WriteString("\n  " + d.Severity().String() + " at " + at + ": " + d.Summary() + ": " + d.Detail())
	}
	return b.String()
}

// onlyError asserts exactly one error diagnostic, at want, and returns it.
func onlyError(t *testing.T, diags diag.Diagnostics, want path.Path) diag.Diagnostic {
	t.Helper()
	errs := diags.Errors()
	if len(errs) != 1 {
		t.Fatalf("want one error at %s, got %d:%s", want, len(errs), describeDiags(diags))
	}
	wp, ok := errs[0].(diag.DiagnosticWithPath)
	if !ok || !wp.Path().Equal(want) {
		t.Fatalf("error not at %s:%s", want, describeDiags(diags))
	}
	return errs[0]
}

func TestProviderConfigure_defaults(t *testing.T) {
	pd := configured(t, configure(t, validConfig(), nil, nil, false))
	c := pd.cfg
	if c.VMIDMin != 100000 || c.VMIDMax != 199999 {
		t.Errorf("vmid range = %d..%d, want 100000..199999", c.VMIDMin, c.VMIDMax)
	}
	if c.RequestTimeout != 30*time.Second || c.MaxInFlight != 8 || !c.InstallGuestAgent || c.Insecure {
		t.Errorf("defaults: timeout %s, in flight %d, agent %v, insecure %v", c.RequestTimeout, c.MaxInFlight, c.InstallGuestAgent, c.Insecure)
	}
	if c.UIDNamespace != "" {
		t.Errorf("uid_namespace = %q, want empty (the default)", c.UIDNamespace)
	}
	if c.TokenSource != "api_token" || c.Endpoint != "https://pve.example.test:8006" {
		t.Errorf("token source %q, endpoint %q", c.TokenSource, c.Endpoint)
	}
	if len(c.Nodes) != 2 || c.Templates["debian-13"] != 9001 || c.MachineTypes["small"] != (machineType{Cores: 1, MemoryMiB: 512}) {
		t.Errorf("catalogue: nodes %v, templates %v, machine types %v", c.Nodes, c.Templates, c.MachineTypes)
	}
}

func TestProviderConfigure_values(t *testing.T) {
	c := validConfig().with(
		"vmid_range", map[string]any{"min": 200, "max": 300}, "request_timeout", "2m", "max_requests_in_flight", 3,
		"install_guest_agent", false, "vendor_data", "#cloud-config\n", "storage", "local-lvm", "bridge", "vmbr1", "vlan_tag", 7,
		"machine_types", map[string]any{"big": map[string]any{"cores": 4, "memory_mib": 4096, "disk_gib": 20}},
		"uid_namespace", "team-b",
	)
	got := configured(t, configure(t, c, nil, nil, false)).cfg
	if got.UIDNamespace != "team-b" {
		t.Errorf("uid_namespace = %q, want team-b", got.UIDNamespace)
	}
	if got.VMIDMin != 200 || got.VMIDMax != 300 || got.RequestTimeout != 2*time.Minute || got.MaxInFlight != 3 ||
		got.InstallGuestAgent || got.VendorData != "#cloud-config\n" || got.Storage != "local-lvm" || got.Bridge != "vmbr1" ||
		got.VLANTag != 7 || got.MachineTypes["big"] != (machineType{4, 4096, 20}) {
		t.Errorf("resolved config = %+v", got)
	}
}

func TestProviderConfigure_envFallback(t *testing.T) {
	env := map[string]string{
		envEndpoint: "https://env.example.test:8006",
		envAPIToken: "env@pve!ci=11111111-2222-3333-4444-555555555555",
		envInsecure: "true",
	}
	t.Run("env fills unset attributes", func(t *testing.T) {
		resp := configure(t, validConfig().with("endpoint", nil, "api_token", nil), env, nil, false)
		c := configured(t, resp).cfg
		if c.Endpoint != env[envEndpoint] || c.TokenSource != envAPIToken || !c.Insecure {
			t.Errorf("endpoint %q, token source %q, insecure %v", c.Endpoint, c.TokenSource, c.Insecure)
		}
		if configured(t, resp).token != env[envAPIToken] {
			t.Error("the token from the environment was not used")
		}
	})
	t.Run("attributes beat env", func(t *testing.T) {
		resp := configure(t, validConfig().with("insecure", false), env, nil, false)
		pd := configured(t, resp)
		if pd.cfg.Endpoint != "https://pve.example.test:8006" || pd.cfg.TokenSource != "api_token" || pd.cfg.Insecure {
			t.Errorf("endpoint %q, token source %q, insecure %v", pd.cfg.Endpoint, pd.cfg.TokenSource, pd.cfg.Insecure)
		}
		if pd.token == env[envAPIToken] {
			t.Error("the environment's token replaced api_token")
		}
	})
	t.Run("api_token_file beats the env token", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte("root@pam!file=0c1d2e3f-4a5b-6c7d-8e9f-001122334455\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		resp := configure(t, validConfig().with("api_token", nil, "api_token_file", file), env, nil, false)
		pd := configured(t, resp)
		if pd.cfg.TokenSource != "api_token_file" || pd.token != "" || pd.tokenFile != file {
			t.Errorf("token source %q, token set %v, file %q", pd.cfg.TokenSource, pd.token != "", pd.tokenFile)
		}
	})
	t.Run("env insecure ignored with a CA", func(t *testing.T) {
		resp := configure(t, validConfig().with("ca_pem", testCAPEM(t)), map[string]string{envInsecure: "1"}, nil, false)
		if configured(t, resp).cfg.Insecure {
			t.Error("PROXMOX_VE_INSECURE overrode ca_pem")
		}
		if len(resp.Diagnostics.Warnings()) != 1 || !strings.Contains(resp.Diagnostics.Warnings()[0].Summary(), envInsecure) {
			t.Errorf("want one warning about %s:%s", envInsecure, describeDiags(resp.Diagnostics))
		}
	})
	t.Run("empty env is unset", func(t *testing.T) {
		resp := configure(t, validConfig().with("endpoint", nil), map[string]string{envEndpoint: "  "}, nil, false)
		onlyError(t, resp.Diagnostics, path.Root("endpoint"))
	})
}

func TestProviderConfigure_missingAndInvalidEnv(t *testing.T) {
	cases := []struct {
		name   string
		config cfg
		env    map[string]string
		path   path.Path
		detail string
	}{
		{"no endpoint", validConfig().with("endpoint", nil), nil, path.Root("endpoint"), envEndpoint},
		{"env endpoint http", validConfig().with("endpoint", nil), map[string]string{envEndpoint: "http://pve:8006"}, path.Root("endpoint"), "not https"},
		{"no token", validConfig().with("api_token", nil), nil, path.Root("api_token"), envAPIToken},
		{"env token malformed", validConfig().with("api_token", nil), map[string]string{envAPIToken: "SENTINEL-malformed"}, path.Root("api_token"), "<user>@<realm>!<tokenid>=<secret>"},
		{"env insecure not bool", validConfig(), map[string]string{envInsecure: "maybe"}, path.Root("insecure"), "true or false"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := configure(t, tc.config, tc.env, nil, false)
			d := onlyError(t, resp.Diagnostics, tc.path)
			if !strings.Contains(d.Detail(), tc.detail) {
				t.Errorf("detail %q lacks %q", d.Detail(), tc.detail)
			}
			if strings.Contains(describeDiags(resp.Diagnostics), "SENTINEL") {
				t.Error("a diagnostic quotes the token")
			}
			if resp.ResourceData != nil || resp.DataSourceData != nil {
				t.Error("a failed Configure handed out provider data")
			}
		})
	}
}

func TestProviderConfigure_unknown(t *testing.T) {
	c := validConfig().with("endpoint", unknown, "nodes", []any{"pve1", unknown})
	resp := configure(t, c, nil, nil, false)
	errs := resp.Diagnostics.Errors()
	if len(errs) != 2 {
		t.Fatalf("want two errors (endpoint, nodes):%s", describeDiags(resp.Diagnostics))
	}
	for i, want := range []path.Path{path.Root("endpoint"), path.Root("nodes")} {
		wp, ok := errs[i].(diag.DiagnosticWithPath)
		if !ok || !wp.Path().Equal(want) || !strings.Contains(errs[i].Detail(), "unknown") {
			t.Errorf("error %d not about %s being unknown:%s", i, want, describeDiags(resp.Diagnostics))
		}
	}
	if resp.ResourceData != nil {
		t.Error("provider data handed out with unknown configuration")
	}

	t.Run("deferred when Terraform allows it", func(t *testing.T) {
		resp := configure(t, c, nil, nil, true)
		if resp.Diagnostics.HasError() || resp.Deferred == nil || resp.Deferred.Reason != provider.DeferredReasonProviderConfigUnknown {
			t.Errorf("deferred %+v:%s", resp.Deferred, describeDiags(resp.Diagnostics))
		}
	})
}

// TestProviderConfigure_neverDials: Configure makes no connection, even to a live endpoint,
// though it reads the token file.
func TestProviderConfigure_neverDials(t *testing.T) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			_ = c.Close()
		}
	}()
	endpoint := "https://" + ln.Addr().String()
	var logs bytes.Buffer
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("root@pam!file=0c1d2e3f-4a5b-6c7d-8e9f-001122334455\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pd := configured(t, configure(t, validConfig().with("endpoint", endpoint, "api_token", nil, "api_token_file", file), nil, &logs, false))
	if id, err := pd.client.TokenID(); err != nil || id != "root@pam!file" {
		t.Errorf("TokenID from the token file: %q, %v", id, err)
	}
	// Self-check: the counter sees a connection when there is one.
	probe, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = probe.Close()
	// The kernel completes the probe's handshake before Accept returns it: closing the
	// listener at once can drop it unaccepted on a loaded machine, so wait for the count.
	for deadline := time.Now().Add(10 * time.Second); conns.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	_ = ln.Close()
	<-done
	if n := conns.Load(); n != 1 {
		t.Errorf("the endpoint saw %d connections, want only the test's own probe", n)
	}
	if strings.Contains(logs.String(), "0c1d2e3f-4a5b") {
		t.Errorf("the token's secret is in the logs:\n%s", logs.String())
	}
}

func TestProviderConfigure_insecureWarning(t *testing.T) {
	var logs bytes.Buffer
	resp := configure(t, validConfig().with("insecure", true), nil, &logs, false)
	configured(t, resp)
	w := resp.Diagnostics.Warnings()
	if len(w) != 1 {
		t.Fatalf("want one warning:%s", describeDiags(resp.Diagnostics))
	}
	if wp, ok := w[0].(diag.DiagnosticWithPath); !ok || !wp.Path().Equal(path.Root("insecure")) {
		t.Errorf("warning not on insecure:%s", describeDiags(resp.Diagnostics))
	}
	entries, err := tflogtest.MultilineJSONDecode(&logs)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range entries {
		if e["@level"] == "warn" && strings.Contains(e["@message"].(string), "TLS certificate verification is disabled") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warn-level log line about insecure: %v", entries)
	}

	resp = configure(t, validConfig(), nil, nil, false)
	if len(resp.Diagnostics) != 0 {
		t.Errorf("a verifying configuration gave diagnostics:%s", describeDiags(resp.Diagnostics))
	}
}

// TestProviderConfigure_tokenNeverLogged: the token, configured or in a file, and its secret
// never reach a log line (every level) or a diagnostic, including lines written later by
// resources through withLogging and by the client's and backend's subsystems.
func TestProviderConfigure_tokenNeverLogged(t *testing.T) {
	const secret = "SENTINEL-0b7c6f2e-3f0a-4c1e"
	const token = "terraform@pve!ci=" + secret
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]cfg{
		"api_token":      validConfig().with("api_token", token, "insecure", true),
		"api_token_file": validConfig().with("api_token", nil, "api_token_file", file),
		"env":            validConfig().with("api_token", nil),
	} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			resp := configure(t, c, map[string]string{envAPIToken: token}, &logs, false)
			if strings.Contains(describeDiags(resp.Diagnostics), secret) {
				t.Errorf("a diagnostic holds the secret:%s", describeDiags(resp.Diagnostics))
			}
			pd, _ := resp.ResourceData.(*providerData)
			// What resources, the client and the backend log later, through withLogging.
			ctx := pd.withLogging(tflogtest.RootLogger(context.Background(), &logs))
			tflog.Trace(ctx, "request", map[string]any{"authorization": "PVEAPIToken=" + token, "url": "https://x/?t=" + secret})
			tflog.Debug(ctx, "echo "+token)
			tflog.SubsystemTrace(ctx, subsystemPVEAPI, "request "+secret, map[string]any{"header": "PVEAPIToken=" + token})
			tflog.SubsystemError(ctx, subsystemProxmox, "failed", map[string]any{"error": "401 " + secret})
			out := logs.String()
			if strings.Contains(out, secret) {
				t.Errorf("the secret is in the logs:\n%s", out)
			}
			if n := strings.Count(out, "***"); n < 6 {
				t.Errorf("want at least 6 masked values, got %d:\n%s", n, out)
			}
		})
	}
}

func TestProviderConfigure_deferralIgnoredWhenKnown(t *testing.T) {
	resp := configure(t, validConfig(), nil, nil, true)
	configured(t, resp)
	if resp.Deferred != nil {
		t.Error("a known configuration was deferred")
	}
}
