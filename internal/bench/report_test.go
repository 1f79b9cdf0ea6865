package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/e2e/tfrun"
)

// fakeRun is a run whose every target is met; tests spoil one value at a time.
func fakeRun() []Result {
	s := time.Second
	op := func(o Op, wall, lb time.Duration, reqs map[string]int, rss int64, inflight int) OpResult {
		return OpResult{Op: o, Wall: wall, LowerBound: lb, Requests: reqs, PeakRSS: rss, MaxInFlight: inflight}
	}
	createReqs := func(n int) map[string]int {
		return map[string]int{tfrun.StatClone: n, tfrun.StatResources: 2 * n, tfrun.StatTaskStatus: 9 * n}
	}
	planReqs := func(n int) map[string]int {
		return map[string]int{tfrun.StatResources: 1, tfrun.StatConfigGet: n, tfrun.StatStatus: n}
	}
	mk := func(n, p int, speed float64, create time.Duration, lb time.Duration) Result {
		return Result{Scenario: Scenario{N: n, P: p, Speed: speed}, VMs: n, DistinctVMIDs: n, Ops: []OpResult{
			op(OpCreate, create, lb, createReqs(n), 30<<20, 8),
			op(OpPlan, s, 0, planReqs(n), 30<<20, 8),
			op(OpUpdate, 2*s, s, map[string]int{tfrun.StatStop: n}, 30<<20, 8),
			op(OpDestroy, s, s/2, map[string]int{tfrun.StatDestroy: n}, 30<<20, 8),
		}}
	}
	return []Result{
		mk(1, 10, 1, 53*s, 50*s),
		mk(50, 10, 10, 30*s, 25*s),
		mk(100, 10, 10, 60*s, 50*s),
	}
}

func verdicts(rs []Result) map[string]Target {
	m := map[string]Target{}
	for _, t := range (Report{Results: rs}).Targets() {
		m[t.Name[:20]] = t
	}
	return m
}

func TestTargets_allMet(t *testing.T) {
	ts := (Report{Results: fakeRun()}).Targets()
	if len(ts) != 7 {
		t.Fatalf("%d targets, want 7", len(ts))
	}
	for _, tg := range ts {
		if !tg.Ran || !tg.Met || tg.Ratio > 1 {
			t.Errorf("%s: %+v, want met with a ratio of at most 1", tg.Name, tg)
		}
	}
}

func TestTargets_eachMiss(t *testing.T) {
	for _, c := range []struct {
		name   string
		key    string
		spoil  func(rs []Result)
		substr string
	}{
		{"slow single create", "Create of one VM wit", func(rs []Result) { rs[0].Ops[0].Wall = 56 * time.Second }, "1.12x"},
		{"plan requests", "No-op plan of 100 VM", func(rs []Result) { rs[2].Ops[1].Requests[tfrun.StatConfigGet] = 201 }, "302 requests: 3.01 per VM + 1 listing"},
		{"plan listings", "No-op plan of 100 VM", func(rs []Result) { rs[2].Ops[1].Requests[tfrun.StatResources] = 102 }, "+ 102 listing"},
		{"agent in plan", "No agent polling dur", func(rs []Result) { rs[1].Ops[1].Requests[tfrun.StatAgent] = 3 }, "3 agent requests"},
		{"slow waves", "Create of 50 VMs at ", func(rs []Result) { rs[1].Ops[0].Wall = 32 * time.Second }, "1.28x"},
		{"duplicate VMID", "Create of 100 VMs at", func(rs []Result) { rs[2].DistinctVMIDs = 99 }, "1 duplicate VMIDs"},
		{"retry left", "Create of 100 VMs at", func(rs []Result) { rs[2].Ops[0].ExitCode = 1 }, "terraform exit 1"},
		{"RSS", "Provider peak RSS un", func(rs []Result) { rs[2].Ops[3].PeakRSS = 151 << 20 }, "151.0 MiB"},
		{"in flight", "Requests in flight p", func(rs []Result) { rs[0].Ops[2].MaxInFlight = 9 }, "at most 9"},
	} {
		rs := fakeRun()
		c.spoil(rs)
		got := verdicts(rs)[c.key]
		if !got.Ran || got.Met || !strings.Contains(got.Measured, c.substr) {
			t.Errorf("%s: %+v; want missed, measured containing %q", c.name, got, c.substr)
		}
	}
}

func TestTargets_notRun(t *testing.T) {
	rs := fakeRun()[:1]
	got := verdicts(rs)
	for _, k := range []string{"No-op plan of 100 VM", "Create of 50 VMs at ", "Create of 100 VMs at", "Provider peak RSS un"} {
		if got[k].Ran || got[k].Met {
			t.Errorf("%s: %+v, want not run", k, got[k])
		}
	}
	md := (Report{Results: rs}).Markdown()
	if !strings.Contains(md, "(not run)") || !strings.Contains(md, "| met |") {
		t.Errorf("markdown does not say what ran:\n%s", md)
	}
}

func TestMarkdown_tables(t *testing.T) {
	rs := fakeRun()
	rs[1].Ops[0].Wall = 40 * time.Second
	rs[1].Problems = []string{"update: terraform exited 1: a | b"}
	rs[0].Ops[0].Requests["GET /version"] = 1
	md := (Report{Results: rs, Command: "-n 1", Elapsed: time.Minute}).Markdown()
	for _, want := range []string{
		"| 50 | 10 | 10 | create | 40.00 | 0.00 | 25.00 | 1.60 |", // wall, span, bound, ratio
		"| 100 | 10 | 10 | destroy | 1.00 | 0.00 | 0.50 | 2.00 | - | 1.00 | 0 | 8 | 30.0 | 0.00 | 0.00 | 0 |",
		"| 100 | 10 | 10 | plan | 1.00 | 0.00 | 0.00 | - |",
		"**missed**",
		"| N | P | op | listing | config GET | clone | stop | status | task status | destroy | `GET /version` | total |",
		"| 100 | 10 | plan | 0.01 | 1.00 | . | . | 1.00 | . | . | . | 2.01 |",
		`a \| b`,
		"took 1m0s",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
