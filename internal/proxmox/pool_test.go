package proxmox

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestCreate_intoPool: the clone carries the pool, and the VM Create returns is in it.
func TestCreate_intoPool(t *testing.T) {
	h := newHarness(t)
	s := h.spec()
	s.Pool = "proxies"
	vm := h.create(s)
	clones := h.f.callsOf("Clone")
	if len(clones) != 1 || clones[0].Args["pool"] != "proxies" {
		t.Fatalf("clone calls %+v, want one with pool proxies", clones)
	}
	if vm.Pool != "proxies" || vm.PoolUnverified || h.f.vm(vm.ID.VMID).Pool != "proxies" {
		t.Errorf("VM pool %q (unverified %v), fake %q", vm.Pool, vm.PoolUnverified, h.f.vm(vm.ID.VMID).Pool)
	}
}

// TestCreate_refusedByPermissions: a clone Proxmox refuses with a 403 is Permanent, quotes
// Proxmox's text and says which privilege on which path, and nothing is made; a template the
// token cannot see is reported as that, not as a missing template, before any clone.
func TestCreate_refusedByPermissions(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(h *harness)
		pool     string
		contains []string
		clones   int
	}{
		{name: "no VM.Allocate on the VMID or the pool", pool: "edge",
			setup:    func(h *harness) { h.f.failNext("Clone", fixtureErr("err_permission_clone_allocate")) },
			contains: []string{fixture.MustLoad("err_permission_clone_allocate").Message(), "VM.Allocate on /pool/edge"}, clones: 1},
		{name: "no VM.Clone on the template",
			setup:    func(h *harness) { h.f.failNext("Clone", fixtureErr("err_permission_clone_template")) },
			contains: []string{fixture.MustLoad("err_permission_clone_template").Message(), "lacks VM.Clone on /vms/9001"}, clones: 1},
		{name: "pool missing", pool: "edge",
			setup:    func(h *harness) { h.f.failNext("Clone", fixtureErr("err_permission_pool_missing")) },
			contains: []string{"pool edge does not exist", "pveum pool add edge"}, clones: 1},
		{name: "template hidden from the token",
			setup:    func(h *harness) { h.f.hide(9001) },
			contains: []string{"Template 9001", "Permission check failed (/vms/9001, VM.Audit)", "lacks VM.Audit on /vms/9001"}, clones: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			s := h.spec()
			s.Pool = tc.pool
			err := h.createFails(s)
			assertClass(t, err, pveapi.Permanent)
			assertContains(t, err.Error(), tc.contains...)
			if !pveapi.IsForbidden(err) {
				t.Errorf("the 403 is not kept in the chain: %v", err)
			}
			if n := h.f.calls("Clone"); n != tc.clones {
				t.Errorf("%d clones, want %d", n, tc.clones)
			}
			if h.f.vmCount() != 0 || len(h.f.seeds()) != 0 {
				t.Errorf("something was made: %d guests, seeds %v", h.f.vmCount(), h.f.seeds())
			}
		})
	}
}

// TestHiddenVM_neverActedOn: a VMID the listing does not show and whose config Proxmox
// refuses (a VM outside the token's pool) is not gone, not free and not foreign: refresh,
// update, delete and import fail, quoting Proxmox's refusal, and nothing is written.
func TestHiddenVM_neverActedOn(t *testing.T) {
	for _, op := range []string{"get", "update", "delete", "import"} {
		t.Run(op, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			h.f.hide(testVMID0)
			var err error
			switch op {
			case "get":
				_, err = h.b.Get(h.ctx, testID, GetOptions{UID: testUID})
			case "update":
				err = h.b.Update(h.ctx, testID, Changes{UID: testUID, Cores: ptr(4)})
			case "delete":
				err = h.del(h.ctx, "pv1-1")
			case "import":
				_, err = h.b.FindByVMID(h.ctx, testVMID0)
			}
			assertClass(t, err, pveapi.Permanent)
			assertContains(t, err.Error(), "Permission check failed (/vms/105967, VM.Audit)", "lacks VM.Audit on /vms/105967")
			for _, m := range h.f.methods() {
				if !slices.Contains([]string{"ClusterResources", "VMIDFree", "VMConfig"}, m) {
					t.Errorf("%s made a %s call", op, m)
				}
			}
			if len(h.f.seeds()) != 1 {
				t.Errorf("seeds %v: the hidden VM's seed was touched", h.f.seeds())
			}
		})
	}
}

// TestUpdate_movesPool: a pool change is one PUT /pools, before anything else, and needs
// no restart; a VM already where it should be is fine; a refusal says what to grant and
// that a replacement is the way around.
func TestUpdate_movesPool(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Pool = "old" })
	if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Pool: ptr("new"), PriorPool: "old"}); err != nil {
		t.Fatal(err)
	}
	ups := h.f.callsOf("UpdatePool")
	if len(ups) != 1 || ups[0].Args["poolid"] != "new" || ups[0].Args["vms"] != "105967" || ups[0].Args["delete"] != "0" {
		t.Fatalf("pool updates %+v", ups)
	}
	if h.f.vm(testVMID0).Pool != "new" {
		t.Errorf("pool %q", h.f.vm(testVMID0).Pool)
	}
	for _, m := range []string{"SetVMConfig", "Stop", "Shutdown", "Start"} {
		if h.f.calls(m) != 0 {
			t.Errorf("a pool change made a %s call", m)
		}
	}
	// Out of the pool.
	if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Pool: ptr(""), PriorPool: "new"}); err != nil {
		t.Fatal(err)
	}
	if ups := h.f.callsOf("UpdatePool"); len(ups) != 2 || ups[1].Args["poolid"] != "new" || ups[1].Args["delete"] != "1" || h.f.vm(testVMID0).Pool != "" {
		t.Fatalf("pool updates %+v, pool %q", ups, h.f.vm(testVMID0).Pool)
	}
	// Already there (the listing hid the pool): no error.
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Pool = "new" })
	if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Pool: ptr("new"), PriorPool: ""}); err != nil {
		t.Errorf("already a member: %v", err)
	}
	// Refused.
	h.f.failNext("UpdatePool", fixtureErr("err_pool_update_forbidden"))
	err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Pool: ptr("edge"), PriorPool: "new", Cores: ptr(8)})
	assertClass(t, err, pveapi.Permanent)
	assertContains(t, err.Error(), fixture.MustLoad("err_pool_update_forbidden").Message(), "Pool.Allocate on /pool/edge",
		"Pool.Allocate on /pool/new", "terraform apply -replace")
	if h.f.calls("SetVMConfig") != 0 {
		t.Error("the cores change was written although the pool move failed first")
	}
}

// TestGet_pool: the listing's pool is the VM's; without Pool.Audit on the pool the state
// expects, Proxmox hides the field and the expected pool is kept, unverified; with it, an
// empty field means the VM left the pool.
func TestGet_pool(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Pool = "proxies" })
	vm, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID, Pool: "proxies"})
	if err != nil || vm.Pool != "proxies" || vm.PoolUnverified {
		t.Fatalf("pool %q unverified %v: %v", vm.Pool, vm.PoolUnverified, err)
	}
	if h.f.calls("Permissions") != 0 {
		t.Error("privileges read although the listing showed the pool")
	}
	h.f.hidePools = true
	h.f.privs = map[string][]string{"/pool/proxies": {"VM.Audit", "VM.Allocate"}}
	vm, err = h.b.Get(h.ctx, testID, GetOptions{UID: testUID, Pool: "proxies", FreshListing: true})
	if err != nil || vm.Pool != "proxies" || !vm.PoolUnverified {
		t.Errorf("without Pool.Audit: pool %q unverified %v: %v", vm.Pool, vm.PoolUnverified, err)
	}
	h.f.privs["/pool/proxies"] = append(h.f.privs["/pool/proxies"], "Pool.Audit")
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Pool = "" })
	vm, err = h.b.Get(h.ctx, testID, GetOptions{UID: testUID, Pool: "proxies", FreshListing: true})
	if err != nil || vm.Pool != "" || vm.PoolUnverified {
		t.Errorf("left the pool: pool %q unverified %v: %v", vm.Pool, vm.PoolUnverified, err)
	}
}

// TestCheck_missingPrivilegesNamed: the health check compares what the provider needs (the
// templates, the pool, the storages, the bridges the templates and the provider use) with
// the token's effective privileges, and names each missing one with its path.
func TestCheck_missingPrivilegesNamed(t *testing.T) {
	f := newCheckFake(t)
	f.config = func(_ context.Context, _ string, vmid int) (map[string]string, error) {
		if vmid == 9000 {
			// Without its cloud-init drive, which would make it unusable (a refused template
			// needs no privilege its config names): its net0 has tag=4.
			cfg := fixtureConfig("vm_config_template_9000")
			delete(cfg, "ide2")
			return cfg, nil
		}
		return fixtureConfig("vm_config_template_9001"), nil
	}
	vmPriv := []string{"VM.Allocate", "VM.Audit", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Disk", "VM.Config.Memory",
		"VM.Config.Network", "VM.Config.Options", "VM.PowerMgmt", "VM.GuestAgent.Audit", "Pool.Audit"}
	granted := map[string][]string{
		"/vms/9001":                     {"VM.Audit", "VM.Clone"},
		"/vms/9000":                     {"VM.Audit"},
		"/pool/proxies":                 vmPriv,
		"/storage/proxy-seeds":          {"Datastore.AllocateTemplate", "Datastore.Audit"},
		"/storage/local-lvm":            {"Datastore.AllocateSpace"},
		"/sdn/zones/localnetwork/vmbr0": {"SDN.Use"},
	}
	f.perms = func(_ context.Context, path string) (map[string]bool, error) {
		out := map[string]bool{}
		for _, p := range granted[path] {
			out[p] = false
		}
		return out, nil
	}
	b := ckBackend(f)
	b.cfg.Pool = "proxies"
	b.cfg.Bridge = "vmbr1"
	got := b.CheckDetailed(context.Background())[0]
	want := []string{
		"VM.Clone on /vms/9000",
		"Datastore.Allocate on /storage/proxy-seeds",
		"SDN.Use on /sdn/zones/localnetwork/vmbr0/4",
		"SDN.Use on /sdn/zones/localnetwork/vmbr1",
	}
	if got.Reason != ReasonForbidden || got.Ready || !slices.Equal(got.MissingPrivileges, want) {
		t.Fatalf("reason %s, missing %q, want %q (%s)", got.Reason, got.MissingPrivileges, want, got.Message)
	}
	assertContains(t, got.Message, "proxy-operator@pve!tf", "VM.Clone on /vms/9000 (to read and clone template 9000)",
		"Datastore.Allocate on /storage/proxy-seeds (to upload and delete the seed ISOs)", "setup guide")
	for _, path := range []string{"/pool/proxies", "/storage/local-lvm", "/sdn/zones/localnetwork/vmbr0"} {
		if f.n("Permissions "+path) != 1 {
			t.Errorf("%s asked %d times, want once", path, f.n("Permissions "+path))
		}
	}
	if f.n("Permissions /vms") != 0 {
		t.Error("/vms asked although a pool is set")
	}

	// Without a pool the VM privileges are needed on /vms, propagated; the agent's any
	// of two.
	granted["/vms"] = []string{"VM.Allocate", "VM.Audit", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Disk", "VM.Config.Memory",
		"VM.Config.Network", "VM.Config.Options", "VM.PowerMgmt"}
	b.cfg.Pool = ""
	got = b.CheckDetailed(context.Background())[0]
	if !slices.Contains(got.MissingPrivileges, "VM.Allocate on /vms") ||
		!slices.Contains(got.MissingPrivileges, "VM.GuestAgent.Audit or VM.GuestAgent.Unrestricted on /vms") {
		t.Errorf("unpropagated /vms grants not reported: %q", got.MissingPrivileges)
	}
}

// TestCheck_refusedReadNamesThePrivilege: a read of the node's own round refused with a 403
// (Sys.Audit on the node) lists that privilege too.
func TestCheck_refusedReadNamesThePrivilege(t *testing.T) {
	f := newCheckFake(t)
	f.nodeStatus = func(context.Context, string) (pveapi.NodeStatus, error) {
		return pveapi.NodeStatus{}, &pveapi.APIError{Status: 403, Message: "Permission check failed (/nodes/pv1-1, Sys.Audit)"}
	}
	got := ckBackend(f).CheckDetailed(context.Background())[0]
	if got.Reason != ReasonForbidden || !slices.Equal(got.MissingPrivileges, []string{"Sys.Audit on /nodes/pv1-1"}) {
		t.Errorf("reason %s, missing %q: %s", got.Reason, got.MissingPrivileges, got.Message)
	}
	f = newCheckFake(t)
	f.storageStatus = func(context.Context, string, string) (pveapi.StorageStatus, error) {
		return pveapi.StorageStatus{}, &pveapi.APIError{Status: 403, Message: "Permission check failed (/storage/proxy-seeds, Datastore.Audit|Datastore.AllocateSpace)"}
	}
	got = ckBackend(f).CheckDetailed(context.Background())[0]
	if !slices.Equal(got.MissingPrivileges, []string{"Datastore.Audit or Datastore.AllocateSpace on /storage/proxy-seeds"}) {
		t.Errorf("missing %q", got.MissingPrivileges)
	}
}

// TestCheck_privilegeRoundFailure: a failed privileges read is the check's failure, named.
func TestCheck_privilegeRoundFailure(t *testing.T) {
	f := newCheckFake(t)
	f.perms = func(context.Context, string) (map[string]bool, error) { return nil, ckAPIErr("err_not_implemented") }
	got := ckBackend(f).CheckDetailed(context.Background())[0]
	if got.Reason != ReasonAPIError || !strings.Contains(got.Message, "reading the API token's privileges") {
		t.Errorf("reason %s: %s", got.Reason, got.Message)
	}
}

// TestCreate_poolSkipsHiddenVMIDs: with a pool, a VMID the listing does not show but a guest
// holds (one the pool-scoped token may not see) is skipped without a clone onto it.
func TestCreate_poolSkipsHiddenVMIDs(t *testing.T) {
	h := newHarness(t)
	h.f.addVM(&fakeVM{VMID: testVMID0, Name: "someone-else", Status: "running"})
	h.f.hide(testVMID0)
	s := h.spec()
	s.Pool = "proxies"
	vm := h.create(s)
	if vm.ID.VMID != testVMID1 {
		t.Errorf("VMID %d, want the next probe %d", vm.ID.VMID, testVMID1)
	}
	for _, c := range h.f.callsOf("Clone") {
		if c.Args["newid"] == "105967" {
			t.Error("cloned onto the hidden guest's VMID")
		}
	}
	if v := h.f.vm(testVMID0); v.Name != "someone-else" || v.Status != "running" {
		t.Errorf("the hidden guest changed: %+v", v)
	}
}

// TestDelete_hiddenButFreeVMIDIsGone: a VMID no guest holds is gone for a token that may not
// audit it (a tainted create whose clone was refused): the destroy succeeds without a write.
func TestDelete_hiddenButFreeVMIDIsGone(t *testing.T) {
	h := newHarness(t)
	h.f.hide(testVMID0)
	if err := h.del(h.ctx, "pv1-1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for _, m := range h.f.methods() {
		if m == "Destroy" || m == "Stop" {
			t.Errorf("a %s call for a VMID without a guest", m)
		}
	}
}
