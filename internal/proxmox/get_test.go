package proxmox

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

var testID = ID{VMID: testVMID0, Name: testName}

// capturedIfaces is agent_network_get_interfaces' result (fact: agent-interfaces).
func capturedIfaces(t testing.TB) []pveapi.NetworkInterface {
	t.Helper()
	var r struct {
		Result []pveapi.NetworkInterface `json:"result"`
	}
	if err := fixture.MustLoad("agent_network_get_interfaces").Data(&r); err != nil {
		t.Fatal(err)
	}
	return r.Result
}

// capturedStatus decodes a status_current_* fixture.
func capturedStatus(t testing.TB, name string) pveapi.VMStatus {
	t.Helper()
	var st pveapi.VMStatus
	if err := fixture.MustLoad(name).Data(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// mutateOn changes the VM at the start of method's next call (between two of Get's calls).
func (h *harness) mutateOn(method string, fn func(v *fakeVM)) {
	done := false
	h.f.onCall(method, func(context.Context, fakeCall) error {
		if !done {
			done = true
			h.f.mutate(testVMID0, fn)
		}
		return nil
	})
}

type getRow struct {
	name  string
	setup func(t *testing.T, h *harness)
	opts  GetOptions
	state State        // empty: an error of class is expected
	class pveapi.Class // for errors
	calls []string     // when set, the exact seam calls
	check func(t *testing.T, vm VM)
}

// TestGet_stateTable walks the state mapping in its order (decision: state-mapping).
func TestGet_stateTable(t *testing.T) {
	ours := func(t *testing.T, h *harness) { h.ourRunningVM(testVMID0, testName) }
	listOnly := []string{"ClusterResources"}
	three := []string{"ClusterResources", "VMConfig", "VMStatus"}
	rows := []getRow{
		// Absent from the listing: a config read tells a VMID without a VM from one the token
		// may not see (fact: pool-privileges).
		{name: "VMID absent", setup: func(*testing.T, *harness) {}, class: pveapi.NotFound, calls: []string{"ClusterResources", "VMIDFree"}},
		{name: "VM hidden from the token", setup: func(t *testing.T, h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.hide(testVMID0)
		}, class: pveapi.Permanent, calls: []string{"ClusterResources", "VMIDFree", "VMConfig"}},
		{name: "VMID hidden and free", setup: func(t *testing.T, h *harness) {
			h.f.hide(testVMID0)
		}, class: pveapi.NotFound, calls: []string{"ClusterResources", "VMIDFree"}},
		{name: "container at the VMID", setup: func(t *testing.T, h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Type: "lxc"})
		}, class: pveapi.NotFound, calls: listOnly},
		{name: "template at the VMID", setup: func(t *testing.T, h *harness) {
			h.f.addTemplate(testVMID0, "pv1-1", map[string]string{"name": testName})
		}, class: pveapi.NotFound, calls: listOnly},
		{name: "nameless mid-clone entry", setup: func(t *testing.T, h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Lock: "clone", cloning: true})
		}, class: pveapi.Transient, calls: []string{"ClusterResources", "VMConfig"}},
		{name: "another name in the config: VMID reused", setup: func(t *testing.T, h *harness) {
			h.f.addOurVM(testVMID0, "proxy-other", testUID)
		}, class: pveapi.NotFound, calls: []string{"ClusterResources", "VMConfig"}},
		// The listing is pvestatd's snapshot: a name it shows is a hint, the config decides.
		{name: "stale listed name (a previous VM's), config ours: found", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.ListedName = "web01" })
		}, state: StateRunning, calls: three},
		{name: "listed \"VM <vmid>\" right after our clone, config ours: found", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.ListedName, v.ListedStatus = "VM 105967", "stopped" })
		}, state: StateRunning, calls: three},
		{name: "task lock reports the VM with its lock", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "backup" })
		}, state: StateRunning, calls: three, check: func(t *testing.T, vm VM) {
			if vm.Lock != "backup" {
				t.Errorf("Lock %q, want backup", vm.Lock)
			}
		}},
		{name: "suspended lock: stopped, hibernated, no status read", setup: func(t *testing.T, h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "suspended" })
		}, state: StateStopped, calls: []string{"ClusterResources", "VMConfig"}, check: func(t *testing.T, vm VM) {
			if !vm.Hibernated || vm.Lock != "suspended" || vm.UID != testUID {
				t.Errorf("Hibernated %v Lock %q UID %q", vm.Hibernated, vm.Lock, vm.UID)
			}
		}},
		{name: "suspended lock without our mark is not ours", setup: func(t *testing.T, h *harness) {
			h.f.addVM(&fakeVM{VMID: testVMID0, Name: testName, Lock: "suspended"})
		}, class: pveapi.NotFound},
		{name: "listing unknown, status answers", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.ListedStatus = "unknown" })
		}, state: StateRunning, calls: three},
		{name: "listing unknown, status fails: what can be read", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.ListedStatus = "unknown" })
			h.f.failNext("VMStatus", fixtureErr("err_595"))
		}, state: StateProvisioning, check: func(t *testing.T, vm VM) {
			if !vm.StatusUnknown || vm.UID != testUID || vm.Cores != 2 {
				t.Errorf("StatusUnknown %v UID %q Cores %d", vm.StatusUnknown, vm.UID, vm.Cores)
			}
		}},
		{name: "listed running, status fails", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.failNext("VMStatus", fixtureErr("err_595"))
		}, class: pveapi.Transient},
		{name: "config does not exist: deleted between the calls", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.onCall("VMConfig", func(context.Context, fakeCall) error { h.f.remove(testVMID0); return nil })
		}, class: pveapi.NotFound},
		{name: "config lock taken since the listing", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.mutateOn("VMConfig", func(v *fakeVM) { v.Lock = "snapshot" })
		}, state: StateRunning, check: func(t *testing.T, vm VM) {
			if vm.Lock != "snapshot" {
				t.Errorf("Lock %q, want snapshot", vm.Lock)
			}
		}},
		{name: "config name differs: VMID reused", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.mutateOn("VMConfig", func(v *fakeVM) { v.Name = "proxy-other" })
		}, class: pveapi.NotFound},
		{name: "no mark in the description", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = "made by hand" })
		}, class: pveapi.NotFound, calls: []string{"ClusterResources", "VMConfig"}},
		{name: "stopped", setup: func(t *testing.T, h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
		}, state: StateStopped, calls: three},
		{name: "running without the agent: three requests", setup: ours, state: StateRunning, calls: three,
			check: func(t *testing.T, vm VM) {
				if vm.IP != "" {
					t.Errorf("IP %q without the agent", vm.IP)
				}
			}},
		{name: "prelaunch is provisioning", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.QMP = capturedStatus(t, "status_current_prelaunch").QMPStatus })
		}, opts: GetOptions{Agent: true, AnyOwner: true}, state: StateProvisioning, calls: three},
		{name: "paused is stopped with its qmpstatus", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			st := capturedStatus(t, "status_current_paused")
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = st.Status, st.QMPStatus })
		}, opts: GetOptions{Agent: true, AnyOwner: true}, state: StateStopped, calls: three, check: func(t *testing.T, vm VM) {
			if vm.QMPStatus != "paused" || vm.Hibernated {
				t.Errorf("QMPStatus %q Hibernated %v", vm.QMPStatus, vm.Hibernated)
			}
		}},
		{name: "hibernated seen by status/current only", setup: func(t *testing.T, h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			st := capturedStatus(t, "status_current_hibernated")
			h.mutateOn("VMStatus", func(v *fakeVM) { v.Status, v.Lock = st.Status, st.Lock })
		}, state: StateStopped, check: func(t *testing.T, vm VM) {
			if !vm.Hibernated {
				t.Error("not Hibernated")
			}
		}},
		// The agent decides for a running guest when asked.
		{name: "agent: routable IPv4", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		}, opts: GetOptions{Agent: true, AnyOwner: true}, state: StateRunning,
			calls: []string{"ClusterResources", "VMConfig", "VMStatus", "AgentNetworkInterfaces"},
			check: func(t *testing.T, vm VM) {
				if vm.IP != "192.168.0.150" {
					t.Errorf("IP %q", vm.IP)
				}
			}},
		{name: "agent: no IPv4 yet", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t)[:1] })
		}, opts: GetOptions{Agent: true, AnyOwner: true}, state: StateProvisioning},
		{name: "agent: not running", setup: ours, opts: GetOptions{Agent: true, AnyOwner: true}, state: StateProvisioning},
		{name: "agent: VM not running", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.AgentErr = fixtureErrSub("err_vm_not_running", "199999", "105967") })
		}, opts: GetOptions{Agent: true, AnyOwner: true}, class: pveapi.Transient},
		{name: "agent: no agent configured", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["agent"] = "0" })
		}, opts: GetOptions{Agent: true, AnyOwner: true}, state: StateStopped, check: func(t *testing.T, vm VM) {
			if vm.AgentEnabled {
				t.Error("AgentEnabled with agent=0")
			}
		}},
		{name: "agent: anything else is transient", setup: func(t *testing.T, h *harness) {
			ours(t, h)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.AgentErr = fixtureErr("err_forbidden_volume_delete") })
		}, opts: GetOptions{Agent: true, AnyOwner: true}, class: pveapi.Transient},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(t, h)
			h.f.calllog = nil
			opts := tc.opts
			if opts.UID == "" && !opts.AnyOwner {
				opts.UID = testUID // the rows' VMs are ours
			}
			vm, err := h.b.Get(h.ctx, testID, opts)
			if tc.state == "" {
				assertClass(t, err, tc.class)
			} else {
				if err != nil {
					t.Fatalf("Get: %v", err)
				}
				if vm.State != tc.state {
					t.Errorf("State %q, want %q", vm.State, tc.state)
				}
				if vm.ID != testID || vm.Node != "pv1-1" {
					t.Errorf("ID %+v node %q", vm.ID, vm.Node)
				}
			}
			if tc.calls != nil && !slices.Equal(h.f.methods(), tc.calls) {
				t.Errorf("calls %v, want %v", h.f.methods(), tc.calls)
			}
			if tc.check != nil && err == nil {
				tc.check(t, vm)
			}
		})
	}
}

func TestGet_readsEverythingFromTheCapturedConfig(t *testing.T) {
	h := newHarness(t)
	cfg := fixtureConfig("vm_config_after_seed")
	cfg["onboot"] = "1"
	cfg["tags"] = "proxy_operator;team-x"
	cfg["net0"] = "virtio=BC:24:11:EE:48:83,bridge=vmbr1,tag=4"
	h.f.addVM(&fakeVM{VMID: testVMID0, Name: cfg["name"], Config: cfg})
	vm, err := h.b.Get(h.ctx, ID{VMID: testVMID0, Name: cfg["name"]}, GetOptions{AnyOwner: true})
	if err != nil {
		t.Fatal(err)
	}
	want := VM{
		ID: ID{VMID: testVMID0, Name: cfg["name"]}, Node: "pv1-1", UID: testUID,
		CreatedAt: time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC), State: StateStopped, QMPStatus: "stopped",
		MAC: "BC:24:11:EE:48:83", Cores: 2, MemoryMiB: 2048, DiskGiB: 3, Bridge: "vmbr1", VLANTag: 4,
		OnBoot: true, AgentEnabled: true, Tags: []string{"proxy_operator", "team-x"},
	}
	if !vm.CreatedAt.Equal(want.CreatedAt) || !slices.Equal(vm.Tags, want.Tags) {
		t.Errorf("CreatedAt %v Tags %v", vm.CreatedAt, vm.Tags)
	}
	vm.CreatedAt, vm.Tags, want.CreatedAt, want.Tags = time.Time{}, nil, time.Time{}, nil
	if !equalVM(vm, want) {
		t.Errorf("Get =\n%+v\nwant\n%+v", vm, want)
	}
}

func equalVM(a, b VM) bool {
	a.Tags, b.Tags = nil, nil
	return a.ID == b.ID && a.Node == b.Node && a.UID == b.UID && a.State == b.State && a.QMPStatus == b.QMPStatus &&
		a.MAC == b.MAC && a.Cores == b.Cores && a.MemoryMiB == b.MemoryMiB && a.DiskGiB == b.DiskGiB &&
		a.Bridge == b.Bridge && a.VLANTag == b.VLANTag && a.OnBoot == b.OnBoot && a.AgentEnabled == b.AgentEnabled &&
		a.IP == b.IP && a.Hibernated == b.Hibernated && a.Lock == b.Lock && a.StatusUnknown == b.StatusUnknown
}

func TestGet_configDefaultsAndMemoryForms(t *testing.T) {
	for _, tc := range []struct {
		cfg        map[string]string
		cores, mem int
		agent      bool
	}{
		{map[string]string{}, 1, 512, false},
		{map[string]string{"cores": "4", "memory": "current=4096", "agent": "enabled=1,fstrim_cloned_disks=1"}, 4, 4096, true},
		{map[string]string{"memory": "1024", "agent": "1,fstrim_cloned_disks=1"}, 1, 1024, true},
		{map[string]string{"agent": "0"}, 1, 512, false},
		{map[string]string{"agent": "enabled=0"}, 1, 512, false},
	} {
		vm := vmFromConfig(testID, "pv1-1", tc.cfg, Mark{})
		if vm.Cores != tc.cores || vm.MemoryMiB != tc.mem || vm.AgentEnabled != tc.agent {
			t.Errorf("%v: cores %d memory %d agent %v", tc.cfg, vm.Cores, vm.MemoryMiB, vm.AgentEnabled)
		}
	}
}

func TestGet_duringDeleteStillReturnsInstance(t *testing.T) {
	// The mid-destroy captures: still listed, stopped, unlocked; config readable.
	var res []pveapi.Resource
	if err := fixture.MustLoad("cluster_resources_during_destroy").Data(&res); err != nil {
		t.Fatal(err)
	}
	cfg := fixtureConfig("config_during_destroy")
	h := newHarness(t)
	for _, r := range res {
		if r.Name != cfg["name"] {
			continue
		}
		if r.Lock != "" || r.Status != "stopped" {
			t.Fatalf("capture shows %+v", r)
		}
		h.f.addVM(&fakeVM{VMID: r.VMID, Node: r.Node, Name: r.Name, Config: cfg})
		vm, err := h.b.Get(h.ctx, ID{VMID: r.VMID, Name: r.Name}, GetOptions{AnyOwner: true})
		if err != nil || vm.State != StateStopped {
			t.Fatalf("Get mid-destroy: %+v, %v", vm, err)
		}
		return
	}
	t.Fatal("no VM of the config's name in the capture")
}

func TestGet_afterDeleteReturnsNotFound(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	if err := h.b.DeleteOwned(h.ctx, testID, "pv1-1", testUID); err != nil {
		t.Fatal(err)
	}
	_, err := h.b.Get(h.ctx, testID, GetOptions{AnyOwner: true})
	assertClass(t, err, pveapi.NotFound)
}

func TestGet_malformedIDIsPermanent(t *testing.T) {
	h := newHarness(t)
	_, err := h.b.Get(h.ctx, ID{VMID: 5, Name: "x"}, GetOptions{AnyOwner: true})
	assertClass(t, err, pveapi.Permanent)
	if h.f.calls("") != 0 {
		t.Error("a malformed ID made a request")
	}
}

func TestGet_cancelledContextReturnsPromptly(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.onCall("VMConfig", func(ctx context.Context, _ fakeCall) error { <-ctx.Done(); return ctx.Err() })
	ctx, cancel := context.WithCancel(h.ctx)
	go func() {
		waitFor(t, func() bool { return h.f.calls("VMConfig") == 1 })
		cancel()
	}()
	_, err := h.b.Get(ctx, testID, GetOptions{AnyOwner: true})
	assertClass(t, err, pveapi.Transient)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v does not wrap context.Canceled", err)
	}
}

func TestGet_outcomeLineHasFields(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	if _, err := h.b.Get(h.ctx, testID, GetOptions{AnyOwner: true}); err != nil {
		t.Fatal(err)
	}
	line := ""
	for l := range strings.SplitSeq(h.logs.String(), "\n") {
		if strings.Contains(l, "proxmox vm fetched") {
			line = l
		}
	}
	assertContains(t, line, `"vmid":105967`, `"name":"proxy-a"`, `"node":"pv1-1"`, `"duration_ms"`, `"@module":"provider.proxmox"`)
}
