package reporefs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeRepo is a small repository with a design record, good and bad references.
const fakeRepo = "testdata/repo"

func scanFake(t *testing.T) []Finding {
	t.Helper()
	rec, err := LoadRecord(fakeRepo)
	if err != nil {
		t.Fatal(err)
	}
	files, err := WalkFiles(fakeRepo)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Scan(fakeRepo, files, rec)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func findingsIn(fs []Finding, file string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.File == file {
			out = append(out, f)
		}
	}
	return out
}

func TestLoadRecord_factsHeadingsAndADRs(t *testing.T) {
	rec, err := LoadRecord(fakeRepo)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"listing-lag", "clone-lock"} {
		if !rec.Facts[id] {
			t.Errorf("fact %s not loaded: %v", id, rec.Facts)
		}
	}
	for _, id := range []string{"seed-before-destroy", "delete-steps"} {
		if !rec.Decisions[id] {
			t.Errorf("decision %s not loaded: %v", id, rec.Decisions)
		}
	}
	if len(rec.Facts) != 2 || len(rec.Decisions) != 2 {
		t.Errorf("facts %v, decisions %v: want exactly 2 of each", rec.Facts, rec.Decisions)
	}
}

func TestLoadRecord_duplicateFactFails(t *testing.T) {
	dir := t.TempDir()
	design := filepath.Join(dir, "docs", "design")
	if err := os.MkdirAll(design, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "### fact: listing-lag\none\n\n### fact: listing-lag\ntwo\n"
	if err := os.WriteFile(filepath.Join(design, "facts.md"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRecord(dir); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("LoadRecord = %v, want a duplicate definition error", err)
	}
}

func TestScan_resolvedReferencesPass(t *testing.T) {
	got := scanFake(t)
	for _, file := range []string{"internal/x/good.go", "testdata/good_capture.json", "testdata/reconstruction.json",
		"docs/design/facts.md", "docs/design/operations.md", "docs/design/adr/0001-seed-before-destroy.md"} {
		if fs := findingsIn(got, file); len(fs) != 0 {
			t.Errorf("%s: want no finding, got %v", file, fs)
		}
	}
}

func TestScan_unresolvedReferencesFailNamingFileAndLine(t *testing.T) {
	got := findingsIn(scanFake(t), "internal/x/bad.go")
	// The two ids of line 3, each with its kind.
	for _, w := range []struct{ kind, id string }{{"fact", "listing-lags"}, {"decision", "seed-after-destroy"}} {
		if !slices.ContainsFunc(got, func(f Finding) bool {
			return f.Line == 3 && strings.HasPrefix(f.Msg, w.kind+": "+w.id+" does not resolve")
		}) {
			t.Errorf("no finding on internal/x/bad.go:3 for the %s %s in %v", w.kind, w.id, got)
		}
	}
	if n := len(findingsIn(got, "internal/x/bad.go")); n < 2 {
		t.Errorf("%d findings, want at least the two unresolved ids", n)
	}
}

func TestScan_forbiddenFormsFail(t *testing.T) {
	got := findingsIn(scanFake(t), "internal/x/bad.go")
	// Line 4 holds one of each numbered form, line 5 the outside documents.
	byLine := map[int][]string{}
	for _, f := range got {
		byLine[f.Line] = append(byLine[f.Line], f.Msg)
	}
	if n := len(byLine[4]); n != 8 {
		t.Errorf("line 4: %d findings, want 8 (one per form): %q", n, byLine[4])
	}
	if n := len(byLine[5]); n != 2 {
		t.Errorf("line 5: %d findings, want 2 (the shared folder and the outside document): %q", n, byLine[5])
	}
	if n := len(byLine[6]); n != 2 {
		t.Errorf("line 6: %d findings, want 2 (two tests named after outside numbers): %q", n, byLine[6])
	}
	for _, m := range append(append(byLine[4], byLine[5]...), byLine[6]...) {
		if !strings.Contains(m, "outside the repository") {
			t.Errorf("message %q does not say what is wrong", m)
		}
	}
}

func TestScan_macAddressIsNotAFact(t *testing.T) {
	fs := ScanFile(fakeRepo, "x.go", []byte("// net0 virtio=BC:24:11:F1:48:83 and UPID:pv1-1:0000F1AB:\n"), Record{})
	if len(fs) != 0 {
		t.Errorf("findings %v, want none", fs)
	}
}

func TestScan_factBeforeAColonIsAFact(t *testing.T) {
	fact := "F" + "6" // split, so that this file does not cite it
	fs := ScanFile(fakeRepo, "x.go", []byte("\tt.Skip(\""+fact+": no answer\") // virtio=F1:48:83:AA:BB:CC\n"), Record{})
	if len(fs) != 1 || !strings.Contains(fs[0].Msg, `"`+fact+`"`) {
		t.Errorf("findings %v, want one, for the numbered fact before a colon", fs)
	}
}

func TestScan_ignoreMarkerSkipsTheLine(t *testing.T) {
	content := []byte("TOOLS ?= ../shared/tools # reporefs:ignore (a path beside the clone)\nX ?= ../shared/x\n")
	fs := ScanFile(fakeRepo, "GNUmakefile", content, Record{})
	if len(fs) != 1 || fs[0].Line != 2 {
		t.Errorf("findings %v, want only line 2", fs)
	}
}

func TestScan_brokenMarkdownLinkFails(t *testing.T) {
	got := findingsIn(scanFake(t), "README.md")
	if len(got) != 1 || got[0].Line != 3 || !strings.Contains(got[0].Msg, "docs/design/missing.md does not exist") {
		t.Errorf("README.md findings %v, want exactly the missing page on line 3", got)
	}
}

// TestScan_readmeSectionMustExist: a pointer at a README section names a heading the
// README has; one that names none is a finding on its line.
func TestScan_readmeSectionMustExist(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("# x\n\n## Against a real cluster\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	content := []byte("# See the README, \"Against a real cluster\".\n# See the README, \"Releases and mirrors\".\n")
	fs := ScanFile(root, "scripts/release.sh", content, Record{})
	if len(fs) != 1 || fs[0].Line != 2 || !strings.Contains(fs[0].Msg, `"Releases and mirrors"`) {
		t.Errorf("findings %v, want only line 2's missing section", fs)
	}
}

func TestScan_captureFixtureMustNameItsFact(t *testing.T) {
	got := findingsIn(scanFake(t), "testdata/bad_capture.json")
	if len(got) != 1 || !strings.Contains(got[0].Msg, "must name the fact") {
		t.Errorf("bad_capture findings %v, want one asking for the fact", got)
	}
}

// TestRepository_referencesResolve is the repository's check: every reference resolves
// inside the repository and no forbidden form remains.
func TestRepository_referencesResolve(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := Root(wd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Check(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		t.Error(f)
	}
	if len(got) > 0 {
		t.Logf("%d references do not resolve; the design record is in %s", len(got), DesignDir)
	}
}
