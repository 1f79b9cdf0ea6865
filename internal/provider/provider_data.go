package provider

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// Logging subsystems (pveapi.LogSubsystem and proxmox.LogSubsystem). The provider creates
// them, with the secret masks applied, in every context it hands down (see withLogging);
// the client keeps an existing subsystem and adds its own masks.
const (
	subsystemPVEAPI  = "pveapi"
	subsystemProxmox = "proxmox"
)

// maskedFieldKeys are log field keys whose values are always replaced by "***".
var maskedFieldKeys = []string{
	"api_token", "token", "authorization", "Authorization",
	"user_data", "vendor_data", "cloud_init", "body",
}

// apiConnection is what the provider's messages read of the Proxmox API client that
// provider.go builds (the only file of the provider that imports pveapi).
type apiConnection interface {
	Address() string
	TokenID() (string, error)
}

// providerData is what Configure hands to resources and data sources.
type providerData struct {
	backend *proxmox.Backend
	client  apiConnection
	cfg     resolvedConfig

	// secrets for log masking: the configured token, or the token file re-read on use.
	token     string
	tokenFile string

	// reported holds the provider-level mistakes this provider instance (one Terraform
	// command's plan or apply) has reported, by their text: a mistake of the provider block
	// is one diagnostic, not one per resource (reportOnce).
	reported sync.Map
}

// reportOnce reports whether key is reported for the first time by this provider instance.
// A nil receiver reports every time.
func (d *providerData) reportOnce(key string) bool {
	if d == nil {
		return true
	}
	_, seen := d.reported.LoadOrStore(key, struct{}{})
	return !seen
}

// machineType is one catalogue entry of the provider's machine_types.
type machineType struct {
	Cores     int
	MemoryMiB int
	DiskGiB   int // 0: unset
}

// resolvedConfig is the provider configuration after environment fallbacks, defaults and
// validation.
type resolvedConfig struct {
	Endpoint          string
	Nodes             []string
	ISOStorage        string
	Storage           string
	Bridge            string
	VLANTag           int    // 0: unset
	Pool              string // the default pool; "": none
	VMIDMin, VMIDMax  int
	Templates         map[string]int
	MachineTypes      map[string]machineType
	VendorData        string
	InstallGuestAgent bool
	// UIDNamespace is mixed into the UID planned for each new VM (uidFor); "" keeps the
	// UIDs of the first releases.
	UIDNamespace string
	// DigestKey keys the cloud-init digests (cloudInitDigest); "" when none is configured.
	DigestKey string

	// Connection settings (what pveapi.Options gets).
	TokenSource    string // "api_token", "PROXMOX_VE_API_TOKEN" or "api_token_file"
	TokenFile      string
	CAFile         string
	HasCAPEM       bool
	Insecure       bool
	RequestTimeout time.Duration
	MaxInFlight    int
}

// NodeFor returns the node a VM goes to: node itself when it is one of the configured
// nodes, the only configured node when node is empty and there is one, and an error
// otherwise (the message lists the configured nodes).
func (c resolvedConfig) NodeFor(node string) (string, error) {
	if node == "" {
		if len(c.Nodes) == 1 {
			return c.Nodes[0], nil
		}
		return "", fmt.Errorf("the provider lists %d nodes (%s): set node to one of them", len(c.Nodes), strings.Join(c.Nodes, ", "))
	}
	if slices.Contains(c.Nodes, node) {
		return node, nil
	}
	return "", fmt.Errorf("node %q is not one of the provider's nodes (%s)", node, strings.Join(c.Nodes, ", "))
}

// Template returns the template VMID of a catalogue key, or an error listing the keys.
func (c resolvedConfig) Template(key string) (int, error) {
	if vmid, ok := c.Templates[key]; ok {
		return vmid, nil
	}
	return 0, fmt.Errorf("template %q is not in the provider's templates (%s)", key, strings.Join(sortedKeys(c.Templates), ", "))
}

// MachineType returns a machine_types entry, or an error listing the keys.
func (c resolvedConfig) MachineType(key string) (machineType, error) {
	if mt, ok := c.MachineTypes[key]; ok {
		return mt, nil
	}
	return machineType{}, fmt.Errorf("machine type %q is not in the provider's machine_types (%s)", key,
		strings.Join(sortedKeys(c.MachineTypes), ", "))
}

// backendConfig is what proxmox.New gets.
func (c resolvedConfig) backendConfig(tokenID func() (string, error)) proxmox.Config {
	return proxmox.Config{
		Endpoint:          c.Endpoint,
		Nodes:             slices.Clone(c.Nodes),
		ISOStorage:        c.ISOStorage,
		Storage:           c.Storage,
		Pool:              c.Pool,
		Bridge:            c.Bridge,
		VLANTag:           c.VLANTag,
		Templates:         c.Templates,
		VMIDMin:           c.VMIDMin,
		VMIDMax:           c.VMIDMax,
		VendorData:        c.VendorData,
		InstallGuestAgent: c.InstallGuestAgent,
		TokenID:           tokenID,
		Budgets:           proxmox.DefaultBudgets(),
		ListConcurrency:   c.MaxInFlight,
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// providerDataFrom is for the Configure method of resources and data sources: nil data
// (Terraform validating before the provider is configured) gives nil without a diagnostic;
// data of another type is an error diagnostic.
func providerDataFrom(data any, diags *diag.Diagnostics) *providerData {
	if data == nil {
		return nil
	}
	pd, ok := data.(*providerData)
	if !ok || pd == nil {
		diags.AddError("Unable to configure the proxy provider's object",
			fmt.Sprintf("Expected *providerData from the provider, got %T. This is a bug in the provider; please report it.", data))
		return nil
	}
	return pd
}

// withLogging returns ctx with the provider's log masks on the root logger and on the
// pveapi and proxmox subsystems, which it creates. Every CRUD and Read method calls it
// first (ctx = r.data.withLogging(ctx)): masks set during Configure do not carry over to
// other RPCs' contexts. A nil receiver masks the field keys only.
func (d *providerData) withLogging(ctx context.Context) context.Context {
	var secrets []string
	if d != nil {
		secrets = d.secrets()
	}
	return maskContext(ctx, secrets...)
}

// secrets returns the strings to mask: the token and its secret part. With a token file
// the file is re-read, so a rotated token is masked too; a missing file masks nothing more.
func (d *providerData) secrets() []string {
	token := d.token
	if d.tokenFile != "" {
		if b, err := os.ReadFile(d.tokenFile); err == nil {
			token = strings.TrimSpace(string(b))
		}
	}
	return tokenSecrets(token)
}

// tokenSecrets returns the token and the secret after its '=' (both non-empty).
func tokenSecrets(token string) []string {
	token = strings.TrimSpace(token)
	if token == "" {
		return nil
	}
	out := []string{token}
	if _, secret, ok := strings.Cut(token, "="); ok && secret != "" {
		out = append(out, secret)
	}
	return out
}

// maskContext applies the field-key masks and masks secrets in field values and messages,
// on the root logger and the provider's subsystems.
func maskContext(ctx context.Context, secrets ...string) context.Context {
	ctx = tflog.MaskFieldValuesWithFieldKeys(ctx, maskedFieldKeys...)
	if len(secrets) > 0 {
		ctx = tflog.MaskAllFieldValuesStrings(ctx, secrets...)
		ctx = tflog.MaskMessageStrings(ctx, secrets...)
	}
	for _, sub := range []string{subsystemPVEAPI, subsystemProxmox} {
		// Level: TF_LOG_PROVIDER_PROXY_PVEAPI / _PROXMOX, else the provider's level.
		ctx = tflog.NewSubsystem(ctx, sub, tflog.WithLevelFromEnv("TF_LOG_PROVIDER_PROXY", strings.ToUpper(sub)))
		ctx = tflog.SubsystemMaskFieldValuesWithFieldKeys(ctx, sub, maskedFieldKeys...)
		if len(secrets) > 0 {
			ctx = tflog.SubsystemMaskAllFieldValuesStrings(ctx, sub, secrets...)
			ctx = tflog.SubsystemMaskMessageStrings(ctx, sub, secrets...)
		}
	}
	return ctx
}
