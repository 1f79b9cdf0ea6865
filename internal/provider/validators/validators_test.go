package validators

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestCheckHTTPSURL(t *testing.T) {
	ok := []string{"https://pve:8006", "https://pve:8006/", "https://10.0.0.1:8006/api2/json", "https://[::1]:8006/api2/json/", "https://pve.example.com"}
	for _, s := range ok {
		if err := CheckHTTPSURL(s); err != nil {
			t.Errorf("CheckHTTPSURL(%q) = %v", s, err)
		}
	}
	bad := map[string]string{
		"":                         "not a URL",
		"http://pve:8006":          "not https",
		"pve:8006":                 "not https",
		"https://":                 "no host",
		"https://:8006":            "no host",
		"https://u:SECRET@pve":     "user info",
		"https://pve/?x=1":         "query",
		"https://pve/#f":           "fragment",
		"https://pve/api2/extjs":   "path",
		"https://pve:8006/x/api2/": "path",
	}
	for s, want := range bad {
		err := CheckHTTPSURL(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckHTTPSURL(%q) = %v, want %q", s, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("CheckHTTPSURL(%q) quotes the user info", s)
		}
	}
}

func TestValidAPIToken(t *testing.T) {
	for _, s := range []string{"root@pam!ci=0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10", "proxy-operator@pve!tf=x"} {
		if !ValidAPIToken(s) {
			t.Errorf("ValidAPIToken(%q) = false", s)
		}
	}
	for _, s := range []string{"", "root@pam", "root@pam!ci", "root@pam!ci=", "rootpam!ci=x", "root@pam!ci=x y", "root@pam!ci=x\n", "@pam!ci=x", "root@!ci=x", "root@pam!=x"} {
		if ValidAPIToken(s) {
			t.Errorf("ValidAPIToken(%q) = true", s)
		}
	}
}

func TestCheckPEMCertificates(t *testing.T) {
	if err := CheckPEMCertificates("junk"); err == nil {
		t.Error("junk accepted")
	}
	if err := CheckPEMCertificates("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("bad DER: %v", err)
	}
}

// TestValidators_unknownAndNull: every validator skips null and unknown values.
func TestValidators_unknownAndNull(t *testing.T) {
	for _, v := range []validator.String{HTTPSURL(), Duration(), APIToken(), PEMCertificates()} {
		for _, val := range []types.String{types.StringNull(), types.StringUnknown()} {
			var resp validator.StringResponse
			v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("a"), ConfigValue: val}, &resp)
			if resp.Diagnostics.HasError() {
				t.Errorf("%T rejected %s", v, val)
			}
		}
		var resp validator.StringResponse
		v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("a"), ConfigValue: types.StringValue("SENTINEL bad")}, &resp)
		if !resp.Diagnostics.HasError() {
			t.Errorf("%T accepted a bad value", v)
		}
		if _, isToken := v.(apiToken); isToken && strings.Contains(resp.Diagnostics.Errors()[0].Detail(), "SENTINEL") {
			t.Error("APIToken quotes the value")
		}
		if v.Description(context.Background()) == "" || v.MarkdownDescription(context.Background()) == "" {
			t.Errorf("%T has no description", v)
		}
	}
}

func TestDuration(t *testing.T) {
	for s, ok := range map[string]bool{"30s": true, "1m30s": true, "500ms": true, "0s": false, "-1s": false, "30": false, "": false, "1d": false} {
		var resp validator.StringResponse
		Duration().ValidateString(context.Background(), validator.StringRequest{Path: path.Root("d"), ConfigValue: types.StringValue(s)}, &resp)
		if resp.Diagnostics.HasError() == ok {
			t.Errorf("Duration(%q): error %v, want ok %v", s, resp.Diagnostics.HasError(), ok)
		}
	}
}
