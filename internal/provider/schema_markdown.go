package provider

import (
	"regexp"
	"sort"
	"strings"

	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
)

// withMarkdown gives every attribute of a resource schema written with a plain Description
// its markdown form, so that the documentation and the language server show descriptions
// in one format on every object (the data sources and the provider write markdown and
// derive the plain text). The markdown is the plain text with code spans around the
// schema's own attribute names (and the provider's attributes and the ID forms they
// mention). The plain Description is kept for tools that do not render markdown.
func withMarkdown(s schema.Schema) schema.Schema {
	names := map[string]bool{}
	for n := range s.Attributes {
		if strings.Contains(n, "_") {
			names[n] = true
		}
	}
	for _, n := range []string{"uid_namespace", "vmid_range", "machine_types", "vendor_data", "iso_storage", "max_requests_in_flight"} {
		names[n] = true
	}
	md := func(plain string) string { return markdownOf(plain, names) }
	if s.MarkdownDescription == "" {
		s.MarkdownDescription = md(s.Description)
	}
	for k, a := range s.Attributes {
		switch v := a.(type) {
		case schema.StringAttribute:
			if v.MarkdownDescription == "" {
				v.MarkdownDescription = md(v.Description)
			}
			s.Attributes[k] = v
		case schema.Int64Attribute:
			if v.MarkdownDescription == "" {
				v.MarkdownDescription = md(v.Description)
			}
			s.Attributes[k] = v
		case schema.BoolAttribute:
			if v.MarkdownDescription == "" {
				v.MarkdownDescription = md(v.Description)
			}
			s.Attributes[k] = v
		}
	}
	if b, ok := s.Blocks["timeouts"]; ok {
		s.Blocks["timeouts"] = markdownTimeouts(b)
	}
	return s
}

// idFormRE matches the ID forms descriptions name (vms/<vmid>/<name>).
var idFormRE = regexp.MustCompile(`vms/<vmid>/<name>`)

// markdownOf puts code spans around the given identifiers and the ID forms in plain text.
// Text already in code spans is left alone.
func markdownOf(plain string, names map[string]bool) string {
	if strings.Contains(plain, "`") {
		return plain
	}
	out := idFormRE.ReplaceAllString(plain, "`$0`")
	keys := make([]string, 0, len(names))
	for n := range names {
		keys = append(keys, n)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	pattern := `\b(` + strings.Join(keys, "|") + `)\b`
	if len(keys) == 0 {
		return out
	}
	re := regexp.MustCompile(pattern)
	// Skip what the ID forms already put in code spans.
	parts := strings.Split(out, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = re.ReplaceAllString(parts[i], "`$1`")
	}
	return strings.Join(parts, "`")
}

// markdownTimeouts gives the timeouts block's attributes (whose descriptions the timeouts
// package writes in plain text) their markdown form: the same text, which has no markup.
func markdownTimeouts(b schema.Block) schema.Block {
	nb, ok := b.(schema.SingleNestedBlock)
	if !ok {
		return b
	}
	for k, a := range nb.Attributes {
		if v, ok := a.(schema.StringAttribute); ok && v.MarkdownDescription == "" {
			v.MarkdownDescription = v.Description
			nb.Attributes[k] = v
		}
	}
	if nb.MarkdownDescription == "" {
		nb.MarkdownDescription = nb.Description
	}
	return nb
}

// markdownDataSourceTimeouts is markdownTimeouts for a data source's timeouts block.
func markdownDataSourceTimeouts(b dsschema.Block) dsschema.Block {
	nb, ok := b.(dsschema.SingleNestedBlock)
	if !ok {
		return b
	}
	for k, a := range nb.Attributes {
		if v, ok := a.(dsschema.StringAttribute); ok && v.MarkdownDescription == "" {
			// The same rule as proxy_vm's timeouts (positiveTimeouts).
			v.Validators = append(append([]validator.String(nil), v.Validators...), validators.Duration())
			v.Description += " A duration above zero."
			v.MarkdownDescription = v.Description
			nb.Attributes[k] = v
		}
	}
	if nb.MarkdownDescription == "" {
		nb.MarkdownDescription = nb.Description
	}
	return nb
}
