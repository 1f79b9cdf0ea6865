package proxmox

import (
	"slices"
	"strings"
	"testing"
)

// withTestOption adds a restart option beyond cores and memory for the test: its config
// value is its attribute's value behind "x-".
func withTestOption(t *testing.T) {
	t.Helper()
	old := RestartOptions
	RestartOptions = append(slices.Clone(old), RestartOption{Key: "testopt", Attr: "test_attr", Label: "test option",
		read:  func(v string) string { return strings.TrimPrefix(v, "x-") },
		write: func(_, v string) string { return "x-" + v }})
	t.Cleanup(func() { RestartOptions = old })
}

// TestRestartOptions_generic: an option beyond cores and memory is written by a create and
// an update through its write, read through its read, restarts a running VM (left pending
// with DeferRestart), not a stopped one, is not written again when the config holds it, and
// a value that would break out of the option string is refused before any request.
func TestRestartOptions_generic(t *testing.T) {
	withTestOption(t)
	ch := Changes{Options: map[string]string{"testopt": "a"}}

	p, err := planUpdate(planView(t, "running", nil), ch)
	if err != nil || p.params["testopt"] != "x-a" || !slices.Equal(p.optRestart, []string{"testopt"}) || p.powerFor(ch) != powerRestart {
		t.Fatalf("running: err %v, params %v, restart %v, power %v", err, p.params, p.optRestart, p.powerFor(ch))
	}
	if got := restartValues(ch, p.restartKeys()); !slices.Equal(got, []string{"test option a"}) {
		t.Errorf("restart error names %v", got)
	}
	deferCh := ch
	deferCh.DeferRestart = true
	if p, _ := planUpdate(planView(t, "running", nil), deferCh); p.powerFor(deferCh) != powerPending {
		t.Errorf("DeferRestart: power %v, want pending", p.powerFor(deferCh))
	}
	if p, _ := planUpdate(planView(t, "stopped", nil), ch); p.params["testopt"] != "x-a" || len(p.optRestart) != 0 {
		t.Errorf("stopped: params %v, restart %v", p.params, p.optRestart)
	}
	held := planView(t, "running", func(cfg map[string]string) { cfg["testopt"] = "x-a" })
	if p, _ := planUpdate(held, ch); len(p.params) != 0 || p.pending() {
		t.Errorf("config holds it: params %v, pending %v", p.params, p.pending())
	}
	if _, err := planUpdate(planView(t, "running", nil), Changes{Options: map[string]string{"testopt": "a,b=c"}}); err == nil {
		t.Error("a value with ',' and '=' was planned")
	}
	if !ChangesRestartOption(ch) || ChangesRestartOption(Changes{}) {
		t.Error("ChangesRestartOption")
	}

	params := map[string]string{}
	if err := optionParams(params, Spec{Options: map[string]string{"testopt": "b"}}, map[string]string{}); err != nil || params["testopt"] != "x-b" {
		t.Errorf("create: %v %v", params, err)
	}
	vm := vmFromConfig(testID, "pve1", map[string]string{"testopt": "x-b"}, Mark{})
	if vm.Options["testopt"] != "b" {
		t.Errorf("read: %v", vm.Options)
	}
}

// TestCPUType: the cpu option's cputype is read from its default key or cputype=, and a
// new type keeps the option's other properties.
func TestCPUType(t *testing.T) {
	for cpu, want := range map[string]string{"host": "host", "host,flags=+aes": "host", "cputype=kvm64,flags=+pcid": "kvm64", "flags=+aes": "",
		// parse_property_string: the keyless part anywhere, blank parts skipped
		"flags=+aes,host": "host", ",host": "host", "flags=+aes,,kvm64,hidden=1": "kvm64"} {
		if got := cpuType(cpu); got != want {
			t.Errorf("cpuType(%q) = %q, want %q", cpu, got, want)
		}
	}
	for cur, want := range map[string]string{"": "host", "kvm64": "host", "kvm64,flags=+aes": "host,flags=+aes", "cputype=kvm64,flags=+pcid": "host,flags=+pcid",
		"flags=+aes,kvm64": "host,flags=+aes", "flags=+aes,,kvm64,hidden=1": "host,flags=+aes,hidden=1"} {
		if got := withCPUType(cur, "host"); got != want {
			t.Errorf("withCPUType(%q, host) = %q, want %q", cur, got, want)
		}
	}
	p, err := planUpdate(planView(t, "running", func(cfg map[string]string) { cfg["cpu"] = "kvm64,flags=+aes" }),
		Changes{Options: map[string]string{"cpu": "host"}})
	if err != nil || p.params["cpu"] != "host,flags=+aes" || p.powerFor(Changes{}) != powerRestart {
		t.Errorf("update: %v %v %v", p.params, err, p.powerFor(Changes{}))
	}
}

// TestAgentOption: the guest agent option is read wherever its enabled key stands, and an
// update that switches it back on writes enabled=1 keeping its other properties, restarts
// a running VM for it (a stopped one is only written), writes nothing when the config has
// it on, and does not ask the running VM's agent first (it may have no agent channel
// until the restart).
func TestAgentOption(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "0": false, "": false, "enabled=1": true, "1,fstrim_cloned_disks=1": true,
		"fstrim_cloned_disks=1,enabled=1": true, "enabled=0,fstrim_cloned_disks=1": false, "fstrim_cloned_disks=1": false} {
		if got := agentEnabled(v); got != want {
			t.Errorf("agentEnabled(%q) = %t, want %t", v, got, want)
		}
	}
	for cur, want := range map[string]string{"": "1", "0": "1", "enabled=0,fstrim_cloned_disks=1": "1,fstrim_cloned_disks=1",
		"fstrim_cloned_disks=1,0,type=isa": "1,fstrim_cloned_disks=1,type=isa"} {
		if got := withAgent(cur, "true"); got != want {
			t.Errorf("withAgent(%q, true) = %q, want %q", cur, got, want)
		}
	}
	on := Changes{Options: map[string]string{"agent": "true"}, WaitForIP: true}
	off := func(cfg map[string]string) { cfg["agent"] = "enabled=0,fstrim_cloned_disks=1" }
	p, err := planUpdate(planView(t, "running", off), on)
	if err != nil || p.params["agent"] != "1,fstrim_cloned_disks=1" || !slices.Equal(p.optRestart, []string{"agent"}) ||
		p.powerFor(on) != powerRestart || p.agentCheck {
		t.Errorf("running: err %v, params %v, restart %v, power %v, agent asked %t", err, p.params, p.optRestart, p.powerFor(on), p.agentCheck)
	}
	if p, _ := planUpdate(planView(t, "stopped", off), on); p.params["agent"] != "1,fstrim_cloned_disks=1" || p.pending() {
		t.Errorf("stopped: params %v, pending %t", p.params, p.pending())
	}
	if p, _ := planUpdate(planView(t, "running", func(cfg map[string]string) { cfg["agent"] = "1" }), on); len(p.params) != 0 || p.pending() {
		t.Errorf("agent on: params %v, pending %t", p.params, p.pending())
	}
	// A restart for another option still asks the agent first.
	cores := 4
	if p, _ := planUpdate(planView(t, "running", nil), Changes{Cores: &cores, WaitForIP: true}); !p.agentCheck {
		t.Error("a cores restart did not ask the agent first")
	}
	vm := vmFromConfig(testID, "pve1", map[string]string{"agent": "fstrim_cloned_disks=1,enabled=1"}, Mark{})
	if !vm.AgentEnabled || vm.Options["agent"] != "true" {
		t.Errorf("read: agent %t, options %v", vm.AgentEnabled, vm.Options)
	}
}
