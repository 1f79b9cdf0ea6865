package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// The guest's addresses beyond ip_address: every IPv4 and IPv6 address the guest agent
// reports, and the interface ip_address comes from. Like ip_address they are read when the
// agent is asked (create, a start or restart, import), kept by a refresh (which never asks
// the agent) while the VM runs, null while it is stopped, and unknown in a plan that starts
// or restarts it.

const addressesRule = "Every address that is not loopback, link-local (169.254.0.0/16, fe80::/10) or unspecified, " +
	"in the order the guest agent reports them (interface by interface). Read when the agent is asked: at create, " +
	"after a start or restart, and at import; a refresh never waits for the agent and keeps the last known value while " +
	"the VM runs. Null while the VM is stopped or before the agent reported an address; unknown in a plan that starts " +
	"or restarts the VM."

func addressAttributes() map[string]schema.Attribute {
	return withPlainAttributes(map[string]schema.Attribute{
		"ipv4_addresses": schema.ListAttribute{
			ElementType:         types.StringType,
			Computed:            true,
			MarkdownDescription: "The guest's IPv4 addresses. " + addressesRule + " `ip_address` is the first of them.",
			PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
		},
		"ipv6_addresses": schema.ListAttribute{
			ElementType:         types.StringType,
			Computed:            true,
			MarkdownDescription: "The guest's IPv6 addresses (global and unique local). " + addressesRule,
			PlanModifiers:       []planmodifier.List{listplanmodifier.UseStateForUnknown()},
		},
		"network_interface": schema.StringAttribute{
			Computed: true,
			MarkdownDescription: "The guest's name of the interface `ip_address` comes from (e.g. `ens18`), or, without an IPv4, " +
				"the one carrying the first IPv6 address. Read and kept like the address lists.",
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	})
}

// stringList is a known list of strings (empty stays empty, not null).
func stringList(v []string) types.List {
	elems := make([]attr.Value, len(v))
	for i, s := range v {
		elems[i] = types.StringValue(s)
	}
	return types.ListValueMust(types.StringType, elems)
}

var nullStringList = types.ListNull(types.StringType)

// typedList gives a zero-value list (a model built field by field) its element type.
func typedList(l types.List) types.List {
	if l.ElementType(context.Background()) == nil {
		return nullStringList
	}
	return l
}

// applyAddresses copies the agent's addresses into m, following ip_address's rule
// (applyVM): set when the agent was asked and reported an address, null when the VM is
// stopped or unknown values remain, kept otherwise.
func applyAddresses(m *proxyVMModel, vm proxmox.VM) {
	m.IPv4Addresses, m.IPv6Addresses = typedList(m.IPv4Addresses), typedList(m.IPv6Addresses)
	a := vm.Addresses
	switch {
	case vm.StatusUnknown:
	case vm.IP != "" || a.Interface != "":
		m.IPv4Addresses, m.IPv6Addresses = stringList(a.IPv4), stringList(a.IPv6)
		m.NetworkInterface = stringOrNull(a.Interface)
		return
	case vm.State == proxmox.StateStopped:
		m.IPv4Addresses, m.IPv6Addresses, m.NetworkInterface = nullStringList, nullStringList, types.StringNull()
		return
	}
	if m.IPv4Addresses.IsUnknown() {
		m.IPv4Addresses = nullStringList
	}
	if m.IPv6Addresses.IsUnknown() {
		m.IPv6Addresses = nullStringList
	}
	if m.NetworkInterface.IsUnknown() {
		m.NetworkInterface = types.StringNull()
	}
}

// planAddressesUnknown marks the addresses unknown, in a plan that starts or restarts the VM.
func planAddressesUnknown(m *proxyVMModel) {
	m.IPv4Addresses, m.IPv6Addresses = types.ListUnknown(types.StringType), types.ListUnknown(types.StringType)
	m.NetworkInterface = types.StringUnknown()
}

// nullUnknownAddresses nulls the addresses still unknown (the partial state of a create).
func nullUnknownAddresses(m *proxyVMModel) {
	if m.IPv4Addresses.IsUnknown() || m.IPv4Addresses.ElementType(context.Background()) == nil {
		m.IPv4Addresses = nullStringList
	}
	if m.IPv6Addresses.IsUnknown() || m.IPv6Addresses.ElementType(context.Background()) == nil {
		m.IPv6Addresses = nullStringList
	}
	if m.NetworkInterface.IsUnknown() {
		m.NetworkInterface = types.StringNull()
	}
}
