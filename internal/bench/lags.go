package bench

import (
	"math"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Lags splits one terraform command's time per VM (means over the VMs it reported started
// and done), from the simulator's request log and task timeline and terraform's -json
// events: Resource = Tasks + Agent + TaskPoll + AgentPoll + Other.
type Lags struct {
	VMs      int
	Resource time.Duration
	// Tasks is the VM's own Proxmox tasks (their union in time).
	Tasks time.Duration
	// Agent is the guest's boot and DHCP after the last start that had not passed by the
	// end of the tasks (create).
	Agent time.Duration
	// TaskPoll sums, over the VM's tasks, the time from a task's end to the first status
	// request for its UPID answered after it (0 for a task never polled after its end).
	TaskPoll time.Duration
	// AgentPoll is from the address being ready to the first agent request after it.
	AgentPoll time.Duration
	// Terraform is the command's wall time outside every resource's operation:
	// terraform's start-up, plan and state writing (Wall less Span).
	Terraform time.Duration
}

// Other is Resource less the parts accounted for (never below zero).
func (l Lags) Other() time.Duration {
	return max(0, l.Resource-l.Tasks-l.Agent-l.TaskPoll-l.AgentPoll)
}

// lags computes the Lags of op o. times are terraform's per-VM start and end, vmids the
// VMs' ids by name, tasks the simulator's tasks submitted during the command, reqs its
// request log during the command, agent the wall time from the end of a start task to the
// address being ready (0: the op waits for none).
func lags(o OpResult, times map[string][2]time.Time, vmids map[string]int, tasks []pvesim.TaskState,
	reqs []pvesim.Request, agent time.Duration) Lags {
	out := Lags{Terraform: max(0, o.Wall-o.Span)}
	b := breakdown(times, vmids, tasks, agent)
	if b.VMs == 0 {
		return out
	}
	out.VMs, out.Resource, out.Tasks, out.Agent = b.VMs, b.Resource, b.Tasks, b.Agent
	polls, agentReqs := requestTimes(reqs)
	var taskPoll, agentPoll time.Duration
	for name, se := range times {
		vmid, ok := vmids[name]
		if !ok || se[0].IsZero() || se[1].IsZero() {
			continue
		}
		tp, lastStart, mine := vmTaskPolls(vmid, se, tasks, polls)
		if !mine {
			continue // breakdown left this VM out too
		}
		taskPoll += tp
		if agent > 0 && !lastStart.IsZero() {
			ready := lastStart.Add(agent)
			if d, ok := firstAfter(agentReqs[vmid], ready); ok && !ready.Add(d).After(se[1]) {
				agentPoll += d
			}
		}
	}
	n := time.Duration(b.VMs)
	out.TaskPoll, out.AgentPoll = taskPoll/n, agentPoll/n
	return out
}

// requestTimes indexes the request log: the task status polls by UPID and the agent
// requests by VMID, each in arrival order (the log is).
func requestTimes(reqs []pvesim.Request) (polls map[string][]time.Time, agentReqs map[int][]time.Time) {
	polls, agentReqs = map[string][]time.Time{}, map[int][]time.Time{}
	for _, r := range reqs {
		switch {
		case r.Method == http.MethodGet && strings.HasPrefix(r.Path, "/nodes/") && strings.Contains(r.Path,
			"/tasks/") && strings.HasSuffix(r.Path, "/status"):
			upid := r.Path[strings.Index(r.Path, "/tasks/")+len("/tasks/") : len(r.Path)-len("/status")]
			polls[upid] = append(polls[upid], r.Received)
		case r.VMID != 0 && strings.Contains(r.Path, "/agent/network-get-interfaces"):
			agentReqs[r.VMID] = append(agentReqs[r.VMID], r.Received)
		}
	}
	return polls, agentReqs
}

// vmTaskPolls sums, over VM vmid's tasks submitted and ended within se (its start and
// end), the time from each task's end to its first status poll after it; lastStart is the
// end of its last start task; mine reports whether it had any such task.
func vmTaskPolls(vmid int, se [2]time.Time, tasks []pvesim.TaskState,
	polls map[string][]time.Time) (lag time.Duration, lastStart time.Time, mine bool) {
	for _, t := range tasks {
		if t.VMID != vmid || t.Submitted.Before(se[0]) || t.Ended.IsZero() || t.Ended.After(se[1]) {
			continue
		}
		mine = true
		if d, ok := firstAfter(polls[t.UPID], t.Ended); ok && !t.Ended.Add(d).After(se[1]) {
			lag += d
		}
		if t.Type == "qmstart" && t.Ended.After(lastStart) {
			lastStart = t.Ended
		}
	}
	return lag, lastStart, mine
}

// firstAfter is how long after t the first of ts (in order) at or after t came.
func firstAfter(ts []time.Time, t time.Time) (time.Duration, bool) {
	for _, x := range ts {
		if !x.Before(t) {
			return x.Sub(t), true
		}
	}
	return 0, false
}

// childPIDs lists the live processes whose parent is pid (the providers terraform runs):
// from /proc/<pid>/task/*/children when the kernel has it (a Go program starts children
// from any of its threads), else from a scan of /proc.
func childPIDs(pid int) []int {
	p := strconv.Itoa(pid)
	if tasks, err := os.ReadDir("/proc/" + p + "/task"); err == nil {
		var out []int
		found := false
		for _, t := range tasks {
			b, err := os.ReadFile("/proc/" + p + "/task/" + t.Name() + "/children")
			if err != nil {
				continue
			}
			found = true
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
				}
			}
		}
		if found {
			return out
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if ppid, ok := statPPID(string(b)); ok && ppid == pid {
			out = append(out, c)
		}
	}
	return out
}

// statPPID reads the parent pid from a /proc/<pid>/stat line (the field after the state,
// which follows the command name in parentheses).
func statPPID(stat string) (int, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 || f[0] == "Z" {
		return 0, false
	}
	p, err := strconv.Atoi(f[1])
	return p, err == nil
}

func nan() float64 { return math.NaN() }

func numCPU() int { return runtime.NumCPU() }
