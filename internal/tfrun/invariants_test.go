package tfrun

import (
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

const testMark = "proxy-operator-managed=true\nproxy-operator-uid=u\nproxy-operator-created-at=2026-01-01T00:00:00Z"

func stateOf(vms ...Resource) *State {
	for i := range vms {
		vms[i].Mode, vms[i].Type = "managed", "proxy_vm"
	}
	return &State{Resources: vms}
}

func vmRes(addr string, vmid int, name string) Resource {
	return Resource{Address: addr, Values: map[string]any{"vmid": float64(vmid), "name": name, "uid": "u"}}
}

func has(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestChecker(t *testing.T) {
	sim := pvesim.NewForTest(t, pvesim.Options{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(sim.AddVM(pvesim.VMSpec{VMID: 500, Name: "foreign"}))
	chk := NewChecker(sim, "px-")
	if f := chk.Live(); !f.OK() || len(f.Stale) > 0 {
		t.Fatalf("a fresh simulator: %v", f.Err())
	}
	if f := chk.Gone(); !f.OK() {
		t.Fatalf("a fresh simulator is not clean: %v", f.Err())
	}

	must(sim.AddVM(pvesim.VMSpec{VMID: 1000, Name: "px-a", Config: map[string]string{"description": testMark}}))
	st := stateOf(vmRes("proxy_vm.a", 1000, "px-a"))
	if f := chk.Live(st); !f.OK() {
		t.Fatalf("one tracked VM: %v", f.Err())
	}
	// A state without a uid tracks nothing: holding the VM is a violation.
	nouid := vmRes("proxy_vm.n", 1000, "px-a")
	delete(nouid.Values, "uid")
	if f := chk.Live(stateOf(nouid)); !has(f.Violations, "carries another uid") {
		t.Errorf("a state without a uid holding VM 1000: %+v", f)
	}

	// Untracked VM and a seed without its VM are orphans; Gone reports both.
	must(sim.AddVM(pvesim.VMSpec{VMID: 1001, Name: "px-b", Config: map[string]string{"description": testMark}}))
	must(sim.AddISO("pve1", sim.ISOStorage, "px-c-seed.iso", []byte("iso")))
	f := chk.Live(st)
	if !has(f.Orphans, "VM 1001 (px-b)") || !has(f.Orphans, "px-c-seed.iso") || len(f.Violations) != 0 {
		t.Errorf("orphans not found: %+v", f)
	}
	g := chk.Gone()
	if !has(g.Orphans, "VM 1000") || !has(g.Orphans, "VM 1001") || !has(g.Orphans, "px-c-seed.iso") {
		t.Errorf("Gone missed leftovers: %+v", g)
	}

	// Two VMs with one name; a state entry whose VM is gone (stale, strict violation);
	// two states holding one VMID; a state entry pointing at a renamed VM.
	must(sim.AddVM(pvesim.VMSpec{VMID: 1002, Name: "px-a", Config: map[string]string{"description": testMark}}))
	st2 := stateOf(vmRes("proxy_vm.x", 1005, "px-x"), vmRes("proxy_vm.b", 1001, "px-zzz"))
	f = chk.Live(st, st2, stateOf(vmRes("proxy_vm.a2", 1000, "px-a")))
	for _, want := range []string{"is named \"px-b\", the state says \"px-zzz\"", "both hold VMID 1000"} {
		if !has(f.Violations, want) {
			t.Errorf("violation %q not found in %q", want, f.Violations)
		}
	}
	if !has(f.Stale, "no VM 1005") || has(f.Violations, "no VM 1005") || !has(f.Strict().Violations, "no VM 1005") {
		t.Errorf("stale entry: %+v", f)
	}
	// A tainted entry whose VM is gone is not stale: the next refresh drops it.
	tainted := vmRes("proxy_vm.t", 1007, "px-t")
	tainted.Tainted = true
	if f := chk.Live(stateOf(tainted)); len(f.Stale) != 0 {
		t.Errorf("tainted entry reported stale: %+v", f)
	}
	// A tainted entry naming a VMID that another VM of the same workspace holds under its
	// own name (a create interrupted after choosing the VMID, before its clone won) holds
	// nothing; a tainted entry that does name the VM there still counts.
	lost := vmRes("proxy_vm.lost", 1000, "px-lost")
	lost.Tainted = true
	if f := chk.Live(stateOf(vmRes("proxy_vm.a", 1000, "px-a"), lost)); has(f.Violations, "both hold VMID") {
		t.Errorf("a tainted entry for another name counted as holding the VMID: %q", f.Violations)
	}
	dup := vmRes("proxy_vm.dup", 1000, "px-a")
	dup.Tainted = true
	if f := chk.Live(stateOf(vmRes("proxy_vm.a", 1000, "px-a"), dup)); !has(f.Violations, "both hold VMID 1000") {
		t.Errorf("a tainted entry for the same VM not counted: %q", f.Violations)
	}

	// Same-name VMs coexist (create_before_destroy, two workspaces): each tracked once is
	// fine, and so is one refused on purpose; their own seeds are used by their ide2.
	if f := chk.Live(st, stateOf(vmRes("proxy_vm.a", 1002, "px-a"), vmRes("proxy_vm.b", 1001, "px-b"))); has(f.Violations, "named px-a") || has(f.Orphans, "VM 1002") {
		t.Errorf("two tracked VMs of one name: %+v", f)
	}
	const u1, u2 = "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10", "6f1d2c3b-aaaa-4bbb-8ccc-123456789abc"
	must(sim.AddISO("pve1", sim.ISOStorage, "px-a-"+u1+"-seed.iso", []byte("iso")))
	must(sim.AddISO("pve1", sim.ISOStorage, "px-a-"+u2+"-seed.iso", []byte("iso")))
	must(sim.SetVMState(1002, pvesim.VMPatch{Config: map[string]string{"ide2": UIDSeedVolID(sim.ISOStorage, "px-a", u1) + ",media=cdrom"}}))
	chk.Refused = map[int]bool{1001: true}
	f = chk.Live(st, stateOf(vmRes("proxy_vm.a", 1002, "px-a")))
	if has(f.Orphans, u1) || !has(f.Orphans, u2) || has(f.Orphans, "VM 1001") {
		t.Errorf("per-VM seeds and refused VMs: %+v", f.Orphans)
	}
	chk.Refused = nil

	// A foreign guest changed, and one destroyed.
	must(sim.SetVMState(500, pvesim.VMPatch{Config: map[string]string{"cores": "8"}}))
	must(sim.DeleteVM(100))
	f = chk.Live(st)
	if !has(f.Violations, "foreign guest 500 (foreign) was changed: config cores") || !has(f.Violations, "foreign guest 100 (web01) was destroyed") {
		t.Errorf("foreign changes not found: %q", f.Violations)
	}
	if f.Err() == nil {
		t.Errorf("Err is nil with violations")
	}
}

func TestSeedName(t *testing.T) {
	for volid, want := range map[string]string{
		"proxy-seeds:iso/px-a-seed.iso":                                  "px-a",
		"proxy-seeds:iso/other.iso":                                      "",
		"local:vztmpl/px-a-seed.iso":                                     "",
		SeedVolID("s", "n"):                                              "n",
		UIDSeedVolID("s", "n-x", "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10"): "n-x",
		// a seed swapped in place (decision: seed-swap) is still the VM's
		"s:iso/n-x-0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10-2-seed.iso": "n-x",
	} {
		if got, _ := seedName(volid); got != want {
			t.Errorf("seedName(%q) = %q, want %q", volid, got, want)
		}
	}
}

// TestCheckerHA: an HA resource or rule the baseline did not hold is an orphan after a
// destroy; a baseline HA resource's configuration or rule changed or deleted is a
// violation, while its CRM state may move.
func TestCheckerHA(t *testing.T) {
	sim := pvesim.NewForTest(t, pvesim.Options{Nodes: []string{"pve1", "pve2"}})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(sim.AddVM(pvesim.VMSpec{VMID: 500, Name: "foreign", Power: "running"}))
	must(sim.AddVM(pvesim.VMSpec{VMID: 501, Name: "foreign-2", Power: "running"}))
	must(sim.AddHAResource(500, ""))
	must(sim.AddHAResource(501, ""))
	must(sim.AddHARule(pvesim.HARuleState{ID: "theirs", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:500", "vm:501"}}))
	chk := NewChecker(sim, "px-")
	if f := chk.Gone(); !f.OK() {
		t.Fatalf("the baseline's HA resources and rule: %v", f.Err())
	}

	must(sim.AddVM(pvesim.VMSpec{VMID: 1000, Name: "px-a", Power: "running", Config: map[string]string{"description": testMark}}))
	must(sim.AddHAResource(1000, ""))
	must(sim.AddHARule(pvesim.HARuleState{ID: "px-apart", Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:1000", "vm:501"}}))
	f := chk.Gone()
	if !has(f.Orphans, "HA resource vm:1000 left") || !has(f.Orphans, "HA rule px-apart") {
		t.Errorf("the scenario's HA resource and rule left: %+v", f)
	}
	if len(f.Violations) != 0 {
		t.Errorf("nothing foreign changed yet: %v", f.Violations)
	}

}
