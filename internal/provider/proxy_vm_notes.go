package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// User tags, the human description and the protection flag (proxmox/note_tags.go).

// maxNoteBytes leaves room for the mark in Proxmox's 8192-character description limit.
const maxNoteBytes = 7168

func notesAttributes() map[string]schema.Attribute {
	return withPlainAttributes(map[string]schema.Attribute{
		"tags": schema.SetAttribute{
			ElementType: types.StringType,
			Optional:    true,
			Computed:    true,
			MarkdownDescription: "Proxmox tags of the VM besides `proxy_operator`, which the provider always sets and keeps. " +
				"Each tag is what Proxmox stores: lowercase letters, digits and `_`, then also `-`, `+` and `.` " +
				"(`^[a-z0-9_][a-z0-9_\\-+.]*$`); uppercase is refused rather than folded, so the plan never differs from " +
				"what Proxmox keeps. A set: Proxmox sorts tags, so order does not matter. Unset: the tags the VM has (the " +
				"template's, or an operator's) are left as they are and shown here; set (even to `[]`): exactly these, " +
				"changed in place without a restart.",
			PlanModifiers: []planmodifier.Set{setplanmodifier.UseStateForUnknown()},
			Validators: []validator.Set{setvalidator.ValueStringsAre(
				validators.Tag(),
				stringvalidator.NoneOf(proxmox.ManagedTag),
			)},
		},
		"description": schema.StringAttribute{
			Optional: true,
			Computed: true,
			MarkdownDescription: "A human note in the VM's Proxmox description (its *Notes*), kept apart from the ownership " +
				"mark: the mark lines (`proxy-operator-...=...`) stay first and are never changed by this attribute; the note " +
				"follows them after a blank line, and is read back as every description line that is not a mark line. A " +
				"note may not contain a mark line, nor end with whitespace or a newline (Proxmox strips it, which would show " +
				"as a change on every plan: use `chomp()` on a heredoc). Up to 7168 bytes. Unset: whatever note the VM has " +
				"is left alone and shown here; `\"\"` removes it. Changed in place without a restart.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			Validators:    []validator.String{stringvalidator.LengthAtMost(maxNoteBytes), noteValidator{}},
		},
		"protection": schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(false),
			MarkdownDescription: "Proxmox's protection flag: with `true`, Proxmox refuses to remove the VM or its disks, and " +
				"so does this provider's destroy, before anything is touched (no stop, no seed delete), saying how to " +
				"proceed. The provider never clears the flag during a destroy: to destroy a protected VM, set " +
				"`protection = false` and apply (that clears it in place), then destroy or replace. A create sets the flag " +
				"as its last step, so a create that fails leaves a VM its destroy can remove. Default `false` (the " +
				"configuration manages the flag: a flag set outside Terraform shows as a change back to `false`).",
		},
	})
}

// noteValidator refuses a note that would mix with the mark or not survive Proxmox's
// trailing-whitespace strip.
type noteValidator struct{}

func (noteValidator) Description(context.Context) string {
	return "must not contain a mark line (proxy-operator-...=...) nor end with whitespace"
}

func (v noteValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (noteValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	s, ok := knownString(req.ConfigValue)
	if !ok {
		return
	}
	switch {
	case proxmox.NoteHasMarkLine(s):
		resp.Diagnostics.AddAttributeError(req.Path, summaryInvalidConfig,
			"description holds a line of the form proxy-operator-...=..., which the ownership mark reads: the mark is "+
				"the provider's own. Reword or remove that line.")
	case s != strings.TrimRight(s, " \t\r\n"):
		resp.Diagnostics.AddAttributeError(req.Path, summaryInvalidConfig,
			"description ends with whitespace or a newline, which Proxmox strips, so every plan would show it as a change. "+
				"Remove it (for a heredoc: description = chomp(<<-EOT ... EOT)).")
	}
}

// applyConcepts copies what the backend read beyond applyVM's fields: addresses, network, user tags,
// note and protection.
func applyConcepts(m *proxyVMModel, vm proxmox.VM) {
	applyAddresses(m, vm)
	applyNetwork(m, vm)
	tags := proxmox.UserTags(vm.Tags)
	elems := make([]attr.Value, len(tags))
	for i, t := range tags {
		elems[i] = types.StringValue(t)
	}
	m.Tags = types.SetValueMust(types.StringType, elems)
	m.Description = types.StringValue(vm.Note)
	m.Protection = types.BoolValue(vm.Protected)
	importedStarted(m, vm)
}

// nullUnknownConcepts nulls the values of conceptAttributes still unknown (the partial state
// of a create).
func nullUnknownConcepts(m *proxyVMModel) {
	nullUnknownAddresses(m)
	applyNetwork(m, proxmox.VM{}) // types a zero static_ipv4
	if m.Tags.IsUnknown() || m.Tags.ElementType(context.Background()) == nil {
		m.Tags = types.SetNull(types.StringType)
	}
	if m.Description.IsUnknown() {
		m.Description = types.StringNull()
	}
	if m.Protection.IsUnknown() {
		m.Protection = types.BoolNull()
	}
	if m.Started.IsUnknown() {
		m.Started = types.BoolNull()
	}
}

// applyConceptsSpec puts the planned tags, note and protection into a create's spec.
func applyConceptsSpec(s *proxmox.Spec, plan proxyVMModel) {
	if tags, ok := knownTags(plan.Tags); ok {
		s.Tags = &tags
	}
	if v, ok := knownString(plan.Description); ok {
		s.Note = &v
	}
	s.Protection = !plan.Protection.IsUnknown() && plan.Protection.ValueBool()
	startedSpec(s, plan)
}

// conceptChanges puts the changed tags, note and protection into an update; it reports
// whether there was any.
func conceptChanges(c *proxmox.Changes, prior, plan proxyVMModel) bool {
	changed := startedChanges(c, prior, plan)
	if tags, ok := knownTags(plan.Tags); ok && !plan.Tags.Equal(prior.Tags) {
		c.Tags, changed = &tags, true
	}
	if v, ok := knownString(plan.Description); ok && !plan.Description.Equal(prior.Description) {
		c.Note, changed = &v, true
	}
	if !plan.Protection.IsNull() && !plan.Protection.IsUnknown() && !plan.Protection.Equal(prior.Protection) {
		v := plan.Protection.ValueBool()
		c.Protection, changed = &v, true
	}
	return changed
}

// knownTags is a known set of tags as a slice.
func knownTags(s types.Set) ([]string, bool) {
	if s.IsNull() || s.IsUnknown() {
		return nil, false
	}
	out := []string{}
	for _, e := range s.Elements() {
		if v, ok := e.(types.String); ok && !v.IsUnknown() && !v.IsNull() {
			out = append(out, v.ValueString())
		} else {
			return nil, false
		}
	}
	return out, true
}
