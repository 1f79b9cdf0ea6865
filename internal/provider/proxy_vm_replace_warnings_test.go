package provider

import (
	"context"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestModifyPlan_replaceDropsInPlaceWarnings: a plan that replaces the VM (here: its guest
// agent switched off outside Terraform, which agentModifier replaces, while ModifyPlan does
// not see that replacement) says nothing of an in-place update: no "will be restarted" for
// a cores change (the agent-off case is a bound state: an unbound one's replace plan
// is an error, vm_binding.go), and says that it
// replaces the VM and how to keep it (adv1 finding 13). The same plan with the agent on
// keeps the in-place warnings and has no agent warning.
func TestModifyPlan_replaceDropsInPlaceWarnings(t *testing.T) {
	ctx := context.Background()
	sch := proxyVMSchema(ctx)
	typ, ok := sch.Type().TerraformType(ctx).(tftypes.Object)
	if !ok {
		t.Fatal("the schema is not an object")
	}
	nulls := map[string]tftypes.Value{}
	for k, at := range typ.AttributeTypes {
		nulls[k] = tftypes.NewValue(at, nil)
	}
	for _, agent := range []bool{true, false} {
		st := tfsdk.State{Schema: sch, Raw: tftypes.NewValue(typ, nulls)}
		var prior proxyVMModel
		if d := st.Get(ctx, &prior); d.HasError() { // typed nulls everywhere
			t.Fatal(d)
		}
		p := priorState()
		prior.ID, prior.Name, prior.VMID, prior.UID, prior.CreatedAt = p.ID, p.Name, p.VMID, p.UID, p.CreatedAt
		prior.Node, prior.Image, prior.TemplateVMID, prior.MachineType = p.Node, p.Image, p.TemplateVMID, p.MachineType
		prior.Cores, prior.MemoryMiB, prior.DiskGiB, prior.Status = p.Cores, p.MemoryMiB, p.DiskGiB, p.Status
		prior.StartOnBoot, prior.WaitForIP, prior.RebootOnChange = p.StartOnBoot, p.WaitForIP, types.BoolValue(true)
		prior.CloudInitChange, prior.AgentEnabled = types.StringValue(cloudInitChangeReplace), types.BoolValue(agent)
		if !agent { // bound: an unbound state's replace plan is an error (vm_binding.go)
			prior.SMBIOSUUID = types.StringValue("4f3c2b1a-0000-4000-8000-000000000001")
		}
		if d := st.Set(ctx, &prior); d.HasError() {
			t.Fatal(d)
		}
		planned := prior
		planned.Cores, planned.AgentEnabled = types.Int64Value(2), types.BoolValue(true)
		plan := tfsdk.Plan{Schema: sch, Raw: st.Raw}
		if d := plan.Set(ctx, &planned); d.HasError() {
			t.Fatal(d)
		}
		r := &proxyVMResource{data: &providerData{cfg: *testCfg()}}
		req := resource.ModifyPlanRequest{State: st, Plan: plan, Config: tfsdk.Config{Schema: sch, Raw: plan.Raw}}
		resp := resource.ModifyPlanResponse{Plan: plan}
		r.ModifyPlan(ctx, req, &resp)
		if resp.Diagnostics.HasError() {
			t.Fatalf("agent %t: %v", agent, resp.Diagnostics)
		}
		var got []string
		for _, d := range resp.Diagnostics.Warnings() {
			got = append(got, d.Summary())
		}
		inPlace := slices.Contains(got, "Proxy VM will be restarted") && (!agent || slices.Contains(got, summaryBinding))
		if agent != inPlace || !agent && (slices.Contains(got, "Proxy VM will be restarted") || slices.Contains(got, summaryBinding)) {
			t.Errorf("agent_enabled %t in the state (replaced: %t): warnings %q", agent, !agent, got)
		}
		// The replacement itself is said, with how to keep the VM (adv1 finding 13).
		if warned := slices.Contains(got, "Proxy VM replaced: its guest agent was switched off"); warned == agent {
			t.Errorf("agent_enabled %t in the state: agent warning %t, want %t (%q)", agent, warned, !agent, got)
		}
	}
}
