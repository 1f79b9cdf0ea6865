package provider

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
)

// objectAsOptions reads objects whose attributes may be null or unknown into models of
// types.* fields.
var objectAsOptions = basetypes.ObjectAsOptions{}

// envCAFile is the ca_file fallback: the path of the cluster's CA bundle.
const envCAFile = "PROXMOX_VE_CA_FILE"

// resolve applies the environment fallbacks and the defaults to a wholly known
// configuration, re-checks what the environment supplied, and returns the configuration
// and the token (empty when a token file is used). Diagnostics never quote the token.
func resolve(ctx context.Context, m providerModel, lookupEnv func(string) (string, bool)) (resolvedConfig, string, diag.Diagnostics) {
	var diags diag.Diagnostics
	env := func(name string) string {
		if lookupEnv == nil {
			return ""
		}
		v, _ := lookupEnv(name)
		return strings.TrimSpace(v)
	}
	c := resolvedConfig{
		ISOStorage:        m.ISOStorage.ValueString(),
		Storage:           m.Storage.ValueString(),
		Bridge:            m.Bridge.ValueString(),
		Pool:              m.Pool.ValueString(),
		VLANTag:           int(m.VLANTag.ValueInt64()),
		VMIDMin:           defaultVMIDMin,
		VMIDMax:           defaultVMIDMax,
		VendorData:        m.VendorData.ValueString(),
		InstallGuestAgent: true,
		UIDNamespace:      m.UIDNamespace.ValueString(),
		TokenFile:         m.APITokenFile.ValueString(),
		CAFile:            m.CAFile.ValueString(),
		HasCAPEM:          m.CAPEM.ValueString() != "",
		MaxInFlight:       defaultMaxInFlight,
	}

	// endpoint
	diags.Append(resolveEndpoint(m, env, &c)...)

	// token
	token, d := resolveToken(m, env, &c)
	diags.Append(d...)

	c.DigestKey = m.CloudInitDigestKey.ValueString()
	if m.CloudInitDigestKey.IsNull() {
		c.DigestKey = env(envDigestKey)
	}

	// ca_file from the environment: only when the block names no CA and does not set
	// insecure = true (the block's own choice wins).
	if c.CAFile == "" && !c.HasCAPEM && !m.Insecure.ValueBool() {
		c.CAFile = env(envCAFile)
	}

	// insecure
	diags.Append(resolveInsecure(m, env, &c)...)

	diags.Append(resolveCollections(ctx, m, &c)...)

	// request_timeout, max_requests_in_flight, install_guest_agent
	rt := defaultRequestTimeout
	if !m.RequestTimeout.IsNull() {
		rt = m.RequestTimeout.ValueString()
	}
	timeout, err := time.ParseDuration(rt)
	if err != nil || timeout <= 0 {
		diags.AddAttributeError(path.Root("request_timeout"), "Invalid request timeout",
			fmt.Sprintf("request_timeout must be a duration above zero such as \"30s\", got %q.", rt))
	}
	c.RequestTimeout = timeout
	if !m.MaxRequestsInFlight.IsNull() {
		c.MaxInFlight = int(m.MaxRequestsInFlight.ValueInt64())
	}
	if !m.InstallGuestAgent.IsNull() {
		c.InstallGuestAgent = m.InstallGuestAgent.ValueBool()
	}
	return c, token, diags
}

// resolveCollections copies the block's nodes, vmid_range, templates and machine_types
// into c.
func resolveCollections(ctx context.Context, m providerModel, c *resolvedConfig) diag.Diagnostics {
	var diags diag.Diagnostics
	// nodes
	var nodes []string
	diags.Append(m.Nodes.ElementsAs(ctx, &nodes, false)...)
	c.Nodes = nodes

	// vmid_range
	if !m.VMIDRange.IsNull() {
		var r vmidRangeModel
		diags.Append(m.VMIDRange.As(ctx, &r, objectAsOptions)...)
		c.VMIDMin, c.VMIDMax = int(r.Min.ValueInt64()), int(r.Max.ValueInt64())
	}

	// templates
	var templates map[string]int64
	diags.Append(m.Templates.ElementsAs(ctx, &templates, false)...)
	c.Templates = make(map[string]int, len(templates))
	for k, v := range templates {
		c.Templates[k] = int(v)
	}

	// machine_types
	var mts map[string]machineTypeModel
	diags.Append(m.MachineTypes.ElementsAs(ctx, &mts, false)...)
	c.MachineTypes = make(map[string]machineType, len(mts))
	for k, v := range mts {
		c.MachineTypes[k] = machineType{Cores: int(v.Cores.ValueInt64()), MemoryMiB: int(v.MemoryMiB.ValueInt64()),
			DiskGiB: int(v.DiskGiB.ValueInt64())}
	}
	return diags
}

// resolveEndpoint sets c.Endpoint from the block or, without one there, the environment,
// which it checks as the schema checks the block's.
func resolveEndpoint(m providerModel, env func(string) string, c *resolvedConfig) diag.Diagnostics {
	var diags diag.Diagnostics
	c.Endpoint = m.Endpoint.ValueString()
	if !m.Endpoint.IsNull() {
		return nil
	}
	c.Endpoint = env(envEndpoint)
	if c.Endpoint == "" {
		diags.AddAttributeError(path.Root("endpoint"), "Missing Proxmox VE endpoint",
			"Set endpoint in the provider block or the "+envEndpoint+" environment variable to the API URL, e.g. https://pve.example.com:8006.")
	} else if err := validators.CheckHTTPSURL(c.Endpoint); err != nil {
		diags.AddAttributeError(path.Root("endpoint"), "Invalid Proxmox VE endpoint",
			fmt.Sprintf("The %s environment variable must be an https URL with a host and no path other than / or "+
				"/api2/json: %s.", envEndpoint, err))
	}
	return diags
}

// resolveToken returns the token (empty with a token file) and sets c.TokenSource; a token
// from the environment is checked as the schema checks the block's, never quoted.
func resolveToken(m providerModel, env func(string) string, c *resolvedConfig) (string, diag.Diagnostics) {
	var diags diag.Diagnostics
	switch {
	case !m.APIToken.IsNull():
		c.TokenSource = "api_token"
		return m.APIToken.ValueString(), nil
	case !m.APITokenFile.IsNull():
		c.TokenSource = "api_token_file"
		return "", nil
	}
	token := env(envAPIToken)
	c.TokenSource = envAPIToken
	switch {
	case token == "":
		diags.AddAttributeError(path.Root("api_token"), "Missing Proxmox VE API token",
			"Set api_token or api_token_file in the provider block, or the "+envAPIToken+" environment variable, to a "+
				"token <user>@<realm>!<tokenid>=<secret>.")
	case !validators.ValidAPIToken(token):
		diags.AddAttributeError(path.Root("api_token"), "Invalid Proxmox VE API token",
			"The "+envAPIToken+" environment variable must be a token of the form <user>@<realm>!<tokenid>=<secret>, "+
				"without whitespace (the value is not shown: it is secret).")
	}
	return token, diags
}

// resolveInsecure sets c.Insecure from the block or, without one there, the environment; a
// CA in the block wins over the environment's insecure. c.CAFile and c.HasCAPEM are set.
func resolveInsecure(m providerModel, env func(string) string, c *resolvedConfig) diag.Diagnostics {
	var diags diag.Diagnostics
	if !m.Insecure.IsNull() {
		c.Insecure = m.Insecure.ValueBool()
		return nil
	}
	v := env(envInsecure)
	if v == "" {
		return nil
	}
	b, err := strconv.ParseBool(v)
	switch {
	case err != nil:
		diags.AddAttributeError(path.Root("insecure"), "Invalid "+envInsecure+" value",
			fmt.Sprintf("The %s environment variable must be true or false (or 1 or 0), got %q.", envInsecure, v))
	case b && (c.CAFile != "" || c.HasCAPEM):
		diags.AddAttributeWarning(path.Root("insecure"), envInsecure+" ignored",
			"The "+envInsecure+" environment variable asks to skip TLS verification, but ca_file or ca_pem is set in "+
				"the provider block: the certificate is verified against that CA.")
	default:
		c.Insecure = b
	}
	return diags
}
