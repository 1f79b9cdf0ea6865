package provider

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// TestDocsIndex_listsEveryServedObject: docs/index.md (generated from
// templates/index.md.tmpl) and the README's documentation list link every object the
// provider serves, read from its own schema as Terraform gets it (resources, data sources,
// list resources), and every guide in docs/guides, so that a new object or guide cannot be
// left out of the landing pages.
func TestDocsIndex_listsEveryServedObject(t *testing.T) {
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Fatalf("schema: %s: %s", d.Summary, d.Detail)
	}
	// kind, the docs/ subdirectory, and the type names served.
	kinds := []struct {
		kind, dir string
		names     []string
	}{
		{"resource", "resources", sortedSchemaNames(resp.ResourceSchemas)},
		{"data source", "data-sources", sortedSchemaNames(resp.DataSourceSchemas)},
		{"list resource", "list-resources", sortedSchemaNames(resp.ListResourceSchemas)},
	}
	if len(kinds[0].names) == 0 || len(kinds[1].names) < 2 || len(kinds[2].names) == 0 {
		t.Fatalf("the schema serves %v: the test would prove too little", kinds)
	}
	root := filepath.Join("..", "..")
	index := readDoc(t, filepath.Join(root, "docs", "index.md"))
	readme := readDoc(t, filepath.Join(root, "README.md"))
	for _, k := range kinds {
		for _, name := range k.names {
			page := k.dir + "/" + strings.TrimPrefix(name, "proxy_") + ".md"
			if _, err := os.Stat(filepath.Join(root, "docs", page)); err != nil {
				t.Errorf("%s %s is served but docs/%s does not exist", k.kind, name, page)
			}
			if want := k.kind + " [`" + name + "`](" + page + ")"; !strings.Contains(index, want) {
				t.Errorf("docs/index.md does not list the %s %s: want a line with %q (edit templates/index.md.tmpl)", k.kind, name, want)
			}
			if want := "(docs/" + page + ")"; !strings.Contains(readme, want) {
				t.Errorf("the README's documentation list does not link the %s %s (%s)", k.kind, name, want)
			}
		}
	}
	guides, err := filepath.Glob(filepath.Join(root, "docs", "guides", "*.md"))
	if err != nil || len(guides) == 0 {
		t.Fatalf("no guide in docs/guides (%v): the test would prove nothing", err)
	}
	for _, g := range guides {
		page := "guides/" + filepath.Base(g)
		if !strings.Contains(index, "]("+page+")") {
			t.Errorf("docs/index.md does not link the guide %s (edit templates/index.md.tmpl)", page)
		}
		if !strings.Contains(readme, "](docs/"+page+")") {
			t.Errorf("the README's documentation list does not link the guide %s", page)
		}
	}
}

func sortedSchemaNames(m map[string]*tfprotov6.Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDocsIndex_upgradeFrom010: docs/index.md and the README say what the first apply of a
// 0.1.0 state does (one in-place update recording smbios_uuid) under the warning the plan
// really shows (summaryBinding), and how to check the VM first (adversary finding B4).
func TestDocsIndex_upgradeFrom010(t *testing.T) {
	for _, file := range []string{filepath.Join("..", "..", "docs", "index.md"), filepath.Join("..", "..", "README.md")} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, section, ok := strings.Cut(string(b), "\n## Upgrading from 0.1.0\n")
		if !ok {
			t.Errorf("%s has no section \"Upgrading from 0.1.0\"", file)
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		for _, want := range []string{"smbios_uuid", "in-place update", summaryBinding, "qm config <vmid>", "proxy_vm_power"} {
			if !strings.Contains(strings.Join(strings.Fields(section), " "), want) {
				t.Errorf("%s, \"Upgrading from 0.1.0\", does not say %q", file, want)
			}
		}
	}
}
