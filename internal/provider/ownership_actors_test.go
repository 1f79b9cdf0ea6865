package provider

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The ownership property under a threat model (decision: instance-binding): an actor with
// some privileges on the VMs (Notes-only: VM.Config.Options; CD-ROM: Options and
// VM.Config.CDROM; power: Options and VM.PowerMgmt; a pool administrator: everything on the
// pool's VMs, nothing on the storage) writes a description value they have seen (the
// resource's creating text captured before or after the config step, its finished text,
// the finished text of another resource's VM, the finished text with its instance line
// deleted) and whatever else their privileges allow
// (detach ide2, stop), on the resource's own live VM or on a VM they made by hand at its
// VMID after it was removed. Then each path runs as the provider runs it, and every write
// the provider sends that the actor could not have made alone (from the simulator's
// request log: a destroy, a stop or start, a config write beyond the actor's keys, a
// migration, a clone, a resize, a seed ISO delete) and every object of someone else's the
// provider touched is counted: 0 expected. The residual risks ADR 0015 states are rows
// that run, are logged with what they did, and are counted apart, never passed silently.
// The state-driven paths run with the state this version writes: the uid and the VM's
// SMBIOS uuid (smbios_uuid, decision: state-binding).

type threatActor struct {
	name string
	// keys are the config keys the actor may write; power: it may stop and start;
	// destroy: it may destroy and migrate the pool's VMs.
	keys           []string
	power, destroy bool
}

var threatActors = []threatActor{
	{name: "Notes-only (VM.Config.Options)", keys: []string{"description"}},
	{name: "CD-ROM (Options+CDROM)", keys: []string{"description", "ide2"}},
	{name: "power (Options+PowerMgmt)", keys: []string{"description"}, power: true},
	{name: "pool admin", keys: nil, power: true, destroy: true},
}

// threatTexts are the description values an actor may have seen.
var threatTexts = []string{"creating text before the config step", "creating text after the config step", "finished text", "another VM's finished text",
	"finished text without its instance line"}

// threatTarget is where the actor writes: the resource's own VM, or a VM of their own made
// at its VMID once it was removed: running with two disks of its own; stopped with only
// the template's disk at its size but its own cores, memory and installer ISO; or cloned
// from the template by another user, started and stopped, so that its config is exactly
// the template's clone (decision: clone-history).
var threatTargets = []string{"its own live VM", "a hand-made VM at its VMID", "a stopped hand-made VM at its VMID with the template's disk",
	"a used hand clone of the template at its VMID"}

type threatWorld struct {
	t        *testing.T
	ctx      context.Context
	sim      *pvesim.Sim
	b        *proxmox.Backend
	vmid     int // the resource's VMID, the target's
	other    int // another resource's VM, which the actor copies from
	spec     proxmox.Spec
	texts    map[string]string
	seed     string // the resource's seed volume id
	allocKey string
	inst     string // the resource's VM's SMBIOS uuid, as its state records it
}

// threatPaths: name, whether it applies to the own-VM target (a path the resource's state
// drives acts on its own VM by right there), and the run.
type threatPath struct {
	name     string
	ownToo   bool
	run      func(w *threatWorld)
	residual func(a threatActor, text, target string) string // ADR 0015's residual, "" when none
}

func threatPaths() []threatPath {
	id := func(w *threatWorld) proxmox.ID { return proxmox.ID{VMID: w.vmid, Name: propName} }
	return []threatPath{
		{"create retry", true, func(w *threatWorld) {
			s := w.spec
			s.UID, s.CreatedAt, s.Report = "5a5a5a5a-0000-4000-8000-000000000005", time.Time{}, &proxmox.CreateReport{}
			_, _ = w.b.Create(w.ctx, s, nil)
		}, func(a threatActor, text, target string) string {
			if target == threatTargets[0] && text == threatTexts[1] {
				return "a create of the same name and uid_namespace within TakeoverWindow takes over that configuration's own VM carrying " +
					"the creating text read between its config step and its finish (a genuine interrupted create looks the same)"
			}
			return ""
		}},
		{"refresh", false, func(w *threatWorld) {
			_, _ = w.b.Get(w.ctx, id(w), proxmox.GetOptions{UID: propStateUID, Instance: w.inst})
		}, nil},
		{"update", false, func(w *threatWorld) {
			n := 4
			_ = w.b.Update(w.ctx, id(w), proxmox.Changes{UID: propStateUID, Instance: w.inst, Cores: &n, Note: ptrTo("changed")})
		}, nil},
		{"power action", false, func(w *threatWorld) {
			for _, op := range proxmox.PowerOps {
				_, _ = w.b.Power(w.ctx, id(w), proxmox.PowerOptions{Op: op, UID: propStateUID, ShutdownTimeout: time.Second})
			}
		}, nil},
		{"migrate", false, func(w *threatWorld) {
			to := "pve2"
			_ = w.b.Update(w.ctx, id(w), proxmox.Changes{UID: propStateUID, Instance: w.inst, Node: &to})
		}, nil},
		{"destroy", false, func(w *threatWorld) {
			_ = w.b.DeleteVM(w.ctx, id(w), proxmox.DeleteOptions{Node: "pve1", UID: propStateUID, Instance: w.inst, Seed: proxmox.SeedFile(propName, propStateUID)})
		}, nil},
		{"import", false, func(w *threatWorld) {
			_, _ = w.b.FindByVMID(w.ctx, w.vmid) // an acceptance is counted by runThreatCase
		}, func(a threatActor, text, target string) string {
			if text == threatTexts[4] {
				return "an import accepts a mark without an instance line (the proxy operator's and version 0.1.0's VMs must stay importable), " +
					"warning that it binds the VM's current SMBIOS uuid and what to check; nothing is written until the user applies"
			}
			return ""
		}},
		{"clean-up", true, func(w *threatWorld) {
			_, _ = w.b.CleanOrphans(w.ctx, proxmox.CleanOptions{Grace: 10 * time.Minute, VMs: true, Seeds: false}, nil)
		}, nil},
		{"seed sweep", true, func(w *threatWorld) {
			_, _ = w.b.CleanOrphans(w.ctx, proxmox.CleanOptions{Grace: 0, Seeds: true}, nil)
		}, nil},
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestOwnership_threatActors runs every path against every actor, text and target and
// counts the writes beyond the actor's rights.
func TestOwnership_threatActors(t *testing.T) {
	if testing.Short() {
		t.Skip("the threat-model property test builds a simulator per case")
	}
	cases, writes, residualCases, residualWrites, skipped := 0, 0, 0, 0, 0
	// make test runs a stratified sample: every path, target and actor, with one text each,
	// rotating so that every text runs; make reliability (PROXY_THREAT_FULL=1) the whole matrix.
	full, sampledOut := os.Getenv("PROXY_THREAT_FULL") != "", 0
	for pi, p := range threatPaths() {
		for gi, target := range threatTargets {
			if target == threatTargets[0] && !p.ownToo {
				skipped += len(threatActors) * len(threatTexts)
				continue
			}
			for ai, a := range threatActors {
				for ti, text := range threatTexts {
					if target == threatTargets[3] && text != threatTexts[0] && text != threatTexts[1] {
						skipped++ // a finished text on a hand-made VM is the second target's case
						continue
					}
					inSample := ti == (pi+gi+ai)%len(threatTexts) || (target == threatTargets[3] && ti == 0)
					if !full && !inSample {
						sampledOut++
						continue
					}
					name := fmt.Sprintf("%s/%s/%s/%s", p.name, target, a.name, text)
					t.Run(name, func(t *testing.T) {
						n := runThreatCase(t, p, a, text, target)
						cases++
						why := ""
						if p.residual != nil {
							why = p.residual(a, text, target)
						}
						if why != "" {
							residualCases++
							residualWrites += n
							t.Logf("documented residual (ADR 0015): %s: %d writes beyond the actor's rights", why, n)
							return
						}
						writes += n
						if n != 0 {
							t.Errorf("%d writes beyond the actor's rights", n)
						}
					})
				}
			}
		}
	}
	if !full {
		t.Logf("a sample: %d cases left for make reliability (PROXY_THREAT_FULL=1 runs them)", sampledOut)
	}
	t.Logf("threat model: %d paths x %d actors x %d texts x %d targets: %d cases run (%d not applicable: own-VM cases of state-driven "+
		"paths, finished texts on the used hand clone), "+
		"writes beyond the actor's rights: %d; documented residual cases: %d with %d writes",
		len(threatPaths()), len(threatActors), len(threatTexts), len(threatTargets), cases, skipped, writes, residualCases, residualWrites)
}

// runThreatCase builds the world, lets the actor act, runs the path and counts.
func runThreatCase(t *testing.T, p threatPath, a threatActor, text, target string) int {
	w := newThreatWorld(t)
	act(w, a, text, target)
	before, _ := w.sim.VM(w.vmid)
	otherBefore, _ := w.sim.VM(w.other)
	w.sim.EnableRequestLog()
	p.run(w)
	n := 0
	var what []string
	for _, r := range w.sim.RequestLog() {
		if r.Method == http.MethodGet || r.Status >= 400 {
			continue
		}
		switch {
		case r.VMID == w.other:
			n++
			what = append(what, "foreign VM: "+r.Method+" "+r.Path)
		case r.VMID == w.vmid:
			if beyond(a, r, before, w) {
				n++
				what = append(what, r.Method+" "+r.Path)
			}
		case strings.Contains(r.Path, "/storage/") && r.Method == http.MethodDelete && strings.Contains(r.Path, proxmox.SeedFile(propName, propStateUID)) &&
			seedOnADrive(before, w.seed):
			n++ // a seed ISO a VM has on a drive deleted: no actor holds Datastore.Allocate
			what = append(what, r.Method+" "+r.Path)
		}
	}
	if p.name == "import" {
		if _, err := w.b.FindByVMID(w.ctx, w.vmid); err == nil && target != threatTargets[0] {
			n++
			what = append(what, "import accepted the hand-made VM")
		}
	}
	if after, ok := w.sim.VM(w.other); !ok || !maps.Equal(after.Config, otherBefore.Config) || after.Power != otherBefore.Power {
		n++
		what = append(what, "the other resource's VM changed")
	}
	if n > 0 {
		t.Logf("%s: %v", p.name, what)
	}
	return n
}

// beyond reports a request to the target that the actor could not have made alone.
func beyond(a threatActor, r pvesim.Request, before pvesim.VMState, w *threatWorld) bool {
	if a.destroy && !strings.Contains(r.Path, "/storage/") {
		return false // the pool admin may do anything to the pool's VMs
	}
	switch {
	case strings.HasSuffix(r.Path, "/config"):
		after, ok := w.sim.VM(w.vmid)
		if !ok {
			return false // counted as the destroy
		}
		for k := range mergedKeys(before.Config, after.Config) {
			if before.Config[k] != after.Config[k] && k != "digest" && !slices.Contains(a.keys, k) {
				return true
			}
		}
		return false
	case strings.Contains(r.Path, "/status/"):
		return !a.power
	}
	return true // destroy, migrate, clone, resize
}

func mergedKeys(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// newThreatWorld: a simulator, the resource's VM made by a create 30 minutes ago (inside
// TakeoverWindow, outside the clean-up's grace used here), and another resource's VM.
func newThreatWorld(t *testing.T) *threatWorld {
	sim := pvesim.NewForTest(t, pvesim.Options{Nodes: []string{"pve1", "pve2"}, TemplateAgent: true})
	client, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	b := proxmox.New(client, withProofKey(proxmox.Config{Nodes: sim.Nodes, ISOStorage: sim.ISOStorage, VMIDMin: propLo, VMIDMax: propHi,
		Budgets: proxmox.DefaultBudgets(), Templates: map[string]int{"debian-13": 9001}, TokenID: client.TokenID}, client))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	w := &threatWorld{t: t, ctx: ctx, sim: sim, b: b, allocKey: uidFor("", propName)}
	w.spec = proxmox.Spec{Name: propName, UID: propStateUID, AllocKey: w.allocKey, Node: "pve1", TemplateVMID: 9001, Cores: 1, MemoryMiB: 512,
		UserData: []byte("#cloud-config\n"), CreatedAt: time.Now().Add(-30 * time.Minute).UTC().Truncate(time.Second)}
	vm, err := b.Create(ctx, w.spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.vmid = vm.ID.VMID
	o := w.spec
	o.Name, o.UID, o.AllocKey = "proxy-other", "7e7e7e7e-0000-4000-8000-000000000007", uidFor("", "proxy-other")
	ovm, err := b.Create(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.other = ovm.ID.VMID
	key, err := pveapi.DeriveKey(sim.APIToken, proxmox.ProofKeyLabel)
	if err != nil {
		t.Fatal(err)
	}
	own, _ := sim.VM(w.vmid)
	oth, _ := sim.VM(w.other)
	lines := proxmox.MarkLines{UID: propStateUID, CreatedAt: w.spec.CreatedAt}
	inst := proxmox.ParseMark(own.Description).Instance
	if inst == "" {
		t.Fatalf("the created VM's mark has no instance line: %q", own.Description)
	}
	post := lines
	post.Instance = inst
	extra := proxmox.FormatMarkExtra(w.spec)
	var stripped []string
	for _, l := range strings.Split(own.Description, "\n") {
		if !strings.HasPrefix(l, proxmox.MarkKeyInstance+"=") {
			stripped = append(stripped, l)
		}
	}
	w.inst = inst
	w.texts = map[string]string{
		threatTexts[0]: proxmox.CreatingMark(key, lines, w.vmid, propName) + extra,
		threatTexts[1]: proxmox.CreatingMark(key, post, w.vmid, propName) + extra,
		threatTexts[2]: own.Description,
		threatTexts[3]: strings.ReplaceAll(oth.Description, "proxy-other", propName),
		threatTexts[4]: strings.Join(stripped, "\n"),
	}
	w.seed = sim.ISOStorage + ":iso/" + proxmox.SeedFile(propName, propStateUID)
	return w
}

// act is what the actor does: on the target, the text, and what its privileges allow.
func act(w *threatWorld, a threatActor, text, target string) {
	t := w.t
	cfg := map[string]string{"description": w.texts[text]}
	if target == threatTargets[3] {
		handClone(w, w.texts[text])
		return
	}
	if target != threatTargets[0] {
		own, _ := w.sim.VM(w.vmid)
		if err := w.sim.DeleteVM(w.vmid); err != nil {
			t.Fatal(err)
		}
		spec := pvesim.VMSpec{VMID: w.vmid, Node: own.Node, Name: propName, Power: "running", Config: map[string]string{
			"description": w.texts[text],
			"scsi0":       fmt.Sprintf("local-lvm:vm-%d-disk-0,size=32G", w.vmid),
			"scsi1":       fmt.Sprintf("local-lvm:vm-%d-disk-1,size=100G", w.vmid),
		}}
		if target == threatTargets[2] {
			spec.Power, spec.Config = "stopped", map[string]string{
				"description": w.texts[text], "scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=3G", w.vmid), "cores": "8", "memory": "8192",
				"ide2": "local:iso/debian-13-netinst.iso,media=cdrom",
			}
		}
		if err := w.sim.AddVM(spec); err != nil {
			t.Fatal(err)
		}
		return
	}
	if slices.Contains(a.keys, "ide2") || a.destroy {
		cfg["ide2"] = "none,media=cdrom"
	}
	p := pvesim.VMPatch{Config: cfg}
	if a.power {
		p.Power = "stopped"
	}
	if err := w.sim.SetVMState(w.vmid, p); err != nil {
		t.Fatal(err)
	}
}

// seedOnADrive reports whether the VM had the seed on a drive before the path ran.
func seedOnADrive(v pvesim.VMState, seed string) bool {
	for _, val := range v.Config {
		if strings.Contains(val, seed) {
			return true
		}
	}
	return false
}

// handClone removes the resource's VM and has another user (mallory@pve, an administrator)
// clone the template onto its VMID and name, start and stop it, and write desc into its
// notes: a VM whose config is exactly the template's clone, used.
func handClone(w *threatWorld, desc string) {
	t := w.t
	own, _ := w.sim.VM(w.vmid)
	if err := w.sim.DeleteVM(w.vmid); err != nil {
		t.Fatal(err)
	}
	a := newSimAdmin(t, w.sim)
	a.pveum([]string{"pveum", "user", "add", "mallory@pve"})
	secret := a.pveum([]string{"pveum", "user", "token", "add", "mallory@pve", "hand", "--privsep", "0"})
	a.pveum([]string{"pveum", "acl", "modify", "/", "--roles", "Administrator", "--users", "mallory@pve"})
	c, err := pveapi.New(pveapi.Options{Endpoint: w.sim.Endpoint, Token: "mallory@pve!hand=" + secret, CAPEM: w.sim.CAPEM,
		RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := w.sim.VM(9001)
	wait := func(node, upid string, err error) {
		if err != nil {
			t.Fatal(err)
		}
		for range 2000 {
			if ts, err := c.TaskStatus(w.ctx, node, upid); err != nil || ts.Status == "stopped" {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("task %s did not stop", upid)
	}
	upid, err := c.Clone(w.ctx, tmpl.Node, 9001, pveapi.CloneParams{NewID: w.vmid, Name: propName, Target: own.Node})
	wait(tmpl.Node, upid, err)
	upid, err = c.Start(w.ctx, own.Node, w.vmid)
	wait(own.Node, upid, err)
	upid, err = c.Stop(w.ctx, own.Node, w.vmid)
	wait(own.Node, upid, err)
	if err := c.SetVMConfig(w.ctx, own.Node, w.vmid, map[string]string{"description": desc}); err != nil {
		t.Fatal(err)
	}
}
