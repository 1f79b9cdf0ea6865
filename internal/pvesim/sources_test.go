package pvesim_test

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Conformance to what the PVE 9 sources say beyond the captures. Each test names the
// fixture whose source field cites the repository, file, function and lines followed.

// snapshotListing is the status snapshot model with a 10 s interval (at the default speed,
// 10 ms of wall time) and a clone of 2 s.
func snapshotListing(l pvesim.Listing) pvesim.Options {
	return pvesim.Options{Listing: l, Durations: pvesim.Durations{StatusInterval: 10 * time.Second}}
}

// entryMatches compares a listing entry with a fixture entry: the same keys (tags aside,
// they follow the VM) and the same identity, name, status, template and lock.
func entryMatches(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: not listed", what)
	}
	strip := func(m map[string]any) []string {
		return slices.DeleteFunc(keysOf(m), func(k string) bool { return k == "tags" })
	}
	if !slices.Equal(strip(got), strip(want)) {
		t.Errorf("%s: keys %v, want %v", what, strip(got), strip(want))
	}
	for _, k := range []string{"name", "status", "template", "lock", "type", "maxmem", "maxdisk"} {
		if got[k] != want[k] {
			t.Errorf("%s: %s = %v, want %v", what, k, got[k], want[k])
		}
	}
}

func TestSource_listingLagsTheStatusSnapshotDuringAndAfterAClone(t *testing.T) {
	// The worst case: sampled right when the clone starts, and the next sample a full
	// interval after it ends.
	opts := snapshotListing(pvesim.Listing{SnapshotAtCloneStart: true, StaleAfterClone: true})
	// Speed 100: a 10 s clone, a 100 s interval (well under the 5 minutes status data is
	// kept), so 1 s of wall time.
	opts.Speed = 100
	opts.Durations.Clone = 10 * time.Second
	opts.Durations.StatusInterval = 100 * time.Second
	tg := newTarget(t, opts)
	tg.simOnly("the timing of pvestatd's snapshot cannot be chosen on a real host")
	tg.parallel()
	upid, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("lag\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := tg.resource(tg.vmid)
	entryMatches(t, "mid-clone, sampled", got, fixtureEntry(t, "cluster_resources_clone_sampled", captureVMID))
	tg.mustOK(upid, nil)
	ended := time.Now() // the clone ended a little before this
	stale := fixtureEntry(t, "cluster_resources_after_clone_stale", captureVMID)
	got, _ = tg.resource(tg.vmid)
	entryMatches(t, "right after the clone", got, stale)
	// The config is the authority meanwhile.
	conf, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil || conf["name"] != captureName {
		t.Errorf("config name %v (%v), want %s", conf["name"], err, captureName)
	}
	// Still stale most of an interval later (the next snapshot is due a full interval
	// after the clone's end).
	time.Sleep(time.Until(ended.Add(tg.sim.WallTime(70 * time.Second))))
	got, _ = tg.resource(tg.vmid)
	entryMatches(t, "0.7 interval after the clone", got, stale)
	tg.eventually("the next snapshot", func() bool {
		e, _ := tg.resource(tg.vmid)
		return e["name"] == captureName && e["status"] == "stopped"
	})
}

func TestSource_listingWithoutStatusDataIsNamelessUnknown(t *testing.T) {
	// No snapshot during the clone: nothing sampled yet after it either.
	opts := snapshotListing(pvesim.Listing{})
	opts.Durations.StatusInterval = 100000 * time.Second
	tg := newTarget(t, opts)
	tg.simOnly("the timing of pvestatd's snapshot cannot be chosen on a real host")
	tg.parallel()
	tg.cloned()
	got, _ := tg.resource(tg.vmid)
	// The nameless entry (fact: nameless-mid-clone), its clone lock gone (read live from the config).
	entryMatches(t, "after the clone, never sampled", got, withoutKey(fixtureEntry(t, "cluster_resources_mid_clone", captureVMID), "lock"))
	tg.sim.SnapshotStatus()
	got, _ = tg.resource(tg.vmid)
	if got["name"] != captureName || got["status"] != "stopped" {
		t.Errorf("after a snapshot: %v", got)
	}
}

func TestSource_listingReadsPausedOnceSampled(t *testing.T) {
	opts := snapshotListing(pvesim.Listing{})
	opts.Durations.StatusInterval = 100000 * time.Second
	tg := newTarget(t, opts)
	tg.simOnly("the timing of pvestatd's snapshot cannot be chosen on a real host")
	tg.parallel()
	tg.cloned()
	tg.started()
	tg.sim.SnapshotStatus()
	tg.power("suspend", nil)
	if got, _ := tg.resource(tg.vmid); got["status"] != "running" {
		t.Errorf("paused, before the next snapshot: listed %v, want running (fact: paused-listed-running)", got["status"])
	}
	tg.sim.SnapshotStatus()
	got, _ := tg.resource(tg.vmid)
	entryMatches(t, "paused, sampled", got, fixtureEntry(t, "cluster_resources_paused_sampled", captureVMID))
}

func TestSource_listingPeriodFollowsTheSpeed(t *testing.T) {
	// A 10 s interval at speed 1000 is 10 ms: a new clone is sampled within a few.
	tg := newTarget(t, snapshotListing(pvesim.Listing{}))
	tg.simOnly("the simulator's speed")
	tg.parallel()
	tg.cloned()
	tg.eventually("a sample of the new VM", func() bool {
		e, _ := tg.resource(tg.vmid)
		return e["name"] == captureName
	})
}

// wantTaskExit waits for upid and checks its type and exitstatus against a task status
// fixture.
func (tg *target) wantTaskExit(upid string, err error, name string) {
	tg.t.Helper()
	if err != nil {
		tg.t.Fatalf("want a UPID whose task fails as %s, got %v", name, err)
	}
	want := fixtureData(tg.t, name)
	st := tg.waitTask(upid)
	if st.Type != want["type"] || st.ExitStatus != tg.subst(want["exitstatus"].(string)) {
		tg.t.Errorf("task %s ended %q (type %s), want %q (type %v)", upid, st.ExitStatus, st.Type, want["exitstatus"], want["type"])
	}
}

func TestSource_checksInsideTasks(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	upid, err := tg.api.Start(tg.ctx(), tg.node, captureMissing)
	tg.wantTaskExit(upid, err, "task_status_start_missing")
	upid, err = tg.api.Stop(tg.ctx(), tg.node, captureMissing)
	tg.wantTaskExit(upid, err, "task_status_stop_missing")
	upid, err = tg.api.Resize(tg.ctx(), tg.node, captureMissing, "scsi0", "10G")
	tg.wantTaskExit(upid, err, "task_status_resize_missing")

	sim := tg.simOnly("a lock cannot be set on a real host's VM from here")
	tg.cloned()
	lock := "backup"
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Lock: &lock}); err != nil {
		t.Fatal(err)
	}
	// Stopping a stopped VM that holds a lock ends OK (_do_vm_stop returns before check_lock).
	tg.mustOK(tg.api.Stop(tg.ctx(), tg.node, tg.vmid))
	upid, err = tg.api.Destroy(tg.ctx(), tg.node, tg.vmid)
	tg.wantTaskExit(upid, err, "task_status_destroy_locked")
	if _, ok := sim.VM(tg.vmid); !ok {
		t.Error("the failed destroy removed the VM")
	}
}

func TestSource_cloneOntoAVMIDAnotherNodeHoldsFailsInTheTask(t *testing.T) {
	tg := newTarget(t, pvesim.Options{Nodes: []string{captureNode, "pv1-2"}})
	sim := tg.simOnly("a second node")
	tg.parallel()
	if err := sim.AddVM(pvesim.VMSpec{VMID: tg.vmid, Node: "pv1-2", Name: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	upid, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("other node\n"))
	tg.wantTaskExit(upid, err, "task_status_clone_vmid_other_node")
	if v, ok := sim.VM(tg.vmid); !ok || v.Node != "pv1-2" || v.Name != "someone-else" {
		t.Errorf("the other node's VM after the failed clone: %+v %t", v, ok)
	}
	// On the node asked, the synchronous refusal (fact: clone-vmid-taken) stays.
	if err := sim.DeleteVM(tg.vmid); err != nil {
		t.Fatal(err)
	}
	if err := sim.AddVM(pvesim.VMSpec{VMID: tg.vmid, Node: tg.node, Name: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	_, err = tg.api.Clone(tg.ctx(), tg.node, tg.template, tg.cloneParams("same node\n"))
	tg.wantAPIError(err, "err_clone_exists")
}

func TestSource_configWrites(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	// The ISO named by ide2 must exist when the config is written.
	err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"ide2": tg.seedVolID() + ",media=cdrom"})
	tg.wantAPIError(err, "err_config_volume_missing")
	// Only a new CD-ROM drive joins the boot order; a new NIC does not.
	before, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"net1": "virtio,bridge=vmbr0"}); err != nil {
		t.Fatal(err)
	}
	after, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if after["boot"] != before["boot"] {
		t.Errorf("a new NIC changed the boot order from %q to %q", before["boot"], after["boot"])
	}
	// The description loses trailing whitespace.
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"description": "a\nb \n\n"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); c["description"] != "a\nb" {
		t.Errorf("description %q, want the trailing whitespace gone", c["description"])
	}
}

func TestSource_coresAndMemoryOfARunningVMArePendingUntilTheNextStart(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	tg.started()
	cur, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": "4", "memory": "4096"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); c["cores"] != "4" || c["memory"] != "4096" {
		t.Errorf("config (pending shown) cores %q memory %q", c["cores"], c["memory"])
	}
	var current map[string]any
	tg.rawJSON("GET", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/config", url.Values{"current": {"1"}}, &current)
	if fmt.Sprint(current["cores"]) != cur["cores"] || current["memory"] != cur["memory"] {
		t.Errorf("current=1: cores %v memory %v, want the running %s %s", current["cores"], current["memory"], cur["cores"], cur["memory"])
	}
	tg.power("stop", nil)
	tg.started()
	tg.rawJSON("GET", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/config", url.Values{"current": {"1"}}, &current)
	if fmt.Sprint(current["cores"]) != "4" {
		t.Errorf("after the restart current cores %v", current["cores"])
	}
}

func TestSource_permissions(t *testing.T) {
	tg := newTarget(t, pvesim.Options{TemplateAgent: true})
	sim := tg.simOnly("denying privileges")
	tg.parallel()
	tg.cloned()
	// With a VLAN tag, SDN.Use is checked on the bridge's VLAN.
	sim.Deny("/sdn/zones/localnetwork/vmbr0/4", "SDN.Use")
	err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"net0": "virtio,bridge=vmbr0,tag=4"})
	tg.wantAPIError(err, "err_forbidden_sdn_vlan")
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"net0": "virtio,bridge=vmbr0,tag=5"}); err != nil {
		t.Errorf("another VLAN: %v", err)
	}
	// A clone checks the template's bridges.
	sim.Deny("/sdn/zones/localnetwork/vmbr0", "SDN.Use")
	p := tg.cloneParams("bridges\n")
	p.NewID = tg.vmid + 1
	if _, err := tg.api.Clone(tg.ctx(), tg.node, tg.template, p); !pveapi.IsForbidden(err) {
		t.Errorf("clone of a template on a denied bridge: %v", err)
	}
	sim.Allow("/sdn/zones/localnetwork/vmbr0", "SDN.Use")
	// An agent call takes either privilege.
	tg.started()
	sim.Deny("/vms/"+strconv.Itoa(tg.vmid), "VM.GuestAgent.Audit")
	tg.eventually("the agent", func() bool {
		_, err := tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
		if pveapi.IsForbidden(err) {
			t.Fatalf("refused with VM.GuestAgent.Unrestricted granted: %v", err)
		}
		return err == nil
	})
	sim.Deny("/vms/"+strconv.Itoa(tg.vmid), "VM.GuestAgent.Unrestricted")
	_, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_forbidden_agent")
}

func TestSource_tagsSplitOnWhitespaceToo(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"tags": "Zeta alpha;beta,alpha"}); err != nil {
		t.Fatal(err)
	}
	if c, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); c["tags"] != "alpha;beta;zeta" {
		t.Errorf("tags %q, want alpha;beta;zeta", c["tags"])
	}
}

func TestSource_resizeComparesWithTheVolumesRealSize(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	sim := tg.simOnly("editing a config out of band")
	tg.parallel()
	tg.cloned()
	conf, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	size := optOf(conf["scsi0"], "size") // 3G
	// Someone edits size= down in the config file; the volume keeps its size.
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Config: map[string]string{"scsi0": strings.Replace(conf["scsi0"], "size="+size, "size=1G", 1)}}); err != nil {
		t.Fatal(err)
	}
	upid, err := tg.api.Resize(tg.ctx(), tg.node, tg.vmid, "scsi0", "2G")
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != fixtureData(t, "task_status_stopped_error")["exitstatus"] {
		t.Errorf("a resize below the real size (config says 1G, volume %s) ended %q", size, st.ExitStatus)
	}
}

func TestSource_guestsOfANodeDownFiveMinutesLoseTheirName(t *testing.T) {
	opts := snapshotListing(pvesim.Listing{})
	opts.Nodes = []string{captureNode, "pv1-2"}
	tg := newTarget(t, opts)
	sim := tg.simOnly("taking a node down")
	tg.parallel()
	if err := sim.AddVM(pvesim.VMSpec{VMID: 4100, Node: "pv1-2", Name: "far-away"}); err != nil {
		t.Fatal(err)
	}
	// A sample taken now, right before the node goes down, is the last one with the guest's
	// status (a loaded machine may delay the periodic ones by several intervals).
	sampled := time.Now()
	sim.SnapshotStatus()
	if err := sim.SetNodeDown("pv1-2", true); err != nil {
		t.Fatal(err)
	}
	if e, _ := tg.resource(4100); e["name"] != "far-away" || e["status"] != "unknown" {
		t.Errorf("just after the node went down: %v", e)
	}
	tg.eventually("the name dropped", func() bool {
		e, _ := tg.resource(4100)
		return e["name"] == nil
	})
	// Counted from the last sample, taken after sampled.
	if least := sim.WallTime(5 * time.Minute); time.Since(sampled) < least {
		t.Errorf("the name went %v after the last sample, before 5 minutes (%v here)", time.Since(sampled), least)
	}
}
