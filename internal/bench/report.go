package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// Report renders a run.
type Report struct {
	Results []Result
	// Listings are the listing scenarios (listing.go).
	Listings []ListResult
	Config   Config
	// Elapsed is the whole run's wall time (build included).
	Elapsed time.Duration
	// Command is the flags the run used; Host describes the machine and tools.
	Command, Host string
	// Date is when the run ended.
	Date time.Time
	// Note is printed at the top in bold (e.g. that the machine was busy).
	Note string
}

// Write writes results.md and results.png into dir.
func (r Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	if len(r.Results) == 0 {
		return nil // only listing scenarios: nothing to plot
	}
	img, err := renderPNG(plotPanels(r.Results))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.png"), img, 0o644)
}

// Target is one of the benchmark's targets as measured.
type Target struct {
	Name     string
	Scenario string // which run measured it
	Measured string // the measured value, in words
	Limit    string
	// Ratio is the measured value over its limit (met when at most 1); NaN: not run.
	Ratio float64
	Met   bool
	Ran   bool
}

// Verdict is "met", "MISSED" or "not run".
func (t Target) Verdict() string {
	switch {
	case !t.Ran:
		return "not run"
	case t.Met:
		return "met"
	}
	return "MISSED"
}

// Line is the target on one line: verdict, measured / limit, name, measured, where.
func (t Target) Line() string {
	ratio := "-"
	if t.Ran {
		ratio = fmt.Sprintf("%.2f", t.Ratio)
	}
	return fmt.Sprintf("%-7s %5s  %s: %s (limit %s; %s)", t.Verdict(), ratio, t.Name, t.Measured, t.Limit, t.Scenario)
}

// listingKey is the shared listing's endpoint.
const listingKey = tfrun.StatResources

// find returns the first result of n VMs at parallelism p (0: any) and speed (0: any)
// that ran op.
func (r Report) find(n, p int, speed float64, op Op) (Result, OpResult, bool) {
	for _, res := range r.Results {
		if res.N == n && (p == 0 || res.P == p) && (speed == 0 || res.Speed == speed) {
			o := res.Op(op)
			if o.Requests != nil {
				return res, o, true
			}
		}
	}
	return Result{}, OpResult{}, false
}

// maxInFlightLimit is the provider's request bound in this run.
func (r Report) maxInFlightLimit() int {
	if r.Config.MaxInFlight > 0 {
		return r.Config.MaxInFlight
	}
	return pveapi.DefaultMaxInFlight
}

// The targets' limits.
const (
	realPaceLimit = 1.05     // create, update, destroy of one VM at speed 1, wall over bound
	waveLimit     = 1.15     // the same for 100 VMs at parallelism 10
	agentLimit    = 20       // agent requests per create at a real host's pace
	rssLimit      = 64 << 20 // provider peak RSS at 100 VMs
	// listRSSLimit bounds the provider's peak RSS while it lists listRSSAt marked VMs.
	listRSSLimit = 256 << 20
	listRSSAt    = 10000
)

// boundTarget is an operation's wall time over its bound, within limit.
func boundTarget(name string, res Result, o OpResult, limit float64, extra string, extraOK bool) Target {
	ratio := o.Ratio()
	m := fmt.Sprintf("%.2fx (%s for a bound of %s; span %.2fx; terraform's own start, plan and state writes %s)",
		ratio, secs(o.Wall), secs(o.LowerBound), o.SpanRatio(), secs(max(o.Wall-o.Span, 0)))
	if judgedOnSpan(o.Op) {
		// Judged on the span less terraform's own time inside it: terraform's own start,
		// refresh, plan and state writes are a cost no provider change removes (a fifth of
		// a one-VM destroy's bound, 0.8 to 1.4 s of a one-VM update's 16 s against the
		// provider's 0.2 to 0.3 s), and so is its time between one change's end and the next
		// one's start, and from the provider's last answer for a change to its
		// apply_complete (OpResult.Idle).
		ratio = o.OwnSpanRatio()
		m = fmt.Sprintf("%.2fx on the span (%s for a bound of %s: the span %s less %s of terraform's own time in it, the slots it left empty "+
			"between changes or held after the provider's last answer for one, a mean %s per VM; "+
			"the wall %s, %.2fx, with terraform's own start, refresh and state writes %s)",
			ratio, secs(o.OwnSpan()), secs(o.LowerBound), secs(o.Span), secs(o.Idle), ms(o.Breakdown.Handoff),
			secs(o.Wall), o.Ratio(), secs(max(o.Wall-o.Span, 0)))
	}
	if extra != "" {
		m += "; " + extra
	}
	if o.ExitCode != 0 {
		m += fmt.Sprintf("; terraform exit %d", o.ExitCode)
	}
	return Target{Name: name, Scenario: scen(res), Measured: m, Limit: fmt.Sprintf("%.2fx", limit),
		Ratio: ratio / limit, Met: ratio <= limit && o.ExitCode == 0 && extraOK, Ran: true}
}

// shutdownNote is the update's graceful shutdown against its part of the bound.
func shutdownNote(o OpResult) string {
	if o.Op != OpUpdate || o.ShutdownBound <= 0 {
		return ""
	}
	return fmt.Sprintf("graceful shutdown %s for its bound of %s (%.2fx)", secs(o.Shutdown), secs(o.ShutdownBound),
		float64(o.Shutdown)/float64(o.ShutdownBound))
}

// Targets evaluates the benchmark's targets on the results.
func (r Report) Targets() []Target {
	ts := r.boundTargets()
	ts = append(ts, r.planTarget())
	ts = append(ts, r.agentTargets()...)
	ts = append(ts, r.rssTarget(), r.listTarget(), r.inflightTarget())
	return append(ts, r.scaleTargets()...)
}

// notRun is a target whose scenario did not run.
func notRun(name, scen, limit string) Target {
	return Target{Name: name, Scenario: scen + " (not run)", Limit: limit, Ratio: math.NaN()}
}

// boundTargets are create, update and destroy of one VM at a real host's pace and of 100
// VMs at parallelism 10, each within its limit of the bound. The updates and destroys are
// judged on their span less the slots terraform left empty (terraform's own start, refresh,
// plan and state writes excluded, and its time between changes): at N=1 terraform's own
// time alone is some 0.36 s of a 2 s destroy bound, and 0.8 to 1.4 s of a 16 s update's,
// where the provider adds 0.2 to 0.3 s.
func (r Report) boundTargets() []Target {
	var ts []Target
	for _, op := range []Op{OpCreate, OpUpdate, OpDestroy} {
		name := fmt.Sprintf("%s of one VM at a real host's pace within %.2fx its bound%s", capital(op), realPaceLimit, spanNote(op))
		if res, o, ok := r.find(1, 0, 1, op); ok && o.LowerBound > 0 {
			ts = append(ts, boundTarget(name, res, o, realPaceLimit, shutdownNote(o), true))
		} else {
			ts = append(ts, notRun(name, "N=1 speed 1", fmt.Sprintf("%.2fx", realPaceLimit)))
		}
	}
	for _, op := range []Op{OpCreate, OpUpdate, OpDestroy} {
		name := fmt.Sprintf("%s of 100 VMs at parallelism 10 within %.2fx its bound%s", capital(op), waveLimit, spanNote(op))
		res, o, ok := r.find(100, 10, 0, op)
		if !ok || o.LowerBound <= 0 {
			ts = append(ts, notRun(name, "N=100 P=10", fmt.Sprintf("%.2fx", waveLimit)))
			continue
		}
		extra, extraOK := shutdownNote(o), true
		if op == OpCreate {
			dup := res.N - res.DistinctVMIDs
			extra = fmt.Sprintf("%d duplicate VMIDs, %d clone collisions solved inside", dup, max(res.CloneCollisions, 0))
			extraOK = dup == 0 && res.VMs == res.N
		}
		ts = append(ts, boundTarget(name, res, o, waveLimit, extra, extraOK))
	}
	return ts
}

// judgedOnSpan: the update and destroy targets are judged on the span less terraform's
// own time in it (OpResult.OwnSpan), the create targets on the wall.
func judgedOnSpan(op Op) bool { return op == OpUpdate || op == OpDestroy }

// spanNote names, in a target's name, that the update or destroy is judged on its span.
func spanNote(op Op) string {
	if judgedOnSpan(op) {
		return ", terraform's own time excluded"
	}
	return ""
}

func (r Report) planTarget() Target {
	const planName = "No-op plan of 100 VMs: at most 2 requests per VM plus one listing"
	res, o, ok := r.find(100, 10, 0, OpPlan)
	if !ok {
		return notRun(planName, "N=100 P=10", "2 x 100 + 1 = 201")
	}
	list, total := o.Requests[listingKey], o.TotalRequests()
	limit := 2*res.N + 1
	return Target{Name: planName, Scenario: scen(res),
		Measured: fmt.Sprintf("%d requests: %.2f per VM + %d listing(s)", total, float64(total-list)/float64(res.N), list),
		Limit:    fmt.Sprintf("2 x %d + 1 = %d", res.N, limit), Ratio: float64(total) / float64(limit),
		Met: total <= limit && list <= 1 && o.ExitCode == 0, Ran: true}
}

// agentTargets are the agent requests per create at a real host's pace and none in a plan.
func (r Report) agentTargets() []Target {
	var ts []Target
	const agentName = "Agent requests per create at a real host's pace: at most 20"
	var worst float64
	var agentScen, agentMeasured []string
	for _, res := range r.Results {
		if o := res.Op(OpCreate); o.Requests != nil && res.Speed == 1 {
			per := float64(o.Requests[tfrun.StatAgent]) / float64(res.N)
			worst = max(worst, per)
			agentScen = append(agentScen, scen(res))
			agentMeasured = append(agentMeasured, fmt.Sprintf("%.1f per VM at N=%d", per, res.N))
		}
	}
	if len(agentScen) > 0 {
		ts = append(ts, Target{Name: agentName, Scenario: strings.Join(agentScen, "; "), Measured: strings.Join(agentMeasured, ", "),
			Limit: fmt.Sprint(agentLimit), Ratio: worst / agentLimit, Met: worst <= agentLimit, Ran: true})
	} else {
		ts = append(ts, notRun(agentName, "speed 1", fmt.Sprint(agentLimit)))
	}
	agent, plans := 0, 0
	for _, res := range r.Results {
		if o := res.Op(OpPlan); o.Requests != nil {
			agent += o.Requests[tfrun.StatAgent]
			plans++
		}
	}
	if plans > 0 {
		ts = append(ts, Target{Name: "No agent polling during a plan", Scenario: fmt.Sprintf("every plan (%d)", plans),
			Measured: fmt.Sprintf("%d agent requests", agent), Limit: "0", Ratio: float64(agent), Met: agent == 0, Ran: true})
	}
	return ts
}

func (r Report) rssTarget() Target {
	const name = "Provider peak RSS under 64 MiB at 100 VMs"
	var peak int64
	var peakScen []string
	for _, res := range r.Results {
		if res.N != 100 {
			continue
		}
		peakScen = append(peakScen, scen(res))
		for _, o := range res.Ops {
			peak = max(peak, o.PeakRSS)
		}
	}
	if len(peakScen) == 0 {
		return notRun(name, "N=100", "64 MiB")
	}
	return Target{Name: name, Scenario: strings.Join(peakScen, "; "),
		Measured: fmt.Sprintf("%.1f MiB", float64(peak)/(1<<20)), Limit: "64 MiB", Ratio: float64(peak) / rssLimit,
		Met: peak > 0 && peak < rssLimit, Ran: true}
}

func (r Report) listTarget() Target {
	listName := fmt.Sprintf("Listing %d marked VMs (proxy_vms, and terraform query when run): provider peak RSS under "+
		"%d MiB, every VM listed", listRSSAt, listRSSLimit>>20)
	lr, ok := r.listing(listRSSAt)
	if !ok {
		return notRun(listName, fmt.Sprintf("listing N=%d", listRSSAt), fmt.Sprintf("%d MiB", listRSSLimit>>20))
	}
	var peak int64
	var parts []string
	met := len(lr.Problems) == 0
	for _, o := range lr.Ops {
		peak = max(peak, o.PeakRSS)
		parts = append(parts, fmt.Sprintf("%s %.1f MiB in %s (%d listed)", o.Name, float64(o.PeakRSS)/(1<<20), secs(o.Wall), o.Listed))
		met = met && o.ExitCode == 0 && o.Listed == lr.N
	}
	return Target{Name: listName, Scenario: fmt.Sprintf("N=%d speed %g", lr.N, lr.Speed), Measured: strings.Join(parts, "; "),
		Limit: fmt.Sprintf("%d MiB", listRSSLimit>>20), Ratio: float64(peak) / listRSSLimit,
		Met: met && peak > 0 && peak < listRSSLimit, Ran: true}
}

func (r Report) inflightTarget() Target {
	limit := r.maxInFlightLimit()
	most := 0
	for _, res := range r.Results {
		for _, o := range res.Ops {
			most = max(most, o.MaxInFlight)
		}
	}
	for _, lr := range r.Listings {
		for _, o := range lr.Ops {
			most = max(most, o.MaxInFlight)
		}
	}
	return Target{Name: "Requests in flight per provider instance bounded (max_requests_in_flight)", Scenario: "every command",
		Measured: fmt.Sprintf("at most %d at once", most), Limit: fmt.Sprintf("%d", limit),
		Ratio: float64(most) / float64(limit), Met: most <= limit, Ran: true}
}

// scaleTargets are, when the scale scenarios ran, the largest one's correctness (every
// command passed, no duplicate VMID, nothing left, requests in flight bounded) and its
// growth from the smallest (scaleGrowthTarget).
func (r Report) scaleTargets() []Target {
	sc := r.scaleResults()
	if len(sc) == 0 {
		return nil
	}
	limit := r.maxInFlightLimit()
	res := sc[len(sc)-1]
	name := fmt.Sprintf("Scale: %d VMs at parallelism %d created, planned, updated and destroyed, no duplicate VMID, "+
		"requests in flight bounded", res.N, res.P)
	dup := res.N - res.DistinctVMIDs
	inflight, failed := 0, 0
	for _, o := range res.Ops {
		inflight = max(inflight, o.MaxInFlight)
		if o.ExitCode != 0 {
			failed++
		}
	}
	ok := dup == 0 && res.VMs == res.N && inflight <= limit && failed == 0 && len(res.Leftovers) == 0
	ratio := float64(inflight) / float64(limit)
	if !ok {
		ratio = 1 + float64(dup+failed+len(res.Leftovers))/float64(res.N)
		if inflight > limit {
			ratio = max(ratio, float64(inflight)/float64(limit))
		}
	}
	ts := []Target{{Name: name, Scenario: scen(res),
		Measured: fmt.Sprintf("%d VMs, %d duplicate VMIDs, %d failed commands, %d leftovers, at most %d requests in "+
			"flight", res.VMs, dup, failed, len(res.Leftovers), inflight),
		Limit: fmt.Sprintf("0, 0, 0, %d", limit), Ratio: ratio, Met: ok, Ran: true}}
	if len(sc) > 1 {
		ts = append(ts, scaleGrowthTarget(sc[0], res))
	}
	return ts
}

// The scale growth's limits: from the smallest scale scenario a to the largest z, each
// op's time (providerTime) grows at most scaleWallSlack times as much as N (linear:
// z.N/a.N, which at one parallelism is the waves' growth too), its requests per VM at most
// scaleReqSlack times, and the provider's peak RSS of every command of z stays under
// scaleRSSLimit.
const (
	scaleWallSlack = 1.15
	scaleReqSlack  = 1.10
	scaleRSSLimit  = 128 << 20
)

// providerTime is what the scale growth judges of o: the span less terraform's own time
// in it for an update or a destroy (OwnSpan, as their targets are judged: terraform's
// hand-off grows with its state, bench/results.md "How to read"), else the wall.
func providerTime(o OpResult) time.Duration {
	if judgedOnSpan(o.Op) {
		return o.OwnSpan()
	}
	return o.Wall
}

// scaleGrowthTarget judges the growth from a to z: time and requests per VM linear in N,
// peak RSS bounded. Its ratio is the worst of the three against its limit.
func scaleGrowthTarget(a, z Result) Target {
	name := fmt.Sprintf("Scale: %d to %d VMs at parallelism %d: time and requests per VM grow linearly (time at most %.2fx N's growth: "+
		"the wall, for the update and destroy their span less terraform's own time in it; requests per VM at most "+
		"%.2fx), provider peak RSS under %d MiB",
		a.N, z.N, z.P, scaleWallSlack, scaleReqSlack, scaleRSSLimit>>20)
	nGrowth := float64(z.N) / float64(max(a.N, 1))
	worst, met := 0.0, true
	var parts []string
	var peak int64
	for _, op := range Ops {
		oa, oz := a.Op(op), z.Op(op)
		peak = max(peak, oz.PeakRSS)
		if oa.Requests == nil || oz.Requests == nil || providerTime(oa) <= 0 {
			continue
		}
		wall := float64(providerTime(oz)) / float64(providerTime(oa))
		reqA := float64(oa.TotalRequests()) / float64(a.N)
		reqZ := float64(oz.TotalRequests()) / float64(z.N)
		req := reqZ / max(reqA, 1e-9)
		worst = max(worst, wall/(scaleWallSlack*nGrowth), req/scaleReqSlack)
		met = met && wall <= scaleWallSlack*nGrowth && req <= scaleReqSlack && oz.ExitCode == 0
		var what string
		if judgedOnSpan(op) {
			what = fmt.Sprintf("span less terraform's own time %.2fx (wall %.2fx, terraform's hand-off %s to %s per VM)",
				wall, float64(oz.Wall)/float64(max(oa.Wall, 1)), ms(oa.Breakdown.Handoff), ms(oz.Breakdown.Handoff))
		} else {
			what = fmt.Sprintf("wall %.2fx", wall)
		}
		parts = append(parts, fmt.Sprintf("%s %s, requests per VM %.2f to %.2f", op, what, reqA, reqZ))
	}
	worst = max(worst, float64(peak)/scaleRSSLimit)
	met = met && peak > 0 && peak < scaleRSSLimit && len(parts) > 0
	return Target{Name: name, Scenario: fmt.Sprintf("%s; %s", scen(a), scen(z)),
		Measured: fmt.Sprintf("N grew %.1fx: %s; peak RSS %.1f MiB", nGrowth, strings.Join(parts, "; "), float64(peak)/(1<<20)),
		Limit:    fmt.Sprintf("%.2fx N's growth, %.2fx, %d MiB", scaleWallSlack, scaleReqSlack, scaleRSSLimit>>20),
		Ratio:    worst, Met: met, Ran: true}
}

// listing returns the listing scenario of n VMs.
func (r Report) listing(n int) (ListResult, bool) {
	for _, l := range r.Listings {
		if l.N == n {
			return l, true
		}
	}
	return ListResult{}, false
}

// writeListings is the listing scenarios' table.
func (r Report) writeListings(b *strings.Builder) {
	if len(r.Listings) == 0 {
		return
	}
	b.WriteString("\n## Listing at scale\n\n")
	b.WriteString("N marked VMs, running with a guest agent, made before the run (not by terraform), listed by " +
		"`proxy_vms` (`terraform apply` of " +
		"a configuration holding only the data source: the listing, one config read per VM and one agent read per VM, " +
		"and the state written) and, " +
		"with a Terraform 1.14+ binary (PROXY_TEST_TERRAFORM_LATEST), by the `proxy_vm` list resource (`terraform query`, which streams its " +
		"results). The provider reads at most `max_requests_in_flight` configs at once, with as many readers, over a window of 64 VMs, so its " +
		"goroutines stay bounded; what grows with N is the listing itself and the results.\n\n")
	b.WriteString("| N | speed | command | listed | wall s | requests | requests / VM | max in flight | peak RSS MiB " +
		"| provider CPU s | exit |\n")
	b.WriteString("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Listings {
		for _, o := range l.Ops {
			total := tfrun.TotalRequests(o.Requests)
			fmt.Fprintf(b, "| %d | %g | %s | %d | %s | %d | %.2f | %d | %.1f | %s | %d |\n", l.N, l.Speed, o.Name, o.Listed, num(o.Wall), total,
				float64(total)/float64(max(l.N, 1)), o.MaxInFlight, float64(o.PeakRSS)/(1<<20), num(o.ProviderCPU), o.ExitCode)
		}
	}
	for _, l := range r.Listings {
		if len(l.Problems) > 0 {
			fmt.Fprintf(b, "\nProblems at N=%d: %s\n", l.N, strings.ReplaceAll(strings.Join(l.Problems, "; "), "|", "\\|"))
		}
	}
}

// scaleResults are the scale scenarios that ran, in N order.
func (r Report) scaleResults() []Result {
	var out []Result
	for _, n := range r.Config.ScaleNs {
		for _, res := range r.Results {
			if res.N == n && res.P == r.Config.ScaleP && res.Speed == r.Config.ScaleSpeed {
				out = append(out, res)
				break
			}
		}
	}
	return out
}

func capital(op Op) string { return strings.ToUpper(string(op[:1])) + string(op[1:]) }

func scen(r Result) string {
	return fmt.Sprintf("N=%d P=%d speed %g", r.N, r.P, r.Speed)
}

// ms is d in whole milliseconds, "14 ms".
func ms(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

func secs(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

func num(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

func ratioCell(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// endpointNames are the short column names of the endpoint table.
var endpointNames = []struct{ key, name string }{
	{tfrun.StatResources, "listing"},
	{tfrun.StatConfigGet, "config GET"},
	{tfrun.StatConfigPut, "config PUT"},
	{tfrun.StatClone, "clone"},
	{tfrun.StatUpload, "upload"},
	{tfrun.StatResize, "resize"},
	{tfrun.StatStart, "start"},
	{tfrun.StatStop, "stop"},
	{tfrun.StatStatus, "status"},
	{tfrun.StatAgent, "agent"},
	{tfrun.StatTaskStatus, "task status"},
	{tfrun.StatVolumeDelete, "seed delete"},
	{tfrun.StatDestroy, "destroy"},
}

// Markdown is the report: targets, times, where the time goes, requests by endpoint,
// checks, and how it was measured.
func (r Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# Benchmark results\n\n")
	if r.Note != "" {
		fmt.Fprintf(&b, "**%s**\n\n", r.Note)
	}
	if !r.Date.IsZero() {
		fmt.Fprintf(&b, "Run %s", r.Date.UTC().Format("2006-01-02 15:04 MST"))
	} else {
		b.WriteString("Run")
	}
	if r.Host != "" {
		fmt.Fprintf(&b, " on %s", r.Host)
	}
	fmt.Fprintf(&b, "; took %s. Flags: `%s`.\n\n", r.Elapsed.Round(time.Second), r.Command)
	r.writeTargets(&b)
	r.writeWall(&b)
	r.writeBreakdown(&b)
	r.writeEndpoints(&b)
	r.writeScale(&b)
	r.writeListings(&b)
	r.writeChecks(&b)
	return b.String()
}

// writeTargets writes the targets table: each target, what it measured and its verdict.
func (r Report) writeTargets(b *strings.Builder) {
	b.WriteString("## Targets\n\n| target | measured on | measured | limit | measured / limit | verdict |\n|---|---|---|---|---|---|\n")
	for _, t := range r.Targets() {
		verdict, ratio := "not run", "-"
		if t.Ran {
			verdict = "**missed**"
			if t.Met {
				verdict = "met"
			}
			ratio = fmt.Sprintf("%.2f", t.Ratio)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", t.Name, t.Scenario, t.Measured, t.Limit, ratio, verdict)
	}
}

// writeWall writes the wall and span times of each operation against its lower bound, with the run's counters.
func (r Report) writeWall(b *strings.Builder) {
	b.WriteString("\n## Wall time against the lower bound\n\n")
	b.WriteString("Times are wall seconds at the run's speed (the simulator runs `speed` times faster than a real host). " +
		"Wall is the terraform command, start to exit; span is from the first resource change starting to the last one ending " +
		"(for the plan: the refreshes), without terraform's start-up, plan and state writes. " +
		"The bound is ceil(N/P) waves of one VM's critical path, steps that run side by side counting as the longer one: " +
		"create = max(clone, seed upload) + config (a synchronous write, no task) + resize + start + agent install + DHCP, " +
		"update = graceful shutdown (the simulator's, or -update-shutdown) + start + agent boot + DHCP, destroy = " +
		"max(stop, seed delete) + destroy.\n\n")
	b.WriteString("| N | P | speed | op | wall s | span s | bound s | wall / bound | span / bound | requests / VM | " +
		"listings | max in flight | peak RSS MiB | provider CPU s | terraform CPU s | exit |\n")
	b.WriteString("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		for _, o := range res.Ops {
			fmt.Fprintf(b, "| %d | %d | %g | %s | %s | %s | %s | %s | %s | %.2f | %d | %d | %.1f | %s | %s | %d |\n",
				res.N, res.P, res.Speed, o.Op, num(o.Wall), num(o.Span), num(o.LowerBound), ratioCell(o.Ratio()), ratioCell(o.SpanRatio()),
				float64(o.TotalRequests())/float64(res.N), o.Requests[listingKey], o.MaxInFlight, float64(o.PeakRSS)/(1<<20),
				num(o.ProviderCPU), num(o.TerraformCPU), o.ExitCode)
		}
	}
}

// writeBreakdown writes where one VM's time goes, per operation: tasks, agent and what the provider and terraform add.
func (r Report) writeBreakdown(b *strings.Builder) {
	b.WriteString("\n## Where one VM's time goes\n\n")
	b.WriteString("Mean per VM, wall seconds, from terraform's apply_start to apply_complete of each resource, split " +
		"with the simulator's task records: " +
		"tasks are the VM's own Proxmox tasks, agent the guest agent and DHCP delay after the start; before, between " +
		"and after are what the provider and " +
		"terraform add (requests, task status polls landing after the task ended, the seed upload and delete, which " +
		"carry no VMID, and the final reads); " +
		"hand-off is the part of after from the provider's last answered request for the VM to terraform's " +
		"apply_complete, terraform's own time " +
		"(the plugin protocol's reply, its state update and hooks), and overhead what the provider added: before, " +
		"between and after less the hand-off.\n\n")
	b.WriteString("| N | P | speed | op | resource | tasks | agent | before | between | after | hand-off | overhead | " +
		"overhead / (tasks + agent) |\n")
	b.WriteString("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		for _, o := range res.Ops {
			bd := o.Breakdown
			if bd.VMs == 0 {
				continue
			}
			work := bd.Tasks + bd.Agent
			rel := "-"
			if work > 0 {
				rel = fmt.Sprintf("%.0f%%", 100*float64(bd.Overhead())/float64(work))
			}
			fmt.Fprintf(b, "| %d | %d | %g | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s |\n",
				res.N, res.P, res.Speed, o.Op, bd.Resource.Seconds(), bd.Tasks.Seconds(), bd.Agent.Seconds(), bd.Before.Seconds(),
				bd.Between.Seconds(), bd.After.Seconds(), bd.Handoff.Seconds(), bd.Overhead().Seconds(), rel)
		}
	}
}

// writeEndpoints writes the API requests per VM by endpoint.
func (r Report) writeEndpoints(b *strings.Builder) {
	b.WriteString("\n## API requests per VM by endpoint\n\n")
	cols := r.endpointColumns()
	b.WriteString("| N | P | op |")
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c.name)
	}
	b.WriteString(" total |\n|---:|---:|---|")
	b.WriteString(strings.Repeat("---:|", len(cols)+1) + "\n")
	for _, res := range r.Results {
		for _, o := range res.Ops {
			fmt.Fprintf(b, "| %d | %d | %s |", res.N, res.P, o.Op)
			for _, c := range cols {
				fmt.Fprintf(b, " %s |", perVM(o.Requests[c.key], res.N))
			}
			fmt.Fprintf(b, " %s |\n", perVM(o.TotalRequests(), res.N))
		}
	}
}

// writeChecks writes the checks of each scenario, the plot and the reading notes.
func (r Report) writeChecks(b *strings.Builder) {
	b.WriteString("\n## Checks\n\n| N | P | VMs after create | distinct VMIDs | clone collisions | leftovers after " +
		"destroy | problems |\n|---:|---:|---:|---:|---:|---:|---|\n")
	for _, res := range r.Results {
		probs := "none"
		if len(res.Problems) > 0 {
			probs = strings.ReplaceAll(strings.Join(res.Problems, "; "), "|", "\\|")
		}
		fmt.Fprintf(b, "| %d | %d | %d | %d | %d | %d | %s |\n", res.N, res.P, res.VMs, res.DistinctVMIDs,
			max(res.CloneCollisions, 0), len(res.Leftovers), probs)
	}
	b.WriteString("\n![time, ratio and requests against N](results.png)\n")
	b.WriteString(readingNotes)
}

// readingNotes says what the speed factor does to the figures.
const readingNotes = `
## How to read these figures

- The simulator runs every task, agent delay and request service time ` + "`speed`" + ` times faster than a
  real host; the provider's task poll schedule (from 50 ms, growing 1.5 times per poll up to 1 s, with
  a poll just after the end a task's type is expected to take at a real host's pace, or, once the
  provider has seen tasks of that type end, the end they showed), terraform's
  own work and the client side of each request run in real time. At speed S those real-time
  parts weigh S times more against the bound than on a real host, so wall / bound at speed > 1
  is an upper estimate; the one-VM scenario runs at speed 1 (a real host's pace) by default.
- The speed-1 rows give a real host's request counts; at speed S the long waits (the guest
  agent, about 45 s at a real host's pace) take S times fewer polls of a fixed interval.
- Terraform's own start, plan and state writes (wall less span) are a fixed cost of
  about a quarter to half a second per command that no provider change removes: against a
  2 s destroy bound at N = 1 it alone is 10 to 25 %, and against a 16 s update bound 5 to 9 %
  (0.8 to 1.4 s, where the provider's own requests and poll lag add 0.2 to 0.3 s). Inside the
  span, terraform alone works between one change's end and the next one's start (its graph walk,
  hooks and state): the parallelism slots it leaves empty meanwhile, while changes are still to
  start, are its own time too, and so is each change's hand-off, from the provider's last
  answered request for the VM to terraform's apply_complete (nothing of the provider's is in
  flight for it then; the request log says when). The hand-off grows with the state: a destroy
  at parallelism 20 took 14 ms per VM of it at 100 VMs and 239 ms at 500, while the provider's
  part of each VM's destroy stayed about 0.22 s. The update and destroy targets are therefore
  judged on the span less terraform's own time in it (the slots it left empty or held after the
  provider's last answer, while changes were still to start, and its last hand-off: for a
  saturated walk, N times the mean time in the provider's hands over P), the create targets on
  the wall time.
- The scale target compares the largest scale scenario with the smallest: each command's time
  may grow at most 1.15 times as much as N (the provider's time: the update's and destroy's span
  less terraform's own time in it, as their targets are judged, and the create's and plan's
  wall), its requests per VM at most 1.10 times, and the provider's peak RSS stays under 128 MiB;
  the wall's growth is shown beside it.
- Max in flight is the most requests the simulator served at once; only one provider process
  talks to it at a time, so it is the per-instance figure.
- Peak RSS is the largest VmHWM of the provider processes terraform started for the command
  (sampled every 20 ms); CPU times are user + system of the provider processes and of
  terraform itself.
`

// writeScale is the growth from the first scale scenario to the last: wall time, the
// bound's growth (the waves), wall over bound and requests per VM.
func (r Report) writeScale(b *strings.Builder) {
	sc := r.scaleResults()
	if len(sc) < 2 {
		return
	}
	a, z := sc[0], sc[len(sc)-1]
	fmt.Fprintf(b, "\n## Scale: %d to %d VMs at parallelism %d, speed %g\n\n", a.N, z.N, a.P, a.Speed)
	fmt.Fprintf(b, "Growth is the %d-VM figure over the %d-VM one; the bound grows with the waves (%d to %d: %.1fx). "+
		"Requests per VM that stay flat mean no per-VM cost grows with the fleet. The time judged is the wall, for the update and the destroy "+
		"their span less terraform's own time in it (\"How to read\").\n\n", z.N, a.N, Waves(a.N, a.P), Waves(z.N, z.P),
		float64(Waves(z.N, z.P))/float64(max(Waves(a.N, a.P), 1)))
	fmt.Fprintf(b, "| op | wall s at %d | wall s at %d | wall growth | judged time growth | wall / bound at %d | wall "+
		"/ bound at %d | requests / VM at %d | requests / VM at %d | max in flight at %d | peak RSS MiB at %d |\n",
		a.N, z.N, a.N, z.N, a.N, z.N, z.N, z.N)
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, op := range Ops {
		oa, oz := a.Op(op), z.Op(op)
		if oa.Requests == nil || oz.Requests == nil {
			continue
		}
		growth, judged := "-", "-"
		if oa.Wall > 0 {
			growth = fmt.Sprintf("%.2fx", float64(oz.Wall)/float64(oa.Wall))
		}
		if providerTime(oa) > 0 {
			judged = fmt.Sprintf("%.2fx", float64(providerTime(oz))/float64(providerTime(oa)))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %d | %.1f |\n", op, num(oa.Wall), num(oz.Wall), growth, judged,
			ratioCell(oa.Ratio()), ratioCell(oz.Ratio()), float64(oa.TotalRequests())/float64(a.N), float64(oz.TotalRequests())/float64(z.N),
			oz.MaxInFlight, float64(oz.PeakRSS)/(1<<20))
	}
}

type column struct{ key, name string }

// endpointColumns are the endpoints any result counted: the known ones in their order,
// then the others by key.
func (r Report) endpointColumns() []column {
	seen := Endpoints(r.Results)
	var cols []column
	for _, e := range endpointNames {
		if slices.Contains(seen, e.key) {
			cols = append(cols, column{e.key, e.name})
		}
	}
	for _, k := range seen {
		if !slices.ContainsFunc(endpointNames, func(e struct{ key, name string }) bool { return e.key == k }) {
			cols = append(cols, column{k, "`" + k + "`"})
		}
	}
	return cols
}

func perVM(n, vms int) string {
	if n == 0 {
		return "."
	}
	return fmt.Sprintf("%.2f", float64(n)/float64(vms))
}
