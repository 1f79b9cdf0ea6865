package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

func TestResolvedConfig_NodeFor(t *testing.T) {
	one := resolvedConfig{Nodes: []string{"pve1"}}
	two := resolvedConfig{Nodes: []string{"pve1", "pve2"}}
	cases := []struct {
		name    string
		cfg     resolvedConfig
		node    string
		want    string
		wantErr string
	}{
		{"empty with one node", one, "", "pve1", ""},
		{"named with one node", one, "pve1", "pve1", ""},
		{"named second", two, "pve2", "pve2", ""},
		{"empty with two nodes", two, "", "", "set node to one of them"},
		{"unknown node", two, "pve3", "", `node "pve3" is not one of the provider's nodes (pve1, pve2)`},
		{"unknown node with one", one, "pve2", "", "not one of the provider's nodes (pve1)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.NodeFor(tc.node)
			if got != tc.want {
				t.Errorf("NodeFor(%q) = %q, want %q", tc.node, got, tc.want)
			}
			if (err != nil) != (tc.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("NodeFor(%q) error = %v, want %q", tc.node, err, tc.wantErr)
			}
		})
	}
}

func TestResolvedConfig_catalogue(t *testing.T) {
	c := resolvedConfig{
		Templates:    map[string]int{"debian-13": 9001, "alma-9": 9002},
		MachineTypes: map[string]machineType{"small": {1, 512, 0}, "large": {4, 4096, 40}},
	}
	if vmid, err := c.Template("alma-9"); err != nil || vmid != 9002 {
		t.Errorf("Template(alma-9) = %d, %v", vmid, err)
	}
	if _, err := c.Template("ubuntu"); err == nil || !strings.Contains(err.Error(), `template "ubuntu" is not in the provider's templates (alma-9, debian-13)`) {
		t.Errorf("Template(ubuntu) error = %v", err)
	}
	if mt, err := c.MachineType("large"); err != nil || mt != (machineType{4, 4096, 40}) {
		t.Errorf("MachineType(large) = %+v, %v", mt, err)
	}
	if _, err := c.MachineType("huge"); err == nil || !strings.Contains(err.Error(), "(large, small)") {
		t.Errorf("MachineType(huge) error = %v", err)
	}
}

func TestResolvedConfig_backendConfig(t *testing.T) {
	c := resolvedConfig{
		Endpoint: "https://e", Nodes: []string{"a", "b"}, ISOStorage: "iso", Storage: "st", Templates: map[string]int{"t": 100},
		VMIDMin: 200, VMIDMax: 300, VendorData: "v", InstallGuestAgent: true,
	}
	called := false
	bc := c.backendConfig(func() (string, error) { called = true; return "id", nil })
	if bc.Endpoint != "https://e" || len(bc.Nodes) != 2 || bc.ISOStorage != "iso" || bc.Storage != "st" || bc.Templates["t"] != 100 ||
		bc.VMIDMin != 200 || bc.VMIDMax != 300 || bc.VendorData != "v" || !bc.InstallGuestAgent || bc.Budgets.Clone == 0 {
		t.Errorf("backend config = %+v", bc)
	}
	if id, _ := bc.TokenID(); id != "id" || !called {
		t.Error("TokenID not wired")
	}
	bc.Nodes[0] = "changed"
	if c.Nodes[0] != "a" {
		t.Error("the backend config shares the nodes slice")
	}
}

func TestProviderDataFrom(t *testing.T) {
	var diags diag.Diagnostics
	if pd := providerDataFrom(nil, &diags); pd != nil || diags.HasError() {
		t.Errorf("nil data: %v, %v", pd, diags)
	}
	want := &providerData{}
	if pd := providerDataFrom(want, &diags); pd != want || diags.HasError() {
		t.Errorf("provider data: %v, %v", pd, diags)
	}
	if pd := providerDataFrom("x", &diags); pd != nil || !diags.HasError() || !strings.Contains(diags.Errors()[0].Detail(), "got string") {
		t.Errorf("wrong type: %v, %v", pd, diags)
	}
}

func TestTokenSecrets(t *testing.T) {
	got := tokenSecrets(" a@pve!b=s3cret\n")
	if len(got) != 2 || got[0] != "a@pve!b=s3cret" || got[1] != "s3cret" {
		t.Errorf("tokenSecrets = %q", got)
	}
	if tokenSecrets("") != nil || len(tokenSecrets("noequals")) != 1 {
		t.Error("tokenSecrets of an empty or secretless token")
	}
	if got := redact("x a@pve!b=s3cret y s3cret", tokenSecrets("a@pve!b=s3cret")); got != "x *** y ***" {
		t.Errorf("redact = %q", got)
	}
}
