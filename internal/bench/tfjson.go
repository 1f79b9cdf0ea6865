package bench

import (
	"bufio"
	"encoding/json"
	"strings"
	"time"
)

// uiEvent is the part of one line of terraform's machine-readable UI (-json) we read.
type uiEvent struct {
	Level     string `json:"@level"`
	Message   string `json:"@message"`
	Timestamp string `json:"@timestamp"`
	Type      string `json:"type"`
}

// events sums up a -json output.
type events struct {
	// ApplySpan is from the first apply_start to the last apply_complete or apply_errored;
	// RefreshSpan from the first refresh_start to the last refresh_complete.
	ApplySpan, RefreshSpan time.Duration
	// Completed counts apply_complete, Errored apply_errored, Refreshed refresh_complete.
	Completed, Errored, Refreshed int
	// Errors are the error diagnostics' messages.
	Errors []string
}

type span struct{ first, last time.Time }

func (s *span) start(t time.Time) {
	if s.first.IsZero() || t.Before(s.first) {
		s.first = t
	}
}

func (s *span) end(t time.Time) {
	if t.After(s.last) {
		s.last = t
	}
}

func (s span) length() time.Duration {
	if s.first.IsZero() || !s.last.After(s.first) {
		return 0
	}
	return s.last.Sub(s.first)
}

func parseEvents(out string) events {
	var ev events
	var apply, refresh span
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e uiEvent
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if e.Type == "diagnostic" && e.Level == "error" {
			ev.Errors = append(ev.Errors, e.Message)
		}
		ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		if err != nil {
			continue
		}
		switch e.Type {
		case "apply_start":
			apply.start(ts)
		case "apply_complete":
			apply.end(ts)
			ev.Completed++
		case "apply_errored":
			apply.end(ts)
			ev.Errored++
		case "refresh_start":
			refresh.start(ts)
		case "refresh_complete":
			refresh.end(ts)
			ev.Refreshed++
		}
	}
	ev.ApplySpan, ev.RefreshSpan = apply.length(), refresh.length()
	return ev
}
