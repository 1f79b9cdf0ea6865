package proxmox

import (
	"strings"
	"testing"
	"time"
)

// TestMarkExtra_roundTrip: the extra lines follow the operator's three, the operator's
// fields still parse from the whole description, and ParseMarkExtra reads them back as
// ParseMark does (CRLF, an admin's lines, first occurrence wins; a line with blanks around
// its key or value is an admin's, not a mark line). A mark
// without them (the operator's) reads as empty.
func TestMarkExtra_roundTrip(t *testing.T) {
	at := time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC)
	desc := FormatMark("u-1", at) + FormatMarkExtra(Spec{UserDataDigest: "hmac-sha256:ab12"})
	if !strings.HasPrefix(desc, FormatMark("u-1", at)+"\n") {
		t.Fatalf("extra lines do not follow the operator's mark: %q", desc)
	}
	if m := ParseMark(desc); !m.Managed || m.UID != "u-1" || !m.CreatedAt.Equal(at) {
		t.Fatalf("the operator's fields of %q: %+v", desc, m)
	}
	want := MarkExtra{CreatedBy: CreatedByProvider, UserDataDigest: "hmac-sha256:ab12"}
	if got := ParseMarkExtra(desc); got != want {
		t.Fatalf("ParseMarkExtra(%q) = %+v, want %+v", desc, got, want)
	}
	messy := "note by admin\r\n " + MarkKeyUserDataDigest + " = hmac-sha256:padded \r\n" + MarkKeyUserDataDigest + "=hmac-sha256:ab12\r\n" +
		MarkKeyCreatedBy + "=" + CreatedByProvider + "\r\n" + MarkKeyUserDataDigest + "=hmac-sha256:later\r\n"
	if got := ParseMarkExtra(messy); got != want {
		t.Fatalf("ParseMarkExtra(%q) = %+v, want %+v", messy, got, want)
	}
	if got := ParseMarkExtra(FormatMark("u-1", at)); got != (MarkExtra{}) {
		t.Fatalf("an operator mark reads %+v, want nothing", got)
	}
	if d := FormatMarkExtra(Spec{}); strings.Contains(d, MarkKeyUserDataDigest) {
		t.Fatalf("a spec without a digest writes %q", d)
	}
}
