package reporefs

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Layer is what one package's production code (its non-test files) may import from this
// module: Allowed lists the only module packages it may import; anything else fails.
// docs/design/architecture.md explains the table.
type Layer struct {
	Allowed []string
	// OnlyIn narrows an allowed import to the named files of the package (base names): the
	// provider builds the API client in provider.go and reads everything else of the
	// backend's error vocabulary from proxmox.
	OnlyIn map[string][]string
}

// Layers is the architecture of docs/design/architecture.md, by package path relative to
// the module ("." is the root package, main). Every package with production code is in the
// table: a package missing from it fails the check.
var Layers = map[string]Layer{
	".":                {Allowed: []string{"internal/provider"}},
	"internal/pveapi":  {Allowed: []string{}},
	"internal/nocloud": {Allowed: []string{}},
	"internal/fixture": {Allowed: []string{}},
	"internal/pvesim":  {Allowed: []string{}},
	"internal/proxmox": {Allowed: []string{"internal/pveapi", "internal/nocloud", "internal/seedname"}},
	// The seed ISOs' names, shared by the backend and the harness.
	"internal/seedname": {Allowed: []string{}},
	"internal/provider": {Allowed: []string{"internal/proxmox", "internal/pveapi",
		"internal/provider/validators"},
		OnlyIn: map[string][]string{"internal/pveapi": {"provider.go"}}},
	"internal/provider/validators": {Allowed: []string{}},
	// The harness the reliability suite and the benchmark share.
	"internal/tfrun":           {Allowed: []string{"internal/pvesim", "internal/seedname"}},
	"internal/bench":           {Allowed: []string{"internal/tfrun", "internal/pvesim", "internal/pveapi"}},
	"internal/bench/cmd/bench": {Allowed: []string{"internal/bench"}},
	// Runs the provider in process under the profiler, for make bench's profiles.
	"internal/bench/cmd/profprov": {Allowed: []string{"internal/provider"}},
	"internal/pvesim/cmd/pvesim":  {Allowed: []string{"internal/pvesim"}},
	"internal/reporefs":           {Allowed: []string{}},
	"internal/tools/testsummary":  {Allowed: []string{}},
	// Asks the provider for its schema in-process, for the docs.
	"internal/tools/providerschema": {Allowed: []string{"internal/provider"}},
}

// CheckLayers reports every import of a module package that the table does not allow, as
// "file: pkg imports other", and every package with production code the table does not
// list.
func CheckLayers(root string) ([]string, error) {
	module := modulePath(filepath.Join(root, "go.mod"))
	if module == "" {
		return nil, fmt.Errorf("no module path in %s", filepath.Join(root, "go.mod"))
	}
	var out []string
	unlisted := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && !isCodeDir(root, p) {
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
			if !unlisted[pkg] {
				unlisted[pkg] = true
				out = append(out, fmt.Sprintf("%s: %s is not in the import table of docs/design/architecture.md "+
					"(internal/reporefs.Layers)", path.Join(pkg, filepath.Base(p)), pkg))
			}
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
			name := path.Join(pkg, filepath.Base(p))
			switch {
			case !layer.allows(other):
				out = append(out, fmt.Sprintf("%s: %s imports %s, which docs/design/architecture.md does not allow", name, pkg, other))
			case !layer.allowsIn(other, filepath.Base(p)):
				out = append(out, fmt.Sprintf("%s: %s imports %s outside %s, which docs/design/architecture.md does not allow",
					name, pkg, other, strings.Join(layer.OnlyIn[other], ", ")))
			}
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

func (l Layer) allows(other string) bool {
	return slices.Contains(l.Allowed, other)
}

// allowsIn reports whether file (a base name) may make the allowed import other.
func (l Layer) allowsIn(other, file string) bool {
	files, narrowed := l.OnlyIn[other]
	return !narrowed || slices.Contains(files, file)
}

// isCodeDir reports whether the walk enters dir: the module's internal/ tree, but no
// testdata and no hidden directory.
func isCodeDir(root, dir string) bool {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return false
	}
	rel = filepath.ToSlash(rel)
	base := filepath.Base(dir)
	if base == "testdata" || strings.HasPrefix(base, ".") {
		return false
	}
	return rel == "internal" || strings.HasPrefix(rel, "internal/")
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
