package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// A kill -9 of the provider at every step of a seed swap (cloud_init_change = "restart",
// decision: seed-swap): the request of that step is held in the simulator (a latency
// fault) and the provider killed while it is in flight; the request then lands, and
// Terraform, with no answer to ApplyResourceChange, keeps the prior state and drops the
// private state. The configuration is then set back to the old cloud-init and applied:
// the seed the VM's CD-ROM names must hold that cloud-init, and the guest must have run
// it; the VM's seed ISOs must be that one alone; the next plan must be empty; then the
// usual recovery (converge) counts the scenario in the figures.

// seedSwapKillPoint is a step of the swap: the nth request on route since the apply began.
type seedSwapKillPoint struct {
	name  string
	route string // a stats key: "<method> <route template>"
	nth   int
	// sign says the kill leaves a sign the refresh reads (the seed swapped, or a new seed
	// on storage), so the re-run warns that the last apply was interrupted.
	sign bool
	// operator runs the swap on an imported proxy-operator VM: its seed <name>-seed.iso,
	// so the state holds no seed_generation, and no digest key is set (adv1 finding 14).
	operator bool
}

var seedSwapKillPoints = []seedSwapKillPoint{
	{"mark-write", tfrun.StatConfigPut, 1, false, false},
	{"leftover-listing", "GET /nodes/{node}/storage/{storage}/content", 1, false, false},
	{"upload", tfrun.StatUpload, 1, true, false},
	{"ide2-write", tfrun.StatConfigPut, 2, true, false},
	{"old-seed-delete", tfrun.StatVolumeDelete, 1, true, false},
	{"shutdown", "POST /nodes/{node}/qemu/{vmid}/status/shutdown", 1, true, false},
	{"start", tfrun.StatStart, 1, true, false},
	{"operator-old-seed-delete", tfrun.StatVolumeDelete, 1, true, true},
	{"operator-start", tfrun.StatStart, 1, true, true},
}

func TestE2E_CrashSeedSwap(t *testing.T) {
	needTF(t)
	for _, p := range seedSwapKillPoints {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			runCrashSeedSwap(t, p)
		})
	}
}

// heldFor is how long the kill point's request is held: far above the time a kill takes.
const heldFor = 3 * time.Second

func runCrashSeedSwap(t *testing.T, p seedSwapKillPoint) {
	s := newScenario(t, "crashes/kill-seed-swap", scenarioOpts{Sim: pvesim.Options{Speed: interruptSpeed}})
	vm := s.vm("sw")
	vm.Extra = "  cloud_init_change = \"restart\"\n"
	ud1 := "#cloud-config\n# before the swap " + p.name + "\n"
	ud2 := "#cloud-config\n# the swap the kill cut off\n"
	vm.CloudInit = ud1
	s.vms = []tfrun.VM{vm}
	s.mustApply()
	st := s.state().OfType("proxy_vm")
	if len(st) != 1 {
		t.Fatalf("the state holds %d proxy_vm", len(st))
	}
	vmid := st[0].Int("vmid")
	if p.operator {
		s.makeOperatorVM(vm, vmid)
	}

	// The swap to ud2, killed at the point.
	s.vms[0].CloudInit = ud2
	s.write()
	method, tmpl, _ := strings.Cut(p.route, " ")
	base := s.sim.Stats()[p.route]
	s.sim.InjectFault(pvesim.Fault{Method: method, Path: tmpl, VMID: vmidOf(tmpl, vmid), Times: p.nth, Latency: heldFor})
	proc, err := s.ws.Start(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color")
	if err != nil {
		t.Fatal(err)
	}
	tfrun.WaitUntil(s.ctx, commandTimeout, func() bool {
		select {
		case <-proc.Done():
			return true
		default:
		}
		return s.sim.Stats()[p.route] >= base+p.nth
	})
	if s.sim.Stats()[p.route] < base+p.nth {
		proc.KillProviders()
		r := proc.Wait()
		t.Fatalf("the swap never reached its %s (request %d of %s):\n%s", p.name, p.nth, p.route, r)
	}
	time.Sleep(100 * time.Millisecond)
	if proc.KillProviders() == 0 {
		t.Fatal("no provider process to kill")
	}
	r := proc.Wait()
	if r.OK() {
		t.Fatalf("the apply survived the kill of its provider:\n%s", r)
	}
	figures.note(s.cat, "killed at "+p.name)
	time.Sleep(heldFor) // the held request lands
	s.waitTasksIdle()
	if got := s.state().OfType("proxy_vm"); len(got) != 1 || got[0].String("cloud_init") != ud1 {
		t.Fatalf("after the kill the state holds %+v, want the old cloud_init kept", got)
	}

	// The configuration set back, applied: the swap the kill hid is undone.
	s.vms[0].CloudInit = ud1
	rr := s.apply()
	if !rr.OK() {
		t.Fatalf("the apply of the reverted configuration failed:\n%s", rr)
	}
	flat := strings.Join(strings.Fields(rr.Output()), " ")
	if p.sign && !strings.Contains(flat, "was interrupted") {
		t.Errorf("the re-run does not warn that the last apply was interrupted:\n%s", rr)
	}
	// The cloud-init texts are sentinels: no diagnostic shows them (terraform's quotes of
	// the configuration's source lines, "25:   cloud_init = ...", aside).
	for _, text := range []string{r.Output(), rr.Output()} {
		for line := range strings.SplitSeq(text, "\n") {
			if (strings.Contains(line, "the swap the kill cut off") || strings.Contains(line, "before the swap")) && !sourceLine.MatchString(line) {
				t.Errorf("a cloud-init text is in terraform's output: %q", line)
			}
		}
	}
	if seed, ok := s.sim.CDROMSeed(vmid); !ok || string(seed.UserData) != ud1 {
		t.Errorf("the seed on VM %d's CD-ROM holds %q (found %t), want the configured %q", vmid, seed.UserData, ok, ud1)
	}
	if seed, ok := s.sim.GuestSeed(vmid); !ok || string(seed.UserData) != ud1 {
		t.Errorf("the guest of VM %d last ran %q, want the configured %q", vmid, seed.UserData, ud1)
	}
	if seeds, ide2 := s.swapSeeds(vm.Name, vmid); len(seeds) != 1 || !strings.HasSuffix(seeds[0], ide2) {
		t.Errorf("seed ISOs of %s: %v, want only the one its CD-ROM names (%s)", vm.Name, seeds, ide2)
	}
	if v, ok := s.sim.VM(vmid); !ok || strings.Contains(v.Description, "proxy-operator-seed-swap=") && p.sign {
		t.Errorf("VM %d's mark keeps the swap's line after the swap back: %q", vmid, v.Description)
	}
	if r := s.ws.Plan(s.ctx); r.ExitCode != 0 {
		t.Errorf("the plan after the re-run is not empty (exit %d):\n%s", r.ExitCode, r.Stdout+r.Stderr)
	}
	o := s.converge()
	figures.note(s.cat, fmt.Sprintf("swap undone: %t", o.Converged && !t.Failed()))
}

// makeOperatorVM makes the proxy VM at vmid one the proxy operator made: its mark the
// operator's three lines, its seed <name>-seed.iso; then imports it again and applies, so
// the state holds its cloud_init and no seed_generation.
func (s *scenario) makeOperatorVM(vm tfrun.VM, vmid int) {
	s.t.Helper()
	v, _ := s.sim.VM(vmid)
	opFile := vm.Name + "-seed.iso"
	if err := s.sim.AddISO(v.Node, s.sim.ISOStorage, opFile, []byte("the operator's seed")); err != nil {
		s.t.Fatal(err)
	}
	if err := s.sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{
		"description": "proxy-operator-managed=true\nproxy-operator-uid=5e0c1f3a-7b2d-4c8e-9f01-23456789abcd\nproxy-operator-created-at=2026-11-01T10:00:00Z",
		"ide2":        s.sim.ISOStorage + ":iso/" + opFile + ",media=cdrom",
	}}); err != nil {
		s.t.Fatal(err)
	}
	created, _, _ := strings.Cut(v.Config["ide2"], ",")
	s.dropSeedCopy(v.Node, created) // the create's seed: no VM names it now
	if r := s.ws.Run(s.ctx, "state", "rm", vm.Addr()); !r.OK() {
		s.t.Fatalf("state rm:\n%s", r)
	}
	if r := s.ws.Import(s.ctx, vm.Addr(), strconv.Itoa(vmid)); !r.OK() {
		s.t.Fatalf("import of the operator's VM:\n%s", r)
	}
	s.mustApply()
	if st := s.state().OfType("proxy_vm"); len(st) != 1 || st[0].Values["seed_generation"] != nil {
		s.t.Fatalf("after the import the state holds %+v, want one proxy_vm without seed_generation", st)
	}
}

// sourceLine is a line of the configuration terraform quotes under a diagnostic.
var sourceLine = regexp.MustCompile(`^\s*[0-9]+:\s`)

// vmidOf restricts a fault on a VM route to the scenario's VM (0, any, for other routes).
func vmidOf(tmpl string, vmid int) int {
	if strings.Contains(tmpl, "{vmid}") {
		return vmid
	}
	return 0
}

// swapSeeds returns the seed ISOs of VM name on every node and storage ("<node>/<volid>"),
// sorted, and the volume its CD-ROM (ide2) names.
func (s *scenario) swapSeeds(name string, vmid int) ([]string, string) {
	st := s.sim.State()
	var out []string
	for _, v := range st.Volumes {
		if _, file, ok := strings.Cut(v.VolID, ":iso/"); ok && strings.HasPrefix(file, name+"-") && strings.HasSuffix(file, "-seed.iso") {
			out = append(out, v.Node+"/"+v.VolID)
		}
	}
	slices.Sort(out)
	ide2 := ""
	if v, ok := s.sim.VM(vmid); ok {
		ide2, _, _ = strings.Cut(v.Config["ide2"], ",")
	}
	return out, ide2
}
