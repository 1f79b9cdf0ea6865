package provider

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// The resource's private state: what Terraform keeps for the provider next to the state,
// never shown to the user. Every key is declared here, once, with the Go type its JSON
// value decodes to; nothing else in the package calls GetKey or SetKey or encodes a private
// value (TestPrivateState_onlyTypedKeys checks it).
var (
	// privateKeyGone: why the last refresh found the VM gone (proxy_vm_gone.go).
	privateKeyGone = privateKey[goneRecord]{name: "gone", what: "deletion"}
	// privateKeySeed: the seed ISO the VM boots from (seed_record.go).
	privateKeySeed = privateKey[seedRecord]{name: "seed", what: "seed ISO"}
	// privateKeyNode: the node the configuration asked for at the last apply (vm_placement.go).
	privateKeyNode = privateKey[nodeRecord]{name: "node", what: "node"}
	// privateKeyImport: the attributes an import left unread (proxy_vm_planmodifiers.go).
	privateKeyImport = privateKey[importMarker]{name: "import", what: "import"}
	// privateKeyPower: what the last read saw of the VM's sizes (proxy_vm_restart.go).
	privateKeyPower = privateKey[powerRecord]{name: "power", what: "pending changes"}
	// privateKeyReseed: the plan decided a seed swap in place (proxy_vm_reseed.go).
	privateKeyReseed = privateKey[bool]{name: "reseed", what: "seed swap"}
	// privateKeyNetworkDigest: the network digest an import read from the mark (vm_network.go).
	privateKeyNetworkDigest = privateKey[string]{name: "network_digest", what: "network digest"}
	// privateKeyRenamed: the name the last refresh found on the VM, renamed outside
	// Terraform (vm_identity_facet.go).
	privateKeyRenamed = privateKey[string]{name: "renamed", what: "rename"}
	// privateKeyMarkEdited: the last refresh found the VM's mark not bound to its SMBIOS
	// uuid or not carrying the state's uid: wiped, its uid or instance line deleted or
	// rewritten outside Terraform (vm_identity_facet.go).
	privateKeyMarkEdited = privateKey[bool]{name: "mark_edited", what: "mark edit"}
)

// privateKeyNames lists every key's name; a name is used by one key only.
var privateKeyNames = []string{
	privateKeyGone.name, privateKeySeed.name, privateKeyNode.name, privateKeyImport.name,
	privateKeyPower.name, privateKeyReseed.name, privateKeyNetworkDigest.name, privateKeyRenamed.name,
	privateKeyMarkEdited.name,
}

// privateKey is a private-state key whose value is a T, stored as JSON.
type privateKey[T any] struct {
	name string
	// what names the value in an error summary and a log line.
	what string
}

// privateGetter is the read side of the framework's private state
// (*privatestate.ProviderData), which tests cannot construct.
type privateGetter interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
}

// privateSetter is the write side.
type privateSetter interface {
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// read returns the value under the key; ok is false when there is none, or it is
// unreadable (logged, and ignored: the caller decides as without a value).
func (k privateKey[T]) read(ctx context.Context, p privateGetter) (v T, ok bool, diags diag.Diagnostics) {
	if isNilPrivate(p) {
		return v, false, nil
	}
	raw, diags := p.GetKey(ctx, k.name)
	if diags.HasError() || len(raw) == 0 {
		return v, false, diags
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		tflog.Debug(ctx, "proxy VM private "+k.what+" record unreadable, ignored", map[string]any{"error": err.Error()})
		var zero T
		return zero, false, diags
	}
	return v, true, diags
}

// write stores v under the key.
func (k privateKey[T]) write(ctx context.Context, p privateSetter, v T) diag.Diagnostics {
	if isNilPrivate(p) {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Unable to record the proxy VM's "+k.what, err.Error())
		return diags
	}
	return p.SetKey(ctx, k.name, raw)
}

// clear removes the key's value.
func (k privateKey[T]) clear(ctx context.Context, p privateSetter) diag.Diagnostics {
	if isNilPrivate(p) {
		return nil
	}
	return p.SetKey(ctx, k.name, nil)
}

// isNilPrivate reports a private state the caller did not set up (a response built by hand
// in a test, a nil pointer in the interface; the framework always provides one).
func isNilPrivate(p any) bool {
	v := reflect.ValueOf(p)
	return p == nil || (v.Kind() == reflect.Pointer && v.IsNil())
}
