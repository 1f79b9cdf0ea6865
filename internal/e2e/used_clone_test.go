package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// actor is another person on the cluster: a user of its own with a token, acting through
// the API as anyone would.
type actor struct {
	id     string // user@realm!token
	client *pveapi.Client
}

// newActor adds user (with a token "hand", no privilege separation) and grants it role on
// path, through the API with the simulator's root token, as pveum would.
func newActor(t *testing.T, s *scenario, user, role, path string) actor {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(s.sim.CAPEM))
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	call := func(method, p string, form url.Values) json.RawMessage {
		req, err := http.NewRequestWithContext(s.ctx, method, s.sim.Endpoint+"/api2/json"+p, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "PVEAPIToken="+s.sim.APIToken)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, p, resp.StatusCode, b)
		}
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		_ = json.Unmarshal(b, &env)
		return env.Data
	}
	call("POST", "/access/users", url.Values{"userid": {user}})
	var tok struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(call("POST", "/access/users/"+url.PathEscape(user)+"/token/hand", url.Values{"privsep": {"0"}}), &tok); err != nil {
		t.Fatal(err)
	}
	call("PUT", "/access/acl", url.Values{"path": {path}, "roles": {role}, "users": {user}})
	c, err := pveapi.New(pveapi.Options{Endpoint: s.sim.Endpoint, Token: user + "!hand=" + tok.Value, CAPEM: s.sim.CAPEM,
		RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return actor{id: user + "!hand", client: c}
}

// wait waits for the actor's task to stop, failing the test unless it succeeded.
func (a actor) wait(ctx context.Context, t *testing.T, node, upid string, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	for range 2000 {
		ts, err := a.client.TaskStatus(ctx, node, upid)
		if err != nil {
			t.Fatal(err)
		}
		if ts.Status == "stopped" {
			if !pveapi.TaskSucceeded(ts.ExitStatus) {
				t.Fatalf("task %s: %s", upid, ts.ExitStatus)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("task %s did not stop", upid)
}

// usedHandClone applies one proxy_vm, takes it out of the state (as a kill before
// Terraform saved it leaves it) and deletes its VM; then another user clones the same
// template by hand onto that VMID and name (so its config is exactly the template's clone),
// starts and stops it, and writes into its notes the creating text the lost VM's clone
// carried (before its config step: no instance line; its proof verifies for that VMID),
// dated age ago. It returns the VMID and the actor.
func usedHandClone(t *testing.T, s *scenario, vm tfrun.VM, age time.Duration) (int, actor) {
	t.Helper()
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	first := s.state().OfType("proxy_vm")
	if len(first) != 1 {
		t.Fatalf("state %+v", first)
	}
	vmid, uid := first[0].Int("vmid"), first[0].String("uid")
	if r := s.ws.Run(s.ctx, "state", "rm", vm.Addr()); !r.OK() {
		t.Fatalf("state rm:\n%s", r)
	}
	lost, _ := s.sim.VM(vmid)
	if err := s.sim.DeleteVM(vmid); err != nil {
		t.Fatal(err)
	}
	key, err := pveapi.DeriveKey(s.sim.APIToken, proxmox.ProofKeyLabel)
	if err != nil {
		t.Fatal(err)
	}
	copied := proxmox.CreatingMark(key, proxmox.MarkLines{UID: uid, CreatedAt: time.Now().UTC().Add(-age).Truncate(time.Second)}, vmid, vm.Name) +
		"\n" + proxmox.MarkKeyCreatedBy + "=" + proxmox.CreatedByProvider
	a := newActor(t, s, "mallory@pve", "Administrator", "/")
	tmpl, ok := s.sim.VM(9001)
	if !ok {
		t.Fatal("no template 9001")
	}
	upid, err := a.client.Clone(s.ctx, tmpl.Node, 9001, pveapi.CloneParams{NewID: vmid, Name: vm.Name, Target: lost.Node})
	a.wait(s.ctx, t, tmpl.Node, upid, err)
	upid, err = a.client.Start(s.ctx, lost.Node, vmid)
	a.wait(s.ctx, t, lost.Node, upid, err)
	upid, err = a.client.Stop(s.ctx, lost.Node, vmid)
	a.wait(s.ctx, t, lost.Node, upid, err)
	if err := a.client.SetVMConfig(s.ctx, lost.Node, vmid, map[string]string{"description": copied}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.sim.VM(vmid); got.Power != "stopped" || got.Description != copied {
		t.Fatalf("setup: the hand clone is %+v", got)
	}
	return vmid, a
}

// TestE2E_Cleanup_UsedHandCloneNeedsALook is the clean-up half of the used-hand-clone
// threat (decision: clone-history): another user cloned the template by hand onto the VMID
// of a create that was lost, used the VM (started, stopped) and wrote the copied creating
// text into its notes, three hours old. Its config is exactly the template's clone, so only
// the task history tells it apart: the clean-up (the documented real run) must send it
// nothing and report it as needing a look, naming who started it. Before the task-history
// check the clean-up stopped and deleted it.
func TestE2E_Cleanup_UsedHandCloneNeedsALook(t *testing.T) {
	needTF(t)
	tf := latestTerraform(t)
	s := newScenario(t, "identity/used-hand-clone-cleanup", scenarioOpts{NoForeign: true})
	vm := s.vm("uc")
	vmid, a := usedHandClone(t, s, vm, 3*time.Hour)
	before, _ := s.sim.VM(vmid)
	r := s.runCleanup(t, tf)
	if !r.OK() {
		t.Fatalf("the cleanup failed:\n%s", r)
	}
	out := strings.Join(strings.Fields(r.Output()), " ")
	wrong := noWritesTo(t, s, vmid)
	if after, ok := s.sim.VM(vmid); !ok || after.Description != before.Description || after.Power != "stopped" {
		wrong++
		t.Errorf("the used hand clone changed or is gone (there %v):\nbefore %+v\nafter  %+v", ok, before, after)
	}
	for _, want := range []string{fmt.Sprintf("(VMID %d)", vmid), "needs a look", a.id + " started it",
		fmt.Sprintf("pvenode task list --vmid %d", vmid), fmt.Sprintf("qm stop %d && qm destroy %d --purge", vmid, vmid)} {
		if !strings.Contains(out, want) {
			t.Errorf("the cleanup's output lacks %q:\n%s", want, tfrun.TrimOverridesWarning(r.Stdout))
		}
	}
	figures.note(s.cat, fmt.Sprintf("used hand clone of the template with a copied creating text: %d writes by the cleanup", wrong))
	identityFigures(s, wrong == 0, wrong, 0)
}

// TestE2E_Ownership_RetryLeavesAUsedHandClone is the retry half (decision: clone-history):
// the same used hand clone, its copied creating text a minute old (within the takeover
// window). The next apply must send it nothing, warn naming the VMID and who started it,
// and create its VM at another VMID; destroy leaves the hand clone. Before the task-history
// check the retry destroyed and re-cloned it.
func TestE2E_Ownership_RetryLeavesAUsedHandClone(t *testing.T) {
	needTF(t)
	s := newScenario(t, "identity/used-hand-clone-retry", scenarioOpts{NoForeign: true})
	vm := s.vm("ur")
	vmid, a := usedHandClone(t, s, vm, time.Minute)
	before, _ := s.sim.VM(vmid)
	s.sim.EnableRequestLog()
	r := s.apply()
	if !r.OK() {
		t.Fatalf("the apply failed:\n%s", r)
	}
	flat := strings.Join(strings.Fields(r.Output()), " ")
	wrong := noWritesTo(t, s, vmid)
	if st := s.state().OfType("proxy_vm"); len(st) != 1 || st[0].Int("vmid") == vmid {
		wrong++
		t.Errorf("state %+v: want one VM at another VMID than the hand clone %d", st, vmid)
	}
	for _, want := range []string{"Warning: Half-made proxy VM left alone", fmt.Sprintf("VMID %d", vmid), a.id + " started it"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the apply does not say %q:\n%s", want, r)
		}
	}
	if after, ok := s.sim.VM(vmid); !ok || after.Description != before.Description || after.Power != "stopped" {
		wrong++
		t.Errorf("the hand clone changed (there %v):\nbefore %+v\nafter  %+v", ok, before, after)
	}
	if r := s.destroy(); !r.OK() {
		t.Errorf("destroy:\n%s", r)
	}
	if _, ok := s.sim.VM(vmid); !ok {
		wrong++
		t.Errorf("destroy removed the hand clone")
	}
	identityFigures(s, wrong == 0, wrong, 0)
}
