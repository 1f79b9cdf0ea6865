package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// fakeRun is a run whose every target is met; tests spoil one value at a time.
func fakeRun() []Result {
	s := time.Second
	ms := time.Millisecond
	op := func(o Op, wall, lb time.Duration, reqs map[string]int, rss int64, inflight int) OpResult {
		return OpResult{Op: o, Wall: wall, Span: wall - 200*ms, LowerBound: lb, Requests: reqs, PeakRSS: rss, MaxInFlight: inflight}
	}
	createReqs := func(n int) map[string]int {
		return map[string]int{tfrun.StatClone: n, tfrun.StatResources: 2 * n, tfrun.StatTaskStatus: 9 * n, tfrun.StatAgent: 12 * n}
	}
	planReqs := func(n int) map[string]int {
		return map[string]int{tfrun.StatResources: 1, tfrun.StatConfigGet: n, tfrun.StatStatus: n}
	}
	mk := func(n, p int, speed float64, create, update, destroy, lb time.Duration) Result {
		return Result{Scenario: Scenario{N: n, P: p, Speed: speed}, VMs: n, DistinctVMIDs: n, Ops: []OpResult{
			op(OpCreate, create, lb, createReqs(n), 30<<20, 8),
			op(OpPlan, s, 0, planReqs(n), 30<<20, 8),
			op(OpUpdate, update, 13*lb/49, map[string]int{tfrun.StatStop: n}, 30<<20, 8),
			op(OpDestroy, destroy, 2*lb/49, map[string]int{tfrun.StatDestroy: n}, 30<<20, 8),
		}}
	}
	return []Result{
		mk(1, 10, 1, 51*s, 13500*ms, 2090*ms, 49*s),
		mk(5, 10, 1, 51*s, 13500*ms, 2090*ms, 49*s),
		mk(100, 10, 5, 110*s, 29*s, 4500*ms, 98*s),
		mk(100, 20, 10, 28*s, 8*s, 1500*ms, 24500*ms),
		mk(500, 20, 10, 130*s, 35*s, 6*s, 122500*ms),
	}
}

// fakeListings are listing scenarios whose target is met.
func fakeListings() []ListResult {
	op := func(name string, n int, rss int64) ListOp {
		return ListOp{Name: name, Wall: 30 * time.Second, Listed: n, Requests: map[string]int{tfrun.StatConfigGet: n, tfrun.StatAgent: n, tfrun.StatResources: 1},
			MaxInFlight: 8, PeakRSS: rss}
	}
	return []ListResult{
		{N: 1000, Speed: 5, Ops: []ListOp{op("proxy_vms", 1000, 40<<20), op("terraform query", 1000, 30<<20)}},
		{N: 10000, Speed: 5, Ops: []ListOp{op("proxy_vms", 10000, 120<<20), op("terraform query", 10000, 50<<20)}},
	}
}

func fakeReport(rs []Result) Report {
	return Report{Results: rs, Listings: fakeListings(), Config: Config{ScaleNs: []int{100, 500}, ScaleP: 20, ScaleSpeed: 10}}
}

func verdicts(rs []Result) map[string]Target {
	m := map[string]Target{}
	for _, t := range fakeReport(rs).Targets() {
		m[t.Name[:24]] = t
	}
	return m
}

func TestTargets_allMet(t *testing.T) {
	ts := fakeReport(fakeRun()).Targets()
	if len(ts) != 14 {
		t.Fatalf("%d targets, want 14", len(ts))
	}
	for _, tg := range ts {
		if !tg.Ran || !tg.Met || tg.Ratio > 1 {
			t.Errorf("%s: %+v, want met with a ratio of at most 1", tg.Name, tg)
		}
		if !strings.HasPrefix(tg.Line(), "met ") {
			t.Errorf("line %q", tg.Line())
		}
	}
}

// The update and destroy targets exclude terraform's own time: its start, plan and state
// writes (the wall less the span) and the slots it leaves empty between changes.
func TestTargets_updateAndDestroyExcludeTerraformsOwnTime(t *testing.T) {
	rs := fakeRun()
	// One update: a 16 s bound, a span of 16.2 s (1.01x), terraform's own 1 s around it
	// (the wall 1.08x).
	rs[0].Ops[2].Wall, rs[0].Ops[2].Span, rs[0].Ops[2].LowerBound = 17200*time.Millisecond, 16200*time.Millisecond, 16*time.Second
	// 100 destroys: a 4 s bound, a span of 5.2 s (1.30x) of which 1 s of slots terraform
	// left empty between changes: 4.2 s, 1.05x.
	rs[2].Ops[3].Span, rs[2].Ops[3].Idle, rs[2].Ops[3].LowerBound = 5200*time.Millisecond, time.Second, 4*time.Second
	got := verdicts(rs)
	if u := got["Update of one VM at a re"]; !u.Met || !strings.Contains(u.Measured, "1.01x on the span") {
		t.Errorf("update of one VM: %+v, want met on the span (the wall is 1.06x)", u)
	}
	if d := got["Destroy of 100 VMs at pa"]; !d.Met || !strings.Contains(d.Measured, "1.05x on the span") || !strings.Contains(d.Measured, "less 1.00 s of terraform's own time") {
		t.Errorf("destroy of 100 VMs: %+v, want met on the span less the idle slots (the span is 1.30x)", d)
	}
}

func TestIdleSlots(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// P = 2, three changes of 1 s: a and b start together; b ends at 1.0 s and terraform
	// starts c 0.2 s later (one of two slots empty for 0.2 s while c waits: 0.1 s);
	// a ends at 1.1 s with nothing left to start (not terraform's: no change waits).
	times := map[string][2]time.Time{
		"a": {at(0), at(1100)},
		"b": {at(0), at(1000)},
		"c": {at(1200), at(2200)},
	}
	if got := idleSlots(times, 2); got != 100*time.Millisecond {
		t.Errorf("idleSlots = %s, want 100ms", got)
	}
	if got := idleSlots(map[string][2]time.Time{"a": {at(0), at(2000)}}, 10); got != 0 {
		t.Errorf("one change: idleSlots = %s, want 0", got)
	}
}

func TestTargets_eachMiss(t *testing.T) {
	for _, c := range []struct {
		name   string
		key    string
		spoil  func(rs []Result)
		substr string
	}{
		{"slow single create", "Create of one VM at a re", func(rs []Result) { rs[0].Ops[0].Wall = 52 * time.Second }, "1.06x"},
		{"slow single update", "Update of one VM at a re", func(rs []Result) { rs[0].Ops[2].Span = 14 * time.Second }, "1.08x on the span"},
		{"slow update waves, terraform's idle slots excluded", "Update of 100 VMs at par", func(rs []Result) {
			rs[2].Ops[2].Span, rs[2].Ops[2].Idle = 33*time.Second, 2*time.Second
		}, "1.19x on the span"},
		{"slow single destroy", "Destroy of one VM at a r", func(rs []Result) { rs[0].Ops[3].Span = 2500 * time.Millisecond }, "1.25x on the span"},
		{"slow destroy waves", "Destroy of 100 VMs at pa", func(rs []Result) { rs[2].Ops[3].Span = 4700 * time.Millisecond }, "1.18x on the span"},
		{"scale wall growth", "Scale: 100 to 500 VMs at", func(rs []Result) { rs[4].Ops[0].Wall = 170 * time.Second }, "create wall 6.07x"},
		{"scale destroy time growth", "Scale: 100 to 500 VMs at", func(rs []Result) {
			rs[4].Ops[3].Wall, rs[4].Ops[3].Span = 10*time.Second, 10*time.Second
		}, "destroy span less terraform's own time 7.69x"},
		{"scale requests per VM", "Scale: 100 to 500 VMs at", func(rs []Result) { rs[4].Ops[3].Requests[tfrun.StatDestroy] = 600 }, "requests per VM 1.00 to 1.20"},
		{"scale RSS", "Scale: 100 to 500 VMs at", func(rs []Result) { rs[4].Ops[1].PeakRSS = 130 << 20 }, "peak RSS 130.0 MiB"},
		{"failed single destroy", "Destroy of one VM at a r", func(rs []Result) { rs[0].Ops[3].ExitCode = 1 }, "terraform exit 1"},
		{"plan requests", "No-op plan of 100 VMs: a", func(rs []Result) { rs[2].Ops[1].Requests[tfrun.StatConfigGet] = 101 }, "202 requests: 2.01 per VM + 1 listing"},
		{"plan listings", "No-op plan of 100 VMs: a", func(rs []Result) { rs[2].Ops[1].Requests[tfrun.StatResources] = 2 }, "+ 2 listing"},
		{"agent requests at real pace", "Agent requests per creat", func(rs []Result) { rs[1].Ops[0].Requests[tfrun.StatAgent] = 105 }, "21.0 per VM at N=5"},
		{"agent in plan", "No agent polling during ", func(rs []Result) { rs[1].Ops[1].Requests[tfrun.StatAgent] = 3 }, "3 agent requests"},
		{"slow waves", "Create of 100 VMs at par", func(rs []Result) { rs[2].Ops[0].Wall = 115 * time.Second }, "1.17x"},
		{"slow update waves", "Update of 100 VMs at par", func(rs []Result) { rs[2].Ops[2].Span = 31 * time.Second }, "1.19x on the span"},
		{"duplicate VMID", "Create of 100 VMs at par", func(rs []Result) { rs[2].DistinctVMIDs = 99 }, "1 duplicate VMIDs"},
		{"retry left", "Create of 100 VMs at par", func(rs []Result) { rs[2].Ops[0].ExitCode = 1 }, "terraform exit 1"},
		{"RSS", "Provider peak RSS under ", func(rs []Result) { rs[2].Ops[3].PeakRSS = 65 << 20 }, "65.0 MiB"},
		{"in flight", "Requests in flight per p", func(rs []Result) { rs[0].Ops[2].MaxInFlight = 9 }, "at most 9"},
		{"scale duplicate", "Scale: 500 VMs at parall", func(rs []Result) { rs[4].DistinctVMIDs = 498 }, "2 duplicate VMIDs"},
		{"scale leftovers", "Scale: 500 VMs at parall", func(rs []Result) { rs[4].Leftovers = []string{"vm 1 bench-1"} }, "1 leftovers"},
	} {
		rs := fakeRun()
		c.spoil(rs)
		got := verdicts(rs)[c.key]
		if !got.Ran || got.Met || !strings.Contains(got.Measured, c.substr) {
			t.Errorf("%s: %+v; want missed, measured containing %q", c.name, got, c.substr)
		}
		if !strings.HasPrefix(got.Line(), "MISSED") {
			t.Errorf("%s: line %q", c.name, got.Line())
		}
	}
}

// TestTargets_listing: the listing target is missed when the provider's RSS is over its
// limit, a VM is not listed, a command failed, or requests in flight exceed the bound.
func TestTargets_listing(t *testing.T) {
	const key = "Listing 10000 marked VMs"
	for _, c := range []struct {
		name   string
		key    string
		spoil  func(ls []ListResult)
		substr string
	}{
		{"RSS", key, func(ls []ListResult) { ls[1].Ops[0].PeakRSS = 300 << 20 }, "proxy_vms 300.0 MiB"},
		{"a VM missing", key, func(ls []ListResult) { ls[1].Ops[1].Listed = 9999 }, "(9999 listed)"},
		{"failed", key, func(ls []ListResult) { ls[1].Ops[0].ExitCode = 1 }, "proxy_vms"},
		{"in flight", "Requests in flight per p", func(ls []ListResult) { ls[0].Ops[0].MaxInFlight = 12 }, "at most 12"},
	} {
		r := fakeReport(fakeRun())
		c.spoil(r.Listings)
		var got Target
		for _, tg := range r.Targets() {
			if strings.HasPrefix(tg.Name, c.key) {
				got = tg
			}
		}
		if !got.Ran || got.Met || !strings.Contains(got.Measured, c.substr) {
			t.Errorf("%s: %+v; want missed, measured containing %q", c.name, got, c.substr)
		}
	}
	md := fakeReport(fakeRun()).Markdown()
	if !strings.Contains(md, "## Listing at scale") || !strings.Contains(md, "| 10000 | 5 | proxy_vms | 10000 | 30.00 | 20001 | 2.00 | 8 | 120.0 |") {
		t.Errorf("markdown lacks the listing table:\n%s", md)
	}
}

func TestTargets_notRun(t *testing.T) {
	rs := fakeRun()[:1]
	got := verdicts(rs)
	for _, k := range []string{"No-op plan of 100 VMs: a", "Create of 100 VMs at par", "Destroy of 100 VMs at pa", "Provider peak RSS under "} {
		if got[k].Ran || got[k].Met {
			t.Errorf("%s: %+v, want not run", k, got[k])
		}
	}
	if _, ok := got["Scale: 500 VMs at parall"]; ok {
		t.Error("a scale target without the scale scenarios")
	}
	md := fakeReport(rs).Markdown()
	if !strings.Contains(md, "(not run)") || !strings.Contains(md, "| met |") {
		t.Errorf("markdown does not say what ran:\n%s", md)
	}
}

// The scale growth judges the update's and destroy's span less terraform's own time in
// it: a destroy whose wall grew 6.7x for 5x the VMs, all of it terraform's hand-off, meets it.
func TestTargets_scaleGrowthExcludesTerraformsOwnTime(t *testing.T) {
	rs := fakeRun()
	rs[4].Ops[3].Wall, rs[4].Ops[3].Span, rs[4].Ops[3].Idle = 10*time.Second, 10*time.Second, 4*time.Second
	rs[4].Ops[3].Breakdown.Handoff = 200 * time.Millisecond
	got := verdicts(rs)["Scale: 100 to 500 VMs at"]
	if !got.Met || !strings.Contains(got.Measured, "destroy span less terraform's own time 4.62x (wall 6.67x, terraform's hand-off 0 ms to 200 ms per VM)") {
		t.Errorf("%+v; want met on the destroy's span less terraform's own time, naming the wall's growth", got)
	}
}

func TestMarkdown_scaleGrowth(t *testing.T) {
	md := fakeReport(fakeRun()).Markdown()
	for _, want := range []string{
		"## Scale: 100 to 500 VMs at parallelism 20, speed 10",
		"(5 to 25: 5.0x)",
		"| create | 28.00 | 130.00 | 4.64x | 4.64x | 1.14 | 1.06 | 24.00 | 24.00 | 8 | 30.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func TestMarkdown_tables(t *testing.T) {
	rs := fakeRun()
	rs[1].Ops[0].Wall = 60 * time.Second
	rs[1].Problems = []string{"update: terraform exited 1: a | b"}
	rs[0].Ops[0].Requests["GET /version"] = 1
	md := (Report{Results: rs, Command: "-n 1", Elapsed: time.Minute, Note: "noisy: a shared machine"}).Markdown()
	for _, want := range []string{
		"**noisy: a shared machine**",
		"| 5 | 10 | 1 | create | 60.00 | 50.80 | 49.00 | 1.22 | 1.04 |", // wall, span, bound, ratios
		"| 100 | 10 | 5 | destroy | 4.50 | 4.30 | 4.00 | 1.12 | 1.07 | 1.00 | 0 | 8 | 30.0 | 0.00 | 0.00 | 0 |",
		"| 100 | 10 | 5 | plan | 1.00 | 0.80 | 0.00 | - |",
		"max(clone, seed upload)", "max(stop, seed delete)",
		"| N | P | op | listing | config GET | clone | stop | status | agent | task status | destroy | `GET /version` | total |",
		"| 100 | 10 | plan | 0.01 | 1.00 | . | . | 1.00 | . | . | . | . | 2.01 |",
		`a \| b`,
		"took 1m0s",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
