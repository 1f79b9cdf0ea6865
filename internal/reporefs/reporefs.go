// Package reporefs checks that every reference in the repository resolves inside it.
//
// Comments, tests, fixtures and docs point at the design record in docs/design with
// "fact: <id>" (a "### fact: <id>" heading in any docs/design markdown file) or
// "decision: <id>" (an ADR docs/design/adr/NNNN-<id>.md, or a "### decision: <id>"
// heading). References to documents a reader of the repository does not have (a numbered
// spec entry, a numbered fact or review finding, a phase of an execution log, an issue
// number, files of a shared folder outside the repository) are forbidden forms. Relative
// links in markdown files must name a file that exists, and a testdata fixture labelled as
// a capture must name the fact it captures. A pointer at a README section by its heading
// (`the README, "Against a real cluster"`) must name a heading the README has.
//
// What is scanned: every file git tracks (or, outside a git checkout, every file under the
// root but .git and bin), except binary files, go.sum and this package's testdata (the
// checker's own bad examples). CHANGELOG.md and the generated docs are scanned too: their
// readers do not have outside documents either; history belongs in the commit log. A line
// that names a real path outside the repository (a tool directory beside the clone, say)
// and is not a citation carries the marker "reporefs:ignore" and is skipped.
package reporefs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// DesignDir is where the design record lives, relative to the repository root.
const DesignDir = "docs/design"

// ignoreMarker on a line exempts it from the check.
const ignoreMarker = "reporefs:ignore"

// selfTestdata holds the checker's own examples of bad references; it is never scanned.
const selfTestdata = "internal/reporefs/testdata/"

// Finding is one reference that does not resolve, or a forbidden form.
type Finding struct {
	File string // slash-separated, relative to the root
	Line int    // 1-based
	Msg  string
}

func (f Finding) String() string { return fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Msg) }

// Record is the set of ids the design record defines.
type Record struct {
	Facts     map[string]bool
	Decisions map[string]bool
}

var (
	reFactHeading     = regexp.MustCompile(`^#{2,6} fact: ([a-z0-9][a-z0-9-]*)\s*$`)
	reDecisionHeading = regexp.MustCompile(`^#{2,6} decision: ([a-z0-9][a-z0-9-]*)\s*$`)
	reADRFile         = regexp.MustCompile(`^[0-9]{4}-([a-z0-9][a-z0-9-]*)\.md$`)
	reRef             = regexp.MustCompile(`\b(fact|decision): ([A-Za-z0-9][A-Za-z0-9_-]*)`)
	reMDLink          = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// reReadmeSection is a pointer at a section of the README by its heading, as a comment
	// or a message writes it: `the README, "Against a real cluster"`, `README's "The simulator"`.
	reReadmeSection = regexp.MustCompile(`README(?:\.md)?(?:'s)?,? (?:section )?"([^"]+)"`)
	reCodeSpan      = regexp.MustCompile("`[^`]*`")
)

// LoadRecord reads the ids defined under root's docs/design.
func LoadRecord(root string) (Record, error) {
	rec := Record{Facts: map[string]bool{}, Decisions: map[string]bool{}}
	dir := filepath.Join(root, filepath.FromSlash(DesignDir))
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".md") {
			return nil
		}
		if filepath.Base(filepath.Dir(p)) == "adr" {
			if m := reADRFile.FindStringSubmatch(d.Name()); m != nil {
				if rec.Decisions[m[1]] {
					return fmt.Errorf("decision %q is defined twice (%s)", m[1], p)
				}
				rec.Decisions[m[1]] = true
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if m := reFactHeading.FindStringSubmatch(line); m != nil {
				if rec.Facts[m[1]] {
					return fmt.Errorf("fact %q is defined twice (%s)", m[1], p)
				}
				rec.Facts[m[1]] = true
			}
			if m := reDecisionHeading.FindStringSubmatch(line); m != nil {
				if rec.Decisions[m[1]] {
					return fmt.Errorf("decision %q is defined twice (%s)", m[1], p)
				}
				rec.Decisions[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		return Record{}, fmt.Errorf("reading the design record: %w", err)
	}
	if len(rec.Facts) == 0 {
		return Record{}, fmt.Errorf("no fact defined under %s", dir)
	}
	return rec, nil
}

// form is one forbidden way of referring to something outside the repository.
type form struct {
	re   *regexp.Regexp
	what string
	// skip reports whether the match at line[start:end] is not a reference after all.
	skip func(line string, start, end int) bool
}

// hexNeighbour: a fact-like token after a colon, or before a colon and a hex digit, is a byte
// of a MAC address or a UPID, not a fact (one followed by a colon and a word is still a fact).
func hexNeighbour(line string, start, end int) bool {
	return (start > 0 && line[start-1] == ':') ||
		(end+1 < len(line) && line[end] == ':' && strings.ContainsRune("0123456789abcdefABCDEF", rune(line[end+1])))
}

var forms = []form{
	{re: regexp.MustCompile(`(?i)\bentr(?:y|ies) [0-9]+`), what: "a numbered entry of a spec"},
	{re: regexp.MustCompile(`\bF[0-9]{1,2}\b`), what: "a numbered fact", skip: hexNeighbour},
	{re: regexp.MustCompile(`\bCR[0-9]+\b`), what: "a numbered review finding"},
	{re: regexp.MustCompile(`\bP[0-9]\b`), what: "a numbered review finding"},
	{re: regexp.MustCompile(`\bD[0-9]\b`), what: "a numbered decision of a review"},
	{re: regexp.MustCompile(`\bPhase [0-9]+\b`), what: "a phase of an execution log"},
	{re: regexp.MustCompile(`(?i)\bseeds? 00[0-9]\b`), what: "a seed file"},
	{re: regexp.MustCompile(`(?i)\bissues? #?[0-9]+\b`), what: "an issue number"},
	{re: regexp.MustCompile(`\bTest(?:F[0-9]{2}|Phase[0-9]+)_`), what: "a test named after a numbered fact or phase"},
	{re: regexp.MustCompile(`\.\./shared\b`), what: "a shared folder"},
	{re: regexp.MustCompile(`(?:^|[^\w/.-])((?:DESIGN|PVE-API|STYLE)\.md)\b`), what: "a design document"},
}

// Scan checks files (slash-separated paths relative to root) against rec.
func Scan(root string, files []string, rec Record) ([]Finding, error) {
	var out []Finding
	for _, f := range files {
		if skipped(f) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted in the work tree, still in the index
			}
			return nil, err
		}
		if binary(b) {
			continue
		}
		out = append(out, ScanFile(root, f, b, rec)...)
	}
	return out, nil
}

func skipped(f string) bool {
	return strings.HasPrefix(f, selfTestdata) || path.Base(f) == "go.sum"
}

// binary reports whether b looks like a binary file (a NUL byte in its first 8000 bytes).
func binary(b []byte) bool { return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 }

// ScanFile checks one file's content; name is its slash-separated path relative to root.
func ScanFile(root, name string, content []byte, rec Record) []Finding {
	var out []Finding
	isMD := strings.HasSuffix(name, ".md")
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.Contains(line, ignoreMarker) {
			continue
		}
		for _, fm := range forms {
			for _, m := range fm.re.FindAllStringSubmatchIndex(line, -1) {
				start, end := m[0], m[1]
				if len(m) > 2 && m[2] >= 0 {
					start, end = m[2], m[3]
				}
				if fm.skip != nil && fm.skip(line, start, end) {
					continue
				}
				out = append(out, Finding{name, n, fmt.Sprintf("%q cites %s outside the repository; say it in your own words "+
					"or point at %s (fact: <id>, decision: <id>)", line[start:end], fm.what, DesignDir)})
			}
		}
		for _, m := range reRef.FindAllStringSubmatch(line, -1) {
			kind, id := m[1], m[2]
			ids := rec.Facts
			if kind == "decision" {
				ids = rec.Decisions
			}
			if !ids[id] {
				out = append(out, Finding{name, n, fmt.Sprintf("%s: %s does not resolve: no such %s in %s", kind, id, kind, DesignDir)})
			}
		}
		for _, m := range reReadmeSection.FindAllStringSubmatch(line, -1) {
			if !readmeHasSection(root, m[1]) {
				out = append(out, Finding{name, n, fmt.Sprintf("the README has no section %q (no heading with that text)", m[1])})
			}
		}
		if isMD {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			} else if !fenced {
				out = append(out, checkLinks(root, name, n, reCodeSpan.ReplaceAllString(line, ""))...)
			}
		}
	}
	if strings.HasPrefix(name, "testdata/") && strings.HasSuffix(name, ".json") {
		out = append(out, checkFixture(name, content)...)
	}
	return out
}

// readmeHasSection reports whether root's README.md has a heading whose text is title.
func readmeHasSection(root, title string) bool {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if h := strings.TrimLeft(l, "#"); len(h) < len(l) && strings.TrimSpace(h) == title {
			return true
		}
	}
	return false
}

// checkLinks reports relative markdown links whose target file does not exist.
func checkLinks(root, name string, n int, line string) []Finding {
	var out []Finding
	for _, m := range reMDLink.FindAllStringSubmatch(line, -1) {
		target := m[1]
		if i := strings.IndexByte(target, '#'); i >= 0 {
			target = target[:i]
		}
		if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "/") {
			continue
		}
		p := path.Join(path.Dir(name), target)
		if strings.HasPrefix(p, "../") {
			out = append(out, Finding{name, n, fmt.Sprintf("link %s leaves the repository", m[1])})
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
			out = append(out, Finding{name, n, fmt.Sprintf("link %s: %s does not exist", m[1], p)})
		}
	}
	return out
}

// checkFixture requires a capture fixture's source to name the fact it captures.
func checkFixture(name string, content []byte) []Finding {
	var f struct {
		Source string `json:"source"`
	}
	if json.Unmarshal(content, &f) != nil || !strings.HasPrefix(f.Source, "capture") {
		return nil
	}
	if reRef.FindStringSubmatch(f.Source) == nil || !strings.Contains(f.Source, "fact: ") {
		return []Finding{{name, lineOf(content, `"source"`), "a capture's source must name the fact it captures (fact: <id>)"}}
	}
	return nil
}

func lineOf(content []byte, s string) int {
	i := bytes.Index(content, []byte(s))
	if i < 0 {
		return 1
	}
	return bytes.Count(content[:i], []byte("\n")) + 1
}

// Files lists the files to scan under root: git's tracked files, or WalkFiles when root
// is not a git checkout.
func Files(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z")
	cmd.Dir = root
	b, err := cmd.Output()
	if err != nil {
		return WalkFiles(root)
	}
	var files []string
	for f := range strings.SplitSeq(strings.TrimRight(string(b), "\x00"), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// WalkFiles lists every file under root but those in .git and bin, sorted.
func WalkFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == "bin" {
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, rel)
		return nil
	})
	sort.Strings(files)
	return files, err
}

// Root finds the repository root: the nearest directory above dir holding go.mod.
func Root(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// Check loads the record under root and scans every file; it is what the repository test
// runs.
func Check(ctx context.Context, root string) ([]Finding, error) {
	rec, err := LoadRecord(root)
	if err != nil {
		return nil, err
	}
	files, err := Files(ctx, root)
	if err != nil {
		return nil, err
	}
	return Scan(root, files, rec)
}
