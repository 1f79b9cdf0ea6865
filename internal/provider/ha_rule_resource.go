package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var (
	_ resource.Resource                   = (*haRuleResource)(nil)
	_ resource.ResourceWithConfigure      = (*haRuleResource)(nil)
	_ resource.ResourceWithImportState    = (*haRuleResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*haRuleResource)(nil)
	_ resource.ResourceWithValidateConfig = (*haRuleResource)(nil)
)

// haRuleResource is proxy_ha_rule: one Proxmox HA rule (pve-ha-manager
// src/PVE/API2/HA/Rules.pm), made, changed and deleted only while its comment carries the
// resource's mark (decision: ha-rule-mark).
type haRuleResource struct{ data *providerData }

// NewHARuleResource is the proxy_ha_rule resource factory.
func NewHARuleResource() resource.Resource { return &haRuleResource{} }

func (r *haRuleResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_ha_rule"
}

func (r *haRuleResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = haRuleSchema()
}

func (r *haRuleResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *haRuleResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var c haRuleModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &c)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(validateHARule(c)...)
}

// configured reports whether the provider handed over its data.
func (r *haRuleResource) configured(verb string, diags *diag.Diagnostics) bool {
	if r.data != nil && r.data.backend != nil {
		return true
	}
	diags.AddError("Unable to "+verb+" HA rule",
		"The proxy provider is not configured. This is a bug in the provider or in Terraform; please report it.")
	return false
}

// ModifyPlan runs the HA preflight for a create, an update or a destroy: a token that may not
// manage HA rules fails the plan, naming the privilege and its path.
func (r *haRuleResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.data == nil || r.data.backend == nil || req.State.Raw.IsNull() && req.Plan.Raw.IsNull() {
		return
	}
	ctx = r.data.withLogging(ctx)
	if !req.State.Raw.IsNull() && req.Plan.Raw.Equal(req.State.Raw) {
		return // nothing to write
	}
	from := req.Plan.Raw
	if from.IsNull() {
		from = req.State.Raw // a destroy: the delete needs the privilege too
	}
	var name string
	if v, err := from.ApplyTerraform5AttributePathStep(tftypes.AttributeName("name")); err == nil {
		_ = v.(tftypes.Value).As(&name)
	}
	haPreflight(ctx, r.data, fmt.Sprintf("HA rule %q", name), &resp.Diagnostics)
}

func (r *haRuleResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	if !r.configured("create", &resp.Diagnostics) {
		return
	}
	ctx = r.data.withLogging(ctx)
	var plan haRuleModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	uid, err := newUID()
	if err != nil {
		resp.Diagnostics.AddError("Unable to create HA rule", err.Error())
		return
	}
	s, diags := plan.spec(ctx, uid)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.data.backend.CreateHARule(ctx, s); err != nil {
		resp.Diagnostics.AddError("Unable to create HA rule", r.detail(err, "Nothing was saved in the state."))
		return
	}
	tflog.Info(ctx, "HA rule created", map[string]any{"rule": s.ID, "uid": uid})
	r.readBack(ctx, s, uid, "created", &plan, &resp.State, &resp.Diagnostics)
}

// readBack reads the rule just written into m and sets the state. When the read fails the
// rule is written all the same: the state keeps what was written, with a warning, and the
// next refresh reads it back.
func (r *haRuleResource) readBack(ctx context.Context, s proxmox.HARuleSpec, uid, verb string, m *haRuleModel,
	state *tfsdk.State, diags *diag.Diagnostics) {
	got, err := r.data.backend.GetHARule(ctx, s.ID, uid)
	if err != nil {
		got = proxmox.HARule{HARuleSpec: s}
		diags.AddWarning("HA rule "+verb+" but not read back", r.detail(err, "The state holds what was written; the "+
			"next refresh reads it again."))
	}
	m.read(got)
	r.warnInfeasible(got, diags)
	diags.Append(state.Set(ctx, m)...)
}

func (r *haRuleResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if !r.configured("read", &resp.Diagnostics) {
		return
	}
	ctx = r.data.withLogging(ctx)
	var state haRuleModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	got, err := r.data.backend.GetHARule(ctx, state.Name.ValueString(), state.UID.ValueString())
	switch {
	case errors.Is(err, proxmox.ErrNotFound):
		tflog.Info(ctx, "HA rule gone, removed from the state", map[string]any{"rule": state.Name.ValueString()})
		resp.State.RemoveResource(ctx) // deleted outside Terraform: the next plan makes it again
		return
	case errors.Is(err, proxmox.ErrHARuleNotOurs):
		// Reported, never written: the state stays as it was, and an update or a destroy
		// fails naming the rule.
		resp.Diagnostics.AddWarning("HA rule is not shown to be this resource's", r.detail(err, ""))
		return
	case err != nil:
		resp.Diagnostics.AddError("Unable to read HA rule", r.detail(err, ""))
		return
	}
	state.read(got)
	r.warnInfeasible(got, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *haRuleResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	if !r.configured("update", &resp.Diagnostics) {
		return
	}
	ctx = r.data.withLogging(ctx)
	var plan, prior haRuleModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	uid := prior.UID.ValueString()
	s, diags := plan.spec(ctx, uid)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.data.backend.UpdateHARule(ctx, s); err != nil {
		resp.Diagnostics.AddError("Unable to update HA rule", r.detail(err, "The rule was not changed."))
		return
	}
	r.readBack(ctx, s, uid, "updated", &plan, &resp.State, &resp.Diagnostics)
}

func (r *haRuleResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	if !r.configured("delete", &resp.Diagnostics) {
		return
	}
	ctx = r.data.withLogging(ctx)
	var state haRuleModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.data.backend.DeleteHARule(ctx, state.Name.ValueString(), state.UID.ValueString()); err != nil {
		resp.Diagnostics.AddError("Unable to delete HA rule", r.detail(err, "The rule was not deleted, and stays in the state."))
	}
}

// ImportState imports a rule by its id; only a rule a proxy_ha_rule made (its comment
// carries the mark) is taken, with the mark's uid.
func (r *haRuleResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !r.configured("import", &resp.Diagnostics) {
		return
	}
	ctx = r.data.withLogging(ctx)
	if !haRuleIDRE.MatchString(req.ID) {
		resp.Diagnostics.AddError("Unable to import HA rule",
			fmt.Sprintf("%q is not an HA rule id: the import id is the rule's id as Proxmox lists it (Datacenter > HA "+
				"> Rules), e.g. proxy-pair.", req.ID))
		return
	}
	got, err := r.data.backend.ImportHARule(ctx, req.ID)
	if err != nil {
		resp.Diagnostics.AddError("Unable to import HA rule", r.detail(err, "Nothing was imported."))
		return
	}
	var m haRuleModel
	m.read(got)
	r.warnInfeasible(got, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// warnInfeasible says when Proxmox keeps the rule but does not apply it (its feasibility
// checks hold something against it).
func (r *haRuleResource) warnInfeasible(got proxmox.HARule, diags *diag.Diagnostics) {
	if len(got.Errors) == 0 {
		return
	}
	var reasons []string
	for _, k := range sortedKeys(got.Errors) {
		for _, e := range got.Errors[k] {
			reasons = append(reasons, k+": "+e)
		}
	}
	diags.AddWarning("HA rule not applied by Proxmox",
		fmt.Sprintf("Proxmox keeps HA rule %q but does not apply it: %s. Change the rule, or the rules it conflicts "+
			"with.", got.ID, strings.Join(reasons, "; ")))
}

// detail is err for a diagnostic, secrets masked, followed by after.
func (r *haRuleResource) detail(err error, after string) string {
	msg := capitalize(trimEnd(redactFor(r.data, err.Error()))) + "."
	if after != "" {
		msg += " " + after
	}
	return msg
}

// redactFor masks the provider's secrets in s.
func redactFor(d *providerData, s string) string {
	if d == nil {
		return s
	}
	return redact(s, d.secrets())
}
