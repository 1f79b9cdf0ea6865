package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var (
	_ datasource.DataSource              = (*healthDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*healthDataSource)(nil)
)

// defaultHealthReadTimeout bounds one health round when timeouts.read is not set.
const defaultHealthReadTimeout = 30 * time.Second

type healthDataSource struct{ data *providerData }

// NewHealthDataSource is the proxy_health data source factory.
func NewHealthDataSource() datasource.DataSource { return &healthDataSource{} }

type healthModel struct {
	ID       types.String      `tfsdk:"id"`
	Ready    types.Bool        `tfsdk:"ready"`
	Nodes    []healthNodeModel `tfsdk:"nodes"`
	HA       *healthHAModel    `tfsdk:"ha"`
	Timeouts timeouts.Value    `tfsdk:"timeouts"`
}

// healthHAModel is the HA verdict (proxmox.CheckHA): not part of ready, since HA is
// optional.
type healthHAModel struct {
	Usable            types.Bool   `tfsdk:"usable"`
	Quorate           types.Bool   `tfsdk:"quorate"`
	MissingPrivileges types.List   `tfsdk:"missing_privileges"`
	Message           types.String `tfsdk:"message"`
}

type healthNodeModel struct {
	Name               types.String  `tfsdk:"name"`
	Address            types.String  `tfsdk:"address"`
	Ready              types.Bool    `tfsdk:"ready"`
	Reason             types.String  `tfsdk:"reason"`
	Message            types.String  `tfsdk:"message"`
	PVEVersion         types.String  `tfsdk:"pve_version"`
	Kernel             types.String  `tfsdk:"kernel"`
	TokenID            types.String  `tfsdk:"token_id"`
	ISOStorage         types.String  `tfsdk:"iso_storage"`
	ISOStorageAvailGiB types.Float64 `tfsdk:"iso_storage_avail_gib"`
	Templates          types.String  `tfsdk:"templates"`
	MissingPrivileges  types.List    `tfsdk:"missing_privileges"`
}

func (d *healthDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_health"
}

func (d *healthDataSource) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	detail := func(md string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: md, Description: plain(md)}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "One readiness verdict per node of the provider's `nodes`: the node answers, " +
			"`iso_storage` is usable, the API token has every privilege the provider needs, and every catalogue " +
			"template exists. It never fails on an unhealthy node: gate applies on `ready`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The provider's `endpoint`.",
			},
			"ready": schema.BoolAttribute{
				Computed:            true,
				MarkdownDescription: "`true` only when every node is ready.",
			},
			"ha": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "Whether HA (`ha` on `proxy_vm`, `proxy_ha_rule`) is usable: the cluster is quorate and the API token " +
					"holds `Sys.Audit` and `Sys.Console` on `/`. Not part of `ready`.",
				Attributes: map[string]schema.Attribute{
					"usable": schema.BoolAttribute{
						Computed: true, MarkdownDescription: "`true` when the cluster is quorate and no HA privilege is missing.",
					},
					"quorate": schema.BoolAttribute{
						Computed: true, MarkdownDescription: "The quorum of `GET /cluster/ha/status/current`; null when it could not be read.",
					},
					"missing_privileges": schema.ListAttribute{
						Computed: true, ElementType: types.StringType,
						MarkdownDescription: "The HA privileges the API token lacks, each `<privilege> on /`; null when they could not be read.",
					},
					"message": detail("What the HA check found, in words."),
				},
			},
			"nodes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "One verdict per node of the provider's `nodes`, in that order. Details the check did not reach are null.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    detail("The node name, as in the provider's `nodes`."),
					"address": detail("The API endpoint the node was checked through."),
					"ready": schema.BoolAttribute{
						Computed: true,
						MarkdownDescription: "`true` when `reason` is `Reachable`: the node answers, the ISO storage " +
							"is usable and every catalogue template exists.",
					},
					"reason": detail("Why the node is or is not ready: `Reachable` (ready), `Timeout`, `Unreachable`, `Unauthorized`, `Forbidden`, " +
						"`CertificateInvalid`, `CredentialsUnavailable`, `StorageNotFound`, `TemplateNotFound` or `APIError`; see [Reasons](#reasons)."),
					"message":     detail("What the check found, in words; for a failure, what failed and Proxmox's answer."),
					"pve_version": detail("The Proxmox VE version, e.g. `9.2.20`."),
					"kernel":      detail("The node's kernel release, e.g. `7.0.14-17-pve`."),
					"token_id":    detail("The API token's id (`<user>@<realm>!<tokenid>`), never its secret."),
					"iso_storage": detail("The ISO storage checked (the provider's `iso_storage`)."),
					"iso_storage_avail_gib": schema.Float64Attribute{
						Computed:            true,
						MarkdownDescription: "Free space on the ISO storage in GiB, once the storage answered.",
					},
					"templates": detail("Catalogue templates found usable as `<found>/<configured>`, counting catalogue entries."),
					"missing_privileges": schema.ListAttribute{
						Computed: true, ElementType: types.StringType,
						MarkdownDescription: "The privileges the provider needs that the API token lacks, each `<privilege> on <path>` " +
							"(alternatives joined by ` or `), e.g. `VM.Allocate on /pool/proxies`: those the privilege round found " +
							"missing, or the one a refused read of the node's round named (`Sys.Audit on /nodes/<node>`). Empty when none " +
							"is missing, null when the check stopped before the privilege round for another reason.",
					},
				}},
			},
		},
		// A block, as on proxy_vm: the same form on every object.
		Blocks: map[string]schema.Block{
			"timeouts": markdownDataSourceTimeouts(timeouts.BlockWithOpts(ctx, timeouts.Opts{
				ReadDescription: "How long the whole check may take, as a duration (`\"30s\"`, `\"2m\"`); default `30s`. " +
					"A node still being checked then is reported as `Timeout`; the others keep their verdicts.",
			})),
		},
	}
}

func (d *healthDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *healthDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	ctx = d.data.withLogging(ctx)
	var m healthModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.data == nil {
		resp.Diagnostics.AddError("Unable to read proxy_health", dsNotConfigured)
		return
	}
	timeout, diags := m.Timeouts.Read(ctx, defaultHealthReadTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var ha proxmox.HAHealth
	haDone := make(chan struct{})
	go func() {
		defer close(haDone)
		ha = d.data.backend.CheckHA(rctx)
	}()
	checks := d.data.backend.CheckDetailed(rctx)
	<-haDone
	m.HA = healthHAFrom(ha)

	m.ID = types.StringValue(d.data.cfg.Endpoint)
	m.Nodes = make([]healthNodeModel, len(checks))
	ready := true
	notReady := 0
	for i, c := range checks {
		m.Nodes[i] = healthNodeFrom(c)
		if !c.Ready {
			ready = false
			notReady++
		}
	}
	m.Ready = types.BoolValue(ready)
	tflog.Debug(ctx, "proxy_health read", map[string]any{
		"nodes": len(checks), "not_ready": notReady, "timeout": timeout.String(),
	})
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// healthNodeFrom maps a verdict: empty details (not reached) are null.
func healthNodeFrom(c proxmox.NodeCheck) healthNodeModel {
	avail := types.Float64Null()
	if c.StorageAnswered {
		avail = types.Float64Value(c.ISOStorageAvailGiB)
	}
	return healthNodeModel{
		Name:               types.StringValue(c.Name),
		Address:            types.StringValue(c.Address),
		Ready:              types.BoolValue(c.Ready),
		Reason:             types.StringValue(string(c.Reason)),
		Message:            types.StringValue(c.Message),
		PVEVersion:         dsString(c.PVEVersion),
		Kernel:             dsString(c.Kernel),
		TokenID:            dsString(c.TokenID),
		ISOStorage:         types.StringValue(c.ISOStorage),
		ISOStorageAvailGiB: avail,
		Templates:          dsString(c.Templates),
		MissingPrivileges:  missingPrivileges(c),
	}
}

// healthHAFrom maps the HA verdict: what was not read is null.
func healthHAFrom(h proxmox.HAHealth) *healthHAModel {
	out := &healthHAModel{
		Usable: types.BoolValue(h.Usable), Quorate: types.BoolNull(),
		MissingPrivileges: types.ListNull(types.StringType), Message: types.StringValue(h.Message),
	}
	if h.QuorumKnown {
		out.Quorate = types.BoolValue(h.Quorate)
	}
	if h.MissingPrivileges != nil {
		elems := make([]attr.Value, len(h.MissingPrivileges))
		for i, m := range h.MissingPrivileges {
			elems[i] = types.StringValue(m)
		}
		out.MissingPrivileges = types.ListValueMust(types.StringType, elems)
	}
	return out
}

// missingPrivileges is the verdict's list: empty once the privilege round ran (the
// templates were counted), the privileges missing when some are (the round's, or the one a
// refused read named), null otherwise.
func missingPrivileges(c proxmox.NodeCheck) types.List {
	if c.Templates == "" && len(c.MissingPrivileges) == 0 {
		return types.ListNull(types.StringType)
	}
	elems := make([]attr.Value, len(c.MissingPrivileges))
	for i, m := range c.MissingPrivileges {
		elems[i] = types.StringValue(m)
	}
	return types.ListValueMust(types.StringType, elems)
}

// dsNotConfigured is the detail of a read without provider data.
const dsNotConfigured = "The proxy provider is not configured. Check the provider block's diagnostics above; " +
	"if there are none, this is a bug in the provider: please report it."

// dsString is s, or null when s is empty.
func dsString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}
