package pveapi

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeriveKey: one key per secret and label, independent of the token id; a malformed
// token is an ErrCredentials error that does not quote it; the client reads the token
// file each time, so a rotation gives the new key.
func TestDeriveKey(t *testing.T) {
	const a, b = "root@pam!tf=11111111-aaaa-4bbb-8ccc-000000000001", "root@pam!tf=11111111-aaaa-4bbb-8ccc-000000000002"
	ka, err := DeriveKey(a, "label")
	if err != nil || len(ka) != 32 {
		t.Fatalf("DeriveKey: %x, %v", ka, err)
	}
	kb, _ := DeriveKey(b, "label")
	kl, _ := DeriveKey(a, "other label")
	kid, _ := DeriveKey("ops@pve!ci=11111111-aaaa-4bbb-8ccc-000000000001", "label")
	if bytes.Equal(ka, kb) || bytes.Equal(ka, kl) || !bytes.Equal(ka, kid) {
		t.Errorf("keys: another secret %t, another label %t, another token id %t (want false, false, true)",
			bytes.Equal(ka, kb), bytes.Equal(ka, kl), bytes.Equal(ka, kid))
	}
	if bytes.Contains(ka, []byte("11111111-aaaa")) {
		t.Error("the key holds the secret")
	}
	_, err = DeriveKey("SENTINEL-not-a-token", "label")
	if !errors.Is(err, ErrCredentials) || strings.Contains(err.Error(), "SENTINEL") {
		t.Errorf("malformed token: %v", err)
	}

	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(a+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Endpoint: "https://pve.example:8006", TokenFile: file})
	if err != nil {
		t.Fatal(err)
	}
	if k, err := c.DerivedKey("label"); err != nil || !bytes.Equal(k, ka) {
		t.Fatalf("client key %x, %v", k, err)
	}
	if err := os.WriteFile(file, []byte(b+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k, err := c.DerivedKey("label"); err != nil || !bytes.Equal(k, kb) {
		t.Errorf("after the rotation: key %x, %v, want the new token's", k, err)
	}
}
