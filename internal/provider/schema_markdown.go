package provider

import (
	"regexp"
	"strings"

	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
)

// Descriptions are written once, in markdown (MarkdownDescription), which is what the
// documentation and the language server show; the plain Description, for tools that do not
// render markdown, is derived from it by plain.

// plain renders a markdown description as plain text, for Description: code spans lose
// their backticks, links keep their text.
func plain(md string) string {
	return strings.ReplaceAll(mdLinkRE.ReplaceAllString(md, "$1"), "`", "")
}

// mdLinkRE matches a markdown link, [text](target).
var mdLinkRE = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)

// withPlainDescriptions fills the Description of a resource schema, of each of its
// attributes and of its timeouts block from their MarkdownDescription. The timeouts
// package writes its attributes' descriptions in plain text, which has no markup: they are
// their own markdown.
func withPlainDescriptions(s schema.Schema) schema.Schema {
	s.Description = plain(s.MarkdownDescription)
	s.Attributes = withPlainAttributes(s.Attributes)
	if b, ok := s.Blocks["timeouts"]; ok {
		s.Blocks["timeouts"] = markdownTimeouts(b)
	}
	return s
}

// withPlainAttributes fills each attribute's Description from its MarkdownDescription.
func withPlainAttributes(attrs map[string]schema.Attribute) map[string]schema.Attribute {
	for k, a := range attrs {
		switch v := a.(type) {
		case schema.StringAttribute:
			v.Description = plain(v.MarkdownDescription)
			attrs[k] = v
		case schema.Int64Attribute:
			v.Description = plain(v.MarkdownDescription)
			attrs[k] = v
		case schema.BoolAttribute:
			v.Description = plain(v.MarkdownDescription)
			attrs[k] = v
		case schema.ListAttribute:
			v.Description = plain(v.MarkdownDescription)
			attrs[k] = v
		case schema.SetAttribute:
			v.Description = plain(v.MarkdownDescription)
			attrs[k] = v
		case schema.SingleNestedAttribute:
			v.Description = plain(v.MarkdownDescription)
			v.Attributes = withPlainAttributes(v.Attributes)
			attrs[k] = v
		}
	}
	return attrs
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
