package pvesim_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Fault injection and the admin functions (simulator only).

func simTarget(t *testing.T, opts pvesim.Options) (*target, *pvesim.Sim) {
	t.Helper()
	if realHost() {
		t.Skip("simulator admin functions")
	}
	tg := newTarget(t, opts)
	tg.parallel()
	return tg, tg.sim
}

func TestFault_statusForTheNextNCallsOfOneVM(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	id := sim.InjectFault(pvesim.Fault{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/config", VMID: 100, Times: 2, Status: 500, Message: "pvesim test fault"})
	if id == "" {
		t.Fatal("no fault id")
	}
	if _, err := tg.api.VMConfig(tg.ctx(), tg.node, 9001); err != nil {
		t.Fatalf("another VM is hit: %v", err)
	}
	for i := range 2 {
		_, err := tg.api.VMConfig(tg.ctx(), tg.node, 100)
		if ae := apiErr(t, err); ae.Status != 500 || ae.Message != "pvesim test fault" {
			t.Fatalf("call %d: %+v", i, ae)
		}
	}
	if _, err := tg.api.VMConfig(tg.ctx(), tg.node, 100); err != nil {
		t.Fatalf("third call: %v", err)
	}
	if f := sim.Faults(); len(f) != 0 {
		t.Errorf("spent fault still registered: %+v", f)
	}
}

func TestFault_globPathAndRemove(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	id := sim.InjectFault(pvesim.Fault{Path: "/nodes/*/qemu/100/*", Status: 403, Message: "Permission check failed (/vms/100, VM.Audit)"})
	// '*' stays within a segment: status/current is two segments deep.
	if _, err := tg.api.VMStatus(tg.ctx(), tg.node, 100); err != nil {
		t.Fatalf("status/current: %v", err)
	}
	_, err := tg.api.VMConfig(tg.ctx(), tg.node, 100)
	if !pveapi.IsForbidden(err) {
		t.Fatalf("config: %v", err)
	}
	if !sim.RemoveFault(id) || sim.RemoveFault(id) {
		t.Fatal("RemoveFault")
	}
	if _, err := tg.api.VMConfig(tg.ctx(), tg.node, 100); err != nil {
		t.Fatal(err)
	}
}

func TestFault_dropClosesTheConnection(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	sim.InjectFault(pvesim.Fault{Path: "/version", Drop: true, Times: 1})
	_, err := tg.api.Version(tg.ctx())
	var ae *pveapi.APIError
	if err == nil || errors.As(err, &ae) {
		t.Fatalf("want a transport error, got %v", err)
	}
	if _, err := tg.api.Version(tg.ctx()); err != nil {
		t.Fatalf("after the drop: %v", err)
	}
}

func TestFault_latencyIsAdded(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	sim.InjectFault(pvesim.Fault{Path: "/version", Latency: 120 * time.Millisecond, Times: 1})
	start := time.Now()
	if _, err := tg.api.Version(tg.ctx()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 120*time.Millisecond {
		t.Errorf("answered after %s", d)
	}
}

func TestFault_probabilityIsReproducibleFromItsSeed(t *testing.T) {
	outcomes := func() []bool {
		tg := newTarget(t, pvesim.Options{})
		tg.sim.InjectFault(pvesim.Fault{Path: "/version", Probability: 0.5, Seed: 42, Status: 500, Message: "flaky"})
		var out []bool
		for range 30 {
			_, err := tg.api.Version(tg.ctx())
			out = append(out, err != nil)
		}
		return out
	}
	if realHost() {
		t.Skip("simulator admin functions")
	}
	a, b := outcomes(), outcomes()
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different outcomes:\n%v\n%v", a, b)
	}
	n := 0
	for _, x := range a {
		if x {
			n++
		}
	}
	if n == 0 || n == len(a) {
		t.Errorf("%d of %d calls failed with probability 0.5", n, len(a))
	}
}

func TestFault_failedCloneTaskRemovesItsVM(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	sim.InjectFault(pvesim.Fault{Path: "/nodes/{node}/qemu/{vmid}/clone", TaskExit: "clone failed: pvesim", Times: 1})
	upid, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("x"))
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != "clone failed: pvesim" || pveapi.TaskSucceeded(st.ExitStatus) {
		t.Fatalf("ended %q", st.ExitStatus)
	}
	_, err = tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	tg.wantNotExist(err, tg.vmid)
	tg.cloned() // the VMID is free again
}

func TestFault_hungTaskHoldsTheConfigLock(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	tg.cloned()
	sim.InjectFault(pvesim.Fault{Path: "/nodes/{node}/qemu/{vmid}/status/start", TaskHang: true, Times: 1})
	upid, err := tg.api.Start(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	err = tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": "3"})
	if ae := apiErr(t, err); ae.Status != 500 || !strings.HasPrefix(ae.Message, "can't lock file '/var/lock/qemu-server/lock-") {
		t.Errorf("config write behind a hung task: %+v", ae)
	}
	if st, _ := tg.api.TaskStatus(tg.ctx(), tg.node, upid); st.Status != "running" {
		t.Errorf("hung task %+v", st)
	}
	vm, _ := sim.VM(tg.vmid)
	if vm.TaskHolding != upid {
		t.Errorf("State says %q holds the lock", vm.TaskHolding)
	}
}

func TestFault_lockAppearsOnTheVM(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	tg.cloned()
	sim.InjectFault(pvesim.Fault{Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/config", Lock: "backup", LockFor: 300 * time.Second, Times: 1})
	err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": "3"})
	if lock, ok := pveapi.LockOf(err); !ok || lock != "backup" {
		t.Fatalf("want VM is locked (backup), got %v", err)
	}
	if e, _ := tg.resource(tg.vmid); e["lock"] != "backup" {
		t.Errorf("listed %v", e)
	}
	tg.eventually("the backup lock to clear", func() bool {
		return tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": "3"}) == nil
	})
}

func TestFault_unreachableNodeFromTheAdminAPI(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{Nodes: []string{"pve1", "pve2"}})
	if err := sim.AddVM(pvesim.VMSpec{VMID: 300, Node: "pve2", Name: "far", Power: "running"}); err != nil {
		t.Fatal(err)
	}
	tg.admin("POST", "/nodes/pve2/down", nil, nil)
	if _, err := tg.api.NodeStatus(tg.ctx(), "pve2"); !pveapi.IsProxyFailure(err) {
		t.Errorf("down node answered %v", err)
	}
	if _, err := tg.api.NodeStatus(tg.ctx(), "pve1"); err != nil {
		t.Errorf("the other node: %v", err)
	}
	e, _ := tg.resource(300)
	if e["status"] != "unknown" || e["name"] != "far" {
		t.Errorf("guest of the down node listed %v", e)
	}
	if st := sim.State(); st.Nodes[1].Online {
		t.Errorf("state nodes %+v", st.Nodes)
	}
	f := fixture.MustLoad("err_595")
	_, err := tg.api.VMConfig(tg.ctx(), "pve2", 300)
	if ae := apiErr(t, err); ae.Status != f.Status || ae.Message != f.Message() {
		t.Errorf("config on the down node: %+v", ae)
	}
}
