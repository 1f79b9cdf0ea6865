// Command providerschema prints the provider's schema as `terraform providers schema -json`
// of Terraform 1.14 and later prints it, list resources, actions and resource identities included,
// without running Terraform: it asks the provider in-process (GetProviderSchema and
// GetResourceIdentitySchemas, as Terraform does over gRPC) and writes the JSON Terraform's
// command/jsonprovider package writes. `make generate` hands the file to tfplugindocs
// (--providers-schema), so the docs need no Terraform binary of any version:
//
//	go run ./internal/tools/providerschema -o bin/providers-schema.json
//
// -address is the key of the provider's entry (default: the address main.go serves);
// tfplugindocs looks the provider up as registry.terraform.io/hashicorp/<name>, so make
// generate passes that one. Anything the provider serves that this command does not convert
// (functions, state stores) is an error, never left out silently.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider"
)

// defaultAddress is the address main.go serves the provider under.
const defaultAddress = "registry.terraform.io/proxy-operator/proxy"

func main() {
	out := flag.String("o", "", "write the JSON to this file (default: standard output)")
	address := flag.String("address", defaultAddress, "the provider's key in provider_schemas")
	flag.Parse()
	b, err := providersSchemaJSON(context.Background(), *address)
	if err == nil {
		err = write(*out, b)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "providerschema:", err)
		os.Exit(1)
	}
}

// write writes b to path through a temporary file (a failed run leaves no half file), or to
// standard output when path is empty.
func write(path string, b []byte) error {
	if path == "" {
		_, err := os.Stdout.Write(b)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// providersSchemaJSON asks a fresh provider server for its schemas and marshals them, with a
// trailing newline as the terraform command prints.
func providersSchemaJSON(ctx context.Context, address string) ([]byte, error) {
	server, err := providerserver.NewProtocol6WithError(provider.New("docs")())()
	if err != nil {
		return nil, err
	}
	schema, err := server.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		return nil, fmt.Errorf("GetProviderSchema: %w", err)
	}
	if err := diagnosticsError("GetProviderSchema", schema.Diagnostics); err != nil {
		return nil, err
	}
	identity, err := server.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil {
		return nil, fmt.Errorf("GetResourceIdentitySchemas: %w", err)
	}
	if err := diagnosticsError("GetResourceIdentitySchemas", identity.Diagnostics); err != nil {
		return nil, err
	}
	p, err := marshalProvider(schema, identity)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // json.Marshal's output (HTML-escaped, as Terraform's) plus "\n"
	if err := enc.Encode(providers{FormatVersion: "1.0", Schemas: map[string]*providerJSON{address: p}}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func diagnosticsError(call string, diags []*tfprotov6.Diagnostic) error {
	var msgs []string
	for _, d := range diags {
		if d != nil && d.Severity == tfprotov6.DiagnosticSeverityError {
			msgs = append(msgs, d.Summary+": "+d.Detail)
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s", call, strings.Join(msgs, "; "))
}

// The JSON types below are those of Terraform's command/jsonprovider package (provider.go,
// schema.go, block.go, attribute.go), field for field and in the same order, so that
// encoding/json writes the same bytes.

type providers struct {
	FormatVersion string                   `json:"format_version"`
	Schemas       map[string]*providerJSON `json:"provider_schemas,omitempty"`
}

type providerJSON struct {
	Provider                 *schemaJSON                    `json:"provider,omitempty"`
	ResourceSchemas          map[string]*schemaJSON         `json:"resource_schemas,omitempty"`
	DataSourceSchemas        map[string]*schemaJSON         `json:"data_source_schemas,omitempty"`
	EphemeralResourceSchemas map[string]*schemaJSON         `json:"ephemeral_resource_schemas,omitempty"`
	ListResourceSchemas      map[string]*schemaJSON         `json:"list_resource_schemas,omitempty"`
	ResourceIdentitySchemas  map[string]*identitySchemaJSON `json:"resource_identity_schemas,omitempty"`
	ActionSchemas            map[string]*actionSchemaJSON   `json:"action_schemas,omitempty"`
}

// actionSchemaJSON is jsonprovider's ActionSchema: the action's config block, no version.
type actionSchemaJSON struct {
	Block *blockJSON `json:"block,omitempty"`
}

type schemaJSON struct {
	Version uint64     `json:"version"`
	Block   *blockJSON `json:"block,omitempty"`
}

type blockJSON struct {
	Attributes         map[string]*attributeJSON `json:"attributes,omitempty"`
	BlockTypes         map[string]*blockTypeJSON `json:"block_types,omitempty"`
	Description        string                    `json:"description,omitempty"`
	DescriptionKind    string                    `json:"description_kind,omitempty"`
	Deprecated         bool                      `json:"deprecated,omitempty"`
	DeprecationMessage string                    `json:"deprecation_message,omitempty"`
}

type blockTypeJSON struct {
	NestingMode string     `json:"nesting_mode,omitempty"`
	Block       *blockJSON `json:"block,omitempty"`
	MinItems    uint64     `json:"min_items,omitempty"`
	MaxItems    uint64     `json:"max_items,omitempty"`
}

type attributeJSON struct {
	AttributeType       json.RawMessage `json:"type,omitempty"`
	AttributeNestedType *nestedTypeJSON `json:"nested_type,omitempty"`
	Description         string          `json:"description,omitempty"`
	DescriptionKind     string          `json:"description_kind,omitempty"`
	Deprecated          bool            `json:"deprecated,omitempty"`
	DeprecationMessage  string          `json:"deprecation_message,omitempty"`
	Required            bool            `json:"required,omitempty"`
	Optional            bool            `json:"optional,omitempty"`
	Computed            bool            `json:"computed,omitempty"`
	Sensitive           bool            `json:"sensitive,omitempty"`
	WriteOnly           bool            `json:"write_only,omitempty"`
}

type nestedTypeJSON struct {
	Attributes  map[string]*attributeJSON `json:"attributes,omitempty"`
	NestingMode string                    `json:"nesting_mode,omitempty"`
}

type identitySchemaJSON struct {
	Version    uint64                            `json:"version"`
	Attributes map[string]*identityAttributeJSON `json:"attributes,omitempty"`
}

type identityAttributeJSON struct {
	IdentityType      json.RawMessage `json:"type,omitempty"`
	Description       string          `json:"description,omitempty"`
	RequiredForImport bool            `json:"required_for_import,omitempty"`
	OptionalForImport bool            `json:"optional_for_import,omitempty"`
}

// marshalProvider is jsonprovider's marshalProvider over the protocol's types. A list
// resource's schema is the provider's own (Terraform nests it under a "config" block when it
// loads it and takes it out again to print it).
func marshalProvider(s *tfprotov6.GetProviderSchemaResponse, id *tfprotov6.GetResourceIdentitySchemasResponse) (*providerJSON, error) {
	var unsupported []string
	if len(s.Functions) > 0 {
		unsupported = append(unsupported, fmt.Sprintf("%d functions", len(s.Functions)))
	}
	if len(s.StateStoreSchemas) > 0 {
		unsupported = append(unsupported, fmt.Sprintf("%d state stores", len(s.StateStoreSchemas)))
	}
	if len(unsupported) > 0 {
		return nil, fmt.Errorf("the provider serves %s, which this command does not convert yet: add them "+
			"(Terraform's jsonprovider shows the shape)", strings.Join(unsupported, ", "))
	}
	p := &providerJSON{}
	var err error
	if p.Provider, err = marshalSchema(s.Provider); err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	for _, kind := range []struct {
		name string
		in   map[string]*tfprotov6.Schema
		out  *map[string]*schemaJSON
	}{
		{"resource", s.ResourceSchemas, &p.ResourceSchemas},
		{"data source", s.DataSourceSchemas, &p.DataSourceSchemas},
		{"ephemeral resource", s.EphemeralResourceSchemas, &p.EphemeralResourceSchemas},
		{"list resource", s.ListResourceSchemas, &p.ListResourceSchemas},
	} {
		if *kind.out, err = marshalSchemas(kind.in); err != nil {
			return nil, fmt.Errorf("%s %w", kind.name, err)
		}
	}
	for _, name := range sortedKeys(s.ActionSchemas) {
		a := s.ActionSchemas[name]
		if a == nil {
			continue
		}
		j, err := marshalSchema(a.Schema)
		if err != nil {
			return nil, fmt.Errorf("action %s: %w", name, err)
		}
		if p.ActionSchemas == nil {
			p.ActionSchemas = map[string]*actionSchemaJSON{}
		}
		p.ActionSchemas[name] = &actionSchemaJSON{Block: j.Block}
	}
	if len(id.IdentitySchemas) > 0 {
		p.ResourceIdentitySchemas = map[string]*identitySchemaJSON{}
	}
	for _, name := range sortedKeys(id.IdentitySchemas) {
		is := id.IdentitySchemas[name]
		if is == nil {
			continue
		}
		j := &identitySchemaJSON{Version: uint64(is.Version), Attributes: map[string]*identityAttributeJSON{}}
		for _, a := range is.IdentityAttributes {
			t, err := typeJSON(a.Type)
			if err != nil {
				return nil, fmt.Errorf("identity of %s: %s: %w", name, a.Name, err)
			}
			j.Attributes[a.Name] = &identityAttributeJSON{IdentityType: t, Description: a.Description,
				RequiredForImport: a.RequiredForImport, OptionalForImport: a.OptionalForImport}
		}
		p.ResourceIdentitySchemas[name] = j
	}
	return p, nil
}

func marshalSchemas(in map[string]*tfprotov6.Schema) (map[string]*schemaJSON, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]*schemaJSON, len(in))
	for _, name := range sortedKeys(in) {
		s, err := marshalSchema(in[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	return out, nil
}

func marshalSchema(s *tfprotov6.Schema) (*schemaJSON, error) {
	if s == nil || s.Block == nil {
		return &schemaJSON{}, nil
	}
	b, err := marshalBlock(s.Block)
	if err != nil {
		return nil, err
	}
	return &schemaJSON{Version: uint64(s.Version), Block: b}, nil
}

func marshalBlock(b *tfprotov6.SchemaBlock) (*blockJSON, error) {
	ret := &blockJSON{
		Description:        b.Description,
		DescriptionKind:    stringKind(b.DescriptionKind),
		Deprecated:         b.Deprecated,
		DeprecationMessage: b.DeprecationMessage,
	}
	if len(b.Attributes) > 0 {
		ret.Attributes = map[string]*attributeJSON{}
	}
	for _, a := range b.Attributes {
		j, err := marshalAttribute(a)
		if err != nil {
			return nil, err
		}
		ret.Attributes[a.Name] = j
	}
	if len(b.BlockTypes) > 0 {
		ret.BlockTypes = map[string]*blockTypeJSON{}
	}
	for _, nb := range b.BlockTypes {
		mode, err := blockNesting(nb.Nesting)
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", nb.TypeName, err)
		}
		inner := nb.Block
		if inner == nil {
			inner = &tfprotov6.SchemaBlock{}
		}
		jb, err := marshalBlock(inner)
		if err != nil {
			return nil, fmt.Errorf("block %s: %w", nb.TypeName, err)
		}
		ret.BlockTypes[nb.TypeName] = &blockTypeJSON{NestingMode: mode, Block: jb,
			MinItems: uint64(nb.MinItems), MaxItems: uint64(nb.MaxItems)}
	}
	return ret, nil
}

func marshalAttribute(a *tfprotov6.SchemaAttribute) (*attributeJSON, error) {
	ret := &attributeJSON{
		Description:        a.Description,
		DescriptionKind:    stringKind(a.DescriptionKind),
		Deprecated:         a.Deprecated,
		DeprecationMessage: a.DeprecationMessage,
		Required:           a.Required,
		Optional:           a.Optional,
		Computed:           a.Computed,
		Sensitive:          a.Sensitive,
		WriteOnly:          a.WriteOnly,
	}
	switch {
	case a.NestedType != nil:
		mode, err := objectNesting(a.NestedType.Nesting)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", a.Name, err)
		}
		n := &nestedTypeJSON{NestingMode: mode, Attributes: map[string]*attributeJSON{}}
		for _, na := range a.NestedType.Attributes {
			j, err := marshalAttribute(na)
			if err != nil {
				return nil, fmt.Errorf("attribute %s: %w", a.Name, err)
			}
			n.Attributes[na.Name] = j
		}
		ret.AttributeNestedType = n
	case a.Type != nil:
		t, err := typeJSON(a.Type)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", a.Name, err)
		}
		ret.AttributeType = t
	default:
		return nil, fmt.Errorf("attribute %s has neither a type nor a nested type", a.Name)
	}
	return ret, nil
}

// typeJSON is the type in cty's JSON notation, which the protocol's tftypes share.
func typeJSON(t interface{ MarshalJSON() ([]byte, error) }) (json.RawMessage, error) {
	if t == nil {
		return nil, errors.New("no type")
	}
	b, err := t.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

func stringKind(k tfprotov6.StringKind) string {
	if k == tfprotov6.StringKindMarkdown {
		return "markdown"
	}
	return "plain"
}

func blockNesting(m tfprotov6.SchemaNestedBlockNestingMode) (string, error) {
	switch m {
	case tfprotov6.SchemaNestedBlockNestingModeSingle:
		return "single", nil
	case tfprotov6.SchemaNestedBlockNestingModeGroup:
		return "group", nil
	case tfprotov6.SchemaNestedBlockNestingModeList:
		return "list", nil
	case tfprotov6.SchemaNestedBlockNestingModeSet:
		return "set", nil
	case tfprotov6.SchemaNestedBlockNestingModeMap:
		return "map", nil
	}
	return "", fmt.Errorf("unknown block nesting mode %v", m)
}

func objectNesting(m tfprotov6.SchemaObjectNestingMode) (string, error) {
	switch m {
	case tfprotov6.SchemaObjectNestingModeSingle:
		return "single", nil
	case tfprotov6.SchemaObjectNestingModeList:
		return "list", nil
	case tfprotov6.SchemaObjectNestingModeSet:
		return "set", nil
	case tfprotov6.SchemaObjectNestingModeMap:
		return "map", nil
	}
	return "", fmt.Errorf("unknown attribute nesting mode %v", m)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
