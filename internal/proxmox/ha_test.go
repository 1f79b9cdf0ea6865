package proxmox

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// haPowerAPI is the fake with what Proxmox does to the power requests of an HA-managed VM
// (every HA state but ignored): the start, stop and shutdown endpoints run a hastart or
// hastop task that only hands the request over and ends (qemu-server
// src/PVE/API2/Qemu.pm:3631-3642, 3750-3768, 3932-3945); the HA manager sets the requested
// state (a stop: pve-ha-manager src/PVE/HA/Manager.pm:1422-1437) and its LRM changes the VM's
// status lag status reads later. linger keeps a removed resource listed in HAStatus for that
// many reads (the CRM drops it at its next round).
type haPowerAPI struct {
	*fakeAPI
	lag     int
	pending map[int]struct {
		status string
		reads  int
	}
	linger map[string]int
}

func newHAPowerAPI(f *fakeAPI, lag int) *haPowerAPI {
	return &haPowerAPI{fakeAPI: f, lag: lag, linger: map[string]int{}, pending: map[int]struct {
		status string
		reads  int
	}{}}
}

// managed reports an HA resource of vmid whose state is not ignored.
func (a *haPowerAPI) managed(vmid int) bool {
	r, ok := a.haResource(pveapi.HASID(vmid))
	return ok && r.State != HAStateIgnored
}

// handOver records the call, sets the requested state, and schedules the LRM's action.
func (a *haPowerAPI) handOver(ctx context.Context, method, node string, vmid int, typ, state, status string) (string, error) {
	if err := a.enter(ctx, fakeCall{Method: method, Node: node, VMID: vmid}); err != nil {
		return "", err
	}
	r, _ := a.haResource(pveapi.HASID(vmid))
	r.State = state
	a.putHAResource(r)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending[vmid] = struct {
		status string
		reads  int
	}{status, a.lag}
	return a.newTask(node, typ, strconv.Itoa(vmid), nil), nil
}

func (a *haPowerAPI) Start(ctx context.Context, node string, vmid int) (string, error) {
	if !a.managed(vmid) {
		return a.fakeAPI.Start(ctx, node, vmid)
	}
	return a.handOver(ctx, "Start", node, vmid, "hastart", HAStateStarted, "running")
}

func (a *haPowerAPI) Stop(ctx context.Context, node string, vmid int) (string, error) {
	if !a.managed(vmid) {
		return a.fakeAPI.Stop(ctx, node, vmid)
	}
	return a.handOver(ctx, "Stop", node, vmid, "hastop", HAStateStopped, "stopped")
}

func (a *haPowerAPI) Shutdown(ctx context.Context, node string, vmid int, p pveapi.ShutdownParams) (string, error) {
	if !a.managed(vmid) {
		return a.fakeAPI.Shutdown(ctx, node, vmid, p)
	}
	return a.handOver(ctx, "Shutdown", node, vmid, "hastop", HAStateStopped, "stopped")
}

func (a *haPowerAPI) VMStatus(ctx context.Context, node string, vmid int) (pveapi.VMStatus, error) {
	a.mu.Lock()
	if p, ok := a.pending[vmid]; ok {
		if p.reads--; p.reads < 0 {
			if v := a.vms[vmid]; v != nil {
				v.Status, v.QMP = p.status, map[string]string{"running": "running"}[p.status]
			}
			delete(a.pending, vmid)
		} else {
			a.pending[vmid] = p
		}
	}
	a.mu.Unlock()
	return a.fakeAPI.VMStatus(ctx, node, vmid)
}

func (a *haPowerAPI) DeleteHAResource(ctx context.Context, sid string, purge bool) error {
	if err := a.fakeAPI.DeleteHAResource(ctx, sid, purge); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.linger[sid] = a.lag
	return nil
}

func (a *haPowerAPI) HAStatus(ctx context.Context) ([]pveapi.HAStatusEntry, error) {
	st, err := a.fakeAPI.HAStatus(ctx)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for sid, n := range a.linger {
		if n > 0 {
			a.linger[sid] = n - 1
			st = append(st, pveapi.HAStatusEntry{ID: "service:" + sid, Type: "service", SID: sid, State: "stopped", Status: sid + " (deleting)"})
		}
	}
	return st, nil
}

// haHarness is a harness whose backend talks to haPowerAPI.
func haHarness(t *testing.T, lag int, nodes ...string) (*harness, *haPowerAPI) {
	h := newHarness(t, nodes...)
	a := newHAPowerAPI(h.f, lag)
	h.b.api = a
	return h, a
}

// haCalls are the HA calls of the log, in order.
func haCalls(f *fakeAPI) []fakeCall {
	var out []fakeCall
	for _, c := range f.log() {
		if slices.Contains([]string{"HAResource", "HAResources", "CreateHAResource", "UpdateHAResource", "DeleteHAResource"}, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// callIndex is the index in the log of the last call of method (-1: none).
func callIndex(f *fakeAPI, method string) int {
	i := -1
	for j, c := range f.log() {
		if c.Method == method {
			i = j
		}
	}
	return i
}

func wantHA(t *testing.T, f *fakeAPI, vmid int, want HA) {
	t.Helper()
	r, ok := f.haResource(pveapi.HASID(vmid))
	if !ok {
		t.Fatalf("no HA resource %s", pveapi.HASID(vmid))
	}
	if got := haFromResource(r); got != want {
		t.Fatalf("HA resource %s = %+v, want %+v", r.SID, got, want)
	}
}

func TestHA_createAddsTheResourceAfterTheLastStep(t *testing.T) {
	h := newHarness(t)
	s := h.spec()
	want := HA{State: HAStateStarted, MaxRestart: 3, MaxRelocate: 2, Failback: false}
	s.HA = &want
	vm := h.create(s)
	wantHA(t, h.f, vm.ID.VMID, want)
	if vm.HA == nil || *vm.HA != want || !vm.HARead {
		t.Fatalf("Create's VM.HA = %+v (read %v), want %+v", vm.HA, vm.HARead, want)
	}
	// The create's last step is the mark's finish (a config write): HA only after it.
	if c, s := callIndex(h.f, "CreateHAResource"), callIndex(h.f, "SetVMConfig"); c < s {
		t.Fatalf("CreateHAResource at %d, before the last config write at %d: %v", c, s, h.f.methods())
	}
	got := h.f.callsOf("CreateHAResource")[0].Args
	if got["sid"] != pveapi.HASID(vm.ID.VMID) || got["max_restart"] != "3" || got["max_relocate"] != "2" || got["failback"] != "false" || got["state"] != "started" {
		t.Fatalf("CreateHAResource args %v", got)
	}
}

func TestHA_createWithoutHAAsksNothingOfHA(t *testing.T) {
	h := newHarness(t)
	h.create(h.spec())
	if c := haCalls(h.f); len(c) != 0 {
		t.Fatalf("HA calls without ha: %v", c)
	}
}

func TestHA_createFailingAtItsLastStepAddsNoResource(t *testing.T) {
	h := newHarness(t)
	s := h.spec()
	s.HA = ptr(DefaultHA())
	// Another resource's uid appears in the mark before the last step: not this resource's VM.
	h.f.onCall("SetVMConfig", func(_ context.Context, c fakeCall) error {
		if _, ok := c.Args["digest"]; ok {
			h.f.mutate(c.VMID, func(v *fakeVM) {
				v.Config["description"] = MarkLines{UID: otherUID, CreatedAt: h.clock.Now()}.Format()
			})
		}
		return nil
	})
	_ = h.createFails(s)
	if c := haCalls(h.f); len(c) != 0 {
		t.Fatalf("HA calls for a VM that is not this resource's: %v", c)
	}
}

func TestHA_updateChangesInPlaceAndRecreatesAMissingOne(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.putHAResource(pveapi.HAResource{SID: pveapi.HASID(testVMID0), State: "started"})
	want := HA{State: HAStateStarted, MaxRestart: 5, MaxRelocate: 0, Failback: true}
	if err := h.b.Update(h.ctx, testID, withUID(Changes{HA: &HAChange{Set: &want}})); err != nil {
		t.Fatal(err)
	}
	wantHA(t, h.f, testVMID0, want)
	if n := h.f.calls("CreateHAResource"); n != 0 {
		t.Fatalf("CreateHAResource called %d times for an existing resource", n)
	}
	// Removed outside Terraform: the update makes it again.
	if err := h.f.DeleteHAResource(h.ctx, pveapi.HASID(testVMID0), false); err != nil {
		t.Fatal(err)
	}
	if err := h.b.Update(h.ctx, testID, withUID(Changes{HA: &HAChange{Set: &want}})); err != nil {
		t.Fatal(err)
	}
	wantHA(t, h.f, testVMID0, want)
}

func TestHA_updateRefusesABadStateBeforeAnyWrite(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	err := h.b.Update(h.ctx, testID, withUID(Changes{Cores: ptr(4), HA: &HAChange{Set: &HA{State: "disabled"}}}))
	assertClass(t, err, pveapi.Permanent)
	if n := h.f.calls("SetVMConfig"); n != 0 || len(haCalls(h.f)) != 0 {
		t.Fatalf("writes before the refusal: %v", h.f.methods())
	}
}

func TestHA_updateRemovesWithoutPurgeBeforeOtherChanges(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	sid := pveapi.HASID(testVMID0)
	h.f.putHAResource(pveapi.HAResource{SID: sid, State: "started"})
	h.f.putHAResource(pveapi.HAResource{SID: "vm:42", State: "started"})
	h.f.putHARule(pveapi.HARule{Rule: "pair", Type: "resource-affinity", Affinity: "negative", Resources: "vm:42," + sid})
	if err := h.b.Update(h.ctx, testID, withUID(Changes{Note: ptr("changed"), HA: &HAChange{Remove: true}})); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.f.haResource(sid); ok {
		t.Fatal("HA resource still there after its removal")
	}
	// No purge (decision: ha-placement): a rule is its owner's, and stays as it was.
	if r, _ := h.f.haRule("pair"); r.Resources != "vm:42,"+sid {
		t.Fatalf("rule resources %q after the removal, want vm:42,%s (unchanged)", r.Resources, sid)
	}
	d := h.f.callsOf("DeleteHAResource")
	if len(d) != 1 || d[0].Args["purge"] != "false" {
		t.Fatalf("DeleteHAResource calls %v, want one without purge", d)
	}
	if w := callIndex(h.f, "SetVMConfig"); w < 0 || callIndex(h.f, "DeleteHAResource") > w {
		t.Fatalf("HA removed after the config write: %v", h.f.methods())
	}
}

func TestHA_foreignVMIsNeverTouched(t *testing.T) {
	h := newHarness(t)
	h.addFinished(testVMID0, testName, otherUID) // another resource's VM at the VMID
	sid := pveapi.HASID(testVMID0)
	foreign := pveapi.HAResource{SID: sid, State: "started", Comment: "by hand"}
	h.f.putHAResource(foreign)
	err := h.b.Update(h.ctx, testID, withUID(Changes{HA: &HAChange{Set: &HA{State: HAStateStopped, MaxRestart: 9}}}))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of another resource's VM: %v, want ErrNotFound", err)
	}
	if err := h.b.Update(h.ctx, testID, withUID(Changes{HA: &HAChange{Remove: true}})); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update of another resource's VM: %v, want ErrNotFound", err)
	}
	if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, HA: true}); err != nil {
		t.Fatal(err)
	}
	for _, c := range haCalls(h.f) {
		if c.Method != "HAResource" && c.Method != "HAResources" {
			t.Fatalf("HA write for a VM that is not this resource's: %+v", c)
		}
	}
	if r, ok := h.f.haResource(sid); !ok || r.Comment != "by hand" || r.State != "started" {
		t.Fatalf("foreign HA resource changed: %+v (present %v)", r, ok)
	}
	if h.f.vm(testVMID0) == nil {
		t.Fatal("the foreign VM was destroyed")
	}
}

func TestHA_deleteTakesTheVMOutOfHAAndWaitsFirst(t *testing.T) {
	h, _ := haHarness(t, 2)
	h.ourRunningVM(testVMID0, testName)
	sid := pveapi.HASID(testVMID0)
	h.f.putHAResource(pveapi.HAResource{SID: sid, State: "started"})
	h.f.putHARule(pveapi.HARule{Rule: "alone", Type: "node-affinity", Nodes: "pv1-1", Resources: sid})
	err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, HA: true,
		Seed: seedVolID(fakeISOStorage, seedFile(testName, testUID))})
	if err != nil {
		t.Fatal(err)
	}
	if h.f.vm(testVMID0) != nil {
		t.Fatal("VM left")
	}
	if _, ok := h.f.haResource(sid); ok {
		t.Fatal("HA resource left")
	}
	if r, ok := h.f.haRule("alone"); !ok || r.Resources != sid {
		t.Fatalf("the rule naming the VM was changed: %+v (present %v); a destroy writes no rule", r, ok)
	}
	if s := h.f.seeds(); len(s) != 0 {
		t.Fatalf("seeds left: %v", s)
	}
	// Out of HA, then the status polled until HA let go (2 reads still list it), then the stop.
	del, stop := callIndex(h.f, "DeleteHAResource"), callIndex(h.f, "Stop")
	if del < 0 || del > stop {
		t.Fatalf("DeleteHAResource at %d, Stop at %d: %v", del, stop, h.f.methods())
	}
	if n := h.f.calls("HAStatus"); n != 3 {
		t.Fatalf("HAStatus read %d times, want 3 (listed twice, then gone)", n)
	}
	if d := h.f.callsOf("DeleteHAResource")[0]; d.Args["purge"] != "false" {
		t.Fatalf("DeleteHAResource with purge: %v", d.Args)
	}
}

func TestHA_deleteWithoutResourceSkipsTheWait(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, HA: true}); err != nil {
		t.Fatal(err)
	}
	if n := h.f.calls("HAStatus"); n != 0 {
		t.Fatalf("HAStatus read %d times for a VM with no HA resource", n)
	}
	if h.f.vm(testVMID0) != nil {
		t.Fatal("VM left")
	}
}

// A stop and a start of an HA-managed VM end only when the HA manager has done them: the
// hastop and hastart tasks end at once.
func TestHA_stopAndStartHandedToHAAreWaitedFor(t *testing.T) {
	h, _ := haHarness(t, 3)
	h.ourRunningVM(testVMID0, testName)
	sid := pveapi.HASID(testVMID0)
	h.f.putHAResource(pveapi.HAResource{SID: sid, State: "started"})
	if err := h.b.Update(h.ctx, testID, withUID(Changes{Stop: true})); err != nil {
		t.Fatal(err)
	}
	if v := h.f.vm(testVMID0); v.Status != "stopped" {
		t.Fatalf("after the stop handed to HA: status %s, want stopped", v.Status)
	}
	if r, _ := h.f.haResource(sid); r.State != HAStateStopped {
		t.Fatalf("HA requested state %q after a stop, want stopped", r.State)
	}
	if n := h.f.calls("Stop"); n != 0 {
		t.Fatalf("a hard stop (%d) after the shutdown handed to HA", n)
	}
	if err := h.b.Update(h.ctx, testID, withUID(Changes{Start: true})); err != nil {
		t.Fatal(err)
	}
	if v := h.f.vm(testVMID0); v.Status != "running" {
		t.Fatalf("after the start handed to HA: status %s, want running", v.Status)
	}
	if r, _ := h.f.haResource(sid); r.State != HAStateStarted {
		t.Fatalf("HA requested state %q after a start, want started", r.State)
	}
}

func TestHA_powerActionStopHandedToHAIsWaitedFor(t *testing.T) {
	h, _ := haHarness(t, 3)
	h.ourRunningVM(testVMID0, testName)
	h.f.putHAResource(pveapi.HAResource{SID: pveapi.HASID(testVMID0), State: "started"})
	if _, err := h.b.Power(h.ctx, testID, PowerOptions{Op: PowerStop, UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if v := h.f.vm(testVMID0); v.Status != "stopped" {
		t.Fatalf("after the power action's stop: status %s, want stopped", v.Status)
	}
}

func TestHA_getReadsTheResourceWhenAsked(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	vm, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID, HA: true})
	if err != nil {
		t.Fatal(err)
	}
	if !vm.HARead || vm.HA != nil {
		t.Fatalf("no HA resource: HARead %v, HA %+v", vm.HARead, vm.HA)
	}
	h.f.putHAResource(pveapi.HAResource{SID: pveapi.HASID(testVMID0), State: "enabled"})
	vm, err = h.b.Get(h.ctx, testID, GetOptions{UID: testUID, HA: true})
	if err != nil {
		t.Fatal(err)
	}
	if vm.HA == nil || *vm.HA != DefaultHA() {
		t.Fatalf("HA %+v, want Proxmox's defaults (enabled is started)", vm.HA)
	}
	n := h.f.calls("HAResource")
	if _, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if h.f.calls("HAResource") != n {
		t.Fatal("HA read without GetOptions.HA")
	}
	h.f.failNext("HAResource", &pveapi.APIError{Status: 403, Message: "Permission check failed (/, Sys.Audit)"})
	vm, err = h.b.Get(h.ctx, testID, GetOptions{UID: testUID, HA: true})
	if err != nil {
		t.Fatal(err)
	}
	if !vm.HAUnread || vm.HARead {
		t.Fatalf("a refused read: HAUnread %v, HARead %v", vm.HAUnread, vm.HARead)
	}
}
