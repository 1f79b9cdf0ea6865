package provider

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// needsAddressPlan skips a test that gives VMs static addresses on a real cluster: the
// addresses the tests use are not routed there, so the guests would never install their
// agent (nor answer at those addresses).
func needsAddressPlan(t *testing.T, env *testEnv) {
	t.Helper()
	if env.Sim == nil {
		t.Skip("static addresses need the simulator: the test addresses are not routed on a real cluster")
	}
}

// staticHCL renders a static_ipv4 block.
func staticHCL(address string) string {
	return fmt.Sprintf("  static_ipv4 = {\n    address = %q\n    gateway = \"10.20.0.1\"\n    dns     = [\"10.20.0.53\"]\n    search  = [\"corp.example\"]\n  }\n", address)
}

func staticOf(address string) nocloud.StaticIPv4 {
	return nocloud.StaticIPv4{
		Address: netip.MustParsePrefix(address), Gateway: netip.MustParseAddr("10.20.0.1"),
		DNS: []netip.Addr{netip.MustParseAddr("10.20.0.53")}, Search: []string{"corp.example"},
	}
}

// checkNetworkSeed checks (simulator only) that the guest booted with want(mac) as its
// network-config, mac being the VM's net0 MAC from the state, and that the mark carries
// the configuration's digest.
func checkNetworkSeed(env *testEnv, c *cluster, want func(mac string) ([]byte, *proxmox.NetworkConfig)) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, err := vmidOf(s, vmAddr)
		if err != nil {
			return err
		}
		body, n := want(s.RootModule().Resources[vmAddr].Primary.Attributes["mac_address"])
		if got := proxmox.ParseMarkExtra(c.config(vmid)["description"]).NetworkDigest; got != proxmox.NetworkDigest(n) || got == "" {
			return fmt.Errorf("the mark's network digest %q, want %q", got, proxmox.NetworkDigest(n))
		}
		if env.Sim == nil {
			return nil
		}
		seed, ok := env.Sim.GuestSeed(vmid)
		if !ok {
			return fmt.Errorf("VMID %d booted without a seed", vmid)
		}
		if string(seed.NetworkConfig) != string(body) {
			return fmt.Errorf("VMID %d booted with network-config:\n%s\nwant:\n%s", vmid, seed.NetworkConfig, body)
		}
		return nil
	}
}

func staticSeed(address string) func(string) ([]byte, *proxmox.NetworkConfig) {
	return func(mac string) ([]byte, *proxmox.NetworkConfig) {
		s := staticOf(address)
		return nocloud.RenderStaticIPv4(s, mac), &proxmox.NetworkConfig{Static: &s}
	}
}

// TestAccProxyVM_staticIPv4: a VM with static_ipv4 has its address known at plan time,
// boots with the network-config rendered for its MAC, and reports that address; the same
// configuration plans nothing; an import block records the value in place (the mark's
// digest matches); another address replaces the VM; the destroy leaves no VM and no seed.
func TestAccProxyVM_staticIPv4(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	needsAddressPlan(t, env)
	c := newCluster(t, env)
	name := vmName("static")
	base := vmProviderConfig(env, "")
	cfg := func(address string) string {
		return base + vmResourceBare(env, name, "  machine_type = \"small\"\n"+staticHCL(address))
	}
	uid := statecheck.CompareValue(compare.ValuesDiffer())

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg("10.20.0.7/24"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.7")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					uid.AddStateValue(vmAddr, tfjsonpath.New("uid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.7")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ipv4_addresses"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.20.0.7")})),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("network_config"), knownvalue.Null()),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("static_ipv4").AtMapKey("gateway"), knownvalue.StringExact("10.20.0.1")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(checkNetworkSeed(env, c, staticSeed("10.20.0.7/24")), c.checkOneVM(vmAddr, name)),
			},
			{
				Config:           cfg("10.20.0.7/24"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ResourceName:      vmAddr,
				ImportState:       true,
				ImportStateVerify: true,
				// static_ipv4 is read back from the mark, whole.
				ImportStateVerifyIgnore: importIgnore,
			},
			{
				// An import block with the same configuration: nothing to change.
				Config:          cfg("10.20.0.7/24"),
				ResourceName:    vmAddr,
				ImportState:     true,
				ImportStateKind: resource.ImportBlockWithID,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.7")),
				}},
			},
			{
				// Another address: cloud-init applies network config at first boot only.
				Config: cfg("10.20.0.8/24"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.8")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					uid.AddStateValue(vmAddr, tfjsonpath.New("uid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.8")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(checkNetworkSeed(env, c, staticSeed("10.20.0.8/24")), c.checkOneVM(vmAddr, name)),
			},
			{
				// static_ipv4 removed: back to DHCP, which is a new first boot too.
				Config: base + vmResourceBare(env, name, "  machine_type = \"small\"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{uid.AddStateValue(vmAddr, tfjsonpath.New("uid"))},
			},
		},
	})
}

// TestAccProxyVM_networkConfigRaw: a raw network_config reaches the guest byte for byte,
// the guest takes the address it gives, a change replaces the VM, and moving to
// static_ipv4 does too.
func TestAccProxyVM_networkConfigRaw(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	needsAddressPlan(t, env)
	c := newCluster(t, env)
	name := vmName("netraw")
	base := vmProviderConfig(env, "")
	raw := func(addr string) string {
		return "# by name: the MAC is not known before the clone\nversion: 2\nethernets:\n  ens18:\n    addresses: [" + addr + "]\n"
	}
	cfg := func(addr string) string {
		return base + vmResource(env, name, "  machine_type = \"small\"\n  network_config = "+hclString(raw(addr)))
	}
	rawSeed := func(addr string) func(string) ([]byte, *proxmox.NetworkConfig) {
		return func(string) ([]byte, *proxmox.NetworkConfig) {
			return []byte(raw(addr)), &proxmox.NetworkConfig{Raw: []byte(raw(addr))}
		}
	}

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg("10.30.0.9/24"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")), // not parsed: the agent says
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("network_config"), knownvalue.StringExact(raw("10.30.0.9/24"))),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("static_ipv4"), knownvalue.Null()),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkNetworkSeed(env, c, rawSeed("10.30.0.9/24")),
					func(s *terraform.State) error {
						if env.Sim == nil {
							return nil
						}
						if ip := s.RootModule().Resources[vmAddr].Primary.Attributes["ip_address"]; ip != "10.30.0.9" {
							return fmt.Errorf("ip_address %q, want the network_config's 10.30.0.9", ip)
						}
						return nil
					},
				),
			},
			{
				Config:           cfg("10.30.0.9/24"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: cfg("10.30.0.10/24"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: checkNetworkSeed(env, c, rawSeed("10.30.0.10/24")),
			},
			{
				Config: base + vmResource(env, name, "  machine_type = \"small\"\n"+staticHCL("10.20.0.9/24")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: checkNetworkSeed(env, c, staticSeed("10.20.0.9/24")),
			},
		},
	})
}

// TestAccProxyVM_networkImport: a VM forgotten and imported again with an import block.
// A static address is read back from the mark: the same one plans nothing, another one or
// none a replacement. A raw network_config only has its digest there: the same text is
// recorded in place, another replaces; with none it is left alone, and the first value set
// afterwards is still compared with the digest.
// netImportRaw is a raw network-config (by name: the MAC is not known before the clone).
const netImportRaw = "version: 2\nethernets:\n  ens18:\n    addresses: [10.20.0.31/24]\n"

func TestAccProxyVM_networkImport(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	needsAddressPlan(t, env)
	c := newCluster(t, env)
	name := vmName("netimp")
	base := vmProviderConfig(env, "")
	body := func(extra string) string { return vmResourceBare(env, name, "  machine_type = \"small\"\n"+extra) }
	removed := "\nremoved {\n  from = proxy_vm.test\n  lifecycle {\n    destroy = false\n  }\n}\n"
	imp := fmt.Sprintf("\nimport {\n  to = proxy_vm.test\n  id = %q\n}\n", name)
	vmid := statecheck.CompareValue(compare.ValuesSame())

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config:            base + body(staticHCL("10.20.0.21/24")),
				ConfigStateChecks: []statecheck.StateCheck{vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid"))},
			},
			{Config: base + removed},
			{
				// Imported with the same static address: nothing to change, since the mark
				// gives static_ipv4 back whole (the gateway, name servers and search domains too).
				Config: base + body(staticHCL("10.20.0.21/24")) + imp,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("static_ipv4"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"address": knownvalue.StringExact("10.20.0.21/24"),
						"gateway": knownvalue.StringExact("10.20.0.1"),
						"dns":     knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.20.0.53")}),
						"search":  knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("corp.example")}),
					})),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.21")),
				},
			},
			{
				Config:           base + body(staticHCL("10.20.0.21/24")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: base + removed},
			{
				// Imported with another network: replaced.
				Config: base + body(staticHCL("10.20.0.22/24")) + imp,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionReplace),
				}},
				Check: checkNetworkSeed(env, c, staticSeed("10.20.0.22/24")),
			},
			{Config: base + removed},
			{
				// Imported with none while the mark says a static address: managed as if this
				// configuration had made it, so the DHCP configuration replaces it.
				Config: base + body("") + imp,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionReplace),
				}},
			},
			{Config: base + removed},
			{
				// A VM this provider made without a network configuration (its mark has no
				// network line) imported with a static address: a replacement, since the
				// guest runs DHCP.
				Config: base + body(staticHCL("10.20.0.24/24")) + imp,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionReplace),
				}},
				Check: checkNetworkSeed(env, c, staticSeed("10.20.0.24/24")),
			},
			{
				// A raw network_config replaces the static VM; its mark keeps only the digest.
				Config: base + body("  network_config = "+hclString(netImportRaw)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
			},
			{Config: base + removed},
			{
				// Imported with the same raw text: recorded in place (the digest matches),
				// no request to change the VM.
				Config: base + body("  network_config = "+hclString(netImportRaw)) + imp,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
			},
			{
				Config:           base + body("  network_config = "+hclString(netImportRaw)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{Config: base + removed},
			{
				// Imported with none: a raw network is left alone, as cloud_init is.
				Config: base + body("") + imp,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop),
				}},
			},
			{
				// Then the first value set is still compared with the mark's digest.
				Config: base + body(staticHCL("10.20.0.23/24")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: checkNetworkSeed(env, c, staticSeed("10.20.0.23/24")),
			},
		},
	})
}

// TestAccProxyVM_networkValidation: each bad network input fails the plan with a
// diagnostic naming the attribute and what to fix, and no request reaches Proxmox.
func TestAccProxyVM_networkValidation(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim != nil {
		env.Sim.EnableRequestLog()
	}
	name := vmName("netval")
	base := vmProviderConfig(env, "")
	res := func(body string) string {
		return base + vmResourceBare(env, name, "  machine_type = \"small\"\n"+body)
	}
	static := func(addr, gw string) string {
		return fmt.Sprintf("  static_ipv4 = {\n    address = %q\n    gateway = %q\n  }\n", addr, gw)
	}
	steps := []struct{ body, want string }{
		{static("10.0.0.5/24", "10.0.1.1"), `(?s)Invalid proxy VM configuration.*static_ipv4 = \{.*static_ipv4.gateway.*10\.0\.1\.1 is outside the\s+address's network 10\.0\.0\.0/24`},
		{static("10.0.0.5", "10.0.0.1"), `(?s)Invalid proxy VM configuration.*static_ipv4 = \{.*static_ipv4.address is "10\.0\.0\.5", not\s+an IPv4 address with its prefix length`},
		{static("10.0.0.5/33", "10.0.0.1"), `(?s)static_ipv4.address is "10\.0\.0\.5/33"`},
		{static("10.0.0.0/24", "10.0.0.1"), `(?s)static_ipv4.address.*network address of 10\.0\.0\.0/24`},
		{static("10.0.0.5/24", "10.0.0.1") + "  network_config = \"version: 2\\n\"\n", `(?s)Invalid Attribute Combination.*static_ipv4 = \{.*network_config`},
		{"  network_config = \"version: 2\\n  ethernets: [\\n\"\n", `(?s)Invalid proxy VM configuration.*network_config = .*network_config: the network-config is not a\s+YAML mapping`},
		{"  network_config = \"ethernets: {}\\n\"\n", `(?s)network_config: the network-config has no version: key`},
		{"  network_config = \"\"\n", `(?s)network_config: the network-config is empty`},
		{"  static_ipv4 = {\n    address = \"10.0.0.5/24\"\n    dns = [\"dns.example\"]\n  }\n", `(?s)static_ipv4.dns\[0\] is "dns\.example", not an\s+IP address`},
	}
	var ts []resource.TestStep
	for _, s := range steps {
		ts = append(ts, resource.TestStep{Config: res(s.body), PlanOnly: true, ExpectError: regexp.MustCompile(strings.ReplaceAll(s.want, " ", `\s+`))})
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    ts,
		CheckDestroy: func(*terraform.State) error {
			if env.Sim == nil {
				return nil
			}
			if log := env.Sim.RequestLog(); len(log) != 0 {
				return fmt.Errorf("a plan-time error sent %d requests, the first %s %s", len(log), log[0].Method, log[0].Path)
			}
			return nil
		},
	})
}

// TestStaticIPv4Validator_paths: each wrong value gets one diagnostic on static_ipv4
// (where Terraform can point) naming the field and what to fix.
func TestStaticIPv4Validator_paths(t *testing.T) {
	obj := func(addr, gw string, dns ...string) types.Object {
		d := make([]attr.Value, len(dns))
		for i, s := range dns {
			d[i] = types.StringValue(s)
		}
		g := types.StringNull()
		if gw != "" {
			g = types.StringValue(gw)
		}
		return types.ObjectValueMust(staticIPv4AttrTypes, map[string]attr.Value{
			"address": types.StringValue(addr), "gateway": g,
			"dns": types.ListValueMust(types.StringType, d), "search": types.ListNull(types.StringType),
		})
	}
	root := path.Root("static_ipv4")
	// 24 long IPv6 name servers: some 940 characters in the mark line.
	var manyDNS []string
	for i := range 24 {
		manyDNS = append(manyDNS, fmt.Sprintf("fd00:1111:2222:3333:4444:5555:6666:%x", 0x1000+i))
	}
	cases := []struct {
		v   types.Object
		msg string
	}{
		{obj("10.0.0.5/24", "10.0.1.1"), "static_ipv4.gateway 10.0.1.1 is outside the address's network 10.0.0.0/24"},
		{obj("10.0.0.5/24", "10.0.0.5"), "static_ipv4.gateway 10.0.0.5 is the VM's own address"},
		{obj("10.0.0.255/24", ""), "static_ipv4.address 10.0.0.255 is the broadcast address"},
		{obj("bad", ""), "static_ipv4.address is \"bad\", not an IPv4 address"},
		{obj("10.0.0.5/24", "fd00::1"), "static_ipv4.gateway is \"fd00::1\", not an IPv4 address"},
		{obj("10.0.0.5/24", "", "10.0.0.53", "x"), "static_ipv4.dns[1] is \"x\", not an IP address"},
		{obj("10.0.0.5/24", "", "FD00::53"), "static_ipv4.dns[0] is \"FD00::53\": write it as \"fd00::53\""},
		{obj("10.0.0.5/24", "", "fd00:0:0::54"), "write it as \"fd00::54\""},
		{obj("10.0.0.5/24", "", "fe80::1%eth0"), "not an IP address"},
		{obj("10.0.0.5/24", "10.0.0.1", manyDNS...), "more than the 512 it may: give fewer name servers"},
	}
	for _, tc := range cases {
		var resp validator.ObjectResponse
		staticIPv4Validator{}.ValidateObject(context.Background(), validator.ObjectRequest{Path: root, ConfigValue: tc.v}, &resp)
		if resp.Diagnostics.ErrorsCount() != 1 {
			t.Errorf("%v: %d errors, want 1: %v", tc.v, resp.Diagnostics.ErrorsCount(), resp.Diagnostics)
			continue
		}
		d := resp.Diagnostics.Errors()[0]
		p, ok := d.(interface{ Path() path.Path })
		if !ok || !p.Path().Equal(root) || !strings.Contains(d.Detail(), tc.msg) {
			t.Errorf("%v: diagnostic %q at %v, want %q on static_ipv4", tc.v, d.Detail(), p, tc.msg)
		}
	}
	var ok validator.ObjectResponse
	staticIPv4Validator{}.ValidateObject(context.Background(), validator.ObjectRequest{Path: root, ConfigValue: obj("10.0.0.5/24", "10.0.0.1", "10.0.0.53", "fd00::53")}, &ok)
	if ok.Diagnostics.HasError() {
		t.Errorf("a good value: %v", ok.Diagnostics)
	}
}

// TestPlanNetwork decides replacement and ip_address without a backend: a VM made by
// Terraform is replaced by any change; an imported one is compared with the mark's digest,
// or, without a digest, by the addresses the agent reported at the import.
func TestPlanNetwork(t *testing.T) {
	ctx := context.Background()
	static := func(addr string) types.Object {
		return types.ObjectValueMust(staticIPv4AttrTypes, map[string]attr.Value{
			"address": types.StringValue(addr), "gateway": types.StringNull(),
			"dns": types.ListNull(types.StringType), "search": types.ListNull(types.StringType),
		})
	}
	model := func(nc types.String, st types.Object, v4 ...string) proxyVMModel {
		m := proxyVMModel{vmNetwork: vmNetwork{NetworkConfig: nc, vmNetworkReadable: vmNetworkReadable{StaticIPv4: st}}, vmPower: vmPower{Started: types.BoolValue(true)}, vmAddresses: vmAddresses{IPv4Addresses: nullStringList}}
		if v4 != nil {
			m.IPv4Addresses = stringList(v4)
		}
		return m
	}
	none := model(types.StringNull(), nullStatic)
	s5 := model(types.StringNull(), static("10.0.0.5/24"))
	s6 := model(types.StringNull(), static("10.0.0.6/24"))
	raw := model(types.StringValue("version: 2\n"), nullStatic)
	digest5 := proxmox.NetworkDigest(&proxmox.NetworkConfig{Static: &nocloud.StaticIPv4{Address: netip.MustParsePrefix("10.0.0.5/24")}})
	cases := []struct {
		name          string
		config, prior proxyVMModel
		imp           networkImport
		replace       string
	}{
		{"same static", s5, s5, networkImport{}, ""},
		{"other static", s6, s5, networkImport{}, "static_ipv4"},
		{"static to raw", raw, s5, networkImport{}, "network_config"},
		{"raw removed", none, raw, networkImport{}, "network_config"},
		{"set on a VM made without", s5, none, networkImport{}, "static_ipv4"},
		{"imported, same digest", s5, none, networkImport{unread: true, digest: digest5}, ""},
		{"imported, other digest", s6, none, networkImport{unread: true, digest: digest5}, "static_ipv4"},
		{"imported, none set", none, none, networkImport{unread: true, digest: digest5}, ""},
		{"imported without digest, address seen", s5, model(types.StringNull(), nullStatic, "10.0.0.5"), networkImport{unread: true}, ""},
		{"imported without digest, other address", s5, model(types.StringNull(), nullStatic, "192.168.0.150"), networkImport{unread: true}, "static_ipv4"},
		{"imported without digest, raw", raw, none, networkImport{unread: true}, ""},
		// Made by this provider without a network configuration (importedNetworkDigest):
		// the guest runs DHCP, even when its lease is the configured address.
		{"made here without one, static", s5, model(types.StringNull(), nullStatic, "10.0.0.5"), networkImport{unread: true, digest: importedNetworkDigest(proxmox.MarkExtra{CreatedBy: proxmox.CreatedByProvider})}, "static_ipv4"},
		{"made here without one, raw", raw, none, networkImport{unread: true, digest: importedNetworkDigest(proxmox.MarkExtra{CreatedBy: proxmox.CreatedByProvider})}, "network_config"},
		{"made here without one, none set", none, none, networkImport{unread: true, digest: importedNetworkDigest(proxmox.MarkExtra{CreatedBy: proxmox.CreatedByProvider})}, ""},
		{"operator's, static seen", s5, model(types.StringNull(), nullStatic, "10.0.0.5"), networkImport{unread: true, digest: importedNetworkDigest(proxmox.MarkExtra{})}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := tc.config
			prior := tc.prior
			got := planNetwork(ctx, tc.config, &plan, &prior, tc.imp)
			want := []path.Path{}
			if tc.replace != "" {
				want = append(want, path.Root(tc.replace))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) && (len(got) != 0 || len(want) != 0) {
				t.Errorf("replace %v, want %v", got, want)
			}
		})
	}
	// ip_address: the static address at create, unless the VM is kept stopped.
	plan := s5
	planNetwork(ctx, s5, &plan, nil, networkImport{})
	if plan.IPAddress.ValueString() != "10.0.0.5" {
		t.Errorf("ip_address %v, want 10.0.0.5", plan.IPAddress)
	}
	// A name server list known only at apply leaves the address known.
	partial := s5
	partial.StaticIPv4 = types.ObjectValueMust(staticIPv4AttrTypes, map[string]attr.Value{
		"address": types.StringValue("10.0.0.7/24"), "gateway": types.StringNull(),
		"dns": types.ListUnknown(types.StringType), "search": types.ListNull(types.StringType),
	})
	pp := partial
	pp.IPAddress = types.StringUnknown()
	planNetwork(ctx, partial, &pp, nil, networkImport{})
	if pp.IPAddress.ValueString() != "10.0.0.7" {
		t.Errorf("ip_address %v with dns unknown, want 10.0.0.7", pp.IPAddress)
	}
	stopped := s5
	stopped.Started = types.BoolValue(false)
	stopped.IPAddress = types.StringNull()
	planNetwork(ctx, s5, &stopped, nil, networkImport{})
	if !stopped.IPAddress.IsNull() {
		t.Errorf("ip_address %v for started = false, want null", stopped.IPAddress)
	}
}

// TestAccProxyVM_staticIPv4StartedLater: a VM made with started = false has no address;
// its first boot, when started turns true, applies the static address, which the plan
// already knows and the update reads back from the agent.
func TestAccProxyVM_staticIPv4StartedLater(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	needsAddressPlan(t, env)
	c := newCluster(t, env)
	name := vmName("slater")
	base := vmProviderConfig(env, "")
	cfg := func(started bool) string {
		return base + vmResource(env, name, fmt.Sprintf("  machine_type = \"small\"\n  started = %t\n%s", started, staticHCL("10.20.0.31/24")))
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg(false),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("stopped")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.Null()),
				},
			},
			{
				Config: cfg(true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.31")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.31")),
				},
				Check: checkNetworkSeed(env, c, staticSeed("10.20.0.31/24")),
			},
			{
				Config:           cfg(true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestApplyNetwork_staticAddressIsIPAddress: the static address is ip_address when the
// agent reports it among others (the first may be another interface's); when it reports
// other addresses only, the apply fails naming both.
func TestApplyNetwork_staticAddressIsIPAddress(t *testing.T) {
	plan := proxyVMModel{
		vmNetwork: vmNetwork{vmNetworkReadable: vmNetworkReadable{StaticIPv4: types.ObjectValueMust(staticIPv4AttrTypes, map[string]attr.Value{
			"address": types.StringValue("10.0.0.5/24"), "gateway": types.StringNull(),
			"dns": types.ListNull(types.StringType), "search": types.ListNull(types.StringType),
		})}},
		vmAddresses: vmAddresses{IPAddress: types.StringValue("10.0.0.5")}, vmPower: vmPower{Started: types.BoolValue(true)},
	}
	vm := vmFixture()
	vm.IP, vm.Addresses = "172.17.0.1", proxmox.Addresses{IPv4: []string{"172.17.0.1", "10.0.0.5"}, Interface: "docker0"}
	got := plan
	applyVM(&got, vm)
	if got.IPAddress.ValueString() != "10.0.0.5" || mismatch(plan, got) != "" {
		t.Errorf("ip_address %v, mismatch %q: want the static address", got.IPAddress, mismatch(plan, got))
	}
	vm.Addresses.IPv4 = []string{"172.17.0.1"}
	got = plan
	applyVM(&got, vm)
	if msg := mismatch(plan, got); !strings.Contains(msg, "172.17.0.1") || !strings.Contains(msg, "static address 10.0.0.5") {
		t.Errorf("mismatch %q: want both addresses", msg)
	}
}

// TestAccVMDataSource_staticIPv4: the proxy_vm data source reads static_ipv4 back from the
// mark of a VM made with one, and null for a DHCP VM.
func TestAccVMDataSource_staticIPv4(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	needsAddressPlan(t, env)
	c := newCluster(t, env)
	name := vmName("dsstatic")
	cfg := vmProviderConfig(env, "") + vmResourceBare(env, name, "  machine_type = \"small\"\n"+staticHCL("10.20.0.41/24")) +
		"\ndata \"proxy_vm\" \"s\" {\n  vmid = proxy_vm.test.vmid\n}\n"
	ds := "data.proxy_vm.s"
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("static_ipv4"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"address": knownvalue.StringExact("10.20.0.41/24"),
					"gateway": knownvalue.StringExact("10.20.0.1"),
					"dns":     knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.20.0.53")}),
					"search":  knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("corp.example")}),
				})),
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.41")),
			},
		}, {
			Config: vmProviderConfig(env, "") + vmResourceBare(env, name, "  machine_type = \"small\"\n") +
				"\ndata \"proxy_vm\" \"s\" {\n  vmid = proxy_vm.test.vmid\n}\n",
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(ds, tfjsonpath.New("static_ipv4"), knownvalue.Null()),
			},
		}},
	})
}
