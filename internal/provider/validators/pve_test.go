package validators

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestPVEFormats: each validator accepts what Proxmox's format accepts (pve-common
// PVE/JSONSchema.pm) and refuses what it refuses, and every value that carries ',' '='
// ';' or a line break into an option string, with the diagnostic on the attribute.
func TestPVEFormats(t *testing.T) {
	injections := []string{"vmbr0,firewall=0", "a=b", "a;b", "a\nb", "a\rb", "a b", ""}
	for _, tc := range []struct {
		name string
		v    validator.String
		ok   []string
		bad  []string
	}{
		{"bridge", BridgeID(), []string{"vmbr0", "vmbr0.4", "br_lan-1", "1br", "abcdefghijklmno", "vnet1"},
			[]string{"vmbr0,firewall=0,trunks=1;2;3,rate=1000", "abcdefghijklmnop", "vmbr/0", "vmbr0:1", "br\u00e9"}},
		{"storage", StorageID(), []string{"local", "local-lvm", "proxy.seeds", "Ceph_1", "ab"},
			[]string{"a", "1local", "local-", "local.", "local/x", "local:iso"}},
		{"node", NodeName(), []string{"pve1", "pve-1", "a", strings.Repeat("a", 63)},
			[]string{"-pve", "pve-", "pve_1", "pve.example.com", "PVE1", "pve1/../x", strings.Repeat("a", 64)}},
		{"tag", Tag(), []string{"proxy", "a-b+c.d", "_x", "9"},
			[]string{"-a", "Proxy", "a/b", "a:b"}},
	} {
		for _, s := range tc.ok {
			if d := run(tc.name, tc.v, s); d != "" {
				t.Errorf("%s %q refused: %s", tc.name, s, d)
			}
		}
		for _, s := range append(tc.bad, injections...) {
			d := run(tc.name, tc.v, s)
			if d == "" {
				t.Errorf("%s %q accepted", tc.name, s)
				continue
			}
			if !strings.Contains(d, "Attribute "+tc.name+" must be a Proxmox") {
				t.Errorf("%s %q: diagnostic %q does not name the attribute and the format", tc.name, s, d)
			}
		}
	}
	if !IsBridgeID("vmbr0") || IsBridgeID("vmbr0,x") || !IsStorageID("local") || IsStorageID("l") || !IsNodeName("pve1") || IsNodeName("pve1;") {
		t.Error("the Is* checks disagree with the validators")
	}
}

func run(name string, v validator.String, s string) string {
	var resp validator.StringResponse
	v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root(name), ConfigValue: types.StringValue(s)}, &resp)
	if !resp.Diagnostics.HasError() {
		return ""
	}
	return resp.Diagnostics[0].Detail()
}

// The patterns as plain checks, for the tests.

// IsBridgeID reports whether s is a valid bridge id (BridgeID).
func IsBridgeID(s string) bool { return bridgeIDRE.MatchString(s) }

// IsStorageID reports whether s is a valid storage id (StorageID).
func IsStorageID(s string) bool { return storageIDRE.MatchString(s) }

// IsNodeName reports whether s is a valid node name (NodeName).
func IsNodeName(s string) bool { return nodeNameRE.MatchString(s) }
