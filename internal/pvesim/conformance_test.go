package pvesim_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"maps"
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

// One test per captured fact of docs/design/facts.md, named TestConformance_<fact id>. Wording comes
// from testdata/ through internal/fixture, never from literals here.

// slowClone makes a clone last about half a second of wall time, so that the mid-clone
// state can be observed (a real host's clone takes two to three seconds).
func slowClone() pvesim.Options {
	// A start queued behind the clone waits up to LockWait (10 s on a real host, longer
	// than its 2 s clone): keep that order.
	return pvesim.Options{Durations: pvesim.Durations{Clone: 500 * time.Second, LockWait: 5000 * time.Second}}
}

func optOf(v, key string) string {
	for _, p := range strings.Split(v, ",") {
		if k, val, ok := strings.Cut(p, "="); ok && k == key {
			return val
		}
	}
	return ""
}

func TestConformance_errorEnvelope(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	f := fixture.MustLoad("err_not_exist")
	resp, body := tg.raw("GET", fmt.Sprintf("/nodes/%s/qemu/%d/config", tg.node, captureMissing), nil, nil)
	if want := fmt.Sprintf("%d %s", f.Status, tg.subst(f.Reason)); resp.Status != want {
		t.Errorf("status line %q, want %q", resp.Status, want)
	}
	var got, want map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(tg.subst(string(f.BodyBytes()))), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("body %s, want %s", body, f.BodyBytes())
	}
	if msg, _ := got["message"].(string); !strings.HasSuffix(msg, "\n") {
		t.Errorf("message %q must end in a newline", msg)
	}
	_, err := tg.api.VMConfig(tg.ctx(), tg.node, captureMissing)
	tg.wantAPIError(err, "err_not_exist")

	// A 401 has the reason phrase only and an empty body.
	for name, auth := range map[string]string{"err_no_ticket": "", "err_auth_failed": "PVEAPIToken=" + tg.token + "x"} {
		f := fixture.MustLoad(name)
		resp, body := tg.raw("GET", "/version", nil, map[string]string{"Authorization": auth})
		if resp.Status != fmt.Sprintf("%d %s", f.Status, f.Reason) || len(body) != 0 || len(f.BodyBytes()) != 0 {
			t.Errorf("%s: got %q with %d body bytes", name, resp.Status, len(body))
		}
	}
}

func TestConformance_missingConfig500(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	_, err := tg.api.VMConfig(tg.ctx(), tg.node, captureMissing)
	tg.wantAPIError(err, "err_not_exist")
	_, err = tg.api.VMStatus(tg.ctx(), tg.node, captureMissing)
	tg.wantAPIError(err, "err_not_exist")
	_, err = tg.api.Destroy(tg.ctx(), tg.node, captureMissing)
	tg.wantAPIError(err, "err_not_exist")
	if !pveapi.IsNotExist(err) {
		t.Error("IsNotExist is false for the missing-VM answer")
	}
}

func TestConformance_startQueuesBehindLock(t *testing.T) {
	tg := newTarget(t, slowClone())
	tg.parallel()
	cloneUPID, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("f3\n"))
	if err != nil {
		t.Fatal(err)
	}
	startUPID, err := tg.api.Start(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatalf("a start under the clone lock must be accepted: %v", err)
	}
	u, _ := pveapi.ParseUPID(startUPID)
	var want string
	if err := fixture.MustLoad("start_while_clone_locked_response").Data(&want); err != nil {
		t.Fatal(err)
	}
	wu, _ := pveapi.ParseUPID(want)
	if u.Type != wu.Type || u.ID != strconv.Itoa(tg.vmid) {
		t.Errorf("start UPID %s, want type %s id %d", startUPID, wu.Type, tg.vmid)
	}
	if cs, _ := tg.api.TaskStatus(tg.ctx(), tg.node, cloneUPID); cs.Status == "running" {
		if ss, _ := tg.api.TaskStatus(tg.ctx(), tg.node, startUPID); ss.Status != "running" {
			t.Errorf("start ended (%q) while the clone was still running", ss.ExitStatus)
		}
	}
	if st := tg.waitTask(cloneUPID); st.ExitStatus != "OK" {
		t.Fatalf("clone: %s", st.ExitStatus)
	}
	if st := tg.waitTask(startUPID); st.ExitStatus != "OK" {
		t.Fatalf("start: %s", st.ExitStatus)
	}
	st, err := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid)
	if err != nil || st.Status != "running" {
		t.Fatalf("after the queued start: %+v %v", st, err)
	}
}

func TestConformance_cloneVMIDTaken(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	_, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("again\n"))
	tg.wantAPIError(err, "err_clone_exists")
	if !pveapi.IsAlreadyExists(err) {
		t.Error("IsAlreadyExists is false for the taken-VMID answer")
	}
}

func TestConformance_agentAnswers(t *testing.T) {
	// The agent install takes about 45 s on a real host; here an hour, so it never comes.
	tg := newTarget(t, pvesim.Options{Durations: pvesim.Durations{AgentInstall: time.Hour}})
	tg.parallel()
	tg.seeded("#cloud-config\n")
	_, err := tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_vm_not_running")
	if !pveapi.IsVMNotRunning(err) {
		t.Error("IsVMNotRunning is false")
	}
	tg.started()
	_, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_agent_not_running")
	if !pveapi.IsAgentNotRunning(err) {
		t.Error("IsAgentNotRunning is false")
	}
	// agent: 0 is still an agent setting: the agent is "not running" (qemu-server
	// src/PVE/QemuServer/Agent.pm assert_agent_available); only without the key is it
	// "not configured".
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"agent": "0"}); err != nil {
		t.Fatal(err)
	}
	_, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_agent_not_running")
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "agent"}); err != nil {
		t.Fatal(err)
	}
	_, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_agent_not_configured")
	if !pveapi.IsNoAgentConfigured(err) {
		t.Error("IsNoAgentConfigured is false")
	}
}

func TestConformance_noQuotaAnswer(t *testing.T) {
	t.Skip("fact: no-quota-answer: no out-of-space answer was produced on the real host (thin local-lvm overprovisions, " +
		"quota: absent); the simulator has no quota either, so there is nothing to conform to")
}

func TestConformance_cloneLock(t *testing.T) {
	tg := newTarget(t, slowClone())
	tg.parallel()
	upid, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("f7\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": "4"})
	tg.wantAPIError(err, "err_locked_clone")
	if lock, ok := pveapi.LockOf(err); !ok || !pveapi.IsLocked(err) || lock != "clone" {
		t.Errorf("LockOf = %q, %v", lock, ok)
	}
	tg.mustOK(upid, nil)
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": "4"}); err != nil {
		t.Fatalf("after the clone: %v", err)
	}
}

func TestConformance_namelessMidClone(t *testing.T) {
	tg := newTarget(t, slowClone())
	tg.parallel()
	upid, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("f8\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := fixtureEntry(t, "cluster_resources_mid_clone", captureVMID)
	got, ok := tg.resource(tg.vmid)
	if !ok {
		t.Fatal("the clone's entry is not listed")
	}
	if !slices.Equal(keysOf(got), keysOf(want)) {
		t.Errorf("mid-clone entry keys %v, want %v", keysOf(got), keysOf(want))
	}
	for _, k := range []string{"lock", "status", "type"} {
		if got[k] != want[k] {
			t.Errorf("%s = %v, want %v", k, got[k], want[k])
		}
	}
	res, err := tg.api.ClusterResources(tg.ctx())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res, func(r pveapi.Resource) bool { return r.VMID == tg.vmid })
	if i < 0 || res[i].Name != "" || res[i].Lock != "clone" || res[i].Node != tg.node {
		t.Errorf("decoded entry %+v", res)
	}
	tg.mustOK(upid, nil)
	got, _ = tg.resource(tg.vmid)
	if got["name"] != captureName || got["lock"] != nil {
		t.Errorf("after the clone: %v", got)
	}
}

func TestConformance_tagRules(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"tags": "Proxy_Operator;web-proxy"}); err != nil {
		t.Fatal(err)
	}
	conf, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if conf["tags"] != "proxy_operator;web-proxy" {
		t.Errorf("tags %q", conf["tags"])
	}
	if e, _ := tg.resource(tg.vmid); e["tags"] != conf["tags"] {
		t.Errorf("listed tags %v", e["tags"])
	}
	err = tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"tags": "proxy operator!"})
	tg.wantAPIError(err, "err_tag_invalid")
}

func TestConformance_descriptionVerbatim(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	desc, _ := fixtureData(t, "vm_config_clone")["description"].(string)
	if !strings.Contains(desc, "\n") {
		t.Fatal("fixture description has no newline")
	}
	upid, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams(desc))
	tg.mustOK(upid, err)
	conf, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil || conf["description"] != desc || conf["name"] != captureName {
		t.Fatalf("description %q name %q (%v)", conf["description"], conf["name"], err)
	}
}

func TestConformance_metaCopied(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	tmpl, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.template)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if conf["meta"] == "" || conf["meta"] != tmpl["meta"] {
		t.Errorf("clone meta %q, template meta %q", conf["meta"], tmpl["meta"])
	}
	if want, _ := fixtureData(t, "vm_config_clone")["meta"].(string); tg.sim != nil && conf["meta"] != want {
		t.Errorf("meta %q, want the capture's %q", conf["meta"], want)
	}
}

func TestConformance_uploadOverwrites(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	name := captureName + "-seed.iso"
	first := tg.seed("first")
	upid, err := tg.upload(name, first)
	if err != nil {
		t.Fatal(err)
	}
	var captured string
	if err := fixture.MustLoad("upload_response").Data(&captured); err != nil {
		t.Fatal(err)
	}
	cu, _ := pveapi.ParseUPID(captured)
	if u, _ := pveapi.ParseUPID(upid); u.Type != cu.Type || u.ID != cu.ID {
		t.Errorf("upload UPID %s, want type %q id %q", upid, cu.Type, cu.ID)
	}
	tg.mustOK(upid, nil)
	second := tg.seed("second, a longer user-data " + strings.Repeat("x", 3000))
	tg.mustOK(tg.upload(name, second))
	vols, err := tg.api.StorageContent(tg.ctx(), tg.node, tg.isoStorage, "iso")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range vols {
		if v.VolID == tg.seedVolID() {
			n++
			if v.Size != int64(len(second)) || v.Format != "iso" || v.Content != "iso" {
				t.Errorf("volume %+v, want the second upload's %d bytes", v, len(second))
			}
		}
	}
	if n != 1 {
		t.Errorf("%d volumes named %s, want 1", n, tg.seedVolID())
	}
	if tg.sim != nil {
		if b, ok := tg.sim.ISO(tg.node, tg.seedVolID()); !ok || string(b) != string(second) {
			t.Error("the stored ISO is not the second upload")
		}
	}
	_, err = tg.upload(captureName+"-seed.txt", first)
	tg.wantAPIError(err, "err_upload_bad_name")
	if tg.sim != nil {
		_, err = tg.api.UploadISO(tg.ctx(), tg.node, "backups", name, strings.NewReader("x"), 1)
		tg.wantAPIError(err, "err_upload_no_iso_content")
	}
}

func TestConformance_volumeDeleteTask(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.mustOK(tg.upload(captureName+"-seed.iso", tg.seed("x")))
	upid, err := tg.api.DeleteVolume(tg.ctx(), tg.node, tg.isoStorage, tg.seedVolID())
	if err != nil {
		t.Fatal(err)
	}
	var captured string
	if err := fixture.MustLoad("content_delete_response").Data(&captured); err != nil {
		t.Fatal(err)
	}
	cu, _ := pveapi.ParseUPID(captured)
	if u, _ := pveapi.ParseUPID(upid); u.Type != cu.Type {
		t.Errorf("delete UPID %s, want type %s", upid, cu.Type)
	}
	tg.mustOK(upid, nil)
	vols, _ := tg.api.StorageContent(tg.ctx(), tg.node, tg.isoStorage, "iso")
	if slices.ContainsFunc(vols, func(v pveapi.StorageVolume) bool { return v.VolID == tg.seedVolID() }) {
		t.Error("the volume is still listed")
	}
	upid, err = tg.api.DeleteVolume(tg.ctx(), tg.node, tg.isoStorage, tg.seedVolID())
	if err != nil {
		t.Fatalf("a repeat delete must be accepted: %v", err)
	}
	want := fixtureData(t, "task_status_volume_missing")["exitstatus"]
	if st := tg.waitTask(upid); st.ExitStatus != want {
		t.Errorf("repeat delete ended %q, want %q", st.ExitStatus, want)
	}

	sim := tg.simOnly("denying Datastore.Allocate")
	sim.Deny("/storage/local", "Datastore.Allocate")
	if err := sim.AddISO(tg.node, "local", "other.iso", []byte("iso")); err != nil {
		t.Fatal(err)
	}
	_, err = tg.api.DeleteVolume(tg.ctx(), tg.node, "local", "local:iso/other.iso")
	tg.wantAPIError(err, "err_forbidden_volume_delete")
	if !pveapi.IsForbidden(err) {
		t.Error("IsForbidden is false")
	}

	// The listing needs Datastore.Audit or Datastore.AllocateSpace (pve-storage Content.pm
	// index, any => 1); without both it is refused, while a delete may still be allowed.
	sim.Allow("/storage/local", "Datastore.Allocate")
	sim.Deny("/storage/local", "Datastore.Audit")
	sim.Deny("/storage/local", "Datastore.AllocateSpace")
	_, err = tg.api.StorageContent(tg.ctx(), tg.node, "local", "iso")
	tg.wantAPIError(err, "err_forbidden_storage_content")
	if !pveapi.IsForbidden(err) {
		t.Error("IsForbidden is false for the listing")
	}
	if _, err := tg.api.DeleteVolume(tg.ctx(), tg.node, "local", "local:iso/other.iso"); err != nil {
		t.Errorf("a delete with Datastore.Allocate alone was refused: %v", err)
	}
}

func TestConformance_pausedListedRunning(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	stopped := fixtureData(t, "status_current_stopped")
	st, err := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid)
	if err != nil || st.Status != stopped["status"] || st.QMPStatus != stopped["qmpstatus"] {
		t.Fatalf("stopped: %+v %v", st, err)
	}
	tg.started()
	tg.power("suspend", nil)
	paused := fixtureData(t, "status_current_paused")
	st, err = tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid)
	if err != nil || st.Status != paused["status"] || st.QMPStatus != paused["qmpstatus"] {
		t.Fatalf("paused: %+v %v", st, err)
	}
	if e, _ := tg.resource(tg.vmid); e["status"] != paused["status"] {
		t.Errorf("listed status %v, want plain %v", e["status"], paused["status"])
	}
}

func TestConformance_cloneStorageNoImages(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	p := tg.cloneParams("f15\n")
	p.Storage = "local"
	_, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, p)
	tg.wantAPIError(err, "err_clone_storage_no_images")
	if pveapi.IsNoSuchStorage(err) {
		t.Error("IsNoSuchStorage must not match the images error")
	}
	_, err = tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if !pveapi.IsNotExist(err) {
		t.Errorf("a VM was left behind: %v", err)
	}
}

func TestConformance_taskStatus(t *testing.T) {
	tg := newTarget(t, slowClone())
	tg.parallel()
	upid, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("f16\n"))
	if err != nil {
		t.Fatal(err)
	}
	path := "/nodes/" + tg.node + "/tasks/" + url.PathEscape(upid) + "/status"
	var running map[string]any
	tg.rawJSON("GET", path, nil, &running)
	if running["status"] == "running" && !slices.Equal(keysOf(running), keysOf(fixtureData(t, "task_status_running"))) {
		t.Errorf("running task keys %v", keysOf(running))
	}
	st := tg.waitTask(upid)
	var stopped map[string]any
	tg.rawJSON("GET", path, nil, &stopped)
	want := fixtureData(t, "task_status_ok")
	if !slices.Equal(keysOf(stopped), keysOf(want)) {
		t.Errorf("stopped task keys %v, want %v", keysOf(stopped), keysOf(want))
	}
	u, _ := pveapi.ParseUPID(upid)
	if st.UPID != upid || st.Node != tg.node || st.Type != want["type"] || st.ID != strconv.Itoa(tg.template) ||
		st.PID != u.PID || st.PStart != u.PStart || st.StartTime != u.StartTime ||
		st.User+"!"+st.TokenID != u.User || !strings.HasPrefix(tg.token, u.User+"=") ||
		st.Status != want["status"] || st.ExitStatus != want["exitstatus"] {
		t.Errorf("task status %+v disagrees with its UPID %s", st, upid)
	}
}

func TestConformance_privileges(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	sim := tg.simOnly("denying a privilege")
	sim.Deny("/storage/"+tg.isoStorage, "Datastore.Allocate")
	tg.seeded("#cloud-config\n")
	tg.mustOK(tg.api.Resize(tg.ctx(), tg.node, tg.vmid, "scsi0", "4G"))
	tg.started()
	tg.eventually("an agent address", func() bool {
		ifs, err := tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
		return err == nil && len(ifs) > 1 && len(ifs[1].IPAddresses) > 1
	})
	tg.mustOK(tg.api.Stop(tg.ctx(), tg.node, tg.vmid))
	_, err := tg.api.DeleteVolume(tg.ctx(), tg.node, tg.isoStorage, tg.seedVolID())
	f := fixture.MustLoad("err_forbidden_volume_delete")
	ae := apiErr(t, err)
	if want := strings.Replace(f.Message(), "/storage/local,", "/storage/"+tg.isoStorage+",", 1); ae.Status != f.Status || ae.Message != want {
		t.Errorf("got %d %q, want %d %q", ae.Status, ae.Message, f.Status, want)
	}
	tg.mustOK(tg.api.Destroy(tg.ctx(), tg.node, tg.vmid))
}

func TestConformance_http1Only(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	u, _ := url.Parse(tg.endpoint)
	tr := tg.http.Transport.(*http.Transport)
	conf := tr.TLSClientConfig.Clone()
	conf.NextProtos = []string{"h2", "http/1.1"}
	conn, err := tls.Dial("tcp", u.Host, conf)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Errorf("negotiated %q", p)
	}
	resp, _ := tg.raw("GET", "/version", nil, nil)
	if resp.Proto != "HTTP/1.1" {
		t.Errorf("proto %s", resp.Proto)
	}
}

func TestConformance_ide2BootOrder(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	want := fixtureData(t, "vm_config_template_9001")
	tmpl, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.template)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl["boot"] != want["boot"] || tmpl["agent"] != want["agent"] || tmpl["template"] != "1" ||
		optOf(tmpl["scsi0"], "size") != optOf(want["scsi0"].(string), "size") ||
		optOf(tmpl["net0"], "bridge") != optOf(want["net0"].(string), "bridge") || tmpl["ide2"] != "" {
		t.Errorf("template %d: %v", tg.template, tmpl)
	}
	if tg.sim != nil {
		if !slices.Equal(slices.Sorted(mapsKeys(tmpl)), keysOf(want)) {
			t.Errorf("template keys %v, want %v", slices.Sorted(mapsKeys(tmpl)), keysOf(want))
		}
		bad := fixtureData(t, "vm_config_template_9000")
		t9000, err := tg.api.VMConfig(tg.ctx(), tg.node, pvesim.CloudInitTemplateVMID)
		if err != nil {
			t.Fatal(err)
		}
		if t9000["ide2"] != bad["ide2"] || optOf(t9000["net0"], "tag") != optOf(bad["net0"].(string), "tag") {
			t.Errorf("template 9000: %v", t9000)
		}
	}
	tg.seeded("#cloud-config\n")
	conf, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	after := fixtureData(t, "vm_config_after_seed")
	if conf["boot"] != after["boot"] || optOf(conf["ide2"], "media") != "cdrom" || optOf(conf["ide2"], "size") == "" {
		t.Errorf("after attaching the seed: boot %q ide2 %q", conf["boot"], conf["ide2"])
	}
	if tg.sim != nil && !slices.Equal(slices.Sorted(mapsKeys(conf)), keysOf(after)) {
		t.Errorf("config keys %v, want %v", slices.Sorted(mapsKeys(conf)), keysOf(after))
	}
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestConformance_resizeTask(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	conf, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	size := optOf(conf["scsi0"], "size")
	gib, err := strconv.Atoi(strings.TrimSuffix(size, "G"))
	if err != nil {
		t.Fatalf("scsi0 size %q is not whole GiB", size)
	}
	upid, err := tg.api.Resize(tg.ctx(), tg.node, tg.vmid, "scsi0", size)
	if u, _ := pveapi.ParseUPID(upid); err != nil || u.Type != fixtureTaskType(t, "resize_same_size_response") {
		t.Fatalf("same-size resize: %s %v", upid, err)
	}
	tg.mustOK(upid, nil)
	if c, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); c["scsi0"] != conf["scsi0"] {
		t.Errorf("same size changed scsi0 to %q", c["scsi0"])
	}
	grown := strconv.Itoa(gib+1) + "G"
	tg.mustOK(tg.api.Resize(tg.ctx(), tg.node, tg.vmid, "scsi0", grown))
	if c, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); optOf(c["scsi0"], "size") != grown {
		t.Errorf("after growing: scsi0 %q", c["scsi0"])
	}
	upid, err = tg.api.Resize(tg.ctx(), tg.node, tg.vmid, "scsi0", size)
	if err != nil {
		t.Fatalf("a shrink still answers a UPID: %v", err)
	}
	want := fixtureData(t, "task_status_stopped_error")["exitstatus"]
	if st := tg.waitTask(upid); st.ExitStatus != want {
		t.Errorf("shrink ended %q, want %q", st.ExitStatus, want)
	}
}

func fixtureTaskType(t *testing.T, name string) string {
	t.Helper()
	var upid string
	if err := fixture.MustLoad(name).Data(&upid); err != nil {
		t.Fatal(err)
	}
	u, err := pveapi.ParseUPID(upid)
	if err != nil {
		t.Fatal(err)
	}
	return u.Type
}

func TestConformance_agentInterfaces(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	userData := "#cloud-config\nruncmd:\n  - echo sentinel-8c1f\n"
	tg.seeded(userData)
	tg.started()
	var ifs []pveapi.NetworkInterface
	tg.eventually("an IPv4 from the agent", func() bool {
		var err error
		ifs, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
		return err == nil && slices.ContainsFunc(ifs, func(i pveapi.NetworkInterface) bool {
			return i.Name != "lo" && slices.ContainsFunc(i.IPAddresses, func(a pveapi.IPAddress) bool { return a.Type == "ipv4" })
		})
	})
	var want struct {
		Result []map[string]any `json:"result"`
	}
	if err := fixture.MustLoad("agent_network_get_interfaces").Data(&want); err != nil {
		t.Fatal(err)
	}
	var names, wantNames []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	for _, i := range want.Result {
		wantNames = append(wantNames, i["name"].(string))
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("interfaces %v, want %v", names, wantNames)
	}
	conf, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	mac := strings.ToLower(strings.TrimPrefix(strings.Split(conf["net0"], ",")[0], "virtio="))
	ens := ifs[len(ifs)-1]
	if ens.HardwareAddress != mac || ens.IPAddresses[0].Type != "ipv4" || ens.IPAddresses[0].Prefix != 24 {
		t.Errorf("ens18 %+v, want MAC %s and an IPv4/24 first", ens, mac)
	}
	if tg.sim != nil && !strings.HasPrefix(ens.IPAddresses[0].Address, "192.168.0.") {
		t.Errorf("address %s not on the untagged network", ens.IPAddresses[0].Address)
	}
	if tg.sim != nil {
		// The simulated network advertises a unique local prefix too: SLAAC gives ens18 one
		// fd00:0:0:<subnet>:: address with the link-local address's interface identifier.
		var ula, ll string
		for _, a := range ens.IPAddresses {
			switch {
			case strings.HasPrefix(a.Address, "fd00:"):
				ula = a.Address
			case strings.HasPrefix(a.Address, "fe80:"):
				ll = a.Address
			}
		}
		if ula == "" || ll == "" || strings.TrimPrefix(ula, "fd00::") != strings.TrimPrefix(ll, "fe80::") {
			t.Errorf("ens18 addresses %+v: want a SLAAC fd00:0:0:0::/64 address with the link-local suffix", ens.IPAddresses)
		}
	}
	var raw struct {
		Result []map[string]any `json:"result"`
	}
	tg.rawJSON("GET", fmt.Sprintf("/nodes/%s/qemu/%d/agent/network-get-interfaces", tg.node, tg.vmid), nil, &raw)
	for i := range raw.Result {
		if i < len(want.Result) && !slices.Equal(keysOf(raw.Result[i]), keysOf(want.Result[i])) {
			t.Errorf("interface %d keys %v, want %v", i, keysOf(raw.Result[i]), keysOf(want.Result[i]))
		}
	}
	if tg.sim != nil {
		sf, ok := tg.sim.GuestSeed(tg.vmid)
		if !ok || string(sf.UserData) != userData || !sf.InstallsAgent || !strings.Contains(string(sf.MetaData), captureName) {
			t.Errorf("guest seed %+v %v", sf, ok)
		}
	}
}

func TestConformance_auth401Texts(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	id, secret, _ := strings.Cut(tg.token, "=")
	for _, bad := range []string{id + "=" + secret + "0", id + "x=" + secret} {
		c, err := pveapi.New(pveapi.Options{Endpoint: tg.endpoint, Token: bad, CAPEM: tg.caPEM(), Insecure: tg.caPEM() == "" && realHost()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Version(tg.ctx())
		tg.wantAPIError(err, "err_auth_failed")
		if !pveapi.IsUnauthorized(err) {
			t.Error("IsUnauthorized is false")
		}
	}
	resp, body := tg.raw("GET", "/version", nil, map[string]string{"Authorization": ""})
	f := fixture.MustLoad("err_no_ticket")
	if resp.StatusCode != f.Status || resp.Status != fmt.Sprintf("%d %s", f.Status, f.Reason) || len(body) != 0 {
		t.Errorf("no credentials: %s %q", resp.Status, body)
	}
}

func TestConformance_uploadStaging(t *testing.T) {
	t.Skip("fact: upload-staging: uploads are staged in /var/tmp/pveupload-* on the node; nothing in the API shows it, " +
		"and the simulator keeps uploads in memory")
}

// The validation captures (fact: missing-storage-400, fact: hibernated-vm, fact: paused-stop).

func TestConformance_missingStorage400(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	_, err := tg.api.StorageStatus(tg.ctx(), tg.node, "proxy-missing")
	tg.wantAPIError(err, "storage_status_missing")
	if !pveapi.IsNoSuchStorage(err) {
		t.Error("IsNoSuchStorage is false")
	}
}

func TestConformance_pausedStop(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	tg.started()
	tg.power("suspend", nil)
	upid, err := tg.api.Stop(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != fixtureData(t, "task_status_stop_paused")["exitstatus"] {
		t.Errorf("stop of a paused VM ended %q", st.ExitStatus)
	}
	want := fixtureData(t, "status_current_after_stop_paused")
	st, err := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid)
	if err != nil || st.Status != want["status"] || st.QMPStatus != want["qmpstatus"] {
		t.Errorf("after the stop: %+v %v", st, err)
	}
}

func TestConformance_hibernatedVM(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	tg.started()
	tg.power("suspend", url.Values{"todisk": {"1"}})
	want := fixtureData(t, "status_current_hibernated")
	st, err := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid)
	if err != nil || st.Status != want["status"] || st.QMPStatus != want["qmpstatus"] || st.Lock != want["lock"] {
		t.Fatalf("hibernated: %+v %v", st, err)
	}
	if e, _ := tg.resource(tg.vmid); e["status"] != want["status"] || e["lock"] != want["lock"] {
		t.Errorf("listed %v", e)
	}
	if conf, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); conf["vmstate"] == "" {
		t.Error("no state volume in the config")
	}
	upid, err := tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatalf("destroy of a hibernated VM: %v", err)
	}
	if u, _ := pveapi.ParseUPID(upid); u.Type != fixtureTaskType(t, "destroy_hibernated_response") {
		t.Errorf("UPID %s", upid)
	}
	if st := tg.waitTask(upid); st.ExitStatus != fixtureData(t, "task_status_destroy_hibernated")["exitstatus"] {
		t.Errorf("destroy ended %q", st.ExitStatus)
	}
	_, err = tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	tg.wantNotExist(err, tg.vmid)
}

func TestConformance_listingLag(t *testing.T) {
	tg := newTarget(t, pvesim.Options{Durations: pvesim.Durations{FreshUnknown: 400 * time.Second}})
	tg.simOnly("pvestatd's first sample of a new VM cannot be timed on a real host")
	tg.parallel()
	tg.cloned()
	e, _ := tg.resource(tg.vmid)
	if e["status"] != "unknown" || e["name"] != captureName || e["lock"] != nil {
		t.Errorf("just after the clone: %v", e)
	}
	tg.eventually("a known status", func() bool {
		e, _ := tg.resource(tg.vmid)
		return e["status"] == "stopped"
	})
}

// Behaviours read in the PVE sources, beyond the captures.

func TestDestroy_runningVMRefused(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	tg.started()
	_, err := tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_destroy_running")
}

func TestDestroy_entryStaysListedStoppedWithoutLockThenGone(t *testing.T) {
	tg := newTarget(t, pvesim.Options{Durations: pvesim.Durations{Destroy: 500 * time.Second}})
	tg.parallel()
	tg.cloned()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"tags": "proxy_operator"}); err != nil {
		t.Fatal(err)
	}
	upid, err := tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	want := fixtureEntry(t, "cluster_resources_during_destroy", captureVMID)
	if st := tg.waitTaskStatus(upid); st == "running" {
		got, ok := tg.resource(tg.vmid)
		if !ok || got["status"] != want["status"] || got["lock"] != nil || !slices.Equal(keysOf(got), keysOf(want)) {
			t.Errorf("during the destroy: %v, want keys %v", got, keysOf(want))
		}
		conf, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
		if _, locked := fixtureData(t, "config_during_destroy")["lock"]; err != nil || conf["lock"] != "" || locked {
			t.Errorf("config during the destroy: %v %v", conf, err)
		}
	}
	tg.mustOK(upid, nil)
	if _, ok := tg.resource(tg.vmid); ok {
		t.Error("still listed after the destroy")
	}
	_, err = tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	tg.wantNotExist(err, tg.vmid)
}

func (tg *target) waitTaskStatus(upid string) string {
	st, err := tg.api.TaskStatus(tg.ctx(), tg.node, upid)
	if err != nil {
		tg.t.Fatal(err)
	}
	return st.Status
}

func TestStart_alreadyRunningIsATaskError(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	tg.started()
	upid, err := tg.api.Start(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	want := tg.subst(fixtureData(t, "task_status_start_already_running")["exitstatus"].(string))
	if st := tg.waitTask(upid); st.ExitStatus != want {
		t.Errorf("ended %q, want %q", st.ExitStatus, want)
	}
}

func TestNode_unknownNodeIsAHostnameLookupFailure(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	_, err := tg.api.NodeStatus(tg.ctx(), "pv9-9")
	tg.wantAPIError(err, "err_node_unknown")
}

func TestAPI_unknownPathIs501(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	f := fixture.MustLoad("err_not_implemented")
	resp, body := tg.raw("GET", "/nodes/"+tg.node+"/bogus", nil, nil)
	want := strings.Replace(f.Message(), "/nodes/"+captureNode+"/", "/nodes/"+tg.node+"/", 1)
	if resp.StatusCode != f.Status || resp.Status != fmt.Sprintf("%d %s", f.Status, want) || !strings.Contains(string(body), `"`+want+`"`) {
		t.Errorf("got %s %s", resp.Status, body)
	}
}

func TestNodeDown_callsAre595AndGuestsListedUnknown(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	sim := tg.simOnly("taking a node down")
	tg.parallel()
	tg.cloned()
	if err := sim.SetNodeDown(tg.node, true); err != nil {
		t.Fatal(err)
	}
	_, err := tg.api.NodeStatus(tg.ctx(), tg.node)
	tg.wantAPIError(err, "err_595")
	if !pveapi.IsProxyFailure(err) {
		t.Error("IsProxyFailure is false for 595")
	}
	res, err := tg.api.ClusterResources(tg.ctx())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Node == tg.node && r.Status != "unknown" {
			t.Errorf("guest %d of the down node listed %q", r.VMID, r.Status)
		}
	}
	if err := sim.SetNodeDown(tg.node, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.api.NodeStatus(tg.ctx(), tg.node); err != nil {
		t.Errorf("node back: %v", err)
	}
}

func TestFault_596HasAnEmptyBody(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	sim := tg.simOnly("injecting a fault")
	tg.parallel()
	f := fixture.MustLoad("err_596")
	sim.InjectFault(pvesim.Fault{Method: "GET", Path: "/version", Status: f.Status, Message: f.Reason, Times: 1})
	resp, body := tg.raw("GET", "/version", nil, nil)
	if resp.Status != fmt.Sprintf("%d %s", f.Status, f.Reason) || len(body) != 0 {
		t.Errorf("got %s %q", resp.Status, body)
	}
	if _, err := tg.api.Version(tg.ctx()); err != nil {
		t.Errorf("the fault was for one call only: %v", err)
	}
}

func TestTask_warningsExitStatus(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	sim := tg.simOnly("injecting a fault")
	tg.parallel()
	tg.cloned()
	sim.InjectFault(pvesim.Fault{Path: "/nodes/{node}/qemu/{vmid}/status/start", TaskWarnings: 1, Times: 1})
	upid, err := tg.api.Start(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	want := fixtureData(t, "task_status_warnings")["exitstatus"].(string)
	st := tg.waitTask(upid)
	if st.ExitStatus != want || !pveapi.TaskSucceeded(st.ExitStatus) {
		t.Errorf("ended %q, want %q", st.ExitStatus, want)
	}
	if vs, _ := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid); vs.Status != "running" {
		t.Errorf("a start with warnings still starts: %+v", vs)
	}
}

// Shapes: the simulator's answers have the fixtures' fields.

func TestShapes_matchTheFixtures(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	var version map[string]any
	tg.rawJSON("GET", "/version", nil, &version)
	if want := fixtureData(t, "version"); !reflect.DeepEqual(version, want) && tg.sim != nil {
		t.Errorf("version %v, want %v", version, want)
	}
	var node map[string]any
	tg.rawJSON("GET", "/nodes/"+tg.node+"/status", nil, &node)
	for k := range fixtureData(t, "node_status") {
		if _, ok := node[k]; !ok {
			t.Errorf("node status lacks %q", k)
		}
	}
	var storage map[string]any
	tg.rawJSON("GET", "/nodes/"+tg.node+"/storage/"+tg.isoStorage+"/status", nil, &storage)
	if want := fixtureData(t, "storage_status"); !slices.Equal(keysOf(storage), keysOf(want)) || storage["content"] != want["content"] {
		t.Errorf("storage status %v, want keys %v", storage, keysOf(want))
	}
	tg.mustOK(tg.upload(captureName+"-seed.iso", tg.seed("x")))
	tg.mustOK(tg.upload("proxy-other0000000000000-seed.iso", tg.seed("y")))
	var content []map[string]any
	tg.rawJSON("GET", "/nodes/"+tg.node+"/storage/"+tg.isoStorage+"/content", url.Values{"content": {"iso"}}, &content)
	var wantContent []map[string]any
	if err := fixture.MustLoad("storage_content_iso").Data(&wantContent); err != nil {
		t.Fatal(err)
	}
	if len(content) < 2 || !slices.Equal(keysOf(content[0]), keysOf(wantContent[0])) ||
		!slices.IsSortedFunc(content, func(a, b map[string]any) int { return strings.Compare(a["volid"].(string), b["volid"].(string)) }) {
		t.Errorf("content %v", content)
	}
	wantTmpl := fixtureEntry(t, "cluster_resources", 9001)
	if e, ok := tg.resource(tg.template); !ok || !slices.Equal(keysOf(e), keysOf(wantTmpl)) {
		t.Errorf("template entry %v, want keys %v", e, keysOf(wantTmpl))
	}
	tg.cloned()
	tg.started()
	for _, c := range []struct{ state, fixture string }{{"running", "status_current_running"}} {
		var st map[string]any
		tg.rawJSON("GET", fmt.Sprintf("/nodes/%s/qemu/%d/status/current", tg.node, tg.vmid), nil, &st)
		want := fixtureData(t, c.fixture)
		if tg.sim != nil && !slices.Equal(keysOf(withoutKey(st, "tags")), keysOf(withoutKey(want, "tags"))) {
			t.Errorf("%s status keys %v, want %v", c.state, keysOf(st), keysOf(want))
		}
	}
}

func withoutKey(m map[string]any, k string) map[string]any {
	out := map[string]any{}
	for kk, v := range m {
		if kk != k {
			out[kk] = v
		}
	}
	return out
}

// TestDestroy_protectedVMRefusedBeforeTheRunningCheck: a VM with protection=1 is refused
// with check_protection's text whether it runs or not (the protection check comes first in
// destroy_vm's early checks); once the flag is cleared the destroy is accepted.
func TestDestroy_protectedVMRefusedBeforeTheRunningCheck(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"protection": "1"}); err != nil {
		t.Fatal(err)
	}
	tg.started()
	_, err := tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_destroy_protected")
	upid, err := tg.api.Stop(tg.ctx(), tg.node, tg.vmid)
	tg.mustOK(upid, err)
	_, err = tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_destroy_protected")
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "protection"}); err != nil {
		t.Fatal(err)
	}
	upid, err = tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	tg.mustOK(upid, err)
}

// A cpu option naming its cputype twice (a keyless part anywhere is the default key,
// pve-common JSONSchema.pm parse_property_string) is refused, and one naming it once after
// another property is accepted.
func TestConformance_cpuTypeAnywhereOnce(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cpu": "host,flags=+aes,host"})
	tg.wantAPIError(err, "err_cpu_duplicate_type")
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cpu": "flags=+aes,host"}); err != nil {
		t.Fatalf("keyless cputype after flags: %v", err)
	}
	cfg, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil || cfg["cpu"] != "flags=+aes,host" {
		t.Fatalf("cpu = %q (%v)", cfg["cpu"], err)
	}
}

// An unknown built-in CPU model is refused by the config write's parameter check, on PUT
// and POST alike, before anything is written (qemu-server CPUConfig.pm validate_vm_cpu_conf).
func TestConformance_cpuUnknownRefused(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	before, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture.MustLoad("err_cpu_unknown")
	bad := strings.SplitN(f.Errors()["cpu"], "'", 3)[1] // the model the fixture names
	err = tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cpu": bad, "cores": "3"})
	tg.wantAPIError(err, "err_cpu_unknown")
	path := "/nodes/" + tg.node + "/qemu/" + strconv.Itoa(tg.vmid) + "/config"
	resp, body := tg.raw("POST", path, url.Values{"cpu": {bad + ",flags=+aes"}, "cores": {"3"}}, nil)
	if resp.StatusCode != f.Status || !jsonEqual(body, f.BodyBytes()) {
		t.Errorf("POST: %d %s, want %d %s", resp.StatusCode, body, f.Status, f.BodyBytes())
	}
	after, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(before, after) {
		t.Errorf("a refused write changed the config: %v, was %v", after, before)
	}
	// Known models pass, as the default key or as cputype=, with flags.
	for _, cpu := range []string{"host,flags=+aes", "cputype=x86-64-v2-AES", "kvm64"} {
		if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cpu": cpu}); err != nil {
			t.Errorf("cpu %q: %v", cpu, err)
		}
	}
}

// TestCPUModels_listIsWhatTheConfigAccepts: GET /nodes/{node}/capabilities/qemu/cpu has the
// fixture's shape (CPU.pm index), and the simulator serves it from the model list its
// config writes validate against (CPUConfig.pm validate_vm_cpu_conf): every listed model is
// accepted as a VM's cpu; a model of another architecture is accepted but listed only with
// its arch; an unknown one is neither listed nor accepted (err_cpu_unknown).
func TestCPUModels_listIsWhatTheConfigAccepts(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	var list []map[string]any
	tg.rawJSON("GET", "/nodes/"+tg.node+"/capabilities/qemu/cpu", nil, &list)
	var want []map[string]any
	if err := fixture.MustLoad("capabilities_qemu_cpu").Data(&want); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range list {
		names[m["name"].(string)] = true
		w := want[0]
		if m["abstract"] != nil {
			w = want[5]
		}
		if !slices.Equal(keysOf(m), keysOf(w)) {
			t.Errorf("entry %v, want the keys of %v", m, w)
		}
	}
	for _, m := range want {
		if m["custom"] == float64(0) && !names[m["name"].(string)] {
			t.Errorf("the list lacks %v", m["name"])
		}
	}
	if names["cortex-a53"] || names["x86-64-v5"] {
		t.Errorf("an aarch64 or unknown model is listed: %v", names)
	}
	var arm []map[string]any
	tg.rawJSON("GET", "/nodes/"+tg.node+"/capabilities/qemu/cpu", url.Values{"arch": {"aarch64"}}, &arm)
	if len(arm) == 0 || !slices.ContainsFunc(arm, func(m map[string]any) bool { return m["name"] == "cortex-a53" }) {
		t.Errorf("arch=aarch64: %v", arm)
	}
	tg.cloned()
	for n := range names {
		if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cpu": n}); err != nil {
			t.Errorf("cpu %s, listed, refused: %v", n, err)
		}
	}
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cpu": "cortex-a53"}); err != nil {
		t.Errorf("cpu cortex-a53 (another architecture's) refused: %v", err)
	}
	tg.wantAPIError(tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cpu": "x86-64-v5"}), "err_cpu_unknown")
}
