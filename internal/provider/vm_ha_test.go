package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

func haValue(state string, restart, relocate int64, failback bool) types.Object {
	return types.ObjectValueMust(haAttrTypes, map[string]attr.Value{
		"state": types.StringValue(state), "max_restart": types.Int64Value(restart),
		"max_relocate": types.Int64Value(relocate), "failback": types.BoolValue(failback),
	})
}

func TestVMHA_specAndChanges(t *testing.T) {
	var s proxmox.Spec
	vmHA{HA: nullHA}.spec(intoSpec(&s))
	if s.HA != nil {
		t.Fatalf("spec without ha: %+v", s.HA)
	}
	vmHA{HA: haValue("stopped", 2, 3, false)}.spec(intoSpec(&s))
	if want := (proxmox.HA{State: "stopped", MaxRestart: 2, MaxRelocate: 3}); s.HA == nil || *s.HA != want {
		t.Fatalf("spec %+v, want %+v", s.HA, want)
	}
	for _, tc := range []struct {
		name        string
		prior, plan types.Object
		want        *proxmox.HAChange
	}{
		{"none", nullHA, nullHA, nil},
		{"same", haValue("started", 1, 1, true), haValue("started", 1, 1, true), nil},
		{"added", nullHA, haValue("started", 1, 1, true), &proxmox.HAChange{Set: &proxmox.HA{State: "started", MaxRestart: 1, MaxRelocate: 1, Failback: true}}},
		{"changed", haValue("started", 1, 1, true), haValue("started", 4, 1, true), &proxmox.HAChange{Set: &proxmox.HA{State: "started", MaxRestart: 4, MaxRelocate: 1, Failback: true}}},
		{"removed", haValue("started", 1, 1, true), nullHA, &proxmox.HAChange{Remove: true}},
		{"unknown", nullHA, types.ObjectUnknown(haAttrTypes), nil},
	} {
		var c proxmox.Changes
		changed := facetChanges(&vmHA{HA: tc.plan}, proxyVMModel{vmHA: vmHA{HA: tc.prior}}, &c)
		if changed != (tc.want != nil) {
			t.Errorf("%s: changed %v", tc.name, changed)
		}
		switch {
		case tc.want == nil && c.HA != nil, tc.want != nil && c.HA == nil:
			t.Errorf("%s: HA change %+v, want %+v", tc.name, c.HA, tc.want)
		case tc.want != nil && (c.HA.Remove != tc.want.Remove || (tc.want.Set != nil && (c.HA.Set == nil || *c.HA.Set != *tc.want.Set))):
			t.Errorf("%s: HA change %+v, want %+v", tc.name, c.HA, tc.want)
		}
	}
}

func TestVMHA_read(t *testing.T) {
	h := vmHA{HA: haValue("started", 1, 1, true)}
	h.read(onVM(proxmox.VM{})) // not read: kept
	if !h.HA.Equal(haValue("started", 1, 1, true)) {
		t.Fatalf("a VM read without HA changed ha: %v", h.HA)
	}
	h.read(onVM(proxmox.VM{HAUnread: true}))
	if !h.HA.Equal(haValue("started", 1, 1, true)) {
		t.Fatalf("an unread HA resource changed ha: %v", h.HA)
	}
	h.read(onVM(proxmox.VM{HARead: true, HA: &proxmox.HA{State: "stopped", MaxRestart: 3, MaxRelocate: 0, Failback: false}}))
	if !h.HA.Equal(haValue("stopped", 3, 0, false)) {
		t.Fatalf("read back %v", h.HA)
	}
	h.read(onVM(proxmox.VM{HARead: true}))
	if !h.HA.IsNull() {
		t.Fatalf("an HA resource removed outside Terraform reads %v, want null", h.HA)
	}
	var zero vmHA // a model made in Go (an import)
	zero.read(onVM(proxmox.VM{}))
	if !zero.HA.Equal(nullHA) {
		t.Fatalf("zero value read as %v", zero.HA)
	}
}

func TestVMHA_planPowerMustAgree(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ha      types.Object
		started types.Bool
		err     string
	}{
		{"no ha", nullHA, types.BoolValue(false), ""},
		{"started, default", haValue("started", 1, 1, true), types.BoolNull(), ""},
		{"started, started false", haValue("started", 1, 1, true), types.BoolValue(false), `ha.state is "started"`},
		{"stopped, started false", haValue("stopped", 1, 1, true), types.BoolValue(false), ""},
		{"stopped, default started", haValue("stopped", 1, 1, true), types.BoolNull(), "set started = false"},
		{"stopped, started true", haValue("stopped", 1, 1, true), types.BoolValue(true), "set started = false"},
		{"ignored, started false", haValue("ignored", 1, 1, true), types.BoolValue(false), ""},
		{"unknown started", haValue("stopped", 1, 1, true), types.BoolUnknown(), ""},
	} {
		var m proxyVMModel
		m.HA, m.Started, m.MigrateBack = tc.ha, tc.started, types.BoolNull()
		diags := planHA(m)
		switch {
		case tc.err == "" && diags.HasError():
			t.Errorf("%s: %v", tc.name, diags)
		case tc.err != "" && (!diags.HasError() || !strings.Contains(diags.Errors()[0].Detail(), tc.err)):
			t.Errorf("%s: %v, want an error saying %q", tc.name, diags, tc.err)
		case tc.err != "":
			if d, ok := diags.Errors()[0].(interface{ Path() path.Path }); !ok || !d.Path().Equal(path.Root("started")) {
				t.Errorf("%s: error not on started: %v", tc.name, diags)
			}
		}
	}
	var m proxyVMModel
	m.HA, m.Started, m.MigrateBack = haValue("started", 1, 1, true), types.BoolNull(), types.BoolValue(true)
	if d := planHA(m); d.WarningsCount() != 1 || d.HasError() {
		t.Errorf("migrate_back = true under HA: %v, want one warning", d)
	}
}

func TestVMHA_planNodeLeavesAVMHAMovedWhereItIs(t *testing.T) {
	model := func(node string, ha types.Object) *proxyVMModel {
		m := &proxyVMModel{}
		m.Name, m.VMID, m.Node, m.HA = types.StringValue("proxy-a"), types.Int64Value(100), types.StringValue(node), ha
		return m
	}
	managed, ignored := haValue("started", 1, 1, true), haValue("ignored", 1, 1, true)
	// HA moved it from pve1 to pve2; the configuration still says pve1 (recorded pve1).
	config, prior := *model("pve1", managed), model("pve2", managed)
	plan := model("pve1", managed)
	d := planHANode(config, plan, prior, "pve1", true)
	if d.HasError() || d.WarningsCount() != 1 || plan.Node.ValueString() != "pve2" {
		t.Fatalf("HA moved it: plan node %s, diags %v; want pve2 kept with a warning", plan.Node, d)
	}
	// The user changed the configured node under HA: refused on node.
	config, plan = *model("pve3", managed), model("pve3", managed)
	d = planHANode(config, plan, model("pve1", managed), "pve1", true)
	if !d.HasError() || !strings.Contains(d.Errors()[0].Detail(), "node-affinity") {
		t.Fatalf("a node change under HA: %v, want an error", d)
	}
	// Ignored: the provider's own rules (planNodeDrift, the migration).
	config, plan = *model("pve1", ignored), model("pve1", ignored)
	if d := planHANode(config, plan, model("pve2", ignored), "pve1", true); d.HasError() || d.WarningsCount() != 0 || plan.Node.ValueString() != "pve1" {
		t.Fatalf("ignored: plan node %s, diags %v", plan.Node, d)
	}
	// ha added in this plan: not yet HA's to place.
	config, plan = *model("pve1", managed), model("pve1", managed)
	if d := planHANode(config, plan, model("pve2", nullHA), "pve1", true); d.HasError() || plan.Node.ValueString() != "pve1" {
		t.Fatalf("ha added: plan node %s, diags %v", plan.Node, d)
	}
}

func TestVMHA_unreadWarning(t *testing.T) {
	d := haUnreadWarning(proxmox.ID{VMID: 100, Name: "proxy-a"}, proxmox.VM{HAUnread: true, HAUnreadWhy: "Permission check failed (/, Sys.Audit)"})
	p, ok := d.(interface{ Path() path.Path })
	if !ok || !p.Path().Equal(path.Root("ha")) || !strings.Contains(d.Detail(), "Permission check failed (/, Sys.Audit)") ||
		!strings.Contains(d.Detail(), "Sys.Audit on /") {
		t.Fatalf("warning %q: %q", d.Summary(), d.Detail())
	}
}
