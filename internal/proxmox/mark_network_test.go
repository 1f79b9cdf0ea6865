package proxmox

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
)

// TestStaticIPv4Mark: the static line reads back what was written, every field optional
// but the address, and a line this provider did not write reads as no line.
func TestStaticIPv4Mark(t *testing.T) {
	full := nocloud.StaticIPv4{
		Address: netip.MustParsePrefix("10.0.0.5/24"), Gateway: netip.MustParseAddr("10.0.0.1"),
		DNS:    []netip.Addr{netip.MustParseAddr("10.0.0.53"), netip.MustParseAddr("fd00::53")},
		Search: []string{"corp.example", "example.org"},
	}
	if got, want := FormatStaticIPv4(full), "address=10.0.0.5/24 gateway=10.0.0.1 dns=10.0.0.53,fd00::53 search=corp.example,example.org"; got != want {
		t.Errorf("FormatStaticIPv4 = %q, want %q", got, want)
	}
	for _, s := range []nocloud.StaticIPv4{full, {Address: netip.MustParsePrefix("192.168.1.9/32")}} {
		got, ok := ParseStaticIPv4(FormatStaticIPv4(s))
		if !ok || !reflect.DeepEqual(got, s) {
			t.Errorf("round trip of %+v: %+v, %v", s, got, ok)
		}
	}
	for _, bad := range []string{
		"", "gateway=10.0.0.1", "address=10.0.0.5", "address=10.0.0.5/24 mtu=1500",
		"address=10.0.0.5/24 address=10.0.0.6/24", "address=10.0.0.5/24 dns=10.0.0.53,nope",
		"address=10.0.0.5/24 gateway=10.9.0.1", "address=10.0.0.5/24 gateway=",
	} {
		if s, ok := ParseStaticIPv4(bad); ok {
			t.Errorf("ParseStaticIPv4(%q) = %+v, want not ok", bad, s)
		}
	}

	desc := MarkLines{UID: "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10"}.Format() +
		FormatMarkExtra(Spec{Network: &NetworkConfig{Static: &full}, NetworkDigest: "sha256:ab"})
	if !strings.Contains(desc, "\n"+MarkKeyStaticIPv4+"=address=10.0.0.5/24 ") {
		t.Fatalf("the mark has no static line:\n%s", desc)
	}
	m := ParseMarkExtra(desc + "\n" + MarkKeyStaticIPv4 + "=address=10.9.9.9/24")
	if m.Static == nil || !reflect.DeepEqual(*m.Static, full) || m.NetworkDigest != "sha256:ab" {
		t.Errorf("ParseMarkExtra: static %+v digest %q, want the first line's and sha256:ab", m.Static, m.NetworkDigest)
	}
	if m.StaticUnreadable {
		t.Errorf("a readable static line reported unreadable")
	}
	if bad := ParseMarkExtra(MarkKeyStaticIPv4 + "=garbage here"); bad.Static != nil || !bad.StaticUnreadable {
		t.Errorf("an edited static line: %+v, want no static and unreadable", bad)
	}
	raw := FormatMarkExtra(Spec{Network: &NetworkConfig{Raw: []byte("version: 2\n")}, NetworkDigest: "sha256:cd"})
	if strings.Contains(raw, MarkKeyStaticIPv4) || ParseMarkExtra(raw).Static != nil {
		t.Errorf("a raw network-config wrote a static line:\n%s", raw)
	}
}
