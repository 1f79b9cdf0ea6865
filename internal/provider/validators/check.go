package validators

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// Check is a string validator made of a description and a check of a known value: check
// returns the error's summary and detail for a value it refuses, or an empty summary. A
// null or unknown value is not checked. It saves a type and three methods per validator
// that needs only a function.
func Check(description string, check func(value string) (summary, detail string)) validator.String {
	return checkFunc{description: description, check: check}
}

type checkFunc struct {
	description string
	check       func(string) (string, string)
}

func (c checkFunc) Description(context.Context) string { return c.description }

func (c checkFunc) MarkdownDescription(context.Context) string { return c.description }

func (c checkFunc) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if summary, detail := c.check(req.ConfigValue.ValueString()); summary != "" {
		resp.Diagnostics.AddAttributeError(req.Path, summary, detail)
	}
}
