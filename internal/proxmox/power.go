package proxmox

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// DefaultShutdownTimeout is how long a restart lets the guest power off after the
// shutdown request before Proxmox stops it, when Changes.ShutdownTimeout is zero.
const DefaultShutdownTimeout = 2 * time.Minute

// shutdownKillGrace is what Proxmox adds past the shutdown timeout with forceStop: a
// SIGTERM, up to 10 s for QEMU to exit, then a SIGKILL (qemu-server _do_vm_stop), plus
// room for the task's own start and end.
const shutdownKillGrace = 30 * time.Second

// runningSizes are the cores and memory a running VM runs with. status/current's cpus and
// maxmem come from the config's current values (fact: status-current-values), while the
// config read shows the pending ones: a difference is a change that waits for a restart.
// cpus is sockets x cores unless vcpus is set (then cores cannot be told from it, and the
// config's value is kept); a running VM never has more than the node's CPUs, so the cap
// vmstatus applies does not bite. A zero field (not reported) keeps the config's value.
func runningSizes(cfg map[string]string, vs pveapi.VMStatus, cfgCores, cfgMem int) (cores, mem int) {
	cores, mem = cfgCores, cfgMem
	if vs.Status != "running" {
		return cores, mem
	}
	if sockets := atoiDefault(cfg["sockets"], 1); vs.CPUs > 0 && cfg["vcpus"] == "" && sockets > 0 && vs.CPUs%sockets == 0 {
		cores = vs.CPUs / sockets
	}
	if vs.MaxMem > 0 {
		mem = int(vs.MaxMem >> 20)
	}
	return cores, mem
}

// memoryHotplug reports a VM whose memory changes apply to it running: the config's
// hotplug names memory and numa is on (qemu-server vmconfig_hotplug_pending plugs memory
// only with the memory feature, and a start with it needs numa; fact: memory-hotplug). cores
// is never hotplugged (only vcpus is, with the cpu feature), so a cores change always
// waits for a restart.
func memoryHotplug(cfg map[string]string) bool {
	h := cfg["hotplug"]
	has := false
	for _, f := range strings.FieldsFunc(h, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		has = has || f == "memory"
	}
	return has && cfg["numa"] == "1"
}

// runningHotplug is memoryHotplug of what a VM runs with. A hotplug or numa change to a
// running VM stays pending (qemu-server vmconfig_hotplug_pending plugs neither: numa has
// no branch, and a hotplug value naming cpu or memory, new or current, is skipped), so the
// config read, which shows the pending values, may name memory hotplug the VM does not
// have until its next start. Only then (running, and the read names memory hotplug) is the
// config read again with current=1: one request more for such VMs, none for the others.
func (b *Backend) runningHotplug(ctx context.Context, node string, vmid int, cfg map[string]string, running bool) (bool, error) {
	if !memoryHotplug(cfg) {
		return false, nil
	}
	if !running {
		return true, nil
	}
	cur, err := b.api.VMConfigCurrent(ctx, node, vmid)
	if err != nil {
		return false, apiErrorf("get", err, "reading the current config on node %s", node)
	}
	return memoryHotplug(cur), nil
}

// MemoryHotplugStep says whether mib is a size memory hotplug reaches exactly, and the
// sizes around it: 1024 MiB of static memory, then 32 DIMMs of 512 MiB, 32 of 1 GiB, and
// so on, doubling 8 times (qemu-server Memory.pm foreach_dimm; 1 GiB hugepages start at
// 1 GiB DIMMs). Proxmox rounds a hotplugged grow up (and a shrink down) to such a size,
// and refuses to start a VM with memory hotplug whose size is not one.
func MemoryHotplugStep(mib int, hugepages1G bool, sockets int) (ok bool, below, above int) {
	static, dimm := 1024, 512
	if hugepages1G {
		if sockets < 1 {
			sockets = 1
		}
		static, dimm = 1024*sockets, 1024
	}
	if mib <= static {
		return mib == static, static, static
	}
	cur := static
	for j := 0; j < 8; j++ {
		for i := 0; i < 32; i++ {
			next := cur + dimm
			if mib == next {
				return true, next, next
			}
			if mib < next {
				return false, cur, next
			}
			cur = next
		}
		dimm *= 2
	}
	return false, cur, cur
}

// checkMemoryHotplug refuses a memory size that a VM with memory hotplug cannot take.
func checkMemoryHotplug(cfg map[string]string, mib int) error {
	ok, below, above := MemoryHotplugStep(mib, cfg["hugepages"] == "1024", atoiDefault(cfg["sockets"], 1))
	if ok {
		return nil
	}
	if mib < below {
		return Permanentf("the VM has memory hotplug (its hotplug option names memory), which needs at least %d MiB; "+
			"%d MiB was asked. Nothing was changed", below, mib)
	}
	return Permanentf("the VM has memory hotplug (its hotplug option names memory), so its memory grows and shrinks in DIMM steps: "+
		"%d MiB is not one; set memory_mib to %d or %d. Nothing was changed", mib, below, above)
}

// expectedShutdown is about how long a Linux guest takes to power off after the request
// (the simulator's Durations.Shutdown): the shutdown task is polled closely around it,
// until this backend has seen its own guests power off (shutdownDelayKey).
const expectedShutdown = 4 * time.Second

// shutdownDelayKey keys the power-off time of clean shutdowns in Backend.agentSeen: a
// fleet's later waves poll around what their guests really take.
const shutdownDelayKey = "shutdown"

// shutdownPollDelay is the wait before the next poll of a shutdown task that began
// elapsed ago, when the guest is expected to power off after about expected: the address
// wait's schedule (agentPollDelay) around it, and the usual task interval (at least
// pollMax) once twice that has passed, so a guest that takes its whole timeout (one that
// ignores ACPI) costs a poll a second, not one per expected/4.
func shutdownPollDelay(elapsed, expected, pollMax time.Duration) time.Duration {
	d := agentPollDelay(elapsed, expected)
	if elapsed > 2*expected {
		d = max(d, pollMax)
	}
	return d
}

// shutdownSeconds is the shutdown timeout Proxmox gets, in whole seconds (at least 1).
func shutdownSeconds(d time.Duration) int {
	if d <= 0 {
		d = DefaultShutdownTimeout
	}
	return max(1, int(math.Ceil(d.Seconds())))
}

// shutdownAndWait powers a running guest off gracefully: one qmshutdown task with the
// timeout and forceStop (the guest agent's guest-shutdown when it is configured and
// answers, else ACPI; past the timeout Proxmox kills the VM inside the same task, under
// the VM's config lock, so nothing can start it in between, and the task still ends OK).
// An HA-managed VM's task only hands the request to the HA manager (fact: shutdown-force), so the status is read
// after the task, and a VM still running is stopped.
func (b *Backend) shutdownAndWait(ctx context.Context, op, node string, vmid int, timeout time.Duration) error {
	secs := shutdownSeconds(timeout)
	start := b.clock.Now()
	upid, err := b.api.Shutdown(ctx, node, vmid, pveapi.ShutdownParams{TimeoutSeconds: secs, ForceStop: true})
	if err != nil {
		return apiErrorf(op, err, "shutting the VM down on node %s", node)
	}
	// Polled around the time a guest usually takes to power off, so that the start follows
	// the power-off closely (the default schedule is at 1 s intervals by then).
	expected := b.agentSeen.expected(shutdownDelayKey, expectedShutdown)
	var lastRunning time.Duration // elapsed at the last poll that saw the task running
	pollStart := b.clock.Now()
	paced := func(elapsed time.Duration) time.Duration {
		lastRunning = elapsed
		return shutdownPollDelay(elapsed, expected, b.cfg.Budgets.PollMax)
	}
	if err := b.waitTaskPaced(ctx, upid, time.Duration(secs)*time.Second+shutdownKillGrace, paced); err != nil {
		return err
	}
	took := b.clock.Now().Sub(start)
	if took < time.Duration(secs)*time.Second {
		// A clean power-off (not the kill at the timeout): between the last poll that saw
		// the task running and the one that saw it end.
		b.agentSeen.observe(shutdownDelayKey, lastRunning, b.clock.Now().Sub(pollStart))
	}
	fields := map[string]any{"vmid": vmid, "node": node, "shutdown_timeout": fmt.Sprintf("%ds", secs), "duration_ms": took.Milliseconds()}
	if took >= time.Duration(secs)*time.Second {
		tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox guest did not power off within the shutdown timeout: Proxmox stopped it", fields)
	} else {
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox guest shut down", fields)
	}
	vs, err := b.api.VMStatus(ctx, node, vmid)
	if err != nil {
		return apiErrorf(op, err, "reading the status on node %s after the shutdown", node)
	}
	if vs.Status == "running" && haHanded(upid) {
		// The HA manager shuts it down, with the same timeout (decision: ha-placement).
		return b.waitHAPower(ctx, op, node, vmid, "stopped", time.Duration(secs)*time.Second+shutdownKillGrace)
	}
	if vs.Status == "running" {
		tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox vm still running after its shutdown task: stopping it", fields)
		return b.stopAndWait(ctx, op, node, vmid)
	}
	return nil
}
