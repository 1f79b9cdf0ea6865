package provider

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestVMSize_cpuType: cpu_type goes into a create's Options, into an update's only when it
// changes (and then the update restarts a running VM), is read back from the VM's Options,
// and is null in a create's partial state while unknown.
func TestVMSize_cpuType(t *testing.T) {
	var spec proxmox.Spec
	vmSize{CPUType: types.StringValue("host")}.spec(intoSpec(&spec))
	if spec.Options["cpu"] != "host" {
		t.Errorf("spec options %v", spec.Options)
	}
	spec = proxmox.Spec{}
	vmSize{CPUType: types.StringUnknown()}.spec(intoSpec(&spec))
	if _, ok := spec.Options["cpu"]; ok {
		t.Errorf("unknown cpu_type in the spec: %v", spec.Options)
	}

	prior := vmSize{Cores: types.Int64Value(1), CPUType: types.StringValue("kvm64")}
	var c proxmox.Changes
	if facetChanges(&vmSize{Cores: types.Int64Value(1), CPUType: types.StringValue("host")}, proxyVMModel{vmSize: prior}, &c) != true || c.Options["cpu"] != "host" {
		t.Errorf("changed cpu_type: changes %v", c.Options)
	}
	if !restarts(types.StringValue(statusRunning), c) {
		t.Error("a cpu_type change does not restart a running VM")
	}
	c = proxmox.Changes{}
	if facetChanges(&vmSize{Cores: types.Int64Value(1), CPUType: types.StringValue("kvm64")}, proxyVMModel{vmSize: prior}, &c) || c.Options != nil {
		t.Errorf("same cpu_type: changes %v", c.Options)
	}

	var s vmSize
	s.read(onVM(proxmox.VM{Cores: 1, Options: map[string]string{"cpu": "host"}}))
	if s.CPUType.ValueString() != "host" {
		t.Errorf("read %v", s.CPUType)
	}
	s.read(onVM(proxmox.VM{Cores: 1}))
	if !s.CPUType.IsNull() {
		t.Errorf("read without cpu: %v", s.CPUType)
	}
	s = vmSize{CPUType: types.StringUnknown()}
	s.nullUnknown()
	if !s.CPUType.IsNull() {
		t.Errorf("partial state: %v", s.CPUType)
	}
}

// TestVMSize_cpuUnits: cpu_units goes into a create's Options as cpuunits, into an
// update's only when it changes (and then the update restarts nothing), is read back from
// the VM's Options (null when the config sets none), is null in a create's partial state
// while unknown, and is refused at plan outside qemu-server's 1 to 262144.
func TestVMSize_cpuUnits(t *testing.T) {
	var spec proxmox.Spec
	vmSize{CPUUnits: types.Int64Value(300)}.spec(intoSpec(&spec))
	if spec.Options["cpuunits"] != "300" {
		t.Errorf("spec options %v", spec.Options)
	}
	spec = proxmox.Spec{}
	vmSize{CPUUnits: types.Int64Null()}.spec(intoSpec(&spec))
	if _, ok := spec.Options["cpuunits"]; ok {
		t.Errorf("null cpu_units in the spec: %v", spec.Options)
	}

	prior := vmSize{Cores: types.Int64Value(1), CPUUnits: types.Int64Value(100)}
	var c proxmox.Changes
	if !facetChanges(&vmSize{Cores: types.Int64Value(1), CPUUnits: types.Int64Value(500)}, proxyVMModel{vmSize: prior}, &c) || c.Options["cpuunits"] != "500" {
		t.Errorf("changed cpu_units: changes %v", c.Options)
	}
	if restarts(types.StringValue(statusRunning), c) {
		t.Error("a cpu_units change restarts a running VM")
	}
	c = proxmox.Changes{}
	if facetChanges(&prior, proxyVMModel{vmSize: prior}, &c) || c.Options != nil {
		t.Errorf("same cpu_units: changes %v", c.Options)
	}
	if restartOptionChanges(proxyVMModel{vmSize: prior}, proxyVMModel{vmSize: vmSize{Cores: prior.Cores, CPUUnits: types.Int64Value(7)}}) {
		t.Error("a cpu_units change planned as a restart")
	}

	var s vmSize
	s.read(onVM(proxmox.VM{Cores: 1, Options: map[string]string{"cpuunits": "2048"}}))
	if s.CPUUnits.ValueInt64() != 2048 {
		t.Errorf("read %v", s.CPUUnits)
	}
	s.read(onVM(proxmox.VM{Cores: 1}))
	if !s.CPUUnits.IsNull() {
		t.Errorf("read without cpuunits: %v", s.CPUUnits)
	}
	s = vmSize{CPUUnits: types.Int64Unknown()}
	s.nullUnknown()
	if !s.CPUUnits.IsNull() {
		t.Errorf("partial state: %v", s.CPUUnits)
	}

	attr := proxyVMSchema(context.Background()).Attributes["cpu_units"].(schema.Int64Attribute)
	for v, ok := range map[int64]bool{0: false, 1: true, 262144: true, 262145: false} {
		var resp validator.Int64Response
		for _, vd := range attr.Validators {
			vd.ValidateInt64(context.Background(), validator.Int64Request{Path: path.Root("cpu_units"), ConfigValue: types.Int64Value(v)}, &resp)
		}
		if resp.Diagnostics.HasError() == ok {
			t.Errorf("cpu_units = %d: errors %v, want accepted %t", v, resp.Diagnostics, ok)
		}
	}
}

// TestVMSize_cpuTypeAgreesWithSimulator: the plan-time check of cpu_type (cpuTypeRE) and the
// simulator's CPU models (qemu-server CPUConfig.pm's built-in and QEMU models) are two
// lists of one fact, kept apart by the layering: every model Proxmox accepts passes the
// plan, and the values the docs name are models Proxmox knows.
func TestVMSize_cpuTypeAgreesWithSimulator(t *testing.T) {
	models := pvesim.CPUModels()
	if len(models) < 50 {
		t.Fatalf("only %d simulator CPU models", len(models))
	}
	for _, m := range models {
		if !cpuTypeRE.MatchString(m) {
			t.Errorf("Proxmox accepts cpu %q, the plan refuses it", m)
		}
	}
	for _, m := range []string{"host", "x86-64-v2-AES", "kvm64", "Skylake-Server-v4", "Opteron_G5"} {
		if !slices.Contains(models, m) {
			t.Errorf("cpu_type's description or check names %q, which Proxmox does not know", m)
		}
	}
}

// TestVMSize_planCPUTypeReadsOnlyAChange: the plan reads the node's CPU models only for a
// cpu_type that is set and changes (a no-op plan sends no request for it), once per
// provider instance; an unknown model is an error on cpu_type naming valid ones; a read that
// fails is a warning on cpu_type (the plan goes on), as is a custom model the node does
// not list to the token.
func TestVMSize_planCPUTypeReadsOnlyAChange(t *testing.T) {
	e := newDirectEnv(t, pvesim.Options{})
	e.r.data.cfg.Nodes = e.sim.Nodes
	model := func(cpu string) *proxyVMModel {
		m := &proxyVMModel{}
		m.CPUType, m.Node = types.StringNull(), types.StringValue(e.sim.Nodes[0])
		if cpu != "" {
			m.CPUType = types.StringValue(cpu)
		}
		return m
	}
	reads := func() int { return e.sim.Stats()["GET /nodes/{node}/capabilities/qemu/cpu"] }
	e.sim.ResetStats()
	// Not set, or unchanged: nothing read.
	if d := e.r.planCPUType(e.ctx, *model(""), model(""), model("host")); d.HasError() || d.WarningsCount() != 0 {
		t.Errorf("unset: %v", d)
	}
	if d := e.r.planCPUType(e.ctx, *model("host"), model("host"), model("host")); d.HasError() || d.WarningsCount() != 0 {
		t.Errorf("unchanged: %v", d)
	}
	if n := reads(); n != 0 {
		t.Fatalf("%d reads for no change", n)
	}
	// A create or a change: read once for every check of this instance.
	if d := e.r.planCPUType(e.ctx, *model("x86-64-v3"), model("x86-64-v3"), nil); d.HasError() || d.WarningsCount() != 0 {
		t.Errorf("known: %v", d)
	}
	d := e.r.planCPUType(e.ctx, *model("Haswel"), model("Haswel"), model("host"))
	if !d.HasError() || !d[0].(interface{ Path() path.Path }).Path().Equal(path.Root("cpu_type")) {
		t.Fatalf("unknown: %v", d)
	}
	assertHas(t, d[0].Detail(), `"Haswel" is not a CPU model node`, "such as Haswell, Haswell-IBRS")
	if d := e.r.planCPUType(e.ctx, *model("custom-edge"), model("custom-edge"), nil); d.HasError() || d.WarningsCount() != 1 ||
		!strings.Contains(d[0].Detail(), "Sys.Audit on /nodes") {
		t.Errorf("custom, not listed: %v", d)
	}
	if n := reads(); n != 1 {
		t.Errorf("%d reads, want 1 per node per instance", n)
	}
	// The read fails (the node does not answer): a warning, the plan goes on.
	dead, err := pveapi.New(pveapi.Options{Endpoint: "https://127.0.0.1:1", Token: e.sim.APIToken, CAPEM: e.sim.CAPEM, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &proxyVMResource{data: &providerData{backend: proxmox.New(dead, proxmox.Config{Nodes: e.sim.Nodes, ISOStorage: e.sim.ISOStorage})}}
	d = r.planCPUType(e.ctx, *model("host"), model("host"), nil)
	if d.HasError() || d.WarningsCount() != 1 || d[0].Summary() != "CPU type not checked" {
		t.Errorf("read failed: %v", d)
	}
}
