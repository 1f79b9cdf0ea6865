package provider

import (
	"context"
	"fmt"
	"strings"

	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// A proxy VM is put together from facets, one file each (vm_<facet>.go): a Go struct of
// the facet's attributes, which the resource's model (proxyVMModel), the proxy_vm data
// source's (vmDataModel) and, when the list shows the facet, proxy_vms' per-VM model
// (vmsVMModel) embed, so that the HCL schema stays flat (decision: code-conventions). Its
// attributes are declared once (<facet>Attrs, facetAttr); its steps are vmFacet's methods.
// A facet whose data-source models show only some of its attributes embeds the part they
// show as a struct of its own (vmPowerState, vmLocation, vmNetworkReadable), and marks the
// others resourceOnly.

// vmFacet is the contract of a facet of proxy_vm. proxyVMModel.facets lists the facets in
// the one order every step runs them in; a facet with nothing to do for a step takes
// facetBase's no-op.
type vmFacet interface {
	// read takes its values from the VM as the backend returns it (fc.vm) into the facet.
	read(fc *facetCtx)
	// nullUnknown nulls its values still unknown (the partial state of a create).
	nullUnknown()
	// spec puts what it needs into a create (fc.spec).
	spec(fc *facetCtx)
	// changes puts what changes from fc.prior into an in-place update (fc.changes), and sets
	// fc.changed when there is any.
	changes(fc *facetCtx)
	// plan runs its plan checks on fc.m, the planned model, adding diagnostics to fc.diags
	// and the paths whose change replaces the VM to fc.replace or, for the seed's content,
	// fc.seedReplace.
	plan(fc *facetCtx)
}

// facetCtx is what a facet's step reads and writes; each step uses its part.
type facetCtx struct {
	ctx context.Context
	// cfg is the provider's resolved configuration, nil before Configure or while the
	// provider's own configuration holds unknown values (then the catalogue plans nothing).
	cfg *resolvedConfig
	// m is the model read into (read), or the planned model (spec, changes, plan).
	m *proxyVMModel
	// prior is the state before the update (changes, plan); nil for a create.
	prior *proxyVMModel

	// read: the VM; on an import (imported) also the template the backend identified
	// (templateVMID, 0 when it could not tell), and templateUnread set when none was.
	vm             proxmox.VM
	imported       bool
	templateVMID   int
	templateUnread bool

	// spec: the create's request, and the planned machine type (template's spec, for the
	// size's disk).
	spec        *proxmox.Spec
	machineType *machineType

	// changes: the update's request; cloudInitUnread says an import left cloud_init unread.
	changes         *proxmox.Changes
	changed         bool
	cloudInitUnread bool

	// plan: the resource (its backend, for the checks that ask the cluster), the
	// configuration, the private state, and what the checks found.
	r           *proxyVMResource
	config      proxyVMModel
	private     privateGetter
	diags       diag.Diagnostics
	replace     []path.Path
	seedReplace []path.Path
	// node is the node record of the private state, read once (nodeRecord).
	node *nodeRecordRead
}

// nodeRecordRead is the node recorded at the last apply, and whether there is a record.
type nodeRecordRead struct {
	recorded string
	ok       bool
}

// nodeRecord is the node recorded at the last apply (readNodeRecord), read once for the
// facets that need it (placement, HA).
func (fc *facetCtx) nodeRecord() (string, bool) {
	if fc.node == nil {
		recorded, ok, diags := readNodeRecord(fc.ctx, fc.private)
		fc.diags.Append(diags...)
		fc.node = &nodeRecordRead{recorded: recorded, ok: ok}
	}
	return fc.node.recorded, fc.node.ok
}

// unread says whether the import marker in the private state lists a; a marker that
// cannot be read adds its diagnostics.
func (fc *facetCtx) unread(a unreadAttr) bool {
	v, diags := isUnread(fc.ctx, fc.private, a)
	fc.diags.Append(diags...)
	return v
}

// facetBase is the no-op of every step, embedded by each facet for the steps it has
// nothing to do in.
type facetBase struct{}

func (facetBase) read(*facetCtx)    {}
func (facetBase) nullUnknown()      {}
func (facetBase) spec(*facetCtx)    {}
func (facetBase) changes(*facetCtx) {}
func (facetBase) plan(*facetCtx)    {}

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
