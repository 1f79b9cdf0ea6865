package validators

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestPoolID_table: Proxmox's pve-poolid (pve-access-control AccessControl.pm
// verify_poolname) and create_pool's leading letter; "" only where allowed.
func TestPoolID_table(t *testing.T) {
	for v, ok := range map[string]bool{
		"proxies": true, "Proxies-1.a_b": true, "team/proxies": true, "a/b/c": true,
		"": false, "a/b/c/d": false, "1proxies": false, "team/1x": false, "pro xies": false, "proxies,vms=100": false,
		"proxies;x": false, "a//b": false, "/a": false, "a/": false, "proxies\n": false, "pool=x": false,
	} {
		resp := &validator.StringResponse{}
		PoolID(false).ValidateString(context.Background(), validator.StringRequest{Path: path.Root("pool"), ConfigValue: types.StringValue(v)}, resp)
		if resp.Diagnostics.HasError() == ok {
			t.Errorf("%q: error %v, want ok %v", v, resp.Diagnostics.HasError(), ok)
		}
	}
	resp := &validator.StringResponse{}
	PoolID(true).ValidateString(context.Background(), validator.StringRequest{Path: path.Root("pool"), ConfigValue: types.StringValue("")}, resp)
	if resp.Diagnostics.HasError() {
		t.Errorf("\"\" refused where no pool is allowed: %v", resp.Diagnostics)
	}
}
