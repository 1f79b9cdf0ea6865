package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/e2e/tfrun"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Report renders a run.
type Report struct {
	Results []Result
	Config  Config
	// Elapsed is the whole run's wall time (build included).
	Elapsed time.Duration
	// Command is the flags the run used; Host describes the machine and tools.
	Command, Host string
	// Date is when the run ended.
	Date time.Time
}

// Write writes results.md and results.png into dir.
func (r Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
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

// listingKey is the shared listing's endpoint.
const listingKey = tfrun.StatResources

func (r Report) find(n, p int, op Op) (Result, OpResult, bool) {
	for _, res := range r.Results {
		if res.N == n && (p == 0 || res.P == p || n == 1) {
			o := res.Op(op)
			return res, o, o.Requests != nil
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

// Targets evaluates the benchmark's targets on the results.
func (r Report) Targets() []Target {
	var ts []Target
	notRun := func(name, scen, limit string) Target {
		return Target{Name: name, Scenario: scen + " (not run)", Limit: limit, Ratio: math.NaN()}
	}

	const createLimit = 1.10
	if res, o, ok := r.find(1, 0, OpCreate); ok && o.LowerBound > 0 {
		ratio := o.Ratio()
		ts = append(ts, Target{Name: "Create of one VM within 1.10x the lower bound", Scenario: scen(res),
			Measured: fmt.Sprintf("%.2fx (%s for a bound of %s)", ratio, secs(o.Wall), secs(o.LowerBound)),
			Limit:    "1.10x", Ratio: ratio / createLimit, Met: ratio <= createLimit && o.ExitCode == 0, Ran: true})
	} else {
		ts = append(ts, notRun("Create of one VM within 1.10x the lower bound", "N=1", "1.10x"))
	}

	const planName = "No-op plan of 100 VMs: at most 3 requests per VM plus a constant (one shared listing)"
	if res, o, ok := r.find(100, 10, OpPlan); ok {
		list, total := o.Requests[listingKey], o.TotalRequests()
		limit := 3*res.N + 1
		ts = append(ts, Target{Name: planName, Scenario: scen(res),
			Measured: fmt.Sprintf("%d requests: %.2f per VM + %d listing(s)", total, float64(total-list)/float64(res.N), list),
			Limit:    fmt.Sprintf("3 x %d + 1 = %d", res.N, limit), Ratio: float64(total) / float64(limit),
			Met: total <= limit && o.ExitCode == 0, Ran: true})
	} else {
		ts = append(ts, notRun(planName, "N=100 P=10", "3 x 100 + 1 = 301"))
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

	const waveLimit = 1.25
	for _, n := range []int{50, 100} {
		name := fmt.Sprintf("Create of %d VMs at parallelism 10 within 1.25x the ideal wave time, no duplicate VMID, no retry", n)
		res, o, ok := r.find(n, 10, OpCreate)
		if !ok || o.LowerBound <= 0 {
			ts = append(ts, notRun(name, fmt.Sprintf("N=%d P=10", n), "1.25x"))
			continue
		}
		ratio := o.Ratio()
		dup := res.N - res.DistinctVMIDs
		ts = append(ts, Target{Name: name, Scenario: scen(res),
			Measured: fmt.Sprintf("%.2fx (%s for a bound of %s); %d duplicate VMIDs; %d clone collisions solved inside; terraform exit %d",
				ratio, secs(o.Wall), secs(o.LowerBound), dup, max(res.CloneCollisions, 0), o.ExitCode),
			Limit: "1.25x, 0, exit 0", Ratio: ratio / waveLimit, Met: ratio <= waveLimit && dup == 0 && o.ExitCode == 0 && res.VMs == res.N, Ran: true})
	}

	const rssLimit = 150 << 20
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
	if len(peakScen) > 0 {
		ts = append(ts, Target{Name: "Provider peak RSS under 150 MB at 100 VMs", Scenario: strings.Join(peakScen, "; "),
			Measured: fmt.Sprintf("%.1f MiB", float64(peak)/(1<<20)), Limit: "150 MiB", Ratio: float64(peak) / rssLimit, Met: peak > 0 && peak < rssLimit, Ran: true})
	} else {
		ts = append(ts, notRun("Provider peak RSS under 150 MB at 100 VMs", "N=100", "150 MiB"))
	}

	limit := r.maxInFlightLimit()
	most := 0
	for _, res := range r.Results {
		for _, o := range res.Ops {
			most = max(most, o.MaxInFlight)
		}
	}
	ts = append(ts, Target{Name: "Requests in flight per provider instance bounded (max_requests_in_flight)", Scenario: "every command",
		Measured: fmt.Sprintf("at most %d at once", most), Limit: fmt.Sprintf("%d", limit), Ratio: float64(most) / float64(limit), Met: most <= limit, Ran: true})
	return ts
}

func scen(r Result) string {
	return fmt.Sprintf("N=%d P=%d speed %g", r.N, r.P, r.Speed)
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
	if !r.Date.IsZero() {
		fmt.Fprintf(&b, "Run %s", r.Date.UTC().Format("2006-01-02 15:04 MST"))
	} else {
		b.WriteString("Run")
	}
	if r.Host != "" {
		fmt.Fprintf(&b, " on %s", r.Host)
	}
	fmt.Fprintf(&b, "; took %s. Flags: `%s`.\n\n", r.Elapsed.Round(time.Second), r.Command)

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
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", t.Name, t.Scenario, t.Measured, t.Limit, ratio, verdict)
	}

	b.WriteString("\n## Wall time against the lower bound\n\n")
	b.WriteString("Times are wall seconds at the run's speed (the simulator runs `speed` times faster than a real host). " +
		"Wall is the terraform command, start to exit; span is from the first resource change starting to the last one ending " +
		"(for the plan: the refreshes), without terraform's start-up, plan and state writes. " +
		"The bound is ceil(N/P) waves of one VM's critical path: create = clone + seed upload + resize + start + agent install + DHCP, " +
		"update = stop + start + agent boot + DHCP, destroy = stop + seed delete + destroy.\n\n")
	b.WriteString("| N | P | speed | op | wall s | span s | bound s | wall / bound | span / bound | requests / VM | listings | max in flight | peak RSS MiB | provider CPU s | terraform CPU s | exit |\n")
	b.WriteString("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, res := range r.Results {
		for _, o := range res.Ops {
			fmt.Fprintf(&b, "| %d | %d | %g | %s | %s | %s | %s | %s | %s | %.2f | %d | %d | %.1f | %s | %s | %d |\n",
				res.N, res.P, res.Speed, o.Op, num(o.Wall), num(o.Span), num(o.LowerBound), ratioCell(o.Ratio()), ratioCell(o.SpanRatio()),
				float64(o.TotalRequests())/float64(res.N), o.Requests[listingKey], o.MaxInFlight, float64(o.PeakRSS)/(1<<20),
				num(o.ProviderCPU), num(o.TerraformCPU), o.ExitCode)
		}
	}

	b.WriteString("\n## Where one VM's time goes\n\n")
	b.WriteString("Mean per VM, wall seconds, from terraform's apply_start to apply_complete of each resource, split with the simulator's task records: " +
		"tasks are the VM's own Proxmox tasks, agent the guest agent and DHCP delay after the start; before, between and after are what the provider and " +
		"terraform add (requests, task status polls landing after the task ended, the seed upload and delete, which carry no VMID, and the final reads).\n\n")
	b.WriteString("| N | P | speed | op | resource | tasks | agent | before | between | after | overhead | overhead / (tasks + agent) |\n")
	b.WriteString("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
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
			fmt.Fprintf(&b, "| %d | %d | %g | %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s |\n",
				res.N, res.P, res.Speed, o.Op, bd.Resource.Seconds(), bd.Tasks.Seconds(), bd.Agent.Seconds(), bd.Before.Seconds(),
				bd.Between.Seconds(), bd.After.Seconds(), bd.Overhead().Seconds(), rel)
		}
	}

	b.WriteString("\n## API requests per VM by endpoint\n\n")
	cols := r.endpointColumns()
	b.WriteString("| N | P | op |")
	for _, c := range cols {
		fmt.Fprintf(&b, " %s |", c.name)
	}
	b.WriteString(" total |\n|---:|---:|---|")
	b.WriteString(strings.Repeat("---:|", len(cols)+1) + "\n")
	for _, res := range r.Results {
		for _, o := range res.Ops {
			fmt.Fprintf(&b, "| %d | %d | %s |", res.N, res.P, o.Op)
			for _, c := range cols {
				fmt.Fprintf(&b, " %s |", perVM(o.Requests[c.key], res.N))
			}
			fmt.Fprintf(&b, " %s |\n", perVM(o.TotalRequests(), res.N))
		}
	}

	b.WriteString("\n## Checks\n\n| N | P | VMs after create | distinct VMIDs | clone collisions | leftovers after destroy | problems |\n|---:|---:|---:|---:|---:|---:|---|\n")
	for _, res := range r.Results {
		probs := "none"
		if len(res.Problems) > 0 {
			probs = strings.ReplaceAll(strings.Join(res.Problems, "; "), "|", "\\|")
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d | %d | %s |\n", res.N, res.P, res.VMs, res.DistinctVMIDs, max(res.CloneCollisions, 0), len(res.Leftovers), probs)
	}
	b.WriteString("\n![time, ratio and requests against N](results.png)\n")
	b.WriteString(readingNotes)
	return b.String()
}

// readingNotes says what the speed factor does to the figures.
const readingNotes = `
## How to read these figures

- The simulator runs every task, agent delay and request service time ` + "`speed`" + ` times faster than a
  real host; the provider's task and agent poll schedule (from 50 ms, growing 1.5 times per poll up to 1 s), terraform's
  own work and the client side of each request run in real time. At speed S those real-time
  parts weigh S times more against the bound than on a real host, so wall / bound at speed > 1
  is an upper estimate; the one-VM scenario runs at speed 1 (a real host's pace) by default.
- For the same reason, requests per VM for the long waits (the guest agent, about 45 s at a
  real host's pace) shrink with the speed: a 1 s poll cap over a 45 s wait makes about 45
  polls at speed 1 and about 9 at speed 5. The speed-1 rows give a real host's counts.
- Max in flight is the most requests the simulator served at once; only one provider process
  talks to it at a time, so it is the per-instance figure.
- Peak RSS is the largest VmHWM of the provider processes terraform started for the command
  (sampled every 20 ms); CPU times are user + system of the provider processes and of
  terraform itself.
`

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
