package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

const vmDS = "data.proxy_vm.x"

func vmDSConfig(body string) string { return "\ndata \"proxy_vm\" \"x\" {\n" + body + "\n}\n" }

// TestAccVMDataSource_lookups reads vmsCluster's VMs by VMID and by name: an operator-made
// VM is found either way; a name two marked VMs hold, a name no marked VM holds, a VM
// without the mark and a configuration naming both or neither are errors on the attribute.
func TestAccVMDataSource_lookups(t *testing.T) {
	env := newVMsEnv(t)
	// A second marked VM named proxy-b (another configuration's, another uid).
	if err := env.Sim.AddVM(pvesim.VMSpec{VMID: 150009, Node: "pve1", Name: "proxy-b",
		Config: map[string]string{"description": proxmox.FormatMark(uidA, vmsCreated)}}); err != nil {
		t.Fatal(err)
	}
	cfg := env.ProviderConfig("")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg + vmDSConfig(`vmid = 150001`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("id"), knownvalue.StringExact("vms/150001/proxy-a")),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("name"), knownvalue.StringExact("proxy-a")),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("node"), knownvalue.StringExact("pve1")),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("uid"), knownvalue.StringExact(uidA)),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("made_by"), knownvalue.StringExact("other")),
					// Running without a guest agent: running, no addresses.
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("ipv4_addresses"), knownvalue.Null()),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("cores"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("memory_mib"), knownvalue.Int64Exact(1024)),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("disk_gib"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("bridge"), knownvalue.StringExact("vmbr0")),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("mac_address"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("tags"), knownvalue.SetExact([]knownvalue.Check{})),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("description"), knownvalue.StringExact("")),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("protection"), knownvalue.Bool(false)),
				},
			},
			{
				Config: cfg + vmDSConfig(`name = "edge-c"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("vmid"), knownvalue.Int64Exact(150003)),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("uid"), knownvalue.StringExact("")),
					// An admin's line beside the mark is the note; the user tag beside proxy_operator.
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("description"), knownvalue.StringExact("owner=netops")),
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("tags"), knownvalue.SetExact([]knownvalue.Check{knownvalue.StringExact("dns")})),
				},
			},
			{
				Config:      cfg + vmDSConfig(`name = "proxy-b"`),
				ExpectError: regexp.MustCompile(`2 marked VMs are named "proxy-b" \(VMIDs 150002, 150009\): set vmid`),
			},
			{
				Config:      cfg + vmDSConfig(`name = "proxy-nowhere"`),
				ExpectError: regexp.MustCompile(`No VM named "proxy-nowhere" carries the proxy-operator-managed=true mark`),
			},
			{
				Config:      cfg + vmDSConfig(`vmid = 150004`), // proxy-lookalike: tag, no mark
				ExpectError: regexp.MustCompile(`No VM VMID 150004 carries the proxy-operator-managed=true mark`),
			},
			{
				Config:      cfg + vmDSConfig("name = \"proxy-a\"\nvmid = 150001"),
				ExpectError: regexp.MustCompile(`Exactly one of these attributes must be configured: \[name,vmid\]`),
			},
			{
				Config:      cfg + vmDSConfig(""),
				ExpectError: regexp.MustCompile(`(?s)Missing Attribute Configuration.*Exactly one of these attributes must be configured: \[name,vmid\]`),
			},
			{
				// A valid configuration last: the test's final destroy plans with it.
				Config: cfg + vmDSConfig(`vmid = 150002`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("name"), knownvalue.StringExact("proxy-b")),
				},
			},
		},
	})
}

// TestAccVMDataSource_fleet: a VM this provider made, read back by proxy_vm (by name) and
// proxy_vms (by prefix and maker) with the resource's addresses, after create and after an
// in-place update that restarts it; the resource's address lists survive an import
// unchanged; a node filter naming no node of the cluster is an error.
func TestAccVMDataSource_fleet(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("checks the simulator's addresses")
	}
	c := newCluster(t, env)
	name := vmName("dsf")
	ds := func(body string) string {
		return vmProviderConfig(env, "") + vmResource(env, name, body) + `
data "proxy_vm" "x" {
  name = proxy_vm.test.name
}
data "proxy_vms" "f" {
  name_prefix = "tfacc-dsf"
  made_by     = "provider"
  depends_on  = [proxy_vm.test]
}
`
	}
	vmid := statecheck.CompareValue(compare.ValuesSame())
	ip := statecheck.CompareValuePairs(vmAddr, tfjsonpath.New("ip_address"), vmDS, tfjsonpath.New("ip_address"), compare.ValuesSame())
	v4 := statecheck.CompareValuePairs(vmAddr, tfjsonpath.New("ipv4_addresses"), vmDS, tfjsonpath.New("ipv4_addresses"), compare.ValuesSame())
	v6 := statecheck.CompareValuePairs(vmAddr, tfjsonpath.New("ipv6_addresses"), vmDS, tfjsonpath.New("ipv6_addresses"), compare.ValuesSame())
	listIP := statecheck.CompareValuePairs(vmAddr, tfjsonpath.New("ip_address"), "data.proxy_vms.f", tfjsonpath.New("vms").AtSliceIndex(0).AtMapKey("ip_address"), compare.ValuesSame())
	listV6 := statecheck.CompareValuePairs(vmAddr, tfjsonpath.New("ipv6_addresses"), "data.proxy_vms.f", tfjsonpath.New("vms").AtSliceIndex(0).AtMapKey("ipv6_addresses"), compare.ValuesSame())
	ula := knownvalue.ListExact([]knownvalue.Check{knownvalue.StringRegexp(regexp.MustCompile(`^fd00::[0-9a-f:]+$`))})
	checks := func(cores int64) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
			vmid.AddStateValue(vmDS, tfjsonpath.New("vmid")),
			ip, v4, v6, listIP, listV6,
			statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ipv4_addresses"), knownvalue.ListExact([]knownvalue.Check{
				knownvalue.StringRegexp(regexp.MustCompile(`^192\.168\.0\.\d+$`))})),
			statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ipv6_addresses"), ula),
			statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("network_interface"), knownvalue.StringExact("ens18")),
			statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("network_interface"), knownvalue.StringExact("ens18")),
			statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("made_by"), knownvalue.StringExact("provider")),
			statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("status"), knownvalue.StringExact("running")),
			statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("image"), knownvalue.StringExact(imageKey(env))),
			statecheck.ExpectKnownValue(vmDS, tfjsonpath.New("cores"), knownvalue.Int64Exact(cores)),
			statecheck.ExpectKnownValue("data.proxy_vms.f", tfjsonpath.New("vms").AtSliceIndex(0).AtMapKey("cores"), knownvalue.Int64Exact(cores)),
			statecheck.ExpectKnownValue("data.proxy_vms.f", tfjsonpath.New("vms").AtSliceIndex(0).AtMapKey("made_by"), knownvalue.StringExact("provider")),
			statecheck.ExpectKnownValue("data.proxy_vms.f", tfjsonpath.New("vms"), knownvalue.ListSizeExact(1)),
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: ds(`  machine_type = "small"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ipv4_addresses")),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ipv6_addresses")),
				}},
				ConfigStateChecks: checks(1),
			},
			{
				Config:           ds(`  machine_type = "small"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// A restart: the addresses are unknown in the plan and read again after it.
				Config: ds("  machine_type = \"small\"\n  cores = 2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ipv4_addresses")),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("network_interface")),
				}},
				ConfigStateChecks: checks(2),
			},
			{
				ResourceName:      vmAddr,
				ImportState:       true,
				ImportStateVerify: true,
				// cores = 2 no longer matches machine_type "small": an import cannot name it.
				ImportStateVerifyIgnore: append([]string{"machine_type"}, importIgnore...),
			},
			{
				Config:      ds("  machine_type = \"small\"\n  cores = 2") + "\ndata \"proxy_vms\" \"bad\" {\n  node = \"pve9\"\n}\n",
				ExpectError: regexp.MustCompile(`(?s)Unable to list the marked VMs.*node "pve9" is not a node of this cluster`),
			},
			{
				Config:           ds("  machine_type = \"small\"\n  cores = 2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
