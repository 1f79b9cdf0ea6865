package proxmox

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
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
		{"cores and memory on a running VM: write, then a graceful restart", func(h *harness) { h.ourRunningVM(testVMID0, testName) },
			Changes{Cores: ptr(4), MemoryMiB: ptr(4096)},
			[]string{"SetVMConfig", "Shutdown", "Start"}, map[string]string{"cores": "4", "memory": "4096"},
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
		}, Changes{Cores: ptr(4), Start: true}, []string{"Start", "SetVMConfig", "Shutdown", "Start"}, map[string]string{"cores": "4"}, runningCheck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			h.f.calllog = nil
			if err := h.b.Update(h.ctx, testID, withUID(tc.ch)); err != nil {
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
			err := h.b.Update(h.ctx, testID, withUID(tc.ch))
			assertClass(t, err, tc.class)
			assertContains(t, err.Error(), tc.msg, "update VM proxy-a (VMID 105967)")
			if got := mutating(h.f); len(got) != 0 {
				t.Errorf("changed something: %v", got)
			}
		})
	}
}

// failedDestroy leaves what a destroy that fails after the seed delete leaves (the order of
// decision: seed-before-destroy): our VM stopped, its ide2 naming a seed ISO the storage no longer holds.
func failedDestroy(h *harness) {
	h.t.Helper()
	h.ourRunningVM(testVMID0, testName)
	h.f.failTask("qmdestroy", fixtureExit("task_status_stopped_error"))
	if err := h.b.DeleteOwned(h.ctx, testID, "pv1-1", testUID); err == nil {
		h.t.Fatal("Delete succeeded, want the injected destroy failure")
	}
	v := h.f.vm(testVMID0)
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); ok || v == nil || v.Status != "stopped" || !strings.HasPrefix(v.Config["ide2"], seedVolID(fakeISOStorage, seedFile(testName, testUID))) {
		h.t.Fatalf("not the state a failed destroy leaves: %+v", v)
	}
}

// TestUpdate_startAfterFailedDestroy: after a destroy that failed once the seed was
// deleted, the start Update makes converges: with the user-data known the seed is rebuilt
// (vendor-data and guest agent flag from the provider config) and uploaded first; without
// it (an imported VM) ide2 is removed in the same request style as any config write.
func TestUpdate_startAfterFailedDestroy(t *testing.T) {
	userData := []byte("#cloud-config\nhostname: sentinel-user-data\n")
	t.Run("user-data known: the seed is uploaded again", func(t *testing.T) {
		h := newHarness(t)
		h.b.cfg.VendorData = "#cloud-config\npackages: [squid]\n"
		var built []nocloud.Seed
		h.b.buildSeed = func(s nocloud.Seed) ([]byte, error) {
			built = append(built, s)
			return []byte("ISO:" + s.Name), nil
		}
		failedDestroy(h)
		h.f.calllog = nil
		if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Start: true, UserData: userData, UserDataKnown: true}); err != nil {
			t.Fatal(err)
		}
		if got := mutating(h.f); !slices.Equal(got, []string{"UploadISO", "Start"}) {
			t.Errorf("calls %v, want the seed upload then the start", got)
		}
		if len(built) != 1 || string(built[0].UserData) != string(userData) || built[0].Name != testName ||
			built[0].VendorData != h.b.cfg.VendorData || !built[0].InstallGuestAgent {
			t.Errorf("seeds built: %+v", built)
		}
		if b, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); !ok || string(b) != "ISO:"+testName {
			t.Errorf("seed on the storage: %q, %t", b, ok)
		}
		runningCheck(t, h.f.vm(testVMID0))
		if strings.Contains(h.logs.String(), "sentinel-user-data") {
			t.Error("the user-data reached the log")
		}
	})
	t.Run("user-data unknown: ide2 is removed", func(t *testing.T) {
		h := newHarness(t)
		failedDestroy(h)
		h.f.calllog = nil
		if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Start: true}); err != nil {
			t.Fatal(err)
		}
		if got := mutating(h.f); !slices.Equal(got, []string{"SetVMConfig", "Start"}) {
			t.Errorf("calls %v, want the config write then the start", got)
		}
		if p := h.f.callsOf("SetVMConfig")[0].Args; !maps.Equal(p, map[string]string{"delete": "ide2"}) {
			t.Errorf("config write %v", p)
		}
		v := h.f.vm(testVMID0)
		if _, ok := v.Config["ide2"]; ok {
			t.Errorf("ide2 = %q is still there", v.Config["ide2"])
		}
		runningCheck(t, v)
	})
	t.Run("the removal joins the other config changes", func(t *testing.T) {
		h := newHarness(t)
		failedDestroy(h)
		h.f.calllog = nil
		if err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Start: true, Cores: ptr(4)}); err != nil {
			t.Fatal(err)
		}
		if p := h.f.callsOf("SetVMConfig"); len(p) != 1 || !maps.Equal(p[0].Args, map[string]string{"cores": "4", "delete": "ide2"}) {
			t.Errorf("config writes %v", p)
		}
		runningCheck(t, h.f.vm(testVMID0))
	})
}

// TestUpdate_seedCheckedOnlyBeforeAStart: the storage is listed only when a start or a
// restart follows, and a present seed, or an ide2 that is not our seed, is left alone.
func TestUpdate_seedCheckedOnlyBeforeAStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(h *harness)
		ch      Changes
		listing int
		calls   []string
	}{
		{"stopped VM, no start", func(h *harness) { failedDestroy(h) }, Changes{Cores: ptr(4)}, 0, []string{"SetVMConfig"}},
		{"running VM, onboot only", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			h.f.isos = map[string][]byte{} // the seed is gone, but nothing starts
		}, Changes{OnBoot: ptr(true), UserDataKnown: true}, 0, []string{"SetVMConfig"}},
		{"seed present: start only", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = "stopped", "" })
		}, Changes{Start: true, UserDataKnown: true}, 1, []string{"Start"}},
		{"restart of a running VM whose seed is gone: upload before the stop", func(h *harness) {
			h.ourRunningVM(testVMID0, testName)
			h.f.isos = map[string][]byte{}
		}, Changes{Cores: ptr(4), UserDataKnown: true}, 1, []string{"UploadISO", "SetVMConfig", "Shutdown", "Start"}},
		{"ide2 names something else: not checked", func(h *harness) {
			h.f.addOurVM(testVMID0, testName, testUID)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["ide2"] = "none,media=cdrom" })
		}, Changes{Start: true}, 0, []string{"Start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			tc.setup(h)
			h.f.calllog = nil
			if err := h.b.Update(h.ctx, testID, withUID(tc.ch)); err != nil {
				t.Fatal(err)
			}
			if got := h.f.calls("StorageContent"); got != tc.listing {
				t.Errorf("%d storage listings, want %d", got, tc.listing)
			}
			if got := mutating(h.f); !slices.Equal(got, tc.calls) {
				t.Errorf("calls %v, want %v", got, tc.calls)
			}
		})
	}
}

// TestUpdate_missingVolumeRefusals: what cannot be repaired is Permanent and says what to
// do, and nothing is changed on the way.
func TestUpdate_missingVolumeRefusals(t *testing.T) {
	t.Run("hibernated, seed gone, user-data unknown", func(t *testing.T) {
		h := newHarness(t)
		failedDestroy(h)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Lock = "suspended" })
		h.f.calllog = nil
		err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Start: true})
		assertClass(t, err, pveapi.Permanent)
		assertContains(t, err.Error(), "hibernated", seedVolID(fakeISOStorage, seedFile(testName, testUID)), "set cloud_init")
		if got := mutating(h.f); len(got) != 0 {
			t.Errorf("changed something: %v", got)
		}
	})
	t.Run("another drive's volume is gone", func(t *testing.T) {
		h := newHarness(t)
		h.f.addOurVM(testVMID0, testName, testUID)
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["ide0"] = fakeISOStorage + ":iso/debian-13-netinst.iso,media=cdrom" })
		err := h.b.Update(h.ctx, testID, Changes{UID: testUID, Start: true, UserDataKnown: true})
		assertClass(t, err, pveapi.Permanent)
		assertContains(t, err.Error(), "ide0", fakeISOStorage+":iso/debian-13-netinst.iso", "does not exist", "qm set 105967 --delete ide0", "apply again")
		if strings.Contains(err.Error(), "may succeed if retried") {
			t.Errorf("advises a retry: %v", err)
		}
	})
}
