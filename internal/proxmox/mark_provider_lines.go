package proxmox

import (
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
)

// Lines this provider adds to the description mark after the three lines the operator
// shares (FormatMark). The operator's parser ignores lines it does not know, so a VM made
// here stays importable there.
const (
	// MarkKeyCreatedBy names the program that made the VM. The operator writes no such
	// line, so a mark without it is the proxy operator's.
	MarkKeyCreatedBy = "proxy-operator-created-by"
	// CreatedByProvider is this provider's MarkKeyCreatedBy value.
	CreatedByProvider = "terraform-provider-proxy"
	// MarkKeyUserDataDigest carries the keyed digest of the VM's cloud-init user-data
	// (Spec.UserDataDigest), so an import can tell whether a configuration's cloud-init is
	// the one the VM was made with, without the text.
	MarkKeyUserDataDigest = "proxy-operator-user-data-digest"
	// MarkKeyNetworkDigest carries the digest of the VM's network-config
	// (Spec.NetworkDigest, NetworkDigest), for the same purpose.
	MarkKeyNetworkDigest = "proxy-operator-network-digest"
	// MarkKeySeedSwap says a seed swap is under way: the generation of the seed it uploads
	// (decision: seed-swap). The swap writes it before it touches the ISO storage and drops
	// it in the config write that names the new seed, so a swap killed in between leaves a
	// sign a refresh reads (a seed of this VM on storage that ide2 does not name).
	MarkKeySeedSwap = "proxy-operator-seed-swap"
)

// MarkExtra is what ParseMarkExtra reads from a description: the lines beyond Mark.
type MarkExtra struct {
	// CreatedBy is empty when the line is missing.
	CreatedBy string
	// UserDataDigest is empty when the line is missing.
	UserDataDigest string
	// NetworkDigest is empty when the line is missing.
	NetworkDigest string
	// Static is the static IPv4 configuration of MarkKeyStaticIPv4 (mark_network.go); nil
	// when the line is missing or unreadable.
	Static *nocloud.StaticIPv4
	// SeedSwap is MarkKeySeedSwap's value; empty when the line is missing.
	SeedSwap string
	// StaticUnreadable: the MarkKeyStaticIPv4 line is there but does not read as one this
	// provider writes (edited by hand); Static is nil then.
	StaticUnreadable bool
}

// FormatMarkExtra returns this provider's extra mark lines for a new VM, each preceded by a
// newline, to append to FormatMark's.
func FormatMarkExtra(s Spec) string {
	out := "\n" + MarkKeyCreatedBy + "=" + CreatedByProvider
	if s.UserDataDigest != "" {
		out += "\n" + MarkKeyUserDataDigest + "=" + s.UserDataDigest
	}
	if s.NetworkDigest != "" {
		out += "\n" + MarkKeyNetworkDigest + "=" + s.NetworkDigest
	}
	if s.Network != nil && s.Network.Static != nil {
		out += "\n" + MarkKeyStaticIPv4 + "=" + FormatStaticIPv4(*s.Network.Static)
	}
	return out
}

// ParseMarkExtra reads the extra lines as ParseMark does (parseMarkLine): CRLF tolerated,
// other lines ignored, the first occurrence of a key wins.
func ParseMarkExtra(desc string) MarkExtra {
	var m MarkExtra
	var seenBy, seenDigest, seenNet, seenStatic, seenSwap bool
	for line := range strings.SplitSeq(desc, "\n") {
		k, v, ok := parseMarkLine(line)
		if !ok {
			continue
		}
		switch {
		case k == MarkKeyCreatedBy && !seenBy:
			m.CreatedBy, seenBy = v, true
		case k == MarkKeyUserDataDigest && !seenDigest:
			m.UserDataDigest, seenDigest = v, true
		case k == MarkKeyNetworkDigest && !seenNet:
			m.NetworkDigest, seenNet = v, true
		case k == MarkKeySeedSwap && !seenSwap:
			m.SeedSwap, seenSwap = v, true
		case k == MarkKeyStaticIPv4 && !seenStatic:
			seenStatic = true
			if st, ok := ParseStaticIPv4(v); ok {
				m.Static = &st
			} else {
				m.StaticUnreadable = true
			}
		}
	}
	return m
}

// markLine is one mark line: its key and value.
type markLine struct{ key, value string }

// withMarkLines sets mark lines of a description: each key's lines are removed, and a line
// with a value other than "" is appended after the other mark lines; the note stays after
// them (replaceNote).
func withMarkLines(desc string, lines []markLine) string {
	drop := map[string]bool{}
	for _, l := range lines {
		drop[l.key] = true
	}
	var mark []string
	for line := range strings.SplitSeq(strings.ReplaceAll(desc, "\r\n", "\n"), "\n") {
		if !isMarkLine(line) {
			continue
		}
		k, _, _ := parseMarkLine(line)
		if !drop[k] {
			mark = append(mark, line)
		}
	}
	for _, l := range lines {
		if l.value != "" {
			mark = append(mark, l.key+"="+l.value)
		}
	}
	return withNote(strings.Join(mark, "\n"), NoteOf(desc))
}
