// Package provider is the Terraform glue: schemas, models, plan modifiers, CRUD, import and
// data sources. It holds no HTTP and no Proxmox wording.
package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

var (
	_ provider.Provider                   = (*proxyProvider)(nil)
	_ provider.ProviderWithValidateConfig = (*proxyProvider)(nil)
)

// Environment variables read by the provider. They are the names the most used Proxmox
// provider (bpg/proxmox) reads, so existing CI secrets work unchanged.
const (
	envEndpoint = "PROXMOX_VE_ENDPOINT"
	envAPIToken = "PROXMOX_VE_API_TOKEN"
	envInsecure = "PROXMOX_VE_INSECURE"
)

// Defaults applied in Configure (a provider schema has no Default).
const (
	defaultVMIDMin        = 100000
	defaultVMIDMax        = 199999
	defaultRequestTimeout = "30s"
	defaultMaxInFlight    = 8
	minVMID               = 100
	maxVMID               = 999999999
)

var (
	catalogKeyRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	uidNSRE      = regexp.MustCompile(`^[A-Za-z0-9_.-]*$`)
)

// maxUIDNamespace is the longest uid_namespace.
const maxUIDNamespace = 64

type proxyProvider struct {
	version string
	// lookupEnv reads the environment; tests replace it.
	lookupEnv func(string) (string, bool)
}

// New returns the provider factory.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &proxyProvider{version: version, lookupEnv: os.LookupEnv} }
}

// providerModel is the provider block.
type providerModel struct {
	Endpoint            types.String `tfsdk:"endpoint"`
	APIToken            types.String `tfsdk:"api_token"`
	APITokenFile        types.String `tfsdk:"api_token_file"`
	CAFile              types.String `tfsdk:"ca_file"`
	CAPEM               types.String `tfsdk:"ca_pem"`
	Insecure            types.Bool   `tfsdk:"insecure"`
	Nodes               types.List   `tfsdk:"nodes"`
	ISOStorage          types.String `tfsdk:"iso_storage"`
	Storage             types.String `tfsdk:"storage"`
	Bridge              types.String `tfsdk:"bridge"`
	VLANTag             types.Int64  `tfsdk:"vlan_tag"`
	Pool                types.String `tfsdk:"pool"`
	VMIDRange           types.Object `tfsdk:"vmid_range"`
	Templates           types.Map    `tfsdk:"templates"`
	MachineTypes        types.Map    `tfsdk:"machine_types"`
	RequestTimeout      types.String `tfsdk:"request_timeout"`
	MaxRequestsInFlight types.Int64  `tfsdk:"max_requests_in_flight"`
	VendorData          types.String `tfsdk:"vendor_data"`
	InstallGuestAgent   types.Bool   `tfsdk:"install_guest_agent"`
	UIDNamespace        types.String `tfsdk:"uid_namespace"`
	// The key of the cloud_init_wo digests (vm_cloud_init.go).
	CloudInitDigestKey types.String `tfsdk:"cloud_init_digest_key"`
}

type vmidRangeModel struct {
	Min types.Int64 `tfsdk:"min"`
	Max types.Int64 `tfsdk:"max"`
}

type machineTypeModel struct {
	Cores     types.Int64 `tfsdk:"cores"`
	MemoryMiB types.Int64 `tfsdk:"memory_mib"`
	DiskGiB   types.Int64 `tfsdk:"disk_gib"`
}

func (p *proxyProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "proxy"
	resp.Version = p.version
}

func (p *proxyProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Runs egress proxy VMs on a Proxmox VE 9 cluster through its REST API with an API token. " +
			"Configuring the provider makes no request: problems with the endpoint, token or TLS show when a resource " +
			"or data source first calls the API.",
		MarkdownDescription: "Runs egress proxy VMs on a Proxmox VE 9 cluster through its REST API with an API token. " +
			"Configuring it makes no request: problems with the endpoint, token or TLS show at the first API call " +
			"(`proxy_health` reports them per node).",
		Attributes: mergeAttributes(connectionAttributes(), placementAttributes(), catalogueAttributes(), guestAttributes()),
	}
}

// providerString is a provider attribute of type string described by md.
func providerString(md string, required, sensitive bool, v ...validator.String) schema.StringAttribute {
	return schema.StringAttribute{
		Description: plain(md), MarkdownDescription: md,
		Required: required, Optional: !required, Sensitive: sensitive, Validators: v,
	}
}

// mergeAttributes is the union of the attribute maps in ms.
func mergeAttributes(ms ...map[string]schema.Attribute) map[string]schema.Attribute {
	out := map[string]schema.Attribute{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// connectionAttributes are the provider's attributes for reaching the API: the endpoint, the
// token, TLS and the request limits.
func connectionAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"endpoint": providerString("Proxmox VE API URL, `https://<host>:8006`; without a port, `8006` is used. The host must "+
			"be named in the node certificate. Falls back to `"+envEndpoint+"`; one of the two is required.",
			false, false, validators.HTTPSURL()),
		"api_token": providerString("API token `<user>@<realm>!<tokenid>=<secret>`. Falls back to `"+envAPIToken+"` when "+
			"neither `api_token` nor `api_token_file` is set. Sensitive.",
			false, true, validators.APIToken()),
		"api_token_file": providerString("Path of a file holding the API token on one line, read on every request (a rotated "+
			"token needs no restart). Conflicts with `api_token`.",
			false, false, stringvalidator.LengthAtLeast(1), stringvalidator.ConflictsWith(path.MatchRoot("api_token"))),
		"ca_file": providerString("Path of a PEM bundle to verify the server certificate with, e.g. a copy of "+
			"`/etc/pve/pve-root-ca.pem`. Without `ca_file` and `ca_pem`, the system roots. Conflicts with `ca_pem`.",
			false, false, stringvalidator.LengthAtLeast(1)),
		"ca_pem": providerString("PEM-encoded CA certificates to verify the server certificate with (the content of `pve-root-ca.pem`). "+
			"Conflicts with `ca_file`.",
			false, false, validators.PEMCertificates(), stringvalidator.ConflictsWith(path.MatchRoot("ca_file"))),
		"insecure": schema.BoolAttribute{
			Description: plain("Skip TLS certificate verification (logged as a warning). Default `false`. " +
				"Falls back to `" + envInsecure + "`, ignored when a CA is set."),
			MarkdownDescription: "Skip TLS certificate verification (logged as a warning). Default `false`. Falls " +
				"back to `" + envInsecure + "`, ignored when a CA is set.",
			Optional: true,
		},
		"request_timeout": providerString("Time limit of one API request, response included (`30s`, `2m`), also of a seed "+
			"upload. Default `"+defaultRequestTimeout+"`.",
			false, false, validators.Duration()),
		"max_requests_in_flight": schema.Int64Attribute{
			Description: fmt.Sprintf("Most API requests this provider instance runs at once, 1 to 64. Default %d.", defaultMaxInFlight),
			MarkdownDescription: fmt.Sprintf("Most API requests this provider instance runs at once, `1` to `64`. "+
				"Default `%d`.", defaultMaxInFlight),
			Optional:   true,
			Validators: []validator.Int64{int64validator.Between(1, 64)},
		},
	}
}

// placementAttributes are the provider's attributes for where new VMs go: nodes, storages,
// network defaults, pool and VMIDs.
func placementAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"nodes": schema.ListAttribute{
			Description: plain("Names of the Proxmox nodes VMs may be placed on, as `pvecm nodes` shows " +
				"them (e.g. `pve1`), not addresses. A VM without `node` is placed on one of them: see the [multi-node guide](guides/multi-node.md)."),
			MarkdownDescription: "Names of the Proxmox nodes VMs may be placed on, as `pvecm nodes` shows them " +
				"(e.g. `pve1`), not addresses. A VM without `node` is placed on one of them: see the [multi-node guide](guides/multi-node.md).",
			ElementType: types.StringType,
			Required:    true,
			Validators: []validator.List{
				listvalidator.SizeAtLeast(1),
				listvalidator.UniqueValues(),
				listvalidator.ValueStringsAre(validators.NodeName()),
			},
		},
		"iso_storage": providerString("Storage id (ISO content) that receives each VM's [seed ISO](#glossary), on every "+
			"node. No default: the token needs `Datastore.Allocate` there, so use a storage of its own.",
			true, false, validators.StorageID()),
		"storage": providerString("Storage id the clones' disks go to. Default: the template's own storage. "+
			"A Proxmox storage id (`pve-storage-id`).",
			false, false, validators.StorageID()),
		"bridge": providerString("Default bridge for the VMs' `net0` (e.g. `vmbr0`). Default: as cloned from the template.",
			false, false, validators.BridgeID()),
		"pool": providerString("Default Proxmox pool new VMs are cloned into, so a token granted on `/pool/<pool>` suffices "+
			"(see the [setup guide](guides/proxmox-setup.md)). Default: no pool.",
			false, false, validators.PoolID(false)),
		"vlan_tag": schema.Int64Attribute{
			Description:         "Default VLAN tag for the VMs' net0, 1 to 4094. Default: as cloned from the template.",
			MarkdownDescription: "Default VLAN tag for the VMs' `net0`, `1` to `4094`. Default: as cloned from the template.",
			Optional:            true,
			Validators:          []validator.Int64{int64validator.Between(1, 4094)},
		},
		"vmid_range": schema.SingleNestedAttribute{
			Description: plain(fmt.Sprintf("VMIDs new VMs are allocated from; see [VMIDs](#vmids). "+
				"Default `%d` to `%d`, `min` at least `%d`.", defaultVMIDMin, defaultVMIDMax, minVMID)),
			MarkdownDescription: fmt.Sprintf("VMIDs new VMs are allocated from; see [VMIDs](#vmids). Default `%d` "+
				"to `%d`, `min` at least `%d`.", defaultVMIDMin, defaultVMIDMax, minVMID),
			Optional: true,
			Attributes: map[string]schema.Attribute{
				"min": schema.Int64Attribute{
					Description: "Lowest VMID (inclusive), at least 100.", MarkdownDescription: "Lowest VMID (inclusive), at least `100`.",
					Required:   true,
					Validators: []validator.Int64{int64validator.Between(minVMID, maxVMID)},
				},
				"max": schema.Int64Attribute{
					Description: "Highest VMID (inclusive), at most 999999999.", MarkdownDescription: "Highest VMID (inclusive), at most `999999999`.",
					Required:   true,
					Validators: []validator.Int64{int64validator.Between(minVMID, maxVMID)},
				},
			},
		},
	}
}

// catalogueAttributes are the provider's catalogues: the templates and the machine types a proxy_vm names.
func catalogueAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"templates": schema.MapAttribute{
			Description: "Catalogue of templates: key (what proxy_vm's image names) to the VMID of a " +
				"Proxmox template to clone, at least 100. At least one entry.",
			MarkdownDescription: "Catalogue of templates: key (what `proxy_vm`'s `image` names) to the VMID of a " +
				"Proxmox template to clone, at least `100`. At least one entry; keys match `^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`.",
			ElementType: types.Int64Type,
			Required:    true,
			Validators: []validator.Map{
				mapvalidator.SizeAtLeast(1),
				mapvalidator.KeysAre(stringvalidator.RegexMatches(catalogKeyRE, "must be a catalogue key: a "+
					"letter or digit, then letters, digits, '_', '.' or '-'")),
				mapvalidator.ValueInt64sAre(int64validator.Between(minVMID, maxVMID)),
			},
		},
		"machine_types": schema.MapNestedAttribute{
			Description: "Catalogue of machine types: key (what proxy_vm's machine_type names) to cores, " +
				"memory and optionally a disk size. At least one entry.",
			MarkdownDescription: "Catalogue of machine types: key (what `proxy_vm`'s `machine_type` names) to " +
				"`cores`, `memory_mib` and optionally `disk_gib`. At least one entry; keys match `^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`.",
			Required: true,
			Validators: []validator.Map{
				mapvalidator.SizeAtLeast(1),
				mapvalidator.KeysAre(stringvalidator.RegexMatches(catalogKeyRE, "must be a catalogue key: a "+
					"letter or digit, then letters, digits, '_', '.' or '-'")),
			},
			NestedObject: schema.NestedAttributeObject{
				Attributes: map[string]schema.Attribute{
					"cores": schema.Int64Attribute{
						Description: "Virtual CPU cores, above 0.", MarkdownDescription: "Virtual CPU cores, above `0`.",
						Required: true, Validators: []validator.Int64{int64validator.Between(1, 1024)},
					},
					"memory_mib": schema.Int64Attribute{
						Description: "Memory in MiB, above 0.", MarkdownDescription: "Memory in MiB, above `0`.",
						Required: true, Validators: []validator.Int64{int64validator.Between(1, 64*1024*1024)},
					},
					"disk_gib": schema.Int64Attribute{
						Description: "Boot disk size in GiB, 0 or more; the template's disk is grown to " +
							"it when it is smaller. Unset or 0: the template's size.",
						MarkdownDescription: "Boot disk size in GiB, `0` or more; the template's disk is grown to " +
							"it when it is smaller. Unset or `0`: the template's size.",
						Optional: true, Validators: []validator.Int64{int64validator.Between(0, 128*1024)},
					},
				},
			},
		},
	}
}

// guestAttributes are the provider's attributes for what every new VM gets: vendor-data, the
// guest agent, the digest key and the uid namespace.
func guestAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"vendor_data": providerString("cloud-init vendor-data added to every new VM's seed ISO, joined with the agent "+
			"install script when `install_guest_agent` is on. Sensitive. A change affects only VMs created afterwards.",
			false, true),
		"install_guest_agent": schema.BoolAttribute{
			Description: plain("Install and start `qemu-guest-agent` at first boot through vendor-data " +
				"(needs a package mirror); the provider reads addresses through the agent. Default `true`; with " +
				"`false` the template must ship the agent."),
			MarkdownDescription: "Install and start `qemu-guest-agent` at first boot through vendor-data (needs a " +
				"package mirror); the provider reads addresses through the agent. Default `true`; with `false` the template must ship the agent.",
			Optional: true,
		},
		"cloud_init_digest_key": cloudInitDigestKeyAttribute(),
		"uid_namespace": providerString(fmt.Sprintf("Where a create looks for its VMID: the VMIDs derive from the VM's name "+
			"and this value, so an interrupted create is resumed by the next apply in the same namespace. VMs are "+
			"not shared either way: each gets a random `uid`. Up to %d letters, digits, `_`, `.` or `-`; default `\"\"`.", maxUIDNamespace),
			false, false,
			stringvalidator.LengthAtMost(maxUIDNamespace),
			stringvalidator.RegexMatches(uidNSRE, "must be letters, digits, '_', '.' or '-'")),
	}
}

// ValidateConfig checks the rules that span attributes. Unknown values are skipped: they
// are checked once known.
func (p *proxyProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !m.VMIDRange.IsNull() && !m.VMIDRange.IsUnknown() {
		var r vmidRangeModel
		resp.Diagnostics.Append(m.VMIDRange.As(ctx, &r, objectAsOptions)...)
		if known(r.Min) && known(r.Max) && r.Min.ValueInt64() >= r.Max.ValueInt64() {
			resp.Diagnostics.AddAttributeError(path.Root("vmid_range").AtName("max"), "Invalid VMID range",
				fmt.Sprintf("vmid_range.max (%d) must be above vmid_range.min (%d).", r.Max.ValueInt64(), r.Min.ValueInt64()))
		}
	}
	if m.Insecure.ValueBool() && (known(m.CAFile) || known(m.CAPEM)) {
		resp.Diagnostics.AddAttributeError(path.Root("insecure"), "Invalid Attribute Combination",
			"insecure = true skips TLS verification, so it cannot be set together with ca_file or ca_pem. Remove one of them.")
	}
}

// known reports a value that is neither null nor unknown.
func known(v interface {
	IsNull() bool
	IsUnknown() bool
},
) bool {
	return !v.IsNull() && !v.IsUnknown()
}

func (p *proxyProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	ctx = maskContext(ctx)
	if deferUnknown(req, resp) {
		return
	}
	var m providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	cfg, token, diags := resolve(ctx, m, p.lookupEnv)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	secrets := tokenSecrets(token)
	if cfg.TokenFile != "" {
		if b, err := os.ReadFile(cfg.TokenFile); err == nil {
			secrets = tokenSecrets(string(b))
		}
	}
	ctx = maskContext(ctx, secrets...)
	// The files are read now: Terraform runs once, so a file that is not there is a
	// configuration mistake to report on its attribute before any plan is made.
	resp.Diagnostics.Append(checkFiles(cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}

	if cfg.Insecure {
		tflog.Warn(ctx, "TLS certificate verification is disabled (insecure)", map[string]any{"endpoint": cfg.Endpoint})
		resp.Diagnostics.AddAttributeWarning(path.Root("insecure"), "TLS verification is disabled",
			"insecure is true, so the provider does not verify the Proxmox server's certificate and the API token can be intercepted. "+
				"Set ca_file or ca_pem to the cluster's CA (/etc/pve/pve-root-ca.pem) instead.")
	}

	capem := m.CAPEM.ValueString()
	client, err := pveapi.New(pveapi.Options{
		Endpoint:       cfg.Endpoint,
		Token:          token,
		TokenFile:      cfg.TokenFile,
		CAFile:         cfg.CAFile,
		CAPEM:          capem,
		Insecure:       cfg.Insecure,
		RequestTimeout: cfg.RequestTimeout,
		MaxInFlight:    cfg.MaxInFlight,
		UserAgent:      p.userAgent(req.TerraformVersion),
	})
	if err != nil {
		resp.Diagnostics.AddError("Unable to configure the Proxmox API client", redact(err.Error(), secrets)+".")
		return
	}
	cfg.Endpoint = client.Address() // the port filled in, for messages and proxy_vms' id
	data := &providerData{
		client:    client,
		cfg:       cfg,
		backend:   proxmox.New(client, withProofKey(cfg.backendConfig(client.TokenID), client)),
		token:     token,
		tokenFile: cfg.TokenFile,
	}
	resp.ResourceData = data
	resp.DataSourceData = data
	resp.ListResourceData = data // the proxy_vm list resource (proxy_vm_list.go)
	resp.ActionData = data       // proxy_orphan_cleanup (orphan_cleanup_action.go)

	logConfigured(ctx, cfg)
}

// deferUnknown handles a configuration with a value not known at plan time: the configure is
// deferred when Terraform allows it, else each unknown attribute is an error. It reports
// whether the configure stops there.
func deferUnknown(req provider.ConfigureRequest, resp *provider.ConfigureResponse) bool {
	unknown := unknownAttributes(req.Config.Raw)
	if len(unknown) == 0 {
		return false
	}
	if req.ClientCapabilities.DeferralAllowed {
		resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
		return true
	}
	for _, name := range unknown {
		detail := fmt.Sprintf("The provider cannot be configured while %s is unknown (it depends on a value known only after apply). "+
			"Set it to a value known at plan time, or apply the resources it depends on first (terraform apply -target=...).", name)
		if name == unknownBlock {
			resp.Diagnostics.AddError("Unknown provider configuration value", detail)
			continue
		}
		resp.Diagnostics.AddAttributeError(path.Root(name), "Unknown provider configuration value", detail)
	}
	return true
}

// logConfigured logs the resolved configuration, without its secrets.
func logConfigured(ctx context.Context, cfg resolvedConfig) {
	tflog.Debug(ctx, "provider configured", map[string]any{
		"endpoint":               cfg.Endpoint,
		"token_source":           cfg.TokenSource,
		"nodes":                  strings.Join(cfg.Nodes, ","),
		"iso_storage":            cfg.ISOStorage,
		"storage":                cfg.Storage,
		"pool":                   cfg.Pool,
		"vmid_min":               cfg.VMIDMin,
		"vmid_max":               cfg.VMIDMax,
		"templates":              len(cfg.Templates),
		"machine_types":          len(cfg.MachineTypes),
		"ca":                     caSource(cfg),
		"insecure":               cfg.Insecure,
		"request_timeout":        cfg.RequestTimeout.String(),
		"max_requests_in_flight": cfg.MaxInFlight,
		"vendor_data_bytes":      len(cfg.VendorData),
		"install_guest_agent":    cfg.InstallGuestAgent,
		"uid_namespace":          cfg.UIDNamespace,
	})

}

func (p *proxyProvider) userAgent(tfVersion string) string {
	ua := "terraform-provider-proxy/" + p.version
	if tfVersion != "" {
		ua += " terraform/" + tfVersion
	}
	return ua
}

func caSource(c resolvedConfig) string {
	switch {
	case c.CAFile != "":
		return "ca_file"
	case c.HasCAPEM:
		return "ca_pem"
	default:
		return "system"
	}
}

// redact replaces every secret in s by "***".
func redact(s string, secrets []string) string {
	// Longest first, so the token goes before its secret part.
	sorted := append([]string(nil), secrets...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	for _, sec := range sorted {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "***")
		}
	}
	return s
}

// unknownBlock stands for the whole provider block in unknownAttributes.
const unknownBlock = "the provider block"

// unknownAttributes lists the top-level attributes whose value is not wholly known, sorted.
func unknownAttributes(raw tftypes.Value) []string {
	if raw.IsFullyKnown() {
		return nil
	}
	if !raw.IsKnown() {
		return []string{unknownBlock}
	}
	var attrs map[string]tftypes.Value
	if err := raw.As(&attrs); err != nil {
		return []string{unknownBlock}
	}
	var out []string
	for name, v := range attrs {
		if !v.IsFullyKnown() {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (p *proxyProvider) Resources(_ context.Context) []func() resource.Resource {
	return []func() resource.Resource{NewProxyVMResource, NewHARuleResource}
}

func (p *proxyProvider) DataSources(_ context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewHealthDataSource, NewVMsDataSource, NewVMDataSource}
}
