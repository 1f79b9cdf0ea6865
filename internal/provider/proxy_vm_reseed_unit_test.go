package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestPlanReseed: with cloud_init_change = "restart" a change of the seed's content is taken
// out of the replacement and the plan says what the apply does to the VM; with "replace"
// (or no prior: a create) the replacement stays.
func TestPlanReseed(t *testing.T) {
	ci := []path.Path{path.Root("cloud_init")}
	for _, tc := range []struct {
		name, mode, status string
		started, reboot    bool
		wantReseed         bool
		wantSummary        string
	}{
		{"replace keeps the replacement", "replace", "running", true, true, false, ""},
		{"restart of a running VM", "restart", "running", true, true, true, "Proxy VM will be restarted"},
		{"restart deferred", "restart", "running", true, false, true, "Proxy VM change pending"},
		{"stopped VM", "restart", "stopped", false, true, true, "Proxy VM seed replaced in place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prior := proxyVMModel{Name: types.StringValue("egress"), Status: types.StringValue(tc.status), IPAddress: types.StringValue("10.0.0.5")}
			plan := prior
			plan.CloudInitChange = types.StringValue(tc.mode)
			plan.Started = types.BoolValue(tc.started)
			plan.RebootOnChange = types.BoolValue(tc.reboot)
			replace, reseed, diags := planReseed(context.Background(), proxyVMModel{}, &plan, &prior, ci)
			if reseed != tc.wantReseed || (len(replace) == 0) != tc.wantReseed {
				t.Fatalf("reseed %v, replace %v", reseed, replace)
			}
			if tc.wantSummary == "" {
				if len(diags) != 0 {
					t.Errorf("diagnostics %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary() != tc.wantSummary || !strings.Contains(diags[0].Detail(), "SSH host keys") {
				t.Fatalf("diagnostics %v, want one %q saying what a new instance-id does", diags, tc.wantSummary)
			}
			if restart := tc.wantSummary == "Proxy VM will be restarted"; restart != plan.IPAddress.IsUnknown() {
				t.Errorf("ip_address %s with restart %v", plan.IPAddress, restart)
			}
		})
	}
	prior := proxyVMModel{Status: types.StringValue("running")}
	if replace, reseed, _ := planReseed(context.Background(), proxyVMModel{}, &proxyVMModel{CloudInitChange: types.StringValue("restart")}, nil, ci); reseed || len(replace) != 1 {
		t.Errorf("a create: reseed %v replace %v", reseed, replace)
	}
	if _, reseed, _ := planReseed(context.Background(), proxyVMModel{}, &proxyVMModel{CloudInitChange: types.StringValue("restart")}, &prior, nil); reseed {
		t.Errorf("no seed change: reseed planned")
	}
}
