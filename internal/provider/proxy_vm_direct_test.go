package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Tests of proxy_vm's CRUD methods called directly (no terraform binary) over an
// in-process simulator, for what the acceptance tests cannot arrange or count.

const (
	directUID      = "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10"
	otherSpaceUID  = "6f1d2c3b-aaaa-4bbb-8ccc-123456789abc"
	directTemplate = "debian-13"
)

// directEnv is a simulator, a backend over it and a proxy_vm resource using that backend.
type directEnv struct {
	sim *pvesim.Sim
	b   *proxmox.Backend
	r   *proxyVMResource
	c   *cluster
	ctx context.Context
}

func newDirectEnv(t *testing.T, opts pvesim.Options) *directEnv {
	t.Helper()
	sim := pvesim.NewForTest(t, opts)
	client, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	b := proxmox.New(client, proxmox.Config{Nodes: sim.Nodes, ISOStorage: sim.ISOStorage})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	env := &testEnv{Sim: sim, Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM,
		Nodes: sim.Nodes, ISOStorage: sim.ISOStorage, Templates: sim.Templates}
	return &directEnv{sim: sim, b: b, r: &proxyVMResource{data: &providerData{backend: b}}, c: newCluster(t, env), ctx: ctx}
}

// create makes a VM of uid with the backend (seed ISO and all).
func (e *directEnv) create(t *testing.T, name, uid string) proxmox.VM {
	t.Helper()
	vm, err := e.b.Create(e.ctx, proxmox.Spec{
		Name: name, UID: uid, Node: e.sim.Nodes[0], TemplateVMID: e.sim.Templates[directTemplate],
		Cores: 1, MemoryMiB: 512, UserData: []byte("#cloud-config\n"), CreatedAt: time.Now(),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return vm
}

// state is a proxy_vm state naming vm with uid.
func (e *directEnv) state(t *testing.T, vm proxmox.VM, uid string) tfsdk.State {
	t.Helper()
	sch := proxyVMSchema(e.ctx)
	typ, ok := sch.Type().TerraformType(e.ctx).(tftypes.Object)
	if !ok {
		t.Fatal("the schema is not an object")
	}
	nulls := map[string]tftypes.Value{}
	for k, at := range typ.AttributeTypes {
		nulls[k] = tftypes.NewValue(at, nil)
	}
	st := tfsdk.State{Schema: sch, Raw: tftypes.NewValue(typ, nulls)}
	m := proxyVMModel{}
	if diags := st.Get(e.ctx, &m); diags.HasError() { // typed nulls everywhere
		t.Fatal(diags)
	}
	m.ID = types.StringValue(vm.ID.String())
	m.Name, m.UID, m.Node = types.StringValue(vm.ID.Name), types.StringValue(uid), types.StringValue(vm.Node)
	m.VMID = types.Int64Value(int64(vm.ID.VMID))
	if diags := st.Set(e.ctx, &m); diags.HasError() {
		t.Fatal(diags)
	}
	return st
}

// TestSettle_sharesTheListing: the wait after an update's restart polls status/current and
// the agent, but lists the cluster once (Update invalidated the shared listing, so that
// one is fresh), not once per poll: at 100 VMs that was 801 listings per update.
func TestSettle_sharesTheListing(t *testing.T) {
	e := newDirectEnv(t, pvesim.Options{
		TemplateAgent: true,
		// About 0.6 s of wall time from the start to the agent answering: several polls.
		Durations: pvesim.Durations{AgentBoot: 600 * time.Second},
	})
	vm := e.create(t, "settle-1", directUID)
	// A memory change on a running VM restarts it: the agent answers again only after a boot.
	if err := e.b.Update(e.ctx, vm.ID, proxmox.Changes{MemoryMiB: ptrInt(1024), UID: directUID}); err != nil {
		t.Fatal(err)
	}
	e.sim.ResetStats()
	start := time.Now()
	got, err := e.r.settle(e.ctx, vm.ID, proxmox.Changes{UID: directUID}, "", true)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if got.IP == "" || got.State != proxmox.StateRunning {
		t.Fatalf("settled at state %q, IP %q", got.State, got.IP)
	}
	st := e.sim.Stats()
	agent := 0
	for k, n := range st {
		if strings.Contains(k, "/agent/") {
			agent += n
		}
	}
	if agent < 3 {
		t.Fatalf("%d agent polls: the wait was too short to tell (%v)", agent, st)
	}
	// One listing per ListingTTL (2 s) at most; a slow machine may cross one boundary.
	want := 1 + int(elapsed/proxmox.DefaultBudgets().ListingTTL)
	if n := st["GET /cluster/resources"]; n > want || n >= agent {
		t.Errorf("%d listings over %d polls in %s, want %d (the shared listing): %v", n, agent, elapsed, want, st)
	}
}

// TestProxyVM_anotherUIDIsNotOurs: the VMID in the state holds a VM with our name and a
// mark, but of another uid (another workspace, another uid_namespace, cloned onto the
// VMID we had saved before our clone was refused). Read keeps the resource in the state
// marked deleted (so that the plan replaces it, decision: drift-gone); Delete succeeds
// without touching the VM or its seed ISO. With the state's own uid both act as usual.
func TestProxyVM_anotherUIDIsNotOurs(t *testing.T) {
	e := newDirectEnv(t, pvesim.Options{TemplateAgent: true})
	const name = "uid-1"
	vm := e.create(t, name, otherSpaceUID) // the other workspace's VM, seed and all
	ours := e.state(t, vm, directUID)

	read := resource.ReadResponse{State: ours}
	e.r.Read(e.ctx, resource.ReadRequest{State: ours}, &read)
	var got proxyVMModel
	if read.Diagnostics.HasError() || read.State.Raw.IsNull() {
		t.Fatalf("Read of a VM of another uid: removed %v, diagnostics %v", read.State.Raw.IsNull(), read.Diagnostics)
	}
	if read.State.Get(e.ctx, &got); got.Status.ValueString() != statusDeleted {
		t.Errorf("Read of a VM of another uid: status %s, want %q", got.Status, statusDeleted)
	}

	del := resource.DeleteResponse{State: ours}
	e.r.Delete(e.ctx, resource.DeleteRequest{State: ours}, &del)
	if del.Diagnostics.HasError() {
		t.Fatalf("Delete: %v", del.Diagnostics)
	}
	if r, err := e.c.resource(vm.ID.VMID); err != nil || r.Name != name || r.Status != "running" {
		t.Fatalf("the other workspace's VM after our Delete: %+v, %v", r, err)
	}
	if seeds, err := e.c.seeds(name); err != nil || len(seeds) != 1 {
		t.Fatalf("the other workspace's seed ISO after our Delete: %v, %v", seeds, err)
	}

	// The uid that matches: read, then destroyed with its seed.
	theirs := e.state(t, vm, otherSpaceUID)
	read = resource.ReadResponse{State: theirs}
	e.r.Read(e.ctx, resource.ReadRequest{State: theirs}, &read)
	if read.Diagnostics.HasError() || read.State.Raw.IsNull() {
		t.Fatalf("Read of our own VM: removed %v, diagnostics %v", read.State.Raw.IsNull(), read.Diagnostics)
	}
	del = resource.DeleteResponse{State: theirs}
	e.r.Delete(e.ctx, resource.DeleteRequest{State: theirs}, &del)
	if del.Diagnostics.HasError() {
		t.Fatalf("Delete: %v", del.Diagnostics)
	}
	if _, err := e.c.resource(vm.ID.VMID); err == nil {
		t.Error("our own VM was not destroyed")
	}
	if seeds, err := e.c.seeds(name); err != nil || len(seeds) != 0 {
		t.Errorf("seed ISOs left: %v, %v", seeds, err)
	}
}

func ptrInt(v int) *int { return &v }
