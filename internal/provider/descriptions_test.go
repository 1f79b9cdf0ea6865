package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// The limits on what the generated pages show of the schemas: an attribute's
// description is one to three sentences, the mechanics live in the page's sections.
const (
	// maxDescription is the longest attribute description any page may carry.
	maxDescription = 400
	// maxMeanDescription is the longest mean attribute description of one page.
	maxMeanDescription = 160
	// maxFrontMatter is the longest description of a resource, data source, action or list
	// resource as a whole: the page's front matter and its first paragraph.
	maxFrontMatter = 300
)

// schemaPage is what one generated page shows of the schemas: the object's own description
// and every attribute's, nested ones and blocks' included, by dotted path.
type schemaPage struct {
	name  string
	own   string
	attrs map[string]string
}

// schemaPages asks the provider server for every schema it serves (GetProviderSchema, as
// Terraform and make generate do), one page per provider, resource, data source, action and
// list resource.
func schemaPages(t *testing.T) []schemaPage {
	t.Helper()
	server, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Fatalf("GetProviderSchema: %s: %s", d.Summary, d.Detail)
	}
	var pages []schemaPage
	add := func(kind string, schemas map[string]*tfprotov6.Schema) {
		for name, s := range schemas {
			pages = append(pages, newSchemaPage(kind+" "+name, s))
		}
	}
	pages = append(pages, newSchemaPage("provider", resp.Provider))
	add("resource", resp.ResourceSchemas)
	add("data source", resp.DataSourceSchemas)
	add("list resource", resp.ListResourceSchemas)
	for name, a := range resp.ActionSchemas {
		pages = append(pages, newSchemaPage("action "+name, a.Schema))
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].name < pages[j].name })
	return pages
}

func newSchemaPage(name string, s *tfprotov6.Schema) schemaPage {
	p := schemaPage{name: name, attrs: map[string]string{}}
	if s != nil && s.Block != nil {
		p.own = s.Block.Description
		walkSchemaBlock("", s.Block, p.attrs)
	}
	return p
}

// walkSchemaBlock records the description of every attribute of b, of nested attributes and
// of nested blocks, under its dotted path.
func walkSchemaBlock(prefix string, b *tfprotov6.SchemaBlock, out map[string]string) {
	for _, a := range b.Attributes {
		walkSchemaAttribute(prefix, a, out)
	}
	for _, nb := range b.BlockTypes {
		if nb.Block == nil {
			continue
		}
		if nb.Block.Description != "" {
			out[prefix+nb.TypeName] = nb.Block.Description
		}
		walkSchemaBlock(prefix+nb.TypeName+".", nb.Block, out)
	}
}

func walkSchemaAttribute(prefix string, a *tfprotov6.SchemaAttribute, out map[string]string) {
	out[prefix+a.Name] = a.Description
	if a.NestedType != nil {
		for _, na := range a.NestedType.Attributes {
			walkSchemaAttribute(prefix+a.Name+".", na, out)
		}
	}
}

// TestDescriptions_short holds every generated page to the limits above: no attribute
// description above maxDescription characters, a mean per page of at most
// maxMeanDescription, an object description of at most maxFrontMatter. It logs each page's
// figures (go test -v -run TestDescriptions_short).
func TestDescriptions_short(t *testing.T) {
	pages := schemaPages(t)
	if len(pages) < 7 {
		t.Fatalf("%d pages: want the provider, proxy_vm, its data sources, actions and list resource", len(pages))
	}
	for _, p := range pages {
		if len(p.attrs) == 0 {
			t.Errorf("%s: no attributes walked (the test would prove nothing)", p.name)
			continue
		}
		total, longest, longestName := 0, 0, ""
		for name, d := range p.attrs {
			n := len(d)
			total += n
			if n > longest {
				longest, longestName = n, name
			}
			if n > maxDescription {
				t.Errorf("%s: %s's description is %d characters, above %d: keep it to what the user sets, its constraints, default and whether it restarts or replaces; move the mechanics to the page's sections", p.name, name, n, maxDescription)
			}
			if strings.TrimSpace(d) == "" {
				t.Errorf("%s: %s has no description", p.name, name)
			}
		}
		mean := float64(total) / float64(len(p.attrs))
		t.Logf("%-28s %3d attributes, mean %5.0f, max %4d (%s), own %4d", p.name, len(p.attrs), mean, longest, longestName, len(p.own))
		if mean > maxMeanDescription {
			t.Errorf("%s: attribute descriptions average %.0f characters, above %d", p.name, mean, maxMeanDescription)
		}
		if len(p.own) > maxFrontMatter {
			t.Errorf("%s: its own description (the page's front matter) is %d characters, above %d", p.name, len(p.own), maxFrontMatter)
		}
	}
}

// TestDescriptions_walkSeesNested: the walk reaches nested attributes and blocks, so a long
// description there cannot hide.
func TestDescriptions_walkSeesNested(t *testing.T) {
	for _, p := range schemaPages(t) {
		if p.name != "resource proxy_vm" {
			continue
		}
		for _, want := range []string{"static_ipv4.address", "timeouts.create"} {
			if _, ok := p.attrs[want]; !ok {
				t.Errorf("proxy_vm: %s not walked; walked %s", want, fmt.Sprint(len(p.attrs)))
			}
		}
		return
	}
	t.Fatal("no resource proxy_vm page")
}
