package proxmox

import (
	"maps"
	"slices"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestUpdate_table(t *testing.T) {
	const mac = "virtio=BC:24:11:EE:48:83"
	for _, tc := range []struct {
		name   string
		setup  func(h *harness)
		ch     Changes
		calls  []string          // mutating calls
		params map[string]string // the config write, when one is expected
		check  func(t *testing.T, v *fakeVM)
	}{
		{"cores and memory on a running VM: write, then restart", func(h *harness) { h.ourRunningVM(testVMID0, testName) },
			Changes{Cores: ptr(4), MemoryMiB: ptr(4096)},
			[]string{"SetVMConfig", "Stop", "Start"}, map[string]string{"cores": "4", "memory": "4096"},
			func(t *testing.T, v *fakeVM) {
				if v.Status != "running" {
					t.Errorf("status %q after the restart", v.Status)
				}
			}},
		{"cores on a stopped VM: no restart", func(h *harness) { h.f.addOurVM(testVMID0, testName, testUID) },
			Changes{Cores: ptr(4)}, []string{"SetVMConfig"}, map[string]string{"cores": "4"}, nil},
		{"unchanged values write nothing", func(h *harness) { h.ourRunningVM(testVMID0, testName) },
			Changes{Cores: ptr(2), MemoryMiB: ptr(2048), DiskGiB: ptr(3), OnBoot: ptr(false), Bridge: ptr("vmbr0"), VLANTag: ptr(0)},
			nil, nil, nil},
		{"onboot only: no restart", func(h *harness) { h.ourRunningVM(testVMID0, testName) },
			Changes{OnBoot: ptr(true)}, []string{"SetVMConfig"}, map[string]string{"onboot": "1"}, nil},
		{"VLAN tag added keeping model and MAC", func(h *harness) { h.ourRunningVM(testVMID0, testName) },
			Changes{VLANTag: ptr(4)}, []string{"SetVMConfig"}, map[string]string{"net0": mac + ",bridge=vmbr0,tag=4"}, nil},
		{"VLAN tag 0 removes it, bridge replaced", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["net0"] = mac + ",bridge=vmbr0,tag=4,firewall=1" })
		}, Changes{VLANTag: ptr(0), Bridge: ptr("vmbr2")}, []string{"SetVMConfig"}, map[string]string{"net0": mac + ",bridge=vmbr2,firewall=1"}, nil},
		{"disk grows with a resize task", func(h *harness) { h.ourRunningVM(testVMID0, testName) },
			Changes{DiskGiB: ptr(10)}, []string{"Resize"}, nil, func(t *testing.T, v *fakeVM) {
				if got, _ := diskSizeBytes(v.Config["scsi0"]); got != 10*gib {
					t.Errorf("scsi0 %q", v.Config["scsi0"])
				}
			}},
		{"start a stopped VM", func(h *harness) { h.f.addOurVM(testVMID0, testName, testUID) },
			Changes{Start: true}, []string{"Start"}, nil, runningCheck},
		{"start resumes a hibernated VM", func(h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "suspended" })
		}, Changes{Start: true}, []string{"Start"}, nil, runningCheck},
		{"start a paused VM: stop, then start", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			st := capturedStatus(h.t, "status_current_paused")
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = st.Status, st.QMPStatus })
		}, Changes{Start: true}, []string{"Stop", "Start"}, nil, runningCheck},
		{"start a running VM does nothing", func(h *harness) { h.ourRunningVM(testVMID0, testName) },
			Changes{Start: true}, nil, nil, nil},
		{"hibernated with changes and start: resume, write, restart", func(h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "suspended" })
		}, Changes{Cores: ptr(4), Start: true}, []string{"Start", "SetVMConfig", "Stop", "Start"}, map[string]string{"cores": "4"}, runningCheck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			h.f.calllog = nil
			if err := h.b.Update(h.ctx, testID, tc.ch); err != nil {
				t.Fatal(err)
			}
			if got := mutating(h.f); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %v, want %v", got, tc.calls)
			}
			if tc.params != nil {
				if p := h.f.callsOf("SetVMConfig")[0].Args; !maps.Equal(p, tc.params) {
					t.Errorf("config write %v, want %v", p, tc.params)
				}
			}
			if tc.check != nil {
				tc.check(t, h.f.vm(testVMID0))
			}
		})
	}
}

func runningCheck(t *testing.T, v *fakeVM) {
	t.Helper()
	if v.Status != "running" || v.QMP != "running" || v.Lock != "" {
		t.Errorf("status %q qmp %q lock %q", v.Status, v.QMP, v.Lock)
	}
}

func TestUpdate_refusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(h *harness)
		ch    Changes
		class pveapi.Class
		msg   string
	}{
		{"disk shrink", func(h *harness) { h.ourRunningVM(testVMID0, testName) }, Changes{DiskGiB: ptr(2), Cores: ptr(4)},
			pveapi.Permanent, "disk can only grow"},
		{"hibernated with changes and no start", func(h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "suspended" })
		}, Changes{Cores: ptr(4)}, pveapi.Permanent, "hibernated"},
		{"gone", func(h *harness) {}, Changes{Cores: ptr(4)}, pveapi.NotFound, "not in the cluster"},
		{"VMID reused", func(h *harness) { h.ourRunningVM(testVMID0, "proxy-other") }, Changes{Cores: ptr(4)}, pveapi.NotFound, "proxy-other"},
		{"no net0", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, func(v *fakeVM) { delete(v.Config, "net0") })
		}, Changes{Bridge: ptr("vmbr1")}, pveapi.Permanent, "no net0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			err := h.b.Update(h.ctx, testID, tc.ch)
			assertClass(t, err, tc.class)
			assertContains(t, err.Error(), tc.msg, "update VM proxy-a (VMID 105967)")
			if got := mutating(h.f); len(got) != 0 {
				t.Errorf("changed something: %v", got)
			}
		})
	}
}
