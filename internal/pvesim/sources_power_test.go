package pvesim_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// A guest that ignores the ACPI power button and has no answering agent never powers
// off on a shutdown: past the timeout the task fails (qemu-server _do_vm_stop, "VM
// quit/powerdown failed - got timeout"), or with forceStop the VM is killed and the task
// still ends OK. A paused VM with forceStop is stopped at once. A stop or shutdown by the
// API applies the pending values (vm_stop_cleanup with apply_pending_changes).
func TestSource_shutdownIgnoredACPI(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	sim := tg.simOnly("a guest that ignores ACPI")
	tg.cloned()
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Config: map[string]string{"agent": ""}, IgnoresACPI: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	tg.started()
	shutdown := func(form url.Values) string {
		var upid string
		tg.rawJSON("POST", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/status/shutdown", form, &upid)
		return upid
	}
	tg.wantTaskExit(shutdown(url.Values{"timeout": {"30"}}), nil, "task_status_shutdown_timeout")
	if st, _ := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid); st.Status != "running" {
		t.Fatalf("after a failed shutdown: %s", st.Status)
	}
	// A pending value, applied when the forced shutdown stops the VM.
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": "3"}); err != nil {
		t.Fatal(err)
	}
	tg.wantTaskExit(shutdown(url.Values{"timeout": {"30"}, "forceStop": {"1"}}), nil, "task_status_shutdown_forced")
	st, _ := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid)
	cfg, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	current := tg.currentConfig()
	if st.Status != "stopped" || cfg["cores"] != "3" || current["cores"] != "3" {
		t.Errorf("after the forced shutdown: status %s, cores %q (current %q), want stopped and 3 applied", st.Status, cfg["cores"], current["cores"])
	}
	// Paused with forceStop: a stop, at once, no timeout.
	tg.started()
	tg.power("suspend", nil)
	tg.wantTaskExit(shutdown(url.Values{"timeout": {"30"}, "forceStop": {"1"}}), nil, "task_status_shutdown_forced")
	if st, _ := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid); st.Status != "stopped" {
		t.Errorf("paused VM after a forced shutdown: %s", st.Status)
	}
}

// Hotplug (qemu-server vmconfig_hotplug_pending, Memory.pm qemu_memory_hotplug): on a
// running VM, cores always stays pending; memory stays pending unless the running
// config's hotplug has memory, and then it is plugged in DIMM steps (the config gets the
// size reached: 1024 MiB static plus 512 MiB DIMMs); below the static memory the write
// answers 400 "hotplug problem - ..." and the value stays pending.
func TestSource_hotplugPending(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	sim := tg.simOnly("reads pending state")
	tg.cloned()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"memory": "2048", "hotplug": "network,disk,usb,memory", "numa": "1"}); err != nil {
		t.Fatal(err)
	}
	tg.started()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": "4", "memory": "3000"}); err != nil {
		t.Fatal(err)
	}
	cur := tg.currentConfig()
	st, _ := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid)
	if cur["memory"] != "3072" || st.MaxMem != 3072<<20 {
		t.Errorf("memory hotplugged to current %q, maxmem %d; want 3072 (the DIMM boundary above 3000)", cur["memory"], st.MaxMem)
	}
	if cfg, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); cfg["cores"] != "4" || cur["cores"] == "4" {
		t.Errorf("cores: pending view %q, current %q; want 4 pending, not current", cfg["cores"], cur["cores"])
	}
	err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"memory": "512"})
	tg.wantAPIError(err, "err_hotplug_memory_min")
	if cfg, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); cfg["memory"] != "512" || tg.currentConfig()["memory"] != "3072" {
		t.Errorf("a failed hotplug leaves the value pending: pending view %q, current %q", cfg["memory"], tg.currentConfig()["memory"])
	}
	// Writing the current value back drops the pending one (cleanup_pending).
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"memory": "3072"}); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); cfg["memory"] != "3072" {
		t.Errorf("after writing the current memory back: %q", cfg["memory"])
	}
	// The same for cores (update_vm_api's cleanup_pending): the pending 4 is gone.
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"cores": cur["cores"]}); err != nil {
		t.Fatal(err)
	}
	if cfg, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); cfg["cores"] != cur["cores"] {
		t.Errorf("after writing the current cores %q back: pending view %q", cur["cores"], cfg["cores"])
	}
	// vcpus is hotplugged only with cpu in hotplug (qemu_cpu_hotplug); cores never is.
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Config: map[string]string{"hotplug": "network,disk,usb,memory,cpu"}}); err != nil {
		t.Fatal(err)
	}
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"vcpus": "1", "cores": "5"}); err != nil {
		t.Fatal(err)
	}
	if cur := tg.currentConfig(); cur["vcpus"] != "1" || cur["cores"] == "5" {
		t.Errorf("with cpu hotplug: current vcpus %q (want 1 applied), cores %q (want still pending)", cur["vcpus"], cur["cores"])
	}
	// Without memory in hotplug, memory stays pending too.
	if err := sim.SetVMState(tg.vmid, pvesim.VMPatch{Config: map[string]string{"hotplug": ""}}); err != nil {
		t.Fatal(err)
	}
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"memory": "4096"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid); st.MaxMem != 3072<<20 {
		t.Errorf("memory without hotplug: maxmem %d, want it unchanged until a restart", st.MaxMem)
	}
}

// A start with memory hotplug needs numa and a DIMM-aligned size (Memory.pm config).
func TestSource_memoryHotplugStart(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"memory": "2048", "hotplug": "memory"}); err != nil {
		t.Fatal(err)
	}
	upid, err := tg.api.Start(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != "NUMA needs to be enabled for memory hotplug" {
		t.Errorf("start without numa: %q", st.ExitStatus)
	}
}

func ptr[T any](v T) *T { return &v }

// currentConfig is GET .../config?current=1 (the running values, without the pending
// section), scalars as strings.
func (tg *target) currentConfig() map[string]string {
	tg.t.Helper()
	var raw map[string]any
	tg.rawJSON("GET", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid)+"/config?current=1", nil, &raw)
	out := map[string]string{}
	for k, v := range raw {
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		}
	}
	return out
}

// hotplug naming memory and numa, written to a running VM, stay pending
// (vmconfig_hotplug_pending skips both): the current config has neither until a start.
func TestSource_hotplugOptionPending(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	tg.started()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"hotplug": "network,disk,usb,memory", "numa": "1"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil || cfg["hotplug"] != "network,disk,usb,memory" || cfg["numa"] != "1" {
		t.Errorf("pending view: hotplug %q numa %q (%v)", cfg["hotplug"], cfg["numa"], err)
	}
	cur, err := tg.api.VMConfigCurrent(tg.ctx(), tg.node, tg.vmid)
	if err != nil || strings.Contains(cur["hotplug"], "memory") || cur["numa"] == "1" {
		t.Errorf("current config: hotplug %q numa %q (%v), want neither applied", cur["hotplug"], cur["numa"], err)
	}
}
