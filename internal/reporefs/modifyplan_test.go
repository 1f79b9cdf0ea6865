package reporefs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxModifyPlanLines bounds proxy_vm's ModifyPlan: the loop over the facets plus the
// resource-level checks, each of those a call (decision: code-conventions).
const maxModifyPlanLines = 60

// TestRepository_modifyPlanShort fails when proxy_vm's ModifyPlan, counted from its func
// line to its closing brace, exceeds maxModifyPlanLines.
func TestRepository_modifyPlanShort(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := Root(wd)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "internal/provider/proxy_vm_resource.go")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := methodLines(t, file, src, "proxyVMResource", "ModifyPlan")
	if !ok {
		t.Fatalf("%s: no method (*proxyVMResource).ModifyPlan; update this test if it moved", file)
	}
	if n > maxModifyPlanLines {
		t.Errorf("(*proxyVMResource).ModifyPlan is %d lines, more than %d: move a resource-level step into a helper or onto its facet",
			n, maxModifyPlanLines)
	}
}

func TestMethodLines_countsFromFuncToClosingBrace(t *testing.T) {
	src := "package x\n\ntype r struct{}\n\n// M is documented.\nfunc (x *r) M() {\n" +
		strings.Repeat("\t_ = 1\n", maxModifyPlanLines) + "}\n\nfunc M() {}\n"
	n, ok := methodLines(t, "x.go", []byte(src), "r", "M")
	if !ok || n != maxModifyPlanLines+2 {
		t.Errorf("methodLines = %d, %v; want %d, true", n, ok, maxModifyPlanLines+2)
	}
	if _, ok := methodLines(t, "x.go", []byte(src), "s", "M"); ok {
		t.Error("methodLines found M on a type that has none")
	}
}

// methodLines is the number of lines of method name on recv (a pointer or value receiver)
// in src, from its func line to its closing brace, and whether src declares it.
func methodLines(t *testing.T, file string, src []byte, recv, name string) (int, bool) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || fd.Name.Name != name || len(fd.Recv.List) != 1 {
			continue
		}
		typ := fd.Recv.List[0].Type
		if st, ok := typ.(*ast.StarExpr); ok {
			typ = st.X
		}
		if id, ok := typ.(*ast.Ident); ok && id.Name == recv {
			return fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1, true
		}
	}
	return 0, false
}
