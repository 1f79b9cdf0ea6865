package provider

import (
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestVMSize_cpuType: cpu_type goes into a create's Options, into an update's only when it
// changes (and then the update restarts a running VM), is read back from the VM's Options,
// and is null in a create's partial state while unknown.
func TestVMSize_cpuType(t *testing.T) {
	var spec proxmox.Spec
	vmSize{CPUType: types.StringValue("host")}.spec(&spec, nil)
	if spec.Options["cpu"] != "host" {
		t.Errorf("spec options %v", spec.Options)
	}
	spec = proxmox.Spec{}
	vmSize{CPUType: types.StringUnknown()}.spec(&spec, nil)
	if _, ok := spec.Options["cpu"]; ok {
		t.Errorf("unknown cpu_type in the spec: %v", spec.Options)
	}

	prior := vmSize{Cores: types.Int64Value(1), CPUType: types.StringValue("kvm64")}
	var c proxmox.Changes
	if (vmSize{Cores: types.Int64Value(1), CPUType: types.StringValue("host")}).changes(prior, &c) != true || c.Options["cpu"] != "host" {
		t.Errorf("changed cpu_type: changes %v", c.Options)
	}
	if !restarts(types.StringValue(statusRunning), c) {
		t.Error("a cpu_type change does not restart a running VM")
	}
	c = proxmox.Changes{}
	if (vmSize{Cores: types.Int64Value(1), CPUType: types.StringValue("kvm64")}).changes(prior, &c) || c.Options != nil {
		t.Errorf("same cpu_type: changes %v", c.Options)
	}

	var s vmSize
	s.read(proxmox.VM{Cores: 1, Options: map[string]string{"cpu": "host"}})
	if s.CPUType.ValueString() != "host" {
		t.Errorf("read %v", s.CPUType)
	}
	s.read(proxmox.VM{Cores: 1})
	if !s.CPUType.IsNull() {
		t.Errorf("read without cpu: %v", s.CPUType)
	}
	s = vmSize{CPUType: types.StringUnknown()}
	s.nullUnknown()
	if !s.CPUType.IsNull() {
		t.Errorf("partial state: %v", s.CPUType)
	}
}

// TestVMSize_cpuTypeAgreesWithSimulator: the plan-time check of cpu_type (cpuTypeRE) and the
// simulator's CPU models (qemu-server CPUConfig.pm's built-in and QEMU models) are two
// lists of one fact, kept apart by the layering: every model Proxmox accepts passes the
// plan, and the values the docs name are models Proxmox knows.
func TestVMSize_cpuTypeAgreesWithSimulator(t *testing.T) {
	models := pvesim.CPUModels()
	if len(models) < 50 {
		t.Fatalf("only %d simulator CPU models", len(models))
	}
	for _, m := range models {
		if !cpuTypeRE.MatchString(m) {
			t.Errorf("Proxmox accepts cpu %q, the plan refuses it", m)
		}
	}
	for _, m := range []string{"host", "x86-64-v2-AES", "kvm64", "Skylake-Server-v4", "Opteron_G5"} {
		if !slices.Contains(models, m) {
			t.Errorf("cpu_type's description or check names %q, which Proxmox does not know", m)
		}
	}
}
