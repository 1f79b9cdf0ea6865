package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestProviderConfigure_caFileEnv: PROXMOX_VE_CA_FILE stands in for ca_file when the block
// names no CA and does not set insecure = true; the block's ca_file, ca_pem or insecure win.
func TestProviderConfigure_caFileEnv(t *testing.T) {
	dir := t.TempDir()
	envCA, blockCA := filepath.Join(dir, "env-ca.pem"), filepath.Join(dir, "block-ca.pem")
	for _, f := range []string{envCA, blockCA} {
		if err := os.WriteFile(f, []byte(testCAPEM(t)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{envCAFile: envCA}
	if c := configured(t, configure(t, validConfig(), env, nil, false)).cfg; c.CAFile != env[envCAFile] {
		t.Errorf("without ca_file: CAFile %q, want the environment's %q", c.CAFile, env[envCAFile])
	}
	if c := configured(t, configure(t, validConfig().with("ca_file", blockCA), env, nil, false)).cfg; c.CAFile != blockCA {
		t.Errorf("with ca_file: CAFile %q, want the block's", c.CAFile)
	}
	if c := configured(t, configure(t, validConfig().with("ca_pem", testCAPEM(t)), env, nil, false)).cfg; c.CAFile != "" || !c.HasCAPEM {
		t.Errorf("with ca_pem: CAFile %q, want none", c.CAFile)
	}
	if c := configured(t, configure(t, validConfig().with("insecure", true), env, nil, false)).cfg; c.CAFile != "" || !c.Insecure {
		t.Errorf("with insecure = true: CAFile %q insecure %v, want no CA and insecure", c.CAFile, c.Insecure)
	}
	if c := configured(t, configure(t, validConfig(), nil, nil, false)).cfg; c.CAFile != "" {
		t.Errorf("without the variable: CAFile %q", c.CAFile)
	}
	// A missing file named by the variable is refused at configure, as a missing ca_file is.
	if resp := configure(t, validConfig(), map[string]string{envCAFile: filepath.Join(dir, "missing.pem")}, nil, false); !resp.Diagnostics.HasError() {
		t.Error("a PROXMOX_VE_CA_FILE naming a missing file was accepted")
	}
	// The digest key's fallback too.
	if c := configured(t, configure(t, validConfig(), map[string]string{envDigestKey: "env-key-0123456789abcdef"}, nil, false)).cfg; c.DigestKey != "env-key-0123456789abcdef" {
		t.Errorf("DigestKey %q, want the environment's", c.DigestKey)
	}
	if c := configured(t, configure(t, validConfig().with("cloud_init_digest_key", "block-key-0123456789ab"), map[string]string{envDigestKey: "env-key-0123456789abcdef"}, nil, false)).cfg; c.DigestKey != "block-key-0123456789ab" {
		t.Errorf("DigestKey %q, want the block's", c.DigestKey)
	}
}

// TestEnvTable: the provider documentation's environment table lists exactly the
// variables the provider's code reads.
func TestEnvTable(t *testing.T) {
	read := map[string]bool{}
	files, _ := filepath.Glob("*.go")
	nameRE := regexp.MustCompile(`"((?:PROXMOX_VE|PROXY)_[A-Z_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range nameRE.FindAllStringSubmatch(string(b), -1) {
			read[m[1]] = true
		}
	}
	tmpl, err := os.ReadFile(filepath.Join("..", "..", "templates", "index.md.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `((?:PROXMOX_VE|PROXY)_[A-Z_]+)` \\|").FindAllStringSubmatch(string(tmpl), -1) {
		listed[m[1]] = true
	}
	var missing, extra []string
	for v := range read {
		if !listed[v] {
			missing = append(missing, v)
		}
	}
	for v := range listed {
		if !read[v] {
			extra = append(extra, v)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(read) < 4 || len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("environment table: read %v; not listed %v; listed but not read %v", read, missing, extra)
	}
}
