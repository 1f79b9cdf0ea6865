package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestVMPlacement_read: the node and pool of the VM; a VM read without a node keeps the
// prior node; no pool is "" when the state said "", else null; migrate_back gets its
// default only when it has no value.
func TestVMPlacement_read(t *testing.T) {
	var p vmPlacement
	p.read(onVM(proxmox.VM{Node: "pve2", Pool: "blue"}))
	if p.Node.ValueString() != "pve2" || p.Pool.ValueString() != "blue" || p.MigrateBack.IsNull() || !p.MigrateBack.ValueBool() {
		t.Errorf("nothing known: %+v", p)
	}

	p = vmPlacement{vmLocation: vmLocation{Node: types.StringValue("pve1"), Pool: types.StringValue("")},
		MigrateBack: types.BoolValue(false)}
	p.read(onVM(proxmox.VM{}))
	if p.Node.ValueString() != "pve1" || p.Pool.IsNull() || p.Pool.ValueString() != "" || p.MigrateBack.ValueBool() {
		t.Errorf("read without node or pool, pool \"\" and migrate_back false in the state: %+v", p)
	}

	p = vmPlacement{vmLocation: vmLocation{Node: types.StringValue("pve1"), Pool: types.StringValue("blue")}}
	p.read(onVM(proxmox.VM{Node: "pve3"}))
	if p.Node.ValueString() != "pve3" || !p.Pool.IsNull() {
		t.Errorf("moved out of its pool to pve3: %+v, want node pve3 and pool null", p)
	}
}

// TestVMPlacement_nullUnknown: every unknown value is nulled, a known one kept.
func TestVMPlacement_nullUnknown(t *testing.T) {
	p := vmPlacement{vmLocation: vmLocation{Node: types.StringUnknown(), Pool: types.StringUnknown()}, MigrateBack: types.BoolUnknown()}
	p.nullUnknown()
	if !p.Node.IsNull() || !p.Pool.IsNull() || !p.MigrateBack.IsNull() {
		t.Errorf("unknown values left: %+v", p)
	}
	p = vmPlacement{vmLocation: vmLocation{Node: types.StringValue("pve1"), Pool: types.StringValue("")}, MigrateBack: types.BoolValue(false)}
	want := p
	p.nullUnknown()
	if p != want {
		t.Errorf("known values changed: %+v, want %+v", p, want)
	}
}

// TestVMPlacement_spec: the planned node and pool go into the create; a node still unknown
// (placed at create) and no pool are "".
func TestVMPlacement_spec(t *testing.T) {
	var s proxmox.Spec
	vmPlacement{vmLocation: vmLocation{Node: types.StringValue("pve2"), Pool: types.StringValue("blue")}}.spec(intoSpec(&s))
	if s.Node != "pve2" || s.Pool != "blue" {
		t.Errorf("spec node %q pool %q, want pve2 blue", s.Node, s.Pool)
	}
	s = proxmox.Spec{Node: "x", Pool: "y"}
	vmPlacement{vmLocation: vmLocation{Node: types.StringUnknown(), Pool: types.StringNull()}}.spec(intoSpec(&s))
	if s.Node != "" || s.Pool != "" {
		t.Errorf("spec node %q pool %q, want both empty", s.Node, s.Pool)
	}
}

// TestVMPlacement_changes: a known node other than the VM's is a migration, a known pool
// other than the state's a pool move (with the pool it leaves); migrate_back changes
// nothing on the VM.
func TestVMPlacement_changes(t *testing.T) {
	at := func(node, pool string, back bool) vmPlacement {
		return vmPlacement{vmLocation: vmLocation{Node: types.StringValue(node), Pool: types.StringValue(pool)}, MigrateBack: types.BoolValue(back)}
	}
	prior := at("pve1", "blue", true)
	for _, tc := range []struct {
		name       string
		plan       vmPlacement
		changed    bool
		node, pool string // "-": no change
		priorPool  string
	}{
		{"no change", prior, false, "-", "-", "blue"},
		{"migrate_back only", at("pve1", "blue", false), false, "-", "-", "blue"},
		{"migration", at("pve2", "blue", true), true, "pve2", "-", "blue"},
		{"pool move", at("pve1", "green", true), true, "-", "green", "blue"},
		{"out of the pool", at("pve1", "", true), true, "-", "", "blue"},
		{"both", at("pve2", "green", true), true, "pve2", "green", "blue"},
		{"unknown", vmPlacement{vmLocation: vmLocation{Node: types.StringUnknown(), Pool: types.StringUnknown()}}, false, "-", "-", ""},
	} {
		var c proxmox.Changes
		changed := facetChanges(&tc.plan, proxyVMModel{vmPlacement: prior}, &c)
		str := func(p *string) string {
			if p == nil {
				return "-"
			}
			return *p
		}
		if changed != tc.changed || str(c.Node) != tc.node || str(c.Pool) != tc.pool || c.PriorPool != tc.priorPool {
			t.Errorf("%s: changed %v, node %s, pool %s (from %q); want %v, %s, %s (from %q)", tc.name, changed, str(c.Node),
				str(c.Pool), c.PriorPool, tc.changed, tc.node, tc.pool, tc.priorPool)
		}
	}
}

// TestPlanPlacement: a configured node the provider does not have is an error on node; a
// pool left out of the configuration is the provider's.
func TestPlanPlacement(t *testing.T) {
	cfg := testCfg()
	cfg.Pool = "blue"
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Node, m.Pool = types.StringValue("pve9"), types.StringNull()
	})
	plan := planFrom(config)
	fc := &facetCtx{ctx: context.Background(), cfg: cfg, m: &plan, config: config}
	plan.vmPlacement.plan(fc)
	d := fc.diags
	if !d.HasError() || len(errorPaths(d)) != 1 || errorPaths(d)[0] != "node" {
		t.Errorf("unknown node: %v", d)
	}
	if plan.Pool.ValueString() != "blue" {
		t.Errorf("pool %v, want the provider's blue", plan.Pool)
	}
}

// TestPlacementAttrs_dataSourcesShowWhereTheVMIs: both data sources show node and pool
// with the resource's wording, and not migrate_back.
func TestPlacementAttrs_dataSourcesShowWhereTheVMIs(t *testing.T) {
	ctx := context.Background()
	var vm, vms datasource.SchemaResponse
	(&vmDataSource{}).Schema(ctx, datasource.SchemaRequest{}, &vm)
	(&vmsDataSource{}).Schema(ctx, datasource.SchemaRequest{}, &vms)
	list := vms.Schema.Attributes["vms"].(dschema.ListNestedAttribute).NestedObject.Attributes
	res := resourceAttributes(placementAttrs())
	for _, a := range placementAttrs() {
		_, inVM := vm.Schema.Attributes[a.name]
		_, inList := list[a.name]
		want := a.name != "migrate_back"
		if inVM != want || inList != want {
			t.Errorf("%s: in proxy_vm %v, in proxy_vms %v, want %v", a.name, inVM, inList, want)
		}
		if !want {
			continue
		}
		for where, d := range map[string]string{"resource": res[a.name].GetMarkdownDescription(),
			"proxy_vm": vm.Schema.Attributes[a.name].GetMarkdownDescription(), "proxy_vms": list[a.name].GetMarkdownDescription()} {
			if len(d) < len(a.md) || d[:len(a.md)] != a.md {
				t.Errorf("%s in %s: %q must start with %q", a.name, where, d, a.md)
			}
		}
	}
}
