package proxmox

import (
	"strings"
)

// The HA rule's mark (decision: ha-rule-mark): a proxy_ha_rule writes one line at the end of
// the rule's comment, MarkKeyHARule=<uid>, the uid the resource keeps in its state. It is
// read with parseMarkLine, the one mark line reader, so it follows the VM mark's line rules
// (key=value exactly, CRLF tolerated, the first occurrence of the key wins). A VM's mark lines
// copied into a comment are not a rule's mark: the key is the rule's own.
//
// Every path that writes to a rule (update, delete) and the read that maps it into the state
// ask ruleOwnedBy, and import asks ruleImportable; nothing else decides whether a rule is a
// resource's.

// MarkKeyHARule is the key of the rule's mark line; its value is the resource's uid.
const MarkKeyHARule = "proxy-operator-ha-rule"

// RuleMark is what parseRuleMark reads from a rule's comment.
type RuleMark struct {
	// Marked says the comment carries a mark line; UID is its value (may be empty).
	Marked bool
	UID    string
	// Text is the comment without the mark line (and without the newline that joined it).
	Text string
}

// parseRuleMark reads the mark of a rule's comment: the first MarkKeyHARule line, and the
// comment's other text.
func parseRuleMark(comment string) RuleMark {
	var m RuleMark
	lines := strings.Split(comment, "\n")
	keep := make([]string, 0, len(lines))
	for _, line := range lines {
		if k, v, ok := parseMarkLine(line); ok && k == MarkKeyHARule {
			if !m.Marked {
				m.Marked, m.UID = true, v
			}
			continue
		}
		keep = append(keep, line)
	}
	m.Text = strings.TrimRight(strings.Join(keep, "\n"), "\r\n")
	return m
}

// ruleComment is the comment a rule of uid is written with: the user's text, then the mark
// line (alone when there is no text).
func ruleComment(text, uid string) string {
	line := MarkKeyHARule + "=" + uid
	text = strings.TrimRight(text, "\r\n")
	if text == "" {
		return line
	}
	return text + "\n" + line
}

// ruleOwnedBy is the rule ownership predicate: the rule whose comment is comment is the
// resource's of uid only when the comment carries the rule's mark and the mark carries uid,
// which must not be empty. It returns the mark read and, when the rule is not the
// resource's, why (the reasons of the VM predicate, ownership.go).
func ruleOwnedBy(comment, uid string) (RuleMark, notOurs) {
	m := parseRuleMark(comment)
	switch {
	case !m.Marked:
		return m, notOursUnmarked
	case uid == "":
		return m, notOursNoUIDHere
	case m.UID == "":
		return m, notOursNoUID
	case m.UID != uid:
		return m, notOursOtherUID
	}
	return m, notOursNone
}

// ruleImportable reports whether an import may make the rule whose comment is comment a
// resource's: the rule's mark, with a uid (the state takes the mark's uid).
func ruleImportable(comment string) (RuleMark, notOurs) {
	m := parseRuleMark(comment)
	switch {
	case !m.Marked:
		return m, notOursUnmarked
	case m.UID == "":
		return m, notOursNoUID
	}
	return m, notOursNone
}
