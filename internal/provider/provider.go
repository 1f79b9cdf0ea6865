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
	str := func(md string, required, sensitive bool, v ...validator.String) schema.StringAttribute {
		return schema.StringAttribute{
			Description: plain(md), MarkdownDescription: md,
			Required: required, Optional: !required, Sensitive: sensitive, Validators: v,
		}
	}
	resp.Schema = schema.Schema{
		Description: "Runs egress proxy VMs on a Proxmox VE 9 cluster through its REST API with an API token. " +
			"Configuring the provider makes no request: problems with the endpoint, token or TLS show when a resource or data source first calls the API.",
		MarkdownDescription: "Runs egress proxy VMs on a Proxmox VE 9 cluster through its REST API with an API token. " +
			"Configuring the provider makes no request (it reads `ca_file` and `api_token_file`): problems with the endpoint, token or TLS show when a resource or data source first calls the API, " +
			"which is at plan time for a refresh or a create (the `proxy_health` data source reports them per node).",
		Attributes: map[string]schema.Attribute{
			"endpoint": str("Proxmox VE API URL, `https://<host>:8006` (a trailing `/` or `/api2/json` is accepted). Without a port, `8006` (where Proxmox VE's API listens) is used, not https's 443; write `:443` for a reverse proxy on that port. "+
				"The host must be a name or address in the node certificate. Falls back to the `"+envEndpoint+"` environment variable; one of the two is required.",
				false, false, validators.HTTPSURL()),
			"api_token": str("API token `<user>@<realm>!<tokenid>=<secret>`, sent as `Authorization: PVEAPIToken=...`. "+
				"Falls back to the `"+envAPIToken+"` environment variable when neither `api_token` nor `api_token_file` is set. "+
				"Exactly one of `api_token` and `api_token_file` (or the environment variable) must provide the token.",
				false, true, validators.APIToken()),
			"api_token_file": str("Path of a file holding the API token on one line. The file is read on every request, so a rotated token "+
				"takes effect without restarting Terraform; a missing or unreadable file, or one that does not hold a token, is a configuration error on this attribute when the provider is configured (at plan time). "+
				"Conflicts with `api_token`.",
				false, false, stringvalidator.LengthAtLeast(1), stringvalidator.ConflictsWith(path.MatchRoot("api_token"))),
			"ca_file": str("Path of a PEM bundle to verify the server certificate with, typically a copy of the node's `/etc/pve/pve-root-ca.pem`. "+
				"Read when the provider is configured (a missing or unreadable file, or one without a certificate, is an error on this attribute at plan time) and cached. Without `ca_file` and `ca_pem` the system roots are used. Conflicts with `ca_pem`.",
				false, false, stringvalidator.LengthAtLeast(1)),
			"ca_pem": str("PEM-encoded CA certificates to verify the server certificate with (the content of `pve-root-ca.pem`). "+
				"Conflicts with `ca_file`.",
				false, false, validators.PEMCertificates(), stringvalidator.ConflictsWith(path.MatchRoot("ca_file"))),
			"insecure": schema.BoolAttribute{
				Description:         "Skip TLS certificate verification (a warning is logged and shown). Default false. Falls back to the " + envInsecure + " environment variable (true/false/1/0), which is ignored when ca_file or ca_pem is set. Cannot be true together with ca_file or ca_pem.",
				MarkdownDescription: "Skip TLS certificate verification (a warning is logged and shown). Default `false`. Falls back to the `" + envInsecure + "` environment variable (`true`/`false`/`1`/`0`), which is ignored when `ca_file` or `ca_pem` is set. Cannot be `true` together with `ca_file` or `ca_pem`.",
				Optional:            true,
			},
			"nodes": schema.ListAttribute{
				Description:         "Names of the Proxmox nodes VMs may be placed on, as Proxmox knows them (e.g. pve1), not addresses. At least one, unique, lowercase letters, digits and '-'. A VM without node goes to the only node, or with several is placed at create on the one with the fewest proxy VMs among those that answer (ties: the most free memory, then this order).",
				MarkdownDescription: "Names of the Proxmox nodes VMs may be placed on, as Proxmox knows them (e.g. `pve1`), not addresses. At least one, unique, each matching `^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`. With a single node, a `proxy_vm` without `node` goes there; with several, it is placed at create on the node with the fewest proxy VMs among those that answer (ties: the most free memory, then this order). See the multi-node guide.",
				ElementType:         types.StringType,
				Required:            true,
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1),
					listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(validators.NodeName()),
				},
			},
			"iso_storage": str("Storage id that receives each VM's NoCloud seed ISO (`<name>-seed.iso`), on every node. Required, no default: "+
				"the token needs `Datastore.Allocate` there to delete seeds, so a dedicated ISO-only storage is recommended. A Proxmox storage id "+
				"(`pve-storage-id`: a letter, then letters, digits, `-`, `_` or `.`, ending with a letter or digit).",
				true, false, validators.StorageID()),
			"storage": str("Storage id the clones' disks go to. Default: the template's own storage. A Proxmox storage id (`pve-storage-id`).",
				false, false, validators.StorageID()),
			"bridge": str("Default bridge for the VMs' `net0` (e.g. `vmbr0`). Default: as cloned from the template. A Proxmox bridge id "+
				"(`pve-bridge-id`): 1 to 15 letters, digits, `-`, `_` or `.`.",
				false, false, validators.BridgeID()),
			"pool": str("Default Proxmox pool for new VMs (a `proxy_vm`'s `pool` overrides it): each clone is made into it, so a "+
				"privilege-separated API token granted on `/pool/<pool>` (plus the template, the storages and the bridge) can do "+
				"everything the provider needs and nothing outside the pool; see the [setup guide](guides/proxmox-setup.md). "+
				"`proxy_health` checks the token's privileges there. A Proxmox pool id: letters, digits, `.`, `-` and `_`, each level "+
				"starting with a letter, up to three levels joined by `/`. Default: no pool.",
				false, false, validators.PoolID(false)),
			"vlan_tag": schema.Int64Attribute{
				Description:         "Default VLAN tag for the VMs' net0, 1 to 4094. Default: as cloned from the template.",
				MarkdownDescription: "Default VLAN tag for the VMs' `net0`, `1` to `4094`. Default: as cloned from the template.",
				Optional:            true,
				Validators:          []validator.Int64{int64validator.Between(1, 4094)},
			},
			"vmid_range": schema.SingleNestedAttribute{
				Description:         fmt.Sprintf("VMIDs new VMs are allocated from (probed in an order derived from each VM's name and the uid_namespace, so a retried create finds its VM again). Default %d to %d. min at least %d, max at most %d, min below max.", defaultVMIDMin, defaultVMIDMax, minVMID, maxVMID),
				MarkdownDescription: fmt.Sprintf("VMIDs new VMs are allocated from (probed in an order derived from each VM's name and the uid_namespace, so a retried create finds its VM again). Default `%d` to `%d`. `min` at least `%d`, `max` at most `%d`, `min` below `max`.", defaultVMIDMin, defaultVMIDMax, minVMID, maxVMID),
				Optional:            true,
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
			"templates": schema.MapAttribute{
				Description:         "Catalogue of templates: key (what proxy_vm's image names) to the VMID of a Proxmox template to clone, at least 100. At least one entry.",
				MarkdownDescription: "Catalogue of templates: key (what `proxy_vm`'s `image` names) to the VMID of a Proxmox template to clone, at least `100`. At least one entry; keys match `^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`.",
				ElementType:         types.Int64Type,
				Required:            true,
				Validators: []validator.Map{
					mapvalidator.SizeAtLeast(1),
					mapvalidator.KeysAre(stringvalidator.RegexMatches(catalogKeyRE, "must be a catalogue key: a letter or digit, then letters, digits, '_', '.' or '-'")),
					mapvalidator.ValueInt64sAre(int64validator.Between(minVMID, maxVMID)),
				},
			},
			"machine_types": schema.MapNestedAttribute{
				Description:         "Catalogue of machine types: key (what proxy_vm's machine_type names) to cores, memory and optionally a disk size. At least one entry.",
				MarkdownDescription: "Catalogue of machine types: key (what `proxy_vm`'s `machine_type` names) to `cores`, `memory_mib` and optionally `disk_gib`. At least one entry; keys match `^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`.",
				Required:            true,
				Validators: []validator.Map{
					mapvalidator.SizeAtLeast(1),
					mapvalidator.KeysAre(stringvalidator.RegexMatches(catalogKeyRE, "must be a catalogue key: a letter or digit, then letters, digits, '_', '.' or '-'")),
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
							Description:         "Boot disk size in GiB, 0 or more; the template's disk is grown to it when it is smaller. Unset or 0: the template's size.",
							MarkdownDescription: "Boot disk size in GiB, `0` or more; the template's disk is grown to it when it is smaller. Unset or `0`: the template's size.",
							Optional:            true, Validators: []validator.Int64{int64validator.Between(0, 128*1024)},
						},
					},
				},
			},
			"request_timeout": str("Time limit of one API request, response included, as a Go duration above zero (`30s`, `2m`). Default `"+defaultRequestTimeout+"`. "+
				"It also bounds a seed upload, so a large `vendor_data` may need more.",
				false, false, validators.Duration()),
			"max_requests_in_flight": schema.Int64Attribute{
				Description:         fmt.Sprintf("Most API requests this provider instance runs at once, 1 to 64. Default %d.", defaultMaxInFlight),
				MarkdownDescription: fmt.Sprintf("Most API requests this provider instance runs at once, `1` to `64`. Default `%d`.", defaultMaxInFlight),
				Optional:            true,
				Validators:          []validator.Int64{int64validator.Between(1, 64)},
			},
			"vendor_data": str("cloud-init vendor-data added to every VM's seed ISO (a `#cloud-config` document, a `#!` script, or anything cloud-init reads). "+
				"With `install_guest_agent` it is joined with the agent install script as a MIME multipart. Sensitive; only its size is logged. "+
				"Changing it affects VMs created afterwards only.",
				false, true),
			"install_guest_agent": schema.BoolAttribute{
				Description:         "Add a vendor-data script that installs and starts qemu-guest-agent (apt, dnf, yum, zypper or apk; needs a package mirror). The provider reads VM addresses through the agent. With false, a create that waits for the address needs a template with the agent baked in and its agent option on (qm set <template> --agent 1), or a cloud-init that installs qemu-guest-agent; otherwise it is refused before the clone. Default true.",
				MarkdownDescription: "Add a vendor-data script that installs and starts `qemu-guest-agent` (apt, dnf, yum, zypper or apk; needs a package mirror). The provider reads VM addresses through the agent. With `false`, a create that waits for the address needs a template with the agent baked in and its agent option on (`qm set <template> --agent 1`), or a cloud-init that installs `qemu-guest-agent`; otherwise it is refused before the clone. Default `true`.",
				Optional:            true,
			},
			"cloud_init_digest_key": cloudInitDigestKeyAttribute(),
			"uid_namespace": str(fmt.Sprintf("The scope within which an interrupted create is resumed. Each new `proxy_vm` gets a random `uid` of its own, "+
				"and a resource only ever manages the VM it created or was given by `terraform import`, so configurations (workspaces, repositories) "+
				"that share a cluster and reuse a VM name each get VMs of their own whatever this says. What it does decide: where a create looks for a "+
				"VMID (derived from the name and this value, so a create killed before Terraform saved any state is found again by the next apply), and "+
				"which half-made VMs a create may take over: one left by an interrupted create of the same name with the same `uid_namespace`. "+
				"Set a value of its own per configuration when two of them might create the same name at the same moment (then neither can take over the "+
				"other's VM in progress). Up to %d letters, digits, `_`, `.` or `-`. Default `\"\"`. Changing it "+
				"does not touch existing VMs.", maxUIDNamespace),
				false, false,
				stringvalidator.LengthAtMost(maxUIDNamespace),
				stringvalidator.RegexMatches(uidNSRE, "must be letters, digits, '_', '.' or '-'")),
		},
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
	if unknown := unknownAttributes(req.Config.Raw); len(unknown) > 0 {
		if req.ClientCapabilities.DeferralAllowed {
			resp.Deferred = &provider.Deferred{Reason: provider.DeferredReasonProviderConfigUnknown}
			return
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
