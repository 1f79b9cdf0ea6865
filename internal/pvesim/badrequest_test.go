package pvesim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// Bad requests get Proxmox's answers, never a panic. These tests call the request pipeline
// directly with requests parsed the way the server parses them.

// rawRequest parses a request as the server's connection loop does.
func rawRequest(method, target, contentType, body string, auth string) (*http.Request, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n", method, target)
	if auth != "" {
		fmt.Fprintf(&b, "Authorization: %s\r\n", auth)
	}
	if contentType != "" {
		fmt.Fprintf(&b, "Content-Type: %s\r\n", contentType)
	}
	if body != "" {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return http.ReadRequest(bufio.NewReader(strings.NewReader(b.String())))
}

type answer struct {
	status int
	reason string
	data   json.RawMessage
	msg    string
	errors map[string]string
}

func send(t *testing.T, s *Sim, method, target, contentType, body string) answer {
	t.Helper()
	req, err := rawRequest(method, target, contentType, body, "PVEAPIToken="+s.APIToken)
	if err != nil {
		t.Fatal(err)
	}
	r := s.handle(req)
	a := answer{status: r.status, reason: r.reason}
	if len(r.body) > 0 {
		var env struct {
			Data    json.RawMessage   `json:"data"`
			Message string            `json:"message"`
			Errors  map[string]string `json:"errors"`
		}
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatalf("%s %s: body %q is not JSON", method, target, r.body)
		}
		a.data, a.msg, a.errors = env.Data, env.Message, env.Errors
	}
	return a
}

func testSim(t *testing.T) *Sim {
	t.Helper()
	s, err := newSim(Options{Nodes: []string{"pv1-1"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBadRequest_unknownPathOrMethodIs501(t *testing.T) {
	s := testSim(t)
	f := fixture.MustLoad("err_not_implemented")
	for _, c := range []struct{ method, target, want string }{
		{"GET", "/api2/json/nodes/pv1-1/bogus", f.Message()},
		{"PATCH", "/api2/json/version", "Method 'PATCH /version' not implemented"},
		{"POST", "/api2/json/cluster/resources", "Method 'POST /cluster/resources' not implemented"},
		{"GET", "/api2/json/nodes/pv1-1/qemu/100/config/extra", "Method 'GET /nodes/pv1-1/qemu/100/config/extra' not implemented"},
		{"GET", "/index.html", "Method 'GET /index.html' not implemented"},
	} {
		a := send(t, s, c.method, c.target, "", "")
		// No trailing newline: pve-manager PVE/HTTPServer.pm rest_handler sets it directly.
		if a.status != 501 || a.msg != c.want || a.reason != c.want {
			t.Errorf("%s %s: %d %q %q", c.method, c.target, a.status, a.reason, a.msg)
		}
	}
}

func TestBadRequest_missingAndMalformedParametersAre400WithErrors(t *testing.T) {
	s := testSim(t)
	form := "application/x-www-form-urlencoded"
	bad := fixture.MustLoad("err_bad_param")
	for _, c := range []struct {
		name, method, target, ct, body string
		want                           map[string]string
	}{
		{"missing newid", "POST", "/api2/json/nodes/pv1-1/qemu/9001/clone", form, "name=x", map[string]string{"newid": errMissing}},
		{"newid not an integer", "POST", "/api2/json/nodes/pv1-1/qemu/9001/clone", form, "newid=abc", map[string]string{"newid": "type check ('integer') failed - got 'abc'"}},
		{"newid too small", "POST", "/api2/json/nodes/pv1-1/qemu/9001/clone", form, "newid=99", map[string]string{"newid": "value must have a minimum value of 100"}},
		{"form boolean true", "POST", "/api2/json/nodes/pv1-1/qemu/9001/clone", form, "newid=1000&full=true", map[string]string{"full": "type check ('boolean') failed - got 'true'"}},
		{"form boolean yes", "DELETE", "/api2/json/nodes/pv1-1/qemu/100?purge=yes", "", "", map[string]string{"purge": "type check ('boolean') failed - got 'yes'"}},
		{"vmid in the path", "GET", "/api2/json/nodes/pv1-1/qemu/abc/config", "", "", map[string]string{"vmid": "type check ('integer') failed - got 'abc'"}},
		{"node in the path", "GET", "/api2/json/nodes/bad_node!/status", "", "", map[string]string{"node": "invalid format - value does not look like a valid node name\n"}},
		{"unknown parameter", "GET", "/api2/json/version?foo=1", "", "", map[string]string{"foo": errUndefined}},
		{"unknown config key", "PUT", "/api2/json/nodes/pv1-1/qemu/100/config", form, "colour=red", map[string]string{"colour": errUndefined}},
		// meta is left out of the config write's schema (qemu-server src/PVE/QemuServer.pm:1730-1740).
		{"meta not writable", "PUT", "/api2/json/nodes/pv1-1/qemu/100/config", form, "meta=creation-qemu%3D11.0.3%2Cctime%3D1790145676", map[string]string{"meta": errUndefined}},
		{"cores zero", "PUT", "/api2/json/nodes/pv1-1/qemu/100/config", form, "cores=0", bad.Errors()},
		{"resize without size", "PUT", "/api2/json/nodes/pv1-1/qemu/100/resize", form, "disk=scsi0", map[string]string{"size": errMissing}},
		{"resize size pattern", "PUT", "/api2/json/nodes/pv1-1/qemu/100/resize", form, "disk=scsi0&size=8GB", map[string]string{"size": "value does not match the regex pattern"}},
		{"bad upid", "GET", "/api2/json/nodes/pv1-1/tasks/nonsense/status", "", "", map[string]string{"upid": "unable to parse worker upid"}},
		{"resources type", "GET", "/api2/json/cluster/resources?type=vms", "", "", map[string]string{"type": "value 'vms' does not have a value in the enumeration 'vm, storage, node, sdn'"}},
		{"net0 tag", "PUT", "/api2/json/nodes/pv1-1/qemu/100/config", form, "net0=virtio,bridge=vmbr0,tag=5000", map[string]string{"net0": "invalid format - format error\ntag: value must have a maximum value of 4094\n"}},
	} {
		a := send(t, s, c.method, c.target, c.ct, c.body)
		if a.status != 400 || a.reason != paramFailed || a.msg != paramFailed+"\n" {
			t.Errorf("%s: %d %q %q", c.name, a.status, a.reason, a.msg)
			continue
		}
		if fmt.Sprint(a.errors) != fmt.Sprint(c.want) {
			t.Errorf("%s: errors %v, want %v", c.name, a.errors, c.want)
		}
	}
}

func TestBadRequest_jsonBodyBooleansAreAccepted(t *testing.T) {
	s := testSim(t)
	a := send(t, s, "POST", "/api2/json/nodes/pv1-1/qemu/9001/clone", "application/json", `{"newid": 1000, "full": true, "name": "x"}`)
	if a.status != 200 || !strings.HasPrefix(string(a.data), `"UPID:pv1-1:`) {
		t.Errorf("JSON clone: %d %q %s", a.status, a.msg, a.data)
	}
	a = send(t, s, "POST", "/api2/json/nodes/pv1-1/qemu/9001/clone", "application/json", `{"newid": `)
	if a.status != 400 {
		t.Errorf("broken JSON: %d %q", a.status, a.msg)
	}
}

func TestBadRequest_bodyOnGetOrDeleteIs501(t *testing.T) {
	s := testSim(t)
	for _, m := range []string{"GET", "DELETE"} {
		a := send(t, s, m, "/api2/json/nodes/pv1-1/qemu/100", "application/x-www-form-urlencoded", "purge=1")
		want := fmt.Sprintf("Unexpected content for method '%s'", m)
		if a.status != 501 || a.reason != want {
			t.Errorf("%s with a body: %d %q", m, a.status, a.reason)
		}
	}
}

func TestBadRequest_uploadRequestsThatPVERefuses(t *testing.T) {
	s := testSim(t)
	up := "/api2/json/nodes/pv1-1/storage/proxy-seeds/upload"
	a := send(t, s, "POST", up, "multipart/form-data; boundary=xyz", "--xyz\r\nbroken")
	if a.status != 400 {
		t.Errorf("broken multipart: %d %q", a.status, a.msg)
	}
	// The file part first: the content field after it is not seen.
	body := "--b\r\nContent-Disposition: form-data; name=\"filename\"; filename=\"x.iso\"\r\n\r\nISO\r\n" +
		"--b\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\niso\r\n--b--\r\n"
	a = send(t, s, "POST", up, "multipart/form-data; boundary=b", body)
	if a.status != 400 || a.errors["content"] != errMissing {
		t.Errorf("file part first: %d %v", a.status, a.errors)
	}
	// A form without a file.
	a = send(t, s, "POST", up, "application/x-www-form-urlencoded", "content=iso&filename=x.iso")
	if a.status != 500 {
		t.Errorf("upload without a file: %d %q", a.status, a.msg)
	}
	a = send(t, s, "POST", "/api2/json/nodes/pv1-1/storage/local-lvm/upload", "multipart/form-data; boundary=b",
		"--b\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\niso\r\n--b\r\nContent-Disposition: form-data; name=\"filename\"; filename=\"x.iso\"\r\n\r\nISO\r\n--b--\r\n")
	if a.status != 500 || a.msg != "can't upload to storage type 'lvmthin'\n" {
		t.Errorf("upload to lvmthin: %d %q", a.status, a.msg)
	}
}

func TestBadRequest_oversizedFormIs413(t *testing.T) {
	s := testSim(t)
	a := send(t, s, "PUT", "/api2/json/nodes/pv1-1/qemu/100/config", "application/x-www-form-urlencoded", "description="+strings.Repeat("x", maxFormBody+1))
	if a.status != 413 {
		t.Errorf("oversized form: %d %q", a.status, a.msg)
	}
	a = send(t, s, "PUT", "/api2/json/nodes/pv1-1/qemu/100/config", "application/x-www-form-urlencoded", "description="+strings.Repeat("x", 8193))
	if a.status != 400 || a.errors["description"] != "value may only be 8192 characters long" {
		t.Errorf("description over 8192: %d %v", a.status, a.errors)
	}
}

var fuzzTargets = []struct{ method, target, ct, body string }{
	{"GET", "/api2/json/version", "", ""},
	{"GET", "/api2/json/cluster/resources?type=vm", "", ""},
	{"GET", "/api2/json/nodes/pv1-1/qemu/9001/config", "", ""},
	{"PUT", "/api2/json/nodes/pv1-1/qemu/100/config", "application/x-www-form-urlencoded", "cores=2&memory=2048&tags=A;b&ide2=proxy-seeds:iso/x.iso,media=cdrom&delete=onboot"},
	{"POST", "/api2/json/nodes/pv1-1/qemu/9001/clone", "application/x-www-form-urlencoded", "newid=123456&name=proxy-a&full=1&storage=local-lvm&target=pv1-1&description=a%0Ab"},
	{"POST", "/api2/json/nodes/pv1-1/qemu/9001/clone", "application/json", `{"newid":123456,"full":true,"name":"x","pool":[1]}`},
	{"PUT", "/api2/json/nodes/pv1-1/qemu/100/resize", "application/x-www-form-urlencoded", "disk=scsi0&size=+1G"},
	{"POST", "/api2/json/nodes/pv1-1/qemu/100/status/stop", "", ""},
	{"POST", "/api2/json/nodes/pv1-1/qemu/100/status/suspend", "application/x-www-form-urlencoded", "todisk=1"},
	{"DELETE", "/api2/json/nodes/pv1-1/qemu/9000?purge=1&destroy-unreferenced-disks=1", "", ""},
	{"GET", "/api2/json/nodes/pv1-1/qemu/100/agent/network-get-interfaces", "", ""},
	{"GET", "/api2/json/nodes/pv1-1/tasks/UPID:pv1-1:00000001:00000002:00000003:qmstart:100:root@pam!tf:/status", "", ""},
	{"POST", "/api2/json/nodes/pv1-1/storage/proxy-seeds/upload", "multipart/form-data; boundary=b",
		"--b\r\nContent-Disposition: form-data; name=\"content\"\r\n\r\niso\r\n--b\r\nContent-Disposition: form-data; name=\"filename\"; filename=\"x.iso\"\r\n\r\nISO\r\n--b--\r\n"},
	{"DELETE", "/api2/json/nodes/pv1-1/storage/proxy-seeds/content/proxy-seeds:iso%2Fx.iso", "", ""},
	{"GET", "/api2/json/nodes/pv1-1/storage/proxy-seeds/content?content=iso&vmid=100", "", ""},
	{"GET", "/api2/json/nodes/%2e%2e/status", "", ""},
	{"POST", "/pvesim/faults", "application/json", `{"path":"/version","status":595,"times":1}`},
	{"POST", "/pvesim/vms/100/state", "application/json", `{"power":"hibernated"}`},
	{"GET", "/pvesim/state", "", ""},
}

// FuzzServer sends arbitrary methods, paths, queries and bodies through the request
// pipeline of a fresh simulator: no panic, and every answer is a well-formed Proxmox answer.
func FuzzServer(f *testing.F) {
	for _, c := range fuzzTargets {
		f.Add(c.method, c.target, c.ct, c.body, true)
	}
	f.Add("GET", "/api2/json/version", "", "", false)
	f.Fuzz(func(t *testing.T, method, target, ct, body string, auth bool) {
		if strings.ContainsAny(method+target+ct, "\r\n") {
			return
		}
		a := ""
		s, err := newSim(Options{Nodes: []string{"pv1-1"}, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if auth {
			a = "PVEAPIToken=" + s.APIToken
		}
		req, err := rawRequest(method, target, ct, body, a)
		if err != nil {
			return // the connection loop answers 400 Bad Request
		}
		r := s.handle(req)
		if r == nil || r.retry != nil {
			t.Fatalf("no answer for %s %s", method, target)
		}
		if r.drop {
			return
		}
		switch r.status {
		case 200, 400, 401, 403, 404, 413, 500, 501, 595, 596:
		default:
			t.Fatalf("%s %s: status %d", method, target, r.status)
		}
		if strings.ContainsAny(sanitizeReason(r.reason), "\r\n") || r.reason == "" {
			t.Fatalf("%s %s: reason %q", method, target, r.reason)
		}
		if len(r.body) > 0 {
			var env map[string]json.RawMessage
			if err := json.Unmarshal(r.body, &env); err != nil {
				t.Fatalf("%s %s: body %q: %v", method, target, r.body, err)
			}
			if _, ok := env["data"]; !ok {
				t.Fatalf("%s %s: body without data: %s", method, target, r.body)
			}
		} else if r.status == 200 || (r.status >= 402 && r.status < 595 && r.status != 413) {
			t.Fatalf("%s %s: %d with an empty body", method, target, r.status)
		}
		// The state stays consistent whatever was asked.
		s.mu.Lock()
		defer s.mu.Unlock()
		s.checkInvariants(t)
	})
}
