package pvesim_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The conformance tests run against a fresh simulator, or against a real Proxmox VE host
// when PROXMOX_VE_ENDPOINT is set, with PROXMOX_VE_API_TOKEN, PROXMOX_TEST_NODES (the
// first node is used), PROXMOX_TEST_TEMPLATE_VMID and PROXMOX_TEST_ISO_STORAGE (optional:
// PROXMOX_VE_CA_FILE, PROXMOX_VE_INSECURE=true, PROXMOX_TEST_SCRATCH_VMID, default 199999,
// which must be free): the same variables as the provider's acceptance tests. On a
// real host the tests run one at a time and remove their VM and seed afterwards; tests that
// need an admin function of the simulator (privileges, faults, a node going down) skip.
//
// The simulator runs with the captured host's names (node pv1-1, VM 199999, missing VM
// 999999), so that the fixtures' texts apply verbatim; on a real host the names are
// substituted into the expected texts.

const (
	captureNode    = "pv1-1"
	captureVMID    = 199999
	captureMissing = 999999
	captureName    = "proxy-reconaaaaaaaaaaa"
)

type target struct {
	t          *testing.T
	api        *pveapi.Client
	sim        *pvesim.Sim // nil on a real host
	node       string
	template   int
	isoStorage string
	endpoint   string
	token      string
	http       *http.Client
	ca         string
	vmid       int
	poll       time.Duration
	deadline   time.Duration
}

func realHost() bool { return os.Getenv("PROXMOX_VE_ENDPOINT") != "" }

// newTarget returns a fresh simulator (opts apply) or the real host.
func newTarget(t *testing.T, opts pvesim.Options) *target {
	t.Helper()
	tg := &target{t: t, vmid: captureVMID}
	var caPEM []byte
	insecure := false
	if realHost() {
		tg.endpoint = os.Getenv("PROXMOX_VE_ENDPOINT")
		tg.token = os.Getenv("PROXMOX_VE_API_TOKEN")
		tg.node, _, _ = strings.Cut(os.Getenv("PROXMOX_TEST_NODES"), ",")
		tg.isoStorage = os.Getenv("PROXMOX_TEST_ISO_STORAGE")
		var err error
		if tg.template, err = strconv.Atoi(os.Getenv("PROXMOX_TEST_TEMPLATE_VMID")); err != nil || tg.token == "" || tg.node == "" || tg.isoStorage == "" {
			t.Fatal("PROXMOX_VE_ENDPOINT needs PROXMOX_VE_API_TOKEN, PROXMOX_TEST_NODES, PROXMOX_TEST_TEMPLATE_VMID and PROXMOX_TEST_ISO_STORAGE")
		}
		if v := os.Getenv("PROXMOX_TEST_SCRATCH_VMID"); v != "" {
			if tg.vmid, err = strconv.Atoi(v); err != nil {
				t.Fatal("PROXMOX_TEST_SCRATCH_VMID: ", err)
			}
		}
		if f := os.Getenv("PROXMOX_VE_CA_FILE"); f != "" {
			if caPEM, err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
		insecure, _ = strconv.ParseBool(os.Getenv("PROXMOX_VE_INSECURE"))
		tg.poll, tg.deadline = time.Second, 5*time.Minute
		t.Cleanup(tg.cleanupRealHost)
	} else {
		if opts.Nodes == nil {
			opts.Nodes = []string{captureNode}
		}
		if opts.Durations.FreshUnknown == 0 {
			// Most tests read the listing right after a clone; the window has its own test.
			opts.Durations.FreshUnknown = time.Nanosecond
		}
		if opts.Durations.StatusInterval == 0 {
			// Likewise the status snapshot's lag: tests about it set the interval.
			opts.Listing.Live = true
		}
		s := pvesim.NewForTest(t, opts)
		tg.sim, tg.endpoint, tg.token, tg.node = s, s.Endpoint, s.APIToken, s.Nodes[0]
		tg.template, tg.isoStorage = s.Templates["debian-13"], s.ISOStorage
		caPEM = []byte(s.CAPEM)
		tg.poll, tg.deadline = 2*time.Millisecond, 20*time.Second
	}
	tg.ca = string(caPEM)
	var err error
	tg.api, err = pveapi.New(pveapi.Options{Endpoint: tg.endpoint, Token: tg.token, CAPEM: string(caPEM), Insecure: insecure, RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // only with PROXMOX_VE_INSECURE=1
	if len(caPEM) > 0 {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		tlsConf.RootCAs = pool
	}
	tg.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf, ForceAttemptHTTP2: true}}
	return tg
}

// parallel marks a simulator test parallel (a real host runs one test at a time).
func (tg *target) parallel() {
	if !realHost() {
		tg.t.Parallel()
	}
}

// simOnly skips a test that needs an admin function of the simulator.
func (tg *target) simOnly(why string) *pvesim.Sim {
	tg.t.Helper()
	if tg.sim == nil {
		tg.t.Skip("needs the simulator: " + why)
	}
	return tg.sim
}

func (tg *target) cleanupRealHost() {
	ctx := context.Background()
	if st, err := tg.api.VMStatus(ctx, tg.node, tg.vmid); err == nil {
		if st.Status != "stopped" {
			if upid, err := tg.api.Stop(ctx, tg.node, tg.vmid); err == nil {
				tg.waitTask(upid)
			}
		}
		if upid, err := tg.api.Destroy(ctx, tg.node, tg.vmid); err == nil {
			tg.waitTask(upid)
		}
	}
	if upid, err := tg.api.DeleteVolume(ctx, tg.node, tg.isoStorage, tg.seedVolID()); err == nil {
		tg.waitTask(upid)
	}
}

func (tg *target) caPEM() string { return tg.ca }

func (tg *target) ctx() context.Context { return context.Background() }

// subst puts the target's names into a captured text.
func (tg *target) subst(s string) string {
	return strings.NewReplacer(
		"'nodes/"+captureNode+"/", "'nodes/"+tg.node+"/",
		strconv.Itoa(captureVMID), strconv.Itoa(tg.vmid),
	).Replace(s)
}

// msg is a fixture's message with the target's names.

func apiErr(t *testing.T, err error) *pveapi.APIError {
	t.Helper()
	var ae *pveapi.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("want an API error, got %v", err)
	}
	return ae
}

// wantAPIError asserts err is the fixture's answer: status, message and field errors.
func (tg *target) wantAPIError(err error, name string) {
	tg.t.Helper()
	f := fixture.MustLoad(name)
	ae := apiErr(tg.t, err)
	if ae.Status != f.Status || ae.Message != tg.subst(f.Message()) {
		tg.t.Fatalf("got %d %q, want %d %q (fixture %s)", ae.Status, ae.Message, f.Status, tg.subst(f.Message()), name)
	}
	for k, v := range f.Errors() {
		if ae.Errors[k] != tg.subst(v) {
			tg.t.Fatalf("errors[%s] = %q, want %q (fixture %s)", k, ae.Errors[k], v, name)
		}
	}
}

// wantNotExist asserts err is F2's answer for vmid.
func (tg *target) wantNotExist(err error, vmid int) {
	tg.t.Helper()
	f := fixture.MustLoad("err_not_exist")
	want := strings.Replace(tg.subst(f.Message()), "/"+strconv.Itoa(captureMissing)+".conf", "/"+strconv.Itoa(vmid)+".conf", 1)
	if ae := apiErr(tg.t, err); ae.Status != f.Status || ae.Message != want {
		tg.t.Fatalf("got %d %q, want %d %q", ae.Status, ae.Message, f.Status, want)
	}
}

// waitTask polls a task until it stops and returns its status.
func (tg *target) waitTask(upid string) pveapi.TaskStatus {
	tg.t.Helper()
	u, err := pveapi.ParseUPID(upid)
	if err != nil {
		tg.t.Fatalf("UPID %q: %v", upid, err)
	}
	end := time.Now().Add(tg.deadline)
	for {
		st, err := tg.api.TaskStatus(tg.ctx(), u.Node, upid)
		if err != nil {
			tg.t.Fatalf("task status %s: %v", upid, err)
		}
		if st.Status == "stopped" {
			return st
		}
		if time.Now().After(end) {
			tg.t.Fatalf("task %s still running after %s", upid, tg.deadline)
		}
		time.Sleep(tg.poll)
	}
}

// mustOK waits for a task that must end OK.
func (tg *target) mustOK(upid string, err error) {
	tg.t.Helper()
	if err != nil {
		tg.t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != "OK" {
		tg.t.Fatalf("task %s ended %q", upid, st.ExitStatus)
	}
}

func (tg *target) cloneParams(desc string) pveapi.CloneParams {
	return pveapi.CloneParams{NewID: tg.vmid, Name: captureName, Description: desc}
}

// cloned clones the template onto the test VMID and waits for it.
func (tg *target) cloned() {
	tg.t.Helper()
	upid, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("pvesim conformance\n"))
	tg.mustOK(upid, err)
}

func (tg *target) seedVolID() string {
	return tg.isoStorage + ":iso/" + captureName + "-seed.iso"
}

// seed builds a NoCloud seed whose vendor-data installs the guest agent.
func (tg *target) seed(userData string) []byte {
	tg.t.Helper()
	iso, err := nocloud.Build(nocloud.Seed{Name: captureName, UserData: []byte(userData), InstallGuestAgent: true})
	if err != nil {
		tg.t.Fatal(err)
	}
	return iso
}

func (tg *target) upload(name string, data []byte) (string, error) {
	return tg.api.UploadISO(tg.ctx(), tg.node, tg.isoStorage, name, bytes.NewReader(data), int64(len(data)))
}

// seeded clones, uploads a seed and attaches it as ide2, like Create's steps 4 to 6.
func (tg *target) seeded(userData string) {
	tg.t.Helper()
	tg.cloned()
	tg.mustOK(tg.upload(captureName+"-seed.iso", tg.seed(userData)))
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{
		"ide2": tg.seedVolID() + ",media=cdrom", "tags": "proxy_operator",
	}); err != nil {
		tg.t.Fatal(err)
	}
}

func (tg *target) started() {
	tg.t.Helper()
	upid, err := tg.api.Start(tg.ctx(), tg.node, tg.vmid)
	tg.mustOK(upid, err)
}

// power runs a status call the seam has no method for (suspend, resume).
func (tg *target) power(action string, form url.Values) {
	tg.t.Helper()
	var upid string
	tg.rawJSON("POST", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/status/"+action, form, &upid)
	tg.mustOK(upid, nil)
}

// raw sends one request with the token and returns the response and its body.
func (tg *target) raw(method, path string, form url.Values, header map[string]string) (*http.Response, []byte) {
	tg.t.Helper()
	var body io.Reader
	u := tg.endpoint + "/api2/json" + path
	if form != nil && (method == "POST" || method == "PUT") {
		body = strings.NewReader(form.Encode())
	} else if form != nil {
		u += "?" + form.Encode()
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		tg.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", "PVEAPIToken="+tg.token)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := tg.http.Do(req)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tg.t.Fatal(err)
	}
	return resp, b
}

// rawJSON sends a request that must succeed and decodes its data.
func (tg *target) rawJSON(method, path string, form url.Values, data any) {
	tg.t.Helper()
	resp, b := tg.raw(method, path, form, nil)
	if resp.StatusCode != http.StatusOK {
		tg.t.Fatalf("%s %s: %s %s", method, path, resp.Status, b)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		tg.t.Fatal(err)
	}
	if data != nil {
		if err := json.Unmarshal(env.Data, data); err != nil {
			tg.t.Fatalf("%s %s: %v in %s", method, path, err, env.Data)
		}
	}
}

// admin calls the simulator's admin API under /pvesim with a JSON body; it must succeed.
func (tg *target) admin(method, path string, in, out any) {
	tg.t.Helper()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			tg.t.Fatal(err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, tg.endpoint+"/pvesim"+path, body)
	if err != nil {
		tg.t.Fatal(err)
	}
	req.Header.Set("Authorization", "PVEAPIToken="+tg.token)
	resp, err := tg.http.Do(req)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		tg.t.Fatalf("admin %s %s: %s %s", method, path, resp.Status, b)
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		tg.t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			tg.t.Fatalf("admin %s %s: %v", method, path, err)
		}
	}
}

// resource returns the test VM's /cluster/resources entry as raw JSON fields.
func (tg *target) resource(vmid int) (map[string]any, bool) {
	tg.t.Helper()
	var list []map[string]any
	tg.rawJSON("GET", "/cluster/resources", url.Values{"type": {"vm"}}, &list)
	for _, e := range list {
		if n, ok := e["vmid"].(float64); ok && int(n) == vmid {
			return e, true
		}
	}
	return nil, false
}

// fixtureEntry returns the entry of a listing fixture for vmid.
func fixtureEntry(t *testing.T, name string, vmid int) map[string]any {
	t.Helper()
	var list []map[string]any
	if err := fixture.MustLoad(name).Data(&list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		if n, ok := e["vmid"].(float64); ok && int(n) == vmid {
			return e
		}
	}
	t.Fatalf("fixture %s has no entry %d", name, vmid)
	return nil
}

func fixtureData(t *testing.T, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := fixture.MustLoad(name).Data(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func keysOf(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// eventually polls cond until it holds or the deadline passes.
func (tg *target) eventually(what string, cond func() bool) {
	tg.t.Helper()
	end := time.Now().Add(tg.deadline)
	for !cond() {
		if time.Now().After(end) {
			tg.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(tg.poll)
	}
}
