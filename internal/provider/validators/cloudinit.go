package validators

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// cloudInitMarkers are the starts cloud-init recognises as a user-data format (cloud-init's
// "User data formats": cloud-config, a script, MIME multipart, include files, boothooks,
// part handlers, cloud-config archives, jinja templates) and gzip's magic, which it
// decompresses first.
var cloudInitMarkers = []string{
	"#cloud-config", // #cloud-config and #cloud-config-archive, #cloud-config-jsonp
	"#!",
	"#include", // #include and #include-once
	"#cloud-boothook",
	"#part-handler",
	"## template: jinja",
	"\x1f\x8b",
}

// CloudInitFormat returns a "" refusal and a warning for user-data that cloud-init would
// not recognise. It never quotes the value (it may hold secrets).
func CloudInitFormat() validator.String { return cloudInit{} }

type cloudInit struct{}

func (cloudInit) Description(context.Context) string {
	return "must not be empty; should start with a cloud-init format marker such as #cloud-config, #! (a script), " +
		"a MIME multipart header, #include, #cloud-boothook, #part-handler or ## template: jinja"
}

func (v cloudInit) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v cloudInit) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	if s == "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid cloud_init",
			"cloud_init is empty. Remove the attribute for a VM without user-data, or set it to a cloud-init document "+
				"such as \"#cloud-config\\n...\".")
		return
	}
	if KnownCloudInitFormat(s) {
		return
	}
	resp.Diagnostics.AddAttributeWarning(req.Path, "cloud_init is not in a format cloud-init recognises",
		"cloud_init does not start with a cloud-init format marker (#cloud-config, #! for a script, a MIME multipart header, "+
			"#include, #cloud-boothook, #part-handler, #cloud-config-archive or ## template: jinja), so cloud-init will most likely "+
			"ignore it and the VM boots without this configuration. Its text is not shown: it is sensitive.")
}

// KnownCloudInitFormat reports whether s starts like a user-data format cloud-init reads
// (a byte order mark and leading blank lines are ignored, as cloud-init does for headers).
func KnownCloudInitFormat(s string) bool {
	if strings.HasPrefix(s, "\x1f\x8b") {
		return true
	}
	s = strings.TrimPrefix(s, "\ufeff")
	s = strings.TrimLeft(s, "\r\n")
	for _, m := range cloudInitMarkers {
		if strings.HasPrefix(s, m) {
			return true
		}
	}
	// MIME headers are case-insensitive.
	lower := strings.ToLower(s)
	return strings.HasPrefix(lower, "content-type: multipart/") || strings.HasPrefix(lower, "mime-version:")
}
