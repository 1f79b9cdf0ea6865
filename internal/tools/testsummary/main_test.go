package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeModule is a module whose tests pass, fail, skip, panic, and a package that does not
// build, so that the summary is checked against what `go test -json` really prints.
var fakeModule = map[string]string{
	"go.mod": "module example.com/fake\n\ngo 1.22\n",
	"a/a_test.go": `package a

import "testing"

func TestUnitPasses(t *testing.T) {}
func TestUnitSkips(t *testing.T) { t.Skip("not here") }
func TestUnitTable(t *testing.T) {
	for _, name := range []string{"good", "bad"} {
		t.Run(name, func(t *testing.T) {
			if name == "bad" {
				t.Error("row bad failed on purpose")
			}
		})
	}
}
func TestAccPasses(t *testing.T) {}
func TestAccFails(t *testing.T) { t.Fatal("acceptance failed on purpose") }
`,
	"b/b_test.go": `package b

import "testing"

func TestE2E_passes(t *testing.T) {}
func TestE2E_panics(t *testing.T) { panic("boom on purpose") }
`,
	"c/c_test.go": `package c

import "testing"

func TestDoesNotBuild(t *testing.T) { undefinedOnPurpose() }
`,
	"d/d.go": "package d\n",
}

func goTestJSON(t *testing.T) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs a module's tests")
	}
	dir := t.TempDir()
	for name, body := range fakeModule {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	out, err := cmd.Output()
	if err == nil {
		t.Fatal("go test passed; the fake module must fail")
	}
	return out
}

func TestSummary_realGoTestJSON(t *testing.T) {
	stream := goTestJSON(t)
	var progress, saved bytes.Buffer
	if rc := realMainProgress(t, stream, &progress, &saved); rc != 1 {
		t.Errorf("progress mode exit %d, want 1", rc)
	}
	for _, want := range []string{"FAIL  example.com/fake/a", "FAIL  example.com/fake/b", "FAIL  example.com/fake/c", "-     example.com/fake/d (no tests)"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	if !bytes.Equal(saved.Bytes(), stream) {
		t.Error("the saved stream differs from the input")
	}

	file := filepath.Join(t.TempDir(), "main.json")
	if err := os.WriteFile(file, stream, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if rc := realMain([]string{file}, nil, &out, &errOut); rc != 1 {
		t.Errorf("summary exit %d, want 1; stderr %s", rc, errOut.String())
	}
	got := out.String()
	lines := strings.Split(strings.TrimRight(got, "\n"), "\n")
	// unit: TestUnitPasses, TestUnitTable (failed), TestUnitSkips, plus package c (does not build).
	wantTail := []string{
		"unit: 1 passed, 2 failed, 1 skipped",
		"acceptance: 1 passed, 1 failed, 0 skipped",
		"reliability: 1 passed, 1 failed, 0 skipped",
		"3 passed, 4 failed, 1 skipped",
	}
	if len(lines) < len(wantTail) || strings.Join(lines[len(lines)-4:], "\n") != strings.Join(wantTail, "\n") {
		t.Errorf("summary ends with\n%s\nwant\n%s", strings.Join(lines[max(0, len(lines)-4):], "\n"), strings.Join(wantTail, "\n"))
	}
	for _, want := range []string{
		"--- FAIL example.com/fake/a TestUnitTable/bad", "row bad failed on purpose",
		"--- FAIL example.com/fake/a TestAccFails", "acceptance failed on purpose",
		"--- FAIL example.com/fake/b TestE2E_panics", "boom on purpose",
		"--- FAIL example.com/fake/c: the package failed without a failing test", "undefinedOnPurpose",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "FAIL example.com/fake/a TestUnitTable\n") {
		t.Error("the table is listed besides its failing row")
	}
}

func realMainProgress(t *testing.T, stream []byte, progress *bytes.Buffer, saved *bytes.Buffer) int {
	t.Helper()
	file := filepath.Join(t.TempDir(), "stream.json")
	rc := realMain([]string{"-progress", "-o", file}, bytes.NewReader(stream), progress, os.Stderr)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	saved.Write(b)
	return rc
}

const passingStream = `{"Action":"start","Package":"x/p"}
{"Action":"run","Package":"x/p","Test":"TestAccOne"}
{"Action":"pass","Package":"x/p","Test":"TestAccOne","Elapsed":0.1}
{"Action":"run","Package":"x/p","Test":"TestHelper"}
{"Action":"pass","Package":"x/p","Test":"TestHelper","Elapsed":0.1}
{"Action":"pass","Package":"x/p","Elapsed":0.3}
`

// timedStream is passingStream with event times 2m30s apart from first to last.
const timedStream = `{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"x/p"}
{"Time":"2026-01-01T10:00:01Z","Action":"run","Package":"x/p","Test":"TestAccOne"}
{"Time":"2026-01-01T10:02:00Z","Action":"pass","Package":"x/p","Test":"TestAccOne","Elapsed":119}
{"Time":"2026-01-01T10:02:00Z","Action":"run","Package":"x/p","Test":"TestHelper"}
{"Time":"2026-01-01T10:02:29.6Z","Action":"skip","Package":"x/p","Test":"TestHelper","Elapsed":0.1}
{"Time":"2026-01-01T10:02:30Z","Action":"pass","Package":"x/p","Elapsed":150}
`

// Each leg of the CLI matrix is one line with its counts over every kind and its time; the
// unlabelled run keeps its line per kind, and gets a leg line of its own with -main-leg; a
// leg that did not run is a SKIPPED line that does not fail the summary.
func TestSummary_labelledSecondRunIsItsOwnLine(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "main.json"), filepath.Join(dir, "tf.json")
	if err := os.WriteFile(first, []byte(passingStream), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, []byte(timedStream), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	args := []string{"-main-leg", "Terraform 1.11.4", "-skipped", "OpenTofu 1.12.6=the tool tofu-1.12 is missing",
		"Terraform 1.16.3=" + second, first}
	if rc := realMain(args, nil, &out, os.Stderr); rc != 0 {
		t.Fatalf("exit %d, want 0:\n%s", rc, out.String())
	}
	want := "\nunit: 1 passed, 0 failed, 0 skipped\n" +
		"acceptance: 1 passed, 0 failed, 0 skipped\n" +
		"reliability: 0 passed, 0 failed, 0 skipped\n" +
		"leg Terraform 1.11.4: 2 passed, 0 failed, 0 skipped in 0s (the runs above)\n" +
		"leg Terraform 1.16.3: 1 passed, 0 failed, 1 skipped in 2m30s\n" +
		"leg OpenTofu 1.12.6: SKIPPED (the tool tofu-1.12 is missing)\n" +
		"3 passed, 0 failed, 1 skipped\n"
	if out.String() != want {
		t.Errorf("summary\n%s\nwant\n%s", out.String(), want)
	}
}

func TestSummary_testThatNeverEndsFails(t *testing.T) {
	stream := `{"Action":"run","Package":"x/p","Test":"TestHangs"}
{"Action":"output","Package":"x/p","Test":"TestHangs","Output":"panic: test timed out after 1s\n"}
{"Action":"fail","Package":"x/p","Elapsed":1}
`
	r, err := read(strings.NewReader(stream), "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if printSummary(&out, []*run{r}, "", nil) {
		t.Error("summary reports success")
	}
	if !strings.Contains(out.String(), "TestHangs: started and never finished") || !strings.HasSuffix(out.String(), "\n0 passed, 1 failed, 0 skipped\n") {
		t.Errorf("summary:\n%s", out.String())
	}
}

func TestSummary_emptyStreamFails(t *testing.T) {
	file := filepath.Join(t.TempDir(), "empty.json")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if rc := realMain([]string{file}, nil, &out, &errOut); rc != 1 {
		t.Errorf("exit %d, want 1 for a stream without results", rc)
	}
	if !strings.HasSuffix(out.String(), "0 passed, 1 failed, 0 skipped\n") {
		t.Errorf("summary:\n%s", out.String())
	}
}
