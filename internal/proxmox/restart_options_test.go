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
