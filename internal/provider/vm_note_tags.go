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

// vmNoteTags is the note-and-tags facet (vm_facet.go): the user tags, the human note in
// the description and the protection flag (proxmox/note_tags.go). All three change in
// place without a restart; its plan checks are the attributes' validators.
//
// proxy_vms lists VMs without them.
type vmNoteTags struct {
	facetBase                // no plan
	Tags        types.Set    `tfsdk:"tags"`
	Description types.String `tfsdk:"description"`
	Protection  types.Bool   `tfsdk:"protection"`
}

// maxNoteBytes leaves room for the mark in Proxmox's 8192-character description limit.
const maxNoteBytes = 7168

// noteTagsAttrs are the note-and-tags facet's attributes.
func noteTagsAttrs() []facetAttr {
	return []facetAttr{{
		name:   "tags",
		md:     "Proxmox tags besides `proxy_operator`: lowercase letters, digits, `_`, `-`, `+`, `.`.",
		change: "Unset: left alone; set (even `[]`): exactly these, changed in place.",
		resource: schema.SetAttribute{
			ElementType:   types.StringType,
			Optional:      true,
			Computed:      true,
			PlanModifiers: []planmodifier.Set{setplanmodifier.UseStateForUnknown()},
			Validators: []validator.Set{setvalidator.ValueStringsAre(
				validators.Tag(),
				stringvalidator.NoneOf(proxmox.ManagedTag),
			)},
		},
	}, {
		name:   "description",
		md:     "A human note in the VM's Proxmox description (its *Notes*), after the [mark](../index.md#glossary) lines.",
		change: "Up to 7168 bytes, no trailing newline. Unset: left alone; `\"\"` removes it. Changed in place.",
		read:   "Read as every line of the description that is not a mark line; empty when there is none.",
		resource: schema.StringAttribute{
			Optional:      true,
			Computed:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			Validators:    []validator.String{stringvalidator.LengthAtMost(maxNoteBytes), noteValidator()},
		},
	}, {
		name:   "protection",
		md:     "Proxmox's protection flag.",
		change: "With `true`, Proxmox and this provider refuse to destroy the VM. Default `false` (see [Protection](#protection)).",
		read:   "`true` when it is set.",
		resource: schema.BoolAttribute{
			Optional: true,
			Computed: true,
			Default:  booldefault.StaticBool(false),
		},
	}}
}

// read takes the user tags, the note and the flag of the VM as the backend read it.
func (n *vmNoteTags) read(fc *facetCtx) {
	vm := fc.vm
	tags := proxmox.UserTags(vm.Tags)
	elems := make([]attr.Value, len(tags))
	for i, t := range tags {
		elems[i] = types.StringValue(t)
	}
	n.Tags = types.SetValueMust(types.StringType, elems)
	n.Description = types.StringValue(vm.Note)
	n.Protection = types.BoolValue(vm.Protected)
}

// nullUnknown nulls the values still unknown (the partial state of a create).
func (n *vmNoteTags) nullUnknown() {
	if n.Tags.IsUnknown() || n.Tags.ElementType(context.Background()) == nil {
		n.Tags = types.SetNull(types.StringType)
	}
	if n.Description.IsUnknown() {
		n.Description = types.StringNull()
	}
	if n.Protection.IsUnknown() {
		n.Protection = types.BoolNull()
	}
}

// spec puts the planned tags, note and protection into a create.
func (n vmNoteTags) spec(fc *facetCtx) {
	s := fc.spec
	if tags, ok := knownTags(n.Tags); ok {
		s.Tags = &tags
	}
	if v, ok := knownString(n.Description); ok {
		s.Note = &v
	}
	s.Protection = !n.Protection.IsUnknown() && n.Protection.ValueBool()
}

// changes puts the tags, note and protection that change from the prior ones into an
// update.
func (n vmNoteTags) changes(fc *facetCtx) {
	prior, c := fc.prior.vmNoteTags, fc.changes
	changed := false
	if tags, ok := knownTags(n.Tags); ok && !n.Tags.Equal(prior.Tags) {
		c.Tags, changed = &tags, true
	}
	if v, ok := knownString(n.Description); ok && !n.Description.Equal(prior.Description) {
		c.Note, changed = &v, true
	}
	if !n.Protection.IsNull() && !n.Protection.IsUnknown() && !n.Protection.Equal(prior.Protection) {
		v := n.Protection.ValueBool()
		c.Protection, changed = &v, true
	}
	fc.changed = fc.changed || changed
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

// noteValidator refuses a note that would mix with the mark or not survive Proxmox's
// trailing-whitespace strip.
func noteValidator() validator.String {
	return validators.Check(
		"must not contain a mark line (proxy-operator-...=...) nor end with whitespace",
		func(s string) (string, string) {
			switch {
			case proxmox.NoteHasMarkLine(s):
				return summaryInvalidConfig, "description holds a line of the form proxy-operator-...=..., which the ownership mark reads: " +
					"the mark is " +
					"the provider's own. Reword or remove that line."
			case s != strings.TrimRight(s, " \t\r\n"):
				return summaryInvalidConfig, "description ends with whitespace or a newline, which Proxmox strips, " +
					"so every plan would show it as a change. " +
					"Remove it (for a heredoc: description = chomp(<<-EOT ... EOT))."
			}
			return "", ""
		},
	)
}
