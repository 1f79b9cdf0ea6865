package tfrun

import (
	"bufio"
	"encoding/json"
	"strings"
)

// RequiredProviders is the terraform block that maps the local name proxy to the
// provider's address (needed with dev_overrides; no init is run).
const RequiredProviders = `terraform {
  required_providers {
    proxy = { source = "proxy-operator/proxy" }
  }
}
`

// Diagnostic is one diagnostic of a `-json` terraform command (plan, apply, validate).
type Diagnostic struct {
	Severity string `json:"severity"`
	Summary  string `json:"summary"`
	Detail   string `json:"detail"`
	Address  string `json:"address"`
	Range    *struct {
		Filename string `json:"filename"`
		Start    struct {
			Line int `json:"line"`
		} `json:"start"`
	} `json:"range"`
	Snippet *struct {
		Context string `json:"context"`
		Code    string `json:"code"`
		// StartLine is the line number of Code's first line.
		StartLine int `json:"start_line"`
		// HighlightStartOffset and HighlightEndOffset delimit the highlighted part of Code.
		HighlightStartOffset int `json:"highlight_start_offset"`
		HighlightEndOffset   int `json:"highlight_end_offset"`
	} `json:"snippet"`
}

// Highlight is the source text the diagnostic points at ("" without a snippet).
func (d Diagnostic) Highlight() string {
	if d.Snippet == nil {
		return ""
	}
	c := d.Snippet.Code
	a, b := d.Snippet.HighlightStartOffset, d.Snippet.HighlightEndOffset
	if a < 0 || b > len(c) || a > b {
		return ""
	}
	return c[a:b]
}

// Line is the source line the diagnostic starts on (0 without a range).
func (d Diagnostic) Line() int {
	if d.Range == nil {
		return 0
	}
	return d.Range.Start.Line
}

// Text is the summary and detail.
func (d Diagnostic) Text() string { return d.Summary + ": " + d.Detail }

// ParseDiagnostics reads the diagnostics from the machine-readable UI output of
// `terraform plan|apply -json` (one JSON object per line, type "diagnostic") or from the
// single object `terraform validate -json` prints.
func ParseDiagnostics(out string) []Diagnostic {
	var diags []Diagnostic
	trimmed := strings.TrimSpace(out)
	if strings.HasPrefix(trimmed, "{\n") || strings.HasPrefix(trimmed, "{\r\n") {
		var v struct {
			Diagnostics []Diagnostic `json:"diagnostics"`
		}
		if json.Unmarshal([]byte(trimmed), &v) == nil {
			return v.Diagnostics
		}
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			Type       string      `json:"type"`
			Diagnostic *Diagnostic `json:"diagnostic"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "diagnostic" || line.Diagnostic == nil {
			continue
		}
		diags = append(diags, *line.Diagnostic)
	}
	return diags
}

// Errors keeps the diagnostics of severity error.
func Errors(diags []Diagnostic) []Diagnostic {
	var out []Diagnostic
	for _, d := range diags {
		if d.Severity == "error" {
			out = append(out, d)
		}
	}
	return out
}
