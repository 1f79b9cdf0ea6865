package proxmox

import (
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestVMIDFor_vectors(t *testing.T) {
	for _, tc := range []struct {
		uid             string
		attempt, lo, hi int
		want            int
	}{
		{testUID, 0, 100000, 199999, 105967},
		{testUID, 1, 100000, 199999, 105968},
		{testUID, 2, 100000, 199999, 105969},
		{otherUID, 0, 100000, 199999, 107076},
		{testUID, 0, 100, 109, 107},
		{testUID, 3, 100, 109, 100}, // wraps within the range
	} {
		if got := vmidFor(tc.uid, tc.attempt, tc.lo, tc.hi); got != tc.want {
			t.Errorf("vmidFor(%s, %d, %d, %d) = %d, want %d", tc.uid, tc.attempt, tc.lo, tc.hi, got, tc.want)
		}
	}
}

func TestParseID_valid(t *testing.T) {
	for s, want := range map[string]ID{
		"vms/105967/proxy-a":  {VMID: 105967, Name: "proxy-a"},
		"vms/100/x":           {VMID: 100, Name: "x"},
		"vms/999999999/a.b_c": {VMID: 999999999, Name: "a.b_c"},
	} {
		got, err := ParseID(s)
		if err != nil || got != want {
			t.Errorf("ParseID(%q) = %+v, %v; want %+v", s, got, err, want)
		}
		if got.String() != s {
			t.Errorf("String() = %q, want %q", got.String(), s)
		}
	}
}

func TestParseID_malformed(t *testing.T) {
	for _, s := range []string{
		"", "vms", "vms/105967", "vms/105967/", "vm/105967/a", "VMS/105967/a", "vms/0105967/a",
		"vms/99/a", "vms/1000000000/a", "vms/+105/a", "vms/-105/a", "vms/1e5/a", "vms/ 105/a",
		"vms/105967/a/b", "/vms/105967/a", "vms//a", "105967", "proxy-a",
	} {
		_, err := ParseID(s)
		assertClass(t, err, pveapi.Permanent)
	}
}

func TestIDValidate_rejectsBadIDs(t *testing.T) {
	for _, id := range []ID{{VMID: 99, Name: "a"}, {VMID: 105967}, {VMID: 105967, Name: "a/b"}} {
		assertClass(t, id.Validate(), pveapi.Permanent)
	}
	if err := (ID{VMID: 105967, Name: "a"}).Validate(); err != nil {
		t.Errorf("valid ID: %v", err)
	}
}

func TestFormatMark_threeLinesParsedBack(t *testing.T) {
	at := time.Date(2026, 9, 19, 11, 12, 0, 0, time.FixedZone("CEST", 2*3600))
	m := FormatMark(testUID, at)
	want := "proxy-operator-managed=true\nproxy-operator-uid=" + testUID + "\nproxy-operator-created-at=2026-09-19T09:12:00Z"
	if m != want {
		t.Fatalf("FormatMark = %q, want %q", m, want)
	}
	got := ParseMark(m)
	if !got.Managed || got.UID != testUID || !got.CreatedAt.Equal(at) {
		t.Errorf("ParseMark(FormatMark) = %+v", got)
	}
}

func TestParseMark_table(t *testing.T) {
	at := time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		desc string
		want Mark
	}{
		{"captured clone description", fixtureConfig("vm_config_clone")["description"], Mark{Managed: true, UID: testUID, CreatedAt: at}},
		{"CRLF", "proxy-operator-managed=true\r\nproxy-operator-uid=u1\r\nproxy-operator-created-at=2026-09-19T09:12:00Z\r\n", Mark{Managed: true, UID: "u1", CreatedAt: at}},
		{"admin lines and blank lines", "Squid proxy for team X\n\nowner=alice\nproxy-operator-managed=true\n\nproxy-operator-uid=u1\nproxy-operator-created-at=2026-09-19T09:12:00Z\nnotes: a=b", Mark{Managed: true, UID: "u1", CreatedAt: at}},
		// The format is exact (decision: mark-format): a line with blanks around its key or
		// value is an admin's line, not a mark line.
		{"blanks around a key or value", "proxy-operator-managed=true\n proxy-operator-uid = u1 \nproxy-operator-created-at=2026-09-19T09:12:00Z", Mark{Managed: true, CreatedAt: at}},
		{"blank before the key", " proxy-operator-managed=true\nproxy-operator-uid=u1", Mark{UID: "u1"}},
		{"blank after the value", "proxy-operator-managed=true \nproxy-operator-uid=u1", Mark{UID: "u1"}},
		{"blank before the value", "proxy-operator-managed=true\nproxy-operator-uid= u1", Mark{Managed: true}},
		{"blank after the uid", "proxy-operator-managed=true\nproxy-operator-uid=u1 ", Mark{Managed: true}},
		{"tab after the uid, CRLF", "proxy-operator-managed=true\r\nproxy-operator-uid=u1\t\r\n", Mark{Managed: true}},
		{"exact line after a line with a trailing blank wins", "proxy-operator-managed=true\nproxy-operator-uid=u2 \nproxy-operator-uid=u1", Mark{Managed: true, UID: "u1"}},
		{"exact line after a line with a leading blank in the value wins", "proxy-operator-managed=true\nproxy-operator-uid= u2\nproxy-operator-uid=u1", Mark{Managed: true, UID: "u1"}},
		{"tab before the key", "\tproxy-operator-managed=true\nproxy-operator-uid=u1", Mark{UID: "u1"}},
		{"padded line does not shadow a later exact one", "proxy-operator-uid =u2\nproxy-operator-managed=true\nproxy-operator-uid=u1", Mark{Managed: true, UID: "u1"}},
		{"managed False", "proxy-operator-managed=True\nproxy-operator-uid=u1", Mark{Managed: false, UID: "u1", CreatedAt: time.Time{}}},
		{"managed yes", "proxy-operator-managed=yes\nproxy-operator-uid=u1", Mark{Managed: false, UID: "u1", CreatedAt: time.Time{}}},
		{"managed missing", "proxy-operator-uid=u1", Mark{Managed: false, UID: "u1", CreatedAt: time.Time{}}},
		{"no uid line", "proxy-operator-managed=true", Mark{Managed: true, UID: "", CreatedAt: time.Time{}}},
		{"created-at unparsable", "proxy-operator-managed=true\nproxy-operator-created-at=yesterday", Mark{Managed: true, UID: "", CreatedAt: time.Time{}}},
		{"first occurrence wins", "proxy-operator-managed=true\nproxy-operator-uid=u1\nproxy-operator-uid=u2", Mark{Managed: true, UID: "u1", CreatedAt: time.Time{}}},
		{"key as prefix only", "proxy-operator-managed-x=true", Mark{}},
		{"empty", "", Mark{}},
		{"this provider's lines, creating", MarkLines{UID: "u1", CreatedAt: at, Namespace: "team-a", Creating: true}.Format(),
			Mark{Managed: true, UID: "u1", CreatedAt: at, Namespace: "team-a", HasNamespace: true, Creating: true}},
		{"this provider's lines, finished, empty namespace", MarkLines{UID: "u1", CreatedAt: at}.Format(),
			Mark{Managed: true, UID: "u1", CreatedAt: at, HasNamespace: true}},
		{"state line with another value", "proxy-operator-managed=true\nproxy-operator-state=done", Mark{Managed: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseMark(tc.desc)
			if got.Managed != tc.want.Managed || got.UID != tc.want.UID || !got.CreatedAt.Equal(tc.want.CreatedAt) ||
				got.Namespace != tc.want.Namespace || got.HasNamespace != tc.want.HasNamespace || got.Creating != tc.want.Creating {
				t.Errorf("ParseMark(%q) = %+v, want %+v", tc.desc, got, tc.want)
			}
		})
	}
}
