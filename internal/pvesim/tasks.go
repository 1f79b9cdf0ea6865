package pvesim

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Tasks run in simulated time, evaluated lazily: every request (and every Go inspection
// call) first calls advance(now), which applies, in time order, every task start and end
// that is due. No goroutine or timer per task, so the state is always consistent under mu.

type taskState int

const (
	taskWaiting taskState = iota // queued behind a VM's config lock (fact: start-queues-behind-lock)
	taskRunning
	taskDone
)

type task struct {
	upid, node, typ, id string
	user, tokenid       string
	authid              string // the token that started it
	pid, pstart         uint32
	submitted           time.Time
	// vmid is the VM whose config lock the task takes (0: none).
	vmid  int
	flock bool
	vmRef *vm           // the VM whose config lock it takes or waits for
	dur   time.Duration // wall time (already divided by the speed)

	state        taskState
	beganAt      time.Time
	endAt        time.Time
	waitDeadline time.Time

	// Fault effects.
	hang     bool
	failWith string
	warnings int

	// begin runs when the task gets its lock; an error text ends the task at once.
	begin func(at time.Time) string
	// finish applies the effect at the end; an error text is the exitstatus.
	finish func(at time.Time) string
	// onFail undoes what submitting did when a fault fails the task (a failed clone
	// removes its half-made VM, as PVE does).
	onFail func(at time.Time)

	done bool
	exit string
	log  []string
}

const maxTasks = 50000

var upidRe = regexp.MustCompile(`^UPID:([a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):` +
	`([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$`)

// newTask builds a task owned by the token user; submitTask registers and schedules it.
func (s *Sim) newTask(c *call, nodeName, typ, id string, vmid int, flock bool, d time.Duration) *task {
	s.pid += 1 + uint32(s.rng.IntN(40))
	n := s.nodes[nodeName]
	pstart := uint32(c.now.Sub(n.bootTime).Seconds() * 100)
	authid := c.authid
	if authid == "" {
		authid = s.TokenID()
	}
	user, tokenid, _ := splitTokenID(authid)
	t := &task{
		node: nodeName, typ: typ, id: id, vmid: vmid, flock: flock, dur: s.real(d),
		user: user, tokenid: tokenid, authid: authid, pid: s.pid, pstart: pstart, submitted: c.now,
	}
	t.upid = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", nodeName, t.pid, t.pstart, uint32(c.now.Unix()), typ, id, authid)
	if f := c.taskFault; f != nil {
		t.hang = f.TaskHang
		t.failWith = f.TaskExit
		t.warnings = f.TaskWarnings
	}
	return t
}

func (s *Sim) submitTask(t *task, now time.Time) {
	s.tasks[t.upid] = t
	s.taskList = append(s.taskList, t)
	s.active = append(s.active, t)
	if len(s.taskList) > maxTasks {
		old := s.taskList[0]
		if old.done {
			delete(s.tasks, old.upid)
			s.taskList = s.taskList[1:]
		}
	}
	if t.flock {
		v := s.vms[t.vmid]
		t.vmRef = v
		if v != nil && v.flock != nil && v.flock != t {
			t.state = taskWaiting
			t.waitDeadline = now.Add(s.real(s.dur.LockWait))
			t.log = append(t.log, "trying to acquire lock...")
			v.waiters = append(v.waiters, t)
			return
		}
		if v != nil {
			v.flock = t
		}
	}
	s.beginTask(t, now)
}

func (s *Sim) beginTask(t *task, at time.Time) {
	t.state = taskRunning
	t.beganAt = at
	if t.begin != nil {
		if e := t.begin(at); e != "" {
			s.endTask(t, at, e)
			return
		}
	}
	if !t.hang {
		t.endAt = at.Add(t.dur)
	}
}

func (s *Sim) finishTask(t *task, at time.Time) {
	exit := "OK"
	switch {
	case t.failWith != "":
		if t.onFail != nil {
			t.onFail(at)
		}
		exit = t.failWith
	case t.finish != nil:
		if e := t.finish(at); e != "" {
			exit = e
		}
	}
	if exit == "OK" && t.warnings > 0 {
		exit = "WARNINGS: " + strconv.Itoa(t.warnings)
	}
	s.endTask(t, at, exit)
}

// endTask marks the task done and hands the VM's config lock to the next waiter.
func (s *Sim) endTask(t *task, at time.Time, exit string) {
	t.state = taskDone
	t.done = true
	t.endAt = at
	t.exit = exit
	if exit != "OK" {
		t.log = append(t.log, "TASK ERROR: "+exit)
	} else {
		t.log = append(t.log, "TASK OK")
	}
	s.archiveTask(t)
	if !t.flock {
		return
	}
	v := t.vmRef
	if v == nil || v.flock != t {
		return
	}
	v.flock = nil
	for len(v.waiters) > 0 {
		w := v.waiters[0]
		v.waiters = v.waiters[1:]
		if w.done {
			continue
		}
		w.log = append(w.log, "trying to acquire lock... OK")
		v.flock = w
		s.beginTask(w, at)
		break
	}
}

// advance applies every due event up to now, in time order: task ends and lock-wait
// timeouts, lock expiries, and the status snapshots due before them.
func (s *Sim) advance(now time.Time) {
	s.haAdvance(now)
	for {
		next, at, timeout := s.nextTaskEvent(now)
		if lockVM := s.nextLockExpiry(now, next, at); lockVM != nil {
			if snap, ok := s.statusDue(lockVM.lockUntil); ok {
				s.runStatus(snap)
				continue
			}
			lockVM.lock = ""
			lockVM.lockUntil = time.Time{}
			continue
		}
		// A status snapshot due before the next event samples the state as it is then.
		limit := now
		if next != nil {
			limit = at
		}
		if snap, ok := s.statusDue(limit); ok {
			s.runStatus(snap)
			continue
		}
		if next == nil {
			break
		}
		if timeout {
			s.lockWaitTimedOut(next, at)
		} else {
			s.finishTask(next, at)
		}
	}
	s.dropFinishedTasks()
}

// nextTaskEvent is the earliest task event due by now: a running task's end (timeout
// false) or a waiting task's lock-wait deadline (timeout true); nil when none is due.
func (s *Sim) nextTaskEvent(now time.Time) (next *task, at time.Time, timeout bool) {
	for _, t := range s.active {
		switch t.state {
		case taskRunning:
			if !t.hang && !t.endAt.IsZero() && !t.endAt.After(now) && (next == nil || t.endAt.Before(at)) {
				next, at, timeout = t, t.endAt, false
			}
		case taskWaiting:
			if !t.waitDeadline.After(now) && (next == nil || t.waitDeadline.Before(at)) {
				next, at, timeout = t, t.waitDeadline, true
			}
		}
	}
	return next, at, timeout
}

// nextLockExpiry is the VM whose timed lock expires first by now, when that is no later
// than the next task event (next at at); nil otherwise.
func (s *Sim) nextLockExpiry(now time.Time, next *task, at time.Time) *vm {
	var lockVM *vm
	for _, v := range s.vms {
		if !v.lockUntil.IsZero() && !v.lockUntil.After(now) && (next == nil || v.lockUntil.Before(at)) &&
			(lockVM == nil || v.lockUntil.Before(lockVM.lockUntil)) {
			lockVM = v
		}
	}
	if lockVM != nil && (next == nil || !lockVM.lockUntil.After(at)) {
		return lockVM
	}
	return nil
}

// lockWaitTimedOut ends task t, which waited for its VM's config lock until at.
func (s *Sim) lockWaitTimedOut(t *task, at time.Time) {
	if v := t.vmRef; v != nil {
		for i, w := range v.waiters {
			if w == t {
				v.waiters = append(v.waiters[:i:i], v.waiters[i+1:]...)
				break
			}
		}
	}
	s.endTask(t, at, flockTimeoutMsg(t.vmid))
}

// dropFinishedTasks drops finished tasks from the active list.
func (s *Sim) dropFinishedTasks() {
	kept := s.active[:0]
	for _, t := range s.active {
		if !t.done {
			kept = append(kept, t)
		}
	}
	clear(s.active[len(kept):])
	s.active = kept
}

// real converts a simulated duration to wall time.
func (s *Sim) real(d time.Duration) time.Duration {
	return time.Duration(float64(d) / s.speed)
}

// simSince is the simulated time elapsed since t.
func (s *Sim) simSince(t, now time.Time) time.Duration {
	return time.Duration(float64(now.Sub(t)) * s.speed)
}

func (s *Sim) taskStatus(t *task) map[string]any {
	out := map[string]any{
		"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart,
		"starttime": t.submitted.Unix(), "type": t.typ, "id": t.id,
		"user": t.user, "tokenid": t.tokenid, "status": "running",
	}
	if t.done {
		out["status"] = "stopped"
		out["exitstatus"] = t.exit
	}
	return out
}
