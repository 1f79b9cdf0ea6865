package provider

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// summaryCalls are the diagnostics calls and the index of their summary argument.
var summaryCalls = map[string]int{
	"AddError": 0, "AddWarning": 0, "AddAttributeError": 1, "AddAttributeWarning": 1,
	"NewErrorDiagnostic": 0, "NewWarningDiagnostic": 0,
	"NewAttributeErrorDiagnostic": 1, "NewAttributeWarningDiagnostic": 1,
}

// jargonRE are the words a summary may not use: the provider's own shorthand, which a user
// cannot know ("ours", "proved", "settle"); "this resource's" and "shown to be this
// resource's" say the same in plain words.
var jargonRE = regexp.MustCompile(`(?i)\b(ours|(un)?proved|settle[sd]?|settling)\b`)

// literalText is the text of the string literals in e (a literal, or a concatenation whose
// other parts are values filled in at run time), joined.
func literalText(e ast.Expr) string {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			if s, err := strconv.Unquote(v.Value); err == nil {
				return s
			}
		}
	case *ast.BinaryExpr:
		return literalText(v.X) + " " + literalText(v.Y)
	case *ast.ParenExpr:
		return literalText(v.X)
	case *ast.CallExpr:
		var parts []string
		for _, a := range v.Args {
			parts = append(parts, literalText(a))
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// diagSummaries are the summaries written in internal/provider's code: the summary argument
// of every diagnostics call, and what a function named *Summary returns.
func diagSummaries(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch v := n.(type) {
			case *ast.CallExpr:
				sel, ok := v.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if i, ok := summaryCalls[sel.Sel.Name]; ok && i < len(v.Args) {
					if s := literalText(v.Args[i]); strings.TrimSpace(s) != "" {
						out[fset.Position(v.Pos()).String()] = s
					}
				}
			case *ast.FuncDecl:
				if !strings.HasSuffix(strings.ToLower(v.Name.Name), "summary") || v.Body == nil {
					return true
				}
				ast.Inspect(v.Body, func(m ast.Node) bool {
					if r, ok := m.(*ast.ReturnStmt); ok {
						for _, res := range r.Results {
							if s := literalText(res); strings.TrimSpace(s) != "" {
								out[fset.Position(r.Pos()).String()] = s
							}
						}
					}
					return true
				})
			}
			return true
		})
	}
	return out
}

// TestDiagnostics_summariesInPlainWords: no error or warning summary of the provider uses
// the words "ours", "proved" or "settle".
func TestDiagnostics_summariesInPlainWords(t *testing.T) {
	summaries := diagSummaries(t)
	if len(summaries) < 40 {
		t.Fatalf("found %d summaries: the walk misses the provider's diagnostics", len(summaries))
	}
	found := false
	for _, s := range summaries {
		if strings.Contains(s, "Proxy VM deleted outside Terraform") {
			found = true
		}
	}
	if !found {
		t.Error("the walk does not see goneSummary's summaries")
	}
	for at, s := range summaries {
		if w := jargonRE.FindString(s); w != "" {
			t.Errorf("%s: summary %q uses %q: say it in plain words (\"this resource's\", \"shown to be this resource's\")", at, s, w)
		}
	}
}

// TestDiagnostics_jargonCaught: the check sees the words in the shapes summaries take.
func TestDiagnostics_jargonCaught(t *testing.T) {
	for _, s := range []string{"Proxy VM no longer proved this resource's", "VM is not ours", "Unproved creating mark", "Waiting for the VM to settle"} {
		if !jargonRE.MatchString(s) {
			t.Errorf("%q passes the check", s)
		}
	}
	for _, s := range []string{"Proxy VM no longer shown to be this resource's", "Half-made proxy VM left alone"} {
		if jargonRE.MatchString(s) {
			t.Errorf("%q is refused", s)
		}
	}
}

// TestDiagnostics_notFoundSaysWhatComesNext: a VM not found outside an import says what the
// next plan does; for the power action, whose refusal may meet a VM that exists but is not
// this resource's, it does not say the VM is gone.
func TestDiagnostics_notFoundSaysWhatComesNext(t *testing.T) {
	err := &proxmox.Error{Class: pveapi.NotFound, Name: "proxy-a", VMID: 100001, Err: errors.New("no VM with this resource's uid at VMID 100001")}
	for _, op := range []string{"update", "delete", "read"} {
		d := vmErrorDetail(op, "proxy-a", 100001, err, "")
		if !strings.Contains(d, "The next plan") || !strings.Contains(d, "replaces it") {
			t.Errorf("%s: %q does not say what the next plan does", op, d)
		}
	}
	for _, op := range proxmox.PowerOps {
		d := vmErrorDetail(string(op), "proxy-a", 100001, err, "")
		if strings.Contains(d, "no longer exists") {
			t.Errorf("power %s: %q says the VM is gone", op, d)
		}
		if !strings.Contains(d, "nothing was sent to it") || !strings.Contains(d, "next plan") {
			t.Errorf("power %s: %q does not say nothing was sent and what the next plan does", op, d)
		}
	}
}
