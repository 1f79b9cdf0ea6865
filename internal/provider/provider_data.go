package provider

import (
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// providerData is what Configure hands to resources and data sources.
// NOTE(skeleton): fields may be added; none removed.
type providerData struct {
	backend *proxmox.Backend
	client  *pveapi.Client
	cfg     resolvedConfig
}

// machineType is one catalogue entry of the provider's machine_types.
type machineType struct {
	Cores     int
	MemoryMiB int
	DiskGiB   int // 0: unset
}

// resolvedConfig is the provider configuration after defaults and validation.
type resolvedConfig struct {
	Endpoint          string
	Nodes             []string
	ISOStorage        string
	Storage           string
	Bridge            string
	VLANTag           int
	VMIDMin, VMIDMax  int
	Templates         map[string]int
	MachineTypes      map[string]machineType
	VendorData        string
	InstallGuestAgent bool
}
