package bench

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of the CPU times in /proc/<pid>/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// parseVmHWM returns the VmHWM line of a /proc/<pid>/status text, in bytes.
func parseVmHWM(status []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		return kb * 1024, true
	}
	return 0, false
}

// parseCPU returns utime + stime of a /proc/<pid>/stat text (the process's own CPU time,
// not its children's).
func parseCPU(stat []byte) (time.Duration, bool) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// After the command: state(3) ppid(4) ... utime(14) stime(15), so f[11] and f[12].
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+st) * time.Second / clockTicks, true
}

// procWatch samples, every interval until ctx ends, the peak resident set size (VmHWM)
// and the CPU time of the processes pids returns.
type procWatch struct {
	mu    sync.Mutex
	peak  int64
	cpu   map[int]time.Duration // last CPU time seen per process
	procs map[int]bool
	done  chan struct{}
}

func watchProcs(ctx context.Context, interval time.Duration, pids func() []int) *procWatch {
	r := &procWatch{cpu: map[int]time.Duration{}, procs: map[int]bool{}, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			r.sample(pids())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return r
}

func (r *procWatch) sample(pids []int) {
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid)
		status, err := os.ReadFile(dir + "/status")
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(dir + "/stat")
		if err != nil {
			continue
		}
		hwm, ok := parseVmHWM(status)
		cpu, ok2 := parseCPU(stat)
		r.mu.Lock()
		if ok {
			r.procs[pid] = true
			r.peak = max(r.peak, hwm)
		}
		if ok2 {
			r.cpu[pid] = max(r.cpu[pid], cpu)
		}
		r.mu.Unlock()
	}
}

// result waits for the sampler to stop (after ctx ended) and returns the peak RSS in
// bytes, the CPU time summed over the processes (as last sampled) and how many processes
// were sampled.
func (r *procWatch) result() (int64, time.Duration, int) {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	var cpu time.Duration
	for _, c := range r.cpu {
		cpu += c
	}
	return r.peak, cpu, len(r.procs)
}
