// Package nocloud builds NoCloud seed ISOs (seed entry 5).
package nocloud

// Seed is what goes into a seed ISO.
type Seed struct {
	// Name is the VM name: meta-data's instance-id and local-hostname.
	Name string
	// UserData is written byte for byte, never parsed.
	UserData []byte
	// VendorData is the configured vendor-data; joined with the guest agent script as a
	// MIME multipart when InstallGuestAgent is true too.
	VendorData string
	// InstallGuestAgent adds the qemu-guest-agent install script as vendor-data.
	InstallGuestAgent bool
}

// Build returns the ISO image (volume label "cidata"). NOTE(skeleton): to be implemented.
func Build(s Seed) ([]byte, error) { panic("not implemented") }
