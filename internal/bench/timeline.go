package bench

import (
	"bufio"
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Breakdown splits the mean time one VM's resource operation took (terraform's apply_start
// to its apply_complete) into what the simulator made it wait for and what the provider
// added: Resource = Before + Tasks + Between + Agent + After.
type Breakdown struct {
	VMs      int
	Resource time.Duration
	// Before is the time to the first task.
	Before time.Duration
	// Tasks is the VM's own Proxmox tasks: those that carry its VMID.
	Tasks time.Duration
	// Between is the gaps between tasks (status polls, requests, and the seed upload and
	// delete, which carry no VMID).
	Between time.Duration
	// Agent is the guest agent and DHCP delay after the last start (create, update).
	Agent time.Duration
	// After is from the last task's end (or the address being ready) to terraform hearing
	// of it.
	After time.Duration
	// Handoff is the part of After from the provider's last answer for the VM to
	// terraform's apply_complete (handoffs): terraform's own time, with nothing of the
	// provider's in flight for that VM (0 when the request log was not read).
	Handoff time.Duration
}

// Overhead is what the provider added: Resource less the tasks, the agent and terraform's
// hand-off.
func (b Breakdown) Overhead() time.Duration { return b.Before + b.Between + b.After - b.Handoff }

type resourceEvent struct {
	Type      string `json:"type"`
	Timestamp string `json:"@timestamp"`
	Hook      struct {
		Resource struct {
			Addr string `json:"addr"`
		} `json:"resource"`
	} `json:"hook"`
}

// benchAddrRe matches the bench VMs' addresses, ours (proxy_vm) and the peer's
// (proxmox_virtual_environment_vm).
var benchAddrRe = regexp.MustCompile(`^(?:proxy_vm|proxmox_virtual_environment_vm)\.bench\[(\d+)\]$`)

// resourceTimes returns, per VM name, the apply_start and apply_complete times.
func resourceTimes(out string) map[string][2]time.Time {
	m := map[string][2]time.Time{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e resourceEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || (e.Type != "apply_start" && e.Type != "apply_complete") {
			continue
		}
		g := benchAddrRe.FindStringSubmatch(e.Hook.Resource.Addr)
		ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		if g == nil || err != nil {
			continue
		}
		name := benchPrefix + g[1]
		v := m[name]
		if e.Type == "apply_start" {
			v[0] = ts
		} else {
			v[1] = ts
		}
		m[name] = v
	}
	return m
}

// handoffs returns, per VM of times, its time in the provider's hands: from its
// apply_start to the last API request for it that the simulator answered before its
// apply_complete (one naming its VMID, or a status poll of a task on it; its end when
// there is none), and the mean over those VMs of what follows, from that answer to
// apply_complete: terraform's hand-off (the plugin protocol's reply, terraform's state
// update and its hooks), in which nothing of the provider's is in flight for the VM.
func handoffs(times map[string][2]time.Time, vmids map[string]int, reqs []pvesim.Request) (map[string][2]time.Time, time.Duration) {
	last := map[int]time.Time{}
	ends := map[int]time.Time{}
	for name, se := range times {
		if vmid, ok := vmids[name]; ok {
			ends[vmid] = se[1]
		}
	}
	for _, r := range reqs {
		vmid := r.VMID
		if vmid == 0 && strings.Contains(r.Path, "/tasks/") {
			if u := strings.Split(r.Path[strings.Index(r.Path, "/tasks/")+len("/tasks/"):], ":"); len(u) > 6 {
				vmid, _ = strconv.Atoi(u[6])
			}
		}
		end, ok := ends[vmid]
		if !ok || r.Answered.After(end) {
			continue
		}
		if r.Answered.After(last[vmid]) {
			last[vmid] = r.Answered
		}
	}
	out := make(map[string][2]time.Time, len(times))
	var sum time.Duration
	n := 0
	for name, se := range times {
		out[name] = se
		at, ok := last[vmids[name]]
		if se[0].IsZero() || se[1].IsZero() || !ok || at.Before(se[0]) {
			continue
		}
		out[name] = [2]time.Time{se[0], at}
		sum += se[1].Sub(at)
		n++
	}
	if n == 0 {
		return out, 0
	}
	return out, sum / time.Duration(n)
}

// spanOf is from the first start to the last end of times.
func spanOf(times map[string][2]time.Time) time.Duration {
	var first, last time.Time
	for _, se := range times {
		if se[0].IsZero() || se[1].IsZero() {
			continue
		}
		if first.IsZero() || se[0].Before(first) {
			first = se[0]
		}
		if se[1].After(last) {
			last = se[1]
		}
	}
	return last.Sub(first)
}

// idleSlots is terraform's own time inside an apply's span: the parallelism slots it left
// empty while changes were still to start (between one resource's apply_complete and the
// next one's apply_start terraform alone works: its graph walk, hooks and state), as wall
// time of the whole pool, the integral of min(p - running, not yet started) over the
// span, over p. A saturated walk's span less this is the resources' own time over p
// (N x their mean over p), what the bound's waves count.
func idleSlots(times map[string][2]time.Time, p int) time.Duration {
	if p <= 0 || len(times) == 0 {
		return 0
	}
	type edge struct {
		at    time.Time
		start bool
	}
	var edges []edge
	for _, se := range times {
		if se[0].IsZero() || se[1].IsZero() {
			continue
		}
		edges = append(edges, edge{se[0], true}, edge{se[1], false})
	}
	if len(edges) == 0 {
		return 0
	}
	n := len(edges) / 2
	slices.SortStableFunc(edges, func(a, b edge) int { return a.at.Compare(b.at) })
	var idle time.Duration
	running, started := 0, 0
	for i, e := range edges {
		if i > 0 {
			if free := min(p-running, n-started); free > 0 {
				idle += time.Duration(free) * e.at.Sub(edges[i-1].at)
			}
		}
		if e.start {
			running++
			started++
		} else {
			running--
		}
	}
	return idle / time.Duration(p)
}

// breakdown computes the mean Breakdown over the VMs whose start and end terraform
// reported. vmids maps names to VMIDs; tasks are the simulator's tasks; agent is the
// agent and DHCP delay after the last start in wall time (0: none waited for).
func breakdown(times map[string][2]time.Time, vmids map[string]int, tasks []pvesim.TaskState, agent time.Duration) Breakdown {
	byVM := map[int][]pvesim.TaskState{}
	for _, t := range tasks {
		if t.VMID != 0 {
			byVM[t.VMID] = append(byVM[t.VMID], t)
		}
	}
	var sum Breakdown
	for name, se := range times {
		vmid, ok := vmids[name]
		if !ok || se[0].IsZero() || se[1].IsZero() {
			continue
		}
		var mine []pvesim.TaskState
		for _, t := range byVM[vmid] {
			if !t.Submitted.Before(se[0]) && !t.Ended.IsZero() && !t.Ended.After(se[1]) {
				mine = append(mine, t)
			}
		}
		if len(mine) == 0 {
			continue
		}
		sort.Slice(mine, func(i, j int) bool { return mine[i].Submitted.Before(mine[j].Submitted) })
		var b Breakdown
		b.Resource = se[1].Sub(se[0])
		b.Before = mine[0].Submitted.Sub(se[0])
		cursor := mine[0].Submitted
		var lastStart time.Time
		for _, t := range mine {
			if t.Submitted.After(cursor) {
				b.Between += t.Submitted.Sub(cursor)
				cursor = t.Submitted
			}
			if t.Ended.After(cursor) {
				b.Tasks += t.Ended.Sub(cursor)
				cursor = t.Ended
			}
			if t.Type == "qmstart" {
				lastStart = t.Ended
			}
		}
		end := cursor
		if agent > 0 && !lastStart.IsZero() {
			ready := lastStart.Add(agent)
			if ready.After(end) {
				b.Agent = ready.Sub(end)
				end = ready
			}
		}
		if se[1].After(end) {
			b.After = se[1].Sub(end)
		} else {
			// terraform heard of the end before the agent delay ran out: the address came
			// sooner than modelled (never with the simulator); count it as agent time.
			b.Agent -= end.Sub(se[1])
		}
		sum.VMs++
		sum.Resource += b.Resource
		sum.Before += b.Before
		sum.Tasks += b.Tasks
		sum.Between += b.Between
		sum.Agent += b.Agent
		sum.After += b.After
	}
	if sum.VMs == 0 {
		return sum
	}
	n := time.Duration(sum.VMs)
	return Breakdown{VMs: sum.VMs, Resource: sum.Resource / n, Before: sum.Before / n, Tasks: sum.Tasks / n,
		Between: sum.Between / n, Agent: sum.Agent / n, After: sum.After / n}
}
