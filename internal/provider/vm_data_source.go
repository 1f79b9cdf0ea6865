package provider

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	rtimeouts "github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/datasourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var (
	_ datasource.DataSource                     = (*vmDataSource)(nil)
	_ datasource.DataSourceWithConfigure        = (*vmDataSource)(nil)
	_ datasource.DataSourceWithConfigValidators = (*vmDataSource)(nil)
)

// vmDataSource is proxy_vm as a data source: one marked VM, looked up by name or VMID, with
// what the resource would hold after importing it. For configurations that use proxies
// managed elsewhere (another workspace, the proxy operator).
type vmDataSource struct{ data *providerData }

// NewVMDataSource is the proxy_vm data source factory.
func NewVMDataSource() datasource.DataSource { return &vmDataSource{} }

type vmDataModel struct {
	vmIdentityFacet              // name and vmid are the lookup's arguments
	vmLocation                   // node and pool
	MadeBy          types.String `tfsdk:"made_by"`
	vmPowerState                 // status and start_on_boot
	vmTemplate
	vmSize
	vmNetworkReadable // vm_network.go: not network_config, which cannot be read back
	vmAddresses
	vmNoteTags
	Timeouts timeouts.Value `tfsdk:"timeouts"`
}

func (d *vmDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm"
}

// madeByOf is made_by's value for a mark's created-by line.
func madeByOf(createdBy string) string {
	if createdBy == proxmox.CreatedByProvider {
		return madeByProvider
	}
	return madeByOther
}

func (d *vmDataSource) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(md string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: md}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "One VM carrying the [mark](../index.md#glossary), looked up by `name` or by `vmid`, " +
			"with the attributes `proxy_vm` would hold after importing it. A VM without the mark is not found.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The VM name to look up; exactly one of `name` and `vmid` must be set. Several marked " +
					"VMs of that name (same-name VMs of different configurations) are an error naming their VMIDs: then " +
					"look the VM up by `vmid`.",
				Validators: []validator.String{stringvalidator.RegexMatches(vmNameRE,
					"must be a VM name: a DNS label of lowercase letters, digits and hyphens")},
			},
			"vmid": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: "The VMID to look up; exactly one of `name` and `vmid` must be set.",
				Validators:          []validator.Int64{int64validator.Between(100, 999999999)},
			},
			"made_by": str("`provider` when the mark says this provider made the VM " +
				"(`proxy-operator-created-by=terraform-provider-proxy`), else `other` (the proxy operator, or an early " +
				"release of this provider)."),
		},
		Blocks: map[string]schema.Block{
			"timeouts": markdownDataSourceTimeouts(timeouts.BlockWithOpts(ctx, timeouts.Opts{
				ReadDescription: "How long the read may take, as a duration (`\"30s\"`, `\"2m\"`); default `2m`.",
			})),
		},
	}
	for k, a := range dataAttributes(identityFacetAttrs()) {
		if _, lookup := resp.Schema.Attributes[k]; !lookup { // name and vmid: the lookup's
			resp.Schema.Attributes[k] = a
		}
	}
	maps.Copy(resp.Schema.Attributes, dataAttributes(templateAttrs()))
	maps.Copy(resp.Schema.Attributes, dataAttributes(sizeAttrs()))
	maps.Copy(resp.Schema.Attributes, dataAttributes(noteTagsAttrs()))
	maps.Copy(resp.Schema.Attributes, dataAttributes(addressesAttrs()))
	maps.Copy(resp.Schema.Attributes, dataAttributes(networkAttrs()))
	maps.Copy(resp.Schema.Attributes, dataAttributes(powerStateAttrs()))
	maps.Copy(resp.Schema.Attributes, dataAttributes(locationAttrs()))
}

func (d *vmDataSource) ConfigValidators(context.Context) []datasource.ConfigValidator {
	return []datasource.ConfigValidator{
		datasourcevalidator.ExactlyOneOf(path.MatchRoot("name"), path.MatchRoot("vmid")),
	}
}

func (d *vmDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

const summaryReadVM = "Unable to read proxy VM"

func (d *vmDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	ctx = d.data.withLogging(ctx)
	var m vmDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.data == nil {
		resp.Diagnostics.AddError(summaryReadVM, dsNotConfigured)
		return
	}
	timeout, diags := m.Timeouts.Read(ctx, defaultVMReadTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ds := &vmsDataSource{data: d.data}

	in, ok := d.lookup(rctx, m, ds, &resp.Diagnostics)
	if !ok {
		return
	}
	// Read only: any VM with the mark (no write ever follows this read).
	vm, err := d.data.backend.Get(rctx, in.ID, proxmox.GetOptions{FreshListing: true, AnyOwner: true})
	if err != nil {
		resp.Diagnostics.AddError(summaryReadVM, fmt.Sprintf("VM %s (VMID %d): %s", in.ID.Name, in.ID.VMID, ds.dsErrorDetail(err)))
		return
	}
	if vm.State == proxmox.StateRunning {
		// The status is status/current's; the addresses are the agent's, when it answers (a
		// guest without the agent is still running, only without addresses).
		a, err := d.data.backend.AgentAddresses(rctx, vm.Node, vm.ID.VMID)
		switch {
		case err != nil:
			resp.Diagnostics.AddWarning(
				"Unable to read the proxy VM's addresses",
				fmt.Sprintf(
					"VM %s (VMID %d): its guest agent could not be read, so the addresses are null: %s",
					in.ID.Name,
					in.ID.VMID,
					ds.redact(err.Error()),
				),
			)
		case len(a.IPv4) > 0 || len(a.IPv6) > 0:
			vm.Addresses = a
			if len(a.IPv4) > 0 {
				vm.IP = a.IPv4[0]
			}
		}
	}
	cfg := (&proxyVMResource{data: d.data}).cfg()
	tmpl, found, err := d.data.backend.TemplateOf(rctx, vm, templateCandidates(cfg))
	if err != nil || !found {
		tmpl = 0 // unknown template: image and template_vmid stay null
	}
	rm, _ := importedModel(vm, cfg, tmpl, rtimeouts.Value{}) // the resource's timeouts are not used here
	out := vmDataModel{
		vmIdentityFacet: rm.vmIdentityFacet, vmLocation: rm.vmLocation,
		MadeBy: types.StringValue(madeByOf(vm.MarkExtra.CreatedBy)), vmPowerState: rm.vmPowerState,
		vmTemplate: rm.vmTemplate, vmSize: rm.vmSize, vmNetworkReadable: rm.vmNetworkReadable,
		vmAddresses: rm.vmAddresses, vmNoteTags: rm.vmNoteTags,
		Timeouts: m.Timeouts,
	}
	tflog.Debug(ctx, "proxy_vm data source read", map[string]any{"name": in.ID.Name, "vmid": in.ID.VMID, "node": vm.Node})
	resp.Diagnostics.Append(resp.State.Set(ctx, &out)...)
}

// lookup finds the one marked VM the configuration names, or says on the attribute why not.
func (d *vmDataSource) lookup(ctx context.Context, m vmDataModel, ds *vmsDataSource, diags *diag.Diagnostics) (proxmox.Instance, bool) {
	all, skipped, err := d.data.backend.ListWithSkipped(ctx)
	if err != nil {
		diags.AddError(summaryReadVM, "Listing the marked VMs failed: "+ds.dsErrorDetail(err))
		return proxmox.Instance{}, false
	}
	name, byName := knownString(m.Name)
	attr := path.Root("vmid")
	if byName {
		attr = path.Root("name")
	}
	var hits []proxmox.Instance
	for _, in := range all {
		if (byName && in.ID.Name == name) || (!byName && int64(in.ID.VMID) == m.VMID.ValueInt64()) {
			hits = append(hits, in)
		}
	}
	what := fmt.Sprintf("VMID %d", m.VMID.ValueInt64())
	if byName {
		what = fmt.Sprintf("named %q", name)
	}
	switch len(hits) {
	case 1:
		return hits[0], true
	case 0:
		for _, s := range skipped {
			if (byName && s.ID.Name == name) || (!byName && int64(s.ID.VMID) == m.VMID.ValueInt64()) {
				diags.AddAttributeError(attr, summaryReadVM, fmt.Sprintf("The config of the VM %s (VMID %d on node %s) could not be read, "+
					"so whether it carries the mark is unknown: %s", what, s.ID.VMID, s.Node, ds.dsErrorDetail(s.Err)))
				return proxmox.Instance{}, false
			}
		}
		if !byName {
			// The listing shows only what the token may audit (fact: pool-privileges).
			if err := d.data.backend.HiddenVM(ctx, int(m.VMID.ValueInt64())); err != nil {
				diags.AddAttributeError(attr, summaryReadVM, ds.dsErrorDetail(err))
				return proxmox.Instance{}, false
			}
		}
		diags.AddAttributeError(attr, summaryReadVM, fmt.Sprintf("No VM %s carries the %s=true mark in this cluster. "+
			"Check the value (data.proxy_vms lists every marked VM); a VM without the mark is not a proxy VM this provider reads.",
			what, proxmox.MarkKeyManaged))
		return proxmox.Instance{}, false
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = strconv.Itoa(h.ID.VMID)
	}
	diags.AddAttributeError(attr, summaryReadVM, fmt.Sprintf("%d marked VMs are named %q (VMIDs %s): set vmid to the one "+
		"to read instead of name.", len(hits), name, strings.Join(ids, ", ")))
	return proxmox.Instance{}, false
}

// defaultVMReadTimeout is proxy_vm's data source read bound when timeouts.read is unset.
const defaultVMReadTimeout = 2 * time.Minute
