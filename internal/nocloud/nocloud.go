// Package nocloud builds NoCloud seed ISOs (decision: seed-iso) and reads them back.
//
// A seed is an ISO9660 image with the volume label "cidata" holding these files in its root:
// user-data (written byte for byte, never parsed), meta-data (instance-id and local-hostname),
// when there is something to say vendor-data (the qemu-guest-agent install script, the
// configured vendor data, or both joined as a MIME multipart), and when one is given
// network-config (written byte for byte; network.go).
package nocloud

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Label is the volume label cloud-init's NoCloud datasource looks for.
const Label = "cidata"

// File names inside the seed.
const (
	UserDataFile   = "user-data"
	MetaDataFile   = "meta-data"
	VendorDataFile = "vendor-data"
)

// ErrEmptyName is returned by Build when Seed.Name is empty.
var ErrEmptyName = errors.New("nocloud: seed name is empty")

// ErrInvalidName is returned by Build when Seed.Name holds a control character or a
// character that would change the meaning of meta-data (a newline, a quote, a colon...).
var ErrInvalidName = errors.New("nocloud: seed name holds a character meta-data cannot carry")

// ErrNotSeed is returned by Read when the image is not a NoCloud seed (wrong volume label).
var ErrNotSeed = errors.New("nocloud: image is not a NoCloud seed (volume label is not " + Label + ")")

// Seed is what goes into a seed ISO.
type Seed struct {
	// Name is the VM name: meta-data's local-hostname, and its instance-id unless
	// InstanceID is set.
	Name string
	// InstanceID, when set, is meta-data's instance-id instead of Name. cloud-init runs its
	// per-instance modules again, and regenerates the SSH host keys, when a boot finds an
	// instance-id it has not seen: a seed that replaces a VM's seed in place carries a new one.
	InstanceID string
	// UserData is written byte for byte, never parsed.
	UserData []byte
	// VendorData is the configured vendor-data; joined with the guest agent script as a
	// MIME multipart when InstallGuestAgent is true too. Empty means none.
	VendorData string
	// InstallGuestAgent adds the qemu-guest-agent install script as vendor-data.
	InstallGuestAgent bool
	// NetworkConfig, when not nil, is written byte for byte as network-config, which
	// cloud-init applies at the instance's first boot instead of its DHCP fallback.
	NetworkConfig []byte
}

// GuestAgentScript is the vendor-data shell script that installs, enables and starts
// qemu-guest-agent with whichever package manager the guest has (apt, dnf, yum, zypper or
// apk). It never fails the boot: a guest without a package mirror simply has no agent.
const GuestAgentScript = `#!/bin/sh
# terraform-provider-proxy: install and start qemu-guest-agent
if ! command -v qemu-ga >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q || true
    apt-get install -y -q qemu-guest-agent
  elif command -v dnf >/dev/null 2>&1; then
    dnf install -y -q qemu-guest-agent
  elif command -v yum >/dev/null 2>&1; then
    yum install -y -q qemu-guest-agent
  elif command -v zypper >/dev/null 2>&1; then
    zypper --non-interactive --quiet install qemu-guest-agent
  elif command -v apk >/dev/null 2>&1; then
    apk add --no-cache qemu-guest-agent
  else
    echo "qemu-guest-agent: no supported package manager" >&2
  fi
fi
if command -v systemctl >/dev/null 2>&1; then
  systemctl enable qemu-guest-agent >/dev/null 2>&1 || true
  systemctl start qemu-guest-agent || true
elif command -v rc-service >/dev/null 2>&1; then
  rc-update add qemu-guest-agent default >/dev/null 2>&1 || true
  rc-service qemu-guest-agent start || true
fi
exit 0
`

// Build returns the ISO image (volume label "cidata"), composed in memory (iso.go): no
// file is written, so the cloud-init text never touches the disk.
func Build(s Seed) ([]byte, error) {
	if s.Name == "" {
		return nil, ErrEmptyName
	}
	if strings.ContainsFunc(s.Name, badNameRune) || strings.ContainsFunc(s.InstanceID, badNameRune) {
		return nil, ErrInvalidName
	}
	meta := MetaData(s.Name)
	if s.InstanceID != "" {
		meta = MetaDataWithID(s.Name, s.InstanceID)
	}
	files := []isoFile{
		{UserDataFile, s.UserData},
		{MetaDataFile, meta},
	}
	if vendor := BuildVendorData(s.VendorData, s.InstallGuestAgent); vendor != nil {
		files = append(files, isoFile{VendorDataFile, vendor})
	}
	if s.NetworkConfig != nil {
		files = append(files, isoFile{NetworkConfigFile, s.NetworkConfig})
	}
	img, err := writeISO(Label, files)
	if err != nil {
		// The writer's errors name files, never their content.
		return nil, fmt.Errorf("nocloud: writing the seed image: %w", err)
	}
	return img, nil
}

// badNameRune reports the runes a name in meta-data must not hold: controls (a newline would
// add a YAML key) and YAML indicators that would change the value's meaning.
func badNameRune(r rune) bool {
	return r < 0x20 || r == 0x7f || strings.ContainsRune(`:#"'{}[],&*!|>%@`+"`", r)
}

// MetaData returns the meta-data file for name: name is its instance-id too.
func MetaData(name string) []byte { return MetaDataWithID(name, name) }

// MetaDataWithID returns the meta-data file for name with instance-id id.
func MetaDataWithID(name, id string) []byte {
	return []byte("instance-id: " + id + "\nlocal-hostname: " + name + "\n")
}

// Part content types used in a vendor-data multipart.
const (
	TypeShellScript = "text/x-shellscript"
	TypeCloudConfig = "text/cloud-config"
	TypePlain       = "text/plain"
)

// ContentTypeOf is the MIME type a vendor-data part gets from its first line:
// "#cloud-config" is cloud-config, "#!" a shell script, anything else text/plain (which
// cloud-init then types by its own first-line rules).
func ContentTypeOf(data string) string {
	switch {
	case strings.HasPrefix(data, "#cloud-config"):
		return TypeCloudConfig
	case strings.HasPrefix(data, "#!"):
		return TypeShellScript
	default:
		return TypePlain
	}
}

// BuildVendorData returns the vendor-data file content, or nil when there is none:
// the guest agent script alone, the configured vendor data alone, or both as a MIME
// multipart (the script first) when both are set.
func BuildVendorData(vendorData string, installGuestAgent bool) []byte {
	switch {
	case installGuestAgent && vendorData != "":
		return multipartOf([]Part{
			{ContentType: TypeShellScript, Filename: "qemu-guest-agent.sh", Body: []byte(GuestAgentScript)},
			{ContentType: ContentTypeOf(vendorData), Filename: "vendor-data", Body: []byte(vendorData)},
		})
	case installGuestAgent:
		return []byte(GuestAgentScript)
	case vendorData != "":
		return []byte(vendorData)
	default:
		return nil
	}
}

// Part is one part of a vendor-data multipart.
type Part struct {
	ContentType string
	Filename    string
	Body        []byte
}

// multipartOf renders parts as a MIME multipart/mixed document as cloud-init reads it. The
// boundary is derived from the content, so the same input gives the same bytes. Parts that
// are not 7-bit ASCII are base64-encoded: cloud-init decodes every part with
// get_payload(decode=True), which mangles raw 8-bit text.
func multipartOf(parts []Part) []byte {
	boundary := boundaryFor(parts)
	var b bytes.Buffer
	b.WriteString("Content-Type: multipart/mixed; boundary=\"" + boundary + "\"\r\n")
	b.WriteString("MIME-Version: 1.0\r\n\r\n")
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\n")
		enc := "7bit"
		body := p.Body
		if !is7Bit(body) {
			enc = "base64"
			body = base64Lines(body)
		}
		b.WriteString("Content-Type: " + p.ContentType + "; charset=\"utf-8\"\r\n")
		b.WriteString("MIME-Version: 1.0\r\n")
		b.WriteString("Content-Transfer-Encoding: " + enc + "\r\n")
		b.WriteString("Content-Disposition: attachment; filename=\"" + p.Filename + "\"\r\n\r\n")
		b.Write(body)
		// The line break before a boundary belongs to the boundary (RFC 2046 5.1.1), so
		// the body keeps its own final newline, if any, byte for byte.
		b.WriteString("\r\n")
	}
	b.WriteString("--" + boundary + "--\r\n")
	return b.Bytes()
}

// boundaryFor returns a boundary that appears in no part.
func boundaryFor(parts []Part) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p.Body)
	}
	sum := h.Sum(nil)
	for i := 0; ; i++ {
		b := fmt.Sprintf("===============%s%d==", hex.EncodeToString(sum[:12]), i)
		clash := false
		for _, p := range parts {
			if bytes.Contains(p.Body, []byte(b)) {
				clash = true
				break
			}
		}
		if !clash {
			return b
		}
	}
}

func is7Bit(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == 0 {
			return false
		}
	}
	return true
}
