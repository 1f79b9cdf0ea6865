package provider

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// haRuleModel is proxy_ha_rule's state, plan and configuration.
type haRuleModel struct {
	ID       types.String `tfsdk:"id"`
	Name     types.String `tfsdk:"name"`
	Type     types.String `tfsdk:"type"`
	Affinity types.String `tfsdk:"affinity"`
	Nodes    types.Map    `tfsdk:"nodes"`
	Strict   types.Bool   `tfsdk:"strict"`
	VMs      types.Set    `tfsdk:"vms"`
	Comment  types.String `tfsdk:"comment"`
	Disabled types.Bool   `tfsdk:"disabled"`
	UID      types.String `tfsdk:"uid"`
}

// haRuleIDRE is a pve-configid, the format of a rule id (pve-ha-manager src/PVE/HA/Tools.pm:139-146;
// pve-common src/PVE/JSONSchema.pm:30, 254-262).
var haRuleIDRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]+$`)

// haNodeRE is a node entry's name (src/PVE/HA/Tools.pm:118-128, parse_node_priority).
var haNodeRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`)

// haRuleCommentMax is what is left of a rule comment's 4096 characters (src/PVE/HA/Rules.pm:162-167)
// once the mark line and the newline before it are added.
const haRuleCommentMax = 4096 - len("\n"+proxmox.MarkKeyHARule+"=") - 36

func haRuleSchema() schema.Schema {
	md := func(s string) (string, string) { return s, plain(s) }
	str := func(s string, a schema.StringAttribute) schema.StringAttribute {
		a.MarkdownDescription, a.Description = md(s)
		return a
	}
	strict := schema.BoolAttribute{Optional: true}
	strict.MarkdownDescription, strict.Description = md("With `node-affinity`: `true` keeps the VMs off every node " +
		"not in `nodes` (they stay stopped when none is up); " +
		"`false` or unset lets them run elsewhere when none is.")
	disabled := schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false)}
	disabled.MarkdownDescription, disabled.Description = md("`true` keeps the rule in Proxmox without applying it. Default `false`.")
	nodes := schema.MapAttribute{
		Optional: true, ElementType: types.Int64Type,
		Validators: []validator.Map{
			mapvalidator.SizeAtLeast(1),
			mapvalidator.KeysAre(stringvalidator.RegexMatches(haNodeRE, "must be a node name")),
			mapvalidator.ValueInt64sAre(int64validator.AtLeast(0)),
		},
	}
	nodes.MarkdownDescription, nodes.Description = md("With `node-affinity`: the nodes the VMs may run on, each with its priority " +
		"(`{ pve1 = 1, pve2 = 0 }`; a higher number is preferred, `0` for no preference).")
	vms := schema.SetAttribute{
		Required: true, ElementType: types.Int64Type,
		Validators: []validator.Set{
			setvalidator.SizeAtLeast(1),
			setvalidator.ValueInt64sAre(int64validator.Between(100, 999999999)),
		},
	}
	vms.MarkdownDescription, vms.Description = md("The VMIDs of the VMs the rule applies to, typically `proxy_vm.x[*].vmid`. " +
		"Each must be an HA resource: set `ha` on its `proxy_vm`.")
	desc, plainDesc := md("An HA rule of Proxmox VE 9: keep VMs apart or together (`resource-affinity`), or on chosen " +
		"nodes (`node-affinity`). " +
		"It changes and deletes only a rule it created, which it marks in the rule's comment.")
	return schema.Schema{
		MarkdownDescription: desc, Description: plainDesc,
		Attributes: map[string]schema.Attribute{
			"id": str("The rule id, as `name`.", schema.StringAttribute{
				Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			}),
			"name": str("The rule id in Proxmox: a letter, then letters, digits, `-` or `_`. Changing it replaces the rule.", schema.StringAttribute{
				Required: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{stringvalidator.RegexMatches(haRuleIDRE, "must start with a letter, "+
					"then letters, digits, - or _ (at least two characters)")},
			}),
			"type": str("`resource-affinity` (keeps `vms` apart or together, with `affinity`) or `node-affinity` "+
				"(keeps them on `nodes`). Changing it replaces the rule.",
				schema.StringAttribute{
					Required: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
					Validators: []validator.String{stringvalidator.OneOf(proxmox.HARuleResourceAffinity, proxmox.HARuleNodeAffinity)},
				}),
			"affinity": str("With `resource-affinity`: `negative` keeps the VMs on different nodes, `positive` on the "+
				"same node.", schema.StringAttribute{
				Optional: true, Validators: []validator.String{stringvalidator.OneOf("negative", "positive")},
			}),
			"nodes":  nodes,
			"strict": strict,
			"vms":    vms,
			"comment": str("A comment for the rule, shown in Proxmox. The provider adds its mark line after it.", schema.StringAttribute{
				Optional: true, Validators: []validator.String{stringvalidator.LengthAtMost(haRuleCommentMax)},
			}),
			"disabled": disabled,
			"uid": str("The uid in the rule's mark, minted at create: the rule is this resource's only while its "+
				"comment carries it.", schema.StringAttribute{
				Computed: true, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			}),
		},
	}
}

// validateHARule checks what the attributes' own validators cannot: which attributes go
// with which type, and the counts Proxmox's checks require (a resource-affinity rule of
// fewer than two VMs is refused as ineffective, src/PVE/HA/Rules/ResourceAffinity.pm:147-174).
// Unknown values are left to the plan that knows them.
func validateHARule(c haRuleModel) diag.Diagnostics {
	var diags diag.Diagnostics
	typ, ok := knownString(c.Type)
	if !ok {
		return nil
	}
	onlyWith := func(p string, v attr.Value, with string) {
		if !v.IsNull() {
			diags.AddAttributeError(path.Root(p), "Invalid "+p,
				fmt.Sprintf("%s applies only to type = %q, and this rule is %q. Remove %s, or change type.", p, with, typ, p))
		}
	}
	switch typ {
	case proxmox.HARuleResourceAffinity:
		if c.Affinity.IsNull() {
			diags.AddAttributeError(path.Root("affinity"), "Missing affinity",
				`A resource-affinity rule needs affinity: "negative" to keep the VMs on different nodes, "positive" to keep them together.`)
		}
		onlyWith("nodes", c.Nodes, proxmox.HARuleNodeAffinity)
		onlyWith("strict", c.Strict, proxmox.HARuleNodeAffinity)
		if !c.VMs.IsUnknown() && !c.VMs.IsNull() {
			if n := len(c.VMs.Elements()); n < 2 && !hasUnknownElement(c.VMs) {
				diags.AddAttributeError(path.Root("vms"), "Invalid vms",
					fmt.Sprintf("A resource-affinity rule needs at least two VMs (Proxmox refuses one of fewer as ineffective); vms has %d.", n))
			}
		}
	case proxmox.HARuleNodeAffinity:
		if c.Nodes.IsNull() {
			diags.AddAttributeError(path.Root("nodes"), "Missing nodes",
				"A node-affinity rule needs nodes: the nodes its VMs may run on, each with a priority, e.g. { pve1 = 1, pve2 = 0 }.")
		}
		onlyWith("affinity", c.Affinity, proxmox.HARuleResourceAffinity)
	}
	if text, ok := knownString(c.Comment); ok && strings.Contains(text, proxmox.MarkKeyHARule+"=") {
		diags.AddAttributeError(path.Root("comment"), "Invalid comment",
			fmt.Sprintf("comment may not contain %s=, the line the provider marks its rules with.", proxmox.MarkKeyHARule))
	}
	return diags
}

func hasUnknownElement(s types.Set) bool {
	return slices.ContainsFunc(s.Elements(), attr.Value.IsUnknown)
}

// spec is the rule m declares, for the resource of uid.
func (m haRuleModel) spec(ctx context.Context, uid string) (proxmox.HARuleSpec, diag.Diagnostics) {
	var diags diag.Diagnostics
	s := proxmox.HARuleSpec{
		ID: m.Name.ValueString(), Type: m.Type.ValueString(), Affinity: m.Affinity.ValueString(),
		Strict: m.Strict.ValueBool(), Comment: m.Comment.ValueString(), Disabled: m.Disabled.ValueBool(), UID: uid,
	}
	var vms []int64
	diags.Append(m.VMs.ElementsAs(ctx, &vms, false)...)
	for _, v := range vms {
		s.VMIDs = append(s.VMIDs, int(v))
	}
	slices.Sort(s.VMIDs)
	if !m.Nodes.IsNull() {
		var nodes map[string]int64
		diags.Append(m.Nodes.ElementsAs(ctx, &nodes, false)...)
		s.Nodes = make(map[string]int, len(nodes))
		for k, v := range nodes {
			s.Nodes[k] = int(v)
		}
	}
	return s, diags
}

// read maps a rule read back into m. The optional attributes Proxmox reads back as their
// defaults (an empty comment, strict false) keep the null the state had.
func (m *haRuleModel) read(r proxmox.HARule) {
	m.ID = types.StringValue(r.ID)
	m.Name = types.StringValue(r.ID)
	m.Type = types.StringValue(r.Type)
	m.UID = types.StringValue(r.UID)
	m.Affinity = types.StringNull()
	if r.Affinity != "" {
		m.Affinity = types.StringValue(r.Affinity)
	}
	m.Nodes = types.MapNull(types.Int64Type)
	if r.Type == proxmox.HARuleNodeAffinity && len(r.Nodes) > 0 {
		elems := make(map[string]attr.Value, len(r.Nodes))
		for _, k := range slices.Sorted(maps.Keys(r.Nodes)) {
			elems[k] = types.Int64Value(int64(r.Nodes[k]))
		}
		m.Nodes = types.MapValueMust(types.Int64Type, elems)
	}
	switch {
	case r.Strict:
		m.Strict = types.BoolValue(true)
	case r.Type != proxmox.HARuleNodeAffinity || m.Strict.IsNull() || m.Strict.IsUnknown():
		m.Strict = types.BoolNull()
	default:
		m.Strict = types.BoolValue(false)
	}
	vms := make([]attr.Value, len(r.VMIDs))
	for i, v := range r.VMIDs {
		vms[i] = types.Int64Value(int64(v))
	}
	m.VMs = types.SetValueMust(types.Int64Type, vms)
	switch {
	case r.Comment != "":
		m.Comment = types.StringValue(r.Comment)
	case m.Comment.IsUnknown() || m.Comment.ValueString() != "":
		m.Comment = types.StringNull()
	}
	m.Disabled = types.BoolValue(r.Disabled)
}
