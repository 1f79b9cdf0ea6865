package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmAddresses is the guest-addresses facet (vm_facet.go): net0's MAC address, the addresses
// the guest agent reports and whether that agent is on. All are read, never configured (no
// spec); its one change switches the agent back on after it was switched off outside
// Terraform (agentOn). Asked of the agent on create, start and import, kept by a refresh
// while the VM runs, unknown in a plan that starts it (decision: address-discovery); with
// static_ipv4, ip_address is that address (vm_network.go).
type vmAddresses struct {
	facetBase                     // no spec
	IPAddress        types.String `tfsdk:"ip_address"`
	IPv4Addresses    types.List   `tfsdk:"ipv4_addresses"`
	IPv6Addresses    types.List   `tfsdk:"ipv6_addresses"`
	NetworkInterface types.String `tfsdk:"network_interface"`
	MACAddress       types.String `tfsdk:"mac_address"`
	AgentEnabled     types.Bool   `tfsdk:"agent_enabled"`
}

const addressesFilter = "Loopback, link-local and unspecified addresses left out, in the order the guest agent reports them."

const addressesRule = "Null while the VM is stopped (see [Addresses](#addresses))."

const addressesRead = "Null when the VM is stopped or its agent does not answer."

// addressesAttrs are the guest-addresses facet's attributes.
func addressesAttrs() []facetAttr {
	return []facetAttr{{
		name: "ip_address",
		md:   "The first routable IPv4 address the guest agent reports.",
		change: "With `static_ipv4`, that address, known at plan time. " +
			"Unknown in a plan that starts or restarts the VM (see [Addresses](#addresses)).",
		read: addressesRead,
		resource: schema.StringAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}, {
		name:   "ipv4_addresses",
		md:     "The guest's IPv4 addresses. " + addressesFilter,
		change: addressesRule,
		read:   addressesRead,
		resource: schema.ListAttribute{
			ElementType:   types.StringType,
			Computed:      true,
			PlanModifiers: []planmodifier.List{listplanmodifier.UseStateForUnknown()},
		},
	}, {
		name:   "ipv6_addresses",
		md:     "The guest's IPv6 addresses (global and unique local). " + addressesFilter,
		change: addressesRule,
		read:   addressesRead,
		resource: schema.ListAttribute{
			ElementType:   types.StringType,
			Computed:      true,
			PlanModifiers: []planmodifier.List{listplanmodifier.UseStateForUnknown()},
		},
	}, {
		name:   "network_interface",
		md:     "The guest's interface `ip_address` comes from (e.g. `ens18`), or, without an IPv4 address, the one with the first IPv6 address.",
		change: "Read and kept like the address lists.",
		read:   addressesRead,
		resource: schema.StringAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}, {
		name: "mac_address",
		md:   "The MAC address of net0.",
		resource: schema.StringAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}, {
		name:   "agent_enabled",
		md:     "Whether the VM's QEMU guest agent option is on.",
		change: "Needed for the address: if switched off outside Terraform, it is switched back on in place.",
		resource: schema.BoolAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.Bool{agentOn(), boolplanmodifier.UseStateForUnknown()},
		},
	}}
}

// read takes the MAC address, the agent flag and the addresses of the VM as the backend
// read it. An address the backend reports is taken; without one (a refresh does not ask
// the agent) the prior one is kept while the VM runs, and cleared once it is stopped. A
// status the backend could not read (StatusUnknown) keeps the prior addresses.
func (a *vmAddresses) read(fc *facetCtx) {
	vm := fc.vm
	a.MACAddress = stringOrNull(vm.MAC)
	a.AgentEnabled = types.BoolValue(vm.AgentEnabled)
	a.IPv4Addresses, a.IPv6Addresses = typedList(a.IPv4Addresses), typedList(a.IPv6Addresses)
	switch {
	case vm.StatusUnknown:
	case vm.IP != "":
		a.IPAddress = types.StringValue(vm.IP)
	case vm.State == proxmox.StateStopped:
		a.IPAddress = types.StringNull()
	}
	switch {
	case vm.StatusUnknown:
	case vm.IP != "" || vm.Addresses.Interface != "":
		a.IPv4Addresses, a.IPv6Addresses = stringList(vm.Addresses.IPv4), stringList(vm.Addresses.IPv6)
		a.NetworkInterface = stringOrNull(vm.Addresses.Interface)
	case vm.State == proxmox.StateStopped:
		a.IPv4Addresses, a.IPv6Addresses, a.NetworkInterface = nullStringList, nullStringList, types.StringNull()
	}
	a.nullUnknown()
}

// nullUnknown nulls the values still unknown (the partial state of a create).
func (a *vmAddresses) nullUnknown() {
	for _, l := range []*types.List{&a.IPv4Addresses, &a.IPv6Addresses} {
		if l.IsUnknown() || l.ElementType(context.Background()) == nil {
			*l = nullStringList
		}
	}
	for _, s := range []*types.String{&a.IPAddress, &a.NetworkInterface, &a.MACAddress} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	if a.AgentEnabled.IsUnknown() {
		a.AgentEnabled = types.BoolNull()
	}
}

// changes switches the guest agent option back on when the plan does (agentOn): the
// agent RestartOption, written and applied at a restart like cpu_type.
func (a vmAddresses) changes(fc *facetCtx) {
	on := a.AgentEnabled
	if on.IsNull() || on.IsUnknown() || !on.ValueBool() || on.Equal(fc.prior.AgentEnabled) {
		return
	}
	if fc.changes.Options == nil {
		fc.changes.Options = map[string]string{}
	}
	fc.changes.Options["agent"], fc.changed = "true", true
}

// plan makes the addresses unknown when the update starts the VM, or may restart it for a
// new value of a restart option (proxmox.RestartOptions): the guest may come back with
// other addresses. planPower keeps them when nothing restarts after all.
func (a *vmAddresses) plan(fc *facetCtx) {
	plan, prior := fc.m, fc.prior
	if fc.cfg == nil || prior == nil {
		return
	}
	running := !prior.Status.IsNull() && !prior.Status.IsUnknown() && !needsStart(prior.Status)
	if needsStart(prior.Status) || (running && restartOptionChanges(*prior, *plan)) {
		plan.IPAddress = types.StringUnknown()
		a.planAddressesUnknown()
	}
}

// planAddressesUnknown marks the address lists and the interface unknown, in a plan that
// starts or restarts the VM (ip_address is the caller's: with static_ipv4 it is known).
func (a *vmAddresses) planAddressesUnknown() {
	a.IPv4Addresses, a.IPv6Addresses = types.ListUnknown(types.StringType), types.ListUnknown(types.StringType)
	a.NetworkInterface = types.StringUnknown()
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
