package pveapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

const (
	tNode    = "pv1-1"
	tVMID    = 199999
	tStorage = "proxy-seeds"
	tName    = "proxy-reconaaaaaaaaaaa"
)

// contractCase is one seam call against a server replaying a fixture.
type contractCase struct {
	name      string // seam method name; several cases may share one
	fixture   string
	call      func(ctx context.Context, c *Client) (any, error)
	method    string
	path      string // escaped, below /api2/json
	query     url.Values
	form      url.Values // nil: no form body
	multipart bool
	check     func(t *testing.T, got any)
	// secret is text that must never reach the log (a description, an upload body).
	secret string
}

func upidOf(name string) string {
	var s string
	if err := fixture.MustLoad(name).Data(&s); err != nil {
		panic(err)
	}
	return s
}

func wantUPID(name string) func(t *testing.T, got any) {
	return func(t *testing.T, got any) {
		if got != upidOf(name) {
			t.Errorf("UPID = %v, want %s", got, upidOf(name))
		}
	}
}

func markOf(t *testing.T) string {
	var cfg map[string]any
	if err := fixture.MustLoad("vm_config_clone").Data(&cfg); err != nil {
		t.Fatal(err)
	}
	return cfg["description"].(string)
}

func contractCases(t *testing.T) []contractCase {
	mark := markOf(t)
	seedVol := tStorage + ":iso/" + tName + "-seed.iso"
	taskUPID := upidOf("clone_response")
	isoBytes := strings.Repeat("ISO-BODY-", 100)
	cases := append([]contractCase{migrateContractCase(), nodeTasksContractCase()}, accessContractCases()...)
	return append(append(cases, haContractCases()...), []contractCase{
		{name: "Version", fixture: "version", method: "GET", path: "/version",
			call: func(ctx context.Context, c *Client) (any, error) { return c.Version(ctx) },
			check: func(t *testing.T, got any) {
				var want VersionInfo
				_ = fixture.MustLoad("version").Data(&want)
				if got != want || want.Version == "" {
					t.Errorf("got %+v, want %+v", got, want)
				}
			}},
		{name: "Nodes", fixture: "nodes", method: "GET", path: "/nodes",
			call: func(ctx context.Context, c *Client) (any, error) { return c.Nodes(ctx) },
			check: func(t *testing.T, got any) {
				if n := got.([]NodeEntry); len(n) != 2 || n[0].Node != "pv1-1" || n[1].Status != "offline" {
					t.Errorf("got %+v", n)
				}
			}},
		{name: "NodeStatus", fixture: "node_status", method: "GET", path: "/nodes/pv1-1/status",
			call: func(ctx context.Context, c *Client) (any, error) { return c.NodeStatus(ctx, tNode) },
			check: func(t *testing.T, got any) {
				if ns := got.(NodeStatus); !strings.HasPrefix(ns.PVEVersion, "pve-manager/") || ns.KVersion == "" {
					t.Errorf("got %+v", ns)
				}
			}},
		{name: "StorageStatus", fixture: "storage_status", method: "GET", path: "/nodes/pv1-1/storage/proxy-seeds/status",
			call: func(ctx context.Context, c *Client) (any, error) { return c.StorageStatus(ctx, tNode, tStorage) },
			check: func(t *testing.T, got any) {
				if s := got.(StorageStatus); s.Active != 1 || !strings.Contains(s.Content, "iso") || s.Avail <= 0 {
					t.Errorf("got %+v", s)
				}
			}},
		{name: "CPUModels", fixture: "capabilities_qemu_cpu", method: "GET", path: "/nodes/pv1-1/capabilities/qemu/cpu",
			call: func(ctx context.Context, c *Client) (any, error) { return c.CPUModels(ctx, tNode) },
			check: func(t *testing.T, got any) {
				m := got.([]CPUModel)
				if len(m) < 5 || m[2] != (CPUModel{Name: "host", Vendor: "default"}) || m[5].Abstract != 1 || m[len(m)-1].Custom != 1 {
					t.Errorf("got %+v", m)
				}
			}},
		{name: "StorageContent", fixture: "storage_content_iso", method: "GET", path: "/nodes/pv1-1/storage/proxy-seeds/content",
			query: url.Values{"content": {"iso"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.StorageContent(ctx, tNode, tStorage, "iso")
			},
			check: func(t *testing.T, got any) {
				v := got.([]StorageVolume)
				if len(v) != 2 || v[1].VolID != seedVol || v[1].Size <= 0 {
					t.Errorf("got %+v", v)
				}
			}},
		{name: "NodeNetwork", fixture: "node_network_bridges", method: "GET", path: "/nodes/pv1-1/network",
			query: url.Values{"type": {"any_bridge"}},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.NodeNetwork(ctx, tNode, "any_bridge") },
			check: func(t *testing.T, got any) {
				v := got.([]NodeInterface)
				if len(v) != 2 || v[0].Iface != "vmbr0" || v[0].Type != "bridge" || !bool(v[0].Active) || v[1].Iface != "vmbr1" {
					t.Errorf("got %+v", v)
				}
			}},
		{name: "ClusterResources", fixture: "cluster_resources", method: "GET", path: "/cluster/resources",
			query: url.Values{"type": {"vm"}},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.ClusterResources(ctx) },
			check: func(t *testing.T, got any) {
				var locked, lxc, templates int
				for _, r := range got.([]Resource) {
					if r.Lock != "" {
						locked++
					}
					if r.Type == "lxc" {
						lxc++
					}
					templates += r.Template
				}
				if locked != 1 || lxc != 1 || templates != 2 {
					t.Errorf("locked %d lxc %d templates %d in %+v", locked, lxc, templates, got)
				}
			}},
		{name: "VMConfig", fixture: "vm_config_after_seed", method: "GET", path: "/nodes/pv1-1/qemu/199999/config",
			call: func(ctx context.Context, c *Client) (any, error) { return c.VMConfig(ctx, tNode, tVMID) },
			check: func(t *testing.T, got any) {
				var raw map[string]any
				_ = fixture.MustLoad("vm_config_after_seed").Data(&raw)
				cfg := got.(map[string]string)
				if len(cfg) != len(raw) || cfg["description"] != mark || cfg["ide2"] == "" {
					t.Errorf("config %v", cfg)
				}
				if _, isNum := raw["cores"].(float64); !isNum || cfg["cores"] != "2" || cfg["memory"] != "2048" {
					t.Errorf("cores %q memory %q", cfg["cores"], cfg["memory"])
				}
			}},
		{name: "VMConfigCurrent", fixture: "vm_config_after_seed", method: "GET", path: "/nodes/pv1-1/qemu/199999/config",
			query: url.Values{"current": {"1"}},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.VMConfigCurrent(ctx, tNode, tVMID) },
			check: func(t *testing.T, got any) {
				if cfg := got.(map[string]string); cfg["cores"] != "2" || cfg["memory"] != "2048" {
					t.Errorf("cores %q memory %q", cfg["cores"], cfg["memory"])
				}
			}},
		{name: "VMPending", fixture: "vm_pending_ide2_delete", method: "GET", path: "/nodes/pv1-1/qemu/199999/pending",
			call: func(ctx context.Context, c *Client) (any, error) { return c.VMPending(ctx, tNode, tVMID) },
			check: func(t *testing.T, got any) {
				p := got.(PendingConfig)
				if p.Current["ide2"] == "" || p.Current["cores"] != "2" || p.Current["description"] != mark || p.Current["boot"] != "order=scsi0;ide2" {
					t.Errorf("current %v", p.Current)
				}
				if len(p.Pending) != 1 || p.Pending["boot"] != "order=scsi0" {
					t.Errorf("pending %v", p.Pending)
				}
				if force, ok := p.Delete["ide2"]; len(p.Delete) != 1 || !ok || force {
					t.Errorf("delete %v, want ide2 (not forced)", p.Delete)
				}
				if v := p.WithPending(); v["ide2"] != "" || v["boot"] != "order=scsi0" || v["cores"] != "2" {
					t.Errorf("with pending %v", v)
				}
			}},
		{name: "VMSnapshots", fixture: "vm_snapshot_list", method: "GET", path: "/nodes/pv1-1/qemu/199999/snapshot",
			call: func(ctx context.Context, c *Client) (any, error) { return c.VMSnapshots(ctx, tNode, tVMID) },
			check: func(t *testing.T, got any) {
				if v := got.([]Snapshot); len(v) != 2 || v[0].Name != "before-upgrade" || v[1].Name != "current" || v[1].Parent != "before-upgrade" {
					t.Errorf("snapshots %+v", v)
				}
			}},
		{name: "VMSnapshotConfig", fixture: "vm_config_snapshot", method: "GET", path: "/nodes/pv1-1/qemu/199999/config",
			query: url.Values{"snapshot": {"before-upgrade"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.VMSnapshotConfig(ctx, tNode, tVMID, "before-upgrade")
			},
			check: func(t *testing.T, got any) {
				if cfg := got.(map[string]string); cfg["ide2"] == "" || cfg["snaptime"] != "1790150000" {
					t.Errorf("snapshot config %v", cfg)
				}
			}},
		{name: "SetVMConfig", fixture: "set_config_response", method: "PUT", path: "/nodes/pv1-1/qemu/199999/config",
			form: url.Values{"cores": {"2"}, "memory": {"2048"}, "agent": {"1"}, "tags": {"proxy_operator"},
				"ide2": {seedVol + ",media=cdrom"}, "description": {mark}},
			secret: mark,
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.SetVMConfig(ctx, tNode, tVMID, map[string]string{"cores": "2", "memory": "2048", "agent": "1",
					"tags": "proxy_operator", "ide2": seedVol + ",media=cdrom", "description": mark})
			}},
		{name: "Clone", fixture: "clone_response", method: "POST", path: "/nodes/pv1-1/qemu/9001/clone",
			form: url.Values{"newid": {"199999"}, "name": {tName}, "description": {mark}, "full": {"1"},
				"storage": {"local-lvm"}, "target": {tNode}},
			secret: mark,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Clone(ctx, tNode, 9001, CloneParams{NewID: tVMID, Name: tName, Description: mark, Storage: "local-lvm", Target: tNode})
			},
			check: wantUPID("clone_response")},
		{name: "Clone", fixture: "clone_response", method: "POST", path: "/nodes/pv1-1/qemu/9001/clone",
			form: url.Values{"newid": {"199999"}, "name": {tName}, "full": {"1"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Clone(ctx, tNode, 9001, CloneParams{NewID: tVMID, Name: tName})
			},
			check: wantUPID("clone_response")},
		{name: "Resize", fixture: "resize_response", method: "PUT", path: "/nodes/pv1-1/qemu/199999/resize",
			form:  url.Values{"disk": {"scsi0"}, "size": {"8G"}},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.Resize(ctx, tNode, tVMID, "scsi0", "8G") },
			check: wantUPID("resize_response")},
		{name: "Start", fixture: "start_response", method: "POST", path: "/nodes/pv1-1/qemu/199999/status/start",
			form:  url.Values{},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.Start(ctx, tNode, tVMID) },
			check: wantUPID("start_response")},
		{name: "Stop", fixture: "stop_response", method: "POST", path: "/nodes/pv1-1/qemu/199999/status/stop",
			form:  url.Values{},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.Stop(ctx, tNode, tVMID) },
			check: wantUPID("stop_response")},
		{name: "Shutdown", fixture: "shutdown_response", method: "POST", path: "/nodes/pv1-1/qemu/199999/status/shutdown",
			form: url.Values{"timeout": {"90"}, "forceStop": {"1"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Shutdown(ctx, tNode, tVMID, ShutdownParams{TimeoutSeconds: 90, ForceStop: true})
			},
			check: wantUPID("shutdown_response")},
		{name: "VMStatus", fixture: "status_current_paused", method: "GET", path: "/nodes/pv1-1/qemu/199999/status/current",
			call: func(ctx context.Context, c *Client) (any, error) { return c.VMStatus(ctx, tNode, tVMID) },
			check: func(t *testing.T, got any) {
				var want VMStatus
				_ = fixture.MustLoad("status_current_paused").Data(&want)
				if got != want || want.QMPStatus == want.Status {
					t.Errorf("got %+v, want %+v", got, want)
				}
			}},
		{name: "Destroy", fixture: "destroy_response", method: "DELETE", path: "/nodes/pv1-1/qemu/199999",
			query: url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.Destroy(ctx, tNode, tVMID) },
			check: wantUPID("destroy_response")},
		{name: "TaskStatus", fixture: "task_status_ok", method: "GET",
			path: "/nodes/pv1-1/tasks/" + url.PathEscape(taskUPID) + "/status",
			call: func(ctx context.Context, c *Client) (any, error) { return c.TaskStatus(ctx, tNode, taskUPID) },
			check: func(t *testing.T, got any) {
				ts := got.(TaskStatus)
				if ts.UPID != taskUPID || ts.Status != "stopped" || !TaskSucceeded(ts.ExitStatus) {
					t.Errorf("got %+v", ts)
				}
			}},
		{name: "AgentNetworkInterfaces", fixture: "agent_network_get_interfaces", method: "GET",
			path: "/nodes/pv1-1/qemu/199999/agent/network-get-interfaces",
			call: func(ctx context.Context, c *Client) (any, error) { return c.AgentNetworkInterfaces(ctx, tNode, tVMID) },
			check: func(t *testing.T, got any) {
				nics := got.([]NetworkInterface)
				if len(nics) != 2 || nics[1].Name != "ens18" || nics[1].IPAddresses[0].Address != "192.168.0.150" ||
					nics[1].IPAddresses[0].Type != "ipv4" || nics[1].IPAddresses[0].Prefix != 24 {
					t.Errorf("got %+v", nics)
				}
			}},
		{name: "UploadISO", fixture: "upload_response", method: "POST", path: "/nodes/pv1-1/storage/proxy-seeds/upload",
			multipart: true, secret: isoBytes,
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.UploadISO(ctx, tNode, tStorage, tName+"-seed.iso", strings.NewReader(isoBytes), int64(len(isoBytes)))
			},
			check: wantUPID("upload_response")},
		{name: "DeleteVolume", fixture: "content_delete_response", method: "DELETE",
			path: "/nodes/pv1-1/storage/proxy-seeds/content/proxy-seeds:iso%2F" + tName + "-seed.iso",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.DeleteVolume(ctx, tNode, tStorage, seedVol)
			},
			check: wantUPID("content_delete_response")},
	}...)
}

// TestClient_contractPerSeamMethod checks the method, escaped path, query, form, headers and
// decoded answer of every seam method, and its one debug log line; a reflection check makes
// sure no method of API lacks a case.
func TestClient_contractPerSeamMethod(t *testing.T) {
	cases := contractCases(t)
	covered := map[string]bool{}
	for _, tc := range cases {
		covered[tc.name] = true
		t.Run(tc.name+"/"+tc.fixture, func(t *testing.T) {
			ts := newTestServer(t, fixtureReply(t, tc.fixture))
			c := newTestClient(t, ts, func(o *Options) { o.UserAgent = "tf-test/1" })
			ctx, logs := logCapture()
			got, err := tc.call(ctx, c)
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
			reqs := ts.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tc.method || r.EscapedPath != "/api2/json"+tc.path {
				t.Errorf("request %s %s, want %s /api2/json%s", r.Method, r.EscapedPath, tc.method, tc.path)
			}
			if len(r.Query) != len(tc.query) || (len(tc.query) > 0 && !reflect.DeepEqual(r.Query, tc.query)) {
				t.Errorf("query %v, want %v", r.Query, tc.query)
			}
			checkHeaders(t, r, tc)
			switch {
			case tc.multipart:
				if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data; boundary=") {
					t.Errorf("content type %q", r.Header.Get("Content-Type"))
				}
			case tc.form != nil:
				if r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
					t.Errorf("content type %q", r.Header.Get("Content-Type"))
				}
				if len(r.Form) != len(tc.form) || (len(tc.form) > 0 && !reflect.DeepEqual(r.Form, tc.form)) {
					t.Errorf("form %v, want %v", r.Form, tc.form)
				}
			default:
				if r.ContentLength > 0 || len(r.Body) > 0 || r.Header.Get("Content-Type") != "" {
					t.Errorf("%s must send no body, got %d bytes, %q", r.Method, len(r.Body), r.Header.Get("Content-Type"))
				}
			}
			checkOneCallLine(t, logs, tc)
		})
	}
	api := reflect.TypeOf((*API)(nil)).Elem()
	for i := range api.NumMethod() {
		if m := api.Method(i).Name; !covered[m] {
			t.Errorf("seam method %s has no contract case", m)
		}
	}
	if api.NumMethod() != 41 {
		t.Errorf("API has %d methods, the contract covers 41", api.NumMethod())
	}
}

func checkHeaders(t *testing.T, r recorded, tc contractCase) {
	t.Helper()
	if got := r.Header.Get("Authorization"); got != "PVEAPIToken="+testToken {
		t.Errorf("Authorization header %q", got)
	}
	if r.Header.Get("Accept") != "application/json" || r.Header.Get("User-Agent") != "tf-test/1" {
		t.Errorf("headers %v", r.Header)
	}
	if r.ProtoMajor != 1 {
		t.Errorf("HTTP/%d", r.ProtoMajor)
	}
	if tc.form != nil && r.ContentLength != int64(len(r.Body)) {
		t.Errorf("Content-Length %d for a %d-byte body", r.ContentLength, len(r.Body))
	}
}

// checkOneCallLine: exactly one debug line per seam call, with call, method, path and the
// identifiers, and nothing secret.
func checkOneCallLine(t *testing.T, logs *syncBuffer, tc contractCase) {
	t.Helper()
	var calls []map[string]any
	for _, l := range logs.lines(t) {
		if l["@message"] == "proxmox api call" {
			calls = append(calls, l)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("%d call lines, want 1:\n%s", len(calls), logs.String())
	}
	l := calls[0]
	if l["@level"] != "debug" || l["call"] != tc.name || l["method"] != tc.method || l["path"] == "" ||
		strings.Contains(l["path"].(string), "?") || l["http_status"] != float64(200) {
		t.Errorf("call line %v", l)
	}
	if _, ok := l["duration_ms"]; !ok {
		t.Errorf("call line without duration_ms: %v", l)
	}
	if strings.Contains(tc.path, "/qemu/") && !strings.Contains(tc.path, "/qemu/9001") && !strings.Contains(tc.path, "/capabilities/") && l["vmid"] != float64(tVMID) {
		t.Errorf("call line without vmid: %v", l)
	}
	out := logs.String()
	for _, s := range []string{testToken, "PVEAPIToken"} {
		if strings.Contains(out, s) {
			t.Errorf("log output contains %q", s)
		}
	}
	if tc.secret != "" {
		for _, line := range strings.Split(tc.secret, "\n") {
			if strings.Contains(out, line) {
				t.Errorf("log output contains secret text %q", line)
			}
		}
	}
}

// TestClient_uploadMultipartShape: content=iso first, the file part named "filename" with the
// target file name last, the file bytes intact, and a Content-Length equal to the body.
func TestClient_uploadMultipartShape(t *testing.T) {
	payload := bytes.Repeat([]byte{0, 1, 2, 0xff, '\r', '\n', '-'}, 10000)
	type part struct {
		form, file string
		data       []byte
	}
	var parts []part
	var length, read int64
	var transferEncoding []string
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		length, transferEncoding = r.ContentLength, r.TransferEncoding
		cr := &countingReader{r: r.Body}
		mr, err := (&http.Request{Header: r.Header, Body: io.NopCloser(cr)}).MultipartReader()
		if err != nil {
			t.Errorf("multipart: %v", err)
			return
		}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Errorf("next part: %v", err)
				return
			}
			data, _ := io.ReadAll(p)
			parts = append(parts, part{p.FormName(), p.FileName(), data})
		}
		_, _ = io.Copy(io.Discard, cr)
		read = cr.n
		writeFixture(t, w, fixture.MustLoad("upload_response"))
	})
	c := newTestClient(t, ts)
	upid, err := c.UploadISO(context.Background(), tNode, tStorage, tName+"-seed.iso", bytes.NewReader(payload), int64(len(payload)))
	if err != nil {
		t.Fatal(err)
	}
	if upid != upidOf("upload_response") {
		t.Errorf("upid %q", upid)
	}
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2", len(parts))
	}
	if parts[0].form != "content" || parts[0].file != "" || string(parts[0].data) != "iso" {
		t.Errorf("first part %q %q %q, want the content=iso field", parts[0].form, parts[0].file, parts[0].data)
	}
	if parts[1].form != "filename" || parts[1].file != tName+"-seed.iso" || !bytes.Equal(parts[1].data, payload) {
		t.Errorf("last part %q %q (%d bytes), want the file part", parts[1].form, parts[1].file, len(parts[1].data))
	}
	if length <= int64(len(payload)) || length != read || len(transferEncoding) != 0 {
		t.Errorf("Content-Length %d, body %d bytes, transfer encoding %v", length, read, transferEncoding)
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestClient_uploadShortReaderFails: a reader with fewer bytes than size must not produce a
// truncated upload that Proxmox would accept.
func TestClient_uploadShortReaderFails(t *testing.T) {
	ts := newTestServer(t, fixtureReply(t, "upload_response"))
	c := newTestClient(t, ts)
	_, err := c.UploadISO(context.Background(), tNode, tStorage, "x-seed.iso", strings.NewReader("short"), 1000)
	if err == nil {
		t.Fatal("a short reader succeeded")
	}
}

// TestClient_rejectsArgumentsBeforeSending: arguments that would build a wrong path are
// Permanent and send nothing.
func TestClient_rejectsArgumentsBeforeSending(t *testing.T) {
	ts := newTestServer(t, fixtureReply(t, "version"))
	c := newTestClient(t, ts)
	ctx := context.Background()
	errs := []error{
		func() error { _, err := c.NodeStatus(ctx, ""); return err }(),
		func() error { _, err := c.VMConfig(ctx, tNode, -1); return err }(),
		func() error { _, err := c.Clone(ctx, tNode, 9001, CloneParams{}); return err }(),
		func() error { _, err := c.Resize(ctx, tNode, tVMID, "scsi0", "+1G"); return err }(),
		func() error { return c.SetVMConfig(ctx, tNode, tVMID, nil) }(),
		func() error {
			_, err := c.UploadISO(ctx, tNode, tStorage, "a/b.iso", strings.NewReader(""), 0)
			return err
		}(),
		func() error { _, err := c.DeleteVolume(ctx, tNode, tStorage, ""); return err }(),
	}
	for i, err := range errs {
		if err == nil || Classify("create", err) != Permanent {
			t.Errorf("case %d: err %v, want Permanent", i, err)
		}
	}
	if n := len(ts.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestClient_nonUPIDAnswerIsAnError: an async call whose answer is not a UPID fails.
func TestClient_nonUPIDAnswerIsAnError(t *testing.T) {
	ts := newTestServer(t, fixtureReply(t, "set_config_response"))
	c := newTestClient(t, ts)
	if upid, err := c.Start(context.Background(), tNode, tVMID); err == nil {
		t.Fatalf("Start answered %q without error", upid)
	}
}
