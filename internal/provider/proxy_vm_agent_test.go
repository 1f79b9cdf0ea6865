package provider

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestAgentModifier_inPlace: agent_enabled switched off outside Terraform is planned back
// on, with no replacement; a create and a state without the value plan nothing.
func TestAgentModifier_inPlace(t *testing.T) {
	ctx := context.Background()
	obj := tftypes.Object{AttributeTypes: map[string]tftypes.Type{}}
	known := tfsdk.State{Raw: tftypes.NewValue(obj, map[string]tftypes.Value{})}
	null := tfsdk.State{Raw: tftypes.NewValue(obj, nil)}
	for _, tc := range []struct {
		name      string
		state     tfsdk.State
		prior     types.Bool
		wantPlan  types.Bool
		wantAgent bool
	}{
		{"switched off", known, types.BoolValue(false), types.BoolValue(true), true},
		{"on", known, types.BoolValue(true), types.BoolValue(true), true},
		{"not read", known, types.BoolNull(), types.BoolUnknown(), false},
		{"create", null, types.BoolNull(), types.BoolUnknown(), false},
	} {
		req := planmodifier.BoolRequest{Path: path.Root("agent_enabled"), State: tc.state,
			Plan: tfsdk.Plan{Raw: tftypes.NewValue(obj, map[string]tftypes.Value{})}, StateValue: tc.prior, PlanValue: types.BoolUnknown()}
		resp := planmodifier.BoolResponse{PlanValue: req.PlanValue}
		agentOn().PlanModifyBool(ctx, req, &resp)
		if resp.RequiresReplace {
			t.Errorf("%s: the plan replaces the VM", tc.name)
		}
		if !resp.PlanValue.Equal(tc.wantPlan) || resp.Diagnostics.HasError() {
			t.Errorf("%s: planned %v (%v), want %v", tc.name, resp.PlanValue, resp.Diagnostics, tc.wantPlan)
		}
	}
}

// TestAgentOff_changes: the update of a plan that switches the agent back on writes the
// agent restart option, and restarts a running VM for it (or leaves it pending with
// reboot_on_change = false); a plan with the agent on as before writes nothing for it.
func TestAgentOff_changes(t *testing.T) {
	prior := runningPrior()
	prior.AgentEnabled = types.BoolValue(false)
	plan := prior
	plan.AgentEnabled = types.BoolValue(true)
	c, changed := changesFor(prior, plan, false)
	if !changed || c.Options["agent"] != "true" || !restarts(prior.Status, c) {
		t.Errorf("agent switched back on: changed %t, options %v, restarts %t", changed, c.Options, restarts(prior.Status, c))
	}
	c.DeferRestart = true
	if restarts(prior.Status, c) {
		t.Error("reboot_on_change = false: restarted")
	}
	prior.AgentEnabled = types.BoolValue(true)
	if c, changed := changesFor(prior, plan, false); changed || len(c.Options) != 0 {
		t.Errorf("agent on already: changed %t, options %v", changed, c.Options)
	}
}

// TestAgentOff_planInPlace: the plan, through the provider's protocol server as Terraform
// drives it (refresh, schema plan modifiers, ModifyPlan), of a VM whose guest agent was
// switched off outside Terraform: an update in place, agent_enabled planned true, no
// replacement, and a warning on agent_enabled that names the restart.
func TestAgentOff_planInPlace(t *testing.T) {
	e := newNoopPlanEnv(t)
	st, err := e.state.Unmarshal(e.typ)
	if err != nil {
		t.Fatal(err)
	}
	var attrs map[string]tftypes.Value
	if err := st.As(&attrs); err != nil {
		t.Fatal(err)
	}
	var vmidF big.Float
	if err := attrs["vmid"].As(&vmidF); err != nil {
		t.Fatal(err)
	}
	vmid, _ := vmidF.Int64()
	if err := e.sim.SetVMState(int(vmid), pvesim.VMPatch{Config: map[string]string{"agent": "0"}}); err != nil {
		t.Fatal(err)
	}
	refreshed, p := e.planChange(t)
	var ref, planned map[string]tftypes.Value
	if err := refreshed.As(&ref); err != nil {
		t.Fatal(err)
	}
	pv, err := p.PlannedState.Unmarshal(e.typ)
	if err != nil {
		t.Fatal(err)
	}
	if err := pv.As(&planned); err != nil {
		t.Fatal(err)
	}
	if !ref["agent_enabled"].Equal(tftypes.NewValue(tftypes.Bool, false)) {
		t.Fatalf("refreshed agent_enabled %v, want false", ref["agent_enabled"])
	}
	if len(p.RequiresReplace) > 0 {
		t.Errorf("the plan replaces the VM for %v", p.RequiresReplace)
	}
	if !planned["agent_enabled"].Equal(tftypes.NewValue(tftypes.Bool, true)) || !planned["vmid"].Equal(ref["vmid"]) {
		t.Errorf("planned agent_enabled %v, vmid %v (was %v)", planned["agent_enabled"], planned["vmid"], ref["vmid"])
	}
	var restart bool
	for _, d := range p.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError || strings.Contains(d.Summary, "replaced") {
			t.Errorf("diagnostic %s: %s: %s", d.Severity, d.Summary, d.Detail)
		}
		if d.Summary == "Proxy VM will be restarted" && d.Attribute.Equal(tftypes.NewAttributePath().WithAttributeName("agent_enabled")) &&
			strings.Contains(d.Detail, "agent_enabled false → true") {
			restart = true
		}
	}
	if !restart {
		t.Errorf("no restart warning on agent_enabled:%s", diagText(p.Diagnostics))
	}
}

// planChange makes one plan of e's VM as it is now in the simulator: the refreshed state
// and the plan's answer, diagnostics included.
func (e *noopPlanEnv) planChange(tb testing.TB) (tftypes.Value, *tfprotov6.PlanResourceChangeResponse) {
	tb.Helper()
	config := e.dynamic(tb, e.config)
	read, err := e.srv.ReadResource(e.ctx, &tfprotov6.ReadResourceRequest{TypeName: "proxy_vm", CurrentState: e.state, Private: e.private})
	if err != nil || hasErrorDiag(read.Diagnostics) {
		tb.Fatalf("read: %v%s", err, diagText(read.Diagnostics))
	}
	refreshed, err := read.NewState.Unmarshal(e.typ)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := e.srv.PlanResourceChange(e.ctx, &tfprotov6.PlanResourceChangeRequest{
		TypeName: "proxy_vm", PriorState: read.NewState, ProposedNewState: e.dynamic(tb, proposedNew(e.sch.Block, refreshed, e.config)),
		Config: config, PriorPrivate: read.Private})
	if err != nil {
		tb.Fatal(err)
	}
	return refreshed, p
}
