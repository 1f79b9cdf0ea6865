package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestWarnNetworkConfigNoIPv4: the plan warns on network_config when a VM to be created
// waits for an IPv4 its network_config does not give, and only then.
func TestWarnNetworkConfigNoIPv4(t *testing.T) {
	const empty, dhcp = "version: 2\nethernets: {}\n", "version: 2\nethernets:\n  ens18:\n    dhcp4: true\n"
	model := func(nc string, wait types.Bool) proxyVMModel {
		m := proxyVMModel{vmNetwork: vmNetwork{NetworkConfig: types.StringValue(nc)}, vmPower: vmPower{WaitForIP: wait}}
		if nc == "" {
			m.NetworkConfig = types.StringNull()
		}
		return m
	}
	cases := []struct {
		name   string
		config proxyVMModel
		prior  *proxyVMModel
		warn   bool
	}{
		{"create, wait_for_ip unset", model(empty, types.BoolNull()), nil, true},
		{"create, wait_for_ip true", model(empty, types.BoolValue(true)), nil, true},
		{"replacement by a new network_config", model(empty, types.BoolNull()), &proxyVMModel{vmNetwork: vmNetwork{NetworkConfig: types.StringValue(dhcp)}}, true},
		{"create, wait_for_ip false", model(empty, types.BoolValue(false)), nil, false},
		{"create, wait_for_ip unknown", model(empty, types.BoolUnknown()), nil, false},
		{"create with DHCP", model(dhcp, types.BoolNull()), nil, false},
		{"no network_config", model("", types.BoolNull()), nil, false},
		{"network_config unknown", proxyVMModel{vmNetwork: vmNetwork{NetworkConfig: types.StringUnknown()}, vmPower: vmPower{WaitForIP: types.BoolNull()}}, nil, false},
		{"unchanged VM", model(empty, types.BoolNull()), &proxyVMModel{vmNetwork: vmNetwork{NetworkConfig: types.StringValue(empty)}}, false},
	}
	for _, tc := range cases {
		d := warnNetworkConfigNoIPv4(tc.config, tc.prior)
		if d.HasError() || (len(d) == 1) != tc.warn || len(d) > 1 {
			t.Errorf("%s: diagnostics %v, want a warning: %v", tc.name, d, tc.warn)
			continue
		}
		if tc.warn {
			w, ok := d[0].(interface{ Path() path.Path })
			if !ok || !w.Path().Equal(path.Root("network_config")) || !strings.Contains(d[0].Detail(), "wait_for_ip = false") {
				t.Errorf("%s: warning %v, want one on network_config naming wait_for_ip = false", tc.name, d[0])
			}
		}
	}
}
