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
	var deadline time.Time
	if budget > 0 {
		deadline = b.clock.Now().Add(budget)
	}
	interval := b.cfg.Budgets.PollMin
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		done, err := step(ctx)
		if err != nil || done {
			return err
		}
		wait := interval
		if !deadline.IsZero() {
			left := deadline.Sub(b.clock.Now())
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
		interval = min(interval*3/2, b.cfg.Budgets.PollMax)
	}
}

// waitTask polls a task (entry 10) until it stops: exitstatus OK or "WARNINGS: <n>" is
// success, anything else a Transient error carrying the text. The node comes from the
// UPID. A budget that runs out is Transient naming the UPID (the task keeps running on
// Proxmox). Transient failures of the status call itself are retried within the budget.
func (b *Backend) waitTask(ctx context.Context, upid string, budget time.Duration) error {
	node, ok := upidNode(upid)
	if !ok {
		return Transientf("Proxmox returned a malformed task id %q", upid)
	}
	start := b.clock.Now()
	var exit string
	var lastErr error
	err := b.pollUntil(ctx, budget, func(ctx context.Context) (bool, error) {
		st, err := b.api.TaskStatus(ctx, node, upid)
		if err != nil {
			if ctx.Err() == nil && classify("", err) == pveapi.Permanent {
				return false, apiErrorf("", err, "reading task %s", upid)
			}
			lastErr = err
			return false, nil
		}
		lastErr = nil
		if st.Status != "stopped" {
			return false, nil
		}
		exit = st.ExitStatus
		return true, nil
	})
	fields := map[string]any{"upid": upid, "node": node, "duration_ms": b.clock.Now().Sub(start).Milliseconds()}
	switch {
	case errors.Is(err, errBudget):
		if lastErr != nil {
			return Transientf("task %s did not finish within %s (it may still be running on Proxmox; last poll failed: %w)", upid, budget, lastErr)
		}
		return Transientf("task %s did not finish within %s; it may still be running on Proxmox", upid, budget)
	case err != nil:
		var e *Error
		if errors.As(err, &e) {
			return err
		}
		return Transientf("waiting for task %s: %w", upid, err)
	}
	if !taskSucceeded(exit) {
		fields["exitstatus"] = exit
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox task failed", fields)
		return Transientf("%w", taskFailed{&pveapi.TaskError{UPID: upid, ExitStatus: exit}})
	}
	if exit != "OK" {
		fields["exitstatus"] = exit
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox task finished with warnings", fields)
		return nil
	}
	tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox task finished", fields)
	return nil
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
