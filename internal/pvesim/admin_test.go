package pvesim_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

func TestStats_countPerMethodAndRouteTemplate(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	if _, err := tg.api.Version(tg.ctx()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{100, 9001, captureMissing} {
		_, _ = tg.api.VMConfig(tg.ctx(), tg.node, id)
	}
	tg.raw("GET", "/nodes/"+tg.node+"/bogus", nil, nil)
	tg.raw("GET", "/version", nil, map[string]string{"Authorization": ""})
	tg.admin("GET", "/state", nil, nil)
	want := map[string]int{
		"GET /version":                         2,
		"GET /nodes/{node}/qemu/{vmid}/config": 3,
		"GET (unmatched)":                      1,
	}
	got := sim.Stats()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("Stats()[%q] = %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("Stats() = %v: admin calls must not count", got)
	}
	var overHTTP map[string]int
	tg.admin("GET", "/stats", nil, &overHTTP)
	if overHTTP["GET /version"] != 2 {
		t.Errorf("/pvesim/stats = %v", overHTTP)
	}
	tg.admin("DELETE", "/stats", nil, nil)
	if got := sim.Stats(); len(got) != 0 {
		t.Errorf("after reset: %v", got)
	}
}

func TestAdmin_needsTheToken(t *testing.T) {
	tg, _ := simTarget(t, pvesim.Options{})
	req, _ := http.NewRequest(http.MethodGet, tg.endpoint+"/pvesim/state", nil)
	resp, err := tg.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("admin without a token: %s", resp.Status)
	}
}

func TestAdmin_faultsOverHTTP(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	var id string
	tg.admin("POST", "/faults", map[string]any{"method": "GET", "path": "/version", "status": 596, "message": "Connection reset by peer", "latency": "5ms", "times": 1}, &id)
	var list []pvesim.Fault
	tg.admin("GET", "/faults", nil, &list)
	if len(list) != 1 || list[0].ID != id || list[0].Latency != 5*time.Millisecond || list[0].Status != 596 {
		t.Fatalf("faults %+v", list)
	}
	if _, err := tg.api.Version(tg.ctx()); !pveapi.IsProxyFailure(err) {
		t.Errorf("Version: %v", err)
	}
	tg.admin("POST", "/faults", map[string]any{"path": "/version", "status": 500}, nil)
	tg.admin("DELETE", "/faults", nil, nil)
	if f := sim.Faults(); len(f) != 0 {
		t.Errorf("after DELETE: %+v", f)
	}
}

func TestAdmin_stateAndVMsOverHTTP(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	tg.admin("POST", "/vms", pvesim.VMSpec{VMID: 4242, Name: "foreign", Power: "running", ShipsAgent: true, Config: map[string]string{"tags": "other"}}, nil)
	var st pvesim.State
	tg.admin("GET", "/state", nil, &st)
	var found *pvesim.VMState
	for i := range st.VMs {
		if st.VMs[i].VMID == 4242 {
			found = &st.VMs[i]
		}
	}
	if found == nil || found.Name != "foreign" || found.Power != "running" || found.Tags != "other" || found.Node != tg.node {
		t.Fatalf("state: %+v", found)
	}
	tg.admin("POST", "/vms/4242/state", pvesim.VMPatch{Power: "paused"}, nil)
	vs, err := tg.api.VMStatus(tg.ctx(), tg.node, 4242)
	if err != nil || vs.Status != "running" || vs.QMPStatus != "paused" {
		t.Errorf("paused: %+v %v", vs, err)
	}
	tg.admin("DELETE", "/vms/4242", nil, nil)
	_, err = tg.api.VMConfig(tg.ctx(), tg.node, 4242)
	tg.wantNotExist(err, 4242)
	if _, ok := sim.VM(4242); ok {
		t.Error("VM still in the state")
	}
	var info pvesim.Info
	tg.admin("GET", "/info", nil, &info)
	if info.Endpoint != tg.endpoint || info.ISOStorage != tg.isoStorage || info.Templates["debian-13"] != tg.template {
		t.Errorf("info %+v", info)
	}
}

func TestSetVMState_pausedHibernatedRunningStopped(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	tg.cloned()
	for _, c := range []struct{ power, status, qmp, lock, listed string }{
		{"running", "running", "running", "", "running"},
		{"paused", "running", "paused", "", "running"},
		{"hibernated", "stopped", "stopped", "suspended", "stopped"},
		{"running", "running", "running", "", "running"},
		{"stopped", "stopped", "stopped", "", "stopped"},
	} {
		if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Power: c.power}); err != nil {
			t.Fatal(err)
		}
		vs, err := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid)
		if err != nil || vs.Status != c.status || vs.QMPStatus != c.qmp || vs.Lock != c.lock {
			t.Errorf("%s: %+v %v", c.power, vs, err)
		}
		if e, _ := tg.resource(tg.vmid); e["status"] != c.listed {
			t.Errorf("%s: listed %v", c.power, e["status"])
		}
		if got, _ := sim.VM(tg.vmid); got.Power != c.power {
			t.Errorf("State power %q, want %q", got.Power, c.power)
		}
	}
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Power: "exploded"}); err == nil {
		t.Error("unknown power accepted")
	}
	lock := "backup"
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Lock: &lock}); err != nil {
		t.Fatal(err)
	}
	// The lock refuses the destroy inside its task (qemu-server destroy_vm).
	upid, err := tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatalf("destroy of a backup-locked VM: %v", err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != fixtureData(t, "task_status_destroy_locked")["exitstatus"] {
		t.Errorf("destroy of a backup-locked VM ended %q", st.ExitStatus)
	}
	if err := sim.SetVMState(captureMissing, pvesim.VMPatch{}); err == nil {
		t.Error("SetVMState on a missing VM")
	}
}

func TestAddVM_foreignGuests(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	if err := sim.AddVM(pvesim.VMSpec{VMID: 100}); err == nil {
		t.Error("AddVM onto a taken VMID")
	}
	if err := sim.AddVM(pvesim.VMSpec{VMID: 9100, Name: "my-template", Template: true}); err != nil {
		t.Fatal(err)
	}
	conf, err := tg.api.VMConfig(tg.ctx(), tg.node, 9100)
	if err != nil || conf["template"] != "1" || !strings.Contains(conf["scsi0"], "base-9100-disk-0") {
		t.Errorf("template: %v %v", conf, err)
	}
	if err := sim.AddVM(pvesim.VMSpec{VMID: 102, Type: "lxc", Name: "ct", Power: "running"}); err != nil {
		t.Fatal(err)
	}
	res, _ := tg.api.ClusterResources(tg.ctx())
	ok := false
	for _, r := range res {
		ok = ok || (r.VMID == 102 && r.Type == "lxc" && r.ID == "lxc/102" && r.Status == "running")
	}
	if !ok {
		t.Errorf("container not listed: %+v", res)
	}
	// A container is not a qemu VM: its qemu config does not exist (fact: missing-config-500).
	_, err = tg.api.VMConfig(tg.ctx(), tg.node, 102)
	tg.wantNotExist(err, 102)
}

func TestUPID_formatAndOwner(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	upid, err := tg.api.Start(tg.ctx(), tg.node, 100) // already running: a task error, still a UPID
	if err != nil {
		t.Fatal(err)
	}
	u, err := pveapi.ParseUPID(upid)
	if err != nil {
		t.Fatal(err)
	}
	if u.Node != tg.node || u.Type != "qmstart" || u.ID != "100" || u.User != sim.TokenID() ||
		fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", u.Node, u.PID, u.PStart, u.StartTime, u.Type, u.ID, u.User) != upid {
		t.Errorf("UPID %s parsed %+v", upid, u)
	}
	if ts, ok := sim.Task(upid); !ok || ts.VMID != 100 {
		t.Errorf("Task(%s) = %+v %v", upid, ts, ok)
	}
	_, err = tg.api.TaskStatus(tg.ctx(), tg.node, strings.Replace(upid, ":qmstart:", ":qmstop:", 1))
	if ae := apiErr(t, err); ae.Status != 400 || ae.Errors["upid"] != "no such task" {
		t.Errorf("unknown task: %+v", ae)
	}
}
