package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var (
	_ provider.ProviderWithListResources = (*proxyProvider)(nil)
	_ list.ListResourceWithConfigure     = (*proxyVMListResource)(nil)
)

// ListResources registers the proxy_vm list resource (Terraform 1.14+, terraform query).
func (p *proxyProvider) ListResources(_ context.Context) []func() list.ListResource {
	return []func() list.ListResource{NewProxyVMListResource}
}

// Values of the list resource's made_by filter.
const (
	madeByProvider = "provider"
	madeByOther    = "other"
)

// proxyVMListResource lists the cluster's marked VMs for terraform query: each result is a
// VM's identity and, with -generate-config-out (include_resource), the state an import of
// it writes, so Terraform can write an import block and a configuration per VM.
type proxyVMListResource struct{ data *providerData }

// NewProxyVMListResource is the proxy_vm list resource factory.
func NewProxyVMListResource() list.ListResource { return &proxyVMListResource{} }

type proxyVMListModel struct {
	NamePrefix types.String `tfsdk:"name_prefix"`
	Node       types.String `tfsdk:"node"`
	MadeBy     types.String `tfsdk:"made_by"`
}

func (l *proxyVMListResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm"
}

func (l *proxyVMListResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	l.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (l *proxyVMListResource) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest,
	resp *list.ListResourceSchemaResponse) {
	resp.Schema = listschema.Schema{
		MarkdownDescription: "Every VM carrying the [mark](../index.md#glossary), for `terraform query` (Terraform " +
			"1.14+): its identity (`vmid`, `name`). `-generate-config-out=<file>` also writes an `import` block and a configuration for each.",
		Attributes: map[string]listschema.Attribute{
			"name_prefix": listschema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Only VMs whose name starts with this prefix.",
			},
			"node": listschema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Only VMs on this node. A node the cluster does not have is an error (not an empty list).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"made_by": listschema.StringAttribute{
				Optional: true,
				MarkdownDescription: "`provider`: only VMs whose mark says this provider made them; `other`: only the " +
					"others (the proxy operator's, or this provider's early releases). Unset: both.",
				Validators: []validator.String{stringvalidator.OneOf(madeByProvider, madeByOther)},
			},
		},
	}
}

// listMatches applies the filters to one listed VM.
func listMatches(f proxyVMListModel, in proxmox.Instance) bool {
	if p, ok := knownString(f.NamePrefix); ok && !strings.HasPrefix(in.ID.Name, p) {
		return false
	}
	if n, ok := knownString(f.Node); ok && in.Node != n {
		return false
	}
	switch f.MadeBy.ValueString() {
	case madeByProvider:
		return in.CreatedBy == proxmox.CreatedByProvider
	case madeByOther:
		return in.CreatedBy != proxmox.CreatedByProvider
	}
	return true
}

func (l *proxyVMListResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	if l.data == nil || l.data.backend == nil {
		stream.Results = list.ListResultsStreamDiagnostics(diagError("Unable to list proxy VMs",
			"The proxy provider is not configured. This is a bug in the provider or in Terraform; please report it."))
		return
	}
	ctx = l.data.withLogging(ctx)
	var filter proxyVMListModel
	if diags := req.Config.Get(ctx, &filter); diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	// A node filter naming no node of the cluster is a mistake, not an empty fleet: the
	// proxy_vms data source refuses it the same way.
	if node, ok := knownString(filter.Node); ok {
		cctx, cancel := context.WithTimeout(ctx, mustDuration(defaultReadTimeout))
		err := l.data.backend.CheckNodeKnown(cctx, node)
		cancel()
		if err != nil {
			var diags diag.Diagnostics
			msg := err.Error()
			var pe *proxmox.Error
			if errors.As(err, &pe) && pe.Err != nil {
				msg = pe.Err.Error()
			}
			diags.AddAttributeError(path.Root("node"), "Unable to list proxy VMs",
				redact(trimEnd(msg), l.data.secrets())+". Set node to one of the cluster's nodes, or leave it out for every node.")
			stream.Results = list.ListResultsStreamDiagnostics(diags)
			return
		}
	}
	res := &proxyVMResource{data: l.data}
	// Streamed (decision: list-marked): each VM is read, and with include_resource
	// imported, as Terraform takes the results, so a fleet of any size is listed in
	// bounded memory; the backend reads at most max_requests_in_flight configs at once.
	stream.Results = func(push func(list.ListResult) bool) {
		lctx, cancel := context.WithTimeout(ctx, mustDuration(defaultReadTimeout))
		defer cancel()
		matched, stopped := int64(0), false
		skipped, err := l.data.backend.ListEach(lctx, func(in proxmox.Instance) bool {
			if !listMatches(filter, in) {
				return true
			}
			if req.Limit > 0 && matched >= req.Limit {
				return false
			}
			matched++
			if !push(l.result(ctx, req, res, in)) {
				stopped = true
				return false
			}
			return true
		})
		if stopped {
			return
		}
		if err != nil {
			var r list.ListResult
			r.Diagnostics.AddError("Unable to list proxy VMs", vmErrorDetail("list", "", 0, err, ""))
			push(r)
			return
		}
		tflog.Info(ctx, "proxy VMs listed", map[string]any{"matched": matched, "skipped": len(skipped), "include_resource": req.IncludeResource})
		if len(skipped) > 0 {
			names := make([]string, 0, len(skipped))
			for _, s := range skipped {
				names = append(names, fmt.Sprintf("%s (VMID %d on %s)", s.ID.Name, s.ID.VMID, s.Node))
			}
			var w list.ListResult
			w.Diagnostics.AddWarning("Unable to list every proxy VM",
				"The config of these candidates could not be read, so whether they carry the mark is unknown and they are "+
					"left out: "+strings.Join(names, ", ")+". Check that the nodes answer and that the token has VM.Audit on them.")
			push(w)
		}
	}
}

// result is one VM's list result: its identity and, with include_resource, what an import
// of it writes (so the generated configuration matches it). A VM that cannot be imported
// (a create in progress, a node that does not answer) is a warning instead, so that it does
// not fail the query for the others.
func (l *proxyVMListResource) result(ctx context.Context, req list.ListRequest, res *proxyVMResource, in proxmox.Instance) list.ListResult {
	result := req.NewListResult(ctx)
	result.DisplayName = in.ID.Name
	result.Diagnostics.Append(result.Identity.Set(ctx, proxyVMIdentity{
		VMID: types.Int64Value(int64(in.ID.VMID)), Name: types.StringValue(in.ID.Name)})...)
	if !req.IncludeResource || result.Diagnostics.HasError() {
		return result
	}
	rctx, cancel := context.WithTimeout(ctx, mustDuration(defaultReadTimeout))
	vm, tmpl, diags, err := res.importVMErr(rctx, importRef{VMID: in.ID.VMID, Name: in.ID.Name})
	cancel()
	if diags.HasError() {
		tflog.Warn(ctx, "proxy VM left out of the list", map[string]any{"name": in.ID.Name, "vmid": in.ID.VMID})
		var w list.ListResult
		w.Diagnostics.AddWarning("Unable to list proxy VM "+in.ID.Name, listLeftOutDetail(res, in, err))
		return w
	}
	result.Diagnostics.Append(diags...)
	var nullTimeouts timeouts.Value
	result.Diagnostics.Append(result.Resource.GetAttribute(ctx, path.Root("timeouts"), &nullTimeouts)...)
	model, _ := importedModel(vm, res.cfg(), tmpl, nullTimeouts)
	result.Diagnostics.Append(result.Resource.Set(ctx, &model)...)
	return result
}

// listLeftOutDetail says why a listed VM whose import failed is left out of the results.
func listLeftOutDetail(res *proxyVMResource, in proxmox.Instance, err error) string {
	label := fmt.Sprintf("Proxy VM %q (VMID %d on %s)", in.ID.Name, in.ID.VMID, in.Node)
	if errors.Is(err, proxmox.ErrStillCreating) {
		return label + " is still being created; it is listed again once its create finishes. It is left out of these results " +
			"(an apply creating it is running or was interrupted: applying that configuration again finishes it)."
	}
	return label + " is left out of these results: its import failed.\n\n" + res.vmErrorDetail("import", in.ID.Name, in.ID.VMID, err, "")
}

func diagError(summary, detail string) diag.Diagnostics {
	var d diag.Diagnostics
	d.AddError(summary, detail)
	return d
}
