package proxmox

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// planView is the view planUpdate gets of vm_config_clone's VM (2 cores, 2048 MiB, a 3 GiB
// scsi0, net0 on vmbr0) in the status fixture named status (status_current_<status>),
// with mutate applied to its config.
func planView(t *testing.T, status string, mutate func(cfg map[string]string)) updateView {
	t.Helper()
	cfg := fixtureConfig("vm_config_clone")
	if mutate != nil {
		mutate(cfg)
	}
	return updateView{id: testID, node: "pve1", cfg: cfg, vs: capturedStatus(t, "status_current_"+status)}
}

// hotplugConfig gives a config memory hotplug (hotplug names memory, numa on).
func hotplugConfig(cfg map[string]string) {
	cfg["hotplug"], cfg["numa"] = "disk,network,usb,memory", "1"
}

func TestPlanUpdate_table(t *testing.T) {
	type want struct {
		params                                        map[string]string
		did                                           []string
		resize                                        string
		resizeGiB                                     int
		coresRestart, memRestart, seedRestart, memHot bool
		agentCheck, agentUnknownWarn                  bool
		seedCheck, seedChecked                        bool
		power                                         powerStep
	}
	for _, tc := range []struct {
		name string
		view func(t *testing.T) updateView
		ch   Changes
		want want
	}{
		{"cores and memory of a running VM: written, restarted, its seed checked first",
			func(t *testing.T) updateView { return planView(t, "running", nil) },
			Changes{Cores: ptr(4), MemoryMiB: ptr(4096)},
			want{params: map[string]string{"cores": "4", "memory": "4096"}, did: []string{"cores", "memory"},
				coresRestart: true, memRestart: true, seedCheck: true, power: powerRestart}},
		{"the same with DeferRestart: written and left pending, no seed check",
			func(t *testing.T) updateView { return planView(t, "running", nil) },
			Changes{Cores: ptr(4), DeferRestart: true, WaitForIP: true},
			want{params: map[string]string{"cores": "4"}, did: []string{"cores"}, coresRestart: true, power: powerPending}},
		{"cores of a stopped VM: written, no restart",
			func(t *testing.T) updateView { return planView(t, "stopped", nil) },
			Changes{Cores: ptr(4), WaitForIP: true},
			want{params: map[string]string{"cores": "4"}, did: []string{"cores"}}},
		{"a change left pending: nothing to write, the restart still due",
			func(t *testing.T) updateView {
				return planView(t, "running", func(cfg map[string]string) { cfg["cores"] = "4" })
			},
			Changes{Cores: ptr(4)},
			want{params: map[string]string{}, coresRestart: true, seedCheck: true, power: powerRestart}},
		{"unchanged values: nothing at all",
			func(t *testing.T) updateView { return planView(t, "running", nil) },
			Changes{Cores: ptr(2), MemoryMiB: ptr(2048), DiskGiB: ptr(3), OnBoot: ptr(false), Bridge: ptr("vmbr0"), VLANTag: ptr(0)},
			want{params: map[string]string{}}},
		{"memory of a running VM with memory hotplug: plugged, no restart",
			func(t *testing.T) updateView {
				v := planView(t, "running", hotplugConfig)
				v.hotplug = true
				return v
			},
			Changes{MemoryMiB: ptr(3072)},
			want{params: map[string]string{"memory": "3072"}, did: []string{"memory"}, memHot: true}},
		{"a pending hotplug size written again so that Proxmox plugs it",
			func(t *testing.T) updateView {
				v := planView(t, "running", func(cfg map[string]string) { hotplugConfig(cfg); cfg["memory"] = "3072" })
				v.hotplug = true
				return v
			},
			Changes{MemoryMiB: ptr(3072)},
			want{params: map[string]string{"memory": "3072"}, did: []string{"memory"}, memHot: true}},
		{"memory hotplug named but not run with: the restart",
			func(t *testing.T) updateView { return planView(t, "running", hotplugConfig) },
			Changes{MemoryMiB: ptr(3000)},
			want{params: map[string]string{"memory": "3000"}, did: []string{"memory"}, memRestart: true, seedCheck: true, power: powerRestart}},
		{"WaitForIP with a restart: the agent is asked first",
			func(t *testing.T) updateView { return planView(t, "running", nil) },
			Changes{Cores: ptr(4), WaitForIP: true},
			want{params: map[string]string{"cores": "4"}, did: []string{"cores"}, coresRestart: true,
				agentCheck: true, seedCheck: true, power: powerRestart}},
		{"Stop wins over the restart: shut down, no agent check",
			func(t *testing.T) updateView { return planView(t, "running", nil) },
			Changes{Cores: ptr(4), WaitForIP: true, Stop: true},
			want{params: map[string]string{"cores": "4"}, did: []string{"cores"}, coresRestart: true, seedCheck: true, power: powerShutdown}},
		{"Stop of a paused VM: stopped",
			func(t *testing.T) updateView { return planView(t, "paused", nil) },
			Changes{Stop: true},
			want{params: map[string]string{}, power: powerStopPaused}},
		{"Start of a paused VM: stop then start, seed checked, no agent check",
			func(t *testing.T) updateView { return planView(t, "paused", nil) },
			Changes{Start: true, WaitForIP: true},
			want{params: map[string]string{}, seedCheck: true, power: powerRestartPaused}},
		{"Start of a stopped imported VM: started, its unknown agent logged",
			func(t *testing.T) updateView { return planView(t, "stopped", nil) },
			Changes{Start: true, WaitForIP: true},
			want{params: map[string]string{}, agentUnknownWarn: true, seedCheck: true, power: powerStart}},
		{"Start of a hibernated VM with cores: restart due once resumed",
			func(t *testing.T) updateView { return planView(t, "hibernated", nil) },
			Changes{Start: true, Cores: ptr(4), UserDataKnown: true},
			want{params: map[string]string{"cores": "4"}, did: []string{"cores"}, coresRestart: true, seedCheck: true, power: powerStart}},
		{"a reseed of a running VM: the swap replaces the seed check, then the restart",
			func(t *testing.T) updateView { return planView(t, "running", nil) },
			Changes{Reseed: &Reseed{}, UserDataKnown: true},
			want{params: map[string]string{}, did: []string{"seed"}, seedRestart: true, seedChecked: true, power: powerRestart}},
		{"a reseed of a hibernated VM: its old seed checked before the resume",
			func(t *testing.T) updateView { return planView(t, "hibernated", nil) },
			Changes{Reseed: &Reseed{}, Start: true, UserDataKnown: true},
			want{params: map[string]string{}, did: []string{"seed"}, seedRestart: true, seedCheck: true, power: powerStart}},
		{"a reseed of a stopped VM: no restart",
			func(t *testing.T) updateView { return planView(t, "stopped", nil) },
			Changes{Reseed: &Reseed{}, UserDataKnown: true},
			want{params: map[string]string{}, did: []string{"seed"}, seedChecked: true}},
		{"net0 rewritten, disk grown, onboot, after a migration: did in its order",
			func(t *testing.T) updateView {
				v := planView(t, "stopped", nil)
				v.moved = true
				return v
			},
			Changes{VLANTag: ptr(4), DiskGiB: ptr(10), OnBoot: ptr(true)},
			want{params: map[string]string{"net0": "virtio=BC:24:11:EE:48:83,bridge=vmbr0,tag=4", "onboot": "1"},
				did: []string{"net0", "onboot", "node", "disk"}, resize: "scsi0", resizeGiB: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planUpdate(tc.view(t), tc.ch)
			if err != nil {
				t.Fatal(err)
			}
			got := want{params: p.params, did: p.did, resize: p.resize, resizeGiB: p.resizeGiB,
				coresRestart: p.coresRestart, memRestart: p.memRestart, seedRestart: p.seedRestart, memHot: p.memHot,
				agentCheck: p.agentCheck, agentUnknownWarn: p.agentUnknownWarn, seedCheck: p.seedCheck, seedChecked: p.seedChecked,
				power: p.powerFor(tc.ch)}
			if !maps.Equal(got.params, tc.want.params) {
				t.Errorf("params %v, want %v", got.params, tc.want.params)
			}
			if !slices.Equal(got.did, tc.want.did) {
				t.Errorf("did %q, want %q", got.did, tc.want.did)
			}
			got.params, got.did, tc.want.params, tc.want.did = nil, nil, nil, nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestPlanUpdate_refusals: every refusal planUpdate makes, with its text, in the order the
// checks run (the first wins when two apply).
func TestPlanUpdate_refusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status string
		mutate func(cfg map[string]string)
		hot    bool
		ch     Changes
		msg    string
	}{
		{"cores below 1", "running", nil, false, Changes{Cores: ptr(0), VLANTag: ptr(5000)}, "cores must be at least 1"},
		{"memory below 1", "running", nil, false, Changes{MemoryMiB: ptr(0), DiskGiB: ptr(1)}, "memory must be at least 1 MiB"},
		{"a size memory hotplug cannot reach", "running", hotplugConfig, true, Changes{MemoryMiB: ptr(3000), VLANTag: ptr(5000)},
			"its memory grows and shrinks in DIMM steps: 3000 MiB is not one; set memory_mib to 2560 or 3072. Nothing was changed"},
		{"a size below memory hotplug's static memory", "stopped", hotplugConfig, true, Changes{MemoryMiB: ptr(512)},
			"which needs at least 1024 MiB; 512 MiB was asked. Nothing was changed"},
		{"a VLAN tag out of range", "running", nil, false, Changes{VLANTag: ptr(4095), DiskGiB: ptr(1)},
			"VLAN tag 4095 is outside 1 to 4094 (0 removes the tag)"},
		{"no net0", "running", func(cfg map[string]string) { delete(cfg, "net0") }, false, Changes{Bridge: ptr("vmbr1")},
			"the VM has no net0, so the bridge and VLAN tag cannot be changed"},
		{"no boot disk size", "running", func(cfg map[string]string) { cfg["scsi0"] = "local-lvm:vm-199999-disk-1" }, false, Changes{DiskGiB: ptr(10)},
			"the VM has no boot disk with a readable size=, so its disk size cannot be changed"},
		{"a shrink", "running", nil, false, Changes{DiskGiB: ptr(2), Start: true},
			"disk can only grow: the boot disk scsi0 is 3 GiB and 2 GiB was asked; replace the VM to shrink it"},
		{"a change to a hibernated VM without Start", "hibernated", nil, false, Changes{OnBoot: ptr(true)},
			"the VM is hibernated, and Proxmox refuses changes to it; bring it back to running (or resume it in Proxmox), then apply again"},
		{"a reseed of a hibernated VM without Start", "hibernated", nil, false, Changes{Reseed: &Reseed{}, UserDataKnown: true},
			"the VM is hibernated, and Proxmox refuses changes to it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := planView(t, tc.status, tc.mutate)
			v.hotplug = tc.hot
			_, err := planUpdate(v, tc.ch)
			if err == nil {
				t.Fatal("planned, want a refusal")
			}
			if ClassOf(err) != pveapi.Permanent || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%v (class %s), want Permanent with %q", err, ClassOf(err), tc.msg)
			}
		})
	}
}

// TestPlanUpdate_hibernatedUnchanged: a hibernated VM with nothing to change is no refusal
// (nothing is written to it), and without Start nothing is done.
func TestPlanUpdate_hibernatedUnchanged(t *testing.T) {
	p, err := planUpdate(planView(t, "hibernated", nil), Changes{Cores: ptr(2), OnBoot: ptr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.params) != 0 || len(p.did) != 0 || p.seedCheck || p.powerFor(Changes{}) != powerNone {
		t.Errorf("plan %+v, want nothing to do", p)
	}
}

// TestPowerStep_afterTheRun: the power step follows what the run changed in its copy of the
// plan: a resumed VM is restarted for the change it was resumed for, and a hotplug that
// fell back to a restart restarts the VM (or leaves it pending with DeferRestart).
func TestPowerStep_afterTheRun(t *testing.T) {
	p, err := planUpdate(planView(t, "hibernated", nil), Changes{Start: true, Cores: ptr(4)})
	if err != nil {
		t.Fatal(err)
	}
	p.running = true // resumeHibernated
	if got := p.powerFor(Changes{Start: true}); got != powerRestart {
		t.Errorf("resumed with a cores change: %q, want restart", got)
	}
	v := planView(t, "running", hotplugConfig)
	v.hotplug = true
	for _, deferred := range []bool{false, true} {
		ch := Changes{MemoryMiB: ptr(3072), DeferRestart: deferred}
		p, err := planUpdate(v, ch)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.powerFor(ch); got != powerNone {
			t.Errorf("hotplug planned: %q, want none", got)
		}
		p.memHot, p.memRestart = false, true // writeConfig or confirmHotplug fell back
		want := powerRestart
		if deferred {
			want = powerPending
		}
		if got := p.powerFor(ch); got != want {
			t.Errorf("hotplug fell back (DeferRestart %v): %q, want %q", deferred, got, want)
		}
	}
}
