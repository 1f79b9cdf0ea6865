package provider

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmNetwork is the network facet (vm_facet.go): net0's bridge and VLAN tag, changed in place,
// and the guest's network-config (network_config, or static_ipv4 rendered for the clone's MAC
// by proxmox.NetworkConfig). cloud-init applies network-config at first boot only (fact:
// nocloud-network-config), so its change replaces the VM or swaps the seed (decision:
// seed-swap). The mark keeps static_ipv4 and a digest of either, for an import to compare.
type vmNetwork struct {
	vmNetworkReadable
	NetworkConfig types.String `tfsdk:"network_config"`
}

// vmNetworkReadable is the part of the network facet read back from a VM: net0's bridge and
// VLAN tag from its config, static_ipv4 from its mark.
type vmNetworkReadable struct {
	Bridge     types.String `tfsdk:"bridge"`
	VLANTag    types.Int64  `tfsdk:"vlan_tag"`
	StaticIPv4 types.Object `tfsdk:"static_ipv4"`
}

// staticIPv4AttrTypes are static_ipv4's attributes.
var staticIPv4AttrTypes = map[string]attr.Type{
	"address": types.StringType,
	"gateway": types.StringType,
	"dns":     types.ListType{ElemType: types.StringType},
	"search":  types.ListType{ElemType: types.StringType},
}

// nullStatic is a null static_ipv4 of the right type.
var nullStatic = types.ObjectNull(staticIPv4AttrTypes)

// staticIPv4Model is static_ipv4's value.
type staticIPv4Model struct {
	Address types.String `tfsdk:"address"`
	Gateway types.String `tfsdk:"gateway"`
	DNS     types.List   `tfsdk:"dns"`
	Search  types.List   `tfsdk:"search"`
}

// networkAttrs are the network facet's attributes.
func networkAttrs() []facetAttr {
	return []facetAttr{{
		name:   "bridge",
		md:     "The Linux bridge of the VM's first NIC (net0).",
		change: "Overrides the provider's `bridge`. A change rewrites net0 in place, keeping its MAC.",
		resource: schema.StringAttribute{
			Optional:      true,
			Computed:      true,
			Validators:    []validator.String{validators.BridgeID()},
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}, {
		name:   "vlan_tag",
		md:     "The VLAN tag of net0 (1 to 4094).",
		change: "Overrides the provider's `vlan_tag`. A change rewrites net0 in place.",
		read:   "Null when net0 is untagged.",
		resource: schema.Int64Attribute{
			Optional:      true,
			Computed:      true,
			Validators:    []validator.Int64{int64validator.Between(1, 4094)},
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
		},
	}, {
		name:         "network_config",
		md:           "A NoCloud `network-config` (YAML, version 1 or 2) for the seed ISO, in place of DHCP on the first NIC.",
		change:       "Set this or `static_ipv4`. A change replaces the VM (see [Cloud-init changes](#cloud-init-changes)).",
		resourceOnly: true, // the seed cannot be read back, only the digest in the mark
		resource: schema.StringAttribute{
			Optional:   true,
			Validators: []validator.String{networkConfigValidator{}},
		},
	}, {
		name: "static_ipv4",
		md:   "A static IPv4 address on net0, the common case of `network_config`.",
		change: "Set this or `network_config`; `ip_address` is then known at plan. " +
			"A change replaces the VM (see [Static addresses](#static-addresses)).",
		read: "The one the VM was made with, from its mark; null when it was made without one (DHCP, or a raw " +
			"`network_config`, which cannot be read back).",
		nestedRead: map[string]string{
			"dns":    "Null when the VM was made without name servers.",
			"search": "Null when the VM was made without search domains.",
		},
		resource: schema.SingleNestedAttribute{
			Optional: true,
			Validators: []validator.Object{
				objectvalidator.ConflictsWith(path.MatchRoot("network_config")),
				staticIPv4Validator{},
			},
			Attributes: map[string]schema.Attribute{
				"address": schema.StringAttribute{
					Required: true,
					MarkdownDescription: "The address with its prefix length, e.g. `10.0.0.5/24`: an IPv4 prefix of /1 to /32 " +
						"that is not the network or broadcast address of its prefix (up to /30).",
				},
				"gateway": schema.StringAttribute{
					Optional: true,
					MarkdownDescription: "The default gateway, e.g. `10.0.0.1`: an IPv4 address inside `address`'s prefix. " +
						"Unset (null): no default route.",
				},
				"dns": schema.ListAttribute{
					ElementType:         types.StringType,
					Optional:            true,
					MarkdownDescription: "Name servers, IPv4 or IPv6 addresses, in order.",
				},
				"search": schema.ListAttribute{
					ElementType:         types.StringType,
					Optional:            true,
					MarkdownDescription: "DNS search domains, in order.",
				},
			},
		},
	}}
}

// read takes net0's bridge and VLAN tag of the VM as the backend read it, and types a zero
// static_ipv4 (a model built field by field). The network configuration is not read back:
// an import reads static_ipv4 from the mark (importedModel). In a model (fc.m), the
// static address is ip_address when the agent reports it (staticIPAddress).
func (n *vmNetwork) read(fc *facetCtx) {
	n.Bridge = stringOrNull(fc.vm.Bridge)
	n.VLANTag = intOrNull(fc.vm.VLANTag)
	n.typeStatic()
	if fc.m != nil {
		n.staticIPAddress(&fc.m.vmAddresses, fc.vm)
	}
}

// typeStatic gives a zero static_ipv4 its type.
func (n *vmNetwork) typeStatic() {
	if len(n.StaticIPv4.AttributeTypes(context.Background())) == 0 {
		n.StaticIPv4 = nullStatic
	}
}

// staticIPAddress makes ip_address the static address when the guest agent reported it
// among the guest's addresses (the first address the agent reports may be another
// interface's).
func (n vmNetwork) staticIPAddress(a *vmAddresses, vm proxmox.VM) {
	c, ok := networkOf(context.Background(), n)
	if !ok || c == nil || c.Static == nil {
		return
	}
	if want := c.WantIPv4(); slices.Contains(vm.Addresses.IPv4, want) {
		a.IPAddress = types.StringValue(want)
	}
}

// nullUnknown nulls the values still unknown (the partial state of a create), and types a
// zero static_ipv4.
func (n *vmNetwork) nullUnknown() {
	for _, s := range []*types.String{&n.Bridge, &n.NetworkConfig} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	if n.VLANTag.IsUnknown() {
		n.VLANTag = types.Int64Null()
	}
	if n.StaticIPv4.IsUnknown() {
		n.StaticIPv4 = nullStatic
	}
	n.typeStatic()
}

// spec puts the planned bridge, VLAN tag and network configuration (with its digest) into
// a create.
func (n vmNetwork) spec(fc *facetCtx) {
	s := fc.spec
	if v, ok := knownString(n.Bridge); ok {
		s.Bridge = v
	}
	if v, ok := knownInt(n.VLANTag); ok {
		s.VLANTag = v
	}
	if c, ok := networkOf(context.Background(), n); ok && c != nil {
		s.Network, s.NetworkDigest = c, proxmox.NetworkDigest(c)
	}
}

// changes puts the bridge and VLAN tag that change from the prior ones into an update (a
// new network configuration is no change: see planNetwork).
func (n vmNetwork) changes(fc *facetCtx) {
	prior, c := fc.prior.vmNetwork, fc.changes
	changed := false
	if c.VLANTag = intChange(prior.VLANTag, n.VLANTag); c.VLANTag != nil {
		changed = true
	}
	if v, ok := knownString(n.Bridge); ok && !n.Bridge.Equal(prior.Bridge) {
		c.Bridge = &v
		changed = true
	}
	fc.changed = fc.changed || changed
}

// plan gives bridge and vlan_tag their defaults (planNetworkDefaults), plans ip_address for
// a static address and whether the network configuration replaces the VM (planNetwork),
// and warns of a network_config that gives no IPv4 address (warnNetworkConfigNoIPv4).
func (n *vmNetwork) plan(fc *facetCtx) {
	if fc.cfg != nil {
		planNetworkDefaults(fc.cfg, fc.config, fc.m, fc.prior)
	}
	imp, diags := readNetworkImport(fc.ctx, fc.private)
	fc.diags.Append(diags...)
	fc.seedReplace = append(fc.seedReplace, planNetwork(fc.ctx, fc.config, fc.m, fc.prior, imp)...)
	fc.diags.Append(warnNetworkConfigNoIPv4(fc.config, fc.prior)...)
}

// planNetworkDefaults gives bridge and vlan_tag the resource's value, else the provider's,
// else the VM's as cloned (known after create).
func planNetworkDefaults(cfg *resolvedConfig, config proxyVMModel, plan, prior *proxyVMModel) {
	creating := prior == nil
	if config.Bridge.IsNull() {
		switch {
		case cfg.Bridge != "":
			plan.Bridge = types.StringValue(cfg.Bridge)
		case creating:
			plan.Bridge = types.StringUnknown()
		default:
			plan.Bridge = prior.Bridge
		}
	}
	if config.VLANTag.IsNull() {
		switch {
		case cfg.VLANTag > 0:
			plan.VLANTag = types.Int64Value(int64(cfg.VLANTag))
		case creating:
			plan.VLANTag = types.Int64Unknown()
		default:
			plan.VLANTag = prior.VLANTag
		}
	}
}

// networkConfigValidator refuses a network_config cloud-init would not read
// (proxmox.ValidateNetworkConfig).
type networkConfigValidator struct{}

func (networkConfigValidator) Description(context.Context) string {
	return "must be a non-empty YAML mapping with version 1 or 2 (optionally under network:)"
}

func (v networkConfigValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (networkConfigValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	s, ok := knownString(req.ConfigValue)
	if !ok {
		return
	}
	if err := proxmox.ValidateNetworkConfig([]byte(s)); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, summaryInvalidConfig, "network_config: "+err.Error()+".")
	}
}

// staticIPv4Validator checks static_ipv4's values and how they fit together.
type staticIPv4Validator struct{}

func (staticIPv4Validator) Description(context.Context) string {
	return "address must be an IPv4 CIDR host address, gateway inside its prefix, dns IP addresses"
}

func (v staticIPv4Validator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (staticIPv4Validator) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	var m staticIPv4Model
	resp.Diagnostics.Append(req.ConfigValue.As(ctx, &m, basetypes.ObjectAsOptions{})...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, diags, complete := staticFrom(m, req.Path)
	resp.Diagnostics.Append(diags...)
	if complete {
		if n := len(proxmox.FormatStaticIPv4(s)); n > proxmox.MaxStaticIPv4MarkBytes {
			resp.Diagnostics.AddAttributeError(req.Path, summaryInvalidConfig, fmt.Sprintf(
				"static_ipv4 takes %d characters in the VM's description mark, more than the %d it may: "+
					"give fewer name servers or search domains (or write the configuration as network_config).",
				n, proxmox.MaxStaticIPv4MarkBytes))
		}
	}
}

// staticFrom parses a static_ipv4 value into the backend's form, with a diagnostic on the
// attribute (under at) for each value that is wrong. complete is false while a value is
// unknown (nothing is returned then, and only the known values are checked).
func staticFrom(m staticIPv4Model, at path.Path) (s proxmox.StaticIPv4, diags diag.Diagnostics, complete bool) {
	complete = true
	// The diagnostics go on static_ipv4 itself, naming the field in the detail: Terraform
	// points at the attribute in the configuration, but not into its object value.
	bad := func(attr string, detail string) {
		diags.AddAttributeError(at, summaryInvalidConfig, "static_ipv4."+attr+" "+detail)
	}
	if a, ok := knownString(m.Address); ok {
		p, err := netip.ParsePrefix(a)
		if err != nil || !p.Addr().Is4() {
			bad("address", "is "+strconv.Quote(a)+", not an IPv4 address with its prefix length: write it as 10.0.0.5/24.")
			return s, diags, false
		}
		s.Address = p
	} else {
		complete = false
	}
	if g, ok := knownString(m.Gateway); ok {
		a, err := netip.ParseAddr(g)
		if err != nil || !a.Is4() {
			bad("gateway", "is "+strconv.Quote(g)+", not an IPv4 address: write it as 10.0.0.1, without a prefix length.")
			return s, diags, false
		}
		s.Gateway = a
	} else if m.Gateway.IsUnknown() {
		complete = false
	}
	for i, e := range listElems(m.DNS, &complete) {
		a, err := netip.ParseAddr(e)
		switch {
		case err != nil || a.Zone() != "":
			diags.AddAttributeError(at, summaryInvalidConfig, "static_ipv4.dns["+strconv.Itoa(i)+"] is "+strconv.Quote(e)+
				", not an IP address: name servers are given by address (10.0.0.53 or fd00::53).")
			continue
		case a.String() != e:
			// The mark keeps the canonical form, which an import reads back: another
			// spelling of the same address would show as a change after every import.
			diags.AddAttributeError(at, summaryInvalidConfig,
				"static_ipv4.dns["+strconv.Itoa(i)+"] is "+strconv.Quote(e)+": write it as "+strconv.Quote(a.String())+
					", its canonical form (lowercase, zeros compressed), which is what the VM's mark keeps and an import reads back.")
			continue
		}
		s.DNS = append(s.DNS, a)
	}
	s.Search = listElems(m.Search, &complete)
	if diags.HasError() || !complete {
		return s, diags, false
	}
	if field, err := s.Check(); err != nil {
		bad(field, err.Error()+".")
		return s, diags, false
	}
	return s, diags, true
}

// listElems is a list's known strings; an unknown list or element clears complete.
func listElems(l types.List, complete *bool) []string {
	if l.IsUnknown() {
		*complete = false
		return nil
	}
	var out []string
	for _, e := range l.Elements() {
		v, ok := e.(types.String)
		if !ok || v.IsUnknown() {
			*complete = false
			continue
		}
		if !v.IsNull() {
			out = append(out, v.ValueString())
		}
	}
	return out
}

// networkOf is the network configuration the facet's values say, and whether it is known
// (an unknown value is not). nil, true: none.
func networkOf(ctx context.Context, m vmNetwork) (*proxmox.NetworkConfig, bool) {
	switch {
	case m.NetworkConfig.IsUnknown() || m.StaticIPv4.IsUnknown():
		return nil, false
	case !m.NetworkConfig.IsNull():
		return &proxmox.NetworkConfig{Raw: []byte(m.NetworkConfig.ValueString())}, true
	case m.StaticIPv4.IsNull() || len(m.StaticIPv4.AttributeTypes(ctx)) == 0:
		return nil, true
	}
	var sm staticIPv4Model
	if d := m.StaticIPv4.As(ctx, &sm, basetypes.ObjectAsOptions{}); d.HasError() {
		return nil, false
	}
	s, _, complete := staticFrom(sm, path.Root("static_ipv4"))
	if !complete {
		return nil, false
	}
	return &proxmox.NetworkConfig{Static: &s}, true
}

// networkImport is what an import left for the plan: whether it could not read the
// network configuration (always: the seed cannot be read through the API) and the digest
// in the VM's mark ("" when the mark has none).
type networkImport struct {
	unread bool
	digest string
}

// networkDigestNone stands for "made without a network configuration": a VM this release
// made writes the digest line whenever it has one, so a VM of its making without the line
// has none, and an import that configures one plans a replacement (no digest matches).
const networkDigestNone = "none"

// importedNetworkDigest is the network digest an import keeps for the plan: the mark's,
// networkDigestNone for a VM this provider made without a network configuration, or ""
// when nothing tells (the operator's VMs).
func importedNetworkDigest(m proxmox.MarkExtra) string {
	if m.NetworkDigest == "" && m.Static == nil && m.CreatedBy == proxmox.CreatedByProvider {
		return networkDigestNone
	}
	return m.NetworkDigest
}

// writeNetworkDigest keeps the mark's network digest for the plan after an import.
func writeNetworkDigest(ctx context.Context, p privateSetter, digest string) diag.Diagnostics {
	if digest == "" {
		return privateKeyNetworkDigest.clear(ctx, p)
	}
	return privateKeyNetworkDigest.write(ctx, p, digest)
}

func readNetworkImport(ctx context.Context, p privateGetter) (networkImport, diag.Diagnostics) {
	unread, diags := isUnread(ctx, p, unreadNetwork)
	ni := networkImport{unread: unread}
	if !unread || p == nil {
		return ni, diags
	}
	digest, _, d := privateKeyNetworkDigest.read(ctx, p)
	diags.Append(d...)
	ni.digest = digest
	return ni, diags
}

// planNetwork plans ip_address for a static address and decides whether the network
// configuration replaces the VM. prior is nil for a create.
func planNetwork(ctx context.Context, config proxyVMModel, plan *proxyVMModel, prior *proxyVMModel, imp networkImport) []path.Path {
	cur, known := networkOf(ctx, config.vmNetwork)
	// The static address is ip_address, known now, whenever the VM is planned to run: the
	// create's wait (or, after a start, the check of what the agent reports) confirms it.
	if !startedFalse(plan.Started) && !plan.Started.IsUnknown() {
		if a, ok := staticAddressOf(ctx, config); ok {
			plan.IPAddress = types.StringValue(a)
		}
	}
	if prior == nil {
		return nil
	}
	// Terraform replaces only for a path whose value changes: the attribute set now, or, when
	// neither is set any more, the one that was.
	attrPath := path.Root("network_config")
	if !config.StaticIPv4.IsNull() ||
		(config.NetworkConfig.IsNull() && !prior.StaticIPv4.IsNull() && len(prior.StaticIPv4.AttributeTypes(ctx)) != 0) {
		attrPath = path.Root("static_ipv4")
	}
	if !known {
		return []path.Path{attrPath}
	}
	was, _ := networkOf(ctx, prior.vmNetwork)
	recorded := !prior.NetworkConfig.IsNull() || (!prior.StaticIPv4.IsNull() && len(prior.StaticIPv4.AttributeTypes(ctx)) != 0)
	newDigest := proxmox.NetworkDigest(cur)
	switch {
	case recorded || !imp.unread:
		// Made by Terraform (no network configuration counts as one), or recorded since.
		if proxmox.NetworkDigest(was) == newDigest {
			return nil
		}
	case cur == nil:
		// Imported, and none configured: the VM's network is left as it is (not managed
		// until a value is set), as cloud_init is.
		return nil
	case imp.digest != "":
		// Imported with a digest in the mark: the same network is recorded, another replaces.
		if imp.digest == newDigest {
			return nil
		}
	default:
		// Imported without a digest: nothing tells what the VM was made with, except, for
		// a static address, the addresses the agent reported at the import.
		if cur.Static == nil {
			return nil
		}
		if addrs, ok := knownStrings(prior.IPv4Addresses); !ok || len(addrs) == 0 || slices.Contains(addrs, cur.WantIPv4()) {
			return nil
		}
	}
	return []path.Path{attrPath}
}

// staticAddressOf is static_ipv4's address without its prefix length when the address is
// known and valid, whatever the other fields (a name server list known only at apply
// leaves the address known).
func staticAddressOf(ctx context.Context, m proxyVMModel) (string, bool) {
	if m.StaticIPv4.IsNull() || m.StaticIPv4.IsUnknown() || len(m.StaticIPv4.AttributeTypes(ctx)) == 0 {
		return "", false
	}
	a, ok := m.StaticIPv4.Attributes()["address"].(types.String)
	if !ok {
		return "", false
	}
	v, known := knownString(a)
	if !known {
		return "", false
	}
	p, err := netip.ParsePrefix(v)
	if err != nil || !p.Addr().Is4() {
		return "", false
	}
	return p.Addr().String(), true
}

// knownStrings is a known list of strings.
func knownStrings(l types.List) ([]string, bool) {
	if l.IsNull() || l.IsUnknown() {
		return nil, false
	}
	complete := true
	out := listElems(l, &complete)
	return out, complete
}

// networkBytes is the size of a create's raw network-config, for the logs (the static
// form's rendering is as long as the address data); 0 without one.
func networkBytes(s proxmox.Spec) int {
	return s.Network.Size()
}

// networkMismatch says when the agent reported another address than the planned static one.
func networkMismatch(plan, got proxyVMModel) []string {
	w, ok := knownString(plan.IPAddress)
	h, hok := knownString(got.IPAddress)
	if !ok || !hok || w == h || plan.StaticIPv4.IsNull() {
		return nil
	}
	return []string{"the guest agent reports " + h + ", not the static address " + w + " static_ipv4 gives the VM: " +
		"its network-config was not applied (check the guest's /var/log/cloud-init.log)"}
}

// staticValue is static_ipv4 as the mark (proxmox.MarkKeyStaticIPv4) gives it back to an
// import: empty lists and an unset gateway are null, as in a configuration that leaves
// them out.
func staticValue(s *proxmox.StaticIPv4) types.Object {
	if s == nil {
		return nullStatic
	}
	list := func(vs []string) types.List {
		if len(vs) == 0 {
			return types.ListNull(types.StringType)
		}
		elems := make([]attr.Value, len(vs))
		for i, v := range vs {
			elems[i] = types.StringValue(v)
		}
		return types.ListValueMust(types.StringType, elems)
	}
	gateway := types.StringNull()
	if s.Gateway.IsValid() {
		gateway = types.StringValue(s.Gateway.String())
	}
	dns := make([]string, len(s.DNS))
	for i, a := range s.DNS {
		dns[i] = a.String()
	}
	return types.ObjectValueMust(staticIPv4AttrTypes, map[string]attr.Value{
		"address": types.StringValue(s.Address.String()),
		"gateway": gateway,
		"dns":     list(dns),
		"search":  list(s.Search),
	})
}
