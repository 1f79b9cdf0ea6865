package reporefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepository_layers holds production code to the import table of
// docs/design/architecture.md.
func TestRepository_layers(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := Root(wd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := CheckLayers(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		t.Error(v)
	}
}

func TestCheckLayers_importNotAllowedFails(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n")
	// pveapi may import nothing of the module; proxmox may import pveapi; a test file is free.
	write("internal/pveapi/api.go", "package pveapi\n\nimport _ \"example.com/m/internal/proxmox\"\n")
	write("internal/proxmox/backend.go", "package proxmox\n\nimport _ \"example.com/m/internal/pveapi\"\n")
	write("internal/proxmox/backend_test.go", "package proxmox\n\nimport _ \"example.com/m/internal/pvesim\"\n")
	write("internal/provider/provider.go", "package provider\n\nimport (\n\t_ \"example.com/m/internal/pveapi\"\n\t_ \"example.com/m/internal/pvesim\"\n)\n")
	// The table is an allow-list: nocloud is allowed to proxmox, not to the provider.
	write("internal/provider/network.go", "package provider\n\nimport _ \"example.com/m/internal/nocloud\"\n")
	write("internal/provider/resource.go", "package provider\n\nimport _ \"example.com/m/internal/proxmox\"\n")
	// pveapi is allowed to the provider in provider.go only (it builds the client there).
	write("internal/provider/client.go", "package provider\n\nimport _ \"example.com/m/internal/pveapi\"\n")
	write("internal/provider/provider_test.go", "package provider\n\nimport _ \"example.com/m/internal/pveapi\"\n")
	// A package the table does not list fails, whatever it imports.
	write("internal/newpkg/new.go", "package newpkg\n")
	write("internal/newpkg/other.go", "package newpkg\n")
	// testdata is not code.
	write("internal/proxmox/testdata/x.go", "package x\n\nimport _ \"example.com/m/internal/pvesim\"\n")
	got, err := CheckLayers(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"internal/newpkg/new.go: internal/newpkg is not in the import table",
		"internal/provider/client.go: internal/provider imports internal/pveapi outside provider.go",
		"internal/provider/network.go: internal/provider imports internal/nocloud",
		"internal/provider/provider.go: internal/provider imports internal/pvesim",
		"internal/pveapi/api.go: internal/pveapi imports internal/proxmox",
	}
	if len(got) != len(want) {
		t.Fatalf("violations %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("violation %d = %q, want %q...", i, got[i], w)
		}
	}
}
