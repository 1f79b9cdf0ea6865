package pvesim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// sameShape compares a JSON value with a fixture's: objects have the same keys, arrays
// have their entries' shape (every entry against the fixture's entry of the same kind,
// or its first), scalars the same JSON kind.
func sameShape(t *testing.T, where string, got, want any) {
	t.Helper()
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			t.Errorf("%s: %T, want an object", where, got)
			return
		}
		// tags, serial and lock are present only when the VM has them.
		strip := func(m map[string]any) []string {
			return slices.DeleteFunc(keysOf(m), func(k string) bool { return k == "tags" || k == "serial" || k == "lock" })
		}
		if !slices.Equal(strip(g), strip(w)) {
			t.Errorf("%s: keys %v, want %v", where, strip(g), strip(w))
			return
		}
		for _, k := range strip(w) {
			sameShape(t, where+"."+k, g[k], w[k])
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			t.Errorf("%s: %T, want an array", where, got)
			return
		}
		for i, e := range g {
			if len(w) == 0 {
				t.Errorf("%s: %d entries, want none", where, len(g))
				return
			}
			sameShape(t, fmt.Sprintf("%s[%d]", where, i), e, matchingEntry(e, w))
		}
	default:
		if reflect.TypeOf(got) != reflect.TypeOf(want) {
			t.Errorf("%s: %T %v, want a %T like %v", where, got, got, want, want)
		}
	}
}

// matchingEntry picks the fixture entry of the same type/status/template as e, if any.
func matchingEntry(e any, w []any) any {
	em, _ := e.(map[string]any)
	for _, c := range w {
		cm, _ := c.(map[string]any)
		if em != nil && cm != nil && em["type"] == cm["type"] && em["status"] == cm["status"] && em["template"] == cm["template"] {
			return c
		}
	}
	return w[0]
}

func fixtureAny(t *testing.T, name string) any {
	t.Helper()
	var v any
	if err := fixture.MustLoad(name).Data(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestSource_endpointsOtherClientsCallFirst(t *testing.T) {
	for _, nodes := range [][]string{{captureNode}, {captureNode, "pv1-2"}} {
		t.Run(strconv.Itoa(len(nodes))+" nodes", func(t *testing.T) {
			tg := newTarget(t, pvesim.Options{Nodes: nodes, TemplateAgent: true})
			tg.simOnly("a second node")
			tg.parallel()
			var got any
			status := map[int]string{1: "cluster_status_single", 2: "cluster_status_cluster"}[len(nodes)]
			tg.rawJSON("GET", "/cluster/status", nil, &got)
			sameShape(t, "cluster status", got, fixtureAny(t, status))
			if len(nodes) == 1 {
				if !reflect.DeepEqual(got, fixtureAny(t, status)) {
					t.Errorf("cluster status %v, want %v", got, fixtureAny(t, status))
				}
				return
			}
			tg.rawJSON("GET", "/nodes/"+tg.node+"/version", nil, &got)
			if !reflect.DeepEqual(got, fixtureAny(t, "node_version")) {
				t.Errorf("node version %v", got)
			}
			tg.rawJSON("GET", "/pools", nil, &got)
			sameShape(t, "pools", got, fixtureAny(t, "pools_empty"))

			tg.cloned()
			tg.started()
			tg.rawJSON("GET", "/nodes/"+tg.node+"/qemu", nil, &got)
			sameShape(t, "qemu list", got, fixtureAny(t, "qemu_list"))
			tg.eventually("the agent", func() bool {
				resp, _ := tg.raw("GET", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/agent/get-osinfo", nil, nil)
				return resp.StatusCode == http.StatusOK
			})
			for _, name := range []string{"get-osinfo", "get-host-name"} {
				tg.rawJSON("GET", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/agent/"+name, nil, &got)
				want := fixtureAny(t, "agent_"+strings.ReplaceAll(name, "-", "_"))
				sameShape(t, name, got, want)
				if name == "get-host-name" && !reflect.DeepEqual(got, want) {
					t.Errorf("host name %v, want %v", got, want)
				}
			}
			tg.rawJSON("GET", "/nodes", nil, &got)
			sameShape(t, "nodes", got, fixtureAny(t, "nodes"))
			tg.rawJSON("GET", "/cluster/tasks", nil, &got)
			sameShape(t, "cluster tasks", got, fixtureAny(t, "cluster_tasks"))

			tg.mustOK(tg.upload(captureName+"-seed.iso", tg.seed("#cloud-config\n")))
			tg.rawJSON("GET", "/nodes/"+tg.node+"/storage/"+tg.isoStorage+"/content/"+tg.seedVolID(), nil, &got)
			sameShape(t, "volume info", got, fixtureAny(t, "storage_volume_info"))
			if m, _ := got.(map[string]any); m["path"] != fixtureData(t, "storage_volume_info")["path"] {
				t.Errorf("volume path %v", m["path"])
			}
		})
	}
}

func TestSource_shutdown(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	shutdown := func(form url.Values) (string, error) {
		resp, body := tg.raw("POST", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/status/shutdown", form, nil)
		var env struct {
			Data    string `json:"data"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &env)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(env.Message))
		}
		return env.Data, nil
	}
	// A VM not running: the task ends OK at once.
	upid, err := shutdown(nil)
	tg.mustOK(upid, err)
	tg.started()
	upid, err = shutdown(nil)
	if u, _ := pveapi.ParseUPID(upid); err != nil || u.Type != fixtureTaskType(t, "shutdown_response") {
		t.Fatalf("shutdown: %s %v", upid, err)
	}
	tg.mustOK(upid, nil)
	if st, _ := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid); st.Status != "stopped" {
		t.Errorf("after the shutdown: %s", st.Status)
	}
	// Past the timeout: fails, or with forceStop kills with a warning.
	tg.started()
	upid, err = shutdown(url.Values{"timeout": {"1"}})
	tg.wantTaskExit(upid, err, "task_status_shutdown_timeout")
	upid, err = shutdown(url.Values{"timeout": {"1"}, "forceStop": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	tg.wantTaskExit(upid, nil, "task_status_shutdown_forced") // OK: a plain warn is not counted
	// A paused VM is refused before the task.
	tg.started()
	tg.power("suspend", nil)
	_, err = shutdown(nil)
	f := fixture.MustLoad("err_shutdown_paused")
	if err == nil || err.Error() != fmt.Sprintf("%d %s", f.Status, f.Reason) {
		t.Errorf("shutdown of a paused VM: %v", err)
	}
}

func TestSource_storageContentAndUploadRefusals(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	// A volume id of another storage is a 400 on volume.
	_, err := tg.api.DeleteVolume(tg.ctx(), tg.node, tg.isoStorage, "local:iso/other.iso")
	tg.wantAPIError(err, "err_volume_storage_mismatch")
	_, body := tg.raw("DELETE", "/nodes/"+tg.node+"/storage/"+tg.isoStorage+"/content/local:iso%2Fother.iso", nil, nil)
	if want := fixture.MustLoad("err_volume_storage_mismatch").BodyBytes(); !jsonEqual(body, want) {
		t.Errorf("body %s, want %s", body, want)
	}
	// The delete task's id is the storage.
	upid, err := tg.api.DeleteVolume(tg.ctx(), tg.node, tg.isoStorage, tg.seedVolID())
	var want string
	if err := fixture.MustLoad("content_delete_response").Data(&want); err != nil {
		t.Fatal(err)
	}
	wu, _ := pveapi.ParseUPID(want)
	if u, _ := pveapi.ParseUPID(upid); err != nil || u.Type != wu.Type || u.ID != tg.isoStorage {
		t.Errorf("volume delete UPID %s, want id %s like %s", upid, tg.isoStorage, want)
	}
	tg.mustOK(upid, err)

	sim := tg.simOnly("denying a privilege")
	sim.Deny("/storage/"+tg.isoStorage, "Datastore.AllocateTemplate")
	start := time.Now()
	_, err = tg.upload(captureName+"-seed.iso", tg.seed("#cloud-config\n"))
	tg.wantAPIError(err, "err_upload_forbidden")
	if time.Since(start) < sim.WallTime(3*time.Second) {
		t.Errorf("the refused upload answered in %v, before pveproxy's 3 s delay (%v here)", time.Since(start), sim.WallTime(3*time.Second))
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestSource_formatErrorsEndInANewline(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	_, body := tg.raw("PUT", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/config", url.Values{"tags": {"Bad!"}}, nil)
	if want := fixture.MustLoad("err_tag_invalid").BodyBytes(); !jsonEqual(body, want) {
		t.Errorf("body %s, want %s", body, want)
	}
}
