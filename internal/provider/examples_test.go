package provider

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The resource examples of the documentation, applied as written, so that no
// example in the documentation was never run. They name node pv1-1 and fixed VMIDs, so they run against the
// simulator only.

// proxyVMExamples is the folder of the proxy_vm examples.
var proxyVMExamples = filepath.Join("..", "..", "examples", "resources", "proxy_vm")

// The node, template and VMIDs the examples name.
const (
	exampleNode     = "pv1-1"
	exampleTemplate = 9001
	exampleVMIDA    = 105967 // proxy-a in import-by-string-id.tf and import.sh
	exampleVMIDB    = 107076 // proxy-b in import-by-string-id.tf
)

// exampleUserData is resource.tf's heredoc user-data, indentation stripped by <<-.
const exampleUserData = "#cloud-config\npackages: [squid]\nruncmd:\n  - systemctl enable --now squid\n"

var ipv4RE = regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`)

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(proxyVMExamples, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exampleEnv is a fresh simulator with the examples' node; it skips on a real cluster.
func exampleEnv(t *testing.T) *testEnv {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1") // before the VMs some tests make beforehand
	}
	env := newTestEnv(t, pvesim.Options{Nodes: []string{exampleNode}})
	if env.Sim == nil {
		t.Skip("the proxy_vm examples name node pv1-1 and fixed VMIDs")
	}
	if env.Templates["debian-13"] != exampleTemplate {
		t.Fatalf("the simulator's catalogue %v lacks debian-13 = %d, which the examples use", env.Templates, exampleTemplate)
	}
	return env
}

// TestAccExamples_proxyVMResource applies examples/resources/proxy_vm/resource.tf as
// written: both VMs run with what the example sets, and the next plan is empty.
func TestAccExamples_proxyVMResource(t *testing.T) {
	example := readExample(t, "resource.tf")
	env := exampleEnv(t)
	c := newCluster(t, env)
	cfg := env.ProviderConfig("") + example
	egress, big := "proxy_vm.egress", "proxy_vm.big"

	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone("proxy-a", "proxy-b"),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(egress, tfjsonpath.New("name"), knownvalue.StringExact("proxy-a")),
					statecheck.ExpectKnownValue(egress, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(egress, tfjsonpath.New("image"), knownvalue.StringExact("debian-13")),
					statecheck.ExpectKnownValue(egress, tfjsonpath.New("template_vmid"), knownvalue.Int64Exact(exampleTemplate)),
					statecheck.ExpectKnownValue(egress, tfjsonpath.New("machine_type"), knownvalue.StringExact("small")),
					statecheck.ExpectKnownValue(egress, tfjsonpath.New("cores"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(egress, tfjsonpath.New("memory_mib"), knownvalue.Int64Exact(512)),
					statecheck.ExpectSensitiveValue(egress, tfjsonpath.New("cloud_init")),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("name"), knownvalue.StringExact("proxy-b")),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("status"), knownvalue.StringExact("running")),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("node"), knownvalue.StringExact(exampleNode)),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("template_vmid"), knownvalue.Int64Exact(exampleTemplate)),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("cores"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("memory_mib"), knownvalue.Int64Exact(4096)),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("disk_gib"), knownvalue.Int64Exact(20)),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("bridge"), knownvalue.StringExact("vmbr1")),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("vlan_tag"), knownvalue.Int64Exact(10)),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("start_on_boot"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(big, tfjsonpath.New("ip_address"), knownvalue.StringRegexp(ipv4RE)),
					statecheck.ExpectKnownOutputValue("proxy_a_ip", knownvalue.StringRegexp(ipv4RE)),
					// The pinned proxy runs at its static address, as the agent reports it.
					statecheck.ExpectKnownValue("proxy_vm.pinned", tfjsonpath.New("ip_address"), knownvalue.StringExact("10.20.0.10")),
					statecheck.ExpectKnownValue("proxy_vm.pinned", tfjsonpath.New("ipv4_addresses"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("10.20.0.10")})),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					c.checkOneVM(egress, "proxy-a"),
					c.checkOneVM(big, "proxy-b"),
					checkSeed(env, egress, exampleUserData),
					// What Proxmox holds, not only what the state says.
					func(s *terraform.State) error {
						vmid, err := vmidOf(s, big)
						if err != nil {
							return err
						}
						vm, ok := env.Sim.VM(vmid)
						switch {
						case !ok:
							return fmt.Errorf("VMID %d of proxy-b is not in the simulator", vmid)
						case vm.Node != exampleNode || vm.Power != "running":
							return fmt.Errorf("proxy-b: node %s power %s, want %s running", vm.Node, vm.Power, exampleNode)
						case vm.Config["cores"] != "4" || vm.Config["memory"] != "4096" || vm.Config["onboot"] != "1":
							return fmt.Errorf("proxy-b config: cores %q memory %q onboot %q", vm.Config["cores"], vm.Config["memory"], vm.Config["onboot"])
						case !strings.Contains(vm.Config["net0"], "bridge=vmbr1") || !strings.Contains(vm.Config["net0"], "tag=10"):
							return fmt.Errorf("proxy-b net0 %q, want bridge vmbr1 and tag 10", vm.Config["net0"])
						case !strings.Contains(vm.Config["scsi0"], "size=20G"):
							return fmt.Errorf("proxy-b scsi0 %q, want size 20G", vm.Config["scsi0"])
						}
						t.Logf("resource.tf: proxy-a at VMID %s, proxy-b at VMID %d", s.RootModule().Resources[egress].Primary.Attributes["vmid"], vmid)
						return nil
					},
				),
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// importCommandRE matches a line of import.sh: terraform import <address> <id>.
var importCommandRE = regexp.MustCompile(`^terraform import (\S+) (\S+)$`)

// TestAccExamples_proxyVMImportCommands applies resource.tf, then runs every `terraform
// import` line of examples/resources/proxy_vm/import.sh as written: its address and ID
// import the VM resource.tf made (proxy-a lands on the VMID the lines name), and the
// import reads back what the apply recorded.
func TestAccExamples_proxyVMImportCommands(t *testing.T) {
	example := readExample(t, "resource.tf")
	type command struct{ addr, id string }
	var commands []command
	forms := map[string]bool{}
	for line := range strings.SplitSeq(readExample(t, "import.sh"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := importCommandRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("import.sh: %q is not a `terraform import <address> <id>` line", line)
		}
		ref, err := parseImportID(m[2])
		if err != nil {
			t.Fatalf("import.sh: %v", err)
		}
		forms[fmt.Sprint(ref.VMID != 0, ref.Name != "")] = true
		commands = append(commands, command{m[1], m[2]})
	}
	// One line per ID form, as its comment says.
	if len(commands) != 3 || len(forms) != 3 {
		t.Fatalf("import.sh has the commands %v, want one for each of the three ID forms", commands)
	}

	env := exampleEnv(t)
	c := newCluster(t, env)
	cfg := env.ProviderConfig("") + example
	// The VM the lines name, made beforehand at their VMID with resource.tf's user-data,
	// is imported first (an apply never adopts an existing VM: it would make its own).
	createExampleVM(t, env, "proxy-a", exampleVMIDA, []byte(exampleUserData))
	steps := []resource.TestStep{{
		Config:             cfg,
		ResourceName:       "proxy_vm.egress",
		ImportState:        true,
		ImportStateId:      fmt.Sprintf("vms/%d/proxy-a", exampleVMIDA),
		ImportStatePersist: true,
	}, {
		Config: cfg,
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue("proxy_vm.egress", tfjsonpath.New("id"), knownvalue.StringExact(fmt.Sprintf("vms/%d/proxy-a", exampleVMIDA))),
		},
		Check: c.checkOneVM("proxy_vm.egress", "proxy-a"),
	}}
	for _, cmd := range commands {
		steps = append(steps, resource.TestStep{
			Config:                  cfg,
			ResourceName:            cmd.addr,
			ImportState:             true,
			ImportStateId:           cmd.id,
			ImportStateVerify:       true,
			ImportStateVerifyIgnore: []string{"cloud_init", "timeouts", "wait_for_ip"},
		})
	}

	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone("proxy-a", "proxy-b"),
		Steps:                    steps,
	})
}

// TestAccExamples_proxyVMImport applies examples/resources/proxy_vm/import-by-string-id.tf
// as written, from a directory with its squid.yaml, to three marked VMs made beforehand
// at the VMIDs it names: the three are imported, a and b with an empty change, c with its
// cloud_init recorded in place; no VM is created or destroyed. The next plan is empty.
func TestAccExamples_proxyVMImport(t *testing.T) {
	example := readExample(t, "import-by-string-id.tf")
	squid := readExample(t, "squid.yaml")
	env := exampleEnv(t)
	c := newCluster(t, env)

	// The three VMs, made as this provider makes them (mark, meta, seed ISO, tags), with
	// the example's sizes (machine type small) and proxy-c with the example's user-data.
	vmidC := createExampleVM(t, env, "proxy-c", 0, []byte(squid))
	made := map[string]int{
		"proxy-a": createExampleVM(t, env, "proxy-a", exampleVMIDA, nil),
		"proxy-b": createExampleVM(t, env, "proxy-b", exampleVMIDB, nil),
		"proxy-c": vmidC,
	}

	dir := t.TempDir()
	for name, text := range map[string]string{
		"import-by-string-id.tf": example,
		"squid.yaml":             squid,
		"provider.tf":            env.ProviderConfig(""),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	imported := func(addr, id string) []plancheck.PlanCheck {
		return []plancheck.PlanCheck{expectImporting{addr, id}}
	}
	wantIDs := map[string]string{
		"proxy_vm.a": fmt.Sprintf("vms/%d/proxy-a", exampleVMIDA),
		"proxy_vm.b": fmt.Sprintf("vms/%d/proxy-b", exampleVMIDB),
		"proxy_vm.c": fmt.Sprintf("vms/%d/proxy-c", vmidC),
	}
	var stateChecks []statecheck.StateCheck
	for _, addr := range sortedKeys(wantIDs) {
		name := "proxy-" + strings.TrimPrefix(addr, "proxy_vm.")
		stateChecks = append(stateChecks,
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(wantIDs[addr])),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("running")),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("template_vmid"), knownvalue.Int64Exact(exampleTemplate)),
			statecheck.ExpectKnownValue(addr, tfjsonpath.New("uid"), knownvalue.StringExact(uidFor("", name))),
		)
	}
	stateChecks = append(stateChecks, statecheck.ExpectSensitiveValue("proxy_vm.c", tfjsonpath.New("cloud_init")))

	env.Sim.ResetStats()
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:     func() { testAccPreCheck(t) },
		CheckDestroy: c.checkGone("proxy-a", "proxy-b", "proxy-c"),
		// The directory has a provider block, so the factories go on each step.
		Steps: []resource.TestStep{
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          config.StaticDirectory(dir),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: slices.Concat(
					imported("proxy_vm.a", "vms/105967/proxy-a"),
					imported("proxy_vm.b", "107076"),
					imported("proxy_vm.c", "proxy-c"),
					[]plancheck.PlanCheck{
						plancheck.ExpectResourceAction("proxy_vm.a", plancheck.ResourceActionNoop),
						plancheck.ExpectResourceAction("proxy_vm.b", plancheck.ResourceActionNoop),
						// cloud_init cannot be read back: recorded in place, never a replacement.
						plancheck.ExpectResourceAction("proxy_vm.c", plancheck.ResourceActionUpdate),
					},
				)},
				ConfigStateChecks: stateChecks,
				Check: func(*terraform.State) error {
					return checkOnlyThese(env, made, []byte(squid))
				},
			},
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          config.StaticDirectory(dir),
				ConfigPlanChecks:         resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}

// createExampleVM makes a running marked VM as the provider would for the example's
// configuration (debian-13, machine type small, the provider's defaults): at vmid when it
// is not 0 (a one-VMID range), else at the VMID the default range derives from its uid.
func createExampleVM(t *testing.T, env *testEnv, name string, vmid int, userData []byte) int {
	t.Helper()
	client, err := pveapi.New(pveapi.Options{Endpoint: env.Endpoint, Token: env.Token, CAPEM: env.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	cfg := resolvedConfig{
		Endpoint: env.Endpoint, Nodes: env.Nodes, ISOStorage: env.ISOStorage, Templates: maps.Clone(env.Templates),
		VMIDMin: defaultVMIDMin, VMIDMax: defaultVMIDMax, InstallGuestAgent: true,
	}
	if vmid != 0 {
		cfg.VMIDMin, cfg.VMIDMax = vmid, vmid
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vm, err := proxmox.New(client, cfg.backendConfig(client.TokenID)).Create(ctx, proxmox.Spec{
		Name: name, UID: uidFor("", name), Node: env.Nodes[0], TemplateVMID: env.Templates["debian-13"],
		Cores: 1, MemoryMiB: 512, UserData: userData, OnBoot: true, WaitForIP: true,
		CreatedAt: time.Now().UTC().Truncate(time.Second),
	}, nil)
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	if vmid != 0 && vm.ID.VMID != vmid {
		t.Fatalf("%s landed on VMID %d, want %d", name, vm.ID.VMID, vmid)
	}
	return vm.ID.VMID
}

// checkOnlyThese checks that the marked VMs are exactly made (name to VMID), all running,
// that no request cloned, destroyed or restarted a VM, and that proxy-c still runs the seed
// it booted with.
func checkOnlyThese(env *testEnv, made map[string]int, userData []byte) error {
	got := map[string]int{}
	for _, vm := range env.Sim.State().VMs {
		if !proxmox.ParseMark(vm.Description).Managed {
			continue
		}
		if _, dup := got[vm.Name]; dup || vm.Power != "running" {
			return fmt.Errorf("marked VM %d %s: power %s (duplicate name: %v)", vm.VMID, vm.Name, vm.Power, dup)
		}
		got[vm.Name] = vm.VMID
	}
	if !maps.Equal(got, made) {
		return fmt.Errorf("marked VMs %v, want exactly %v", got, made)
	}
	stats := env.Sim.Stats()
	if stats["GET /cluster/resources"] == 0 {
		return fmt.Errorf("no listing counted (%v): the request check would prove nothing", stats)
	}
	for key, n := range stats {
		if !strings.HasPrefix(key, "GET ") && n > 0 {
			return fmt.Errorf("the import made %d %s requests: only reads were expected (all: %v)", n, key, stats)
		}
	}
	seed, ok := env.Sim.GuestSeed(made["proxy-c"])
	if !ok || string(seed.UserData) != string(userData) {
		return fmt.Errorf("proxy-c booted with user-data %q, want squid.yaml", seed.UserData)
	}
	return nil
}

// expectImporting is a plan check: addr is imported with the import ID id.
type expectImporting struct {
	addr, id string
}

func (e expectImporting) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != e.addr {
			continue
		}
		switch {
		case rc.Change == nil || rc.Change.Importing == nil:
			resp.Error = fmt.Errorf("%s is not imported by the plan", e.addr)
		case rc.Change.Importing.ID != e.id:
			resp.Error = fmt.Errorf("%s is imported with ID %q, want %q", e.addr, rc.Change.Importing.ID, e.id)
		}
		return
	}
	resp.Error = fmt.Errorf("%s is not in the plan", e.addr)
}
