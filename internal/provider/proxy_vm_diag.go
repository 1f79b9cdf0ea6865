package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// vmErrorDetail renders a backend failure for a diagnostic: which VM (name and VMID), what
// happened, and what to do, worded by the error's class (seed entry 13). note, when set,
// is appended (e.g. what happened to the state). The backend's messages never carry the
// cloud-init text or the token.
func vmErrorDetail(op, name string, vmid int, err error, note string) string {
	msg := err.Error()
	var pe *proxmox.Error
	if errors.As(err, &pe) {
		if pe.Err != nil {
			msg = pe.Err.Error()
		}
		if name == "" {
			name = pe.Name
		}
		if vmid == 0 {
			vmid = pe.VMID
		}
	}
	var b strings.Builder
	b.WriteString(vmLabel(name, vmid))
	b.WriteString(": ")
	b.WriteString(strings.TrimSuffix(msg, "."))
	b.WriteString(".\n\n")
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		key := op
		if op == "import" || op == "refresh" {
			key = "read"
		}
		fmt.Fprintf(&b, "The %s ran out of time (timeouts.%s). This may succeed if retried, or with a longer timeout.", op, key)
	case errors.Is(err, context.Canceled):
		b.WriteString("The operation was interrupted. This may succeed if retried.")
	default:
		switch proxmox.ClassOf(err) {
		case pveapi.Permanent:
			b.WriteString("Retrying will not help: fix what the message says (the provider configuration, the API " +
				"token's privileges, the template, or the VM in Proxmox), then apply again.")
		case pveapi.NotFound:
			b.WriteString("The VM no longer exists in the cluster.")
		default:
			b.WriteString("This may succeed if retried: run the same command again.")
		}
	}
	if note != "" {
		b.WriteString("\n\n")
		b.WriteString(note)
	}
	return b.String()
}

// vmLabel names a VM in a message: Proxy VM "name" (VMID n).
func vmLabel(name string, vmid int) string {
	switch {
	case name != "" && vmid != 0:
		return fmt.Sprintf("Proxy VM %q (VMID %d)", name, vmid)
	case name != "":
		return fmt.Sprintf("Proxy VM %q (no VMID allocated yet)", name)
	case vmid != 0:
		return fmt.Sprintf("Proxy VM with VMID %d", vmid)
	default:
		return "Proxy VM"
	}
}

// addVMError adds "Unable to <verb> proxy VM" with vmErrorDetail.
func addVMError(diags *diag.Diagnostics, verb, name string, vmid int, err error, note string) {
	diags.AddError("Unable to "+verb+" proxy VM", vmErrorDetail(verb, name, vmid, err, note))
}
