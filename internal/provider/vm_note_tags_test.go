package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// checkVMConfig checks the VM's Proxmox config: its tags, that the description starts with
// the mark (managed, the state's uid, made by this provider) and holds note after it, and
// the protection flag.
func checkVMConfig(c *cluster, tags, note string, protected bool) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid, err := vmidOf(s, vmAddr)
		if err != nil {
			return err
		}
		cfg := c.config(vmid)
		uid := s.RootModule().Resources[vmAddr].Primary.Attributes["uid"]
		desc := cfg["description"]
		mark := proxmox.ParseMark(desc)
		switch {
		case cfg["tags"] != tags:
			return fmt.Errorf("config tags %q, want %q", cfg["tags"], tags)
		case !strings.HasPrefix(desc, proxmox.MarkKeyManaged+"=true\n") || !mark.Managed || mark.UID != uid || mark.Creating:
			return fmt.Errorf("description %q: the mark is not first, or not this VM's finished mark (uid %s)", desc, uid)
		case proxmox.ParseMarkExtra(desc).CreatedBy != proxmox.CreatedByProvider:
			return fmt.Errorf("description %q lost the created-by line", desc)
		case proxmox.NoteOf(desc) != note:
			return fmt.Errorf("description %q: note %q, want %q", desc, proxmox.NoteOf(desc), note)
		case (cfg["protection"] == "1") != protected:
			return fmt.Errorf("config protection %q, want %v", cfg["protection"], protected)
		}
		return nil
	}
}

// TestAccProxyVM_tagsDescriptionProtection: user tags and a note beside the mark, and the
// protection flag, at create, unchanged on the next plan, changed in place, read back by an
// import; a destroy of the protected VM is refused before anything is touched and says how
// to proceed; protection = false applied first lets the destroy remove it.
func TestAccProxyVM_tagsDescriptionProtection(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("notes")
	base := vmProviderConfig(env, "")
	cfg := func(body string) string { return base + vmResource(env, name, "  machine_type = \"small\"\n"+body) }
	first := cfg(`
  tags        = ["team-a", "edge"]
  description = "Egress for team A.\n\nOwner: netops"
  protection  = true`)
	second := cfg(`
  tags        = ["edge", "v2.1+rc"]
  description = "Egress for team A and B."
  protection  = true`)
	unprotected := cfg(`
  tags        = ["edge", "v2.1+rc"]
  description = "Egress for team A and B."`)
	vmid := statecheck.CompareValue(compare.ValuesSame())
	tagSet := func(tags ...string) knownvalue.Check {
		checks := make([]knownvalue.Check, len(tags))
		for i, tag := range tags {
			checks[i] = knownvalue.StringExact(tag)
		}
		return knownvalue.SetExact(checks)
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: first,
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("tags"), tagSet("edge", "team-a")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("description"), knownvalue.StringExact("Egress for team A.\n\nOwner: netops")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("protection"), knownvalue.Bool(true)),
				},
				Check: checkVMConfig(c, "edge;proxy_operator;team-a", "Egress for team A.\n\nOwner: netops", true),
			},
			{
				Config:           first,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config:      cfg(`  tags = ["Edge"]`),
				ExpectError: regexp.MustCompile(`(?s)tags.*must be a Proxmox tag`),
			},
			{
				Config:      cfg(`  tags = ["proxy_operator"]`),
				ExpectError: regexp.MustCompile(`(?s)tags.*proxy_operator`),
			},
			{
				Config:      cfg(`  description = "note\nproxy-operator-managed=false"`),
				ExpectError: regexp.MustCompile(`(?s)description holds a line of the form proxy-operator-`),
			},
			{
				Config:      cfg(`  description = "note\n"`),
				ExpectError: regexp.MustCompile(`(?s)description ends with whitespace or a newline`),
			},
			{
				Config: second,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()), // no restart
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("tags"), tagSet("edge", "v2.1+rc")),
				},
				Check: checkVMConfig(c, "edge;proxy_operator;v2.1+rc", "Egress for team A and B.", true),
			},
			{
				ResourceName:            vmAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: importIgnore,
			},
			{
				// The destroy of a protected VM is refused before the stop and the seed delete.
				Config:      second,
				Destroy:     true,
				ExpectError: regexp.MustCompile(`(?s)Unable to delete proxy VM.*protection\s+flag\s+set.*set\s+protection\s+=\s+false.*Nothing\s+was\s+changed`),
			},
			{
				Config:           second,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(c.checkOneVM(vmAddr, name), func(*terraform.State) error {
					seeds, err := c.seeds(name)
					if err != nil {
						return fmt.Errorf("seed ISOs after the refused destroy: %w", err)
					}
					if len(seeds) != 1 {
						return fmt.Errorf("seed ISOs after the refused destroy: %v, want one", seeds)
					}
					return nil
				}),
			},
			{
				Config: unprotected,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
				}},
				Check: checkVMConfig(c, "edge;proxy_operator;v2.1+rc", "Egress for team A and B.", false),
			},
		},
	})
}

// TestVMNoteTags_specChangesRead: tags, note and protection go into a create, into an
// update only when they change, and are read back without the managed tag.
func TestVMNoteTags_specChangesRead(t *testing.T) {
	tags := func(v ...string) types.Set {
		var e []attr.Value
		for _, s := range v {
			e = append(e, types.StringValue(s))
		}
		return types.SetValueMust(types.StringType, e)
	}
	n := vmNoteTags{Tags: tags("web"), Description: types.StringValue("hello"), Protection: types.BoolValue(true)}
	var s proxmox.Spec
	n.spec(intoSpec(&s))
	if s.Tags == nil || len(*s.Tags) != 1 || (*s.Tags)[0] != "web" || s.Note == nil || *s.Note != "hello" || !s.Protection {
		t.Errorf("spec %+v", s)
	}
	var c proxmox.Changes
	if facetChanges(&n, proxyVMModel{vmNoteTags: n}, &c) || c.Tags != nil || c.Note != nil || c.Protection != nil {
		t.Errorf("no change: %+v", c)
	}
	prior := vmNoteTags{Tags: tags(), Description: types.StringValue(""), Protection: types.BoolValue(false)}
	if !facetChanges(&n, proxyVMModel{vmNoteTags: prior}, &c) || c.Tags == nil || c.Note == nil || c.Protection == nil || !*c.Protection {
		t.Errorf("changes %+v", c)
	}
	var r vmNoteTags
	r.read(onVM(proxmox.VM{Tags: []string{proxmox.ManagedTag, "web"}, Note: "hello", Protected: true}))
	if !r.Tags.Equal(tags("web")) || r.Description.ValueString() != "hello" || !r.Protection.ValueBool() {
		t.Errorf("read %+v", r)
	}
	u := vmNoteTags{Tags: types.SetUnknown(types.StringType), Description: types.StringUnknown(), Protection: types.BoolUnknown()}
	u.nullUnknown()
	if !u.Tags.IsNull() || !u.Description.IsNull() || !u.Protection.IsNull() {
		t.Errorf("partial state %+v", u)
	}
}
