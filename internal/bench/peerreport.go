package bench

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The peer comparison is its own section of results.md, between these markers: a peer
// run replaces only it, and a full run without a peer keeps the one already there.
const (
	peerBegin = "<!-- peer-comparison:begin (written by the bench command's -peer mode; a peer run replaces only this section) -->"
	peerEnd   = "<!-- peer-comparison:end -->"
)

// PeerReport renders a peer comparison.
type PeerReport struct {
	PeerResult
	// Command is how the run was asked for; Host describes the machine and tools.
	Command, Host string
	Date          time.Time
}

// Markdown is the section, markers included.
func (r PeerReport) Markdown() string {
	var b strings.Builder
	b.WriteString(peerBegin + "\n")
	b.WriteString("## Side by side: bpg/terraform-provider-proxmox\n\n")
	c := r.Config
	fmt.Fprintf(&b, "Measured %s on %s, **load average %.2f before and %.2f after the run on %d CPUs** "+
		"(a shared machine: read the ratios, both providers ran in the same run under the same load, not the absolute times). "+
		"`go run ./internal/bench/cmd/bench %s` in %s.\n\n",
		r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Host, r.LoadBefore, r.LoadAfter, r.CPUs, r.Command, r.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "The same scenario with each provider, each against a fresh simulator with the same options: %d VMs at "+
		"parallelism %d, speed %g (1: a real host's pace), %s per request; full clones of template %d, which ships the "+
		"guest agent; 1 core, the memory and disk of the bench's machine type (the disk grown from the template's); both wait "+
		"for the agent's address. Ours also builds and uploads a seed ISO per VM, with install_guest_agent = false "+
		"(the template ships the agent, so the seed installs nothing and our address wait expects a boot that has "+
		"it). Apply, a no-op plan, then destroy; %d round(s), "+
		"alternating which provider goes first, means shown. Peer: `%s` (%s), run through dev_overrides.\n\n",
		c.N, c.P, c.Speed, r.Latency, peerTemplate, c.Rounds, PeerSource, filepath.Base(r.Peer.Binary))

	ra := r.Ratios()
	o, p := r.Ours, r.Peer
	n := float64(max(c.N, 1))
	b.WriteString("| | ours | peer | ours/peer |\n|---|---:|---:|---:|\n")
	wall := func(name string, op Op, ratio float64) {
		fmt.Fprintf(&b, "| %s | %s | %s | **%s** |\n", name, psecs(o.Op(op).Wall), psecs(p.Op(op).Wall), fmtRatio(ratio))
	}
	wall("apply wall", OpCreate, ra.ApplyWall)
	wall("destroy wall", OpDestroy, ra.DestroyWall)
	wall("no-op plan wall", OpPlan, ra.PlanWall)
	fmt.Fprintf(&b, "| no-op plan requests | %d | %d | **%s** |\n", o.Op(OpPlan).TotalRequests(),
		p.Op(OpPlan).TotalRequests(), fmtRatio(ra.PlanRequests))
	perVM := func(name string, op Op, ratio float64) {
		fmt.Fprintf(&b, "| %s | %.1f | %.1f | %s |\n", name, float64(o.Op(op).TotalRequests())/n,
			float64(p.Op(op).TotalRequests())/n, fmtRatio(ratio))
	}
	perVM("apply requests per VM", OpCreate, ra.CreateRequestsPerVM)
	perVM("destroy requests per VM", OpDestroy, ra.DestroyRequestsPerVM)
	perVM("plan requests per VM", OpPlan, ra.PlanReqsPerVM)
	for _, op := range []Op{OpCreate, OpPlan, OpDestroy} {
		oc, pc := o.Op(op).ProviderCPU, p.Op(op).ProviderCPU
		fmt.Fprintf(&b, "| provider CPU, %s | %s | %s | %s |\n", op, psecs(oc), psecs(pc), fmtRatio(safeDiv(float64(oc), float64(pc))))
	}
	orss, prss := peakRSS(o), peakRSS(p)
	fmt.Fprintf(&b, "| provider peak RSS | %.1f MiB | %.1f MiB | %s |\n\n", float64(orss)/(1<<20),
		float64(prss)/(1<<20), fmtRatio(safeDiv(float64(orss), float64(prss))))

	b.WriteString("Where the time goes, per VM (means; see Lags in internal/bench/lags.go): the VM's own Proxmox tasks, the guest's " +
		"boot and DHCP after its start (the template's agent: modelled by the simulator), task poll lag (a task's end to the " +
		"first status poll that saw it), agent poll lag (the address ready to the first agent request after it), the " +
		"provider's other time; and, per command, terraform's own time outside every resource's operation (wall less span).\n\n")
	b.WriteString("Reading the poll lags: the peer polls a task's status and the agent on a fixed 1 s period from the submission " +
		"(its proxmox/nodes/tasks WaitForTask, proxmox/retry NewPollOperation), and the simulator's durations at speed 1 are " +
		"whole seconds (clone 2 s; resize, start, stop, destroy 1 s; the agent 8 s and DHCP 3 s after the start), so its polls " +
		"land just after each end; on a host whose tasks end anywhere in a second, a fixed 1 s period waits 0.5 s per task on " +
		"average.\n\n")
	b.WriteString("| op | provider | resource | tasks | agent | task poll lag | agent poll lag | other | terraform's own |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, op := range []Op{OpCreate, OpDestroy} {
		for _, s := range []Side{o, p} {
			l := s.Lags[op]
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, s.Name, psecs(l.Resource), psecs(l.Tasks), psecs(l.Agent),
				psecs(l.TaskPoll), psecs(l.AgentPoll), psecs(l.Other()), psecs(l.Terraform))
		}
	}
	for _, s := range []Side{o, p} {
		pl := s.Op(OpPlan)
		fmt.Fprintf(&b, "\nNo-op plan, %s: wall %s, of which the refreshes' span %s and terraform's own %s.", s.Name,
			psecs(pl.Wall), psecs(pl.Span), psecs(max(0, pl.Wall-pl.Span)))
	}
	writePeerRequests(&b, o, p)
	b.WriteString("\n" + peerEnd + "\n")
	return b.String()
}

// writePeerRequests writes the requests of both sides by endpoint, those the simulator
// answered with an error, and the problems of each run.
func writePeerRequests(b *strings.Builder, o, p Side) {
	b.WriteString("\n\nRequests by endpoint (create / plan / destroy):\n\n| endpoint | ours | peer |\n|---|---:|---:|\n")
	for _, ep := range peerEndpoints(o, p) {
		cell := func(s Side) string {
			return fmt.Sprintf("%d / %d / %d", s.Op(OpCreate).Requests[ep], s.Op(OpPlan).Requests[ep], s.Op(OpDestroy).Requests[ep])
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", ep, cell(o), cell(p))
	}
	b.WriteString("\n")
	for _, s := range []Side{o, p} {
		if len(s.Unserved) == 0 {
			fmt.Fprintf(b, "Requests of %s the simulator answered with an error: none.\n", s.Name)
			continue
		}
		fmt.Fprintf(b, "Requests of %s the simulator answered with an error:", s.Name)
		for _, k := range slices.Sorted(maps.Keys(s.Unserved)) {
			fmt.Fprintf(b, " `%s` x%d;", k, s.Unserved[k])
		}
		b.WriteString("\n")
	}
	for _, s := range []Side{o, p} {
		for _, pr := range s.Problems {
			fmt.Fprintf(b, "\n**Problem (%s):** %s\n", s.Name, pr)
		}
	}
}

// SpliceSection returns doc with its peer section replaced by section, or with section
// appended when doc has none (section "" removes it).
func SpliceSection(doc, section string) string {
	i := strings.Index(doc, peerBegin)
	j := strings.Index(doc, peerEnd)
	if i >= 0 && j > i {
		rest := strings.TrimLeft(doc[j+len(peerEnd):], "\n")
		head := doc[:i]
		if section == "" {
			return strings.TrimRight(head, "\n") + "\n" + prefixNL(rest)
		}
		return head + section + prefixNL(rest)
	}
	if section == "" {
		return doc
	}
	if doc != "" && !strings.HasSuffix(doc, "\n") {
		doc += "\n"
	}
	if doc != "" {
		doc += "\n"
	}
	return doc + section
}

func prefixNL(s string) string {
	if s == "" {
		return ""
	}
	return "\n" + s
}

// PeerSection extracts doc's peer section, markers included ("" when it has none).
func PeerSection(doc string) string {
	i := strings.Index(doc, peerBegin)
	j := strings.Index(doc, peerEnd)
	if i < 0 || j < i {
		return ""
	}
	return doc[i:j+len(peerEnd)] + "\n"
}

// WritePeerSection splices section into dir/results.md (created when missing).
func WritePeerSection(dir, section string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f := filepath.Join(dir, "results.md")
	old, err := os.ReadFile(f)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(f, []byte(SpliceSection(string(old), section)), 0o644)
}

func peerEndpoints(sides ...Side) []string {
	set := map[string]bool{}
	for _, s := range sides {
		for _, o := range s.Ops {
			for k := range o.Requests {
				set[k] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func peakRSS(s Side) int64 {
	var m int64
	for _, o := range s.Ops {
		m = max(m, o.PeakRSS)
	}
	return m
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

func psecs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func fmtRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", r)
}

// BaselineTable is the comparison with an earlier build of ours (PeerConfig.BaselineDir):
// each command's wall, span, terraform's own time, requests and provider CPU, ours over
// the baseline's.
func BaselineTable(r PeerResult) string {
	var b strings.Builder
	b.WriteString("\n| op | figure | ours | baseline | ours/baseline |\n|---|---|---:|---:|---:|\n")
	ratio := func(a, z float64) string {
		if z == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", a/z)
	}
	for _, op := range []Op{OpCreate, OpPlan, OpDestroy} {
		o, p := r.Ours.Op(op), r.Peer.Op(op)
		for _, row := range []struct {
			name string
			a, z float64
			unit string
		}{
			{"wall", o.Wall.Seconds(), p.Wall.Seconds(), "s"},
			{"span", o.Span.Seconds(), p.Span.Seconds(), "s"},
			{"terraform's own", (o.Wall - o.Span).Seconds(), (p.Wall - p.Span).Seconds(), "s"},
			{"requests", float64(o.TotalRequests()), float64(p.TotalRequests()), ""},
			{"listings", float64(o.Requests[listingKey]), float64(p.Requests[listingKey]), ""},
			{"provider CPU", o.ProviderCPU.Seconds(), p.ProviderCPU.Seconds(), "s"},
		} {
			fmt.Fprintf(&b, "| %s | %s | %.2f%s | %.2f%s | %s |\n", op, row.name, row.a, row.unit, row.z, row.unit, ratio(row.a, row.z))
		}
	}
	return b.String()
}
