package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// The install tests build release archives with scripts/release.sh (what `make release`
// runs) and install them the way a CI pipeline would: `terraform init` (or `tofu init`)
// against a local mirror, with no dev_overrides and no registry. They run under the CLI the
// suite runs (TF_ACC_TERRAFORM_PATH, else terraform on PATH): under OpenTofu the
// configuration's "proxy-operator/proxy" means registry.opentofu.org/proxy-operator/proxy,
// which the mirror serves too. They are not part of the reliability suite (make reliability
// runs TestE2E_ only).

// releaseVersions are built once per run, for the host platform only.
var releaseVersions = []string{"1.0.0", "1.1.0"}

// release is the one dist directory the install tests share (they only read it); TestMain
// removes it.
var release struct {
	once sync.Once
	dist string
	err  error
}

// buildRelease runs scripts/release.sh for each version into one dist directory, once per
// run, and returns it. The mirror is dist/mirror.
func buildRelease(t *testing.T) string {
	t.Helper()
	release.once.Do(func() { release.dist, release.err = runRelease() })
	if release.err != nil {
		t.Fatal(release.err)
	}
	return release.dist
}

func runRelease() (string, error) {
	root, err := tfrun.RepoRoot()
	if err != nil {
		return "", err
	}
	dist, err := os.MkdirTemp("", "e2e-release-")
	if err != nil {
		return "", err
	}
	for _, v := range releaseVersions {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "release.sh"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "VERSION="+v, "DIST="+dist, "PLATFORMS="+hostPlatform())
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return dist, fmt.Errorf("scripts/release.sh VERSION=%s: %w\n%s", v, err, out)
		}
	}
	return dist, nil
}

func hostPlatform() string { return runtime.GOOS + "_" + runtime.GOARCH }

// mirrorWorkspace is a workspace whose CLI configuration installs only from the given
// provider_installation block (no dev_overrides).
func mirrorWorkspace(t *testing.T, installation string) *tfrun.Workspace {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cli.tfrc")
	if err := os.WriteFile(cfg, []byte(installation), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &tfrun.Provider{Dir: dir, CLIConfig: cfg, Terraform: provider.Terraform}
	ws := p.NewWorkspace(t)
	ws.Timeout = commandTimeout
	return ws
}

// installConfig is a configuration with a version constraint and a proxy_health read
// against sim (so the installed binary really serves the provider).
func installConfig(sim *pvesim.Sim, constraint string) string {
	pc := tfrun.SimConfig(sim)
	return fmt.Sprintf(`terraform {
  required_providers {
    proxy = {
      source  = "proxy-operator/proxy"
      version = %q
    }
  }
}
`, constraint) + pc.HCL() + `
data "proxy_health" "h" {}

output "ready" {
  value = data.proxy_health.h.ready
}
`
}

// lockEntry is the proxy provider's entry of .terraform.lock.hcl.
type lockEntry struct {
	Version, Constraints string
	Hashes               []string
}

var (
	lockVersionRE     = regexp.MustCompile(`(?m)^\s*version\s*=\s*"([^"]+)"`)
	lockConstraintsRE = regexp.MustCompile(`(?m)^\s*constraints\s*=\s*"([^"]+)"`)
	lockHashRE        = regexp.MustCompile(`"((?:h1|zh):[^"]+)"`)
)

func readLock(t *testing.T, ws *tfrun.Workspace) lockEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws.Dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatalf("init wrote no lock file: %v", err)
	}
	text := string(data)
	if !strings.Contains(text, `provider "`+providerAddress()+`"`) {
		t.Fatalf("the lock file has no entry for the provider:\n%s", text)
	}
	var e lockEntry
	if m := lockVersionRE.FindStringSubmatch(text); m != nil {
		e.Version = m[1]
	}
	if m := lockConstraintsRE.FindStringSubmatch(text); m != nil {
		e.Constraints = m[1]
	}
	for _, m := range lockHashRE.FindAllStringSubmatch(text, -1) {
		e.Hashes = append(e.Hashes, m[1])
	}
	sort.Strings(e.Hashes)
	return e
}

// zipHashes are the h1: (dirhash of the unpacked archive, Terraform's package hash) and
// zh: (sha256 of the zip, what SHA256SUMS lists) of a release archive.
func zipHashes(t *testing.T, zip string) (h1, zh string) {
	t.Helper()
	h1, err := dirhash.HashZip(zip, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(zip)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return h1, "zh:" + hex.EncodeToString(sum[:])
}

// providerAddress is the address "proxy-operator/proxy" means under the suite's CLI.
func providerAddress() string { return provider.RegistryHost() + "/proxy-operator/proxy" }

// checkMirrorHosts: the release's mirror serves the provider under Terraform's and
// OpenTofu's registry hosts, the same files in both, so that one configuration
// ("proxy-operator/proxy") installs from it under either CLI.
func checkMirrorHosts(t *testing.T, dist string) {
	t.Helper()
	files := func(host string) map[string]string {
		dir := filepath.Join(dist, "mirror", host, "proxy-operator", "proxy")
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("the mirror has no %s tree: %v", host, err)
		}
		m := map[string]string{}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			m[e.Name()] = hex.EncodeToString(sum[:])
		}
		return m
	}
	tf, tofu := files("registry.terraform.io"), files("registry.opentofu.org")
	if len(tf) != 2*len(releaseVersions)+1 { // a zip and a <version>.json per version, index.json
		t.Fatalf("registry.terraform.io tree holds %v", tf)
	}
	if !reflect.DeepEqual(tf, tofu) {
		t.Fatalf("the two hosts' trees differ:\nregistry.terraform.io %v\nregistry.opentofu.org %v", tf, tofu)
	}
}

func releaseZip(dist, version string) string {
	return filepath.Join(dist, fmt.Sprintf("terraform-provider-proxy_%s_%s.zip", version, hostPlatform()))
}

// TestInstall_FilesystemMirror installs the released provider from a filesystem mirror, from a
// clean directory, with direct installation excluded for it: `init` picks the newest
// version the constraint allows, writes the lock file with the archive's h1: hash, the
// provider then serves a plan and an apply, and a constraint no mirrored version meets is
// refused.
func TestInstall_FilesystemMirror(t *testing.T) {
	needTF(t)
	dist := buildRelease(t)
	mirror := filepath.Join(dist, "mirror")
	checkMirrorHosts(t, dist)
	// SHA256SUMS lists the archive with the hash the zip really has.
	for _, v := range releaseVersions {
		sums, err := os.ReadFile(filepath.Join(dist, "terraform-provider-proxy_"+v+"_SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		_, zh := zipHashes(t, releaseZip(dist, v))
		want := strings.TrimPrefix(zh, "zh:") + "  " + filepath.Base(releaseZip(dist, v))
		if !strings.Contains(string(sums), want) {
			t.Fatalf("SHA256SUMS of %s lacks %q:\n%s", v, want, sums)
		}
		if !strings.Contains(string(sums), "terraform-provider-proxy_"+v+"_manifest.json") {
			t.Fatalf("SHA256SUMS of %s does not list the manifest:\n%s", v, sums)
		}
	}
	installation := fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = [%q]
  }
  direct {
    exclude = [%[2]q]
  }
}
`, mirror, providerAddress())
	sim := pvesim.NewForTest(t, pvesim.Options{Seed: runSeed})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	for _, tc := range []struct{ constraint, want string }{
		{"~> 1.0", "1.1.0"},   // any 1.x: the newest
		{"~> 1.0.0", "1.0.0"}, // 1.0.x only
	} {
		t.Run(tc.constraint, func(t *testing.T) {
			ws := mirrorWorkspace(t, installation)
			if err := ws.WriteConfig(installConfig(sim, tc.constraint)); err != nil {
				t.Fatal(err)
			}
			r := ws.Run(ctx, "init", "-input=false", "-no-color")
			if !r.OK() {
				t.Fatalf("init: %s", r)
			}
			if !strings.Contains(r.Stdout, "Installing proxy-operator/proxy v"+tc.want) {
				t.Fatalf("init did not install v%s:\n%s", tc.want, r.Stdout)
			}
			lock := readLock(t, ws)
			h1, _ := zipHashes(t, releaseZip(dist, tc.want))
			if lock.Version != tc.want || lock.Constraints != tc.constraint {
				t.Fatalf("lock file: version %q constraints %q, want %q and %q", lock.Version, lock.Constraints, tc.want, tc.constraint)
			}
			if len(lock.Hashes) != 1 || lock.Hashes[0] != h1 {
				t.Fatalf("lock file hashes %v, want exactly the archive's %s", lock.Hashes, h1)
			}
			if r := ws.Apply(ctx); !r.OK() || !strings.Contains(r.Stdout, "ready = true") {
				t.Fatalf("apply with the installed provider: %s", r)
			}
			// The installed binary is the release's, under its versioned name.
			bin := filepath.Join(ws.Dir, ".terraform", "providers", provider.RegistryHost(), "proxy-operator", "proxy",
				tc.want, hostPlatform(), "terraform-provider-proxy_v"+tc.want)
			if _, err := os.Stat(bin); err != nil {
				t.Fatalf("installed binary: %v", err)
			}
			// A second init with the lock file in place verifies the archive against it.
			if r := ws.Run(ctx, "init", "-input=false", "-no-color"); !r.OK() || !strings.Contains(r.Stdout, "Using previously-installed proxy-operator/proxy v"+tc.want) {
				t.Fatalf("init with the lock file: %s", r)
			}
		})
	}

	// The README's install section: the first init warns that the lock file holds this
	// platform's hash only; Terraform's suggested `providers lock -platform=...` asks the
	// registry (which does not serve this provider, and is not reachable offline), while
	// `providers lock -fs-mirror=<dir>` locks from the mirror.
	t.Run("lock from the mirror", func(t *testing.T) {
		root, err := tfrun.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		readme, err := os.ReadFile(filepath.Join(root, "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), "terraform providers lock -fs-mirror=") {
			t.Fatal("the README does not say how to lock from the mirror (terraform providers lock -fs-mirror=...)")
		}
		ws := mirrorWorkspace(t, installation)
		if err := ws.WriteConfig(installConfig(sim, "~> 1.0")); err != nil {
			t.Fatal(err)
		}
		r := ws.Run(ctx, "init", "-input=false", "-no-color")
		if !r.OK() || !strings.Contains(strings.Join(strings.Fields(r.Output()), " "), "Incomplete lock file information") {
			t.Fatalf("init from the mirror: want it to succeed warning of an incomplete lock file (what the README explains): %s", r)
		}
		if r := ws.Run(ctx, "providers", "lock", "-no-color", "-platform="+hostPlatform()); r.OK() {
			t.Errorf("providers lock without -fs-mirror succeeded: the README says it cannot work for this provider: %s", r)
		}
		r = ws.Run(ctx, "providers", "lock", "-no-color", "-fs-mirror="+mirror, "-platform="+hostPlatform())
		if !r.OK() || !strings.Contains(r.Stdout, "Obtained proxy-operator/proxy checksums for "+hostPlatform()) {
			t.Fatalf("providers lock -fs-mirror: %s", r)
		}
		h1, _ := zipHashes(t, releaseZip(dist, "1.1.0"))
		if lock := readLock(t, ws); !slices.Contains(lock.Hashes, h1) {
			t.Errorf("lock file hashes %v, want the archive's %s", lock.Hashes, h1)
		}
	})

	t.Run("no matching version", func(t *testing.T) {
		ws := mirrorWorkspace(t, installation)
		if err := ws.WriteConfig(installConfig(sim, "~> 2.0")); err != nil {
			t.Fatal(err)
		}
		r := ws.Run(ctx, "init", "-input=false", "-no-color")
		if r.OK() {
			t.Fatalf("init accepted ~> 2.0 with only %v mirrored: %s", releaseVersions, r)
		}
		out := strings.Join(strings.Fields(r.Output()), " ")
		if !strings.Contains(out, "no available releases match the given constraints ~> 2.0") {
			t.Fatalf("init failed without saying no release matches: %s", r)
		}
		if _, err := os.Stat(filepath.Join(ws.Dir, ".terraform.lock.hcl")); err == nil {
			t.Fatal("a refused init wrote a lock file")
		}
	})

	t.Run("tampered archive", func(t *testing.T) {
		// A lock file written from the good archive refuses a mirror whose archive changed.
		ws := mirrorWorkspace(t, installation)
		if err := ws.WriteConfig(installConfig(sim, "1.0.0")); err != nil {
			t.Fatal(err)
		}
		h1, _ := zipHashes(t, releaseZip(dist, "1.1.0")) // another archive's hash
		lock := fmt.Sprintf("provider %q {\n  version     = \"1.0.0\"\n  constraints = \"1.0.0\"\n  hashes = [\n    %q,\n  ]\n}\n", providerAddress(), h1)
		if err := ws.WriteFile(".terraform.lock.hcl", lock); err != nil {
			t.Fatal(err)
		}
		r := ws.Run(ctx, "init", "-input=false", "-no-color")
		if r.OK() {
			t.Fatalf("init accepted an archive whose hash is not in the lock file: %s", r)
		}
		if out := strings.Join(strings.Fields(r.Output()), " "); !strings.Contains(out, "checksums") {
			t.Fatalf("init failed without naming the checksum: %s", r)
		}
	})
}

// TestInstall_NetworkMirror serves the release's network mirror layout (index.json,
// <version>.json) over HTTPS and installs from it: the CLI checks the archive against the
// zh: hash <version>.json gives and records its own h1: hash in the lock file (OpenTofu
// records the mirror's zh: hash beside it; Terraform keeps zh: hashes for signed registry
// answers); a <version>.json whose zh: hash is not the archive's is refused.
func TestInstall_NetworkMirror(t *testing.T) {
	needTF(t)
	dist := buildRelease(t)
	mirror := filepath.Join(dist, "mirror")
	h1, zh := zipHashes(t, releaseZip(dist, "1.0.0"))
	index, err := os.ReadFile(filepath.Join(mirror, provider.RegistryHost(), "proxy-operator", "proxy", "1.0.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(index), `"`+hostPlatform()+`": {"url": "`+filepath.Base(releaseZip(dist, "1.0.0"))+`", "hashes": ["`+zh+`"]}`) {
		t.Fatalf("1.0.0.json does not list the archive with its zh: hash %s:\n%s", zh, index)
	}
	sim := pvesim.NewForTest(t, pvesim.Options{Seed: runSeed})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	serve := func(t *testing.T, tamper bool) *tfrun.Workspace {
		files := http.FileServer(http.Dir(mirror))
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if tamper && strings.HasSuffix(r.URL.Path, "/1.0.0.json") {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(strings.ReplaceAll(string(index), zh, "zh:"+strings.Repeat("0", 64))))
				return
			}
			files.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		certFile := filepath.Join(t.TempDir(), "mirror-ca.pem")
		if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
			t.Fatal(err)
		}
		ws := mirrorWorkspace(t, fmt.Sprintf(`provider_installation {
  network_mirror {
    url     = "%s/"
    include = [%q]
  }
  direct {
    exclude = [%[2]q]
  }
}
`, srv.URL, providerAddress()))
		ws.Env = append(ws.Env, "SSL_CERT_FILE="+certFile)
		if err := ws.WriteConfig(installConfig(sim, "~> 1.0.0")); err != nil {
			t.Fatal(err)
		}
		return ws
	}

	t.Run("install", func(t *testing.T) {
		ws := serve(t, false)
		r := ws.Run(ctx, "init", "-input=false", "-no-color")
		if !r.OK() || !strings.Contains(r.Stdout, "Installing proxy-operator/proxy v1.0.0") {
			t.Fatalf("init from the network mirror: %s", r)
		}
		lock := readLock(t, ws)
		want := []string{h1}
		if provider.OpenTofu {
			want = append(want, zh) // h1: sorts before zh:
		}
		if lock.Version != "1.0.0" || !reflect.DeepEqual(lock.Hashes, want) {
			t.Fatalf("lock file: version %q hashes %v, want 1.0.0 and %v", lock.Version, lock.Hashes, want)
		}
		if r := ws.Apply(ctx); !r.OK() || !strings.Contains(r.Stdout, "ready = true") {
			t.Fatalf("apply with the provider from the network mirror: %s", r)
		}
	})
	t.Run("wrong zh hash", func(t *testing.T) {
		ws := serve(t, true)
		r := ws.Run(ctx, "init", "-input=false", "-no-color")
		if r.OK() {
			t.Fatalf("init accepted an archive whose sha256 is not the mirror's zh: hash: %s", r)
		}
		if out := strings.Join(strings.Fields(r.Output()), " "); !strings.Contains(out, "checksum") {
			t.Fatalf("init failed without naming the checksum: %s", r)
		}
	})
}
