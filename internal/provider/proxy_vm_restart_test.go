package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestRestartOptions_attributes: every restart option names an attribute of proxy_vm's
// schema and model, so that the plan's checks derived from the list see it.
func TestRestartOptions_attributes(t *testing.T) {
	s := proxyVMSchema(context.Background())
	for _, o := range proxmox.RestartOptions {
		if _, ok := s.Attributes[o.Attr]; !ok {
			t.Errorf("restart option %s: proxy_vm has no attribute %s", o.Key, o.Attr)
		}
		if modelValue(proxyVMModel{}, o.Attr) == nil {
			t.Errorf("restart option %s: proxyVMModel has no field for %s", o.Key, o.Attr)
		}
	}
}

// TestRestartOptionChanges: a changed or unknown value of a restart option's attribute is
// a change; other attributes are not.
func TestRestartOptionChanges(t *testing.T) {
	prior := proxyVMModel{vmSize: vmSize{Cores: types.Int64Value(2), MemoryMiB: types.Int64Value(1024), DiskGiB: types.Int64Value(8)}}
	same := prior
	same.DiskGiB = types.Int64Value(16)
	if restartOptionChanges(prior, same) {
		t.Error("a disk change counted as a restart option change")
	}
	for _, o := range proxmox.RestartOptions {
		for _, v := range []types.Int64{types.Int64Value(4096), types.Int64Unknown()} {
			plan := prior
			switch o.Attr {
			case "cores":
				plan.Cores = v
			case "memory_mib":
				plan.MemoryMiB = v
			default:
				continue
			}
			if !restartOptionChanges(prior, plan) {
				t.Errorf("%s %v: not a restart option change", o.Attr, v)
			}
		}
	}
}
