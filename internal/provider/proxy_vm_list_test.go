package provider

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestAccProxyVMList_query (Terraform 1.14+): terraform query over two VMs this provider
// made and one the operator made (its mark has no created-by line), beside foreign and
// unmarked VMs: the name prefix, node and made_by filters each select the right VMs, and a
// result carries the VM's identity and (include_resource) the values an import reads.
func TestAccProxyVMList_query(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("the operator-made VM is added through the simulator")
	}
	c := newCluster(t, env)
	prefix := vmName("list") + "-"
	opName, opVMID := prefix+"op", 150123
	// An operator VM boots from its seed, <name>-seed.iso: an unbound mark is listed only with it.
	opNode := env.Sim.Nodes[0]
	if err := env.Sim.AddISO(opNode, env.Sim.ISOStorage, opName+"-seed.iso", []byte("seed")); err != nil {
		t.Fatal(err)
	}
	if err := env.Sim.AddVM(pvesim.VMSpec{VMID: opVMID, Name: opName, Node: opNode, Power: "running", ShipsAgent: true,
		Config: map[string]string{
			"description": proxmox.FormatMark("7d1f2c3b-aaaa-4bbb-8ccc-123456789abc", time.Now()),
			"tags":        proxmox.ManagedTag,
			"ide2":        env.Sim.ISOStorage + ":iso/" + opName + "-seed.iso,media=cdrom",
		}}); err != nil {
		t.Fatal(err)
	}
	// Unmarked VMs with the prefix are never listed.
	if err := env.Sim.AddVM(pvesim.VMSpec{VMID: 150124, Name: prefix + "handmade", Config: map[string]string{"description": "made by hand"}}); err != nil {
		t.Fatal(err)
	}
	vms := ""
	for _, s := range []string{"a", "b"} {
		vms += fmt.Sprintf(`
resource "proxy_vm" %q {
  name       = "%s%s"
  image      = %q
  cores      = 1
  memory_mib = 512
}
`, s, prefix, s, imageKey(env))
	}
	list := func(name, config string) string {
		return fmt.Sprintf("\nlist \"proxy_vm\" %q {\n  provider         = proxy\n  include_resource = true\n  config {\n%s  }\n}\n", name, config)
	}
	// The provider block of the first step's configuration stays beside the query file.
	query := "" +
		list("all", fmt.Sprintf("    name_prefix = %q\n", prefix)) +
		list("mine", fmt.Sprintf("    name_prefix = %q\n    made_by = \"provider\"\n", prefix)) +
		list("operator", fmt.Sprintf("    name_prefix = %q\n    made_by = \"other\"\n", prefix)) +
		list("on_node", fmt.Sprintf("    name_prefix = %q\n    node = %q\n", prefix, env.Nodes[0]))
	// A node the cluster does not have (a typo) is an error, as in the proxy_vms data
	// source, not zero results.
	typo := list("typo", fmt.Sprintf("    name_prefix = %q\n    node = \"no-such-node\"\n", prefix))

	resource.ParallelTest(t, resource.TestCase{
		TerraformVersionChecks: []tfversion.TerraformVersionCheck{
			skipOnOpenTofu("list resources (terraform query)"), tfversion.SkipBelow(tfversion.Version1_14_0)},
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(prefix + "a"),
		Steps: []resource.TestStep{
			{Config: env.ProviderConfig("") + vms},
			{
				Query:  true,
				Config: query,
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength("proxy_vm.all", 3),
					querycheck.ExpectLength("proxy_vm.mine", 2),
					querycheck.ExpectLength("proxy_vm.operator", 1),
					querycheck.ExpectLength("proxy_vm.on_node", 3),
					querycheck.ExpectIdentity("proxy_vm.operator", map[string]knownvalue.Check{
						"vmid": knownvalue.Int64Exact(int64(opVMID)),
						"name": knownvalue.StringExact(opName),
					}),
					querycheck.ExpectIdentity("proxy_vm.mine", map[string]knownvalue.Check{
						"vmid": knownvalue.NotNull(),
						"name": knownvalue.StringExact(prefix + "a"),
					}),
					querycheck.ExpectResourceDisplayName("proxy_vm.operator", queryfilter.ByDisplayName(knownvalue.StringExact(opName)),
						knownvalue.StringExact(opName)),
					querycheck.ExpectResourceKnownValues("proxy_vm.mine", queryfilter.ByDisplayName(knownvalue.StringExact(prefix+"b")),
						[]querycheck.KnownValueCheck{
							{Path: tfjsonpath.New("cores"), KnownValue: knownvalue.Int64Exact(1)},
							{Path: tfjsonpath.New("memory_mib"), KnownValue: knownvalue.Int64Exact(512)},
							{Path: tfjsonpath.New("node"), KnownValue: knownvalue.StringExact(env.Nodes[0])},
							{Path: tfjsonpath.New("image"), KnownValue: knownvalue.StringExact(imageKey(env))},
						}),
				},
			},
			{
				Query:       true,
				Config:      typo,
				ExpectError: regexp.MustCompile(`(?s)node "no-such-node" is not a node of this cluster.*Set node to one of the cluster's nodes`),
			},
		},
	})
}
