package bench

import (
	"strings"
	"testing"
	"time"
)

func uiLines(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func TestParseEvents_spansCountsAndErrors(t *testing.T) {
	out := uiLines(
		`{"@level":"info","@message":"Terraform 1.11.4","@timestamp":"2026-01-02T10:00:00.000000Z","type":"version"}`,
		`{"@level":"info","@message":"proxy_vm.bench[0]: Refreshing state...","@timestamp":"2026-01-02T10:00:00.500000Z","type":"refresh_start","hook":{"resource":{"addr":"proxy_vm.bench[0]"}}}`,
		`{"@level":"info","@message":"proxy_vm.bench[0]: Refresh complete","@timestamp":"2026-01-02T10:00:00.750000Z","type":"refresh_complete","hook":{"resource":{"addr":"proxy_vm.bench[0]"}}}`,
		`{"@level":"info","@message":"proxy_vm.bench[0]: Modifying...","@timestamp":"2026-01-02T10:00:01.000000Z","type":"apply_start","hook":{"resource":{"addr":"proxy_vm.bench[0]"}}}`,
		`{"@level":"info","@message":"proxy_vm.bench[1]: Modifying...","@timestamp":"2026-01-02T10:00:01.100000Z","type":"apply_start","hook":{"resource":{"addr":"proxy_vm.bench[1]"}}}`,
		`{"@level":"info","@message":"proxy_vm.bench[1]: Modifications complete","@timestamp":"2026-01-02T10:00:03.000000Z","type":"apply_complete","hook":{"resource":{"addr":"proxy_vm.bench[1]"}}}`,
		`{"@level":"error","@message":"proxy_vm.bench[0]: Modifying... failed","@timestamp":"2026-01-02T10:00:04.250000Z","type":"apply_errored","hook":{"resource":{"addr":"proxy_vm.bench[0]"}}}`,
		`{"@level":"error","@message":"Error: Unable to update proxy VM","@timestamp":"2026-01-02T10:00:04.300000Z","type":"diagnostic"}`,
		`not json`,
		`{"@level":"warn","@message":"Warning: Provider development overrides are in effect","@timestamp":"2026-01-02T10:00:00.100000Z","type":"diagnostic"}`,
	)
	ev := parseEvents(out)
	if ev.ApplySpan != 3250*time.Millisecond || ev.RefreshSpan != 250*time.Millisecond {
		t.Errorf("spans apply %s refresh %s, want 3.25s and 250ms", ev.ApplySpan, ev.RefreshSpan)
	}
	if ev.Completed != 1 || ev.Errored != 1 || ev.Refreshed != 1 {
		t.Errorf("completed %d errored %d refreshed %d, want 1 1 1", ev.Completed, ev.Errored, ev.Refreshed)
	}
	if len(ev.Errors) != 1 || ev.Errors[0] != "Error: Unable to update proxy VM" {
		t.Errorf("errors %q, want the one error diagnostic", ev.Errors)
	}
	times := resourceTimes(out)
	want := map[string]time.Duration{"bench-0": 0, "bench-1": 1900 * time.Millisecond}
	if len(times) != 2 || times["bench-1"][1].Sub(times["bench-1"][0]) != want["bench-1"] || !times["bench-0"][1].IsZero() {
		t.Errorf("resourceTimes = %v; want bench-1 over 1.9s and bench-0 without an end", times)
	}
}

func TestParseEvents_nothingToMeasure(t *testing.T) {
	ev := parseEvents("Error: Inconsistent dependency lock file\n")
	if ev.ApplySpan != 0 || ev.RefreshSpan != 0 || ev.Completed != 0 || len(ev.Errors) != 0 {
		t.Errorf("%+v, want zero", ev)
	}
}
