package pveapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"strings"
)

// A key derived from the API token's secret (decision: creating-proof): HMAC-SHA256 keyed
// by the secret (the part after '='), over a label naming what the key is for. Whoever
// holds the token can compute it, nobody else can, and it never needs a setting of its
// own. HMAC with a fixed label is HKDF's extract step with the label as the salt's
// counterpart: one derived key per purpose, independent of each other and of the secret.
// The secret and the key never leave this function's callers: they are never logged,
// never put in an error, never returned by anything that prints.

// DeriveKey returns the key derived from token (<user>@<realm>!<tokenid>=<secret>) for
// label. A token that is not of that form is an ErrCredentials error that does not quote
// it.
func DeriveKey(token, label string) ([]byte, error) {
	t, err := parseToken(strings.TrimSpace(token), "the API token")
	if err != nil {
		return nil, err
	}
	return t.derive(label), nil
}

func (t apiToken) derive(label string) []byte {
	m := hmac.New(sha256.New, []byte(t.secret))
	m.Write([]byte(label))
	return m.Sum(nil)
}

// DerivedKey returns the key derived from the client's current token for label, reading
// the token file when one is configured (so a rotated token gives the new key). Errors
// wrap ErrCredentials and never quote the token.
func (c *Client) DerivedKey(label string) ([]byte, error) {
	t, err := c.token()
	if err != nil {
		return nil, err
	}
	return t.derive(label), nil
}
