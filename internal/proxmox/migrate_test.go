package proxmox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// sharedTemplate puts the template's disks on the shared storage ceph-vm of every node.
func sharedTemplate(f *fakeAPI, vmid int) {
	f.mutate(vmid, func(v *fakeVM) {
		for k, val := range v.Config {
			if isDiskKey(k) {
				v.Config[k] = strings.Replace(val, "local-lvm:", "ceph-vm:", 1)
			}
		}
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.nodes {
		f.storages[n+"/ceph-vm"] = pveapi.StorageStatus{Type: "rbd", Content: "images", Total: 500 << 30, Avail: 400 << 30, Active: 1, Enabled: 1, Shared: 1}
	}
}

// localStorage registers local-lvm (not shared) on every node.
func localStorage(f *fakeAPI) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.nodes {
		f.storages[n+"/local-lvm"] = pveapi.StorageStatus{Type: "lvmthin", Content: "images,rootdir", Total: 100 << 30, Avail: 90 << 30, Active: 1, Enabled: 1}
	}
}

// TestCreate_localTemplateClonesOnItsNodeThenMigrates: a template on local-lvm is cloned
// on its own node without target (PVE would refuse it), the stopped clone migrates
// offline to the spec's node, and the seed upload, config and start happen there.
func TestCreate_localTemplateClonesOnItsNodeThenMigrates(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	s := h.spec()
	s.Node = "pv1-2"
	vm := h.create(s)
	c := h.f.callsOf("Clone")[0]
	if c.Node != "pv1-1" || c.Args["target"] != "" {
		t.Errorf("clone %+v, want on pv1-1 without target", c)
	}
	if !strings.Contains(c.Args["description"], testUID) {
		t.Errorf("the mark is not in the clone call: %q", c.Args["description"])
	}
	m := h.f.callsOf("Migrate")
	if len(m) != 1 || m[0].Node != "pv1-1" || m[0].Args["target"] != "pv1-2" || m[0].Args["online"] != "0" {
		t.Fatalf("migrations %+v, want one offline pv1-1 -> pv1-2", m)
	}
	order := strings.Join(h.f.methods(), " ")
	if i, j := strings.Index(order, "Migrate"), strings.Index(order, "UploadISO"); i < 0 || j < i {
		t.Errorf("the seed upload must follow the migration: %s", order)
	}
	if up := h.f.callsOf("UploadISO")[0]; up.Node != "pv1-2" {
		t.Errorf("seed uploaded on %s", up.Node)
	}
	for _, st := range h.f.callsOf("Start") {
		if st.Node != "pv1-2" {
			t.Errorf("start on %s", st.Node)
		}
	}
	if vm.Node != "pv1-2" || h.f.vm(testVMID0).Node != "pv1-2" {
		t.Errorf("VM on %q", vm.Node)
	}
}

// TestCreate_adoptedCloneOnTemplateNodeIsMigrated: an interruption between the clone and
// the migration leaves the stopped VM, still marked "creating", on the template's node;
// the retry takes it over (destroys it and clones afresh, as every takeover does) and
// migrates the new clone before provisioning.
func TestCreate_adoptedCloneOnTemplateNodeIsMigrated(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	h.addInterrupted(testVMID0, testName, prevUID)
	s := h.spec()
	s.Node = "pv1-2"
	vm := h.create(s)
	if n, d := h.f.calls("Clone"), h.f.calls("Destroy"); n != 1 || d != 1 {
		t.Errorf("%d clones and %d destroys for a taken-over VM, want it destroyed and cloned afresh", n, d)
	}
	if m := h.f.callsOf("Migrate"); len(m) != 1 || m[0].Args["target"] != "pv1-2" {
		t.Errorf("migrations %+v", m)
	}
	if vm.Node != "pv1-2" {
		t.Errorf("VM on %q", vm.Node)
	}
}

// TestPlace_spreadsParallelCreatesAndSkipsDownNodes: four VMs without a node land two per
// node, counting the ones placed but not listed yet; a node that does not answer is skipped.
func TestPlace_spreadsParallelCreatesAndSkipsDownNodes(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	got := map[string]int{}
	for _, name := range []string{"p1", "p2", "p3", "p4"} {
		n, err := h.b.place(h.ctx, nil, name)
		if err != nil {
			t.Fatal(err)
		}
		got[n]++
	}
	if got["pv1-1"] != 2 || got["pv1-2"] != 2 {
		t.Errorf("placements %v, want two per node", got)
	}
	// Listed proxy VMs count: two more on pv1-1 send the next one to pv1-2.
	res := []pveapi.Resource{
		{VMID: 200, Node: "pv1-1", Type: "qemu", Name: "x1", Tags: ManagedTag},
		{VMID: 201, Node: "pv1-1", Type: "qemu", Name: "x2", Tags: "prod;" + ManagedTag},
		{VMID: 202, Node: "pv1-1", Type: "qemu", Name: "foreign"},
	}
	if n, _ := h.b.place(h.ctx, res, "p5"); n != "pv1-2" {
		t.Errorf("p5 placed on %s, want pv1-2", n)
	}
	h.f.failNext("NodeStatus", fixtureErr("err_595"))
	if n, _ := h.b.place(h.ctx, nil, "p6"); n != "pv1-2" {
		t.Errorf("p6 placed on %s with pv1-1 down, want pv1-2", n)
	}
}

// TestUpdate_nodeChangeMigratesWithTheSeed: a node change migrates a running VM online with
// its local disks (targetstorage the provider's storage), after ejecting its seed ISO and
// uploading it to the target; afterwards the seed is attached on the target and deleted
// from the source.
func TestUpdate_nodeChangeMigratesWithTheSeed(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	h.b.cfg.Storage = "local-lvm"
	h.create(h.spec())
	mac := h.f.vm(testVMID0).Config["net0"]
	to := "pv1-2"
	if err := h.b.Update(h.ctx, ID{VMID: testVMID0, Name: testName}, Changes{Node: &to, UserData: []byte("#cloud-config\n"), UserDataKnown: true, UID: testUID}); err != nil {
		t.Fatal(err)
	}
	m := h.f.callsOf("Migrate")
	if len(m) != 1 || m[0].Args["online"] != "1" || m[0].Args["with-local-disks"] != "1" || m[0].Args["targetstorage"] != "local-lvm" {
		t.Fatalf("migrations %+v", m)
	}
	v := h.f.vm(testVMID0)
	if v.Node != "pv1-2" || v.Config["net0"] != mac || !strings.HasPrefix(v.Config["ide2"], "proxy-seeds:iso/"+seedFile(testName, testUID)) {
		t.Errorf("after the migration: node %s net0 %q ide2 %q", v.Node, v.Config["net0"], v.Config["ide2"])
	}
	if _, ok := h.f.iso("pv1-2", fakeISOStorage, seedFile(testName, testUID)); !ok {
		t.Error("the seed is not on the target")
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); ok {
		t.Error("the seed is still on the source")
	}
	var ejected bool
	for _, c := range h.f.callsOf("SetVMConfig") {
		if c.Node == "pv1-1" && c.Args["ide2"] == "none,media=cdrom" {
			ejected = true
		}
	}
	if !ejected {
		t.Error("the seed was not ejected before the migration")
	}
}

// TestUpdate_failedMigrationRestoresTheSeed: a migration task that fails leaves the VM on
// its node with its seed attached, the copy on the target deleted, and says which nodes.
func TestUpdate_failedMigrationRestoresTheSeed(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	h.create(h.spec())
	ide2 := h.f.vm(testVMID0).Config["ide2"]
	h.f.failTask("qmigrate", "migration aborted")
	to := "pv1-2"
	err := h.b.Update(h.ctx, ID{VMID: testVMID0, Name: testName}, Changes{Node: &to, UserData: []byte("#cloud-config\n"), UserDataKnown: true, UID: testUID})
	if err == nil || !strings.Contains(err.Error(), "from node pv1-1 to node pv1-2") || !strings.Contains(err.Error(), "migration aborted") {
		t.Fatalf("err %v", err)
	}
	v := h.f.vm(testVMID0)
	if v.Node != "pv1-1" || v.Config["ide2"] != ide2 {
		t.Errorf("after the failure: node %s ide2 %q (was %q)", v.Node, v.Config["ide2"], ide2)
	}
	if _, ok := h.f.iso("pv1-2", fakeISOStorage, seedFile(testName, testUID)); ok {
		t.Error("the seed copy on the target was left")
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); !ok {
		t.Error("the seed on the source was lost")
	}
}

// TestUpdate_migrationTimeoutNamesTheTask: a migration that outlives the update timeout
// says so, with both nodes and the task, and that it may still run.
func TestUpdate_migrationTimeoutNamesTheTask(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	h.create(h.spec())
	h.f.mu.Lock()
	for _, n := range h.f.nodes { // a shared seed storage: the migration is the only task
		st := h.f.storages[n+"/"+fakeISOStorage]
		st.Shared = 1
		h.f.storages[n+"/"+fakeISOStorage] = st
	}
	h.f.taskPolls = 1 << 30 // the task stays running
	h.f.mu.Unlock()
	ctx, cancel := context.WithTimeout(h.ctx, 200*time.Millisecond)
	defer cancel()
	to := "pv1-2"
	err := h.b.Update(ctx, ID{VMID: testVMID0, Name: testName}, Changes{Node: &to, UserData: []byte("#cloud-config\n"), UserDataKnown: true, UID: testUID})
	if err == nil || !strings.Contains(err.Error(), "did not finish within the update timeout") ||
		!strings.Contains(err.Error(), "from node pv1-1 to node pv1-2") || !strings.Contains(err.Error(), ":qmigrate:") {
		t.Fatalf("err %v", err)
	}
	// On a shared seed storage the seed is neither ejected nor copied.
	for _, c := range h.f.callsOf("SetVMConfig") {
		if c.Args["ide2"] != "" && c.Node == "pv1-1" && strings.HasPrefix(c.Args["ide2"], "none") {
			t.Errorf("seed ejected although the ISO storage is shared: %+v", c)
		}
	}
	for _, c := range h.f.callsOf("UploadISO") {
		if c.Node == "pv1-2" {
			t.Errorf("seed uploaded to the target although the ISO storage is shared: %+v", c)
		}
	}
}

// TestUpdate_haManagedMigrationWaitsForTheMove: for an HA-managed VM Proxmox answers a
// hamigrate task that ends before the HA manager moves the VM; the update waits until the
// VM is on the target before attaching the seed there.
func TestUpdate_haManagedMigrationWaitsForTheMove(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	h.create(h.spec())
	var polls int
	setHAManaged(h.f)
	h.f.onCall("ClusterResources", func(ctx context.Context, c fakeCall) error {
		if h.f.calls("Migrate") > 0 {
			if polls++; polls == 3 {
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Node = "pv1-2" }) // the HA manager moves it
			}
		}
		return nil
	})
	to := "pv1-2"
	err := h.b.Update(h.ctx, ID{VMID: testVMID0, Name: testName}, Changes{Node: &to, UserData: []byte("#cloud-config\n"), UserDataKnown: true, UID: testUID})
	if err != nil {
		t.Fatal(err)
	}
	if polls < 3 {
		t.Errorf("%d listing polls: the update did not wait for the HA manager", polls)
	}
	if v := h.f.vm(testVMID0); v.Node != "pv1-2" || !strings.HasPrefix(v.Config["ide2"], "proxy-seeds:iso/") {
		t.Errorf("after the HA migration: node %s ide2 %q", v.Node, v.Config["ide2"])
	}
}

// TestCreate_withoutNodeIsPlaced: a spec without a node on a two-node provider is placed
// (here on pv1-2, which holds fewer proxy VMs), cloned on the template's node and migrated.
func TestCreate_withoutNodeIsPlaced(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	localStorage(h.f)
	h.f.addVM(&fakeVM{VMID: 300, Name: "other-proxy", Status: "running", Config: map[string]string{"tags": ManagedTag}})
	s := h.spec()
	s.Node = ""
	vm := h.create(s)
	if vm.Node != "pv1-2" {
		t.Errorf("placed on %q, want pv1-2 (pv1-1 has a proxy VM already)", vm.Node)
	}
	if m := h.f.callsOf("Migrate"); len(m) != 1 || m[0].Args["target"] != "pv1-2" {
		t.Errorf("migrations %+v", m)
	}
}

// TestUpdate_refusalBeforeTheMigration: an update with a node change, a pool change and a
// refusal that needs no write (a disk shrink, a VLAN tag out of range) is refused before
// anything is written: no pool move, no seed upload or eject, no migration; the VM stays
// on its node with its seed. The migration's own refusals come first, as before.
func TestUpdate_refusalBeforeTheMigration(t *testing.T) {
	reads := map[string]bool{"ClusterResources": true, "VMConfig": true, "VMConfigCurrent": true, "VMStatus": true,
		"StorageStatus": true, "StorageContent": true, "TaskStatus": true, "NodeStatus": true, "Version": true,
		"VMPending": true, "VMSnapshots": true, "VMSnapshotConfig": true}
	shrink, tag := 1, 5000
	for _, tc := range []struct {
		name string
		ch   Changes
		want string
	}{
		{"disk shrink", Changes{DiskGiB: &shrink}, "disk can only grow"},
		{"vlan tag", Changes{VLANTag: &tag}, "VLAN tag 5000 is outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			localStorage(h.f)
			h.create(h.spec())
			before := h.f.vm(testVMID0).Config["ide2"]
			h.f.calllog = nil
			to, pool := "pv1-2", "other"
			ch := tc.ch
			ch.Node, ch.Pool, ch.UID = &to, &pool, testUID
			ch.UserData, ch.UserDataKnown = []byte("#cloud-config\n"), true
			err := h.b.Update(h.ctx, ID{VMID: testVMID0, Name: testName}, ch)
			if err == nil || !strings.Contains(err.Error(), tc.want) || ClassOf(err) != pveapi.Permanent {
				t.Fatalf("err %v, want a Permanent %q", err, tc.want)
			}
			for _, c := range h.f.log() {
				if !reads[c.Method] {
					t.Errorf("%s %+v sent before the refusal", c.Method, c.Args)
				}
			}
			v := h.f.vm(testVMID0)
			if v.Node != "pv1-1" || v.Config["ide2"] != before {
				t.Errorf("after the refusal: node %s ide2 %q (was pv1-1, %q)", v.Node, v.Config["ide2"], before)
			}
			if _, ok := h.f.iso("pv1-2", fakeISOStorage, seedFile(testName, testUID)); ok {
				t.Error("a seed copy was uploaded to the target")
			}
		})
	}
}

// TestPlanMigration_table: what a migration does, decided from the VM as read on the
// source, without a request.
func TestPlanMigration_table(t *testing.T) {
	seed := seedVol{storage: "local", file: seedFile(testName, testUID)}
	cfg := map[string]string{"ide2": ide2Seed(seed)}
	base := migrationView{id: ID{VMID: testVMID0, Name: testName}, from: "pv1-1", to: "pv1-2", cfg: cfg}
	for _, tc := range []struct {
		name    string
		v       func(v *migrationView)
		known   bool
		params  pveapi.MigrateParams
		moves   bool
		rebuild bool
		refused string
	}{
		{name: "stopped, shared", v: func(v *migrationView) { v.vs.Status = "stopped" },
			params: pveapi.MigrateParams{Target: "pv1-2"}},
		{name: "running with local disks", v: func(v *migrationView) { v.vs.Status, v.local = "running", []string{"local-lvm:vm-1-disk-0"} },
			params: pveapi.MigrateParams{Target: "pv1-2", Online: true, WithLocalDisks: true, TargetStorage: "local-lvm"}},
		{name: "stopped with local disks", v: func(v *migrationView) { v.vs.Status, v.local = "stopped", []string{"local-lvm:vm-1-disk-0"} },
			params: pveapi.MigrateParams{Target: "pv1-2", TargetStorage: "local-lvm"}},
		{name: "local seed, user-data known", v: func(v *migrationView) { v.seed, v.seedLocal = seed, true }, known: true,
			params: pveapi.MigrateParams{Target: "pv1-2"}, moves: true, rebuild: true},
		{name: "local seed, user-data unknown", v: func(v *migrationView) { v.seed, v.seedLocal = seed, true },
			params: pveapi.MigrateParams{Target: "pv1-2"}, moves: true},
		{name: "hibernated", v: func(v *migrationView) { v.vs.Lock = "suspended" }, refused: "hibernated on node pv1-1"},
	} {
		v := base
		tc.v(&v)
		p, err := planMigration(v, fakeISOStorage, "local-lvm", tc.known)
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) || ClassOf(err) != pveapi.Permanent {
				t.Errorf("%s: err %v, want a Permanent %q", tc.name, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.params != tc.params || (p.seed.src != seedVol{}) != tc.moves || p.rebuild != tc.rebuild {
			t.Errorf("%s: plan %+v, want params %+v, seed moved %v, rebuilt %v", tc.name, p, tc.params, tc.moves, tc.rebuild)
		}
		if tc.moves && (p.seed.dst != seedVol{storage: fakeISOStorage, file: seed.file} || p.seed.ide2 != cfg["ide2"]) {
			t.Errorf("%s: seed move %+v", tc.name, p.seed)
		}
	}
}
