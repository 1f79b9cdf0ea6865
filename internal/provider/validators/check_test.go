package validators

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestCheck(t *testing.T) {
	v := Check("must be even", func(s string) (string, string) {
		if len(s)%2 != 0 {
			return "Odd value", "the value has " + s + " in it"
		}
		return "", ""
	})
	if v.Description(context.Background()) != "must be even" || v.MarkdownDescription(context.Background()) != "must be even" {
		t.Errorf("description %q", v.Description(context.Background()))
	}
	for _, tc := range []struct {
		value  types.String
		errors int
	}{
		{types.StringValue("ab"), 0},
		{types.StringValue("abc"), 1},
		{types.StringNull(), 0},
		{types.StringUnknown(), 0},
	} {
		var resp validator.StringResponse
		v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: tc.value}, &resp)
		if got := resp.Diagnostics.ErrorsCount(); got != tc.errors {
			t.Errorf("%s: %d errors, want %d", tc.value, got, tc.errors)
		}
		if tc.errors > 0 {
			d := resp.Diagnostics.Errors()[0]
			if d.Summary() != "Odd value" || !strings.Contains(d.Detail(), "abc") {
				t.Errorf("diagnostic %q: %q", d.Summary(), d.Detail())
			}
		}
	}
}
