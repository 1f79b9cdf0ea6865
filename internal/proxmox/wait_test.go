package proxmox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// always makes every call of method answer err.
func (h *harness) always(method string, err error) {
	h.f.onCall(method, func(context.Context, fakeCall) error { return err })
}

// TestWait_everyWaitEndsAtOnceWhenItCannotSucceed is the table of every backend wait and
// every answer that says the wait cannot succeed: each ends with its reason, at once (or,
// for a node that does not answer, after Budgets.NodeGrace), long before its budget, and
// the reason names what was waited for and what to do.
func TestWait_everyWaitEndsAtOnceWhenItCannotSucceed(t *testing.T) {
	const grace = 30 * time.Second
	running := func(h *harness) { h.ourRunningVM(testVMID0, testName) }
	// startedTask is a start task of our running VM, for the task waits.
	var upid string
	startedTask := func(h *harness) {
		h.f.addOurVM(testVMID0, testName, testUID)
		h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
		var err error
		if upid, err = h.f.Start(h.ctx, "pv1-1", testVMID0); err != nil {
			h.t.Fatal(err)
		}
	}
	waitTask := func(h *harness) error { return h.b.waitTask(h.ctx, upid, h.b.cfg.Budgets.Start) }
	waitRunning := func(h *harness) error { return h.b.waitRunning(h.ctx, "create", "pv1-1", testVMID0) }
	address := func(expect agentExpect) func(h *harness) error {
		return func(h *harness) error {
			_, err := h.b.waitAddress(h.ctx, addressWait{op: "create", node: "pv1-1", vmid: testVMID0, expect: expect, why: "no seed installs it"})
			return err
		}
	}
	lockWait := func(h *harness) error { return h.b.DeleteOwned(h.ctx, testID, "pv1-1", testUID) }
	// The state names no node: the listing decides where the VM is (settle, not settleOn).
	lockWaitListed := func(h *harness) error { return h.b.DeleteOwned(h.ctx, testID, "", testUID) }
	ready := func(addr bool) func(h *harness) error {
		return func(h *harness) error {
			_, err := h.b.WaitReady(h.ctx, testID, ReadyOptions{UID: testUID, Address: addr})
			return err
		}
	}
	restart := func(h *harness) error {
		return h.b.Update(h.ctx, testID, Changes{Cores: ptr(4), UID: testUID, WaitForIP: true})
	}
	vm := func(mut func(v *fakeVM)) func(h *harness) {
		return func(h *harness) { running(h); h.f.mutate(testVMID0, mut) }
	}
	forbidden := fixtureErr("err_forbidden_volume_delete")
	unreachable := fixtureErr("err_595")

	cases := []struct {
		name  string
		setup func(h *harness)
		run   func(h *harness) error
		class pveapi.Class
		msg   []string
		// after is how long (on the fake clock) the wait may take: 0 means at once.
		after time.Duration
		// untouched: no config write, stop, start or destroy was sent.
		untouched bool
	}{
		// The task wait (clone, upload, resize, start, stop, destroy, seed delete).
		{name: "task/status refused", setup: func(h *harness) { startedTask(h); h.always("TaskStatus", forbidden) }, run: waitTask,
			class: pveapi.Permanent, msg: []string{"the start task", "reading task", "Permission check failed"}},
		{name: "task/node not answering", setup: func(h *harness) { startedTask(h); h.always("TaskStatus", unreachable) }, run: waitTask,
			class: pveapi.Transient, msg: []string{"the start task", "node pv1-1 has not answered for 30s", "595"}, after: grace + 2*time.Second},

		// The running wait after a start.
		{name: "running/stopped", setup: vm(func(v *fakeVM) { v.Status = "stopped" }), run: waitRunning,
			class: pveapi.Transient, msg: []string{"the VM to run", "stopped right after it was started", "console"}},
		{name: "running/hibernated", setup: vm(func(v *fakeVM) { v.Status, v.Lock = "stopped", "suspended" }), run: waitRunning,
			class: pveapi.Transient, msg: []string{"hibernated", "qm start 105967"}},
		{name: "running/gone", setup: func(h *harness) { running(h); h.f.remove(testVMID0) }, run: waitRunning,
			class: pveapi.Transient, msg: []string{"vanished", "outside Terraform"}},
		{name: "running/status refused", setup: func(h *harness) { running(h); h.always("VMStatus", forbidden) }, run: waitRunning,
			class: pveapi.Permanent, msg: []string{"reading the status on node pv1-1", "Permission check failed"}},
		{name: "running/node not answering", setup: func(h *harness) { running(h); h.always("VMStatus", unreachable) }, run: waitRunning,
			class: pveapi.Transient, msg: []string{"node pv1-1 has not answered for 30s"}, after: grace + 2*time.Second},

		// The address wait (Create's, and WaitReady's after an update).
		{name: "address/stopped", setup: vm(func(v *fakeVM) { v.Status = "stopped" }), run: address(agentAtFirstBoot),
			class: pveapi.Transient, msg: []string{"an IPv4 address", "the VM stopped", "outside Terraform"}},
		{name: "address/paused", setup: vm(func(v *fakeVM) { v.QMP, v.AgentErr = "paused", fixtureErr("err_not_implemented") }), run: address(agentAtFirstBoot),
			class: pveapi.Transient, msg: []string{"the VM stopped", `qmpstatus "paused"`}},
		{name: "address/hibernated", setup: vm(func(v *fakeVM) { v.Status, v.Lock = "stopped", "suspended" }), run: address(agentAtFirstBoot),
			class: pveapi.Transient, msg: []string{"the VM stopped", `lock "suspended"`}},
		{name: "address/gone", setup: func(h *harness) { running(h); h.f.remove(testVMID0) }, run: address(agentAtFirstBoot),
			class: pveapi.Transient, msg: []string{"vanished while waiting for its address"}},
		{name: "address/agent not configured", setup: vm(func(v *fakeVM) { delete(v.Config, "agent") }), run: address(agentAtFirstBoot),
			class: pveapi.Permanent, msg: []string{"guest agent option is off", "qm set 105967 --agent 1", "wait_for_ip = false"}},
		{name: "address/agent absent, nothing installs it", setup: vm(func(v *fakeVM) { v.Uptime = 3600 }), run: address(agentInstalled),
			class: pveapi.Permanent, msg: []string{"guest agent has not answered in the 1h0m0s", "QEMU guest agent is not running", "no seed installs it", "wait_for_ip = false"}},
		{name: "address/node not answering", setup: func(h *harness) {
			running(h)
			h.always("AgentNetworkInterfaces", unreachable)
			h.always("VMStatus", unreachable)
		}, run: address(agentAtFirstBoot), class: pveapi.Transient, msg: []string{"node pv1-1 has not answered for 30s"}, after: grace + 2*time.Second},

		// The lock wait of Update and Delete.
		{name: "lock/node not answering", setup: vm(func(v *fakeVM) { v.ListedStatus = "unknown" }), run: lockWaitListed,
			class: pveapi.Transient, msg: []string{"no task to hold the VM", "has not answered for 30s", "its node pv1-1 is not answering"}, after: grace + 2*time.Second, untouched: true},
		{name: "lock/listing refused", setup: func(h *harness) { running(h); h.always("ClusterResources", forbidden) }, run: lockWaitListed,
			class: pveapi.Permanent, msg: []string{"listing the cluster's VMs", "Permission check failed"}, untouched: true},
		{name: "lock/config refused", setup: func(h *harness) { running(h); h.always("VMConfig", forbidden) }, run: lockWait,
			class: pveapi.Permanent, msg: []string{"reading the config on node pv1-1", "Permission check failed"}, untouched: true},

		// The settle after an update's start or restart (WaitReady).
		{name: "settle/gone", setup: func(h *harness) { running(h); h.f.remove(testVMID0) }, run: ready(true),
			class: pveapi.NotFound, msg: []string{"the VM to run after the update", "not in the cluster"}},
		{name: "settle/another uid", setup: func(h *harness) { h.f.addOurVM(testVMID0, testName, otherUID) }, run: ready(true),
			class: pveapi.NotFound, msg: []string{"another workspace's VM"}},
		{name: "settle/stopped out of band", setup: vm(func(v *fakeVM) { v.Status = "stopped" }), run: ready(true),
			class: pveapi.Transient, msg: []string{"not running after the update started it", "outside Terraform", "apply again"}},
		{name: "settle/paused", setup: vm(func(v *fakeVM) { v.QMP = "paused" }), run: ready(false),
			class: pveapi.Transient, msg: []string{"not running after the update started it", `qmpstatus "paused"`}},
		{name: "settle/hibernated", setup: vm(func(v *fakeVM) { v.Status, v.Lock = "stopped", "suspended" }), run: ready(true),
			class: pveapi.Transient, msg: []string{"hibernated", "qm start 105967"}},
		{name: "settle/node not answering", setup: func(h *harness) {
			vm(func(v *fakeVM) { v.ListedStatus = "unknown" })(h)
			h.always("VMStatus", unreachable)
		}, run: ready(true), class: pveapi.Transient, msg: []string{"has not answered for 30s", "node pv1-1 is not answering"}, after: grace + 2*time.Second},
		{name: "settle/agent not configured", setup: vm(func(v *fakeVM) { delete(v.Config, "agent") }), run: ready(true),
			class: pveapi.Permanent, msg: []string{"guest agent option is off"}},
		{name: "settle/agent absent after a start that is not a first boot", setup: vm(func(v *fakeVM) { v.Uptime = 200 }), run: ready(true),
			class: pveapi.Permanent, msg: []string{"guest agent has not answered in the 3m20s", "not a first boot"}},

		// Before the wait: a restart whose VM would never answer through its agent.
		{name: "restart/agent silent past the first boot", setup: vm(func(v *fakeVM) { v.Uptime = 7200 }), run: restart,
			class: pveapi.Permanent, msg: []string{"running for 2h0m0s", "guest agent does not answer", "Nothing was changed", "wait_for_ip = false"}, untouched: true},
		{name: "restart/agent option off", setup: vm(func(v *fakeVM) { delete(v.Config, "agent") }), run: restart,
			class: pveapi.Permanent, msg: []string{"guest agent option is off", "nothing was changed"}, untouched: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			c.setup(h)
			start := h.clock.Now()
			err := c.run(h)
			took := h.clock.Now().Sub(start)
			assertClass(t, err, c.class)
			assertContains(t, err.Error(), c.msg...)
			if took > c.after+2*time.Second {
				t.Errorf("the wait took %s on the clock, want at most %s", took, c.after)
			}
			if c.untouched {
				for _, m := range []string{"SetVMConfig", "Stop", "Start", "Destroy", "Resize"} {
					if n := h.f.calls(m); n != 0 {
						t.Errorf("%d %s calls", n, m)
					}
				}
			}
		})
	}
}

// TestWait_firstBootIsNotCutShort: the agent that a first boot installs is waited on for
// as long as the budget allows, however long the VM has run, where a start that installs
// nothing ends at Budgets.AgentStart of uptime; and a restart of a VM still within its
// first boot's AgentStart goes ahead.
func TestWait_firstBootIsNotCutShort(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Uptime = 3600 })
	_, err := h.b.waitAddress(h.ctx, addressWait{op: "create", node: "pv1-1", vmid: testVMID0, expect: agentAtFirstBoot, budget: 10 * time.Minute})
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "after 10m0s", "agent not running yet")

	h = newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Uptime = 60 })
	if err := h.b.Update(h.ctx, testID, Changes{Cores: ptr(4), UID: testUID, WaitForIP: true}); err != nil {
		t.Fatal(err)
	}
	if h.f.calls("Shutdown") != 1 || h.f.calls("Start") != 1 {
		t.Errorf("the restart of a VM 60 s into its boot was not made: %v", h.f.methods())
	}
}

// TestUpdate_restartWithoutAddressWaitIgnoresTheAgent: without WaitForIP the agent is not
// asked and a silent agent does not stop the restart.
func TestUpdate_restartWithoutAddressWaitIgnoresTheAgent(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Uptime = 7200 })
	if err := h.b.Update(h.ctx, testID, Changes{Cores: ptr(4), UID: testUID}); err != nil {
		t.Fatal(err)
	}
	if h.f.calls("AgentNetworkInterfaces") != 0 || h.f.calls("Start") != 1 {
		t.Errorf("calls %v", h.f.methods())
	}
}

// TestCreate_agentPreflight: with install_guest_agent off, a create that waits for the
// address of a template whose agent option is off is refused before the clone, unless the
// cloud-init installs qemu-guest-agent.
func TestCreate_agentPreflight(t *testing.T) {
	setup := func(t *testing.T) *harness {
		h := newHarness(t)
		h.b.cfg.InstallGuestAgent = false
		h.f.mutate(9001, func(v *fakeVM) { delete(v.Config, "agent") })
		return h
	}
	h := setup(t)
	s := h.spec()
	s.WaitForIP = true
	err := h.createFails(s)
	assertClass(t, err, pveapi.Permanent)
	assertContains(t, err.Error(), "template 9001's agent option is off", "qm set 9001 --agent 1", "install_guest_agent = true", "wait_for_ip = false")
	if h.f.calls("Clone") != 0 {
		t.Error("cloned anyway")
	}
	if strings.Contains(err.Error(), "cloud-config") {
		t.Error("the cloud-init text is in the error")
	}

	h = setup(t)
	s = h.spec()
	s.WaitForIP = true
	s.UserData = []byte("#cloud-config\npackages: [qemu-guest-agent]\n")
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		return nil
	})
	h.create(s)

	h = setup(t)
	s = h.spec()
	s.WaitForIP = false
	h.create(s)
}

// TestWait_progressAtInfo: a wait says at INFO when it starts (what, budget, and for a
// first boot how long it takes) and every 30 s what it has seen so far.
func TestWait_progressAtInfo(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	n := 0
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		switch n++; n {
		case 40:
			h.f.mutate(testVMID0, func(v *fakeVM) {
				v.Agent = []pveapi.NetworkInterface{{Name: "eth0", IPAddresses: []pveapi.IPAddress{{Type: "ipv4", Address: "169.254.10.20", Prefix: 16}}}}
			})
		case 80:
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		}
		return nil
	})
	ip, err := h.b.waitAddress(h.ctx, addressWait{op: "create", node: "pv1-1", vmid: testVMID0, expect: agentAtFirstBoot})
	if err != nil || ip == "" {
		t.Fatalf("ip %q, err %v", ip, err)
	}
	logs := h.logs.String()
	var started, progress []string
	for _, l := range strings.Split(logs, "\n") {
		switch {
		case strings.Contains(l, `"proxmox wait started"`):
			started = append(started, l)
		case strings.Contains(l, `"proxmox wait in progress"`):
			progress = append(progress, l)
		}
	}
	if len(started) != 1 {
		t.Fatalf("%d start lines:\n%s", len(started), logs)
	}
	assertContains(t, started[0], `"@level":"info"`, "an IPv4 address from the guest agent", `"budget":"the operation's timeout"`, "about 50 s", "baked in")
	// 80 polls at up to 1 s each: about 75 s, so two progress lines.
	if len(progress) < 2 {
		t.Fatalf("%d progress lines in %s:\n%s", len(progress), h.clock.Now().Sub(newFakeClock().Now()), logs)
	}
	assertContains(t, progress[0], `"@level":"info"`, `"seen":"agent not running yet"`, `"elapsed":`)
	assertContains(t, progress[len(progress)-1], "link-local address only", "agent not running yet; link-local address only")
}

// TestWaitReady_returnsTheVMWithItsAddress: the settle after an update ends when the agent
// reports an address, and returns the VM as Get reads it, with that address.
func TestWaitReady_returnsTheVMWithItsAddress(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	n := 0
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		if n++; n == 5 {
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		}
		return nil
	})
	vm, err := h.b.WaitReady(h.ctx, testID, ReadyOptions{UID: testUID, Address: true})
	if err != nil {
		t.Fatal(err)
	}
	if vm.IP == "" || vm.State != StateRunning || vm.UID != testUID || vm.Node != "pv1-1" {
		t.Errorf("vm %+v", vm)
	}
	if n != 5 {
		t.Errorf("%d agent polls, want 5", n)
	}
	vm, err = h.b.WaitReady(h.ctx, testID, ReadyOptions{UID: testUID})
	if err != nil || vm.State != StateRunning {
		t.Errorf("without the address: %+v, %v", vm, err)
	}
}

// TestCreate_addressWaitSaysHowLongAFirstBootTakes: Create's address wait says on its first
// INFO line that the seed's agent install takes about 50 s and that a template with the
// agent baked in removes it.
func TestCreate_addressWaitSaysHowLongAFirstBootTakes(t *testing.T) {
	h := newHarness(t)
	h.f.onCall("AgentNetworkInterfaces", func(context.Context, fakeCall) error {
		if h.f.calls("AgentNetworkInterfaces") == 3 {
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		}
		return nil
	})
	s := h.spec()
	s.WaitForIP = true
	h.create(s)
	var line string
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, `"proxmox wait started"`) && strings.Contains(l, `"wait":"address"`) {
			line = l
		}
	}
	assertContains(t, line, `"@level":"info"`, "about 50 s on a real host", "baked in", `"vmid":105967`)
	if strings.Contains(h.logs.String(), "#cloud-config") {
		t.Error("the cloud-init text is in the logs")
	}
}
