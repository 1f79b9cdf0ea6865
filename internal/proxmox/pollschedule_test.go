package proxmox

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestAgentPollDelay_table(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	for _, c := range []struct {
		elapsed, expected, want time.Duration
	}{
		{0, 45 * s, 500 * ms},                 // the first wait: expected/90
		{500 * ms, 45 * s, 500 * ms},          // still the first wait
		{4 * s, 45 * s, 2 * s},                // half the time elapsed: 1.5x growth
		{28 * s, 45 * s, 8500 * ms},           // capped at half the time left
		{44 * s, 45 * s, 750 * ms},            // near the expected time: expected/60
		{45 * s, 45 * s, 1500 * ms},           // at it: backing off from expected/30
		{49 * s, 45 * s, 4 * s},               // past it: the time past it
		{5 * time.Minute, 45 * s, 11250 * ms}, // long past: at most expected/4
		{0, 11 * s, 122222222},                // a boot with the agent installed: 11 s/90
		{-s, 45 * s, 500 * ms},                // a clock that went back counts as 0
		{0, 0, 500 * ms},                      // no expectation: a first boot's
		{0, 100 * ms, minAgentPoll},           // a fast simulator: never below the minimum
	} {
		if got := agentPollDelay(c.elapsed, c.expected); got != c.want {
			t.Errorf("agentPollDelay(%s, %s) = %s, want %s", c.elapsed, c.expected, got, c.want)
		}
	}
}

// schedule replays the address wait against an address that appears at ready: the polls
// made and when the address was seen.
func schedule(ready, expected time.Duration) (polls int, seen, lastMiss time.Duration) {
	var t time.Duration
	for {
		polls++
		if t >= ready {
			return polls, t, lastMiss
		}
		lastMiss = t
		t += agentPollDelay(t, expected)
	}
}

// The schedule's cost and lag: at most 20 agent requests for a real host's first boot
// (and for one a little slower), the address seen within about a second; a boot that
// comes much sooner or later than expected is still seen within a bounded lag.
func TestAgentPollDelay_costAndLag(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name            string
		ready, expected time.Duration
		maxPolls        int
		maxLag          time.Duration
	}{
		{"first boot on time", 45 * s, 45 * s, 20, 1200 * time.Millisecond},
		{"first boot 5 s late (a slow mirror)", 50 * s, 45 * s, 20, 4 * s},
		{"first boot early", 30 * s, 45 * s, 20, 8 * s},
		{"a boot with the agent installed", 11 * s, 11 * s, 20, 300 * time.Millisecond},
		{"a fast guest while a first boot is expected", 2 * s, 45 * s, 10, 2 * s},
		{"five times faster than expected (a simulator at speed 5)", 9 * s, 45 * s, 10, 7 * s},
		{"learned: the next wave", 9 * s, 9500 * time.Millisecond, 20, 500 * time.Millisecond},
	} {
		polls, seen, _ := schedule(c.ready, c.expected)
		t.Logf("%s: %d polls, address seen %s after it appeared", c.name, polls, seen-c.ready)
		if polls > c.maxPolls || seen-c.ready > c.maxLag {
			t.Errorf("%s: %d polls, seen %s after the address (at %s); want at most %d polls and %s", c.name, polls, seen-c.ready, seen, c.maxPolls, c.maxLag)
		}
	}
}

func TestAgentDelays_learnTheLeastMidpoint(t *testing.T) {
	var a agentDelays
	key := agentDelayKey(true, 9001)
	if got := a.expected(key, firstBootAgentDelay); got != firstBootAgentDelay {
		t.Errorf("nothing seen: %s, want the default", got)
	}
	// A first wave at speed 5 while 45 s is expected: the address at 9 s, seen a little later.
	_, seen, miss := schedule(9*time.Second, firstBootAgentDelay)
	a.observe(key, miss, seen)
	first := a.expected(key, firstBootAgentDelay)
	if first != miss+(seen-miss)/2 || first < 9*time.Second-(seen-miss) || first > seen {
		t.Errorf("after the first wave: %s, want the middle of %s and %s", first, miss, seen)
	}
	_, seen, miss = schedule(9*time.Second, first)
	a.observe(key, miss, seen)
	second := a.expected(key, firstBootAgentDelay)
	if second >= first || second < 9*time.Second-time.Second {
		t.Errorf("after the second wave: %s, want closer to 9 s than %s", second, first)
	}
	a.observe(key, 20*time.Second, 30*time.Second) // a slower VM does not raise it
	if got := a.expected(key, firstBootAgentDelay); got != second {
		t.Errorf("a slower VM moved the estimate to %s", got)
	}
	a.observe(key, 5*time.Second, 2*time.Second) // nonsense is ignored
	if got := a.expected(agentDelayKey(true, 9000), firstBootAgentDelay); got != firstBootAgentDelay {
		t.Errorf("another template: %s, want the default", got)
	}
	if agentDelayKey(false, 9001) == key {
		t.Error("a later boot shares the first boot's key")
	}
}

// agentReadyAfter makes every VM's agent report its address once ready has passed on the
// fake clock since that VM's first agent poll; it returns, per VMID, when the address was
// first seen after it appeared.
func agentReadyAfter(t *testing.T, h *harness, ready time.Duration) map[int]time.Duration {
	first := map[int]time.Time{}
	lag := map[int]time.Duration{}
	h.f.onCall("AgentNetworkInterfaces", func(_ context.Context, c fakeCall) error {
		now := h.clock.Now()
		if _, ok := first[c.VMID]; !ok {
			first[c.VMID] = now
		}
		if at := first[c.VMID].Add(ready); !now.Before(at) {
			if _, ok := lag[c.VMID]; !ok {
				lag[c.VMID] = now.Sub(at)
			}
			h.f.mutate(c.VMID, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		}
		return nil
	})
	return lag
}

// A create whose agent answers after a real host's first boot (45 s) asks the agent at
// most 20 times and sees the address within about a second.
func TestCreate_addressWaitFollowsTheExpectedFirstBoot(t *testing.T) {
	h := newHarness(t)
	h.f.taskPolls = 1
	lag := agentReadyAfter(t, h, 45*time.Second)
	s := h.spec()
	s.WaitForIP = true
	vm := h.create(s)
	if vm.IP == "" {
		t.Fatal("no address")
	}
	n := h.f.calls("AgentNetworkInterfaces")
	t.Logf("%d agent requests, address seen %s after it appeared", n, lag[vm.ID.VMID])
	if n > 20 || n < 5 {
		t.Errorf("%d agent requests, want 5 to 20", n)
	}
	if lag[vm.ID.VMID] > 1500*time.Millisecond {
		t.Errorf("address seen %s after it appeared, want within 1.5 s", lag[vm.ID.VMID])
	}
}

// The next VM of the same template polls around the delay the first one showed: a host
// five times faster than a real one (a simulator at speed 5) costs the first VM its lag,
// not every VM.
func TestCreate_addressWaitLearnsTheTemplatesBoot(t *testing.T) {
	h := newHarness(t)
	lag := agentReadyAfter(t, h, 9*time.Second)
	var lags []time.Duration
	for i, uid := range []string{testUID, otherUID, prevUID} {
		s := h.spec()
		s.Name, s.UID, s.WaitForIP = fmt.Sprintf("proxy-%c", 'a'+i), uid, true
		vm := h.create(s)
		lags = append(lags, lag[vm.ID.VMID])
	}
	t.Logf("address seen after it appeared: %v", lags)
	if lags[0] < 2*time.Second {
		t.Errorf("the first VM saw its address %s after it appeared; want the real host's expectation (45 s) to make it late", lags[0])
	}
	if last := lags[len(lags)-1]; last > 500*time.Millisecond || last >= lags[0] {
		t.Errorf("the third VM saw its address %s after it appeared, want within 0.5 s (the first: %s)", last, lags[0])
	}
}

// cumulative returns the poll times (after the first poll at 0) of a list of sleeps.
func cumulative(sleeps []time.Duration) []time.Duration {
	var out []time.Duration
	var t time.Duration
	for _, d := range sleeps {
		t += d
		out = append(out, t)
	}
	return out
}

func TestTaskSchedule_aPollLandsJustAfterTheExpectedEndThenEveryTenth(t *testing.T) {
	s := newTaskSchedule(time.Second, 50*time.Millisecond, time.Second)
	var elapsed time.Duration
	var at []time.Duration
	for elapsed < 4*time.Second {
		elapsed += s.delay(elapsed)
		at = append(at, elapsed)
	}
	i := slices.IndexFunc(at, func(d time.Duration) bool { return d >= time.Second })
	if i < 0 || at[i] != 1010*time.Millisecond {
		t.Fatalf("polls at %v: the first at or after the expected 1 s end must be at 1.01 s", at)
	}
	if i > 7 {
		t.Errorf("%d polls before the expected end (%v), want the usual growth (at most 7)", i, at[:i])
	}
	for j := i + 1; j < len(at) && at[j] < 2*time.Second; j++ {
		if d := at[j] - at[j-1]; d != 100*time.Millisecond {
			t.Errorf("poll %d at %v, %v after the one before: want 100 ms up to twice the expected time", j, at[j], d)
		}
	}
	last := at[len(at)-1] - at[len(at)-2]
	if last <= 100*time.Millisecond || last > time.Second {
		t.Errorf("after twice the expected time the polls must grow again up to PollMax: last interval %v", last)
	}
}

// A short task (a fleet's stops at a simulator's speed, 0.2 s) that is not over at the
// expected end is polled every tenth of its time after it, not every PollMin (50 ms).
func TestTaskSchedule_aShortTaskLateIsPolledEveryTenthNotPollMin(t *testing.T) {
	ms := time.Millisecond
	s := newTaskSchedule(200*ms, 50*ms, time.Second)
	var elapsed time.Duration
	var at []time.Duration
	for elapsed < 400*ms {
		elapsed += s.delay(elapsed)
		at = append(at, elapsed)
	}
	i := slices.IndexFunc(at, func(d time.Duration) bool { return d >= 200*ms })
	if i < 0 || at[i] != 205*ms {
		t.Fatalf("polls at %v: the first at or after the expected 0.2 s end must be at 205 ms", at)
	}
	if i+1 >= len(at) || at[i+1]-at[i] != 20*ms {
		t.Errorf("polls at %v: the one after the expected end must follow it by 20 ms (a tenth of 0.2 s)", at)
	}
}

func TestTaskSchedule_unknownTypeKeepsTheUsualGrowth(t *testing.T) {
	s := newTaskSchedule(0, 50*time.Millisecond, time.Second)
	var got []time.Duration
	for range 10 {
		got = append(got, s.delay(0))
	}
	us := time.Microsecond
	want := []time.Duration{50000 * us, 75000 * us, 112500 * us, 168750 * us, 253125 * us,
		379687500 * time.Nanosecond, 569531250 * time.Nanosecond, 854296875 * time.Nanosecond,
		time.Second, time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
}

// A stop or destroy task (about 1 s at a real host's pace) is polled just after its
// expected end, and a 2 s clone too: the task waits follow taskExpected.
func TestWaitTask_pollsJustAfterTheTaskTypesExpectedEnd(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		want time.Duration
	}{{"qmstart", 1010 * time.Millisecond}, {"qmclone", 2020 * time.Millisecond}} {
		t.Run(tc.typ, func(t *testing.T) {
			h := newHarness(t)
			h.f.taskPolls = 40
			h.f.mu.Lock()
			upid := h.f.newTask("pv1-1", tc.typ, "100", nil)
			h.f.mu.Unlock()
			if err := h.b.waitTask(h.ctx, upid, time.Minute); err != nil {
				t.Fatal(err)
			}
			at := cumulative(h.clock.slept())
			if !slices.Contains(at, tc.want) {
				t.Errorf("polls at %v: none at %v, just after the %s task's expected end", at, tc.want, tc.typ)
			}
		})
	}
}

func TestTaskDurations_intersectsThenRestarts(t *testing.T) {
	var d taskDurations
	ms := time.Millisecond
	if got := d.expected("qmstop", time.Second); got != time.Second {
		t.Fatalf("nothing seen: %v, want the default", got)
	}
	d.observe("qmstop", 125*ms, 237*ms)
	if got := d.expected("qmstop", time.Second); got != 181*ms {
		t.Errorf("after (125, 237]: %v, want the middle 181ms", got)
	}
	d.observe("qmstop", 191*ms, 241*ms) // a poll at the middle missed: the lower end rises
	if got := d.expected("qmstop", time.Second); got != 214*ms {
		t.Errorf("after (191, 237]: %v, want 214ms", got)
	}
	d.observe("qmstop", 100*ms, 224*ms) // one at the middle found it: the upper end falls
	if got := d.expected("qmstop", time.Second); got != 207500*time.Microsecond {
		t.Errorf("after (191, 224]: %v, want 207.5ms", got)
	}
	d.observe("qmstop", 900*ms, time.Second) // a task far slower: the intervals do not meet
	if got := d.expected("qmstop", time.Second); got != 950*ms {
		t.Errorf("after a disjoint (900, 1000]: %v, want its middle 950ms", got)
	}
	if got := d.expected("qmdestroy", time.Second); got != time.Second {
		t.Errorf("another type: %v, want the default", got)
	}
	d.observe("qmstart", 300*ms, 300*ms) // no interval: ignored
	if got := d.expected("qmstart", time.Second); got != time.Second {
		t.Errorf("an empty interval was learnt: %v", got)
	}
}

// A backend's later tasks of a type are polled just after the end its earlier ones
// showed, not after the default expectation (a simulator, or a host faster than 1 s).
func TestWaitTask_laterTasksPolledAroundTheDurationSeen(t *testing.T) {
	h := newHarness(t)
	h.f.taskPolls = 4 // running at 0, 50, 125, 237.5 ms; ended at 406.25 ms
	h.f.mu.Lock()
	first := h.f.newTask("pv1-1", "qmstop", "100", nil)
	h.f.mu.Unlock()
	if err := h.b.waitTask(h.ctx, first, time.Minute); err != nil {
		t.Fatal(err)
	}
	h.clock.mu.Lock()
	h.clock.sleeps = nil
	h.clock.mu.Unlock()
	h.f.taskPolls = 6
	h.f.mu.Lock()
	second := h.f.newTask("pv1-1", "qmstop", "100", nil)
	h.f.mu.Unlock()
	if err := h.b.waitTask(h.ctx, second, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The middle of (237.5, 406.25] is 321.875 ms; the poll lands 5 ms after it.
	at := cumulative(h.clock.slept())
	if want := 326875 * time.Microsecond; !slices.Contains(at, want) {
		t.Errorf("second stop polled at %v, want one at %v (just after the 321.875 ms the first showed)", at, want)
	}
}

// The address wait counts the boot from the start task's end (bootStart), not from its
// own start: requests between the two (the running check, the read-back) do not shift
// the schedule, and the delay learnt is the boot's. Here the read-back took 2 s after a
// start whose guest answers 11 s after it: the delay learnt is about 11 s, not 9 s.
func TestWaitAddress_countsTheBootFromTheStartTasksEnd(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	boot := h.clock.Now()
	h.f.onCall("AgentNetworkInterfaces", func(_ context.Context, c fakeCall) error {
		if !h.clock.Now().Before(boot.Add(bootAgentDelay)) {
			h.f.mutate(c.VMID, func(v *fakeVM) { v.Agent = capturedIfaces(t) })
		}
		return nil
	})
	h.b.started.Store(testVMID0, boot)
	h.clock.advance(2 * time.Second)
	ip, err := h.b.waitAddress(h.ctx, addressWait{op: "update", node: "pv1-1", vmid: testVMID0, expect: agentInstalled, learn: true})
	if err != nil || ip == "" {
		t.Fatalf("ip %q, err %v", ip, err)
	}
	got := h.b.agentSeen.expected(agentDelayKey(false, 0), 0)
	if got < bootAgentDelay-bootAgentDelay/30 || got > bootAgentDelay+bootAgentDelay/30 {
		t.Errorf("learnt an agent delay of %s, want about %s (from the start task's end)", got, bootAgentDelay)
	}
	// A start seen longer ago than the delay expected is another boot's: not used.
	h2 := newHarness(t)
	h2.b.started.Store(testVMID0, h2.clock.Now())
	h2.clock.advance(bootAgentDelay)
	if got := h2.b.bootStart(testVMID0, h2.clock.Now(), bootAgentDelay); !got.Equal(h2.clock.Now()) {
		t.Errorf("bootStart %s, want now (the start is older than the expected delay)", got)
	}
}
