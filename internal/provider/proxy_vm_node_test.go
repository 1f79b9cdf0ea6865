package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestPlanProxyVM_nodeUnsetIsPlacedOnMultiNodeProviders: without node, two nodes leave the
// node unknown (placed at create) and no error; one node plans that node; an update keeps
// the node the VM is on.
func TestPlanProxyVM_nodeUnsetIsPlacedOnMultiNodeProviders(t *testing.T) {
	cfg := testCfg()
	cfg.Nodes = []string{"pve1", "pve2"}
	config := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Image, m.MachineType = types.StringValue("debian-13"), types.StringValue("small")
	})
	plan := planFrom(config)
	if _, d := planFacets(cfg, config, &plan, nil, false); d.HasError() {
		t.Fatal(d)
	}
	if !plan.Node.IsUnknown() {
		t.Errorf("node %v, want unknown until the create places it", plan.Node)
	}
	cfg.Nodes = []string{"pve2"}
	plan = planFrom(config)
	if _, d := planFacets(cfg, config, &plan, nil, false); d.HasError() || plan.Node.ValueString() != "pve2" {
		t.Errorf("one node: %v %v", plan.Node, d)
	}
	cfg.Nodes = []string{"pve1", "pve2"}
	prior := planFrom(config)
	prior.Node = types.StringValue("pve2")
	plan = planFrom(config)
	plan.Node = prior.Node // UseStateForUnknown
	if _, d := planFacets(cfg, config, &plan, &prior, false); d.HasError() || plan.Node.ValueString() != "pve2" {
		t.Errorf("update without node: %v %v", plan.Node, d)
	}
}

// TestPlanNodeDrift_migrateBackFalseAcceptsOnlyDrift: with migrate_back = false a VM found
// elsewhere keeps its node in the plan when the configured node is the recorded one, and a
// changed configured node still plans the move; with migrate_back true (or unset) the
// configured node is planned.
func TestPlanNodeDrift_migrateBackFalseAcceptsOnlyDrift(t *testing.T) {
	for _, tc := range []struct {
		name       string
		back       types.Bool
		configured string
		recorded   string
		hasRecord  bool
		want       string
	}{
		{"drift accepted", types.BoolValue(false), "pve1", "pve1", true, "pve2"},
		{"configuration changed", types.BoolValue(false), "pve3", "pve1", true, "pve3"},
		{"no record yet", types.BoolValue(false), "pve1", "", false, "pve1"},
		{"migrate back", types.BoolValue(true), "pve1", "pve1", true, "pve1"},
		{"migrate back by default", types.BoolNull(), "pve1", "pve1", true, "pve1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := cfgModel("proxy-a", func(m *proxyVMModel) {
				m.Node, m.MigrateBack = types.StringValue(tc.configured), tc.back
			})
			prior := config
			prior.Node = types.StringValue("pve2") // where Proxmox has it
			plan := config
			planNodeDrift(config, &plan, &prior, tc.recorded, tc.hasRecord)
			if plan.Node.ValueString() != tc.want {
				t.Errorf("planned node %v, want %s", plan.Node, tc.want)
			}
		})
	}
}

// TestChangesFor_nodeChangeIsAMigration: a planned node other than the one the VM is on is
// an in-place change naming the target; the same node is none.
func TestChangesFor_nodeChangeIsAMigration(t *testing.T) {
	prior := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Node, m.Status = types.StringValue("pve2"), types.StringValue(statusRunning)
	})
	plan := prior
	plan.Node = types.StringValue("pve1")
	c, changed := changesFor(prior, plan, false)
	if !changed || c.Node == nil || *c.Node != "pve1" {
		t.Errorf("changes %+v changed %v", c, changed)
	}
	if c, changed := changesFor(prior, prior, false); changed || c.Node != nil {
		t.Errorf("no node change: %+v %v", c, changed)
	}
}
