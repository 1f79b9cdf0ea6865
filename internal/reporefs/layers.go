package reporefs

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Layer is what one package's production code (its non-test files) may import from this
// module: Allowed lists the only module packages it may import (nil: any but Forbidden),
// Forbidden those it must not. docs/design/architecture.md explains the table.
type Layer struct {
	Allowed   []string
	Forbidden []string
}

// Layers is the architecture of docs/design/architecture.md, by package path relative to
// the module. A package missing from the table is not checked.
var Layers = map[string]Layer{
	"internal/pveapi":  {Allowed: []string{}},
	"internal/nocloud": {Allowed: []string{}},
	"internal/fixture": {Allowed: []string{}},
	"internal/pvesim":  {Allowed: []string{}},
	"internal/proxmox": {Allowed: []string{"internal/pveapi", "internal/nocloud"}},
	"internal/provider": {Forbidden: []string{"internal/pvesim", "internal/fixture", "internal/e2e",
		"internal/tfrun", "internal/bench"}},
	"internal/provider/validators": {Allowed: []string{}},
	// The harness the reliability suite and the benchmark share.
	"internal/tfrun":             {Allowed: []string{"internal/pvesim"}},
	"internal/bench":             {Allowed: []string{"internal/tfrun", "internal/pvesim", "internal/pveapi"}},
	"internal/reporefs":          {Allowed: []string{}},
	"internal/tools/testsummary": {Allowed: []string{}},
	// Asks the provider for its schema in-process, for the docs.
	"internal/tools/providerschema": {Allowed: []string{"internal/provider"}},
}

// CheckLayers reports every import of a module package that the table forbids, as
// "file: pkg imports other".
func CheckLayers(root string) ([]string, error) {
	module := modulePath(filepath.Join(root, "go.mod"))
	if module == "" {
		return nil, fmt.Errorf("no module path in %s", filepath.Join(root, "go.mod"))
	}
	var out []string
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		layer, ok := Layers[pkg]
		if !ok {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			other, ok := strings.CutPrefix(ip, module+"/")
			if !ok {
				continue
			}
			if !layer.allows(other) {
				name := path.Join(pkg, filepath.Base(p))
				out = append(out, fmt.Sprintf("%s: %s imports %s, which docs/design/architecture.md does not allow", name, pkg, other))
			}
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

func (l Layer) allows(other string) bool {
	for _, f := range l.Forbidden {
		if other == f || strings.HasPrefix(other, f+"/") {
			return false
		}
	}
	if l.Allowed == nil {
		return true
	}
	for _, a := range l.Allowed {
		if other == a {
			return true
		}
	}
	return false
}

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
