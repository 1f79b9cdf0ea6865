package provider

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// proxy_ha_rule against the simulator's HA model (internal/pvesim/ha*.go): the rule's
// lifecycle with VMs that are HA resources, its ownership mark, plan-time validation and the
// HA preflight. The pair of proxy_vm with ha across a node loss is in
// ha_rule_pair_acc_test.go.

const haRuleAddr = "proxy_ha_rule.test"

// haRuleEnv is a three-node simulator (HA needs quorum: two of three nodes) with VMs 7001 on
// pve1 and 7002 on pve2, running, both HA resources, as someone else (or proxy_vm's ha) made
// them.
func haRuleEnv(t *testing.T) (*testEnv, *cluster) {
	t.Helper()
	if realCluster() {
		t.Skip("needs the simulator's HA set-up and request log")
	}
	env := newTestEnv(t, pvesim.Options{Nodes: []string{"pve1", "pve2", "pve3"}})
	for i, node := range []string{"pve1", "pve2"} {
		vmid := 7001 + i
		if err := env.Sim.AddVM(pvesim.VMSpec{VMID: vmid, Node: node, Name: fmt.Sprintf("guest-%d", vmid), Power: "running"}); err != nil {
			t.Fatal(err)
		}
		if err := env.Sim.AddHAResource(vmid, ""); err != nil {
			t.Fatal(err)
		}
	}
	env.Sim.EnableRequestLog()
	return env, newCluster(t, env)
}

func haRuleConfig(env *testEnv, body string) string {
	return env.ProviderConfig("") + fmt.Sprintf("\nresource \"proxy_ha_rule\" \"test\" {\n%s\n}\n", body)
}

// simRule returns the simulator's rule id.
func simRule(env *testEnv, id string) (pvesim.HARuleState, bool) {
	for _, r := range env.Sim.HARules() {
		if r.ID == id {
			return r, true
		}
	}
	return pvesim.HARuleState{}, false
}

// ruleWrites counts the requests that write rule id (update, delete) and every rule create
// (a create names its id in its form, which the log does not keep).
func ruleWrites(env *testEnv, id string) (writes, creates int) {
	for _, r := range env.Sim.RequestLog() {
		switch {
		case r.Method == http.MethodPost && r.Path == "/cluster/ha/rules":
			creates++
		case r.Method != http.MethodGet && r.Path == "/cluster/ha/rules/"+id:
			writes++
		}
	}
	return writes, creates
}

// checkRuleGone is a CheckDestroy: no rule id is left.
func checkRuleGone(env *testEnv, id string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if r, ok := simRule(env, id); ok {
			return fmt.Errorf("HA rule %s outlived its resource: %+v", id, r)
		}
		return nil
	}
}

const pairRuleBody = `  name     = "proxy-pair"
  type     = "resource-affinity"
  affinity = "negative"
  vms      = [7001, 7002]
  comment  = "one per node"`

// TestAccHARule_lifecycle: create, an empty plan, a change in place, import, and a rule
// deleted outside Terraform made again; the comment carries the mark after the user's text.
func TestAccHARule_lifecycle(t *testing.T) {
	env, c := haRuleEnv(t)
	cfg := haRuleConfig(env, pairRuleBody)
	var uid string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkRuleGone(env, "proxy-pair"),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("id"), knownvalue.StringExact("proxy-pair")),
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("vms"), knownvalue.SetExact([]knownvalue.Check{knownvalue.Int64Exact(7001), knownvalue.Int64Exact(7002)})),
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("comment"), knownvalue.StringExact("one per node")),
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("disabled"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("nodes"), knownvalue.Null()),
				},
				Check: func(s *terraform.State) error {
					uid = s.RootModule().Resources[haRuleAddr].Primary.Attributes["uid"]
					r, ok := simRule(env, "proxy-pair")
					want := "one per node\nproxy-operator-ha-rule=" + uid
					if !ok || uid == "" || r.Type != "resource-affinity" || r.Affinity != "negative" ||
						!slices.Equal(r.Resources, []string{"vm:7001", "vm:7002"}) || r.Comment != want {
						return fmt.Errorf("rule in Proxmox: %+v (uid %q), want comment %q", r, uid, want)
					}
					return nil
				},
			},
			{Config: cfg, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			{
				Config: haRuleConfig(env, strings.Replace(pairRuleBody, `"one per node"`, `"apart"`, 1)+"\n  disabled = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(haRuleAddr, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					if r, _ := simRule(env, "proxy-pair"); !r.Disable || r.Comment != "apart\nproxy-operator-ha-rule="+uid {
						return fmt.Errorf("rule after the update: %+v", r)
					}
					return nil
				},
			},
			{Config: cfg},
			{Config: cfg, ResourceName: haRuleAddr, ImportState: true, ImportStateId: "proxy-pair", ImportStateVerify: true},
			{
				// Deleted outside Terraform: the refresh drops it and the plan makes it again.
				PreConfig: func() {
					ctx, cancel := c.ctx()
					defer cancel()
					if err := c.api.DeleteHARule(ctx, "proxy-pair"); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(haRuleAddr, plancheck.ResourceActionCreate),
				}},
				Check: func(*terraform.State) error {
					if _, ok := simRule(env, "proxy-pair"); !ok {
						return fmt.Errorf("the rule was not made again")
					}
					return nil
				},
			},
		},
	})
}

// TestAccHARule_nodeAffinity: a strict node-affinity rule with priorities, read back as
// written; an unset strict stays null.
func TestAccHARule_nodeAffinity(t *testing.T) {
	env, _ := haRuleEnv(t)
	body := `  name   = "on-two"
  type   = "node-affinity"
  nodes  = { pve1 = 2, pve2 = 1 }
  strict = true
  vms    = [7001, 7002]`
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkRuleGone(env, "on-two"),
		Steps: []resource.TestStep{
			{
				Config: haRuleConfig(env, body),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("nodes"), knownvalue.MapExact(map[string]knownvalue.Check{
						"pve1": knownvalue.Int64Exact(2), "pve2": knownvalue.Int64Exact(1)})),
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("strict"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("affinity"), knownvalue.Null()),
				},
				Check: func(*terraform.State) error {
					if r, _ := simRule(env, "on-two"); !r.Strict || r.Nodes["pve1"] != 2 || r.Nodes["pve2"] != 1 {
						return fmt.Errorf("rule in Proxmox: %+v", r)
					}
					return nil
				},
			},
			{Config: haRuleConfig(env, body), ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			{
				Config: haRuleConfig(env, strings.Replace(body, "  strict = true\n", "", 1)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(haRuleAddr, tfjsonpath.New("strict"), knownvalue.Null()),
				},
			},
			{Config: haRuleConfig(env, strings.Replace(body, "  strict = true\n", "", 1)), PlanOnly: true},
		},
	})
}

// TestAccHARule_foreignRuleNeverChanged: a rule of the same id made by someone else fails
// the create, naming it, and is never written; a rule of this resource whose mark was
// removed by hand is reported by the refresh and refused by the update, with no write.
func TestAccHARule_foreignRuleNeverChanged(t *testing.T) {
	env, c := haRuleEnv(t)
	foreign := pvesim.HARuleState{ID: "proxy-pair", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:7001", "vm:7002"}, Comment: "the admin's"}
	if err := env.Sim.AddHARule(foreign); err != nil {
		t.Fatal(err)
	}
	ours := strings.Replace(pairRuleBody, `"proxy-pair"`, `"proxy-pair-2"`, 1)
	var markedComment string
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(s *terraform.State) error {
			if r, ok := simRule(env, "proxy-pair"); !ok || r.Comment != "the admin's" || r.Affinity != "negative" || !slices.Equal(r.Resources, foreign.Resources) {
				return fmt.Errorf("the foreign rule was changed: %+v", r)
			}
			if n, _ := ruleWrites(env, "proxy-pair"); n != 0 {
				return fmt.Errorf("%d writes to the foreign rule proxy-pair", n)
			}
			return checkRuleGone(env, "proxy-pair-2")(s)
		},
		Steps: []resource.TestStep{
			{
				Config:      haRuleConfig(env, pairRuleBody),
				ExpectError: regexp.MustCompile(`(?s)HA rule "proxy-pair" already exists.*was not made by this provider`),
			},
			{
				PreConfig: func() {
					if n, creates := ruleWrites(env, "proxy-pair"); n+creates != 0 {
						t.Fatalf("the refused create sent %d rule writes and %d creates", n, creates)
					}
				},
				Config: haRuleConfig(env, ours),
				Check: func(*terraform.State) error {
					r, _ := simRule(env, "proxy-pair-2")
					markedComment = r.Comment
					return nil
				},
			},
			{
				// The mark is removed by hand: the refresh warns and keeps the state, the
				// update is refused before any write.
				PreConfig: func() {
					ctx, cancel := c.ctx()
					defer cancel()
					setRuleComment(ctx, t, c, "proxy-pair-2", "taken over by hand")
					env.Sim.ResetRequestLog()
				},
				Config:      haRuleConfig(env, strings.Replace(ours, "negative", "positive", 1)),
				ExpectError: regexp.MustCompile(`(?s)HA rule "proxy-pair-2" is not shown to be this.*resource's`),
			},
			{
				// Nothing was written to it; the mark put back, the resource manages it again.
				PreConfig: func() {
					if n, _ := ruleWrites(env, "proxy-pair-2"); n != 0 {
						t.Fatalf("%d rule writes to a rule without the resource's mark", n)
					}
					if r, _ := simRule(env, "proxy-pair-2"); r.Comment != "taken over by hand" || r.Affinity != "negative" {
						t.Fatalf("the unmarked rule was changed: %+v", r)
					}
					ctx, cancel := c.ctx()
					defer cancel()
					setRuleComment(ctx, t, c, "proxy-pair-2", markedComment)
				},
				Config: haRuleConfig(env, ours),
			},
		},
	})
}

// setRuleComment rewrites a rule's comment out of band, as an admin would.
func setRuleComment(ctx context.Context, t *testing.T, c *cluster, id, comment string) {
	t.Helper()
	r, err := c.api.HARule(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	p := haRuleParamsOf(r)
	p.Comment = comment
	if err := c.api.UpdateHARule(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// haRuleParamsOf is the update that writes r as it is.
func haRuleParamsOf(r pveapi.HARule) pveapi.HARuleParams {
	p := pveapi.HARuleParams{Rule: r.Rule, Resources: r.Resources, Affinity: r.Affinity, Nodes: r.Nodes, Comment: r.Comment, Digest: r.Digest}
	if r.Type == "node-affinity" {
		p.Strict = pveapi.BoolPtr(bool(r.Strict))
	}
	return p
}

// TestAccHARule_importRefusesForeign: a rule made in the web UI cannot be imported.
func TestAccHARule_importRefusesForeign(t *testing.T) {
	env, _ := haRuleEnv(t)
	if err := env.Sim.AddHARule(pvesim.HARuleState{ID: "proxy-pair", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:7001", "vm:7002"}}); err != nil {
		t.Fatal(err)
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: haRuleConfig(env, pairRuleBody), ResourceName: haRuleAddr, ImportState: true, ImportStateId: "proxy-pair",
			ExpectError: regexp.MustCompile(`(?s)HA rule "proxy-pair" was not made by this provider`),
		}},
	})
}

// TestAccHARule_validation: the plan refuses, on the attribute, what Proxmox would refuse
// or what does not fit the rule's type, before any request.
func TestAccHARule_validation(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	for _, tc := range []struct{ body, want string }{
		{`name = "p"` + "\n" + `type = "resource-affinity"` + "\n" + `affinity = "negative"` + "\n" + `vms = [100, 101]`, `Attribute name must start with a letter`},
		{`name = "pair"` + "\n" + `type = "resource-affinity"` + "\n" + `vms = [100, 101]`, `(?s)Missing affinity.*needs affinity`},
		{`name = "pair"` + "\n" + `type = "resource-affinity"` + "\n" + `affinity = "negative"` + "\n" + `vms = [100]`, `(?s)at least two VMs.*vms has 1`},
		{`name = "pair"` + "\n" + `type = "resource-affinity"` + "\n" + `affinity = "negative"` + "\n" + `nodes = { pve1 = 1 }` + "\n" + `vms = [100, 101]`, `(?s)nodes applies only to type = "node-affinity"`},
		{`name = "pair"` + "\n" + `type = "resource-affinity"` + "\n" + `affinity = "negative"` + "\n" + `strict = true` + "\n" + `vms = [100, 101]`, `(?s)strict applies only to type = "node-affinity"`},
		{`name = "pair"` + "\n" + `type = "node-affinity"` + "\n" + `affinity = "negative"` + "\n" + `nodes = { pve1 = 1 }` + "\n" + `vms = [100]`, `(?s)affinity applies only to type = "resource-affinity"`},
		{`name = "pair"` + "\n" + `type = "node-affinity"` + "\n" + `vms = [100]`, `(?s)Missing nodes`},
		{`name = "pair"` + "\n" + `type = "node-affinity"` + "\n" + `nodes = { pve1 = -1 }` + "\n" + `vms = [100]`, `(?s)nodes.*must be at least 0`},
		{`name = "pair"` + "\n" + `type = "node-affinity"` + "\n" + `nodes = { pve1 = 1 }` + "\n" + `vms = [99]`, `(?s)vms.*between 100 and 999999999`},
		{`name = "pair"` + "\n" + `type = "resource-affinity"` + "\n" + `affinity = "negative"` + "\n" + `vms = [100, 101]` + "\n" + `comment = "x\nproxy-operator-ha-rule=abc"`, `(?s)comment may not contain`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: haRuleConfig(env, tc.body), PlanOnly: true, ExpectError: regexp.MustCompile(tc.want)}},
			})
		})
	}
}

// TestAccHARule_preflightNamesPrivilege: a token without Sys.Console on / fails the plan,
// naming the privilege and the path, before any rule request.
func TestAccHARule_preflightNamesPrivilege(t *testing.T) {
	env, _ := haRuleEnv(t)
	env.Sim.Deny("/", "Sys.Console")
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:      haRuleConfig(env, pairRuleBody),
			ExpectError: regexp.MustCompile(`(?s)Unable to plan HA.*lacks Sys.Console on / \(to\s+create, change and delete HA rules`),
		}},
	})
	for _, r := range env.Sim.RequestLog() {
		if strings.HasPrefix(r.Path, "/cluster/ha/rules") {
			t.Fatalf("the refused plan sent %s %s", r.Method, r.Path)
		}
	}
}

// TestAccHealthDataSource_ha: proxy_health's ha says whether HA is usable: the privileges on
// / and the quorum.
func TestAccHealthDataSource_ha(t *testing.T) {
	env, _ := haRuleEnv(t)
	ha := func(attr string, v knownvalue.Check) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(healthDS, tfjsonpath.New("ha").AtMapKey(attr), v)
	}
	cfg := env.ProviderConfig("") + healthConfig("")
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg, ConfigStateChecks: []statecheck.StateCheck{
				ha("usable", knownvalue.Bool(true)), ha("quorate", knownvalue.Bool(true)),
				ha("missing_privileges", knownvalue.ListExact([]knownvalue.Check{})),
			}},
			{
				PreConfig: func() { env.Sim.Deny("/", "Sys.Console") },
				Config:    cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					ha("usable", knownvalue.Bool(false)), ha("quorate", knownvalue.Bool(true)),
					ha("missing_privileges", knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("Sys.Console on /")})),
					ha("message", knownvalue.StringRegexp(regexp.MustCompile(`Sys.Console on / \(to create, change and delete`))),
				},
			},
			{
				// Two of three nodes down: no quorum, and Proxmox refuses HA changes.
				PreConfig: func() {
					env.Sim.Allow("/", "Sys.Console")
					for _, n := range []string{"pve2", "pve3"} {
						if err := env.Sim.SetNodeDown(n, true); err != nil {
							t.Fatal(err)
						}
					}
				},
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					ha("usable", knownvalue.Bool(false)), ha("quorate", knownvalue.Bool(false)),
					ha("message", knownvalue.StringRegexp(regexp.MustCompile(`not quorate`))),
				},
			},
		},
	})
}

// TestAccHARule_unmanagedVMsNamed: VMs that are not HA resources fail the create with
// Proxmox's reason and what to do (set ha on their proxy_vm); nothing is left.
func TestAccHARule_unmanagedVMsNamed(t *testing.T) {
	env, _ := haRuleEnv(t)
	body := strings.Replace(pairRuleBody, "[7001, 7002]", "[7001, 7003]", 1)
	if err := env.Sim.AddVM(pvesim.VMSpec{VMID: 7003, Node: "pve3", Power: "running"}); err != nil {
		t.Fatal(err)
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkRuleGone(env, "proxy-pair"),
		Steps: []resource.TestStep{{
			Config:      haRuleConfig(env, body),
			ExpectError: regexp.MustCompile(`(?s)vm:7003 is not an HA\s+resource.*set ha\s+on their proxy_vm`),
		}},
	})
}

// TestAccProxyVM_haPreflightNamesPrivilege: a proxy_vm with ha and a token without
// Sys.Console on / fails at plan, naming the privilege and the path; nothing is cloned. The
// same VM without ha plans.
func TestAccProxyVM_haPreflightNamesPrivilege(t *testing.T) {
	needVMHA(t)
	env, _ := multiNodeEnv(t, "pve1", "pve2", "pve3")
	env.Sim.Deny("/", "Sys.Console")
	name := vmName("hapre")
	body := "  machine_type = \"small\"\n  cloud_init = " + hclString(cloudInit("hapre"))
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      vmProviderConfig(env, "") + vmResource(env, name, body+"\n  ha = {}"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Unable to plan HA.*Proxy VM "` + name + `".*lacks Sys.Console on / \(to\s+create, change and delete HA rules`),
			},
			{Config: vmProviderConfig(env, "") + vmResource(env, name, body), PlanOnly: true, ExpectNonEmptyPlan: true},
		},
	})
}
