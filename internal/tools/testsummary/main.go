// Command testsummary turns `go test -json` output into readable progress and a summary.
//
// Progress mode reads one `go test -json` stream on stdin, prints one line per package as
// it ends, and copies the stream to -o so that the summary can read it later:
//
//	go test -json ./... | testsummary -progress -o bin/test/main.json
//
// Summary mode reads one or more saved streams, each optionally labelled (the provider's
// tests run again under another CLI: a leg of the CLI matrix), lists every failure with its
// package, test name and output, then prints one line per kind for the unlabelled stream, one
// line per leg, and a total:
//
//	testsummary -main-leg 'Terraform 1.11.4' -skipped 'OpenTofu 1.12.6=no ../tools/tofu-1.12' \
//		bin/test/main.json 'Terraform 1.16.3=bin/test/terraform-1.16.3.json'
//
//	unit: 412 passed, 0 failed, 3 skipped
//	acceptance: 40 passed, 0 failed, 0 skipped
//	reliability: 15 passed, 0 failed, 0 skipped
//	leg Terraform 1.11.4: 467 passed, 0 failed, 3 skipped in 6m2s (the runs above)
//	leg Terraform 1.16.3: 120 passed, 0 failed, 2 skipped in 4m10s
//	leg OpenTofu 1.12.6: SKIPPED (no ../tools/tofu-1.12)
//	587 passed, 0 failed, 5 skipped
//
// A leg's time runs from its stream's first event to its last.
// The last line stands alone so that CI can read it. A test's kind comes from its name:
// TestAcc... is acceptance, TestE2E... is reliability, anything else is unit. Top-level
// tests are counted; the rows of a table are its subtests and appear by name in the
// failure list. A package that fails without a failing test (a build failure, a panic in
// TestMain, a timeout) counts as one failed test named after the package, and so does a
// test that started and never finished. Both modes exit 1 when anything failed, so a
// Makefile keeps a non-zero status whatever the pipe does.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output and build-fail events
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

// maxOutput is how many lines of a failure's output are kept (the last ones).
const maxOutput = 60

type test struct {
	pkg, name string
	state     string // "", "pass", "fail", "skip"
	output    []string
}

type pkgState struct {
	name    string
	state   string // "", "pass", "fail", "skip"
	elapsed float64
	output  []string // package-level output (build errors, panics outside a test)
	tests   map[string]*test
	order   []string
}

// run is one parsed stream.
type run struct {
	label       string
	pkgs        map[string]*pkgState
	order       []string
	unparsed    []string
	first, last time.Time // the earliest and latest event times
}

// elapsed is the stream's wall time, rounded to the second.
func (r *run) elapsed() time.Duration {
	if r.first.IsZero() {
		return 0
	}
	return r.last.Sub(r.first).Round(time.Second)
}

func newRun(label string) *run { return &run{label: label, pkgs: map[string]*pkgState{}} }

func (r *run) pkg(name string) *pkgState {
	p := r.pkgs[name]
	if p == nil {
		p = &pkgState{name: name, tests: map[string]*test{}}
		r.pkgs[name] = p
		r.order = append(r.order, name)
	}
	return p
}

func keep(lines []string, s string) []string {
	lines = append(lines, strings.TrimRight(s, "\n"))
	if len(lines) > maxOutput {
		lines = lines[len(lines)-maxOutput:]
	}
	return lines
}

// add applies one event; it returns the package when the event ended it.
func (r *run) add(e event) *pkgState {
	switch e.Action {
	case "build-output":
		// ImportPath names the package, or its test variant: "pkg [pkg.test]".
		name, _, _ := strings.Cut(e.ImportPath, " ")
		p := r.pkg(name)
		p.output = keep(p.output, e.Output)
		return nil
	case "build-fail":
		return nil // the package's own fail event follows
	}
	if e.Package == "" {
		return nil
	}
	p := r.pkg(e.Package)
	if e.Test == "" {
		switch e.Action {
		case "output":
			p.output = keep(p.output, e.Output)
		case "pass", "fail", "skip":
			p.state, p.elapsed = e.Action, e.Elapsed
			if e.FailedBuild != "" && e.FailedBuild != e.Package {
				p.output = keep(p.output, "build failed: "+e.FailedBuild)
			}
			return p
		}
		return nil
	}
	t := p.tests[e.Test]
	if t == nil {
		t = &test{pkg: e.Package, name: e.Test}
		p.tests[e.Test] = t
		p.order = append(p.order, e.Test)
	}
	switch e.Action {
	case "output":
		t.output = keep(t.output, e.Output)
	case "pass", "fail", "skip":
		t.state = e.Action
	}
	return nil
}

// read parses a stream; copy, when set, receives every line as read.
func read(in io.Reader, label string, copyTo io.Writer, progress io.Writer) (*run, error) {
	r := newRun(label)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if copyTo != nil {
			if _, err := copyTo.Write(append(line, '\n')); err != nil {
				return nil, err
			}
		}
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			r.unparsed = keep(r.unparsed, string(line))
			if progress != nil {
				fmt.Fprintln(progress, string(line))
			}
			continue
		}
		if !e.Time.IsZero() {
			if r.first.IsZero() || e.Time.Before(r.first) {
				r.first = e.Time
			}
			if e.Time.After(r.last) {
				r.last = e.Time
			}
		}
		if p := r.add(e); p != nil && progress != nil {
			fmt.Fprintln(progress, p.progressLine())
		}
	}
	return r, sc.Err()
}

func (p *pkgState) counts() (pass, fail, skip int) {
	for _, name := range p.order {
		if strings.Contains(name, "/") {
			continue
		}
		switch p.tests[name].state {
		case "pass":
			pass++
		case "skip":
			skip++
		default: // fail, or started and never finished
			fail++
		}
	}
	return pass, fail, skip
}

func (p *pkgState) progressLine() string {
	pass, fail, skip := p.counts()
	status := map[string]string{"pass": "ok", "fail": "FAIL", "skip": "-"}[p.state]
	if len(p.order) == 0 && p.state != "fail" {
		return fmt.Sprintf("%-5s %s (no tests)", status, short(p.name))
	}
	return fmt.Sprintf("%-5s %-32s %7.1fs  %d passed, %d failed, %d skipped", status, short(p.name), p.elapsed, pass, fail, skip)
}

// kind is a test's kind from its top-level name.
func kind(name string) string {
	top, _, _ := strings.Cut(name, "/")
	switch {
	case strings.HasPrefix(top, "TestAcc"):
		return "acceptance"
	case strings.HasPrefix(top, "TestE2E"):
		return "reliability"
	default:
		return "unit"
	}
}

var kinds = []string{"unit", "acceptance", "reliability"}

type tally struct{ pass, fail, skip int }

func (t tally) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", t.pass, t.fail, t.skip)
}

// failure is one entry of the failure list.
type failure struct {
	label, pkg, name, why string
	output                []string
}

// summarize counts every run by kind and collects the failures. The unlabelled run gets a
// line per kind (and a leg line when mainLeg names it), each labelled run one leg line, each
// of skipped ("label=why") a SKIPPED leg line.
func summarize(runs []*run, mainLeg string, skipped []string) (lines []string, total tally, fails []failure) {
	for _, r := range runs {
		byKind := map[string]*tally{}
		for _, k := range kinds {
			byKind[k] = &tally{}
		}
		for _, pn := range r.order {
			p := r.pkgs[pn]
			failedTests := 0
			for _, name := range p.order {
				t := p.tests[name]
				if !strings.Contains(name, "/") {
					c := byKind[kind(name)]
					switch t.state {
					case "pass":
						c.pass++
					case "skip":
						c.skip++
					default:
						c.fail++
					}
				}
				switch {
				case t.state == "fail" && !hasFailedChild(p, name):
					fails = append(fails, failure{r.label, pn, name, "", t.output})
					failedTests++
				case t.state == "":
					why := "started and never finished (a panic or a timeout)"
					fails = append(fails, failure{r.label, pn, name, why, t.output})
					failedTests++
				}
			}
			if (p.state == "fail" || p.state == "") && failedTests == 0 {
				why := "the package failed without a failing test"
				if p.state == "" {
					why = "the package never finished"
				}
				fails = append(fails, failure{r.label, pn, "", why, p.output})
				byKind[pkgKind(p)].fail++
			}
		}
		var leg tally
		for _, k := range kinds {
			c := *byKind[k]
			total.pass, total.fail, total.skip = total.pass+c.pass, total.fail+c.fail, total.skip+c.skip
			leg.pass, leg.fail, leg.skip = leg.pass+c.pass, leg.fail+c.fail, leg.skip+c.skip
			if r.label == "" {
				lines = append(lines, k+": "+c.String())
			}
		}
		switch {
		case r.label != "":
			lines = append(lines, fmt.Sprintf("leg %s: %s in %s", r.label, leg, r.elapsed()))
		case mainLeg != "":
			lines = append(lines, fmt.Sprintf("leg %s: %s in %s (the runs above)", mainLeg, leg, r.elapsed()))
		}
	}
	for _, s := range skipped {
		lbl, why, _ := strings.Cut(s, "=")
		lines = append(lines, fmt.Sprintf("leg %s: SKIPPED (%s)", lbl, why))
	}
	return lines, total, fails
}

func hasFailedChild(p *pkgState, name string) bool {
	for _, other := range p.order {
		if strings.HasPrefix(other, name+"/") && p.tests[other].state != "pass" && p.tests[other].state != "skip" {
			return true
		}
	}
	return false
}

// pkgKind is the kind a package-level failure counts as: that of its tests, when they
// share one, else unit.
func pkgKind(p *pkgState) string {
	seen := map[string]bool{}
	for _, name := range p.order {
		seen[kind(name)] = true
	}
	for _, k := range []string{"reliability", "acceptance"} {
		if len(seen) == 1 && seen[k] {
			return k
		}
	}
	if strings.HasSuffix(p.name, "/internal/e2e") {
		return "reliability"
	}
	return "unit"
}

func printSummary(w io.Writer, runs []*run, mainLeg string, skipped []string) bool {
	lines, total, fails := summarize(runs, mainLeg, skipped)
	if len(fails) > 0 {
		fmt.Fprintf(w, "\n=== %d failures\n", len(fails))
		for _, f := range fails {
			where := short(f.pkg)
			if f.name != "" {
				where += " " + f.name
			}
			if f.label != "" {
				where += " [" + f.label + "]"
			}
			fmt.Fprintf(w, "\n--- FAIL %s", where)
			if f.why != "" {
				fmt.Fprintf(w, ": %s", f.why)
			}
			fmt.Fprintln(w)
			for _, l := range f.output {
				fmt.Fprintln(w, "    "+l)
			}
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "failed:")
		for _, f := range fails {
			fmt.Fprintf(w, "  %s %s\n", short(f.pkg), f.name)
		}
	}
	fmt.Fprintln(w)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, total.String())
	return total.fail == 0 && len(fails) == 0
}

// trimPrefix is left out of package names in what is printed.
var trimPrefix string

func short(pkg string) string { return strings.TrimPrefix(pkg, trimPrefix) }

// modulePath reads the module path from a go.mod file; "" when there is none.
func modulePath(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ", ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func realMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("testsummary", flag.ContinueOnError)
	fl.SetOutput(stderr)
	progress := fl.Bool("progress", false, "read a go test -json stream on stdin and print a line per package")
	out := fl.String("o", "", "with -progress: save the stream to this file")
	label := fl.String("label", "", "with -progress: the label of the stream in its own summary")
	module := fl.String("module", modulePath("go.mod"), "module path left out of package names (default: from ./go.mod)")
	mainLeg := fl.String("main-leg", "", "the CLI the unlabelled stream ran under: it gets a leg line too")
	var skipped stringList
	fl.Var(&skipped, "skipped", "label=why of a leg that did not run (repeatable): a SKIPPED leg line")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	trimPrefix = ""
	if *module != "" {
		trimPrefix = *module + "/"
	}
	if *progress {
		return runProgress(stdin, stdout, stderr, *out, *label)
	}
	if fl.NArg() == 0 {
		fmt.Fprintln(stderr, "usage: testsummary -progress [-o file] < stream, or testsummary [label=]file...")
		return 2
	}
	var runs []*run
	for _, arg := range fl.Args() {
		lbl, file := "", arg
		if i := strings.LastIndex(arg, "="); i >= 0 {
			lbl, file = arg[:i], arg[i+1:]
		}
		f, err := os.Open(file)
		if err != nil {
			fmt.Fprintln(stderr, "testsummary:", err)
			return 2
		}
		r, err := read(f, lbl, nil, nil)
		f.Close()
		if err != nil {
			fmt.Fprintln(stderr, "testsummary:", err)
			return 2
		}
		if len(r.order) == 0 {
			// A stream without a single package: go test did not run (or its output is lost).
			fmt.Fprintf(stderr, "testsummary: %s holds no test results\n", file)
			r.pkg("(no results in " + file + ")")
		}
		runs = append(runs, r)
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].label == "" && runs[j].label != "" })
	if !printSummary(stdout, runs, *mainLeg, skipped) {
		return 1
	}
	return 0
}

// runProgress is -progress: it reads one go test -json stream on stdin, prints a line per
// package, optionally saves the stream to out, and answers the exit status.
func runProgress(stdin io.Reader, stdout, stderr io.Writer, out, label string) int {
	var copyTo io.Writer
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			fmt.Fprintln(stderr, "testsummary:", err)
			return 2
		}
		defer f.Close()
		copyTo = f
	}
	r, err := read(stdin, label, copyTo, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "testsummary:", err)
		return 2
	}
	if _, total, fails := summarize([]*run{r}, "", nil); total.fail > 0 || len(fails) > 0 {
		return 1
	}
	return 0
}
