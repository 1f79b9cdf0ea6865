package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/provider"
)

// TestProviderSchema_descriptionsNameRealThings: descriptions point at attributes that
// exist and say what the user will see.
func TestProviderSchema_descriptionsNameRealThings(t *testing.T) {
	var resp provider.SchemaResponse
	New("test")().Schema(context.Background(), provider.SchemaRequest{}, &resp)
	attrs := resp.Schema.GetAttributes()

	vm := proxyVMSchema(context.Background()).GetAttributes()
	if _, ok := vm["image"]; !ok {
		t.Fatal("proxy_vm has no image attribute (the test would prove nothing)")
	}
	if _, ok := vm["template"]; ok {
		t.Fatal("proxy_vm has a template attribute: update this test")
	}
	tmpl := attrs["templates"]
	for _, d := range []string{tmpl.GetDescription(), tmpl.GetMarkdownDescription()} {
		if strings.Contains(d, "template names") || !strings.Contains(d, "image") {
			t.Errorf("templates description %q: want the key named by proxy_vm's image (there is no template attribute)", d)
		}
	}
	ns := attrs["uid_namespace"]
	for _, d := range []string{ns.GetDescription(), ns.GetMarkdownDescription()} {
		for _, want := range []string{"VMID", "name", "random", "interrupted create"} {
			if !strings.Contains(d, want) {
				t.Errorf("uid_namespace description %q: want what it decides, including %q", d, want)
			}
		}
	}
	// That a resource owns only the VM it created or was given by import is said once, in
	// the index's section on uid_namespace, which the description no longer repeats.
	tmplIndex, err := os.ReadFile(filepath.Join("..", "..", "templates", "index.md.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(tmplIndex)
	if i := strings.Index(section, "## Several configurations on one cluster: `uid_namespace`"); i >= 0 {
		section = section[i:]
	} else {
		t.Fatal("templates/index.md.tmpl has no section on uid_namespace")
	}
	for _, want := range []string{"VMID", "random", "terraform import", "killed before Terraform saved"} {
		if !strings.Contains(section, want) {
			t.Errorf("the index's uid_namespace section does not say %q", want)
		}
	}
}
