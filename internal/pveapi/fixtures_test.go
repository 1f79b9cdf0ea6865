package pveapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// fixtureNode is the node every fixture was captured or reconstructed on.
const fixtureNode = "pv1-1"

// TestFixtures_formatInvariants loads every testdata/*.json and checks the rules of
// testdata/README.md: a labeled source, Proxmox's error envelope (fact: error-envelope), empty bodies where
// Proxmox sends none, no token anywhere, and data that decodes into the seam's types.
func TestFixtures_formatInvariants(t *testing.T) {
	names, err := fixture.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 60 {
		t.Fatalf("only %d fixtures found in %s", len(names), fixture.Dir())
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(fixture.Dir(), name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(bytes.ToLower(raw), []byte("pveapitoken")) {
				t.Fatal("fixture contains PVEAPIToken")
			}
			f, err := fixture.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			checkSource(t, f)
			checkRequest(t, f)
			switch {
			case f.Status == http.StatusUnauthorized || f.Status == 595 || f.Status == 596 || bareForbidden(f):
				if len(f.Body) != 0 {
					t.Errorf("status %d must have an empty body (fact: error-envelope), got %s", f.Status, f.Body)
				}
				if f.Reason == "" || f.Message() != f.Reason {
					t.Errorf("status %d: reason %q must carry the message", f.Status, f.Reason)
				}
			case f.Status >= 400:
				checkErrorEnvelope(t, f)
			case f.Status == http.StatusOK:
				if f.Reason != "OK" {
					t.Errorf("200 with reason %q", f.Reason)
				}
				checkData(t, f)
			default:
				t.Errorf("unexpected status %d", f.Status)
			}
		})
	}
}

func checkSource(t *testing.T, f fixture.Fixture) {
	t.Helper()
	switch {
	case strings.HasPrefix(f.Source, "capture "):
		if !strings.Contains(f.Source, "restated") {
			t.Errorf("a capture must say it is restated from the log: %q", f.Source)
		}
	case strings.HasPrefix(f.Source, "reconstructed from "):
	default:
		t.Errorf("source must start with \"capture \" or \"reconstructed from \": %q", f.Source)
	}
}

func checkRequest(t *testing.T, f fixture.Fixture) {
	t.Helper()
	method, path, ok := strings.Cut(f.Request, " ")
	if !ok || !strings.HasPrefix(path, "/") {
		t.Fatalf("request %q is not \"<METHOD> /path\"", f.Request)
	}
	switch method {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete:
	default:
		t.Errorf("request method %q", method)
	}
}

func checkErrorEnvelope(t *testing.T, f fixture.Fixture) {
	t.Helper()
	var b struct {
		Data    *json.RawMessage  `json:"data"`
		Message *string           `json:"message"`
		Errors  map[string]string `json:"errors"`
	}
	dec := json.NewDecoder(bytes.NewReader(f.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("error body: %v", err)
	}
	if b.Data != nil {
		t.Errorf("error body data = %s, want null", *b.Data)
	}
	// A die'd error ends in a newline (fact: field-error-newline); the 501 of an unknown path is set directly
	// and has none (pve-manager PVE/HTTPServer.pm rest_handler).
	wantMsg := f.Reason + "\n"
	if f.Status == http.StatusNotImplemented {
		wantMsg = f.Reason
	}
	if b.Message == nil || *b.Message != wantMsg {
		t.Errorf("message must be the reason phrase plus \\n (fact: error-envelope): reason %q, body %s", f.Reason, f.Body)
	}
	if f.Status == http.StatusBadRequest {
		// The HA rule feasibility check raises its own 400 with field errors (pve-ha-manager
		// src/PVE/API2/HA/Rules.pm:111-137 $assert_feasibility).
		haRuleInvalid := strings.HasPrefix(f.Request, "POST /cluster/ha/rules") && strings.HasPrefix(f.Reason, "Rule '") && strings.HasSuffix(f.Reason, "' is invalid.")
		if (f.Reason != "Parameter verification failed." && !haRuleInvalid) || len(b.Errors) == 0 {
			t.Errorf("a 400 carries Parameter verification failed. and field errors, got %q %v", f.Reason, b.Errors)
		}
		for k, v := range b.Errors {
			// A field error keeps the newline of a die (pve-common src/PVE/JSONSchema.pm
			// check_format: "invalid format - $@"); a text given directly has none.
			if k == "" || strings.TrimRight(v, "\n") == "" || (strings.HasPrefix(v, "invalid format - ") && !strings.HasSuffix(v, "\n")) {
				t.Errorf("field error %q: %q", k, v)
			}
		}
	} else if b.Errors != nil {
		t.Errorf("only a 400 carries errors, got %v", b.Errors)
	}
}

// checkData decodes the body's data into the seam type the fixture's endpoint returns and
// checks the fields the product reads are set, so a misspelled JSON tag fails here.
func checkData(t *testing.T, f fixture.Fixture) {
	t.Helper()
	method, path, _ := strings.Cut(f.Request, " ")
	path, _, _ = strings.Cut(path, "?")
	switch {
	case strings.HasPrefix(path, "/cluster/ha/"):
		checkHAData(t, f, method, path)
	case path == "/version":
		var v VersionInfo
		mustData(t, f, &v)
		nonEmpty(t, v.Version, v.Release, v.RepoID)
	case path == "/nodes":
		var v []NodeEntry
		mustData(t, f, &v)
		for _, n := range v {
			nonEmpty(t, n.Node, n.Status)
		}
		if len(v) == 0 {
			t.Fatal("no nodes")
		}
	case path == "/nodes/{node}/status":
		var v NodeStatus
		mustData(t, f, &v)
		nonEmpty(t, v.KVersion, v.PVEVersion)
		if v.Uptime <= 0 {
			t.Error("uptime not decoded")
		}
	case strings.HasSuffix(path, "/storage/{storage}/status"):
		var v StorageStatus
		mustData(t, f, &v)
		nonEmpty(t, v.Type, v.Content)
		if v.Total <= 0 || v.Avail <= 0 || v.Active != 1 || v.Enabled != 1 {
			t.Errorf("storage status not decoded: %+v", v)
		}
	case strings.HasSuffix(path, "/storage/{storage}/content"):
		var v []StorageVolume
		mustData(t, f, &v)
		if len(v) == 0 {
			t.Fatal("no volumes")
		}
		for i, vol := range v {
			nonEmpty(t, vol.VolID, vol.Format, vol.Content)
			if vol.Size <= 0 || vol.CTime <= 0 {
				t.Errorf("volume %d not decoded: %+v", i, vol)
			}
			if i > 0 && v[i-1].VolID >= vol.VolID {
				t.Errorf("volumes not sorted by volid")
			}
		}
	case path == "/nodes/{node}/capabilities/qemu/cpu":
		var v []CPUModel
		mustData(t, f, &v)
		for i, m := range v {
			nonEmpty(t, m.Name, m.Vendor)
			if (m.Custom != 0) != strings.HasPrefix(m.Name, "custom-") {
				t.Errorf("model %d: custom %d for %q", i, m.Custom, m.Name)
			}
		}
	case strings.HasSuffix(path, "/snapshot"):
		var v []Snapshot
		mustData(t, f, &v)
		if len(v) == 0 || v[len(v)-1].Name != "current" {
			t.Errorf("snapshot list without current: %+v", v)
		}
	case strings.HasSuffix(path, "/pending"):
		var raw json.RawMessage
		mustData(t, f, &raw)
		p, err := decodePending(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Current) == 0 || p.Current["digest"] == "" {
			t.Errorf("pending config has no current values: %+v", p)
		}
	case path == "/nodes/{node}/network":
		var v []NodeInterface
		mustData(t, f, &v)
		if len(v) == 0 {
			t.Fatal("no interfaces")
		}
		for i, n := range v {
			nonEmpty(t, n.Iface, n.Type)
			if i > 0 && v[i-1].Iface >= n.Iface {
				t.Errorf("interfaces not sorted by iface")
			}
		}
	case path == "/cluster/resources":
		var v []Resource
		mustData(t, f, &v)
		if len(v) == 0 {
			t.Fatal("no resources")
		}
		for _, r := range v {
			nonEmpty(t, r.ID, r.Node, r.Type, r.Status)
			if r.VMID < 100 || r.ID != r.Type+"/"+strconv.Itoa(r.VMID) {
				t.Errorf("resource id/vmid mismatch: %+v", r)
			}
			if r.Name == "" && (r.Lock != "clone" || r.Status != "unknown") {
				t.Errorf("only a clone in progress is nameless (fact: nameless-mid-clone): %+v", r)
			}
		}
	case method == http.MethodGet && strings.HasSuffix(path, "/config"):
		var raw json.RawMessage
		mustData(t, f, &raw)
		cfg, err := decodeConfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		nonEmpty(t, cfg["name"], cfg["digest"], cfg["boot"], cfg["net0"], cfg["cores"], cfg["memory"])
		if len(cfg["digest"]) != 40 {
			t.Errorf("digest %q is not sha1 hex", cfg["digest"])
		}
	case path == "/access/permissions":
		var v map[string]map[string]int
		mustData(t, f, &v)
		if len(v) != 1 {
			t.Fatalf("want the one path asked, got %v", v)
		}
		for p, privs := range v {
			if !strings.HasPrefix(p, "/") || len(privs) == 0 {
				t.Errorf("path %q privileges %v", p, privs)
			}
		}
	case path == "/cluster/nextid":
		var v string
		mustData(t, f, &v)
		if v == "" {
			t.Error("no VMID")
		}
	case method == http.MethodPut && path == "/pools":
		var v *string
		mustData(t, f, &v)
		if v != nil {
			t.Errorf("a pool update returns null data, got %q", *v)
		}
	case method == http.MethodPut && strings.HasSuffix(path, "/config"):
		var v *string
		mustData(t, f, &v)
		if v != nil {
			t.Errorf("config write returns null data, got %q", *v)
		}
	case strings.HasSuffix(path, "/status/current"):
		var v VMStatus
		mustData(t, f, &v)
		nonEmpty(t, v.Status, v.QMPStatus, v.Name)
		if v.Agent != 1 {
			t.Errorf("agent = %d", v.Agent)
		}
	case strings.HasSuffix(path, "/tasks/{upid}/status"):
		var v TaskStatus
		mustData(t, f, &v)
		u, err := ParseUPID(v.UPID)
		if err != nil {
			t.Fatal(err)
		}
		if u.Node != v.Node || u.Type != v.Type || u.ID != v.ID || u.PID != v.PID ||
			u.PStart != v.PStart || u.StartTime != v.StartTime || u.User != v.User+"!"+v.TokenID {
			t.Errorf("task status fields disagree with its UPID: %+v vs %+v", v, u)
		}
		switch v.Status {
		case "running":
			if v.ExitStatus != "" {
				t.Errorf("a running task has no exitstatus, got %q", v.ExitStatus)
			}
		case "stopped":
			if v.ExitStatus == "" {
				t.Error("a stopped task has an exitstatus")
			}
		default:
			t.Errorf("task status %q", v.Status)
		}
	case path == "/nodes/{node}/tasks":
		var v []TaskEntry
		mustData(t, f, &v)
		if len(v) == 0 {
			t.Fatal("no tasks")
		}
		for i, e := range v {
			// The fields agree with the UPID, as PVE::UPID::decode fills them.
			u, err := ParseUPID(e.UPID)
			if err != nil {
				t.Fatal(err)
			}
			if u.Node != e.Node || u.Type != e.Type || u.ID != e.ID || u.StartTime != e.StartTime || u.User != e.AuthID() || e.Status == "" {
				t.Errorf("task %d disagrees with its UPID: %+v vs %+v", i, e, u)
			}
		}
	case otherClientsEndpoint(method, path):
		// Endpoints the product does not call but clients written for real PVE do first
		// (the simulator's go-proxmox test decodes them into typed structs).
		var v any
		mustData(t, f, &v)
		if v == nil {
			t.Error("no data")
		}
	case strings.HasSuffix(path, "/agent/network-get-interfaces"):
		var v struct {
			Result []NetworkInterface `json:"result"`
		}
		mustData(t, f, &v)
		if len(v.Result) < 2 {
			t.Fatalf("want lo and a NIC, got %+v", v.Result)
		}
		for _, nic := range v.Result {
			nonEmpty(t, nic.Name, nic.HardwareAddress)
			for _, a := range nic.IPAddresses {
				nonEmpty(t, a.Address, a.Type)
				if a.Prefix <= 0 {
					t.Errorf("prefix of %s not decoded", a.Address)
				}
			}
		}
	default:
		// Every other 200 in testdata is an async call answering a UPID.
		var v string
		mustData(t, f, &v)
		u, err := ParseUPID(v)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if u.Node != fixtureNode || !strings.Contains(u.User, "!") {
			t.Errorf("UPID %q: want node %s and a token user", v, fixtureNode)
		}
		if u.String() != v {
			t.Errorf("UPID round trip: %q != %q", u.String(), v)
		}
	}
}

func mustData(t *testing.T, f fixture.Fixture, v any) {
	t.Helper()
	if err := f.Data(v); err != nil {
		t.Fatalf("data does not decode into %T: %v", v, err)
	}
}

func nonEmpty(t *testing.T, vals ...string) {
	t.Helper()
	for i, v := range vals {
		if v == "" {
			t.Errorf("field %d decoded empty", i)
		}
	}
}

// otherClientsEndpoint lists the GET endpoints of testdata the product does not decode.
func otherClientsEndpoint(method, path string) bool {
	if method != http.MethodGet {
		return false
	}
	switch path {
	case "/cluster/status", "/cluster/tasks", "/nodes/{node}/version", "/pools", "/nodes/{node}/qemu",
		"/nodes/{node}/storage/{storage}/content/{volume}", "/nodes/{node}/qemu/{vmid}/agent/get-osinfo",
		"/nodes/{node}/qemu/{vmid}/agent/get-host-name", "/nodes/{node}/tasks/{upid}/log":
		return true
	}
	return false
}

// bareForbidden is the upload's 403, refused by pveproxy's auth handler with the reason
// phrase only (pve-manager PVE/HTTPServer.pm auth_handler).
func bareForbidden(f fixture.Fixture) bool {
	return f.Status == http.StatusForbidden && len(f.Body) == 0 && strings.HasSuffix(f.Request, "/upload")
}
