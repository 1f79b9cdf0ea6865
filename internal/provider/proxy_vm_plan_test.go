package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// cfgModel is a configuration with the given fields; everything else null.
func cfgModel(name string, set func(*proxyVMModel)) proxyVMModel {
	m := proxyVMModel{
		vmIdentityFacet: vmIdentityFacet{Name: types.StringValue(name)}, vmPlacement: vmPlacement{vmLocation: vmLocation{Node: types.StringNull()}},
		vmTemplate: vmTemplate{Image: types.StringNull(), TemplateVMID: types.Int64Null(), MachineType: types.StringNull()}, vmSize: vmSize{Cores: types.Int64Null(), MemoryMiB: types.Int64Null(), DiskGiB: types.Int64Null()},
		vmCloudInit: vmCloudInit{CloudInit: types.StringNull()},
		vmNetwork:   vmNetwork{vmNetworkReadable: vmNetworkReadable{Bridge: types.StringNull(), VLANTag: types.Int64Null()}},
		vmPower:     vmPower{vmPowerState: vmPowerState{StartOnBoot: types.BoolNull()}, WaitForIP: types.BoolNull()},
	}
	if set != nil {
		set(&m)
	}
	return m
}

// planFrom is what the framework hands ModifyPlan for a create: the configuration with
// computed attributes unknown.
func planFrom(config proxyVMModel) proxyVMModel {
	p := config
	unknownIfNull := func(s *types.String) {
		if s.IsNull() {
			*s = types.StringUnknown()
		}
	}
	unknownIfNullInt := func(n *types.Int64) {
		if n.IsNull() {
			*n = types.Int64Unknown()
		}
	}
	unknownIfNull(&p.Node)
	unknownIfNull(&p.Bridge)
	unknownIfNullInt(&p.TemplateVMID)
	unknownIfNullInt(&p.Cores)
	unknownIfNullInt(&p.MemoryMiB)
	unknownIfNullInt(&p.DiskGiB)
	unknownIfNullInt(&p.VLANTag)
	p.ID, p.UID, p.CreatedAt, p.IPAddress, p.MACAddress, p.Status = types.StringUnknown(), types.StringUnknown(),
		types.StringUnknown(), types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
	p.VMID, p.AgentEnabled = types.Int64Unknown(), types.BoolUnknown()
	if p.StartOnBoot.IsNull() {
		p.StartOnBoot = types.BoolValue(true)
	}
	if p.WaitForIP.IsNull() {
		p.WaitForIP = types.BoolValue(true)
	}
	return p
}

// priorState is an applied VM made from image debian-13 and machine type small.
func priorState() proxyVMModel {
	return proxyVMModel{
		vmIdentityFacet: vmIdentityFacet{ID: types.StringValue("vms/105967/proxy-a"), Name: types.StringValue("proxy-a"), VMID: types.Int64Value(105967),
			UID: types.StringValue("u-1"), CreatedAt: types.StringValue("2026-01-02T03:04:05Z")},
		vmPlacement: vmPlacement{vmLocation: vmLocation{Node: types.StringValue("pve1")}},
		vmTemplate:  vmTemplate{Image: types.StringValue("debian-13"), TemplateVMID: types.Int64Value(9001), MachineType: types.StringValue("small")},
		vmSize:      vmSize{Cores: types.Int64Value(1), MemoryMiB: types.Int64Value(512), DiskGiB: types.Int64Value(3)}, vmCloudInit: vmCloudInit{CloudInit: types.StringNull()}, vmNetwork: vmNetwork{vmNetworkReadable: vmNetworkReadable{Bridge: types.StringValue("vmbr0"), VLANTag: types.Int64Null()}},
		vmPower:     vmPower{vmPowerState: vmPowerState{Status: types.StringValue("running"), StartOnBoot: types.BoolValue(true)}, WaitForIP: types.BoolValue(true)},
		vmAddresses: vmAddresses{IPAddress: types.StringValue("192.0.2.10"), MACAddress: types.StringValue("BC:24:11:EE:48:83"), AgentEnabled: types.BoolValue(true)},
	}
}

func errorPaths(d diag.Diagnostics) []string {
	var out []string
	for _, x := range d.Errors() {
		if wp, ok := x.(diag.DiagnosticWithPath); ok {
			out = append(out, wp.Path().String())
		}
	}
	return out
}

func TestPlanProxyVM_createResolvesCatalogue(t *testing.T) {
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("small")
	})
	plan := planFrom(config)
	replace, d := planFacets(testCfg(), config, &plan, nil, false)
	if d.HasError() || len(replace) != 0 {
		t.Fatalf("diags %v replace %v", d, replace)
	}
	if !plan.UID.IsUnknown() {
		t.Errorf("uid = %v, want unknown until Create mints it", plan.UID)
	}
	if plan.Node.ValueString() != "pve1" || plan.TemplateVMID.ValueInt64() != 9001 || plan.Cores.ValueInt64() != 1 || plan.MemoryMiB.ValueInt64() != 512 {
		t.Errorf("plan: node %v template %v cores %v memory %v", plan.Node, plan.TemplateVMID, plan.Cores, plan.MemoryMiB)
	}
	if !plan.DiskGiB.IsUnknown() || !plan.Bridge.IsUnknown() || !plan.VLANTag.IsUnknown() {
		t.Errorf("values known only after the clone must stay unknown: disk %v bridge %v vlan %v", plan.DiskGiB, plan.Bridge, plan.VLANTag)
	}
}

func TestPlanProxyVM_createExplicitOverridesAndProviderNetwork(t *testing.T) {
	cfg := testCfg()
	cfg.Bridge, cfg.VLANTag = "vmbr1", 4
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.TemplateVMID, m.MachineType, m.Cores = types.Int64Value(9100), types.StringValue("large"), types.Int64Value(8)
		m.VLANTag = types.Int64Value(7)
	})
	plan := planFrom(config)
	if _, d := planFacets(cfg, config, &plan, nil, false); d.HasError() {
		t.Fatal(d)
	}
	if plan.TemplateVMID.ValueInt64() != 9100 || plan.Cores.ValueInt64() != 8 || plan.MemoryMiB.ValueInt64() != 4096 {
		t.Errorf("template %v cores %v memory %v", plan.TemplateVMID, plan.Cores, plan.MemoryMiB)
	}
	if plan.Bridge.ValueString() != "vmbr1" || plan.VLANTag.ValueInt64() != 7 {
		t.Errorf("bridge %v vlan %v, want the provider's bridge and the resource's tag", plan.Bridge, plan.VLANTag)
	}
}

func TestPlanProxyVM_catalogueErrorsCarryPaths(t *testing.T) {
	cfg := testCfg()
	cfg.Nodes = []string{"pve1", "pve2"}
	cases := []struct {
		name string
		set  func(*proxyVMModel)
		want string
	}{
		{"unknown node", func(m *proxyVMModel) {
			m.Node, m.Image, m.MachineType = types.StringValue("pve9"), types.StringValue("debian-13"), types.StringValue("small")
		}, "node"},
		{"unknown image", func(m *proxyVMModel) {
			m.Node, m.Image, m.MachineType = types.StringValue("pve2"), types.StringValue("nope"), types.StringValue("small")
		}, "image"},
		{"unknown machine type", func(m *proxyVMModel) {
			m.Node, m.Image, m.MachineType = types.StringValue("pve2"), types.StringValue("debian-13"), types.StringValue("huge")
		}, "machine_type"},
	}
	for _, c := range cases {
		config := cfgModel("proxy-a", c.set)
		plan := planFrom(config)
		_, d := planFacets(cfg, config, &plan, nil, false)
		if got := fmt.Sprint(errorPaths(d)); got != "["+c.want+"]" {
			t.Errorf("%s: error paths %s, want [%s] (%v)", c.name, got, c.want, d)
		}
	}
}

func TestPlanProxyVM_unknownValuesTolerated(t *testing.T) {
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Node, m.Image, m.MachineType = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
	})
	plan := planFrom(config)
	if _, d := planFacets(testCfg(), config, &plan, nil, false); d.HasError() {
		t.Fatal(d)
	}
	if !plan.Node.IsUnknown() || !plan.TemplateVMID.IsUnknown() || !plan.Cores.IsUnknown() || !plan.MemoryMiB.IsUnknown() {
		t.Errorf("unknown inputs must leave their results unknown: %v %v %v %v", plan.Node, plan.TemplateVMID, plan.Cores, plan.MemoryMiB)
	}
	unnamed := cfgModel("", func(m *proxyVMModel) { m.Name = types.StringUnknown() })
	plan = planFrom(unnamed)
	planFacets(testCfg(), unnamed, &plan, nil, false)
	if !plan.UID.IsUnknown() {
		t.Errorf("uid of an unknown name = %v, want unknown", plan.UID)
	}
}

func TestPlanProxyVM_unconfiguredProviderPlansNothing(t *testing.T) {
	config := cfgModel("proxy-a", func(m *proxyVMModel) { m.Image, m.MachineType = types.StringValue("x"), types.StringValue("y") })
	plan := planFrom(config)
	replace, d := planFacets(nil, config, &plan, nil, false)
	// The UID depends on uid_namespace, unknown without the provider's configuration.
	if d.HasError() || replace != nil || !plan.UID.IsUnknown() || !plan.Node.IsUnknown() {
		t.Errorf("diags %v replace %v uid %v node %v", d, replace, plan.UID, plan.Node)
	}
}

func TestPlanProxyVM_uidNamespace(t *testing.T) {
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("small")
	})
	cfg := testCfg()
	cfg.UIDNamespace = "team-x.prod_1"
	plan := planFrom(config)
	if _, d := planFacets(cfg, config, &plan, nil, false); d.HasError() {
		t.Fatal(d)
	}
	if !plan.UID.IsUnknown() {
		t.Errorf("uid = %v, want unknown whatever the namespace (Create mints it)", plan.UID)
	}
	if got := uidFor("team-x.prod_1", "proxy-a"); got != "e6987faf-1b26-558d-bad8-20d373479c4c" {
		t.Errorf("allocation key %s, want the namespace's", got)
	}
	// An existing VM keeps the uid in its state whatever the namespace becomes.
	prior := priorState()
	cfg.UIDNamespace = "another"
	plan = updatePlan(config, prior)
	if _, d := planFacets(cfg, config, &plan, &prior, false); d.HasError() || !plan.UID.Equal(prior.UID) {
		t.Errorf("uid after a namespace change = %v, want the prior %v (%v)", plan.UID, prior.UID, d)
	}
}

// updatePlan is the framework's plan for an update before ModifyPlan: the configuration,
// UseStateForUnknown having restored the prior computed values.
func updatePlan(config, prior proxyVMModel) proxyVMModel {
	p := prior
	p.Name, p.Image, p.MachineType, p.CloudInit = config.Name, config.Image, config.MachineType, config.CloudInit
	for _, f := range []struct{ c, dst *types.Int64 }{{&config.Cores, &p.Cores}, {&config.MemoryMiB, &p.MemoryMiB},
		{&config.DiskGiB, &p.DiskGiB}, {&config.VLANTag, &p.VLANTag}, {&config.TemplateVMID, &p.TemplateVMID}} {
		if !f.c.IsNull() {
			*f.dst = *f.c
		}
	}
	if !config.Bridge.IsNull() {
		p.Bridge = config.Bridge
	}
	if !config.Node.IsNull() {
		p.Node = config.Node
	}
	return p
}

func TestPlanProxyVM_updateMatchingConfigIsNoChange(t *testing.T) {
	prior := priorState()
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("small")
	})
	plan := updatePlan(config, prior)
	replace, d := planFacets(testCfg(), config, &plan, &prior, false)
	if d.HasError() || len(replace) != 0 {
		t.Fatalf("diags %v replace %v", d, replace)
	}
	if !reflect.DeepEqual(plan, prior) {
		t.Errorf("plan differs from the prior state:\n%+v\n%+v", plan, prior)
	}
}

func TestPlanProxyVM_catalogueEditsShowAsChanges(t *testing.T) {
	prior := priorState()
	cfg := testCfg()
	cfg.Templates["debian-13"] = 9002 // repointed
	cfg.MachineTypes["small"] = machineType{Cores: 2, MemoryMiB: 1024, DiskGiB: 10}
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("small")
	})
	plan := updatePlan(config, prior)
	replace, d := planFacets(cfg, config, &plan, &prior, false)
	if d.HasError() {
		t.Fatal(d)
	}
	if fmt.Sprint(replace) != "[template_vmid]" || plan.TemplateVMID.ValueInt64() != 9002 {
		t.Errorf("repointed image: replace %v template %v", replace, plan.TemplateVMID)
	}
	if plan.Cores.ValueInt64() != 2 || plan.MemoryMiB.ValueInt64() != 1024 || plan.DiskGiB.ValueInt64() != 10 {
		t.Errorf("edited machine type: cores %v memory %v disk %v", plan.Cores, plan.MemoryMiB, plan.DiskGiB)
	}
	if !plan.IPAddress.IsUnknown() {
		t.Errorf("a restart for new cores must make the address unknown, got %v", plan.IPAddress)
	}
}

func TestPlanProxyVM_catalogueNeverShrinksDisk(t *testing.T) {
	prior := priorState()
	prior.DiskGiB = types.Int64Value(30)
	cfg := testCfg()
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("large")
	})
	plan := updatePlan(config, prior)
	if _, d := planFacets(cfg, config, &plan, &prior, false); d.HasError() {
		t.Fatal(d)
	}
	if plan.DiskGiB.ValueInt64() != 30 {
		t.Errorf("disk = %v, want the prior 30 (the machine type's 20 is a minimum)", plan.DiskGiB)
	}
}

func TestPlanProxyVM_sameTemplateOtherKeyIsInPlace(t *testing.T) {
	prior := priorState()
	cfg := testCfg()
	cfg.Templates["trixie"] = 9001
	for _, config := range []proxyVMModel{
		cfgModel("proxy-a", func(m *proxyVMModel) {
			m.Image, m.MachineType = types.StringValue("trixie"), types.StringValue("small")
		}),
		cfgModel("proxy-a", func(m *proxyVMModel) {
			m.TemplateVMID, m.MachineType = types.Int64Value(9001), types.StringValue("small")
		}),
	} {
		plan := updatePlan(config, prior)
		replace, d := planFacets(cfg, config, &plan, &prior, false)
		if d.HasError() || len(replace) != 0 || plan.TemplateVMID.ValueInt64() != 9001 {
			t.Errorf("%v/%v: diags %v replace %v template %v", config.Image, config.TemplateVMID, d, replace, plan.TemplateVMID)
		}
	}
}

func TestPlanProxyVM_importedTemplateNotReplaced(t *testing.T) {
	prior := priorState()
	prior.Image, prior.TemplateVMID = types.StringNull(), types.Int64Null()
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("small")
	})
	plan := updatePlan(config, prior)
	replace, d := planFacets(testCfg(), config, &plan, &prior, true)
	if d.HasError() || len(replace) != 0 || plan.TemplateVMID.ValueInt64() != 9001 {
		t.Errorf("imported: diags %v replace %v template %v", d, replace, plan.TemplateVMID)
	}
	// Without the import marker a null template is not a reason to keep the VM.
	plan = updatePlan(config, prior)
	if replace, _ := planFacets(testCfg(), config, &plan, &prior, false); fmt.Sprint(replace) != "[template_vmid]" {
		t.Errorf("not imported: replace %v, want [template_vmid]", replace)
	}
}

func TestPlanProxyVM_removedKeyKeepsVM(t *testing.T) {
	prior := priorState()
	cfg := testCfg()
	delete(cfg.Templates, "debian-13")
	cfg.Templates["debian-14"] = 9003
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("small")
	})
	plan := updatePlan(config, prior)
	replace, d := planFacets(cfg, config, &plan, &prior, false)
	if d.HasError() || len(replace) != 0 || plan.TemplateVMID.ValueInt64() != 9001 {
		t.Errorf("diags %v replace %v template %v", d, replace, plan.TemplateVMID)
	}
	// Choosing a missing key is an error, though.
	config.Image = types.StringValue("debian-12")
	plan = updatePlan(config, prior)
	if _, d := planFacets(cfg, config, &plan, &prior, false); fmt.Sprint(errorPaths(d)) != "[image]" {
		t.Errorf("missing key chosen: %v", d)
	}
}

func TestPlanProxyVM_stoppedVMAddressUnknown(t *testing.T) {
	prior := priorState()
	prior.Status, prior.IPAddress = types.StringValue("stopped"), types.StringNull()
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("small")
	})
	plan := updatePlan(config, prior)
	if _, d := planFacets(testCfg(), config, &plan, &prior, false); d.HasError() {
		t.Fatal(d)
	}
	if !plan.IPAddress.IsUnknown() {
		t.Errorf("ip = %v, want unknown for a VM that will be started", plan.IPAddress)
	}
	// A start_on_boot change alone keeps the address.
	prior = priorState()
	config.StartOnBoot = types.BoolValue(false)
	plan = updatePlan(config, prior)
	plan.StartOnBoot = types.BoolValue(false)
	planFacets(testCfg(), config, &plan, &prior, false)
	if plan.IPAddress.ValueString() != "192.0.2.10" {
		t.Errorf("ip = %v, want the prior address", plan.IPAddress)
	}
}

func TestPlannedStatus(t *testing.T) {
	cases := []struct{ prior, want types.String }{
		{types.StringValue("running"), types.StringValue("running")},
		{types.StringValue("provisioning"), types.StringValue("provisioning")},
		{types.StringValue("stopped"), types.StringValue("running")},
		{types.StringNull(), types.StringUnknown()},
	}
	for _, c := range cases {
		if got := plannedStatus(c.prior); !got.Equal(c.want) {
			t.Errorf("plannedStatus(%v) = %v, want %v", c.prior, got, c.want)
		}
	}
}

func TestDiskShrinks(t *testing.T) {
	cases := []struct {
		prior, plan types.Int64
		want        bool
	}{
		{types.Int64Value(10), types.Int64Value(8), true},
		{types.Int64Value(10), types.Int64Value(10), false},
		{types.Int64Value(10), types.Int64Value(20), false},
		{types.Int64Value(10), types.Int64Unknown(), false},
		{types.Int64Null(), types.Int64Value(8), false},
	}
	for _, c := range cases {
		if got := diskShrinks(c.prior, c.plan); got != c.want {
			t.Errorf("diskShrinks(%v, %v) = %v, want %v", c.prior, c.plan, got, c.want)
		}
	}
}

func TestReplaceUnlessUnread(t *testing.T) {
	cases := []struct {
		createOrDestroy, equal, priorNull, unread, want bool
	}{
		{false, false, false, false, true}, // a change replaces
		{false, false, true, false, true},  // null before, not imported: a change (e.g. adding cloud_init) replaces
		{false, false, true, true, false},  // first value after an import: recorded in place
		{false, false, false, true, true},  // a later change after the import replaces
		{false, true, true, true, false},   // no change
		{true, false, false, false, false}, // create or destroy
	}
	for _, c := range cases {
		if got := replaceUnlessUnread(c.createOrDestroy, c.equal, c.priorNull, c.unread); got != c.want {
			t.Errorf("%+v: got %v", c, got)
		}
	}
}

// fakePrivate stands in for the framework's private state data.
type fakePrivate map[string][]byte

func (f fakePrivate) GetKey(_ context.Context, k string) ([]byte, diag.Diagnostics) { return f[k], nil }
func (f fakePrivate) SetKey(_ context.Context, k string, v []byte) diag.Diagnostics {
	if len(v) == 0 {
		delete(f, k)
		return nil
	}
	if !json.Valid(v) {
		var d diag.Diagnostics
		d.AddError("invalid JSON", string(v))
		return d
	}
	f[k] = v
	return nil
}

func TestImportMarker_roundTrip(t *testing.T) {
	ctx := context.Background()
	p := fakePrivate{}
	if d := writeImportMarker(ctx, p, []unreadAttr{unreadCloudInit, unreadTemplate}); d.HasError() {
		t.Fatal(d)
	}
	for _, a := range []unreadAttr{unreadCloudInit, unreadTemplate} {
		if ok, _ := isUnread(ctx, p, a); !ok {
			t.Errorf("%s not unread", a)
		}
	}
	if d := writeImportMarker(ctx, p, []unreadAttr{unreadTemplate}); d.HasError() {
		t.Fatal(d)
	}
	if ok, _ := isUnread(ctx, p, unreadCloudInit); ok {
		t.Error("cloud_init unread after a marker without it")
	}
	if ok, _ := isUnread(ctx, p, unreadTemplate); !ok {
		t.Error("template lost")
	}
	writeImportMarker(ctx, p, nil)
	if _, ok := p[privateKeyImport.name]; ok {
		t.Error("an empty marker was kept")
	}
	// A missing or unreadable marker suppresses nothing.
	if ok, _ := isUnread(ctx, fakePrivate{privateKeyImport.name: []byte(`"x"`)}, unreadTemplate); ok {
		t.Error("garbage marker read as unread")
	}
	if ok, _ := isUnread(ctx, nil, unreadTemplate); ok {
		t.Error("nil private state read as unread")
	}
}

func TestValidators_pathsAndRanges(t *testing.T) {
	// The name rule is the DNS label rule of the schema.
	for _, ok := range []string{"a", "proxy-a", "0", "a0-b1"} {
		if !vmNameRE.MatchString(ok) {
			t.Errorf("%q rejected", ok)
		}
	}
	for _, bad := range []string{"", "-a", "a-", "A", "a_b", "a.b"} {
		if vmNameRE.MatchString(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
