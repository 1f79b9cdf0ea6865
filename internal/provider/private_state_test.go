package provider

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// The private state's values as the provider writes them. A state file written before this
// store kept the same bytes under the same names: each test below reads those bytes back.

func TestPrivateKeyGone_roundTrip(t *testing.T) {
	ctx := context.Background()
	p := fakePrivate{}
	if d := writeGone(ctx, p, "VMID 101 is not there"); d.HasError() {
		t.Fatal(d)
	}
	if got := string(p["gone"]); got != `{"reason":"VMID 101 is not there"}` {
		t.Errorf("stored %s", got)
	}
	if got := readGone(ctx, p); got != "VMID 101 is not there" {
		t.Errorf("read %q", got)
	}
	writeGone(ctx, p, "")
	if _, ok := p["gone"]; ok || readGone(ctx, p) != "" {
		t.Error("a cleared record was kept")
	}
}

func TestPrivateKeySeed_roundTrip(t *testing.T) {
	ctx := context.Background()
	p := fakePrivate{}
	if d := writeSeed(ctx, p, p, seedWrite{volid: "isos:iso/proxy-a-seed.iso"}); d.HasError() {
		t.Fatal(d)
	}
	if got := string(p["seed"]); got != `{"volid":"isos:iso/proxy-a-seed.iso"}` {
		t.Errorf("stored %s", got)
	}
	if got := readSeed(ctx, p); got != "isos:iso/proxy-a-seed.iso" {
		t.Errorf("read %q", got)
	}
	// "" leaves the record as it is.
	writeSeed(ctx, p, p, seedWrite{})
	if got := readSeed(ctx, p); got != "isos:iso/proxy-a-seed.iso" {
		t.Errorf("after an empty write: %q", got)
	}
	if got := readSeed(ctx, fakePrivate{"seed": []byte(`{"volid":"local:iso/x.iso"}`)}); got != "local:iso/x.iso" {
		t.Errorf("stored bytes read as %q", got)
	}
}

// The seed record keeps the nodes a copy of the seed was put on: a refresh that finds the VM
// on another node (an HA recovery moved its config alone) keeps the node the seed is on, an
// apply adds the node it put one on, a migration drops its source, and a new seed (a swap on
// the new node) keeps the nodes an earlier generation is still on.
// A record of an earlier version (no nodes) reads as one on the node the state last saw.
func TestPrivateKeySeed_nodes(t *testing.T) {
	ctx := context.Background()
	const vol, vol2 = "local:iso/a-u-seed.iso", "local:iso/a-u-2-seed.iso"
	step := func(p fakePrivate, w seedWrite) fakePrivate {
		t.Helper()
		out := fakePrivate{}
		if d := writeSeed(ctx, p, out, w); d.HasError() {
			t.Fatal(d)
		}
		return out
	}
	created := step(fakePrivate{}, seedWrite{volid: vol, put: "pve1"})
	if got := string(created["seed"]); got != `{"volid":"local:iso/a-u-seed.iso","nodes":["pve1"]}` {
		t.Errorf("after a create: %s", got)
	}
	// HA recovery to pve2, refreshed: the seed is still recorded on pve1 alone.
	refreshed := step(created, seedWrite{volid: vol, lastSeen: "pve1"})
	if got := readSeedNodes(ctx, refreshed); !slices.Equal(got, []string{"pve1"}) {
		t.Errorf("after a refresh on another node: %v", got)
	}
	// An apply that starts it on pve2 (its seed rebuilt there): both copies.
	started := step(refreshed, seedWrite{volid: vol, lastSeen: "pve2", put: "pve2"})
	if got := readSeedNodes(ctx, started); !slices.Equal(got, []string{"pve1", "pve2"}) {
		t.Errorf("after an apply on the new node: %v", got)
	}
	// A migration pve2 -> pve1 deletes the generation it moved on pve2, not an earlier one:
	// pve2 stays recorded (decision: seed-sweep).
	migrated := step(started, seedWrite{volid: vol, lastSeen: "pve2", put: "pve1"})
	if got := readSeedNodes(ctx, migrated); !slices.Equal(got, []string{"pve1", "pve2"}) {
		t.Errorf("after a migration back: %v", got)
	}
	// A new seed (a swap on pve2, which deletes generation 1 there only): generation 1's copy
	// on pve1 is still recorded.
	if got := readSeedNodes(ctx, step(started, seedWrite{volid: vol2, lastSeen: "pve2", put: "pve2"})); !slices.Equal(got, []string{"pve1", "pve2"}) {
		t.Errorf("after a new seed: %v", got)
	}
	// An import knows nothing of where the seed was uploaded: every provider node may hold a
	// copy, the VM's own first.
	if got := readSeedNodes(ctx, step(fakePrivate{}, seedWrite{volid: vol, put: "pve2", maybe: []string{"pve1", "pve2", "pve3"}})); !slices.Equal(got, []string{"pve2", "pve1", "pve3"}) {
		t.Errorf("after an import: %v", got)
	}
	// A record of the current main's bytes: the seed on the node last seen.
	legacy := fakePrivate{"seed": []byte(`{"volid":"local:iso/a-u-seed.iso"}`)}
	if got := readSeed(ctx, legacy); got != vol {
		t.Errorf("legacy record read as %q", got)
	}
	if got := readSeedNodes(ctx, step(legacy, seedWrite{volid: vol, lastSeen: "pve1"})); !slices.Equal(got, []string{"pve1"}) {
		t.Errorf("legacy record refreshed: %v", got)
	}
}

func TestPrivateKeyNode_roundTrip(t *testing.T) {
	ctx := context.Background()
	p := fakePrivate{}
	if _, ok, _ := readNodeRecord(ctx, p); ok {
		t.Error("a record without a write")
	}
	// No node configured is a record too: automatic placement.
	if d := writeNodeRecord(ctx, p, types.StringNull()); d.HasError() {
		t.Fatal(d)
	}
	if got, ok, _ := readNodeRecord(ctx, p); !ok || got != "" {
		t.Errorf("read %q %v", got, ok)
	}
	writeNodeRecord(ctx, p, types.StringValue("pve2"))
	if got := string(p["node"]); got != `{"configured":"pve2"}` {
		t.Errorf("stored %s", got)
	}
	if got, ok, _ := readNodeRecord(ctx, p); !ok || got != "pve2" {
		t.Errorf("read %q %v", got, ok)
	}
	if got, ok, _ := readNodeRecord(ctx, fakePrivate{"node": []byte(`not json`)}); ok || got != "" {
		t.Errorf("an unreadable record read as %q %v", got, ok)
	}
}

func TestPrivateKeyImport_storedBytes(t *testing.T) {
	ctx := context.Background()
	p := fakePrivate{}
	writeImportMarker(ctx, p, []unreadAttr{unreadCloudInit, unreadNetwork})
	if got := string(p["import"]); got != `{"unread":["cloud_init","network"]}` {
		t.Errorf("stored %s", got)
	}
	got, _ := readImportMarker(ctx, fakePrivate{"import": []byte(`{"unread":["template"]}`)})
	if !slices.Equal(got, []unreadAttr{unreadTemplate}) {
		t.Errorf("stored bytes read as %v", got)
	}
}

func TestPrivateKeyPower_roundTrip(t *testing.T) {
	ctx := context.Background()
	p := fakePrivate{}
	vm := proxmox.VM{Cores: 2, PendingCores: 4, MemoryMiB: 2048, MemoryHotplug: true, HotplugSockets: 1}
	if d := writePower(ctx, p, vm); d.HasError() {
		t.Fatal(d)
	}
	want := powerRecord{PendingCores: 4, MemoryHotplug: true, Sockets: 1, RunningCores: 2}
	if got := readPower(ctx, p); got != want {
		t.Errorf("read %+v, want %+v", got, want)
	}
	if got := string(p["power"]); got != `{"pending_cores":4,"memory_hotplug":true,"sockets":1,"running_cores":2}` {
		t.Errorf("stored %s", got)
	}
	// Nothing pending and no hotplug: no record.
	writePower(ctx, p, proxmox.VM{Cores: 2, MemoryMiB: 2048})
	if _, ok := p["power"]; ok {
		t.Error("an empty record was kept")
	}
	if got := readPower(ctx, fakePrivate{"power": []byte(`{"pending_memory_mib":4096,"running_memory_mib":2048}`)}); got != (powerRecord{PendingMemoryMiB: 4096, RunningMemoryMiB: 2048}) {
		t.Errorf("stored bytes read as %+v", got)
	}
}

func TestPrivateKeyReseed_roundTrip(t *testing.T) {
	ctx := context.Background()
	p := fakePrivate{}
	if readReseed(ctx, p) {
		t.Error("reseed without a write")
	}
	writeReseed(ctx, p, true)
	if got := string(p["reseed"]); got != "true" {
		t.Errorf("stored %s", got)
	}
	if !readReseed(ctx, p) {
		t.Error("reseed lost")
	}
	writeReseed(ctx, p, false)
	if _, ok := p["reseed"]; ok || readReseed(ctx, p) {
		t.Error("a cleared reseed was kept")
	}
	if readReseed(ctx, fakePrivate{"reseed": []byte(`"true"`)}) {
		t.Error("a string read as the reseed decision")
	}
}

func TestPrivateKeyNetworkDigest_roundTrip(t *testing.T) {
	ctx := context.Background()
	p := fakePrivate{}
	writeImportMarker(ctx, p, []unreadAttr{unreadNetwork})
	writeNetworkDigest(ctx, p, "0123abcd")
	if got := string(p["network_digest"]); got != `"0123abcd"` {
		t.Errorf("stored %s", got)
	}
	ni, d := readNetworkImport(ctx, p)
	if d.HasError() || !ni.unread || ni.digest != "0123abcd" {
		t.Errorf("read %+v %v", ni, d)
	}
	writeNetworkDigest(ctx, p, "")
	if _, ok := p["network_digest"]; ok {
		t.Error("a cleared digest was kept")
	}
	if ni, _ := readNetworkImport(ctx, p); ni.digest != "" {
		t.Errorf("cleared digest read as %q", ni.digest)
	}
}

func TestPrivateKey_namesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range privateKeyNames {
		if n == "" || seen[n] {
			t.Errorf("private key name %q empty or used twice", n)
		}
		seen[n] = true
	}
	// Every privateKey variable of private_state.go is in privateKeyNames.
	f, err := parser.ParseFile(token.NewFileSet(), "private_state.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	ast.Inspect(f, func(n ast.Node) bool {
		if c, ok := n.(*ast.CompositeLit); ok && isPrivateKeyType(c.Type) {
			declared++
		}
		return true
	})
	if declared != len(privateKeyNames) {
		t.Errorf("private_state.go declares %d keys, privateKeyNames lists %d", declared, len(privateKeyNames))
	}
}

// TestPrivateState_onlyTypedKeys fails on a private-state key used outside the typed store:
// a GetKey or SetKey call, a privateKey declared, or JSON encoded anywhere in the package's
// production code but private_state.go.
func TestPrivateState_onlyTypedKeys(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "private_state.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "encoding/json" {
				t.Errorf("%s imports encoding/json: private-state values are encoded in private_state.go only", name)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if n.Sel.Name == "GetKey" || n.Sel.Name == "SetKey" {
					t.Errorf("%s: %s uses the private state directly: declare a typed key in private_state.go", fset.Position(n.Pos()), n.Sel.Name)
				}
			case *ast.CompositeLit:
				if isPrivateKeyType(n.Type) {
					t.Errorf("%s: a private-state key declared outside private_state.go", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

func isPrivateKeyType(e ast.Expr) bool {
	if ix, ok := e.(*ast.IndexExpr); ok {
		id, ok := ix.X.(*ast.Ident)
		return ok && id.Name == "privateKey"
	}
	return false
}
