package reporefs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Limits of the CHANGELOG: a release note a user reads, not a build log.
const (
	maxReleaseBullets = 30
	maxEntryChars     = 200
)

// TestChangelog_forUsers: every version heading has a link definition (Keep a Changelog);
// every entry is one line of at most maxEntryChars, scoped as **<object>:**; a release has at
// most maxReleaseBullets entries.
func TestChangelog_forUsers(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := Root(wd)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkChangelog(t, string(b))
}

func checkChangelog(t *testing.T, doc string) {
	t.Helper()
	headingRE := regexp.MustCompile(`(?m)^## \[([^\]]+)\]`)
	versions := headingRE.FindAllStringSubmatch(doc, -1)
	if len(versions) < 2 {
		t.Fatalf("the CHANGELOG has %d version headings: want [Unreleased] and at least one release", len(versions))
	}
	for _, v := range versions {
		if !regexp.MustCompile(`(?m)^\[` + regexp.QuoteMeta(v[1]) + `\]: \S+`).MatchString(doc) {
			t.Errorf("the CHANGELOG's heading [%s] has no link definition ([%s]: <url>)", v[1], v[1])
		}
	}
	scopeRE := regexp.MustCompile(`^- \*\*[^*]+:\*\* \S`)
	var version string
	bullets := map[string]int{}
	for i, line := range strings.Split(doc, "\n") {
		if m := headingRE.FindStringSubmatch(line); m != nil {
			version = m[1]
			continue
		}
		switch {
		case strings.HasPrefix(line, "- "):
			bullets[version]++
			if len(line) > maxEntryChars {
				t.Errorf("CHANGELOG line %d (%s): %d characters, above %d", i+1, version, len(line), maxEntryChars)
			}
			if !scopeRE.MatchString(line) {
				t.Errorf("CHANGELOG line %d (%s): an entry starts with its scope, **<object>:**: %q", i+1, version, line)
			}
		case strings.HasPrefix(line, "  ") && version != "":
			t.Errorf("CHANGELOG line %d (%s): an entry is one line; this continues or nests one: %q", i+1, version, line)
		}
	}
	for v, n := range bullets {
		if n > maxReleaseBullets {
			t.Errorf("CHANGELOG [%s]: %d entries, above %d", v, n, maxReleaseBullets)
		}
	}
}

// TestChangelog_checkCatchesBadEntries: the check sees a long entry, an unscoped one, a
// continuation line and a heading without its link.
func TestChangelog_checkCatchesBadEntries(t *testing.T) {
	bad := "## [Unreleased]\n\n- unscoped entry\n- **proxy_vm:** " + strings.Repeat("x", 200) + "\n  continued\n\n## [0.1.0] - 2026-12-02\n\n- **proxy_vm:** fine\n\n[Unreleased]: https://example.com\n"
	ft := &testing.T{}
	done := make(chan struct{})
	go func() { defer close(done); checkChangelog(ft, bad) }()
	<-done
	if !ft.Failed() {
		t.Error("checkChangelog accepted a CHANGELOG with an unscoped entry, a long one, a continuation line and a heading without a link")
	}
}
