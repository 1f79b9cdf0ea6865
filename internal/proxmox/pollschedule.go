package proxmox

import (
	"strconv"
	"sync"
	"time"
)

// The guest agent answers a while after the start: about 45 s on a first boot whose seed
// installs qemu-guest-agent (cloud-init fetches and starts it, then DHCP), about 11 s on a
// boot of a guest that has it. Polling it once a second through that wait costs some 45
// requests per create for nothing; polling rarely adds the time between the address
// appearing and the next poll to every create. The address wait therefore follows the
// delay it expects: polls grow from a short first wait (a fast guest, or a simulator, is
// seen soon), never overshoot the expected time by much, are close together around it,
// and back off once it has passed.

const (
	// firstBootAgentDelay is the expected delay from the start to the agent's address on
	// a first boot that installs the agent (AgentInstall + DHCP on the simulator, close to
	// what a real host shows).
	firstBootAgentDelay = 45 * time.Second
	// bootAgentDelay is the same for a guest whose agent is already installed.
	bootAgentDelay = 11 * time.Second
	// minAgentPoll is the shortest wait between two agent polls.
	minAgentPoll = 10 * time.Millisecond
)

// agentPollDelay is how long an address wait that began elapsed ago waits before its next
// agent poll, expecting the address after about expected (decision: poll-schedule): before
// expected, polls grow 1.5x from expected/90, never beyond half the time left nor below
// expected/60 near it; after, they back off 2x within expected/30 to expected/4. A 45 s
// first boot costs about 17 polls and is seen within half a second of its address.
func agentPollDelay(elapsed, expected time.Duration) time.Duration {
	if expected <= 0 {
		expected = firstBootAgentDelay
	}
	elapsed = max(elapsed, 0)
	first := max(expected/90, minAgentPoll)
	near := max(expected/60, minAgentPoll)
	if elapsed < expected {
		return min(max(elapsed/2, first), max((expected-elapsed)/2, near))
	}
	return min(max(elapsed-expected, 2*near), max(expected/4, near))
}

// agentDelays remembers, per kind of boot, the agent delay this backend has seen, so that
// a fleet's later VMs (the next waves of a terraform apply) poll around the delay their
// host really shows instead of the default. The key is the boot kind and the template
// (agentDelayKey): one template boots alike on one cluster.
type agentDelays struct {
	mu   sync.Mutex
	seen map[string]time.Duration
}

// agentDelayKey keys the first boot of a template's clones (firstBoot) or a later boot.
func agentDelayKey(firstBoot bool, templateVMID int) string {
	if firstBoot {
		return "first-boot/" + strconv.Itoa(templateVMID)
	}
	return "boot"
}

// expected is the delay to expect for key: the least seen so far, else def.
func (a *agentDelays) expected(key string, def time.Duration) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if d, ok := a.seen[key]; ok {
		return d
	}
	return def
}

// observe records an address that appeared between notBefore (the last poll without it)
// and found (the poll that saw it), both measured from the wait's start: the middle of
// the two is the estimate, and the least estimate is kept (every estimate carries poll
// lag, none comes early).
func (a *agentDelays) observe(key string, notBefore, found time.Duration) {
	if found <= 0 || notBefore < 0 || notBefore > found {
		return
	}
	est := notBefore + (found-notBefore)/2
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen == nil {
		a.seen = map[string]time.Duration{}
	}
	if d, ok := a.seen[key]; !ok || est < d {
		a.seen[key] = est
	}
}

// taskExpected is about how long a task of each type takes at a real host's pace, from
// the moment its POST is answered, until this backend has seen its own (taskDurations): a full clone of the template about 2 s (fact:
// task-durations), a stop about 1 s (qemu-server QemuServer.pm _do_vm_stop sends QMP quit,
// then checks check_running once a second), a seed upload's import, a start, a resize and
// a destroy about 1 s, a volume delete half a second (reconstruction: the recon timed the
// clone and the whole create only; the simulator's DefaultDurations use the same figures).
// A type not listed gets pollUntil's plain schedule.
var taskExpected = map[string]time.Duration{
	"qmclone": 2 * time.Second, "imgcopy": time.Second, "qmstart": time.Second, "qmstop": time.Second,
	"qmresize": time.Second, "qmdestroy": time.Second, "imgdel": 500 * time.Millisecond,
}

const (
	// minTaskPoll is the shortest wait between two task status polls.
	minTaskPoll = 5 * time.Millisecond
	// minTaskMargin is the least a task's expected end is polled after (taskSchedule).
	minTaskMargin = 5 * time.Millisecond
	// minTaskNear is the least interval between the polls after a task's expected end.
	minTaskNear = 10 * time.Millisecond
)

// taskSchedule is the poll schedule of a task expected to end after about expected
// (decision: poll-schedule): pollUntil's usual one, except that a poll lands just after the
// expected end (expected/100 later, at least minTaskMargin), then every expected/10 (at least
// minTaskNear) until twice the expected time, then growing 1.5x up to PollMax. A task a
// little late costs a tenth of its time, not a doubling. expected 0: the usual schedule.
type taskSchedule struct {
	expected, pollMin, pollMax, next time.Duration
}

func newTaskSchedule(expected, pollMin, pollMax time.Duration) *taskSchedule {
	return &taskSchedule{expected: expected, pollMin: pollMin, pollMax: pollMax, next: pollMin}
}

// delay is the wait before the next poll, elapsed after the first.
func (s *taskSchedule) delay(elapsed time.Duration) time.Duration {
	if s.expected > 0 {
		target := s.expected + max(s.expected/100, minTaskMargin)
		near := max(s.expected/10, minTaskNear)
		switch {
		case elapsed < target:
			d := min(s.next, target-elapsed)
			s.next = min(s.next*3/2, s.pollMax)
			return max(d, minTaskPoll)
		case elapsed < 2*s.expected:
			s.next = min(near, s.pollMax)
			return s.next
		}
	}
	d := s.next
	s.next = min(s.next*3/2, s.pollMax)
	return d
}

// taskDurations narrows, per task type, how long this backend's tasks take from the POST's
// answer to their end: each task that needed more than one poll ended after the last poll
// that saw it running (lo) and by the poll that saw it stopped (hi). The intervals of tasks
// of one type are intersected, and the next task's schedule expects the middle: a poll
// there either misses (lo rises) or finds it ended (hi falls), so a fleet's later tasks
// are polled just after the end its host shows (at a simulator's speed too). Intervals
// that do not meet (the host's tasks vary more than the polls) restart from the latest.
type taskDurations struct {
	mu   sync.Mutex
	seen map[string][2]time.Duration
}

// expected is the duration to expect for a task of type typ: the middle of what was seen,
// else def.
func (t *taskDurations) expected(typ string, def time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if iv, ok := t.seen[typ]; ok {
		return iv[0] + (iv[1]-iv[0])/2
	}
	return def
}

// observe records a task of type typ that was running at elapsed lo and had ended at hi.
func (t *taskDurations) observe(typ string, lo, hi time.Duration) {
	if lo < 0 || hi <= lo {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string][2]time.Duration{}
	}
	if iv, ok := t.seen[typ]; ok {
		if nlo, nhi := max(iv[0], lo), min(iv[1], hi); nlo < nhi {
			t.seen[typ] = [2]time.Duration{nlo, nhi}
			return
		}
	}
	t.seen[typ] = [2]time.Duration{lo, hi}
}
