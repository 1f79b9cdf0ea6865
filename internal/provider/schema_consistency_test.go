package provider

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// TestSchemas_oneForm: every object the provider serves (provider, resource, data sources,
// list resource) describes itself and each attribute and block in markdown, and every
// object with timeouts has them in the same form, a block.
func TestSchemas_oneForm(t *testing.T) {
	srv, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Fatalf("schema diagnostic: %s: %s", d.Summary, d.Detail)
	}
	objects := map[string]*tfprotov6.Schema{"provider": resp.Provider}
	for k, s := range resp.ResourceSchemas {
		objects["resource "+k] = s
	}
	for k, s := range resp.DataSourceSchemas {
		objects["data source "+k] = s
	}
	for k, s := range resp.ListResourceSchemas {
		objects["list resource "+k] = s
	}
	if len(resp.ListResourceSchemas) == 0 || len(resp.DataSourceSchemas) < 2 || len(resp.ResourceSchemas) == 0 {
		t.Fatalf("schemas: %d resources, %d data sources, %d list resources", len(resp.ResourceSchemas), len(resp.DataSourceSchemas), len(resp.ListResourceSchemas))
	}
	var bad []string
	var timeoutsForms []string
	for name, s := range objects {
		check := func(where, desc string, kind tfprotov6.StringKind) {
			if strings.TrimSpace(desc) == "" || kind != tfprotov6.StringKindMarkdown {
				bad = append(bad, name+" "+where)
			}
		}
		var walk func(prefix string, b *tfprotov6.SchemaBlock)
		walk = func(prefix string, b *tfprotov6.SchemaBlock) {
			for _, a := range b.Attributes {
				check(prefix+a.Name, a.Description, a.DescriptionKind)
				if a.Name == "timeouts" {
					timeoutsForms = append(timeoutsForms, name+": attribute")
				}
				if a.NestedType != nil {
					for _, na := range a.NestedType.Attributes {
						check(prefix+a.Name+"."+na.Name, na.Description, na.DescriptionKind)
					}
				}
			}
			for _, nb := range b.BlockTypes {
				if nb.TypeName == "timeouts" {
					timeoutsForms = append(timeoutsForms, name+": block")
				}
				walk(prefix+nb.TypeName+".", nb.Block)
			}
		}
		if name != "provider" {
			check("(object)", s.Block.Description, s.Block.DescriptionKind)
		}
		walk("", s.Block)
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("described without markdown (or not at all): %s", strings.Join(bad, ", "))
	}
	sort.Strings(timeoutsForms)
	for _, f := range timeoutsForms {
		if !strings.HasSuffix(f, ": block") {
			t.Errorf("timeouts are not a block on every object: %v", timeoutsForms)
			break
		}
	}
	if len(timeoutsForms) < 3 {
		t.Errorf("timeouts on %v, want proxy_vm, proxy_health and proxy_vms", timeoutsForms)
	}
}
