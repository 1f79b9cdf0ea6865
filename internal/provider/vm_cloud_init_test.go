package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestVMCloudInit_read: an import cannot read the text back (cloud_init and cloud_init_wo
// null) and reads the digest from the mark (null when the mark has none); cloud_init_change
// gets its default when it has none, and a refresh reads none of the rest.
func TestVMCloudInit_read(t *testing.T) {
	c := vmCloudInit{CloudInit: types.StringValue("x"), CloudInitWO: types.StringValue("y"), CloudInitChange: types.StringValue("restart")}
	imported := func(vm proxmox.VM) *facetCtx { return &facetCtx{vm: vm, imported: true} }
	c.read(imported(proxmox.VM{MarkExtra: proxmox.MarkExtra{UserDataDigest: "hmac-sha256:ab"}}))
	if !c.CloudInit.IsNull() || !c.CloudInitWO.IsNull() || c.CloudInitDigest.ValueString() != "hmac-sha256:ab" {
		t.Errorf("import read: cloud_init %v cloud_init_wo %v digest %v", c.CloudInit, c.CloudInitWO, c.CloudInitDigest)
	}
	if c.CloudInitChange.ValueString() != "restart" {
		t.Errorf("read changed cloud_init_change: %v", c.CloudInitChange)
	}
	c.read(onVM(proxmox.VM{})) // a refresh
	if c.CloudInitDigest.ValueString() != "hmac-sha256:ab" {
		t.Errorf("a refresh read the digest: %v", c.CloudInitDigest)
	}
	c.read(imported(proxmox.VM{}))
	if !c.CloudInitDigest.IsNull() {
		t.Errorf("a mark without digest read as %v", c.CloudInitDigest)
	}

	m := proxyVMModel{}
	m.vmCloudInit.read(onVM(proxmox.VM{}))
	if m.CloudInitChange.ValueString() != cloudInitChangeReplace {
		t.Errorf("imported cloud_init_change %v, want %q", m.CloudInitChange, cloudInitChangeReplace)
	}
	m.CloudInitChange = types.StringValue(cloudInitChangeRestart)
	m.vmCloudInit.read(onVM(proxmox.VM{}))
	if m.CloudInitChange.ValueString() != cloudInitChangeRestart {
		t.Errorf("a set cloud_init_change overwritten: %v", m.CloudInitChange)
	}
}

// TestVMCloudInit_nullUnknown: values still unknown are null in a create's partial state;
// known ones stay.
func TestVMCloudInit_nullUnknown(t *testing.T) {
	c := vmCloudInit{CloudInit: types.StringUnknown(), CloudInitWO: types.StringUnknown(),
		CloudInitDigest: types.StringUnknown(), CloudInitChange: types.StringUnknown()}
	c.nullUnknown()
	if !c.CloudInit.IsNull() || !c.CloudInitWO.IsNull() || !c.CloudInitDigest.IsNull() || !c.CloudInitChange.IsNull() {
		t.Errorf("partial state: %+v", c)
	}
	known := vmCloudInit{CloudInit: types.StringValue("#cloud-config\n"), CloudInitWO: types.StringNull(),
		CloudInitDigest: types.StringValue("hmac-sha256:ab"), CloudInitChange: types.StringValue("replace")}
	want := known
	known.nullUnknown()
	if known != want {
		t.Errorf("known values changed: %+v", known)
	}
}

// TestVMCloudInit_spec: a create carries the planned cloud_init as the user-data; an
// unknown or null one carries none (a write-only text is the configuration's,
// applyCloudInitWO).
func TestVMCloudInit_spec(t *testing.T) {
	var s proxmox.Spec
	vmCloudInit{CloudInit: types.StringValue("#cloud-config\n")}.spec(intoSpec(&s))
	if string(s.UserData) != "#cloud-config\n" {
		t.Errorf("user-data %q", s.UserData)
	}
	for _, v := range []types.String{types.StringNull(), types.StringUnknown()} {
		s = proxmox.Spec{}
		vmCloudInit{CloudInit: v, CloudInitWO: types.StringNull()}.spec(intoSpec(&s))
		if s.UserData != nil {
			t.Errorf("cloud_init %v: user-data %q", v, s.UserData)
		}
	}
}

// TestVMCloudInit_changes: an update carries the user-data a seed rebuild needs (the
// planned text, else the prior one, else empty for a VM made without, unknown for an
// import that never set it), and never a seed swap or another change of its own.
func TestVMCloudInit_changes(t *testing.T) {
	set, other, null := types.StringValue("#cloud-config\n"), types.StringValue("#cloud-config\n# b\n"), types.StringNull()
	for _, tc := range []struct {
		name        string
		plan, prior types.String
		unread      bool
		want        string
		known       bool
	}{
		{"configured", set, set, false, "#cloud-config\n", true},
		{"planned text first", other, set, false, "#cloud-config\n# b\n", true},
		{"removed: the prior text", null, set, false, "#cloud-config\n", true},
		{"unknown plan: the prior text", types.StringUnknown(), set, false, "#cloud-config\n", true},
		{"set after an import", set, null, true, "#cloud-config\n", true},
		{"made without cloud_init", null, null, false, "", true},
		{"imported, never set", null, null, true, "", false},
	} {
		c := proxmox.Changes{UserData: []byte("stale"), UserDataKnown: true}
		vmCloudInit{CloudInit: tc.plan}.changes(&facetCtx{prior: &proxyVMModel{vmCloudInit: vmCloudInit{CloudInit: tc.prior}}, changes: &c, cloudInitUnread: tc.unread})
		if string(c.UserData) != tc.want || c.UserDataKnown != tc.known || (tc.known && c.UserData == nil) {
			t.Errorf("%s: %q, %t; want %q, %t", tc.name, c.UserData, c.UserDataKnown, tc.want, tc.known)
		}
		if c.Reseed != nil || c.Cores != nil || c.Bridge != nil {
			t.Errorf("%s: changes beyond the user-data: %+v", tc.name, c)
		}
	}
}

// TestVMCloudInit_attrs: the resource's cloud-init attributes keep their schema flags
// (cloud_init sensitive, cloud_init_wo write-only and sensitive, cloud_init_digest
// computed, cloud_init_change defaulting to replace, seed_generation computed), described by
// md and change.
func TestVMCloudInit_attrs(t *testing.T) {
	res := resourceAttributes(cloudInitAttrs())
	if len(res) != 5 {
		t.Fatalf("%d attributes", len(res))
	}
	if !res["cloud_init"].IsSensitive() || !res["cloud_init"].IsOptional() || res["cloud_init"].IsComputed() {
		t.Error("cloud_init: want optional and sensitive")
	}
	if !res["cloud_init_wo"].IsWriteOnly() || !res["cloud_init_wo"].IsSensitive() {
		t.Error("cloud_init_wo: want write-only and sensitive")
	}
	if !res["cloud_init_digest"].IsComputed() || res["cloud_init_digest"].IsOptional() {
		t.Error("cloud_init_digest: want computed only")
	}
	if !res["cloud_init_change"].IsComputed() || !res["cloud_init_change"].IsOptional() {
		t.Error("cloud_init_change: want optional and computed")
	}
	if !res["seed_generation"].IsComputed() || res["seed_generation"].IsOptional() {
		t.Error("seed_generation: want computed only")
	}
	for _, a := range cloudInitAttrs() {
		if res[a.name].GetMarkdownDescription() != joinMD(a.md, a.change) || a.md == "" {
			t.Errorf("%s: markdown %q", a.name, res[a.name].GetMarkdownDescription())
		}
	}
}
