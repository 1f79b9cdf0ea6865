package proxmox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Every wait of the backend (a task, a lock, a VM reaching running, the guest agent's
// address, a VM settling after an update) runs through wait: the caller says what it waits
// for and classifies each poll; wait schedules the polls (pollUntil's schedule), bounds
// them by the budget and ctx, logs progress at INFO, and turns a poll's "cannot succeed"
// into an error at once, naming what was waited for and for how long.

// pollVerdict is one poll's reading of the thing waited for.
type pollVerdict int

const (
	// keepWaiting: not there yet, and nothing says it cannot come.
	keepWaiting pollVerdict = iota
	// waitDone: what was waited for happened.
	waitDone
	// cannotSucceed: what was waited for will not happen by waiting (the VM stopped or is
	// gone, no agent configured, a lock that never clears by itself, a failed request
	// that retrying will not fix): wait fails at once with obs.err.
	cannotSucceed
)

// observation is what one poll saw.
type observation struct {
	verdict pollVerdict
	// seen says in a few words what the poll saw ("task running", "agent not running
	// yet", "link-local address only", `lock "backup"`): the progress lines and the
	// budget's error report it.
	seen string
	// err is, with cannotSucceed, the reason (an *Error whose class and message say what
	// to do); with keepWaiting, the request that failed, if any (quoted when the budget
	// runs out, and its node's answering tracked: see nodeDown).
	err error
	// nodeDown says the VM's node did not answer this poll although no request failed (a
	// listing that reports the VM's status "unknown"). A request that failed with a
	// transport failure (nodeUnreachable) counts the same.
	nodeDown bool
}

func keep(seen string) observation { return observation{verdict: keepWaiting, seen: seen} }

func keepAfter(seen string, err error) observation {
	return observation{verdict: keepWaiting, seen: seen, err: err}
}

func done(seen string) observation { return observation{verdict: waitDone, seen: seen} }

func cannot(seen string, err error) observation {
	return observation{verdict: cannotSucceed, seen: seen, err: err}
}

// waitSpec says what a wait waits for.
type waitSpec struct {
	// kind is the wait's family for the logs: task, lock, running, address, settle.
	kind string
	// what is what is waited for, as a sentence fragment: "the start task UPID:...",
	// "the VM to run", "an IPv4 address from the guest agent".
	what string
	vmid int
	node string
	// budget bounds the wait; 0: only ctx (the Terraform timeout).
	budget time.Duration
	// note is said on the first progress line (e.g. how long a first boot takes).
	note string
	// onBudget builds the error when the budget runs out; nil: a Transient error naming
	// what, the budget and what was seen last.
	onBudget func(seen string, last error) error
	// delay, when set, is the wait before the next poll given the time since the first
	// (agentPollDelay); nil: pollUntil's schedule.
	delay func(elapsed time.Duration) time.Duration
}

// progressEvery is how often a long wait says at INFO what it has seen so far.
const progressEvery = 30 * time.Second

// wait polls until poll says done (nil) or cannot succeed (its error, at once), the budget
// runs out (spec.onBudget), or ctx ends (Transient, naming what was waited for). It says
// at INFO that it waits (what, budget, spec.note) once a poll says keep waiting, then
// every progressEvery what it has seen so far, and how it ended. A node
// that does not answer (observation.nodeDown, or a poll whose request failed with a
// transport failure) is waited on for Budgets.NodeGrace, then the wait fails at once:
// its VM and tasks cannot be seen, so waiting for the whole budget would only hide that.
func (b *Backend) wait(ctx context.Context, spec waitSpec, poll func(context.Context) observation) error {
	w := &waitRun{b: b, spec: spec, fields: waitFields(spec), start: b.clock.Now()}
	w.nextLog = w.start.Add(progressEvery)
	err := w.schedule(ctx, func(ctx context.Context) (bool, error) { return w.step(ctx, poll(ctx)) })
	return w.result(ctx, err)
}

// waitFields are a wait's log fields: kind, what, VMID, node, budget, note.
func waitFields(spec waitSpec) map[string]any {
	fields := map[string]any{"wait": spec.kind, "what": spec.what}
	if spec.vmid != 0 {
		fields["vmid"] = spec.vmid
	}
	if spec.node != "" {
		fields["node"] = spec.node
	}
	if spec.budget > 0 {
		fields["budget"] = spec.budget.String()
	} else {
		fields["budget"] = "the operation's timeout"
	}
	if spec.note != "" {
		fields["note"] = spec.note
	}
	return fields
}

// waitRun is one wait's state between its polls.
type waitRun struct {
	b         *Backend
	spec      waitSpec
	fields    map[string]any
	start     time.Time
	last      observation
	seenSoFar []string
	polls     int
	downSince time.Time // since when the node has not answered (zero: it answers)
	nextLog   time.Time
	failure   error // the reason of a poll's "cannot succeed"
}

func (w *waitRun) elapsed() time.Duration {
	return w.b.clock.Now().Sub(w.start).Round(time.Millisecond)
}

// schedule runs step on the spec's delay (pollEvery) or pollUntil's schedule.
func (w *waitRun) schedule(ctx context.Context, step func(context.Context) (bool, error)) error {
	b := w.b
	if w.spec.delay == nil {
		return b.pollUntil(ctx, w.spec.budget, step)
	}
	// A node that stopped answering is polled again when its grace ends, not on the
	// wait's own, sparser schedule.
	delay := func(elapsed time.Duration) time.Duration {
		d := w.spec.delay(elapsed)
		if !w.downSince.IsZero() {
			d = min(d, max(w.downSince.Add(b.cfg.Budgets.NodeGrace).Sub(b.clock.Now()), minAgentPoll))
		}
		return d
	}
	return b.pollEvery(ctx, w.spec.budget, delay, step)
}

// step takes one poll's observation: done, stop (errStop, the reason in failure), or
// keep waiting, tracking the node's answering and saying the progress at INFO.
func (w *waitRun) step(ctx context.Context, obs observation) (bool, error) {
	b := w.b
	w.polls++
	if ctx.Err() != nil && obs.verdict != waitDone {
		return false, ctx.Err()
	}
	w.last = obs
	if obs.seen != "" && !slices.Contains(w.seenSoFar, obs.seen) {
		w.seenSoFar = append(w.seenSoFar, obs.seen)
	}
	now := b.clock.Now()
	switch obs.verdict {
	case waitDone:
		return true, nil
	case cannotSucceed:
		w.failure = obs.err
		return false, errStop
	}
	if w.polls == 1 {
		// Said once the wait has to wait: a wait its first poll ends is no wait.
		tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox wait started", withWaitFields(w.fields, map[string]any{"seen": obs.seen}))
	}
	if obs.nodeDown || (obs.err != nil && nodeUnreachable(obs.err)) {
		if w.downSince.IsZero() {
			w.downSince = now
		}
		if down := now.Sub(w.downSince); down >= b.cfg.Budgets.NodeGrace {
			w.failure = nodeDownErr(w.spec, down, obs)
			return false, errStop
		}
	} else {
		w.downSince = time.Time{}
	}
	if !now.Before(w.nextLog) {
		tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox wait in progress", withWaitFields(w.fields, map[string]any{
			"elapsed": w.elapsed().String(), "seen": obs.seen, "seen_so_far": strings.Join(w.seenSoFar, "; "), "polls": w.polls,
		}))
		w.nextLog = now.Add(progressEvery)
	}
	return false, nil
}

// result turns the schedule's end into the wait's error, and logs how it ended.
func (w *waitRun) result(ctx context.Context, err error) error {
	spec, last := w.spec, w.last
	end := withWaitFields(w.fields, map[string]any{"elapsed": w.elapsed().String(), "polls": w.polls, "seen": last.seen})
	switch {
	case err == nil:
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox wait done", end)
		return nil
	case errors.Is(err, errStop):
		end["error"] = errText(w.failure)
		tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox wait cannot succeed", end)
		return waitFailed(spec, w.elapsed(), w.failure)
	case errors.Is(err, errBudget):
		tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox wait ran out of budget", end)
		if spec.onBudget != nil {
			return spec.onBudget(last.seen, last.err)
		}
		if last.err != nil {
			return Transientf("still waiting for %s after %s (last seen: %s; last poll failed: %w)", spec.what,
				spec.budget, orNothing(last.seen), last.err)
		}
		return Transientf("still waiting for %s after %s (last seen: %s)", spec.what, spec.budget, orNothing(last.seen))
	default:
		end["error"] = err.Error()
		tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox wait ended by the operation's timeout or an interrupt", end)
		if last.seen != "" {
			return Transientf("waiting for %s (last seen after %s: %s): %w", spec.what, w.elapsed(), last.seen, err)
		}
		return Transientf("waiting for %s: %w", spec.what, err)
	}
}

// errStop ends pollUntil when a poll said cannot succeed (wait keeps the reason).
var errStop = errors.New("the wait cannot succeed")

// waitFailed renders a poll's "cannot succeed": what was waited for, after how long, and
// the reason (which says what to do), keeping the reason's class.
func waitFailed(spec waitSpec, after time.Duration, reason error) error {
	class := ClassOf(reason)
	var e *Error
	if errors.As(reason, &e) && e.Err != nil {
		reason = e.Err
	}
	return &Error{Class: class, Err: fmt.Errorf("waiting for %s, given up after %s: %w", spec.what, after, reason)}
}

func nodeDownErr(spec waitSpec, down time.Duration, obs observation) error {
	node := spec.node
	if node == "" {
		node = "the VM's node"
	} else {
		node = "node " + node
	}
	why := obs.seen
	if obs.err != nil {
		why = obs.err.Error()
	}
	return Transientf("%s has not answered for %s (%s); check that the node is up and reachable from this machine, then apply again "+
		"(a task already started there may still finish)", node, down.Round(time.Second), why)
}

func withWaitFields(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// errText is an error's message without the "VM: " an *Error without its VM renders.
func errText(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Op == "" && e.Name == "" && e.VMID == 0 && e.Err != nil {
		return e.Err.Error()
	}
	return err.Error()
}

func orNothing(s string) string {
	if s == "" {
		return "nothing yet"
	}
	return s
}

// nodeUnreachable reports whether a request failed because the node could not be talked
// to (no connection, the connection lost, pveproxy unable to reach the node, a request
// that timed out): the one place the waits tell a node that is down from an answer. A
// failure of ctx itself (the operation's timeout) is not one.
func nodeUnreachable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if pveapi.IsUnreachable(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// pollFailed classifies a failed request inside a poll: Permanent (a 4xx: retrying will
// not help) cannot succeed, with what the request was; anything else is waited on.
func pollFailed(op string, err error, seen string, format string, args ...any) observation {
	if classify(op, err) == pveapi.Permanent {
		return cannot(seen, apiErrorf(op, err, format, args...))
	}
	return keepAfter(seen, err)
}
