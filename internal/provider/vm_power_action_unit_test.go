package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestVMPowerAction_schema: the power values, and the validators that refuse a malformed id
// and a shutdown_timeout above the action's bound at validate time, on their attribute.
func TestVMPowerAction_schema(t *testing.T) {
	var resp action.SchemaResponse
	NewVMPowerAction().Schema(context.Background(), action.SchemaRequest{}, &resp)
	for _, a := range []string{"id", "uid", "power"} {
		if !resp.Schema.Attributes[a].IsRequired() {
			t.Errorf("%s is not required", a)
		}
	}
	desc := resp.Schema.Attributes["power"].GetMarkdownDescription()
	for _, op := range []string{`"start"`, `"shutdown"`, `"reboot"`, `"stop"`} {
		if !strings.Contains(desc, op) {
			t.Errorf("power's description does not document %s", op)
		}
	}
	check := func(v validator.String, value string) bool {
		var r validator.StringResponse
		v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: types.StringValue(value)}, &r)
		return !r.Diagnostics.HasError()
	}
	for id, ok := range map[string]bool{"vms/104211/proxy-a": true, "104211": false, "vms/99/proxy-a": false, "vms/104211/": false} {
		if check(vmIDValidator{}, id) != ok {
			t.Errorf("id %q accepted %v, want %v", id, !ok, ok)
		}
	}
	for d, ok := range map[string]bool{"10m": true, "30s": true, "11m": false} {
		if check(maxDuration{max: actionMaxShutdown}, d) != ok {
			t.Errorf("shutdown_timeout %q accepted %v, want %v", d, !ok, ok)
		}
	}
}
