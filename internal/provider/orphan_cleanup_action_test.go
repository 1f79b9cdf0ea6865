package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// grace_period is refused below minGracePeriod (a create may still be running), and
// when it is not a duration, naming the value and the bound.
func TestOrphanCleanup_gracePeriodValidator(t *testing.T) {
	for value, ok := range map[string]bool{"2h": true, minGracePeriod.String(): true, "30s": false, "two hours": false} {
		var r validator.StringResponse
		graceValidator().ValidateString(context.Background(),
			validator.StringRequest{Path: path.Root("grace_period"), ConfigValue: types.StringValue(value)}, &r)
		if r.Diagnostics.HasError() == ok {
			t.Errorf("grace_period %q: accepted %v, want %v", value, !ok, ok)
			continue
		}
		if !ok {
			d := r.Diagnostics.Errors()[0]
			if d.Summary() != "Invalid grace_period" || !strings.Contains(d.Detail(), value) || !strings.Contains(d.Detail(), minGracePeriod.String()) {
				t.Errorf("grace_period %q: %q: %q", value, d.Summary(), d.Detail())
			}
		}
	}
}
