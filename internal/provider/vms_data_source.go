package provider

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var (
	_ datasource.DataSource              = (*vmsDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*vmsDataSource)(nil)
)

// defaultVMsReadTimeout bounds one proxy_vms read when timeouts.read is not set.
const defaultVMsReadTimeout = 2 * time.Minute

type vmsDataSource struct{ data *providerData }

// NewVMsDataSource is the proxy_vms data source factory.
func NewVMsDataSource() datasource.DataSource { return &vmsDataSource{} }

type vmsModel struct {
	ID          types.String       `tfsdk:"id"`
	Node        types.String       `tfsdk:"node"`
	NameRegex   types.String       `tfsdk:"name_regex"`
	NamePrefix  types.String       `tfsdk:"name_prefix"`
	MadeBy      types.String       `tfsdk:"made_by"`
	VMs         []vmsVMModel       `tfsdk:"vms"`
	OrphanSeeds []vmsOrphanModel   `tfsdk:"orphan_seeds"`
	OrphanVMs   []vmsOrphanVMModel `tfsdk:"orphan_vms"`
	Timeouts    timeouts.Value     `tfsdk:"timeouts"`
}

type vmsVMModel struct {
	vmIdentityFacet
	vmLocation
	Status types.String `tfsdk:"status"` // the listing's, not the power facet's
	// Details beyond identity and status (vms_details.go).
	MadeBy types.String `tfsdk:"made_by"`
	vmSize
	IPAddress     types.String `tfsdk:"ip_address"`
	IPv4Addresses types.List   `tfsdk:"ipv4_addresses"`
	IPv6Addresses types.List   `tfsdk:"ipv6_addresses"`
}

type vmsOrphanModel struct {
	Node       types.String `tfsdk:"node"`
	VolID      types.String `tfsdk:"volid"`
	Name       types.String `tfsdk:"name"`
	Size       types.Int64  `tfsdk:"size"`
	CreatedAt  types.String `tfsdk:"created_at"`
	AgeSeconds types.Int64  `tfsdk:"age_seconds"`
	Proved     types.Bool   `tfsdk:"proved"`
}

type vmsOrphanVMModel struct {
	ID         types.String `tfsdk:"id"`
	VMID       types.Int64  `tfsdk:"vmid"`
	Name       types.String `tfsdk:"name"`
	Node       types.String `tfsdk:"node"`
	UID        types.String `tfsdk:"uid"`
	CreatedAt  types.String `tfsdk:"created_at"`
	AgeSeconds types.Int64  `tfsdk:"age_seconds"`
	Seed       types.String `tfsdk:"seed"`
}

func (d *vmsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vms"
}

func (d *vmsDataSource) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(md string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: md}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Every VM carrying the provider's [mark](../index.md#glossary) that the API token may " +
			"see, and the [orphans](../index.md#glossary) with their age: seed ISOs no VM uses (`orphan_seeds`) and " +
			"half-made VMs of this configuration's `uid_namespace` (`orphan_vms`).",
		Attributes: withDSAttributes(vmsFilterAttributes(), map[string]schema.Attribute{
			"id": computed("The provider's `endpoint`."),
			"node": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Only VMs on this node, and only orphan seeds on this node's ISO storage. A node the " +
					"cluster does not have is an error (not an empty list).",
				Validators: []validator.String{
					validators.NodeName(),
				},
			},
			"name_regex": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Only VMs, and orphan seeds, whose VM name matches this regular expression " +
					"([Go RE2 syntax](https://github.com/google/re2/wiki/Syntax), unanchored: use `^...$` for a whole-name match).",
				Validators: []validator.String{regexpValidator()},
			},
			"vms": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The marked VMs, sorted by VMID. A candidate whose configuration cannot be read " +
					"(its node is down, or it was destroyed meanwhile) is left out with a warning.",
				NestedObject: schema.NestedAttributeObject{Attributes: withDSAttributes(vmsDetailAttributes(),
					withDSAttributes(dataAttributes(identityFacetAttrs()), withDSAttributes(dataAttributes(locationAttrs()), map[string]schema.Attribute{
						"status": computed("The status in the cluster listing: `running`, `stopped`, or `unknown` " +
							"(its node does not answer, or the VM is seconds old)."),
					})))},
			},
			"orphan_seeds": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Seed ISOs of this provider (`<name>-<uid>-seed.iso`) on `iso_storage` of the " +
					"provider's nodes that no VM uses, in node order then by volume. See [Orphans](#orphans) for what they are and when one is in use.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"node":       computed("The node whose ISO storage holds the seed."),
					"volid":      computed("The volume id, e.g. `proxy-seeds:iso/proxy-a-0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10-seed.iso`."),
					"name":       computed("The VM name the seed was made for."),
					"size":       schema.Int64Attribute{Computed: true, MarkdownDescription: "Size in bytes."},
					"created_at": computed("When the volume was written (its ctime), RFC 3339 in UTC; null when the storage does not say."),
					"age_seconds": schema.Int64Attribute{Computed: true, MarkdownDescription: "Seconds since " +
						"`created_at` at this read; null when it is null."},
					"proved": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether no VM uses the seed is proved: `true` when the " +
						"API token sees every VM (it has `VM.Audit` on `/vms`, propagated); `false` when it may not (the privilege is " +
						"missing, or it could not be read), so the seed may belong to a VM the token cannot see. The same for every " +
						"entry of a read. `proxy_orphan_cleanup` deletes only proved seeds."},
				}},
			},
			"orphan_vms": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "Half-made VMs of this configuration's `uid_namespace` in the provider's VMID " +
					"range, sorted by VMID: creates that never finished and that no later apply took over. " +
					"`proxy_orphan_cleanup` deletes those that never got past their clone and reports the others " +
					"as needing a look. See [Orphans](#orphans).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":         computed("`vms/<vmid>/<name>`."),
					"vmid":       schema.Int64Attribute{Computed: true, MarkdownDescription: "The VMID."},
					"name":       computed("The VM name."),
					"node":       computed("The node the VM is on."),
					"uid":        computed("The uid of the create that made it (or last took it over)."),
					"created_at": computed("When that create started (the mark's creation time), RFC 3339 in UTC; null when the mark has none."),
					"age_seconds": schema.Int64Attribute{Computed: true, MarkdownDescription: "Seconds since " +
						"`created_at` at this read; null when it is null."},
					"seed": computed("The seed ISO the VM uses or its create uploads (a volume id), deleted with it."),
				}},
			},
		}),
		// A block, as on proxy_vm: the same form on every object.
		Blocks: map[string]schema.Block{
			"timeouts": markdownDataSourceTimeouts(timeouts.BlockWithOpts(ctx, timeouts.Opts{
				ReadDescription: "How long the read may take, as a duration (`\"30s\"`, `\"2m\"`); default `2m`.",
			})),
		},
	}
}

func (d *vmsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *vmsDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	ctx = d.data.withLogging(ctx)
	var m vmsModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.data == nil {
		resp.Diagnostics.AddError("Unable to read proxy_vms", dsNotConfigured)
		return
	}
	timeout, diags := m.Timeouts.Read(ctx, defaultVMsReadTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	keep, ok := vmsFilter(m, &resp.Diagnostics)
	if !ok {
		return
	}
	node := m.Node.ValueString()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !d.checkVMsNode(rctx, node, &resp.Diagnostics) {
		return
	}

	// The marked VMs and the half-made ones, from one pass over the configs.
	fleet, err := d.data.backend.ListFleet(rctx, d.data.cfg.UIDNamespace)
	if err != nil {
		resp.Diagnostics.AddError("Unable to list the marked VMs", d.dsErrorDetail(err))
		return
	}
	if !d.readMarked(rctx, &m, fleet, keep, &resp.Diagnostics) {
		return
	}
	now := time.Now()
	if !d.readOrphanSeeds(rctx, &m, keep, now, &resp.Diagnostics) {
		return
	}
	d.readOrphanVMs(&m, fleet, keep, now, &resp.Diagnostics)
	m.ID = types.StringValue(d.data.cfg.Endpoint)
	tflog.Debug(ctx, "proxy_vms read", map[string]any{
		"marked": len(fleet.VMs), "vms": len(m.VMs), "orphan_seeds": len(m.OrphanSeeds), "orphan_vms": len(m.OrphanVMs),
	})
	// The VMs go in apart (setObjectList): State.Set allocated 1.18 GB and took 2.2 s for
	// ten thousand VMs, setObjectList 74 MB and 0.13 s (BenchmarkVMsState).
	vms := m.VMs
	m.VMs = nil
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := setObjectList(ctx, &resp.State, "vms", vms); err != nil {
		resp.Diagnostics.AddError("Unable to read proxy_vms", "Building the vms list failed, a bug of the provider: "+err.Error())
	}
}

// vmsFilter is the filter of node, name_prefix and name_regex: keep(node, name) says a
// VM or seed of that name on that node is listed. It fails on a name_regex that does not
// compile (which the validator already reported).
func vmsFilter(m vmsModel, diags *diag.Diagnostics) (keep func(vmNode, name string) bool, ok bool) {
	var nameRE *regexp.Regexp
	if re := m.NameRegex.ValueString(); re != "" {
		var err error
		if nameRE, err = regexp.Compile(re); err != nil { // the validator already said so
			diags.AddAttributeError(path.Root("name_regex"), "Invalid regular expression", err.Error())
			return nil, false
		}
	}
	node := m.Node.ValueString()
	prefix := m.NamePrefix.ValueString()
	return func(vmNode, name string) bool {
		return (node == "" || vmNode == node) && (nameRE == nil || nameRE.MatchString(name)) && strings.HasPrefix(name, prefix)
	}, true
}

// readMarked fills vms with the marked VMs the filters keep. A VM whose config could not
// be read fails the read when the answer will not change (it makes the list wrong rather
// than incomplete, as the listing itself would), and is left out with a warning otherwise.
func (d *vmsDataSource) readMarked(ctx context.Context, m *vmsModel, fleet proxmox.Fleet, keep func(string,
	string) bool, diags *diag.Diagnostics) bool {
	all, skipped := fleet.VMs, fleet.Skipped
	for _, sk := range skipped {
		if proxmox.ClassOf(sk.Err) == proxmox.Permanent {
			diags.AddError("Unable to list the marked VMs",
				fmt.Sprintf("VMID %d (%s) on node %s: %s", sk.ID.VMID, sk.ID.Name, sk.Node, d.dsErrorDetail(sk.Err)))
			return false
		}
	}
	if len(skipped) > 0 {
		lines := make([]string, len(skipped))
		for i, s := range skipped {
			lines[i] = fmt.Sprintf("- VMID %d (%s) on node %s: %s", s.ID.VMID, s.ID.Name, s.Node, d.redact(s.Err.Error()))
		}
		diags.AddWarning("Some VMs could not be read",
			"These VMs may carry the mark, but their configuration could not be read, so vms leaves them out:\n"+
				strings.Join(lines, "\n"))
	}
	m.VMs = []vmsVMModel{}
	var kept []proxmox.Instance
	for _, in := range all {
		if !keep(in.Node, in.ID.Name) || !vmsMatch(*m, in) {
			continue
		}
		kept = append(kept, in)
		o := vmsVMModel{
			vmLocation: vmLocation{Node: types.StringValue(in.Node), Pool: stringOrNull(in.Config.Pool)},
			Status:     types.StringValue(in.Status),
		}
		o.identify(in.ID, in.UID, in.CreatedAt)
		m.VMs = append(m.VMs, o)
	}
	d.vmsDetails(ctx, kept, m.VMs, diags)
	return true
}

// readOrphanSeeds fills orphan_seeds from the provider's nodes (the node filter's only).
func (d *vmsDataSource) readOrphanSeeds(ctx context.Context, m *vmsModel, keep func(string, string) bool,
	now time.Time, diags *diag.Diagnostics) bool {
	node := m.Node.ValueString()
	nodes := d.data.cfg.Nodes
	if node != "" {
		nodes = nil
		if slices.Contains(d.data.cfg.Nodes, node) {
			nodes = []string{node}
		}
	}
	m.OrphanSeeds = []vmsOrphanModel{}
	if len(nodes) == 0 {
		return true
	}
	seeds, err := d.data.backend.OrphanSeedsOn(ctx, nodes)
	var skipped *proxmox.SkippedNodesError
	switch {
	case errors.As(err, &skipped):
		diags.AddWarning("Some seed ISOs could not be listed",
			d.redact(skipped.Error())+". orphan_seeds leaves those nodes out; the VM list is complete.")
	case err != nil:
		diags.AddError("Unable to list the orphan seed ISOs", d.dsErrorDetail(err))
		return false
	}
	unproved := ""
	for _, s := range seeds {
		if !keep(s.Node, s.Name) {
			continue
		}
		created, age := ageOf(s.CreatedAt, now)
		m.OrphanSeeds = append(m.OrphanSeeds, vmsOrphanModel{
			Node: types.StringValue(s.Node), VolID: types.StringValue(s.VolID),
			Name: types.StringValue(s.Name), Size: types.Int64Value(s.Size),
			CreatedAt: created, AgeSeconds: age, Proved: types.BoolValue(s.Unproved == ""),
		})
		if s.Unproved != "" {
			unproved = s.Unproved
		}
	}
	if unproved != "" { // decision: orphan-visibility
		diags.AddWarning("Orphan seeds may belong to VMs the API token cannot see",
			"orphan_seeds lists seed ISOs that no VM the API token sees uses, but "+d.redact(unproved)+
				". These entries have proved = false, and proxy_orphan_cleanup keeps them.")
	}
	return true
}

// readOrphanVMs fills orphan_vms with the half-made VMs the filters keep.
func (d *vmsDataSource) readOrphanVMs(m *vmsModel, fleet proxmox.Fleet, keep func(string, string) bool, now time.Time,
	diags *diag.Diagnostics) {
	m.OrphanVMs = []vmsOrphanVMModel{}
	half, unread := fleet.HalfMade, fleet.HalfMadeSkipped
	if len(unread) > 0 {
		lines := make([]string, len(unread))
		for i, s := range unread {
			lines[i] = fmt.Sprintf("- VMID %d (%s) on node %s: %s", s.ID.VMID, s.ID.Name, s.Node, d.redact(s.Err.Error()))
		}
		diags.AddWarning("Some VMs in the VMID range could not be read",
			"Whether these VMs are half-made VMs of this configuration is not known, so orphan_vms leaves them out:\n"+
				strings.Join(lines, "\n"))
	}
	for _, o := range half {
		if !keep(o.Node, o.ID.Name) {
			continue
		}
		created, age := ageOf(o.CreatedAt, now)
		m.OrphanVMs = append(m.OrphanVMs, vmsOrphanVMModel{
			ID: types.StringValue(o.ID.String()), VMID: types.Int64Value(int64(o.ID.VMID)),
			Name: types.StringValue(o.ID.Name), Node: types.StringValue(o.Node), UID: types.StringValue(o.UID),
			CreatedAt: created, AgeSeconds: age, Seed: stringOrNull(o.Seed),
		})
	}
}

// ageOf is a creation time and its age in whole seconds at now, both null for the zero
// time.
func ageOf(t, now time.Time) (types.String, types.Int64) {
	if t.IsZero() {
		return types.StringNull(), types.Int64Null()
	}
	return types.StringValue(t.UTC().Format(time.RFC3339)), types.Int64Value(int64(max(now.Sub(t), 0) / time.Second))
}

// dsErrorDetail is a backend error for a diagnostic, with what to do for its class.
func (d *vmsDataSource) dsErrorDetail(err error) string {
	msg := d.redact(trimEnd(err.Error())) + "."
	if fix, ok := d.data.connectionFix(err); ok {
		return msg + " " + d.redact(fix)
	}
	switch proxmox.ClassOf(err) {
	case proxmox.Permanent:
		return msg + " An administrator must fix this in Proxmox or in the provider configuration."
	default:
		return msg + " This can be temporary (a node or the network not answering, or timeouts.read too short): retry."
	}
}

func (d *vmsDataSource) redact(s string) string { return redact(s, d.data.secrets()) }

// regexpValidator accepts a string that compiles as a Go regular expression (name_regex).
func regexpValidator() validator.String {
	const description = "must be a valid regular expression (Go RE2 syntax)"
	return validators.Check(description, func(v string) (string, string) {
		if _, err := regexp.Compile(v); err != nil {
			return "Invalid regular expression", fmt.Sprintf("name_regex %s: %v.", description, err)
		}
		return "", ""
	})
}
