package provider

import (
	"context"
	"maps"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
)

// vmNameRE is a DNS label: the VM name is also the guest's hostname (meta-data
// local-hostname) and part of the seed ISO's file name.
var vmNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Default operation timeouts (the backend's budgets fit inside them, decision: poll-schedule).
const (
	defaultCreateTimeout = "20m"
	defaultReadTimeout   = "5m"
	defaultUpdateTimeout = "20m"
	defaultDeleteTimeout = "10m"
)

func proxyVMSchema(ctx context.Context) schema.Schema {
	return withPlainDescriptions(withAttributes(schema.Schema{
		Version:             0,
		MarkdownDescription: proxyVMMarkdown(),
		Attributes:          map[string]schema.Attribute{},
		Blocks: map[string]schema.Block{
			"timeouts": positiveTimeouts(timeouts.Block(ctx, timeouts.Opts{
				Create: true, Read: true, Update: true, Delete: true,
				CreateDescription: "How long create may take, clone to IP address (default " + defaultCreateTimeout + ").",
				ReadDescription:   "How long a refresh may take (default " + defaultReadTimeout + ").",
				UpdateDescription: "How long an in-place update may take, restart and IP wait included (default " + defaultUpdateTimeout + ").",
				DeleteDescription: "How long delete may take: stop, seed delete, destroy (default " + defaultDeleteTimeout + ").",
			})),
		},
	}, conceptAttributes()))
}

// proxyVMMarkdown is the resource's description.
func proxyVMMarkdown() string {
	return "A proxy VM: a full clone of a template on a Proxmox VE node, booted with a seed ISO that carries " +
		"its cloud-init. A change of " + restartAttrsMD("or") + " restarts it; see [What a change does](#what-a-change-does)."
}

// positiveTimeouts adds a duration-above-zero check to every timeouts attribute: the
// timeouts package accepts "-5m" and "0s", which would end the operation at once.
func positiveTimeouts(b schema.Block) schema.Block {
	nb, ok := b.(schema.SingleNestedBlock)
	if !ok {
		return b
	}
	attrs := make(map[string]schema.Attribute, len(nb.Attributes))
	for k, a := range nb.Attributes {
		if sa, ok := a.(schema.StringAttribute); ok {
			sa.Validators = append(append([]validator.String(nil), sa.Validators...), validators.Duration())
			sa.Description += " A duration above zero."
			a = sa
		}
		attrs[k] = a
	}
	nb.Attributes = attrs
	return nb
}

// conceptAttributes are the proxy_vm attributes, declared in the files of their facets:
// identity and binding (vm_identity_facet.go), placement (vm_placement.go), template (vm_template.go),
// size (vm_size.go), cloud-init (vm_cloud_init.go), network (vm_network.go), power
// (vm_power.go), guest addresses (vm_addresses.go), note and tags (vm_note_tags.go), HA
// (vm_ha.go).
func conceptAttributes() map[string]schema.Attribute {
	out := map[string]schema.Attribute{}
	for _, attrs := range [][]facetAttr{
		identityFacetAttrs(), placementAttrs(), templateAttrs(), sizeAttrs(), cloudInitAttrs(),
		networkAttrs(), powerAttrs(), addressesAttrs(), noteTagsAttrs(), haAttrs(), bindingAttrs(),
	} {
		maps.Copy(out, resourceAttributes(attrs))
	}
	return out
}

// withAttributes adds attrs to s; a name s already has is a programming error.
func withAttributes(s schema.Schema, attrs map[string]schema.Attribute) schema.Schema {
	for k, a := range attrs {
		if _, dup := s.Attributes[k]; dup {
			panic("proxy_vm schema: attribute " + k + " defined twice")
		}
		s.Attributes[k] = a
	}
	return s
}
