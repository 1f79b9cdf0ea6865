package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The ownership property (decision: identity-and-adoption, decision: creating-proof): on
// every path the provider takes (a create's probe walk and by-name lookup, refresh, the
// wait after a start, update, a seed swap, power, the power action, migration, destroy,
// import, the data sources and the list resource) and for every kind of VM that is not the resource's but looks like it
// (a mark without a uid, another uid, another namespace's create, a forged creating line
// without or with a bad proof, a creating description copied to another VMID, a proof
// made with a rotated token, the operator's mark, no mark), no write reaches that VM:
// counted from the simulator's request log (every non-GET request naming its VMID), and
// its config, power state and seed ISO compared before and after. Each case runs the
// backend the provider configures (withProofKey: the key derived from the simulator's
// token) over HTTPS against a fresh simulator, with the uid a resource's state carries.

const (
	propName = "proxy-prop"
	propLo   = 2000
	propHi   = 2099
)

// propVariant is a foreign VM's description, given the proof key and its VMID.
type propVariant struct {
	name string
	desc func(key []byte, vmid int) string
}

var propAt = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

const (
	propOtherUID = "6f1d2c3b-aaaa-4bbb-8ccc-123456789abc"
	propStateUID = "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10" // the resource's own uid, in its state
)

func propVariants() []propVariant {
	creating := proxmox.MarkLines{UID: propOtherUID, CreatedAt: propAt}
	return []propVariant{
		{"no uid", func([]byte, int) string { return "proxy-operator-managed=true\n\nmade by hand" }},
		{"other uid", func([]byte, int) string {
			return proxmox.MarkLines{UID: propOtherUID, CreatedAt: propAt}.Format() + "\nproxy-operator-created-by=terraform-provider-proxy"
		}},
		{"other namespace", func(key []byte, vmid int) string {
			l := creating
			l.Namespace = "team-b"
			return proxmox.CreatingMark(key, l, vmid, propName)
		}},
		{"forged creating line, no proof", func([]byte, int) string {
			l := creating
			l.Creating = true
			return l.Format()
		}},
		{"forged creating line, bad proof", func([]byte, int) string {
			l := creating
			l.Creating, l.Proof = true, "bm90IGEgcHJvb2Y"
			return l.Format()
		}},
		{"copied description at another VMID", func(key []byte, vmid int) string {
			return proxmox.CreatingMark(key, creating, vmid+1, propName)
		}},
		{"proof of a rotated token", func(_ []byte, vmid int) string {
			old, err := pveapi.DeriveKey("root@pam!tf=11111111-2222-3333-4444-555555555555", proxmox.ProofKeyLabel)
			if err != nil {
				panic(err)
			}
			return proxmox.CreatingMark(old, creating, vmid, propName)
		}},
		{"operator mark", func([]byte, int) string { return proxmox.FormatMark(propOtherUID, propAt) }},
		{"unmarked", func([]byte, int) string { return "a VM of the same name, made by hand" }},
	}
}

// propCase is one path run against one foreign VM.
type propCase struct {
	t       *testing.T
	ctx     context.Context
	sim     *pvesim.Sim
	b       *proxmox.Backend
	vmid    int // the foreign VM's
	allocID string
}

type propPath struct {
	name string
	// atProbe: the foreign VM sits on the name's first probe VMID (else on one no create
	// of the name probes).
	atProbe bool
	run     func(c *propCase)
}

func propPaths() []propPath {
	id := func(c *propCase) proxmox.ID { return proxmox.ID{VMID: c.vmid, Name: propName} }
	spec := func(c *propCase) proxmox.Spec {
		return proxmox.Spec{Name: propName, UID: "3c2e8a41-5b6d-4f70-8a9b-0c1d2e3f4a5b", AllocKey: c.allocID, Node: "pve1",
			TemplateVMID: 9001, Cores: 1, MemoryMiB: 512, UserData: []byte("#cloud-config\n"), Report: &proxmox.CreateReport{}}
	}
	notOurs := func(c *propCase, what string, err error) {
		if !errors.Is(err, proxmox.ErrNotFound) {
			c.t.Errorf("%s: %v, want ErrNotFound (not this resource's VM)", what, err)
		}
	}
	return []propPath{
		{"create: probe walk", true, func(c *propCase) {
			vm, err := c.b.Create(c.ctx, spec(c), nil)
			if err == nil && vm.ID.VMID == c.vmid {
				c.t.Errorf("the create landed on the foreign VM's VMID %d", c.vmid)
			}
		}},
		{"create: by-name lookup", false, func(c *propCase) {
			vm, err := c.b.Create(c.ctx, spec(c), nil)
			if err == nil && vm.ID.VMID == c.vmid {
				c.t.Errorf("the create landed on the foreign VM's VMID %d", c.vmid)
			}
		}},
		{"refresh", true, func(c *propCase) {
			vm, err := c.b.Get(c.ctx, id(c), proxmox.GetOptions{UID: propStateUID})
			notOurs(c, "refresh", err)
			if err == nil && vm.UID != propStateUID {
				c.t.Errorf("refresh read uid %q into a state of uid %s", vm.UID, propStateUID)
			}
		}},
		{"refresh of a state without a uid", true, func(c *propCase) {
			_, err := c.b.Get(c.ctx, id(c), proxmox.GetOptions{})
			notOurs(c, "refresh", err)
		}},
		{"settle after a start", true, func(c *propCase) {
			_, err := c.b.WaitReady(c.ctx, id(c), proxmox.ReadyOptions{UID: propStateUID})
			notOurs(c, "settle", err)
		}},
		{"update", true, func(c *propCase) {
			br, n := "vmbr1", 4
			notOurs(c, "update", c.b.Update(c.ctx, id(c), proxmox.Changes{UID: propStateUID, Cores: &n, Bridge: &br}))
		}},
		{"power: stop, then start", true, func(c *propCase) {
			notOurs(c, "stop", c.b.Update(c.ctx, id(c), proxmox.Changes{UID: propStateUID, Stop: true}))
			notOurs(c, "start", c.b.Update(c.ctx, id(c), proxmox.Changes{UID: propStateUID, Start: true}))
		}},
		{"seed swap (cloud_init_change = restart)", true, func(c *propCase) {
			notOurs(c, "seed swap", c.b.Update(c.ctx, id(c), proxmox.Changes{UID: propStateUID, UserData: []byte("#cloud-config\n"),
				UserDataKnown: true, Reseed: &proxmox.Reseed{}}))
		}},
		{"power action", true, func(c *propCase) {
			for _, op := range proxmox.PowerOps {
				_, err := c.b.Power(c.ctx, id(c), proxmox.PowerOptions{Op: op, UID: propStateUID, ShutdownTimeout: time.Second})
				// The VM exists: the action's refusal says it is not this resource's, not that it is gone.
				if !errors.Is(err, proxmox.ErrNotOurs) || errors.Is(err, proxmox.ErrNotFound) {
					c.t.Errorf("power %s: %v, want ErrNotOurs (not this resource's VM), not ErrNotFound", op, err)
				}
			}
		}},
		{"migrate (node change)", true, func(c *propCase) {
			to := "pve2"
			notOurs(c, "migrate", c.b.Update(c.ctx, id(c), proxmox.Changes{UID: propStateUID, Node: &to}))
		}},
		{"destroy", true, func(c *propCase) {
			err := c.b.DeleteVM(c.ctx, id(c), proxmox.DeleteOptions{Node: "pve1", UID: propStateUID, Seed: proxmox.SeedFile(propName, propStateUID)})
			if err != nil {
				c.t.Errorf("destroy: %v, want success leaving the VM alone", err)
			}
		}},
		{"ha: set, then remove (update)", true, func(c *propCase) {
			h := proxmox.HA{State: proxmox.HAStateStopped, MaxRestart: 7, MaxRelocate: 7}
			notOurs(c, "ha set", c.b.Update(c.ctx, id(c), proxmox.Changes{UID: propStateUID, HA: &proxmox.HAChange{Set: &h}}))
			notOurs(c, "ha ignored", c.b.Update(c.ctx, id(c), proxmox.Changes{UID: propStateUID, HA: &proxmox.HAChange{Set: &proxmox.HA{State: proxmox.HAStateIgnored}}}))
			notOurs(c, "ha remove", c.b.Update(c.ctx, id(c), proxmox.Changes{UID: propStateUID, HA: &proxmox.HAChange{Remove: true}}))
		}},
		{"destroy of a resource with ha", true, func(c *propCase) {
			err := c.b.DeleteVM(c.ctx, id(c), proxmox.DeleteOptions{Node: "pve1", UID: propStateUID, HA: true, Seed: proxmox.SeedFile(propName, propStateUID)})
			if err != nil {
				c.t.Errorf("destroy: %v, want success leaving the VM alone", err)
			}
		}},
		{"destroy without a uid", true, func(c *propCase) {
			if err := c.b.DeleteVM(c.ctx, id(c), proxmox.DeleteOptions{Node: "pve1"}); err != nil {
				c.t.Errorf("destroy: %v, want success leaving the VM alone", err)
			}
		}},
		{"import", true, func(c *propCase) {
			for _, find := range []func() (proxmox.ID, error){
				func() (proxmox.ID, error) { return c.b.FindByVMID(c.ctx, c.vmid) },
				func() (proxmox.ID, error) { return c.b.FindByName(c.ctx, propName) },
			} {
				got, err := find()
				if err != nil {
					continue // refused: nothing to own
				}
				vm, err := c.b.Get(c.ctx, got, proxmox.GetOptions{AnyOwner: true})
				if err == nil && (vm.UID == "" || vm.Creating) {
					c.t.Errorf("import accepted VM %d with uid %q, creating %v", got.VMID, vm.UID, vm.Creating)
				}
			}
		}},
		{"data sources (proxy_vm, proxy_vms, orphans)", true, func(c *propCase) {
			if _, _, err := c.b.ListWithSkipped(c.ctx); err != nil {
				c.t.Errorf("list: %v", err)
			}
			if _, err := c.b.Get(c.ctx, id(c), proxmox.GetOptions{AnyOwner: true, FreshListing: true}); err != nil && !errors.Is(err, proxmox.ErrNotFound) {
				c.t.Errorf("data source read: %v", err)
			}
			if _, err := c.b.OrphanSeedsOn(c.ctx, []string{"pve1"}); err != nil {
				c.t.Errorf("orphan seeds: %v", err)
			}
		}},
		{"list resource", true, func(c *propCase) {
			if _, _, err := c.b.ListWithSkipped(c.ctx); err != nil {
				c.t.Errorf("list: %v", err)
			}
		}},
	}
}

// TestOwnership_property runs every path against every variant and counts the writes that
// reached the foreign VM: the total must be 0.
func TestOwnership_property(t *testing.T) {
	paths, variants := propPaths(), propVariants()
	allocID := uidFor("", propName)
	probes := map[int]bool{}
	for a := range 32 {
		probes[proxmox.ProbeVMID(allocID, a, propLo, propHi)] = true
	}
	offProbe := 0
	for v := propLo; v <= propHi; v++ {
		if !probes[v] {
			offProbe = v
			break
		}
	}
	cases, writes := 0, 0
	for _, p := range paths {
		for _, v := range variants {
			t.Run(p.name+"/"+v.name, func(t *testing.T) {
				vmid := offProbe
				if p.atProbe {
					vmid = proxmox.ProbeVMID(allocID, 0, propLo, propHi)
				}
				n := runPropCase(t, p, v, vmid, allocID)
				cases++
				writes += n
			})
		}
	}
	t.Logf("ownership property: %d paths x %d variants = %d cases, writes to foreign VMs: %d", len(paths), len(variants), cases, writes)
	if cases != len(paths)*len(variants) {
		t.Errorf("%d cases ran, want %d", cases, len(paths)*len(variants))
	}
}

// runPropCase sets up one foreign VM, runs the path, and returns the writes it received.
func runPropCase(t *testing.T, p propPath, v propVariant, vmid int, allocID string) int {
	sim := pvesim.NewForTest(t, pvesim.Options{Nodes: []string{"pve1", "pve2"}, TemplateAgent: true})
	client, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	b := proxmox.New(client, withProofKey(proxmox.Config{Nodes: sim.Nodes, ISOStorage: sim.ISOStorage, VMIDMin: propLo, VMIDMax: propHi,
		Budgets: proxmox.DefaultBudgets()}, client))
	key, err := pveapi.DeriveKey(sim.APIToken, proxmox.ProofKeyLabel)
	if err != nil {
		t.Fatal(err)
	}
	// The foreign VM: running, with devices of its own and its own seed ISO.
	seed := proxmox.SeedFile(propName, propOtherUID)
	if err := sim.AddISO("pve1", sim.ISOStorage, seed, []byte("the foreign VM's seed")); err != nil {
		t.Fatal(err)
	}
	volid := sim.ISOStorage + ":iso/" + seed
	if err := sim.AddVM(pvesim.VMSpec{VMID: vmid, Name: propName, Power: "running", ShipsAgent: true, Config: map[string]string{
		"description": v.desc(key, vmid),
		"scsi1":       "local-lvm:vm-" + fmt.Sprint(vmid) + "-disk-1,size=8G",
		"serial0":     "socket",
		"net0":        "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1",
		"ide2":        volid + ",media=cdrom",
		"agent":       "1",
		"tags":        "foreign",
	}}); err != nil {
		t.Fatal(err)
	}
	// Its HA resource, made by hand (decision: ha-placement): never changed nor removed.
	if err := sim.AddHAResource(vmid, "started"); err != nil {
		t.Fatal(err)
	}
	haBefore, _ := sim.HAResourceOf(vmid)
	before, _ := sim.VM(vmid)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sim.EnableRequestLog()
	p.run(&propCase{t: t, ctx: ctx, sim: sim, b: b, vmid: vmid, allocID: allocID})

	var wrote []string
	for _, r := range sim.RequestLog() {
		if r.Method != http.MethodGet && (r.VMID == vmid || strings.Contains(r.Path, seed) || strings.Contains(r.Path, "/cluster/ha/")) {
			wrote = append(wrote, r.Method+" "+r.Path)
		}
	}
	after, ok := sim.VM(vmid)
	switch {
	case !ok:
		wrote = append(wrote, "the VM is gone")
	case after.Description != before.Description || after.Power != before.Power || after.Node != before.Node ||
		!maps.Equal(after.Config, before.Config):
		wrote = append(wrote, fmt.Sprintf("the VM changed: %+v -> %+v", before, after))
	}
	if haAfter, ok := sim.HAResourceOf(vmid); !ok || haAfter.State != haBefore.State || haAfter.Comment != haBefore.Comment ||
		!reflect.DeepEqual([]any{haAfter.MaxRestart, haAfter.MaxRelocate, haAfter.Failback}, []any{haBefore.MaxRestart, haBefore.MaxRelocate, haBefore.Failback}) {
		wrote = append(wrote, fmt.Sprintf("its HA resource changed: %+v -> %+v (present %v)", haBefore, haAfter, ok))
	}
	if data, ok := sim.ISO("pve1", volid); !ok || string(data) != "the foreign VM's seed" {
		wrote = append(wrote, "its seed ISO changed or is gone")
	}
	if len(wrote) > 0 {
		t.Errorf("%s, %s: %d writes reached the foreign VM %d: %v", p.name, v.name, len(wrote), vmid, wrote)
	}
	return len(wrote)
}
