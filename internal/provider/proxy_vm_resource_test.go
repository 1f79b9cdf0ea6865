package provider

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/acctest"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The proxy_vm acceptance tests run against a fresh simulator each (or a real cluster, see
// provider_test.go). Out-of-band changes (a VM stopped or destroyed outside Terraform, a
// foreign VM) go through the Proxmox API itself, so they work on both targets; the
// simulator is only read for what a real cluster cannot show the test (the seed the guest
// booted with), and only when env.Sim is set.

const vmAddr = "proxy_vm.test"

// vmName is a name unique enough for a shared real cluster.
func vmName(prefix string) string {
	return "tfacc-" + prefix + "-" + acctest.RandStringFromCharSet(6, "abcdefghijklmnopqrstuvwxyz0123456789")
}

// vmProviderConfig is the environment's provider block with a one-template catalogue, so
// that an import resolves image unambiguously, plus extra.
func vmProviderConfig(env *testEnv, extra string) string {
	key := env.TemplateKey()
	if _, ok := env.Templates["debian-13"]; ok {
		key = "debian-13"
	}
	return env.ProviderConfig(fmt.Sprintf("  templates = { %q = %d }\n%s", key, env.Templates[key], extra))
}

// imageKey is the catalogue key vmProviderConfig renders.
func imageKey(env *testEnv) string {
	if _, ok := env.Templates["debian-13"]; ok {
		return "debian-13"
	}
	return env.TemplateKey()
}

// vmResource renders proxy_vm.test with name, the catalogue image, body, and timeouts
// that make a hang fail the test in minutes rather than at go test's deadline.
func vmResource(env *testEnv, name, body string) string {
	return fmt.Sprintf(`
resource "proxy_vm" "test" {
  name  = %q
  image = %q
%s
  timeouts {
    create = %q
    update = %q
    delete = %q
  }
}
`, name, imageKey(env), body, testTimeout(env), testTimeout(env), testTimeout(env))
}

// vmResourceBare is vmResource without the timeouts block (which an import cannot read
// back, so an import plan would record it in place).
func vmResourceBare(env *testEnv, name, body string) string {
	return fmt.Sprintf("\nresource \"proxy_vm\" \"test\" {\n  name  = %q\n  image = %q\n%s\n}\n", name, imageKey(env), body)
}

// testTimeout bounds one operation: the simulator runs a create in well under a second.
func testTimeout(env *testEnv) string {
	if env.Sim != nil {
		return "2m"
	}
	return "15m"
}

func cloudInit(sentinel string) string {
	return "#cloud-config\n# " + sentinel + "\npackages: [squid]\n"
}

func hclString(s string) string { return strconv.Quote(s) }

// cluster does the out-of-band changes and inspections of the tests through the API.
type cluster struct {
	t   *testing.T
	env *testEnv
	api pveapi.API
}

func newCluster(t *testing.T, env *testEnv) *cluster {
	t.Helper()
	opts := pveapi.Options{Endpoint: env.Endpoint, Token: env.Token, CAPEM: env.CAPEM, CAFile: env.CAFile, RequestTimeout: harnessRequestTimeout}
	if env.Sim == nil {
		opts.Token = os.Getenv(envAPIToken)
		opts.Insecure = os.Getenv(envInsecure) == "true" || os.Getenv(envInsecure) == "1"
	}
	c, err := pveapi.New(opts)
	if err != nil {
		t.Fatalf("API client: %v", err)
	}
	return &cluster{t: t, env: env, api: c}
}

func (c *cluster) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Minute)
}

func (c *cluster) resources() ([]pveapi.Resource, error) {
	ctx, cancel := c.ctx()
	defer cancel()
	return c.api.ClusterResources(ctx)
}

func (c *cluster) resource(vmid int) (pveapi.Resource, error) {
	res, err := c.resources()
	if err != nil {
		return pveapi.Resource{}, err
	}
	for _, r := range res {
		if r.VMID == vmid {
			return r, nil
		}
	}
	return pveapi.Resource{}, fmt.Errorf("VMID %d is not in the cluster", vmid)
}

// vmsNamed returns the VMIDs of the non-template VMs called name.
func (c *cluster) vmsNamed(name string) ([]int, error) {
	res, err := c.resources()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, r := range res {
		if r.Type == "qemu" && r.Template == 0 && r.Name == name {
			out = append(out, r.VMID)
		}
	}
	return out, nil
}

// seeds returns the seed ISO volumes of name on every node.
// uuidV4RE matches a random (version 4) UUID.
var uuidV4RE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// isSeedOf reports whether volid is a seed ISO of VM name: <name>-<uid>-seed.iso (one per
// VM) or <name>-seed.iso (the proxy operator's).
func isSeedOf(volid, name string) bool {
	_, file, ok := strings.Cut(volid, ":iso/")
	if !ok {
		return false
	}
	if file == name+"-seed.iso" {
		return true
	}
	m := seedOfRE.FindStringSubmatch(file)
	return m != nil && m[1] == name
}

// seedOfRE matches <name>-<uid>-seed.iso and a later generation's <name>-<uid>-<g>-seed.iso.
var seedOfRE = regexp.MustCompile(`^(.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:-[1-9][0-9]*)?-seed\.iso$`)

// seeds lists the seed ISOs of VM name on every node.
func (c *cluster) seeds(name string) ([]string, error) {
	var out []string
	for _, node := range c.env.Nodes {
		ctx, cancel := c.ctx()
		vols, err := c.api.StorageContent(ctx, node, c.env.ISOStorage, "iso")
		cancel()
		if err != nil {
			return nil, err
		}
		for _, v := range vols {
			if isSeedOf(v.VolID, name) {
				out = append(out, node+"/"+v.VolID)
			}
		}
	}
	return out, nil
}

func (c *cluster) wait(node, upid string) error {
	ctx, cancel := c.ctx()
	defer cancel()
	for {
		st, err := c.api.TaskStatus(ctx, node, upid)
		if err != nil {
			return err
		}
		if st.Status == "stopped" {
			if st.ExitStatus != "OK" && !strings.HasPrefix(st.ExitStatus, "WARNINGS") {
				return fmt.Errorf("task %s: %s", upid, st.ExitStatus)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop stops a VM out of band.
func (c *cluster) stop(vmid int) {
	c.t.Helper()
	r, err := c.resource(vmid)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	upid, err := c.api.Stop(ctx, r.Node, vmid)
	if err == nil {
		err = c.wait(r.Node, upid)
	}
	if err != nil {
		c.t.Fatalf("stopping VMID %d: %v", vmid, err)
	}
}

// start starts a VM out of band.
func (c *cluster) start(vmid int) {
	c.t.Helper()
	r, err := c.resource(vmid)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	upid, err := c.api.Start(ctx, r.Node, vmid)
	if err == nil {
		err = c.wait(r.Node, upid)
	}
	if err != nil {
		c.t.Fatalf("starting VMID %d: %v", vmid, err)
	}
}

// destroy stops and destroys a VM out of band (its seed ISO stays, as it would).
func (c *cluster) destroy(vmid int) {
	c.t.Helper()
	r, err := c.resource(vmid)
	if err != nil {
		c.t.Fatal(err)
	}
	if r.Status == "running" {
		c.stop(vmid)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	upid, err := c.api.Destroy(ctx, r.Node, vmid)
	if err == nil {
		err = c.wait(r.Node, upid)
	}
	if err != nil {
		c.t.Fatalf("destroying VMID %d: %v", vmid, err)
	}
}

// setConfig writes config keys out of band.
func (c *cluster) setConfig(vmid int, params map[string]string) {
	c.t.Helper()
	r, err := c.resource(vmid)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	if err := c.api.SetVMConfig(ctx, r.Node, vmid, params); err != nil {
		c.t.Fatalf("config of VMID %d: %v", vmid, err)
	}
}

// config reads a VM's config.
func (c *cluster) config(vmid int) map[string]string {
	c.t.Helper()
	r, err := c.resource(vmid)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	cfg, err := c.api.VMConfig(ctx, r.Node, vmid)
	if err != nil {
		c.t.Fatalf("config of VMID %d: %v", vmid, err)
	}
	return cfg
}

// foreignVM clones the test template onto vmid with name and no mark, as someone else
// would; a real cluster gets it destroyed at the end of the test.
func (c *cluster) foreignVM(vmid int, name string) {
	c.t.Helper()
	tmpl := c.env.Templates[imageKey(c.env)]
	r, err := c.resource(tmpl)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	upid, err := c.api.Clone(ctx, r.Node, tmpl, pveapi.CloneParams{NewID: vmid, Name: name, Description: "made by hand"})
	if err == nil {
		err = c.wait(r.Node, upid)
	}
	if err != nil {
		c.t.Fatalf("cloning a foreign VM onto %d: %v", vmid, err)
	}
	if c.env.Sim == nil {
		c.t.Cleanup(func() { c.destroy(vmid) })
	}
}

// vmidOf reads the vmid of addr from a state.
func vmidOf(s *terraform.State, addr string) (int, error) {
	rs, ok := s.RootModule().Resources[addr]
	if !ok {
		return 0, fmt.Errorf("%s is not in the state", addr)
	}
	return strconv.Atoi(rs.Primary.Attributes["vmid"])
}

// checkGone is a CheckDestroy: no VM and no seed ISO of names remain.
func (c *cluster) checkGone(names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, name := range names {
			vms, err := c.vmsNamed(name)
			if err != nil {
				return err
			}
			if len(vms) > 0 {
				return fmt.Errorf("VM %s still exists after destroy: VMIDs %v", name, vms)
			}
			seeds, err := c.seeds(name)
			if err != nil {
				return err
			}
			if len(seeds) > 0 {
				return fmt.Errorf("seed ISO of %s still exists after destroy: %v", name, seeds)
			}
		}
		return nil
	}
}

// checkOneVM checks that exactly one VM is called name, at the state's VMID.
// With addr "" any VMID will do.
func (c *cluster) checkOneVM(addr, name string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		vmid := 0
		if addr != "" {
			var err error
			if vmid, err = vmidOf(s, addr); err != nil {
				return err
			}
		}
		vms, err := c.vmsNamed(name)
		if err != nil {
			return err
		}
		if len(vms) != 1 || (addr != "" && vms[0] != vmid) {
			return fmt.Errorf("VMs named %s: %v, want exactly [%d]", name, vms, vmid)
		}
		return nil
	}
}

// checkSeed checks (simulator only) that the guest booted with userData as its user-data.
func checkSeed(env *testEnv, addr, userData string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if env.Sim == nil {
			return nil
		}
		vmid, err := vmidOf(s, addr)
		if err != nil {
			return err
		}
		seed, ok := env.Sim.GuestSeed(vmid)
		if !ok {
			return fmt.Errorf("VMID %d booted without a seed", vmid)
		}
		if string(seed.UserData) != userData {
			return fmt.Errorf("VMID %d booted with user-data %q, want %q", vmid, seed.UserData, userData)
		}
		if !strings.Contains(string(seed.MetaData), s.RootModule().Resources[addr].Primary.Attributes["name"]) {
			return fmt.Errorf("meta-data %q does not name the VM", seed.MetaData)
		}
		return nil
	}
}

func importIDByVMID(addr string) resource.ImportStateIdFunc {
	return func(s *terraform.State) (string, error) {
		vmid, err := vmidOf(s, addr)
		return strconv.Itoa(vmid), err
	}
}

var importIgnore = []string{"cloud_init", "timeouts", "wait_for_ip"}

// TestAccProxyVM_basic creates a VM, checks its state and the seed the guest booted with,
// proves the next plan is empty, imports it by each ID form, and destroys it.
func TestAccProxyVM_basic(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("basic")
	ud := cloudInit("sentinel-" + acctest.RandString(10))
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `
  machine_type = "small"
  cloud_init   = `+hclString(ud))
	vmid := statecheck.CompareValue(compare.ValuesSame())

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("uid")),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact(env.Nodes[0])),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(1)),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("vmid")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("id"), knownvalue.StringRegexp(regexp.MustCompile(`^vms/[1-9][0-9]{2,8}/`+name+`$`))),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("uid"), knownvalue.StringRegexp(uuidV4RE)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.StringRegexp(regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`))),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("mac_address"), knownvalue.StringRegexp(regexp.MustCompile(`^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$`))),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("created_at"), knownvalue.StringRegexp(regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`))),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("node"), knownvalue.StringExact(env.Nodes[0])),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("template_vmid"), knownvalue.Int64Exact(int64(env.Templates[imageKey(env)]))),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("memory_mib"), knownvalue.Int64Exact(512)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("disk_gib"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("agent_enabled"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("start_on_boot"), knownvalue.Bool(true)),
					statecheck.ExpectSensitiveValue(vmAddr, tfjsonpath.New("cloud_init")),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkSeed(env, vmAddr, ud),
					c.checkOneVM(vmAddr, name),
					func(s *terraform.State) error {
						vmid, _ := vmidOf(s, vmAddr)
						seeds, err := c.seeds(name)
						if err != nil {
							return fmt.Errorf("seed ISOs of %s: %w", name, err)
						}
						if len(seeds) != 1 {
							return fmt.Errorf("seed ISOs of %s: %v, want one", name, seeds)
						}
						if cfg := c.config(vmid); !strings.Contains(cfg["tags"], "proxy_operator") || cfg["onboot"] != "1" {
							return fmt.Errorf("config tags %q onboot %q", cfg["tags"], cfg["onboot"])
						}
						return nil
					},
				),
			},
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid"))},
			},
			{
				ResourceName:            vmAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: importIgnore,
			},
			{
				ResourceName:            vmAddr,
				ImportState:             true,
				ImportStateIdFunc:       importIDByVMID(vmAddr),
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: importIgnore,
			},
			{
				ResourceName:            vmAddr,
				ImportState:             true,
				ImportStateId:           name,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: importIgnore,
				// The template is identified (by its meta ctime), not guessed.
				ImportStateCheck: func(is []*terraform.InstanceState) error {
					want := strconv.Itoa(env.Templates[imageKey(env)])
					if len(is) != 1 || is[0].Attributes["template_vmid"] != want || is[0].Attributes["image"] != imageKey(env) {
						return fmt.Errorf("imported %v, want template_vmid %s and image %s", is, want, imageKey(env))
					}
					return nil
				},
			},
			{
				// An import block with the same configuration: the only change is
				// recording cloud_init, which cannot be read back, in place.
				ResourceName:       vmAddr,
				ImportState:        true,
				ImportStateKind:    resource.ImportBlockWithID,
				ExpectNonEmptyPlan: true,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("vmid"), knownvalue.NotNull()),
				}},
			},
		},
	})
}

// TestAccProxyVM_importBlockEmptyPlan imports a VM made without cloud_init with an import
// block and the configuration that made it: the plan is empty. The catalogue holds every
// template of the environment (two on the simulator), so the import has to identify the
// template, not guess it.
func TestAccProxyVM_importBlockEmptyPlan(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("impblk")
	cfg := env.ProviderConfig("") + vmResourceBare(env, name, `
  cores      = 2
  memory_mib = 768
  disk_gib   = 10`)
	identified := []plancheck.PlanCheck{
		plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionNoop),
		plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("template_vmid"), knownvalue.Int64Exact(int64(env.Templates[imageKey(env)]))),
		plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("image"), knownvalue.StringExact(imageKey(env))),
	}

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{Config: cfg},
			{
				ResourceName:     vmAddr,
				ImportState:      true,
				ImportStateKind:  resource.ImportBlockWithID,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: identified},
			},
			{
				ResourceName:     vmAddr,
				ImportState:      true,
				ImportStateKind:  resource.ImportBlockWithID,
				ImportStateId:    name,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: identified},
			},
			{
				ResourceName:            vmAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "wait_for_ip"},
			},
		},
	})
}

// TestAccProxyVM_importUnreadValues imports a VM whose template cannot be identified (its
// meta no longer carries the template's ctime, as after a restore or a hand edit) with an
// import block, together with its cloud_init: both are recorded in place, never a
// replacement; afterwards a cloud_init change replaces the VM as usual.
func TestAccProxyVM_importUnreadValues(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("rewrites the VM's meta, which only root@pam (not an API token) may do")
	}
	c := newCluster(t, env)
	name := vmName("unread")
	key := imageKey(env)
	provider := env.ProviderConfig(fmt.Sprintf("  templates = { %q = %d, \"not-this-one\" = 99998 }\n", key, env.Templates[key]))
	body := func(ud string) string {
		return vmResourceBare(env, name, "  machine_type = \"small\"\n  cloud_init = "+hclString(cloudInit(ud)))
	}
	removed := "\nremoved {\n  from = proxy_vm.test\n  lifecycle {\n    destroy = false\n  }\n}\n"
	var vmid int

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: provider + body("one"),
				Check: func(s *terraform.State) (err error) {
					vmid, err = vmidOf(s, vmAddr)
					return err
				},
			},
			{
				// Forget it without destroying it, as a lost state would, and make its
				// template unidentifiable.
				Config: provider + removed,
				Check: func(*terraform.State) error {
					// meta is written by root@pam alone (qemu-server update_vm_api: "only root can
					// set 'meta' config" for an API token, root's included): the simulator's hand.
					if err := env.Sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{"meta": "creation-qemu=11.0.3,ctime=1000000001"}}); err != nil {
						return err
					}
					return c.checkOneVM("", name)(nil)
				},
			},
			{
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("template_vmid"), knownvalue.Int64Exact(int64(env.Templates[key]))),
				}},
				Config: provider + body("one") + fmt.Sprintf("\nimport {\n  to = proxy_vm.test\n  id = %q\n}\n", name),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("image"), knownvalue.StringExact(key)),
				},
				Check: func(s *terraform.State) error {
					if got, _ := vmidOf(s, vmAddr); got != vmid {
						return fmt.Errorf("imported VMID %d, want %d", got, vmid)
					}
					return c.checkOneVM(vmAddr, name)(s)
				},
			},
			{
				Config: provider + body("two"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionReplace),
				}},
				Check: checkSeed(env, vmAddr, cloudInit("two")),
			},
		},
	})
}

// TestAccProxyVM_updateInPlace changes cores and memory (restart), grows the disk, moves
// the NIC to a VLAN and turns start_on_boot off, all on the same VMID.
func TestAccProxyVM_updateInPlace(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("upd")
	vmid := statecheck.CompareValue(compare.ValuesSame())
	uid := statecheck.CompareValue(compare.ValuesSame())
	base := vmProviderConfig(env, "")
	same := func() []statecheck.StateCheck {
		return []statecheck.StateCheck{
			vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
			uid.AddStateValue(vmAddr, tfjsonpath.New("uid")),
		}
	}
	var mac string
	update := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate)}}

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config:            base + vmResource(env, name, `  machine_type = "small"`),
				ConfigStateChecks: same(),
				Check: func(s *terraform.State) error {
					mac = s.RootModule().Resources[vmAddr].Primary.Attributes["mac_address"]
					return nil
				},
			},
			{
				Config: base + vmResource(env, name, `
  machine_type  = "small"
  cores         = 2
  memory_mib    = 1024
  start_on_boot = false`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")), // restart
				}},
				ConfigStateChecks: append(same(),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("memory_mib"), knownvalue.Int64Exact(1024)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("start_on_boot"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
				),
				Check: func(s *terraform.State) error {
					id, _ := vmidOf(s, vmAddr)
					if cfg := c.config(id); cfg["cores"] != "2" || cfg["memory"] != "1024" || cfg["onboot"] == "1" {
						return fmt.Errorf("config cores %q memory %q onboot %q", cfg["cores"], cfg["memory"], cfg["onboot"])
					}
					return nil
				},
			},
			{
				Config: base + vmResource(env, name, `
  machine_type  = "small"
  cores         = 2
  memory_mib    = 1024
  start_on_boot = false
  disk_gib      = 12
  vlan_tag      = 5`),
				ConfigPlanChecks: update,
				ConfigStateChecks: append(same(),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("disk_gib"), knownvalue.Int64Exact(12)),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("vlan_tag"), knownvalue.Int64Exact(5)),
				),
				Check: func(s *terraform.State) error {
					id, _ := vmidOf(s, vmAddr)
					net0 := c.config(id)["net0"]
					if !strings.Contains(net0, "tag=5") || !strings.Contains(strings.ToUpper(net0), strings.ToUpper(mac)) {
						return fmt.Errorf("net0 %q: want tag=5 and the MAC %s kept", net0, mac)
					}
					return nil
				},
			},
			{
				// Back to the catalogue's sizes: config values go, the machine type's come back.
				Config:            base + vmResource(env, name, "  machine_type = \"small\"\n  disk_gib = 12\n  vlan_tag = 5"),
				ConfigPlanChecks:  update,
				ConfigStateChecks: append(same(), statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("cores"), knownvalue.Int64Exact(1))),
			},
		},
	})
}

// TestAccProxyVM_replace proves which changes replace the VM: cloud_init and a smaller disk.
func TestAccProxyVM_replace(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("repl")
	base := vmProviderConfig(env, "")
	ud1, ud2 := cloudInit("first"), cloudInit("second")
	replace := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionReplace)}}

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: base + vmResource(env, name, "  machine_type = \"small\"\n  disk_gib = 10\n  cloud_init = "+hclString(ud1)),
				Check:  checkSeed(env, vmAddr, ud1),
			},
			{
				Config:           base + vmResource(env, name, "  machine_type = \"small\"\n  disk_gib = 10\n  cloud_init = "+hclString(ud2)),
				ConfigPlanChecks: replace,
				Check:            resource.ComposeAggregateTestCheckFunc(checkSeed(env, vmAddr, ud2), c.checkOneVM(vmAddr, name)),
			},
			{
				Config:            base + vmResource(env, name, "  machine_type = \"small\"\n  disk_gib = 8\n  cloud_init = "+hclString(ud2)),
				ConfigPlanChecks:  replace,
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("disk_gib"), knownvalue.Int64Exact(8))},
				Check:             c.checkOneVM(vmAddr, name),
			},
		},
	})
}

// TestAccProxyVM_driftDestroyed: a VM destroyed outside Terraform is kept in the state
// marked deleted and planned for replacement (decision: drift-gone); the apply deletes the
// seed ISO the destroyed VM left, then recreates it with a uid and seed ISO of its own.
func TestAccProxyVM_driftDestroyed(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("gone")
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)
	var vmid int
	var oldSeed string

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(s *terraform.State) (err error) {
					vmid, err = vmidOf(s, vmAddr)
					return err
				},
			},
			{
				PreConfig: func() {
					oldSeed, _, _ = strings.Cut(c.config(vmid)["ide2"], ",")
					c.destroy(vmid)
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
				},
				Check: func(s *terraform.State) error {
					if err := c.checkOneVM(vmAddr, name)(s); err != nil {
						return err
					}
					seeds, err := c.seeds(name)
					if err != nil {
						return err
					}
					if len(seeds) != 1 || slices.ContainsFunc(seeds, func(v string) bool { return strings.HasSuffix(v, oldSeed) }) {
						return fmt.Errorf("seeds %v, want only the new VM's (the destroyed one's %s deleted)", seeds, oldSeed)
					}
					return nil
				},
			},
		},
	})
}

// TestAccProxyVM_driftStopped: a VM stopped outside Terraform is planned back to running
// and started in place.
func TestAccProxyVM_driftStopped(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("stop")
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)
	vmid := statecheck.CompareValue(compare.ValuesSame())
	var id int

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config:            cfg,
				ConfigStateChecks: []statecheck.StateCheck{vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid"))},
				Check: func(s *terraform.State) (err error) {
					id, err = vmidOf(s, vmAddr)
					return err
				},
			},
			{
				PreConfig: func() { c.stop(id) },
				Config:    cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					vmid.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
				},
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccProxyVM_refreshLockedOrNodeDown: a backup lock on the VM leaves the plan empty (the
// refresh reports what it can and keeps the rest); its node not answering behind the
// endpoint (595) fails the plan, naming the node and the escape hatches, since the refresh
// could not look; with the node back the plan is empty again.
func TestAccProxyVM_refreshLockedOrNodeDown(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("locks and node outages are injected in the simulator")
	}
	c := newCluster(t, env)
	name := vmName("lock")
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)
	var vmid int
	backup := "backup"
	none := ""

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: func(s *terraform.State) (err error) {
					vmid, err = vmidOf(s, vmAddr)
					return err
				},
			},
			{
				PreConfig: func() {
					if err := env.Sim.SetVMState(vmid, pvesim.VMPatch{Lock: &backup}); err != nil {
						t.Fatal(err)
					}
				},
				Config:   cfg,
				PlanOnly: true,
			},
			{
				PreConfig: func() {
					if err := env.Sim.SetVMState(vmid, pvesim.VMPatch{Lock: &none}); err != nil {
						t.Fatal(err)
					}
					if err := env.Sim.SetNodeDown(env.Nodes[0], true); err != nil {
						t.Fatal(err)
					}
				},
				Config:   cfg,
				PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)Node ` + regexp.QuoteMeta(env.Nodes[0]) + ` does not answer behind the endpoint.*` +
					`-refresh=false.*-target=`),
			},
			{
				PreConfig: func() {
					if err := env.Sim.SetNodeDown(env.Nodes[0], false); err != nil {
						t.Fatal(err)
					}
				},
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
				},
			},
		},
	})
}

// TestAccProxyVM_agentRemoved: a VM whose guest agent was switched off outside Terraform
// (`qm set <vmid> --agent 0`) is repaired in place, not replaced: the plan is an update
// that switches the agent back on and restarts the running VM (its address unknown), the
// apply writes agent=1 and restarts it (on the simulator: the config write, a shutdown and
// a start), the VMID and MAC address stay, and the next plan is empty. Then the same with
// the VM restarted outside Terraform while the option was off, so that it runs with no
// agent channel at all: the apply does not ask that agent before the restart, and
// converges as well.
func TestAccProxyVM_agentRemoved(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("agent")
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)
	var id int
	var log *powerLog
	if env.Sim != nil {
		env.Sim.EnableRequestLog()
		log = &powerLog{env: env}
	}
	// restarted checks (simulator only) that the apply wrote the config, then shut the VM
	// down and started it.
	restarted := func(*terraform.State) error {
		if log == nil {
			return nil
		}
		return log.check(&id, "config", "shutdown", "start")(nil)
	}
	agentOn := func(*terraform.State) error {
		if v := c.config(id)["agent"]; !strings.HasPrefix(v, "1") && !strings.Contains(v, "enabled=1") {
			return fmt.Errorf("VM %d: agent %q after the apply, want it on", id, v)
		}
		return nil
	}
	switchOff := func(restart bool) func() {
		return func() {
			c.setConfig(id, map[string]string{"agent": "0"})
			if restart { // the VM starts again without the agent's channel
				c.stop(id)
				c.start(id)
			}
			if log != nil {
				log.reset()
			}
		}
	}
	sameVMID := statecheck.CompareValue(compare.ValuesSame())
	sameMAC := statecheck.CompareValue(compare.ValuesSame())
	repaired := func() []statecheck.StateCheck { // new each step: each AddStateValue is one value compared
		return []statecheck.StateCheck{
			sameVMID.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
			sameMAC.AddStateValue(vmAddr, tfjsonpath.New("mac_address")),
			statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("agent_enabled"), knownvalue.Bool(true)),
			statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
			statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("ip_address"), knownvalue.NotNull()),
		}
	}
	inPlace := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
		plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionUpdate),
		plancheck.ExpectKnownValue(vmAddr, tfjsonpath.New("agent_enabled"), knownvalue.Bool(true)),
		plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("ip_address")), // the restart, announced
	}}
	empty := resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					sameVMID.AddStateValue(vmAddr, tfjsonpath.New("vmid")),
					sameMAC.AddStateValue(vmAddr, tfjsonpath.New("mac_address")),
				},
				Check: saveVMID(&id),
			},
			{
				PreConfig:         switchOff(false),
				Config:            cfg,
				ConfigPlanChecks:  inPlace,
				ConfigStateChecks: repaired(),
				Check:             resource.ComposeTestCheckFunc(restarted, agentOn, c.checkOneVM(vmAddr, name)),
			},
			{Config: cfg, ConfigPlanChecks: empty},
			{
				PreConfig:         switchOff(true),
				Config:            cfg,
				ConfigPlanChecks:  inPlace,
				ConfigStateChecks: repaired(),
				Check:             resource.ComposeTestCheckFunc(restarted, agentOn, c.checkOneVM(vmAddr, name)),
			},
			{Config: cfg, ConfigPlanChecks: empty},
		},
	})
}

// TestAccProxyVM_interruptedCreate: the seed upload fails after the clone; the VM is in
// the state (tainted), and the next apply converges on exactly one VM.
func TestAccProxyVM_interruptedCreate(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("fault injection needs the simulator")
	}
	c := newCluster(t, env)
	name := vmName("intr")
	ud := cloudInit("interrupted")
	cfg := vmProviderConfig(env, "") + vmResource(env, name, "  machine_type = \"small\"\n  cloud_init = "+hclString(ud))

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					env.Sim.InjectFault(pvesim.Fault{Method: "POST", Path: "/nodes/{node}/storage/{storage}/upload",
						Status: 500, Message: "upload failed (injected)"})
				},
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)Unable to create proxy VM.*VMID.*tainted`),
			},
			{
				PreConfig: func() {
					env.Sim.ClearFaults()
					if vms, err := c.vmsNamed(name); err != nil || len(vms) != 1 {
						t.Errorf("after the failed create: VMs named %s %v (%v), want the one half-made VM", name, vms, err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// The half-made VM is tracked (tainted): it is replaced, not forgotten.
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionReplace),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(c.checkOneVM(vmAddr, name), checkSeed(env, vmAddr, ud)),
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccProxyVM_refusedCloneNote: a clone Proxmox refuses leaves no VM, only the VMID
// saved before the request (decision: create-steps): the diagnostic must not claim a VM exists, and the next
// apply creates it.
func TestAccProxyVM_refusedCloneNote(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("fault injection needs the simulator")
	}
	c := newCluster(t, env)
	name := vmName("refused")
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					env.Sim.InjectFault(pvesim.Fault{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/clone",
						Status: 403, Message: "Permission check failed (/vms/100000, VM.Clone) (injected)"})
				},
				Config: cfg,
				// Terraform wraps the text: any run of spaces may be a line break.
				ExpectError: regexp.MustCompile(`(?s)Unable to create proxy VM.*` + strings.Join(strings.Fields(regexp.QuoteMeta(
					"Its VMID is saved in the state as tainted: the next apply removes the VM if it was made, and creates it again.")), `\s+`)),
			},
			{
				PreConfig: func() {
					env.Sim.ClearFaults()
					if vms, err := c.vmsNamed(name); err != nil || len(vms) != 0 {
						t.Errorf("after the refused clone: VMs named %s %v (%v), want none", name, vms, err)
					}
				},
				Config: cfg,
				Check:  c.checkOneVM(vmAddr, name),
			},
		},
	})
}

// TestAccProxyVM_foreignSameName: a VM of the same name that this provider did not make is
// refused, left untouched, and cannot be imported.
func TestAccProxyVM_foreignSameName(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("foreign")
	foreign := 100042
	if env.Sim == nil && env.VMIDMin != 0 {
		foreign = env.VMIDMax
	}
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)
	var before map[string]string

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		// The foreign VM is untouched and still the only one of that name.
		CheckDestroy: func(*terraform.State) error {
			vms, err := c.vmsNamed(name)
			if err != nil {
				return fmt.Errorf("VMs named %s: %w", name, err)
			}
			if !slices.Equal(vms, []int{foreign}) {
				return fmt.Errorf("VMs named %s: %v, want only the foreign %d", name, vms, foreign)
			}
			after := c.config(foreign)
			for _, k := range []string{"description", "cores", "memory", "net0", "scsi0", "tags", "ide2", "agent"} {
				if before[k] != after[k] {
					return fmt.Errorf("the foreign VM's %s changed: %q -> %q", k, before[k], after[k])
				}
			}
			seeds, err := c.seeds(name)
			if err != nil {
				return fmt.Errorf("seed ISOs for the refused VM: %w", err)
			}
			if len(seeds) > 0 {
				return fmt.Errorf("seed ISOs for the refused VM: %v", seeds)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					c.foreignVM(foreign, name)
					before = c.config(foreign)
				},
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)Unable to create proxy VM.*` + strconv.Itoa(foreign) + `.*without`),
			},
			{
				Config:        cfg,
				ResourceName:  vmAddr,
				ImportState:   true,
				ImportStateId: strconv.Itoa(foreign),
				ExpectError:   regexp.MustCompile(`(?s)Unable to import proxy VM.*carries.*no`),
			},
			{
				Config:        cfg,
				ResourceName:  vmAddr,
				ImportState:   true,
				ImportStateId: "vms/" + name,
				ExpectError:   regexp.MustCompile(`(?s)Unable to import proxy VM.*Accepted.*forms`),
			},
		},
	})
}

// TestAccProxyVM_tenInOneApply creates ten VMs in one apply in a VMID range of twelve that
// already holds two foreign VMs: every VM gets its own free VMID, none collides.
func TestAccProxyVM_tenInOneApply(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	lo := 100000
	if env.Sim == nil {
		if env.VMIDMin == 0 {
			t.Skip("needs PROXMOX_TEST_VMID_MIN: a range of twelve free VMIDs on the real cluster")
		}
		lo = env.VMIDMin
	}
	hi := lo + 11
	foreign := []int{lo + 3, lo + 8}
	prefix := vmName("ten")
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	cfg := vmProviderConfig(env, fmt.Sprintf("  vmid_range = { min = %d, max = %d }\n", lo, hi)) + fmt.Sprintf(`
resource "proxy_vm" "fleet" {
  count        = 10
  name         = "%s-${count.index}"
  image        = %q
  machine_type = "small"
}
`, prefix, imageKey(env))

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(names...),
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					for i, vmid := range foreign {
						c.foreignVM(vmid, fmt.Sprintf("someone-else-%d", i))
					}
				},
				Config: cfg,
				Check: func(s *terraform.State) error {
					seen := map[int]string{}
					for i := range 10 {
						addr := fmt.Sprintf("proxy_vm.fleet.%d", i)
						vmid, err := vmidOf(s, addr)
						if err != nil {
							return err
						}
						if vmid < lo || vmid > hi || slices.Contains(foreign, vmid) {
							return fmt.Errorf("%s got VMID %d: outside %d-%d or a foreign VM's", addr, vmid, lo, hi)
						}
						if other, dup := seen[vmid]; dup {
							return fmt.Errorf("%s and %s share VMID %d", addr, other, vmid)
						}
						seen[vmid] = addr
						if err := c.checkOneVM(addr, names[i])(s); err != nil {
							return err
						}
					}
					for i, vmid := range foreign {
						r, err := c.resource(vmid)
						if err != nil {
							return fmt.Errorf("foreign VM %d: %w", vmid, err)
						}
						if r.Name != fmt.Sprintf("someone-else-%d", i) {
							return fmt.Errorf("foreign VM %d: %+v", vmid, r)
						}
					}
					return nil
				},
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// TestAccProxyVM_planTimeValidation: catalogue keys, node names, the VLAN range and the
// name are rejected at plan time with their attribute, before anything is created.
func TestAccProxyVM_planTimeValidation(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	base := vmProviderConfig(env, "")
	name := vmName("valid")
	res := func(body string) string {
		return base + fmt.Sprintf("resource \"proxy_vm\" \"test\" {\n  name = %q\n%s\n}\n", name, body)
	}
	img := fmt.Sprintf("  image = %q\n", imageKey(env))
	steps := []struct {
		body string
		want string
	}{
		{img + `  machine_type = "nope"`, `(?s)Invalid proxy VM configuration.*machine_type.*"nope".*machine_types`},
		{`  image = "nope"` + "\n" + `  machine_type = "small"`, `(?s)Invalid proxy VM configuration.*image.*"nope".*templates`},
		{img + "  machine_type = \"small\"\n  node = \"pve-nope\"", `(?s)Invalid proxy VM configuration.*node.*"pve-nope".*nodes`},
		{img + "  machine_type = \"small\"\n  vlan_tag = 4095", `(?s)vlan_tag.*4094`},
		{img + "  cores = 1", `(?s)Invalid proxy VM configuration.*Without.*machine_type,.*memory_mib`},
		{"  machine_type = \"small\"", `(?s)image.*template_vmid`},
	}
	var ts []resource.TestStep
	for _, s := range steps {
		ts = append(ts, resource.TestStep{Config: res(s.body), PlanOnly: true, ExpectError: regexp.MustCompile(s.want)})
	}
	ts = append(ts, resource.TestStep{
		Config:   base + "resource \"proxy_vm\" \"test\" {\n  name = \"Not_A_Label\"\n" + img + "  machine_type = \"small\"\n}\n",
		PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)name.*DNS label`),
	})
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps:                    ts,
		CheckDestroy: func(*terraform.State) error {
			if env.Sim == nil {
				return nil
			}
			for _, vm := range env.Sim.State().VMs {
				if !vm.Template {
					return fmt.Errorf("a plan-time error created VM %d (%s)", vm.VMID, vm.Name)
				}
			}
			return c.checkGone(name)(nil)
		},
	})
}

// TestAccProxyVM_secretsNotLogged runs a create and a destroy at TRACE and checks that the
// log never carries the cloud-init text (only its size) nor the token's secret. The
// secrets reach Terraform the way a pipeline passes them (the token in the environment,
// cloud-init in a sensitive variable), so the configuration text that the test helper
// echoes at TRACE holds neither: the whole log file (Terraform, the test helper and the
// provider, all writing to it) is searched, with no attribution of lines to writers, and
// the check cannot be fooled by how entries are laid out or interleaved. Not parallel:
// it sets environment variables.
func TestAccProxyVM_secretsNotLogged(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	dir := t.TempDir()
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_LOG_PATH_MASK", dir+"/%s.log")
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := vmName("secret")
	sentinel := "SENTINEL-" + acctest.RandString(16)
	t.Setenv("TF_VAR_user_data", cloudInit(sentinel))
	token := env.Token
	if token == "" {
		token = os.Getenv(envAPIToken)
	}
	t.Setenv(envAPIToken, token)
	noToken := *env
	noToken.Token = ""
	cfg := "\nvariable \"user_data\" {\n  type      = string\n  sensitive = true\n}\n" +
		vmProviderConfig(&noToken, "") + vmResource(env, name, "  machine_type = \"small\"\n  cloud_init   = var.user_data")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check:  checkSeed(env, vmAddr, cloudInit(sentinel)), // the text did reach the guest
		}},
	})
	if t.Failed() {
		return
	}
	raw, err := os.ReadFile(dir + "/" + strings.ReplaceAll(t.Name(), "/", "__") + ".log")
	if err != nil {
		t.Fatal(err)
	}
	logs := string(raw)
	// The log holds what the test is about: the provider's, the client's and the backend's
	// lines of the create, with the size of the cloud-init text.
	for _, want := range []string{"proxy VM create", "cloud_init_bytes=" + strconv.Itoa(len(cloudInit(sentinel))), "proxy.pveapi:", "proxy.proxmox:"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("the log (%d bytes) has no %q: the check would prove nothing", len(logs), want)
		}
	}
	leaks := func(what, secret string) {
		for _, line := range strings.Split(logs, "\n") {
			if strings.Contains(line, secret) {
				line = strings.ReplaceAll(line, secret, "<"+what+">")
				if len(line) > 300 {
					line = line[:300] + "..."
				}
				t.Errorf("the %s reached the log: %s", what, line)
			}
		}
	}
	leaks("cloud-init text", sentinel)
	if _, secret, ok := strings.Cut(token, "="); ok && secret != "" {
		leaks("API token secret", secret)
	} else {
		t.Errorf("the token has no secret part to look for")
	}
}

// TestAccProxyVM_uidNamespace: two configurations share a cluster and declare the same VM
// name. Workspace A (uid_namespace "a") creates it; workspace B (uid_namespace "b") gets a
// VM of its own (its own uid and VMID) instead of adopting A's, and its destroy removes
// only that; A's VM, seed and plan are unchanged.
func TestAccProxyVM_uidNamespace(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	c := newCluster(t, env)
	name := "proxy-shared"
	if env.Sim == nil {
		name = vmName("shared") // a real cluster is shared with other runs
	}
	cfgA := vmProviderConfig(env, "  uid_namespace = \"a\"\n") + vmResource(env, name, `  machine_type = "small"`)
	cfgB := vmProviderConfig(env, "  uid_namespace = \"b\"\n") + vmResource(env, name, `  machine_type = "small"`)
	var uidA string
	var vmid int
	var before map[string]string
	var beforeSim pvesim.VMState
	var tasksBefore int
	vmTasks := func(vmid int) int {
		n := 0
		for _, task := range env.Sim.State().Tasks {
			if task.VMID == vmid {
				n++
			}
		}
		return n
	}

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{
				Config: cfgA,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(vmAddr, tfjsonpath.New("uid")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("uid"), knownvalue.StringRegexp(uuidV4RE)),
				},
				Check: func(s *terraform.State) (err error) {
					if vmid, err = vmidOf(s, vmAddr); err != nil {
						return err
					}
					uidA = s.RootModule().Resources[vmAddr].Primary.Attributes["uid"]
					before = c.config(vmid)
					if !strings.Contains(before["description"], uidA) {
						return fmt.Errorf("the mark of VMID %d does not carry uid %s: %q", vmid, uidA, before["description"])
					}
					if env.Sim != nil {
						beforeSim, _ = env.Sim.VM(vmid)
						tasksBefore = vmTasks(vmid)
					}
					return nil
				},
			},
			{
				// Workspace B: its own state, its own provider configuration, the same name.
				PreConfig: func() {
					if env.Sim != nil {
						env.Sim.ResetStats()
					}
					// B gets a VM of its own; its destroy (the end of its test case) removes only that.
					t.Run("workspace B", func(t *testing.T) {
						resource.Test(t, resource.TestCase{
							ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
							Steps: []resource.TestStep{{Config: cfgB, Check: func(s *terraform.State) error {
								b, err := vmidOf(s, vmAddr)
								if err != nil {
									return err
								}
								if b == vmid {
									return fmt.Errorf("workspace B tracks A's VMID %d", vmid)
								}
								if u := s.RootModule().Resources[vmAddr].Primary.Attributes["uid"]; u == uidA {
									return fmt.Errorf("workspace B has A's uid %s", u)
								}
								return nil
							}}},
						})
					})
					if env.Sim == nil {
						return
					}
					for k, n := range env.Sim.Stats() {
						if !strings.HasPrefix(k, "GET ") && strings.Contains(k, fmt.Sprintf("/%d/", vmid)) {
							t.Errorf("workspace B wrote to A's VM: %s x%d", k, n)
						}
					}
				},
				// Workspace A: nothing changed.
				Config:           cfgA,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("uid"), knownvalue.StringFunc(func(v string) error {
						if v != uidA {
							return fmt.Errorf("uid %s, want A's %s", v, uidA)
						}
						return nil
					})),
				},
				Check: func(s *terraform.State) error {
					if err := c.checkOneVM(vmAddr, name)(s); err != nil {
						return err
					}
					after := c.config(vmid)
					for _, k := range sortedKeys(before) {
						if before[k] != after[k] {
							return fmt.Errorf("A's VM %d: %s changed %q -> %q", vmid, k, before[k], after[k])
						}
					}
					if len(after) != len(before) {
						return fmt.Errorf("A's VM %d config keys: %v -> %v", vmid, sortedKeys(before), sortedKeys(after))
					}
					seeds, err := c.seeds(name)
					if err != nil {
						return fmt.Errorf("seed ISOs of %s: %w", name, err)
					}
					if len(seeds) != 1 {
						return fmt.Errorf("seed ISOs of %s: %v, want A's one", name, seeds)
					}
					if env.Sim == nil {
						return nil
					}
					got, ok := env.Sim.VM(vmid)
					if !ok || got.Status != beforeSim.Status || got.Power != beforeSim.Power || got.Lock != "" ||
						got.Description != beforeSim.Description || got.IP != beforeSim.IP {
						return fmt.Errorf("A's VM in the simulator: %+v, was %+v", got, beforeSim)
					}
					if n := vmTasks(vmid); n != tasksBefore {
						return fmt.Errorf("tasks on A's VM %d: %d, was %d", vmid, n, tasksBefore)
					}
					return nil
				},
			},
		},
	})
}

// TestAccProxyVM_planRequestsPerVM: refreshing existing VMs costs at most three requests
// per VM and refresh (the shared listing, the config, status/current): no agent query, no
// template lookup (that is import's alone), also for VMs with a static address. Terraform
// refreshes more than once per step, so the test counts refreshes from the config reads
// and checks the ratios.
func TestAccProxyVM_planRequestsPerVM(t *testing.T) {
	for _, tc := range []struct{ name, prefix, extra string }{
		{"dhcp", "req", ""},
		{"static", "sreq", "  static_ipv4 = {\n    address = \"10.20.1.${count.index + 10}/24\"\n    gateway = \"10.20.1.1\"\n  }\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newTestEnv(t, pvesim.Options{})
			if env.Sim == nil {
				t.Skip("needs the simulator's request counts")
			}
			if tc.extra != "" {
				needsAddressPlan(t, env)
			}
			testPlanRequestsPerVM(t, env, vmName(tc.prefix), tc.extra)
		})
	}
}

func testPlanRequestsPerVM(t *testing.T, env *testEnv, prefix, extra string) {
	c := newCluster(t, env)
	const n = 3
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	// The whole catalogue (two templates): a template lookup would show as config reads.
	cfg := env.ProviderConfig("") + fmt.Sprintf(`
resource "proxy_vm" "fleet" {
  count        = %d
  name         = "%s-${count.index}"
  image        = %q
  machine_type = "small"
%s}
`, n, prefix, imageKey(env), extra)
	const (
		listing = "GET /cluster/resources"
		config  = "GET /nodes/{node}/qemu/{vmid}/config"
		status  = "GET /nodes/{node}/qemu/{vmid}/status/current"
	)

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(names...),
		Steps: []resource.TestStep{
			{Config: cfg},
			{
				PreConfig:        env.Sim.ResetStats,
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: func(*terraform.State) error {
					st := env.Sim.Stats()
					refreshes := st[config] / n
					if refreshes == 0 || st[config] != n*refreshes || st[status] != st[config] {
						return fmt.Errorf("config reads %d, status reads %d for %d VMs: want one of each per VM and refresh: %v", st[config], st[status], n, st)
					}
					if st[listing] == 0 || st[listing] > refreshes {
						return fmt.Errorf("%d listings in %d refreshes, want one shared listing per refresh at most: %v", st[listing], refreshes, st)
					}
					for k := range st {
						if k != listing && k != config && k != status {
							return fmt.Errorf("a plan of existing VMs made %s: %v", k, st)
						}
					}
					if total := simRequests(env.Sim); total > 3*n*refreshes {
						return fmt.Errorf("%d requests in %d refreshes of %d VMs, want at most 3 per VM and refresh", total, refreshes, n)
					}
					t.Logf("%d refreshes of %d VMs: %d listings, %d config, %d status reads (%v)", refreshes, n, st[listing], st[config], st[status], st)
					return nil
				},
			},
		},
	})
}
