package validators

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestCloudInitFormat(t *testing.T) {
	ctx := context.Background()
	for text, want := range map[string]string{
		"#cloud-config\nhostname: p\n":                        "",
		"#!/bin/sh\necho hi\n":                                "",
		"\ufeff#cloud-config\n":                               "",
		"\n#cloud-config\n":                                   "",
		"#include\nhttps://example.com/ud\n":                  "",
		"#include-once\nhttps://example.com/ud\n":             "",
		"#cloud-boothook\n#!/bin/sh\n":                        "",
		"#part-handler\ndef list_types(): pass\n":             "",
		"#cloud-config-archive\n- type: text/x-shellscript\n": "",
		"## template: jinja\n#cloud-config\n":                 "",
		"Content-Type: multipart/mixed; boundary=x\n":         "",
		"content-type: multipart/mixed; boundary=x\n":         "",
		"MIME-Version: 1.0\nContent-Type: multipart/mixed\n":  "",
		"\x1f\x8b\x08\x00":                                    "",
		"hostname: p\npackages: [SENTINEL]\n":                 "warning",
		"cloud-config\n":                                      "warning",
		"":                                                    "error",
	} {
		var resp validator.StringResponse
		CloudInitFormat().ValidateString(ctx, validator.StringRequest{Path: path.Root("cloud_init"), ConfigValue: types.StringValue(text)}, &resp)
		got := ""
		switch {
		case resp.Diagnostics.HasError():
			got = "error"
		case resp.Diagnostics.WarningsCount() > 0:
			got = "warning"
		}
		if got != want {
			t.Errorf("%q: %s, want %q", text, got, want)
		}
		for _, d := range resp.Diagnostics {
			if strings.Contains(d.Detail(), "SENTINEL") {
				t.Errorf("the diagnostic quotes the value: %s", d.Detail())
			}
		}
	}
	var resp validator.StringResponse
	CloudInitFormat().ValidateString(ctx, validator.StringRequest{ConfigValue: types.StringNull()}, &resp)
	if len(resp.Diagnostics) != 0 {
		t.Errorf("null: %v", resp.Diagnostics)
	}
}
