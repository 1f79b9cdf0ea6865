package provider

import (
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestVMIdentityFacet_identify: the ID is vms/<vmid>/<name>, the uid is kept as the mark has it
// (empty too), and a zero creation time is null.
func TestVMIdentityFacet_identify(t *testing.T) {
	var f vmIdentityFacet
	f.identify(proxmox.ID{VMID: 105967, Name: "proxy-a"}, "u-1", time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)))
	want := vmIdentityFacet{ID: types.StringValue("vms/105967/proxy-a"), Name: types.StringValue("proxy-a"),
		VMID: types.Int64Value(105967), UID: types.StringValue("u-1"), CreatedAt: types.StringValue("2026-01-02T02:04:05Z")}
	if f != want {
		t.Errorf("identify = %+v, want %+v", f, want)
	}
	f.read(onVM(proxmox.VM{ID: proxmox.ID{VMID: 101, Name: "b"}}))
	if f.UID.ValueString() != "" || f.UID.IsNull() || !f.CreatedAt.IsNull() || f.ID.ValueString() != "vms/101/b" {
		t.Errorf("read of a mark without uid and creation time = %+v, want an empty uid and a null created_at", f)
	}
}

// TestVMIdentityFacet_readKeepsTheRecordOfAnEditedMark: a VM whose mark was edited outside
// Terraform (wiped: no creation time, or rewritten: another one), which the state's record
// alone shows the resource's, keeps the recorded created_at, which the update writes back;
// a mark not edited gives its own.
func TestVMIdentityFacet_readKeepsTheRecordOfAnEditedMark(t *testing.T) {
	const recorded = "2026-01-02T02:04:05Z"
	id := proxmox.ID{VMID: 101, Name: "b"}
	for _, other := range []time.Time{{}, time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)} {
		f := vmIdentityFacet{CreatedAt: types.StringValue(recorded)}
		f.read(onVM(proxmox.VM{ID: id, UID: "u-1", CreatedAt: other, MarkEdited: true}))
		if f.CreatedAt.ValueString() != recorded || f.UID.ValueString() != "u-1" {
			t.Errorf("read of an edited mark (created %v) = %+v, want the recorded created_at", other, f)
		}
	}
	f := vmIdentityFacet{CreatedAt: types.StringValue(recorded)}
	f.read(onVM(proxmox.VM{ID: id, UID: "u-1", CreatedAt: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}))
	if f.CreatedAt.ValueString() != "2026-05-06T07:08:09Z" {
		t.Errorf("read of a mark not edited = %+v, want its created_at", f)
	}
}

// TestVMIdentityFacet_specAndNullUnknown: a create's spec carries the name and the minted
// uid; the partial state's unknown values are null.
func TestVMIdentityFacet_specAndNullUnknown(t *testing.T) {
	f := vmIdentityFacet{ID: types.StringUnknown(), Name: types.StringValue("proxy-a"), VMID: types.Int64Unknown(),
		UID: types.StringValue("u-1"), CreatedAt: types.StringUnknown()}
	var s proxmox.Spec
	f.spec(intoSpec(&s))
	if s.Name != "proxy-a" || s.UID != "u-1" {
		t.Errorf("spec name %q uid %q, want proxy-a u-1", s.Name, s.UID)
	}
	f.nullUnknown()
	if !f.ID.IsNull() || !f.VMID.IsNull() || !f.CreatedAt.IsNull() || f.Name.ValueString() != "proxy-a" || f.UID.ValueString() != "u-1" {
		t.Errorf("nullUnknown = %+v, want id, vmid and created_at null, name and uid kept", f)
	}
}
