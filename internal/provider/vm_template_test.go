package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestVMTemplate_read: an import names the template the backend identified, its key only
// when exactly one catalogue key names it, and the machine type only when exactly one
// entry's sizes match; what it cannot tell is null, and an unidentified template says so.
func TestVMTemplate_read(t *testing.T) {
	cfg := &resolvedConfig{
		Templates:    map[string]int{"debian-13": 9001, "a": 9002, "b": 9002},
		MachineTypes: map[string]machineType{"small": {Cores: 1, MemoryMiB: 512}, "large": {Cores: 4, MemoryMiB: 4096, DiskGiB: 20}},
	}
	var tm vmTemplate
	read := func(vm proxmox.VM, templateVMID int) bool {
		fc := &facetCtx{vm: vm, cfg: cfg, imported: true, templateVMID: templateVMID}
		tm.read(fc)
		return !fc.templateUnread
	}
	if !read(proxmox.VM{Cores: 1, MemoryMiB: 512}, 9001) {
		t.Fatal("identified template reported unread")
	}
	if tm.Image.ValueString() != "debian-13" || tm.TemplateVMID.ValueInt64() != 9001 || tm.MachineType.ValueString() != "small" {
		t.Errorf("read %+v", tm)
	}
	if !read(proxmox.VM{Cores: 4, MemoryMiB: 4096, DiskGiB: 8}, 9002) {
		t.Fatal("identified template reported unread")
	}
	if !tm.Image.IsNull() || tm.TemplateVMID.ValueInt64() != 9002 || !tm.MachineType.IsNull() {
		t.Errorf("two keys, disk below the type's: read %+v", tm)
	}
	if read(proxmox.VM{Cores: 4, MemoryMiB: 4096, DiskGiB: 20}, 0) {
		t.Error("unidentified template reported read")
	}
	if !tm.Image.IsNull() || !tm.TemplateVMID.IsNull() || tm.MachineType.ValueString() != "large" {
		t.Errorf("unidentified template: read %+v", tm)
	}
	tm.read(&facetCtx{vm: proxmox.VM{Cores: 1, MemoryMiB: 512}, cfg: cfg, templateVMID: 9001})
	if tm.MachineType.ValueString() != "large" {
		t.Errorf("a refresh read the template: %+v", tm)
	}
}

// TestVMTemplate_specAndNullUnknown: the template VMID goes into a create and the planned
// machine type is handed to the size facet; unknown values are null in a partial state.
func TestVMTemplate_specAndNullUnknown(t *testing.T) {
	cfg := &resolvedConfig{MachineTypes: map[string]machineType{"large": {Cores: 4, MemoryMiB: 4096, DiskGiB: 20}}}
	var s proxmox.Spec
	spec := func(tm vmTemplate) *machineType {
		fc := &facetCtx{spec: &s, cfg: cfg}
		tm.spec(fc)
		return fc.machineType
	}
	mt := spec(vmTemplate{TemplateVMID: types.Int64Value(9001), MachineType: types.StringValue("large")})
	if s.TemplateVMID != 9001 || mt == nil || mt.DiskGiB != 20 {
		t.Errorf("spec %+v, machine type %v", s, mt)
	}
	s = proxmox.Spec{}
	if mt := spec(vmTemplate{TemplateVMID: types.Int64Unknown(), MachineType: types.StringNull()}); mt != nil || s.TemplateVMID != 0 {
		t.Errorf("unknown template: spec %+v, machine type %v", s, mt)
	}
	tm := vmTemplate{Image: types.StringUnknown(), TemplateVMID: types.Int64Unknown(), MachineType: types.StringUnknown()}
	tm.nullUnknown()
	if !tm.Image.IsNull() || !tm.TemplateVMID.IsNull() || !tm.MachineType.IsNull() {
		t.Errorf("partial state %+v", tm)
	}
}
