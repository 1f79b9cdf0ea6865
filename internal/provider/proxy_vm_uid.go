package provider

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// newUID is the uid of a VM a Create makes: a random UUID (version 4, RFC 9562 section
// 5.4), minted at apply. It is unknown in the plan of a create (Terraform would reject a
// random value planned twice) and kept in the state afterwards. Where a create looks for a
// VMID stays deterministic: uidFor(uid_namespace, name), the allocation key.
func newUID() (string, error) {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		return "", fmt.Errorf("reading random bytes for the VM's uid: %w", err)
	}
	u[6] = (u[6] & 0x0f) | 0x40 // version 4
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 9562 variant
	return formatUUID(u), nil
}

// privateKeySeed holds, in the resource's private state, the seed ISO the VM boots from
// (proxmox.VM.Seed: its volume id, wherever it is), so that a destroy of a VM already gone
// deletes exactly that one (decision: seed-location).
const privateKeySeed = "seed"

type seedRecord struct {
	// VolID is the seed's volume id, <storage>:iso/<file>.
	VolID string `json:"volid,omitempty"`
	// File is what earlier releases recorded: the file name on iso_storage.
	File string `json:"file,omitempty"`
}

// writeSeed records the VM's seed volume; "" leaves the record as it is.
func writeSeed(ctx context.Context, p privateSetter, volid string) diag.Diagnostics {
	if volid == "" || isNilPrivate(p) {
		return nil
	}
	return writePrivateRecord(ctx, p, privateKeySeed, seedRecord{VolID: volid}, "Unable to record the proxy VM's seed ISO")
}

// readSeed returns the recorded seed: its volume id, or the bare file name an earlier
// release recorded (which the backend takes to be on iso_storage); "" when none.
func readSeed(ctx context.Context, p privateGetter) string {
	r, ok := readPrivateRecord[seedRecord](ctx, p, privateKeySeed, "seed")
	if !ok {
		return ""
	}
	if r.VolID != "" {
		return r.VolID
	}
	return r.File
}

// readPrivateRecord reads the JSON record under key into a T; ok is false when there is
// none, or it is unreadable (logged as what, and ignored).
func readPrivateRecord[T any](ctx context.Context, p privateGetter, key, what string) (r T, ok bool) {
	if isNilPrivate(p) {
		return r, false
	}
	raw, diags := p.GetKey(ctx, key)
	if diags.HasError() || len(raw) == 0 {
		return r, false
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		tflog.Debug(ctx, "proxy VM "+what+" record unreadable, ignored", map[string]any{"error": err.Error()})
		return r, false
	}
	return r, true
}

// writePrivateRecord stores r as JSON under key; summary titles the error.
func writePrivateRecord(ctx context.Context, p privateSetter, key string, r any, summary string) diag.Diagnostics {
	raw, err := json.Marshal(r)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError(summary, err.Error())
		return diags
	}
	return p.SetKey(ctx, key, raw)
}

// isNilPrivate reports a private state the caller did not set up (a response built by hand
// in a test; the framework always provides one).
func isNilPrivate(p any) bool {
	v := reflect.ValueOf(p)
	return p == nil || (v.Kind() == reflect.Pointer && v.IsNil())
}
