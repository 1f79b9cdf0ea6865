package nocloud

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"

	"github.com/kdomanski/iso9660"
)

// Files is what a seed ISO holds, as Read found it. A file that is absent is nil.
type Files struct {
	Label      string
	UserData   []byte
	MetaData   []byte
	VendorData []byte
	// NetworkConfig is the network-config file, nil when the seed has none.
	NetworkConfig []byte
}

// Read opens a seed image and returns its files. It fails with ErrNotSeed when the volume
// label is not "cidata", and with an error when the image does not parse.
func Read(iso []byte) (Files, error) {
	img, err := iso9660.OpenImage(bytes.NewReader(iso))
	if err != nil {
		return Files{}, fmt.Errorf("nocloud: reading the image: %w", err)
	}
	label, err := img.Label()
	if err != nil {
		return Files{}, fmt.Errorf("nocloud: reading the volume label: %w", err)
	}
	f := Files{Label: strings.TrimRight(label, " \x00")}
	if f.Label != Label {
		return f, ErrNotSeed
	}
	root, err := img.RootDir()
	if err != nil {
		return f, fmt.Errorf("nocloud: reading the root directory: %w", err)
	}
	children, err := root.GetChildren()
	if err != nil {
		return f, fmt.Errorf("nocloud: listing the root directory: %w", err)
	}
	for _, c := range children {
		if c.IsDir() {
			continue
		}
		var dst *[]byte
		switch strings.ToLower(c.Name()) {
		case UserDataFile:
			dst = &f.UserData
		case MetaDataFile:
			dst = &f.MetaData
		case VendorDataFile:
			dst = &f.VendorData
		case NetworkConfigFile:
			dst = &f.NetworkConfig
		default:
			continue
		}
		b, err := io.ReadAll(c.Reader())
		if err != nil {
			return f, fmt.Errorf("nocloud: reading %s: %w", c.Name(), err)
		}
		if b == nil {
			b = []byte{}
		}
		*dst = b
	}
	return f, nil
}

// VendorParts splits vendor-data into its parts: a MIME multipart gives one Part per part
// (base64 and quoted-printable bodies decoded), anything else a single Part typed by
// ContentTypeOf. No vendor-data gives no parts.
func (f Files) VendorParts() ([]Part, error) {
	return SplitVendorData(f.VendorData)
}

// InstallsGuestAgent reports whether the vendor-data installs qemu-guest-agent: it is the
// GuestAgentScript, or a multipart with the GuestAgentScript as one of its parts.
func (f Files) InstallsGuestAgent() bool {
	parts, err := f.VendorParts()
	if err != nil {
		return false
	}
	for _, p := range parts {
		if bytes.Equal(p.Body, []byte(GuestAgentScript)) {
			return true
		}
	}
	return false
}

// SplitVendorData is VendorParts over raw vendor-data bytes.
func SplitVendorData(vendor []byte) ([]Part, error) {
	if vendor == nil {
		return nil, nil
	}
	boundary, ok := multipartBoundary(vendor)
	if !ok {
		return []Part{{ContentType: ContentTypeOf(string(vendor)), Filename: VendorDataFile, Body: vendor}}, nil
	}
	_, body, found := bytes.Cut(vendor, []byte("\r\n\r\n"))
	if !found {
		_, body, _ = bytes.Cut(vendor, []byte("\n\n"))
	}
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	var parts []Part
	for {
		p, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			return parts, nil
		}
		if err != nil {
			return parts, fmt.Errorf("nocloud: reading a vendor-data part: %w", err)
		}
		raw, err := io.ReadAll(p)
		if err != nil {
			return parts, fmt.Errorf("nocloud: reading a vendor-data part: %w", err)
		}
		decoded, err := decodePart(p.Header, raw)
		if err != nil {
			return parts, err
		}
		ctype, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		parts = append(parts, Part{ContentType: ctype, Filename: p.FileName(), Body: decoded})
	}
}

// multipartBoundary returns the boundary when vendor starts with a multipart Content-Type
// header.
func multipartBoundary(vendor []byte) (string, bool) {
	head, _, _ := bytes.Cut(vendor, []byte("\n"))
	name, value, ok := strings.Cut(strings.TrimRight(string(head), "\r"), ":")
	if !ok || textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name)) != "Content-Type" {
		return "", false
	}
	mt, params, err := mime.ParseMediaType(strings.TrimSpace(value))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return "", false
	}
	return params["boundary"], true
}

func decodePart(h textproto.MIMEHeader, raw []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(h.Get("Content-Transfer-Encoding"))) {
	case "base64":
		out, err := base64.StdEncoding.DecodeString(strings.Map(dropSpace, string(raw)))
		if err != nil {
			return nil, fmt.Errorf("nocloud: decoding a base64 vendor-data part: %w", err)
		}
		return out, nil
	default:
		return raw, nil
	}
}

func dropSpace(r rune) rune {
	if r == '\r' || r == '\n' || r == ' ' || r == '\t' {
		return -1
	}
	return r
}

// base64Lines encodes b as base64 in lines of at most 76 characters separated by CRLF.
func base64Lines(b []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(b)
	var out bytes.Buffer
	for len(enc) > 76 {
		out.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	out.WriteString(enc)
	return out.Bytes()
}
