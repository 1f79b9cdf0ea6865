package reporefs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocs_testedCLIs holds docs/index.md's table of tested CLIs to what `make test` runs:
// the GNUmakefile's TF_BASE (the terraform on PATH in CI, every test) and each TF_MATRIX leg
// in order, the TF_LEG_SAMPLED ones described as a sample, the others as every acceptance
// test, and those of TF_LEG_E2E as naming the install tests too. A version added to the
// matrix, dropped from it, or changed, or a leg run otherwise than the table says, fails here
// until the docs say the same.
func TestDocs_testedCLIs(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := Root(wd)
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "GNUmakefile"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := testedCLIs(string(mk))
	if err != nil {
		t.Fatal(err)
	}
	// The prose names the first tested version too (the installation section, the start of
	// the table's section): the TF_BASE version, never an older one.
	base := regexp.MustCompile(`(?m)^TF_BASE\s*:=\s*terraform-(\d+\.\d+\.\d+)`).FindStringSubmatch(string(mk))
	if base == nil {
		t.Fatal("the GNUmakefile has no TF_BASE := terraform-<x.y.z>")
	}
	for _, want := range []string{"works with Terraform " + base[1] + " and later", "tested from Terraform " + base[1]} {
		if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), want) {
			t.Errorf("docs/index.md does not say %q (TF_BASE is terraform-%s)", want, base[1])
		}
	}
	if strings.Contains(string(doc), "Terraform 1.5 and later") {
		t.Error("docs/index.md says Terraform 1.5 and later: the tested range starts at TF_BASE")
	}
	got := cliTable(string(doc))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/index.md's table of tested CLIs says\n  %s\nthe GNUmakefile runs\n  %s\n(change the table in templates/index.md.tmpl and run make generate)",
			strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestDocs_testedCLIsCatchesADrift: the comparison sees a leg added, a version changed and a
// leg sampled that the table runs in full.
func TestDocs_testedCLIsCatchesADrift(t *testing.T) {
	mk := "TF_BASE        := terraform-1.11.4\nTF_MATRIX      ?= terraform-1.15.9 terraform-1.16.3 tofu-1.12.6\n" +
		"TF_LEG_SAMPLED ?= terraform-1.15.9\nTF_LEG_E2E     ?= tofu-1.12.6\n"
	doc := "| CLI | Version | Tests run |\n|---|---|---|\n" +
		"| Terraform | 1.11.4 | every test, with the race detector |\n" +
		"| Terraform | 1.15.9 | a sample: this and that |\n" +
		"| Terraform | 1.16.3 | every acceptance test |\n" +
		"| OpenTofu | 1.12.6 | every acceptance test, and the install tests |\n"
	want, err := testedCLIs(mk)
	if err != nil {
		t.Fatal(err)
	}
	if got := cliTable(doc); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("a matching table compares unequal: %v vs %v", got, want)
	}
	for name, mk := range map[string]string{
		"leg added":       strings.Replace(mk, "tofu-1.12.6\nTF_LEG_SAMPLED", "tofu-1.12.6 terraform-1.17.0\nTF_LEG_SAMPLED", 1),
		"version changed": strings.Replace(mk, "tofu-1.12.6\nTF_LEG_SAMPLED", "tofu-1.12.7\nTF_LEG_SAMPLED", 1),
		"base changed":    strings.Replace(mk, "terraform-1.11.4", "terraform-1.12.0", 1),
		"sampled":         strings.Replace(mk, "TF_LEG_SAMPLED ?= terraform-1.15.9", "TF_LEG_SAMPLED ?= terraform-1.15.9 terraform-1.16.3", 1),
		"e2e moved":       strings.Replace(mk, "TF_LEG_E2E     ?= tofu-1.12.6", "TF_LEG_E2E     ?= terraform-1.16.3", 1),
		"e2e leg sampled": strings.Replace(mk, "TF_LEG_SAMPLED ?= terraform-1.15.9", "TF_LEG_SAMPLED ?= terraform-1.15.9 tofu-1.12.6", 1),
	} {
		want, err := testedCLIs(mk)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(cliTable(doc), "|") == strings.Join(want, "|") {
			t.Errorf("%s: the table still compares equal", name)
		}
	}
}

// testedCLIs reads TF_BASE, TF_MATRIX, TF_LEG_SAMPLED and TF_LEG_E2E from the GNUmakefile
// and returns one "CLI version: what runs" line per leg.
func testedCLIs(mk string) ([]string, error) {
	vars := map[string][]string{}
	for _, name := range []string{"TF_BASE", "TF_MATRIX", "TF_LEG_SAMPLED", "TF_LEG_E2E"} {
		m := regexp.MustCompile(`(?m)^` + name + `\s*[:?]?=\s*(.*)$`).FindStringSubmatch(mk)
		if m == nil {
			return nil, fmt.Errorf("the GNUmakefile does not set %s", name)
		}
		vars[name] = strings.Fields(m[1])
	}
	if len(vars["TF_BASE"]) != 1 {
		return nil, fmt.Errorf("TF_BASE is %v, want one CLI", vars["TF_BASE"])
	}
	sampled, e2e := map[string]bool{}, map[string]bool{}
	for _, s := range vars["TF_LEG_SAMPLED"] {
		sampled[s] = true
	}
	for _, s := range vars["TF_LEG_E2E"] {
		e2e[s] = true
	}
	var out []string
	for i, leg := range append(vars["TF_BASE"], vars["TF_MATRIX"]...) {
		cli, ver, ok := strings.Cut(leg, "-")
		if !ok {
			return nil, fmt.Errorf("%q is not <cli>-<version>", leg)
		}
		name := map[string]string{"terraform": "Terraform", "tofu": "OpenTofu"}[cli]
		if name == "" {
			return nil, fmt.Errorf("%q: unknown CLI %q", leg, cli)
		}
		what := "every acceptance test"
		switch {
		case i == 0:
			what = "every test"
		case sampled[leg] && e2e[leg]:
			what = "a sample and the install tests"
		case sampled[leg]:
			what = "a sample"
		case e2e[leg]:
			what = "every acceptance test and the install tests"
		}
		out = append(out, name+" "+ver+": "+what)
	}
	return out, nil
}

// cliTable reads the docs' table of tested CLIs (the rows after its "| CLI | Version | Tests
// run |" header) as the same lines.
func cliTable(doc string) []string {
	var out []string
	in := false
	for line := range strings.SplitSeq(doc, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "| CLI | Version | Tests run |":
			in = true
			continue
		case !in:
			continue
		case !strings.HasPrefix(line, "|"):
			return out
		case strings.HasPrefix(line, "|---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			out = append(out, "malformed row: "+line)
			continue
		}
		what := strings.TrimSpace(cells[2])
		switch {
		case strings.HasPrefix(what, "every acceptance test") && strings.Contains(what, "install"):
			what = "every acceptance test and the install tests"
		case strings.HasPrefix(what, "every acceptance test"):
			what = "every acceptance test"
		case strings.HasPrefix(what, "every test"):
			what = "every test"
		case strings.HasPrefix(what, "a sample") && strings.Contains(what, "install"):
			what = "a sample and the install tests"
		case strings.HasPrefix(what, "a sample"):
			what = "a sample"
		}
		out = append(out, strings.TrimSpace(cells[0])+" "+strings.TrimSpace(cells[1])+": "+what)
	}
	return out
}
