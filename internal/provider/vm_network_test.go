package provider

import (
	"context"
	"maps"
	"net/netip"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// staticObject is a static_ipv4 value with the address only.
func staticObject(address string) types.Object {
	return types.ObjectValueMust(staticIPv4AttrTypes, map[string]attr.Value{
		"address": types.StringValue(address), "gateway": types.StringNull(),
		"dns": types.ListNull(types.StringType), "search": types.ListNull(types.StringType),
	})
}

// TestVMNetwork_read: bridge and vlan_tag are net0's as the backend read it (null when it
// names none), a zero static_ipv4 gets its type, a known one is kept (it is not read back
// from the config), and network_config is left as it is.
func TestVMNetwork_read(t *testing.T) {
	var n vmNetwork
	n.read(onVM(proxmox.VM{Bridge: "vmbr1", VLANTag: 42}))
	if n.Bridge.ValueString() != "vmbr1" || n.VLANTag.ValueInt64() != 42 {
		t.Errorf("read bridge %v vlan_tag %v, want vmbr1 and 42", n.Bridge, n.VLANTag)
	}
	if !n.StaticIPv4.IsNull() || len(n.StaticIPv4.AttributeTypes(context.Background())) != len(staticIPv4AttrTypes) {
		t.Errorf("a zero static_ipv4 read as %v, want a typed null", n.StaticIPv4)
	}
	n = vmNetwork{NetworkConfig: types.StringValue("version: 2\n")}
	n.StaticIPv4 = staticObject("10.0.0.5/24")
	n.read(onVM(proxmox.VM{}))
	if !n.Bridge.IsNull() || !n.VLANTag.IsNull() {
		t.Errorf("a NIC without bridge or tag read as %v, %v, want null", n.Bridge, n.VLANTag)
	}
	if !n.StaticIPv4.Equal(staticObject("10.0.0.5/24")) || n.NetworkConfig.ValueString() != "version: 2\n" {
		t.Errorf("read changed what it cannot read: static_ipv4 %v network_config %v", n.StaticIPv4, n.NetworkConfig)
	}
}

// TestVMNetwork_staticIPAddress: the static address is ip_address when the agent reports it
// among others; not otherwise, nor without a static address.
func TestVMNetwork_staticIPAddress(t *testing.T) {
	n := vmNetwork{NetworkConfig: types.StringNull()}
	n.StaticIPv4 = staticObject("10.0.0.5/24")
	vm := proxmox.VM{Addresses: proxmox.Addresses{IPv4: []string{"172.17.0.1", "10.0.0.5"}}}
	a := vmAddresses{IPAddress: types.StringValue("172.17.0.1")}
	n.staticIPAddress(&a, vm)
	if a.IPAddress.ValueString() != "10.0.0.5" {
		t.Errorf("ip_address %v, want the static 10.0.0.5", a.IPAddress)
	}
	a = vmAddresses{IPAddress: types.StringValue("172.17.0.1")}
	n.staticIPAddress(&a, proxmox.VM{Addresses: proxmox.Addresses{IPv4: []string{"172.17.0.1"}}})
	if a.IPAddress.ValueString() != "172.17.0.1" {
		t.Errorf("static address not reported, yet ip_address %v", a.IPAddress)
	}
	dhcp := vmNetwork{NetworkConfig: types.StringNull()}
	dhcp.StaticIPv4 = nullStatic
	a = vmAddresses{IPAddress: types.StringValue("172.17.0.1")}
	dhcp.staticIPAddress(&a, vm)
	if a.IPAddress.ValueString() != "172.17.0.1" {
		t.Errorf("without static_ipv4, ip_address %v", a.IPAddress)
	}
}

// TestVMNetwork_nullUnknown: every value still unknown is null in a create's partial state,
// static_ipv4 typed; known values stay.
func TestVMNetwork_nullUnknown(t *testing.T) {
	n := vmNetwork{NetworkConfig: types.StringUnknown()}
	n.Bridge, n.VLANTag, n.StaticIPv4 = types.StringUnknown(), types.Int64Unknown(), types.ObjectUnknown(staticIPv4AttrTypes)
	n.nullUnknown()
	if !n.Bridge.IsNull() || !n.VLANTag.IsNull() || !n.NetworkConfig.IsNull() || !n.StaticIPv4.Equal(nullStatic) {
		t.Errorf("partial state: bridge %v vlan_tag %v network_config %v static_ipv4 %v", n.Bridge, n.VLANTag, n.NetworkConfig, n.StaticIPv4)
	}
	var zero vmNetwork
	zero.nullUnknown()
	if !zero.StaticIPv4.IsNull() || len(zero.StaticIPv4.AttributeTypes(context.Background())) != len(staticIPv4AttrTypes) {
		t.Errorf("a zero static_ipv4 stays untyped: %v", zero.StaticIPv4)
	}
	known := vmNetwork{NetworkConfig: types.StringValue("version: 2\n")}
	known.Bridge, known.VLANTag, known.StaticIPv4 = types.StringValue("vmbr0"), types.Int64Value(7), nullStatic
	want := known
	known.nullUnknown()
	if !known.Bridge.Equal(want.Bridge) || !known.VLANTag.Equal(want.VLANTag) || !known.NetworkConfig.Equal(want.NetworkConfig) ||
		!known.StaticIPv4.Equal(want.StaticIPv4) {
		t.Errorf("known values changed: %+v, want %+v", known, want)
	}
}

// TestVMNetwork_spec: a create carries the known bridge and tag, and the network
// configuration with its digest (raw or static); unknown or null values carry nothing.
func TestVMNetwork_spec(t *testing.T) {
	raw := "version: 2\nethernets: {}\n"
	n := vmNetwork{NetworkConfig: types.StringValue(raw)}
	n.Bridge, n.VLANTag, n.StaticIPv4 = types.StringValue("vmbr1"), types.Int64Value(9), nullStatic
	var s proxmox.Spec
	n.spec(intoSpec(&s))
	if s.Bridge != "vmbr1" || s.VLANTag != 9 || s.Network == nil || string(s.Network.Raw) != raw ||
		s.NetworkDigest != proxmox.NetworkDigest(&proxmox.NetworkConfig{Raw: []byte(raw)}) || s.NetworkDigest == "" {
		t.Errorf("raw spec: bridge %q vlan %d network %+v digest %q", s.Bridge, s.VLANTag, s.Network, s.NetworkDigest)
	}

	st := vmNetwork{NetworkConfig: types.StringNull()}
	st.Bridge, st.VLANTag, st.StaticIPv4 = types.StringUnknown(), types.Int64Null(), staticObject("10.0.0.5/24")
	s = proxmox.Spec{}
	st.spec(intoSpec(&s))
	want := &proxmox.NetworkConfig{Static: &proxmox.StaticIPv4{Address: netip.MustParsePrefix("10.0.0.5/24")}}
	if s.Bridge != "" || s.VLANTag != 0 || s.Network == nil || s.Network.Static == nil ||
		s.Network.Static.Address != want.Static.Address || s.NetworkDigest != proxmox.NetworkDigest(want) {
		t.Errorf("static spec: bridge %q vlan %d network %+v digest %q", s.Bridge, s.VLANTag, s.Network, s.NetworkDigest)
	}

	none := vmNetwork{NetworkConfig: types.StringNull()}
	none.StaticIPv4 = nullStatic
	s = proxmox.Spec{}
	none.spec(intoSpec(&s))
	if s.Network != nil || s.NetworkDigest != "" {
		t.Errorf("no network configuration, yet %+v %q", s.Network, s.NetworkDigest)
	}
	unknown := vmNetwork{NetworkConfig: types.StringUnknown()}
	unknown.StaticIPv4 = nullStatic
	s = proxmox.Spec{}
	unknown.spec(intoSpec(&s))
	if s.Network != nil || s.NetworkDigest != "" {
		t.Errorf("unknown network_config, yet %+v %q", s.Network, s.NetworkDigest)
	}
}

// TestVMNetwork_changes: an update carries bridge and tag only when they change and are
// known; a new network configuration is no in-place change (it replaces or reseeds).
func TestVMNetwork_changes(t *testing.T) {
	prior := vmNetwork{NetworkConfig: types.StringNull()}
	prior.Bridge, prior.VLANTag, prior.StaticIPv4 = types.StringValue("vmbr0"), types.Int64Null(), nullStatic

	var c proxmox.Changes
	if facetChanges(&prior, proxyVMModel{vmNetwork: prior}, &c) || c.Bridge != nil || c.VLANTag != nil {
		t.Errorf("no change, yet bridge %v vlan %v", c.Bridge, c.VLANTag)
	}
	plan := prior
	plan.Bridge, plan.VLANTag = types.StringValue("vmbr1"), types.Int64Value(5)
	c = proxmox.Changes{}
	if !facetChanges(&plan, proxyVMModel{vmNetwork: prior}, &c) || c.Bridge == nil || *c.Bridge != "vmbr1" || c.VLANTag == nil || *c.VLANTag != 5 {
		t.Errorf("bridge and tag changed: bridge %v vlan %v", c.Bridge, c.VLANTag)
	}
	plan = prior
	plan.VLANTag = types.Int64Value(5)
	c = proxmox.Changes{}
	if !facetChanges(&plan, proxyVMModel{vmNetwork: prior}, &c) || c.Bridge != nil || c.VLANTag == nil || *c.VLANTag != 5 {
		t.Errorf("tag changed: bridge %v vlan %v", c.Bridge, c.VLANTag)
	}
	plan = prior
	plan.Bridge = types.StringUnknown()
	c = proxmox.Changes{}
	if facetChanges(&plan, proxyVMModel{vmNetwork: prior}, &c) || c.Bridge != nil {
		t.Errorf("unknown bridge: %v", c.Bridge)
	}
	plan = prior
	plan.NetworkConfig, plan.StaticIPv4 = types.StringValue("version: 2\n"), staticObject("10.0.0.5/24")
	c = proxmox.Changes{}
	if facetChanges(&plan, proxyVMModel{vmNetwork: prior}, &c) || c.Bridge != nil || c.VLANTag != nil || c.Network != nil || c.Reseed != nil {
		t.Errorf("a new network configuration made an in-place change: %+v", c)
	}
}

// TestVMNetwork_attrs: the data sources show what is read back (bridge, vlan_tag,
// static_ipv4 with its fields), computed, and not network_config; the resource has all
// four, with the markdown of md and change.
func TestVMNetwork_attrs(t *testing.T) {
	ds := dataAttributes(networkAttrs())
	got := map[string]bool{}
	for k := range ds {
		got[k] = true
	}
	if len(got) != 3 || !got["bridge"] || !got["vlan_tag"] || !got["static_ipv4"] {
		t.Errorf("data source network attributes %v, want bridge, vlan_tag and static_ipv4", got)
	}
	for k, a := range ds {
		if !a.IsComputed() || a.IsOptional() || a.IsRequired() {
			t.Errorf("data source %s is not computed only", k)
		}
	}
	st := ds["static_ipv4"].GetType().(types.ObjectType)
	if !maps.EqualFunc(st.AttrTypes, staticIPv4AttrTypes, func(a, b attr.Type) bool { return a.Equal(b) }) {
		t.Errorf("data source static_ipv4 type %v", st.AttrTypes)
	}
	res := resourceAttributes(networkAttrs())
	if len(res) != 4 || res["network_config"] == nil {
		t.Errorf("resource network attributes: %d", len(res))
	}
	for _, a := range networkAttrs() {
		if res[a.name].GetMarkdownDescription() != joinMD(a.md, a.change) {
			t.Errorf("%s: markdown %q", a.name, res[a.name].GetMarkdownDescription())
		}
	}
}

// TestStaticIPv4_dataSourceSaysNull: the proxy_vm data source reads static_ipv4's empty
// dns and search lists as null (staticValue); its nested attributes say so, where the
// resource's describe what to set.
func TestStaticIPv4_dataSourceSaysNull(t *testing.T) {
	var resp datasource.SchemaResponse
	(&vmDataSource{}).Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	static, ok := resp.Schema.Attributes["static_ipv4"].(dschema.SingleNestedAttribute)
	if !ok {
		t.Fatalf("static_ipv4 is a %T", resp.Schema.Attributes["static_ipv4"])
	}
	for _, k := range []string{"dns", "search"} {
		if md := static.Attributes[k].GetMarkdownDescription(); !strings.Contains(md, "Null when") {
			t.Errorf("the data source's static_ipv4.%s does not say when it is null: %q", k, md)
		}
	}
	res := proxyVMSchema(context.Background()).Attributes["static_ipv4"].(schema.SingleNestedAttribute)
	if md := res.Attributes["dns"].GetMarkdownDescription(); strings.Contains(md, "Null when") {
		t.Errorf("the resource's static_ipv4.dns says how the data source reads it: %q", md)
	}
}
