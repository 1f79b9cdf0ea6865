package proxmox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// clock is the time source of polls, budgets and the listing cache; tests replace it.
type clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// errBudget is returned by pollUntil when the budget ran out before the step said done.
var errBudget = errors.New("budget exhausted")

// pollUntil calls step at once, then after PollMin, growing 1.5x up to PollMax, until step
// reports done or an error, the budget runs out (errBudget), or ctx ends (ctx.Err()).
// A budget of 0 means no budget: only ctx bounds the wait.
func (b *Backend) pollUntil(ctx context.Context, budget time.Duration, step func(context.Context) (bool, error)) error {
	next := b.cfg.Budgets.PollMin
	return b.pollEvery(ctx, budget, func(time.Duration) time.Duration {
		wait := next
		next = min(next*3/2, b.cfg.Budgets.PollMax)
		return wait
	}, step)
}

// pollEvery calls step at once, then again after delay(time since the first step), until
// step reports done or an error, the budget runs out (errBudget), or ctx ends (ctx.Err()).
// A budget of 0 means no budget. pollUntil is pollEvery with the growing schedule.
func (b *Backend) pollEvery(ctx context.Context, budget time.Duration, delay func(elapsed time.Duration) time.Duration,
	step func(context.Context) (bool, error)) error {
	start := b.clock.Now()
	var deadline time.Time
	if budget > 0 {
		deadline = start.Add(budget)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		done, err := step(ctx)
		if err != nil || done {
			return err
		}
		now := b.clock.Now()
		wait := delay(now.Sub(start))
		if !deadline.IsZero() {
			left := deadline.Sub(now)
			if left <= 0 {
				return errBudget
			}
			wait = min(wait, left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.clock.After(wait):
		}
	}
}

// waitTask polls a task until it stops: exitstatus OK or "WARNINGS: <n>" is success,
// anything else a Transient error carrying the text. The node comes from the UPID. A
// budget that runs out is Transient naming the UPID (the task keeps running on Proxmox).
// Transient failures of the status call are retried within the budget, except that a
// node not answering for Budgets.NodeGrace ends the wait (wait); a Permanent one (a 403
// on the task) ends it at once.
func (b *Backend) waitTask(ctx context.Context, upid string, budget time.Duration) error {
	return b.waitTaskPaced(ctx, upid, budget, nil)
}

// waitTaskPaced is waitTask with the poll delay given (waitSpec.delay; nil: the task
// type's schedule, taskSchedule around taskExpected).
func (b *Backend) waitTaskPaced(ctx context.Context, upid string, budget time.Duration, delay func(time.Duration) time.Duration) error {
	u, perr := pveapi.ParseUPID(upid)
	if perr != nil {
		return Transientf("Proxmox returned a malformed task id %q", upid)
	}
	node := u.Node
	learn := delay == nil && taskExpected[u.Type] > 0
	if delay == nil {
		expected := taskExpected[u.Type]
		if learn {
			expected = b.taskSeen.expected(u.Type, expected)
		}
		delay = newTaskSchedule(expected, b.cfg.Budgets.PollMin, b.cfg.Budgets.PollMax).delay
	}
	start := b.clock.Now()
	running, asked := time.Duration(-1), time.Duration(0) // the last poll that saw it running, the latest poll
	var exit string
	spec := waitSpec{kind: "task", what: taskWhat(u) + " " + upid, node: node, vmid: taskVMID(u), budget: budget, delay: delay,
		onBudget: func(_ string, last error) error {
			if last != nil {
				return Transientf("task %s did not finish within %s (it may still be running on Proxmox; last poll failed: %w)", upid, budget, last)
			}
			return Transientf("task %s did not finish within %s; it may still be running on Proxmox", upid, budget)
		}}
	err := b.wait(ctx, spec, func(ctx context.Context) observation {
		at := b.clock.Now().Sub(start)
		st, err := b.api.TaskStatus(ctx, node, upid)
		if err != nil {
			return pollFailed("", err, "the task status could not be read", "reading task %s", upid)
		}
		if st.Status != "stopped" {
			running = at
			return keep("task running")
		}
		asked = at
		exit = st.ExitStatus
		return done("task stopped")
	})
	if err != nil {
		return err
	}
	fields := map[string]any{"upid": upid, "node": node, "duration_ms": b.clock.Now().Sub(start).Milliseconds()}
	if !taskSucceeded(exit) {
		fields["exitstatus"] = exit
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox task failed", fields)
		return Transientf("%w", taskFailed{&pveapi.TaskError{UPID: upid, ExitStatus: exit}})
	}
	if learn && running >= 0 {
		b.taskSeen.observe(u.Type, running, asked)
	}
	if exit != "OK" {
		fields["exitstatus"] = exit
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox task finished with warnings", fields)
		return nil
	}
	tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox task finished", fields)
	return nil
}

// taskWhat names a task by its type, for the waits' messages and logs.
func taskWhat(u pveapi.UPID) string {
	what := map[string]string{
		"qmclone": "the clone task", "qmstart": "the start task", "qmstop": "the stop task", "qmshutdown": "the shutdown task",
		"qmresize": "the disk resize task", "qmdestroy": "the destroy task", "imgcopy": "the seed ISO upload task",
		"imgdel": "the volume delete task", "qmigrate": "the migration task", "qmresume": "the resume task",
	}[u.Type]
	if what == "" {
		what = "the " + u.Type + " task"
	}
	if u.ID != "" {
		what += " (" + u.ID + ")"
	}
	return what
}

// taskVMID is the VM a task acts on, 0 when its id is none (a clone's id is its source).
func taskVMID(u pveapi.UPID) int {
	if u.Type == "qmclone" {
		return 0
	}
	return atoiDefault(u.ID, 0)
}

// budgetErr turns pollUntil's result into the operation's error.
func budgetErr(err error, format string, args ...any) error {
	if errors.Is(err, errBudget) {
		return Transientf(format, args...)
	}
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return Transientf("%s: %w", fmt.Sprintf(format, args...), err)
	}
	return nil
}

// taskFailed renders a failed task as "task <upid> failed: <exitstatus>" and keeps the
// *pveapi.TaskError for the seam's matchers (pveapi.MissingVolume).
type taskFailed struct{ *pveapi.TaskError }

func (e taskFailed) Error() string { return "task " + e.UPID + " failed: " + e.ExitStatus }
func (e taskFailed) Unwrap() error { return e.TaskError }
