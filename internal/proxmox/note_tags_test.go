package proxmox

import (
	"slices"
	"testing"
	"time"
)

// TestNote_markLinesStayIntact: a note goes after the mark lines and reads back alone; a
// new note replaces the old one and keeps every mark line as it was, in order (an
// operator's CRLF mark, this provider's extra lines); other lines an admin added are the
// note; a note never yields mark lines.
func TestNote_markLinesStayIntact(t *testing.T) {
	at := time.Date(2026, 9, 23, 10, 0, 0, 0, time.UTC)
	mark := MarkLines{UID: testUID, CreatedAt: at, Namespace: "ci"}.Format() + FormatMarkExtra(Spec{UserDataDigest: "hmac-sha256:ab"})
	desc := withNote(mark, "Egress for team A.\n\nOwner: netops\n")
	if NoteOf(desc) != "Egress for team A.\n\nOwner: netops" {
		t.Errorf("note %q", NoteOf(desc))
	}
	m := ParseMark(desc)
	if !m.Managed || m.UID != testUID || !m.CreatedAt.Equal(at) || m.Namespace != "ci" || ParseMarkExtra(desc).UserDataDigest != "hmac-sha256:ab" {
		t.Errorf("mark %+v from %q", m, desc)
	}
	next := replaceNote(desc, "Team B now.")
	if next != mark+"\n\nTeam B now." || NoteOf(next) != "Team B now." {
		t.Errorf("replaced: %q", next)
	}
	if got := replaceNote(desc, ""); got != mark || NoteOf(got) != "" {
		t.Errorf("note removed: %q", got)
	}
	operator := "owner=netops\r\n" + FormatMark(testUID, at)
	if NoteOf(operator) != "owner=netops" {
		t.Errorf("operator note %q", NoteOf(operator))
	}
	if got := replaceNote(operator, "x"); ParseMark(got).UID != testUID || NoteOf(got) != "x" {
		t.Errorf("operator mark rewritten: %q", got)
	}
	if !NoteHasMarkLine("fine\n proxy-operator-managed = false") || NoteHasMarkLine("proxy-operator managed: yes\na=b") {
		t.Error("NoteHasMarkLine")
	}
}

// TestTags_asProxmoxStoresThem: user tags plus proxy_operator, lowercase, deduplicated and
// sorted; a change is written only when the user tags differ from the VM's.
func TestTags_asProxmoxStoresThem(t *testing.T) {
	if got := tagsParam([]string{"team-a", "Edge", "edge"}); got != "edge;proxy_operator;team-a" {
		t.Errorf("tagsParam %q", got)
	}
	if got := UserTags([]string{"proxy_operator", "web", "dns", "web"}); !slices.Equal(got, []string{"dns", "web"}) {
		t.Errorf("UserTags %v", got)
	}
	same, other := []string{"dns", "web"}, []string{"dns"}
	p := map[string]string{}
	noteTagsUpdateParams(p, Changes{Tags: &same}, map[string]string{"tags": "dns;proxy_operator;web"})
	if len(p) != 0 {
		t.Errorf("unchanged tags written: %v", p)
	}
	noteTagsUpdateParams(p, Changes{Tags: &other}, map[string]string{"tags": "dns;proxy_operator;web"})
	if p["tags"] != "dns;proxy_operator" {
		t.Errorf("tags param %v", p)
	}
	on := true
	p = map[string]string{}
	noteTagsUpdateParams(p, Changes{Protection: &on}, map[string]string{"protection": "1"})
	if len(p) != 0 {
		t.Errorf("unchanged protection written: %v", p)
	}
	if err := refuseProtected(testID, map[string]string{"protection": "1"}); err == nil || ClassOf(err).String() != "permanent" {
		t.Errorf("refuseProtected: %v", err)
	}
}
