package provider

import (
	"fmt"
	"strings"

	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// A proxy VM is put together from facets, one file each (vm_<facet>.go): a Go struct of
// the facet's attributes, which the resource's model (proxyVMModel), the proxy_vm data
// source's (vmDataModel) and, when the list shows the facet, proxy_vms' per-VM model
// (vmsVMModel) embed, so that the HCL schema stays flat (a facet of which the data sources
// show only the values read from the VM embeds those as a struct of their own, which the
// data sources embed alone: vmPowerState, vmLocation); and the same small set of
// functions (called through the facet, m.vmSize.read(vm), as several facets share names):
//
//   - <facet>Attrs: its attributes, declared and described once (facetAttr), from which
//     the resource's and the data sources' schema attributes are made;
//   - read: its values from the VM as the backend returns it (proxmox.VM);
//   - nullUnknown: its values still unknown nulled (the partial state of a create);
//   - spec: what it puts into a create (proxmox.Spec);
//   - changes: what it puts into an in-place update (proxmox.Changes), when it has any;
//   - plan: its plan checks (called by planProxyVM, or, for the seed's facets, cloud-init
//     and network, by ModifyPlan, which decides their replacement or seed swap).
//
// A facet whose data-source models show only some of its attributes embeds the part they
// show as a struct of its own (vmNetworkReadable), and marks the others resourceOnly.

// facetAttr is one attribute of a facet, declared once.
type facetAttr struct {
	name string
	// md describes the value, in markdown, on every surface. change adds, on the resource
	// only, what setting and changing it does; read adds, on the data sources only, how
	// they read it.
	md, change, read string
	// nestedRead adds, on the data sources only, how they read a nested attribute's
	// attributes (by name), as read does for the attribute.
	nestedRead map[string]string
	// resourceOnly leaves the attribute out of the data sources (a value that cannot be
	// read back from a VM).
	resourceOnly bool
	// resource is the resource's attribute (required, optional or computed, validators,
	// plan modifiers, default), without descriptions; the data sources' attribute is
	// computed, of the same type.
	resource rschema.Attribute
}

// joinMD joins description sentences.
func joinMD(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, " ")
}

// resourceAttributes are the resource's schema attributes of attrs, with their markdown
// description; the plain one is derived once for the whole schema (withPlainDescriptions).
func resourceAttributes(attrs []facetAttr) map[string]rschema.Attribute {
	out := make(map[string]rschema.Attribute, len(attrs))
	for _, a := range attrs {
		md := joinMD(a.md, a.change)
		switch v := a.resource.(type) {
		case rschema.StringAttribute:
			v.MarkdownDescription = md
			out[a.name] = v
		case rschema.Int64Attribute:
			v.MarkdownDescription = md
			out[a.name] = v
		case rschema.BoolAttribute:
			v.MarkdownDescription = md
			out[a.name] = v
		case rschema.SetAttribute:
			v.MarkdownDescription = md
			out[a.name] = v
		case rschema.ListAttribute:
			v.MarkdownDescription = md
			out[a.name] = v
		case rschema.SingleNestedAttribute:
			v.MarkdownDescription = md
			out[a.name] = v
		default:
			panic(fmt.Sprintf("facet attribute %s: type %T not handled", a.name, a.resource))
		}
	}
	return out
}

// dataAttributes are the data sources' schema attributes of attrs (but the resourceOnly
// ones): computed, of the resource attribute's type.
func dataAttributes(attrs []facetAttr) map[string]dschema.Attribute {
	out := make(map[string]dschema.Attribute, len(attrs))
	for _, a := range attrs {
		if !a.resourceOnly {
			out[a.name] = dataAttribute(a.name, joinMD(a.md, a.read), a.resource, a.nestedRead)
		}
	}
	return out
}

// dataAttribute is the data sources' computed attribute of the resource attribute r,
// described by md; a nested attribute's attributes keep their own description, with
// nestedRead's sentence for them.
func dataAttribute(name, md string, r rschema.Attribute, nestedRead map[string]string) dschema.Attribute {
	switch v := r.(type) {
	case rschema.StringAttribute:
		return dschema.StringAttribute{Computed: true, MarkdownDescription: md}
	case rschema.Int64Attribute:
		return dschema.Int64Attribute{Computed: true, MarkdownDescription: md}
	case rschema.BoolAttribute:
		return dschema.BoolAttribute{Computed: true, MarkdownDescription: md}
	case rschema.SetAttribute:
		return dschema.SetAttribute{Computed: true, ElementType: v.ElementType, MarkdownDescription: md}
	case rschema.ListAttribute:
		return dschema.ListAttribute{Computed: true, ElementType: v.ElementType, MarkdownDescription: md}
	case rschema.SingleNestedAttribute:
		nested := make(map[string]dschema.Attribute, len(v.Attributes))
		for k, na := range v.Attributes {
			nested[k] = dataAttribute(name+"."+k, joinMD(na.GetMarkdownDescription(), nestedRead[k]), na, nil)
		}
		return dschema.SingleNestedAttribute{Computed: true, Attributes: nested, MarkdownDescription: md}
	default:
		panic(fmt.Sprintf("facet attribute %s: type %T not handled", name, r))
	}
}
