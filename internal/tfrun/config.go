package tfrun

import (
	"fmt"
	"sort"
	"strings"
)

// ProviderConfig renders a `provider "proxy"` block. Zero fields are left out (the
// provider's defaults apply).
type ProviderConfig struct {
	Endpoint     string
	APIToken     string // sensitive; prefer APITokenFile in logs-sensitive tests
	APITokenFile string
	CAFile       string
	CAPEM        string
	Insecure     bool
	Nodes        []string
	ISOStorage   string
	Storage      string
	Bridge       string
	VLANTag      int
	VMIDMin      int
	VMIDMax      int
	// Templates maps catalogue keys to template VMIDs.
	Templates map[string]int
	// MachineTypes maps catalogue keys to sizes; empty: {small = 1 core, 512 MiB}.
	MachineTypes map[string]MachineType
	// RequestTimeout is a Go duration ("5s"); empty: the provider's default.
	RequestTimeout      string
	MaxRequestsInFlight int
	VendorData          string
	// InstallGuestAgent is rendered when not nil.
	InstallGuestAgent *bool
	// Alias renders `alias = "..."`.
	Alias string
	// Extra is pasted inside the block verbatim.
	Extra string
}

// MachineType is one machine_types entry.
type MachineType struct {
	Cores, MemoryMiB, DiskGiB int
}

// HCL renders the block.
func (c ProviderConfig) HCL() string {
	var b strings.Builder
	b.WriteString("provider \"proxy\" {\n")
	str := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "  %s = %s\n", k, Quote(v))
		}
	}
	str("alias", c.Alias)
	str("endpoint", c.Endpoint)
	str("api_token", c.APIToken)
	str("api_token_file", c.APITokenFile)
	str("ca_file", c.CAFile)
	str("ca_pem", c.CAPEM)
	if c.Insecure {
		b.WriteString("  insecure = true\n")
	}
	if len(c.Nodes) > 0 {
		fmt.Fprintf(&b, "  nodes = %s\n", List(c.Nodes))
	}
	str("iso_storage", c.ISOStorage)
	str("storage", c.Storage)
	str("bridge", c.Bridge)
	if c.VLANTag != 0 {
		fmt.Fprintf(&b, "  vlan_tag = %d\n", c.VLANTag)
	}
	if c.VMIDMin != 0 || c.VMIDMax != 0 {
		fmt.Fprintf(&b, "  vmid_range = { min = %d, max = %d }\n", c.VMIDMin, c.VMIDMax)
	}
	if len(c.Templates) > 0 {
		b.WriteString("  templates = {\n")
		for _, k := range sortedKeys(c.Templates) {
			fmt.Fprintf(&b, "    %s = %d\n", Quote(k), c.Templates[k])
		}
		b.WriteString("  }\n")
	}
	mts := c.MachineTypes
	if len(mts) == 0 {
		mts = map[string]MachineType{"small": {Cores: 1, MemoryMiB: 512}}
	}
	b.WriteString("  machine_types = {\n")
	for _, k := range sortedKeys(mts) {
		m := mts[k]
		fmt.Fprintf(&b, "    %s = { cores = %d, memory_mib = %d", Quote(k), m.Cores, m.MemoryMiB)
		if m.DiskGiB != 0 {
			fmt.Fprintf(&b, ", disk_gib = %d", m.DiskGiB)
		}
		b.WriteString(" }\n")
	}
	b.WriteString("  }\n")
	str("request_timeout", c.RequestTimeout)
	if c.MaxRequestsInFlight != 0 {
		fmt.Fprintf(&b, "  max_requests_in_flight = %d\n", c.MaxRequestsInFlight)
	}
	str("vendor_data", c.VendorData)
	if c.InstallGuestAgent != nil {
		fmt.Fprintf(&b, "  install_guest_agent = %t\n", *c.InstallGuestAgent)
	}
	if c.Extra != "" {
		b.WriteString(c.Extra)
		if !strings.HasSuffix(c.Extra, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// VM renders a `resource "proxy_vm"` block. Zero fields are left out.
type VM struct {
	Resource    string // the resource name in the configuration (default: Name with '-' as '_')
	Name        string
	Node        string
	Image       string
	MachineType string
	Cores       int
	MemoryMiB   int
	DiskGiB     int
	CloudInit   string
	Bridge      string
	VLANTag     int
	// WaitForIP is rendered when not nil.
	WaitForIP *bool
	// Timeouts renders a timeouts block, e.g. {"create": "30s"}.
	Timeouts map[string]string
	// Count renders `count = N` (then Name should hold ${count.index}).
	Count int
	// Extra is pasted inside the block verbatim.
	Extra string
}

// Addr is the resource address, proxy_vm.<Resource>.
func (v VM) Addr() string { return "proxy_vm." + v.resourceName() }

func (v VM) resourceName() string {
	if v.Resource != "" {
		return v.Resource
	}
	return strings.NewReplacer("-", "_", "$", "", "{", "", "}", "", ".", "_").Replace(v.Name)
}

// HCL renders the block.
func (v VM) HCL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "resource \"proxy_vm\" %s {\n", Quote(v.resourceName()))
	if v.Count > 0 {
		fmt.Fprintf(&b, "  count = %d\n", v.Count)
	}
	str := func(k, val string) {
		if val != "" {
			fmt.Fprintf(&b, "  %s = %s\n", k, Quote(val))
		}
	}
	num := func(k string, val int) {
		if val != 0 {
			fmt.Fprintf(&b, "  %s = %d\n", k, val)
		}
	}
	// Name may carry an interpolation such as ${count.index}: quote without escaping it.
	if strings.Contains(v.Name, "${") {
		fmt.Fprintf(&b, "  name = \"%s\"\n", v.Name)
	} else {
		str("name", v.Name)
	}
	str("node", v.Node)
	str("image", v.Image)
	str("machine_type", v.MachineType)
	num("cores", v.Cores)
	num("memory_mib", v.MemoryMiB)
	num("disk_gib", v.DiskGiB)
	str("cloud_init", v.CloudInit)
	str("bridge", v.Bridge)
	num("vlan_tag", v.VLANTag)
	if v.WaitForIP != nil {
		fmt.Fprintf(&b, "  wait_for_ip = %t\n", *v.WaitForIP)
	}
	if len(v.Timeouts) > 0 {
		b.WriteString("  timeouts {\n")
		for _, k := range sortedKeys(v.Timeouts) {
			fmt.Fprintf(&b, "    %s = %s\n", k, Quote(v.Timeouts[k]))
		}
		b.WriteString("  }\n")
	}
	if v.Extra != "" {
		b.WriteString(v.Extra)
		if !strings.HasSuffix(v.Extra, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// Quote renders s as an HCL string literal: JSON-style escapes, and the template
// sequences ${ and %{ escaped so the value is taken literally.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		case (r == '$' || r == '%') && i+1 < len(s) && s[i+1] == '{':
			b.WriteRune(r)
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// List renders a list of strings.
func List(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Bool returns a pointer to b, for the optional booleans above.
func Bool(b bool) *bool { return &b }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
