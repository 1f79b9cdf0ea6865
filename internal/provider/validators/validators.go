// Package validators holds the provider's reusable attribute validators. None of them
// echoes the value it rejects when the value may be secret.
package validators

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

const summary = "Invalid Attribute Value"

var (
	_ validator.String = httpsURL{}
	_ validator.String = duration{}
	_ validator.String = apiToken{}
	_ validator.String = pemCertificates{}
)

// HTTPSURL accepts an https URL with a host, no user info, query or fragment, and no path
// other than "/" or "/api2/json".
func HTTPSURL() validator.String { return httpsURL{} }

type httpsURL struct{}

func (httpsURL) Description(context.Context) string {
	return `must be an https URL with a host and no path other than "/" or "/api2/json", e.g. https://pve.example.com:8006`
}

func (v httpsURL) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v httpsURL) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := CheckHTTPSURL(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, summary,
			fmt.Sprintf("Attribute %s %s: %s.", req.Path, v.Description(ctx), err))
	}
}

// CheckHTTPSURL is the HTTPSURL rule for values that come from elsewhere (the
// environment). Its errors never quote the URL (it could carry user info).
func CheckHTTPSURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil || s == "":
		return fmt.Errorf("the value is not a URL")
	case u.Scheme != "https":
		return fmt.Errorf("the scheme is %q, not https", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("the URL has no host")
	case u.User != nil:
		return fmt.Errorf("the URL carries user info; put the credentials in api_token")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Errorf("the URL has a query or a fragment")
	}
	switch strings.TrimSuffix(u.Path, "/") {
	case "", "/api2/json":
		return nil
	default:
		return fmt.Errorf("the URL has the path %q", u.Path)
	}
}

// Duration accepts a Go duration string (time.ParseDuration: "30s", "2m", "1m30s") above
// zero.
func Duration() validator.String { return duration{} }

type duration struct{}

func (duration) Description(context.Context) string {
	return `must be a duration above zero such as "30s", "2m" or "1m30s" (units ns, us, ms, s, m, h)`
}

func (v duration) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v duration) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	if err != nil || d <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, summary,
			fmt.Sprintf("Attribute %s %s, got: %q.", req.Path, v.Description(ctx), req.ConfigValue.ValueString()))
	}
}

// tokenRE is <user>@<realm>!<tokenid>=<secret>, no whitespace anywhere.
var tokenRE = regexp.MustCompile(`^[^\s@!=]+@[^\s@!=]+![^\s@!=]+=\S+$`)

// APIToken accepts a Proxmox API token "<user>@<realm>!<tokenid>=<secret>". Its diagnostic
// never quotes the value.
func APIToken() validator.String { return apiToken{} }

type apiToken struct{}

func (apiToken) Description(context.Context) string {
	return "must be a Proxmox API token of the form <user>@<realm>!<tokenid>=<secret>, without whitespace"
}

func (v apiToken) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v apiToken) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if !ValidAPIToken(req.ConfigValue.ValueString()) {
		resp.Diagnostics.AddAttributeError(req.Path, summary,
			fmt.Sprintf("Attribute %s %s (the value is not shown: it is secret).", req.Path, v.Description(ctx)))
	}
}

// ValidAPIToken reports whether s has the token form.
func ValidAPIToken(s string) bool { return tokenRE.MatchString(s) }

// PEMCertificates accepts one or more PEM CERTIFICATE blocks that parse as X.509.
func PEMCertificates() validator.String { return pemCertificates{} }

type pemCertificates struct{}

func (pemCertificates) Description(context.Context) string {
	return "must hold one or more PEM-encoded X.509 certificates (-----BEGIN CERTIFICATE-----)"
}

func (v pemCertificates) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v pemCertificates) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := CheckPEMCertificates(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, summary,
			fmt.Sprintf("Attribute %s %s: %s.", req.Path, v.Description(ctx), err))
	}
}

// CheckPEMCertificates parses every PEM block of s; it needs at least one certificate and
// accepts nothing else.
func CheckPEMCertificates(s string) error {
	rest := []byte(s)
	n := 0
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("block %d is a %q block, not a CERTIFICATE", n+1, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d does not parse: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("no PEM certificate found")
	}
	if strings.TrimSpace(string(rest)) != "" {
		return fmt.Errorf("text after the last certificate is not PEM")
	}
	return nil
}
