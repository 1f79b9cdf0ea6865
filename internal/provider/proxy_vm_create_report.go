package provider

import (
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// warnCreateReport turns what a create decided about other VMs into warnings, whether the
// create succeeded or not: a takeover is never silent, and neither is a VM left alone
// although its mark claims to be an interrupted create of this name.
func warnCreateReport(diags *diag.Diagnostics, name string, rep *proxmox.CreateReport) {
	for _, t := range rep.TakenOver {
		how := "it had not reached its config step, so it was provisioned as it was"
		if t.Rebuilt {
			how = "it may have reached its config step and booted, so it was destroyed and cloned afresh onto the same VMID"
		}
		started := ""
		if !t.CreatedAt.IsZero() {
			started = " started at " + t.CreatedAt.UTC().Format(time.RFC3339) + ","
		}
		diags.AddWarning("Proxy VM create took over an interrupted create",
			fmt.Sprintf("%s: VMID %d on node %s held a create of %q in this uid_namespace that was interrupted before Terraform saved it "+
				"(its create%s uid %s, was killed or lost its state), shown to be this provider's by its mark's %s "+
				"line, made with this provider's API token for "+
				"that VMID. This create took it over: %s. If no apply of this configuration was interrupted recently, check who else "+
				"applies it with the same token and uid_namespace.",
				vmLabel(name, t.VMID), t.VMID, t.Node, name, started, t.PreviousUID, proxmox.MarkKeyProof, how))
	}
	for _, u := range rep.Unproved {
		diags.AddWarning("Half-made proxy VM left alone",
			fmt.Sprintf("VMID %d on node %s holds a VM named %q whose description says it is an interrupted create of this name in this "+
				"uid_namespace (uid %s), but %s. This create left it alone: it never stops, destroys, reconfigures or boots a VM it "+
				"cannot prove it made, and made this one at another VMID. Find out whose it is first (`pvenode task list --vmid %d` "+
				"on each node shows who started or changed it). If it is someone else's, remove the proxy-operator-* lines from its "+
				"description; if it is the remains of an interrupted apply of this configuration (or of one made before the API token "+
				"was rotated), destroy it in Proxmox (`qm stop %d && qm destroy %d --purge`) and delete its seed ISO.",
				u.VMID, u.Node, name, orNone(u.UID), u.Why, u.VMID, u.VMID, u.VMID))
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
