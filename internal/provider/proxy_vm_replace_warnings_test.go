package provider

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// modifyPlanOf runs ModifyPlan on a running VM's bound state (cores 1 planned 2, so a
// restart if the VM is kept), with edit applied to the prior and planned models.
func modifyPlanOf(t *testing.T, edit func(prior, planned *proxyVMModel)) resource.ModifyPlanResponse {
	t.Helper()
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
	prior.CloudInitChange, prior.AgentEnabled = types.StringValue(cloudInitChangeReplace), types.BoolValue(true)
	prior.SMBIOSUUID = types.StringValue("4f3c2b1a-0000-4000-8000-000000000001")
	planned := prior
	planned.Cores = types.Int64Value(2)
	edit(&prior, &planned)
	if d := st.Set(ctx, &prior); d.HasError() {
		t.Fatal(d)
	}
	plan := tfsdk.Plan{Schema: sch, Raw: st.Raw}
	if d := plan.Set(ctx, &planned); d.HasError() {
		t.Fatal(d)
	}
	r := &proxyVMResource{data: &providerData{cfg: *testCfg()}}
	req := resource.ModifyPlanRequest{State: st, Plan: plan, Config: tfsdk.Config{Schema: sch, Raw: plan.Raw}}
	resp := resource.ModifyPlanResponse{Plan: plan}
	r.ModifyPlan(ctx, req, &resp)
	return resp
}

// warningSummaries are the summaries of the warnings of diags.
func warningSummaries(resp resource.ModifyPlanResponse) []string {
	var got []string
	for _, d := range resp.Diagnostics.Warnings() {
		got = append(got, d.Summary())
	}
	return got
}

// TestModifyPlan_replaceDropsInPlaceWarnings: a plan that replaces the VM (here: a smaller
// disk_gib, which diskShrinkRequiresReplace replaces while ModifyPlan does not see that
// replacement) says nothing of an in-place update: no "will be restarted" for a cores
// change, no binding warning. The same plan with the disk kept keeps the in-place
// warnings.
func TestModifyPlan_replaceDropsInPlaceWarnings(t *testing.T) {
	for _, shrink := range []bool{false, true} {
		resp := modifyPlanOf(t, func(prior, planned *proxyVMModel) {
			prior.DiskGiB = types.Int64Value(16)
			planned.DiskGiB = types.Int64Value(16)
			if shrink {
				planned.DiskGiB = types.Int64Value(8)
			}
		})
		if resp.Diagnostics.HasError() {
			t.Fatalf("shrink %t: %v", shrink, resp.Diagnostics)
		}
		if got := warningSummaries(resp); slices.Contains(got, "Proxy VM will be restarted") == shrink {
			t.Errorf("disk shrinks %t (replaced): warnings %q", shrink, got)
		}
	}
}

// TestModifyPlan_agentOffInPlace: a bound VM whose guest agent was switched off outside
// Terraform is kept: the plan replaces nothing, warns that the VM is restarted to switch
// the agent back on (or, with reboot_on_change = false, that the change stays pending),
// and says nothing of a replacement. An unbound state's plan still stops (vm_binding.go):
// nothing shows its VM is the resource's, so it is not written to on a guess.
func TestModifyPlan_agentOffInPlace(t *testing.T) {
	for _, reboot := range []bool{true, false} {
		resp := modifyPlanOf(t, func(prior, planned *proxyVMModel) {
			prior.AgentEnabled, planned.AgentEnabled = types.BoolValue(false), types.BoolValue(true)
			planned.Cores = prior.Cores
			prior.RebootOnChange, planned.RebootOnChange = types.BoolValue(reboot), types.BoolValue(reboot)
		})
		if resp.Diagnostics.HasError() || len(resp.RequiresReplace) > 0 {
			t.Fatalf("reboot_on_change %t: replace %v, %v", reboot, resp.RequiresReplace, resp.Diagnostics)
		}
		want := "Proxy VM will be restarted"
		if !reboot {
			want = "Proxy VM change pending"
		}
		var found bool
		for _, d := range resp.Diagnostics.Warnings() {
			if strings.Contains(strings.ToLower(d.Summary()), "replace") {
				t.Errorf("reboot_on_change %t: warning %q: %s", reboot, d.Summary(), d.Detail())
			}
			if wp, ok := d.(diag.DiagnosticWithPath); ok && d.Summary() == want && wp.Path().Equal(path.Root("agent_enabled")) {
				found = true
			}
		}
		if !found {
			t.Errorf("reboot_on_change %t: no %q on agent_enabled: %q", reboot, want, warningSummaries(resp))
		}
	}
	resp := modifyPlanOf(t, func(prior, planned *proxyVMModel) {
		prior.AgentEnabled, planned.AgentEnabled = types.BoolValue(false), types.BoolValue(true)
		prior.SMBIOSUUID, planned.SMBIOSUUID = types.StringNull(), types.StringNull()
	})
	if errs := resp.Diagnostics.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Detail(), "agent_enabled = false") {
		t.Errorf("unbound state: want the plan stopped, naming agent_enabled = false: %v", resp.Diagnostics)
	}
}
