package provider

import (
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// withProofKey gives the backend the key a create proves its creating mark with, derived
// from the API token's secret (decision: creating-proof): read through the client, so a
// token file rotated meanwhile gives the new key. Neither the secret nor the key is ever
// logged.
func withProofKey(c proxmox.Config, client interface{ DerivedKey(string) ([]byte, error) }) proxmox.Config {
	c.ProofKey = func() ([]byte, error) { return client.DerivedKey(proxmox.ProofKeyLabel) }
	return c
}
