package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Secrets: a full lifecycle at TF_LOG=TRACE with a sentinel token and a sentinel
// cloud-init, including a failed apply, a provider crash, an update, a replacement, an
// import and a destroy. Neither sentinel may appear in any log, diagnostic, plan output or
// crash output, nor the key derived from the token for the creating mark's proof; the
// token never in the state; cloud_init only as a sensitive value.

// leakScan collects every text the lifecycle produced.
type leakScan struct {
	texts map[string]string // source -> text
}

func (l *leakScan) add(source, text string) {
	if l.texts == nil {
		l.texts = map[string]string{}
	}
	l.texts[source] += text
}

func (l *leakScan) addResult(step string, r *tfrun.Result) {
	l.add(step+" stdout", r.Stdout)
	l.add(step+" stderr", r.Stderr)
}

// find returns "source: context" for each source holding needle.
func (l *leakScan) find(needle string) []string {
	var out []string
	for src, text := range l.texts {
		if i := strings.Index(text, needle); i >= 0 {
			a, b := max(0, i-120), min(len(text), i+len(needle)+40)
			out = append(out, fmt.Sprintf("%s: ...%s...", src, strings.ReplaceAll(text[a:b], "\n", `\n`)))
		}
	}
	return out
}

func TestE2E_Secrets(t *testing.T) {
	needTF(t)
	for _, viaFile := range []bool{false, true} {
		name := "api_token"
		if viaFile {
			name = "api_token_file"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runSecrets(t, viaFile)
		})
	}
}

func runSecrets(t *testing.T, viaFile bool) {
	tokenSecret := "SENTINEL-TOKEN-" + fmt.Sprintf("%016x", fnv64(t.Name())^runSeed)
	cloudSentinel := "SENTINEL-CLOUDINIT-" + fmt.Sprintf("%016x", fnv64(t.Name()+"ci")^runSeed)
	s := newScenario(t, "secrets", scenarioOpts{Trace: true, Sim: pvesim.Options{Speed: interruptSpeed, Token: "root@pam!tf=" + tokenSecret}})
	if viaFile {
		pc, err := s.pc.WithTokenFile(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		s.pc = pc
	}
	cloudInit := "#cloud-config\nwrite_files:\n  - path: /etc/proxy/secret\n    content: " + cloudSentinel + "\n"
	v := s.vm("sec")
	v.CloudInit = cloudInit
	s.vms = []tfrun.VM{v}
	var scan leakScan
	step := func(name string, r *tfrun.Result) *tfrun.Result {
		scan.addResult(name, r)
		return r
	}

	// 1. A failed apply (the seed upload refused): its diagnostic must not echo the seed.
	s.sim.InjectFault(pvesim.Fault{Method: "POST", Path: "/nodes/{node}/storage/{storage}/upload", Status: 500, Message: "pvesim: upload refused", Times: 1})
	if r := step("failed apply", s.apply()); r.OK() {
		t.Errorf("the apply with a refused upload succeeded")
	}
	s.sim.ClearFaults()
	// 2. The provider crashes mid-apply.
	s.waitTasksIdle()
	r, _ := s.startAndSignal(trigger{Requests: 6}, func(p *tfrun.Process) error {
		if p.KillProviders() == 0 {
			return fmt.Errorf("no provider")
		}
		return nil
	}, "apply", "-auto-approve", "-input=false", "-no-color")
	step("crashed apply", r)
	s.waitTasksIdle()
	// 3. A clean apply, a plan, a refresh, an update, a cloud-init change (replacement).
	if r := step("apply", s.apply()); !r.OK() {
		t.Fatalf("apply failed:\n%s", r)
	}
	step("plan", s.ws.Plan(s.ctx))
	step("refresh", s.ws.Run(s.ctx, "apply", "-refresh-only", "-auto-approve", "-no-color"))
	s.vms[0].Cores = 2
	if r := step("update", s.apply()); !r.OK() {
		t.Errorf("update failed:\n%s", r)
	}
	s.vms[0].CloudInit = cloudInit + "# changed " + cloudSentinel + "\n"
	step("replace plan", s.ws.Plan(s.ctx))
	if r := step("replace", s.apply()); !r.OK() {
		t.Errorf("replacement failed:\n%s", r)
	}
	// 4. Import back after forgetting it.
	st := s.state()
	vms := st.OfType("proxy_vm")
	if len(vms) != 1 {
		t.Fatalf("state holds %d VMs", len(vms))
	}
	if !vms[0].Sensitive("cloud_init") {
		t.Errorf("cloud_init is not marked sensitive in the state")
	}
	id := vms[0].String("id")
	step("state rm", s.ws.Run(s.ctx, "state", "rm", "-no-color", v.Addr()))
	step("import", s.ws.Import(s.ctx, v.Addr(), id))
	step("plan after import", s.ws.Plan(s.ctx))
	step("apply after import", s.apply())
	// 5. Destroy.
	if r := step("destroy", s.destroy()); !r.OK() {
		t.Errorf("destroy failed:\n%s", r)
	}

	for _, f := range s.ws.LogFiles() {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Errorf("read log %s: %v", f, err)
			continue
		}
		scan.add("TF_LOG "+filepath.Base(f), string(b))
	}
	if len(s.ws.LogFiles()) == 0 || !strings.Contains(scan.texts[fmt.Sprintf("TF_LOG %s", filepath.Base(s.ws.LogFiles()[0]))], "proxy") {
		t.Errorf("no TRACE log was written: the scan would prove nothing")
	}
	// The state: the token never (any version of the state file); cloud_init is there,
	// marked sensitive, which is Terraform's normal behaviour.
	stateScan := leakScan{}
	for _, f := range []string{"terraform.tfstate", "terraform.tfstate.backup"} {
		if b, err := os.ReadFile(filepath.Join(s.ws.Dir, f)); err == nil {
			stateScan.add(f, string(b))
		}
	}

	// The scan must be able to see what the provider logs: the token's id (not secret) is
	// in every UPID, and the cloud-init size is logged instead of its text.
	if len(scan.find("root@pam!tf")) == 0 || len(scan.find("cloud_init_bytes")) == 0 {
		t.Errorf("the scanned texts lack the token id or cloud_init_bytes: the scan is blind")
	}
	leaks := 0
	for _, hit := range scan.find(tokenSecret) {
		leaks++
		t.Errorf("the token leaked: %s", hit)
	}
	for _, hit := range stateScan.find(tokenSecret) {
		leaks++
		t.Errorf("the token is in the state: %s", hit)
	}
	for _, hit := range scan.find(cloudSentinel) {
		leaks++
		t.Errorf("the cloud-init text leaked: %s", hit)
	}
	// The key derived from the token for the creating mark's proof (decision:
	// creating-proof) is as secret as the token: in no encoding, anywhere.
	key, err := pveapi.DeriveKey(s.sim.APIToken, proxmox.ProofKeyLabel)
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{hex.EncodeToString(key), strings.ToUpper(hex.EncodeToString(key)), base64.StdEncoding.EncodeToString(key),
		base64.RawURLEncoding.EncodeToString(key), strings.Trim(fmt.Sprintf("%d", key), "[]")} {
		for _, hit := range append(scan.find(enc), stateScan.find(enc)...) {
			leaks++
			t.Errorf("the key derived from the token leaked: %s", hit)
		}
	}
	t.Logf("scanned %d texts (%d log files, %d KiB)", len(scan.texts), len(s.ws.LogFiles()), scanSize(scan)/1024)
	s.figure(func(row *figureRow) {
		row.Run++
		if leaks == 0 {
			row.Converged++
		}
		row.Leaks += leaks
	})
	if f := s.chk.Gone(); !f.OK() {
		t.Errorf("after destroy: %v", f.Err())
	}
}

func scanSize(l leakScan) int {
	n := 0
	for _, t := range l.texts {
		n += len(t)
	}
	return n
}
