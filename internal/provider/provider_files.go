package provider

import (
	"crypto/x509"
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
)

// checkFiles reads ca_file and api_token_file: a file that is missing, unreadable or does
// not hold what it must is an error on its attribute. The token's text never appears.
func checkFiles(cfg resolvedConfig) diag.Diagnostics {
	var diags diag.Diagnostics
	why := func(err error) string {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "does not exist"
		case errors.Is(err, fs.ErrPermission):
			return "cannot be read by this user (permission denied)"
		default:
			return "cannot be read (" + err.Error() + ")"
		}
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		switch {
		case err != nil:
			diags.AddAttributeError(path.Root("ca_file"), "Unable to read the CA file",
				"ca_file "+cfg.CAFile+" "+why(err)+". Point ca_file at a readable PEM file holding the cluster's CA "+
					"(a copy of /etc/pve/pve-root-ca.pem from any node), or use ca_pem.")
		case !x509.NewCertPool().AppendCertsFromPEM(pem):
			diags.AddAttributeError(path.Root("ca_file"), "Unable to use the CA file",
				"ca_file "+cfg.CAFile+" holds no PEM certificate. Point it at the cluster's CA (/etc/pve/pve-root-ca.pem), or use ca_pem.")
		}
	}
	if cfg.TokenFile != "" {
		b, err := os.ReadFile(cfg.TokenFile)
		switch {
		case err != nil:
			diags.AddAttributeError(path.Root("api_token_file"), "Unable to read the API token file",
				"api_token_file "+cfg.TokenFile+" "+why(err)+". Point it at a readable file holding the token "+
					"<user>@<realm>!<tokenid>=<secret> on one line, or set api_token (or "+envAPIToken+") instead.")
		case !validators.ValidAPIToken(strings.TrimSpace(string(b))):
			diags.AddAttributeError(path.Root("api_token_file"), "Invalid API token file",
				"api_token_file "+cfg.TokenFile+" does not hold a token of the form <user>@<realm>!<tokenid>=<secret> on one line "+
					"(its content is not shown: it is secret).")
		}
	}
	return diags
}
