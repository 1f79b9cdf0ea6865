package pveapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// MigrateParams are the form fields of a migration.
type MigrateParams struct {
	// Target is the node the VM moves to; it must not be the VM's node.
	Target string
	// Online asks for a live migration; Proxmox refuses to migrate a running VM without
	// it, and ignores it (with a warning in the task log) for a stopped VM.
	Online bool
	// WithLocalDisks copies the VM's disks on non-shared storage along with a live
	// migration; without it a running VM with such disks is refused inside the task.
	WithLocalDisks bool
	// TargetStorage maps the local disks onto a storage of the target node (a storage
	// id, or a source:target map); empty keeps each disk's own storage id.
	TargetStorage string
}

// Migrate is POST /nodes/{node}/qemu/{vmid}/migrate with target and, when set, online=1,
// with-local-disks=1 and targetstorage. It returns the qmigrate task's UPID; the VM's
// config holds lock "migrate" while the task runs, and moves to the target node at its end.
func (c *Client) Migrate(ctx context.Context, node string, vmid int, p MigrateParams) (string, error) {
	if err := checkArgs("Migrate", node, vmid, p.Target); err != nil {
		return "", err
	}
	if p.Target == node {
		return "", WithClass(Permanent, fmt.Errorf("proxmox API Migrate: target %q is the VM's own node", node))
	}
	form := url.Values{"target": {p.Target}}
	if p.Online {
		form.Set("online", "1")
	}
	if p.WithLocalDisks {
		form.Set("with-local-disks", "1")
	}
	if p.TargetStorage != "" {
		form.Set("targetstorage", p.TargetStorage)
	}
	f := vmFields(node, vmid)
	f["target"], f["online"] = p.Target, p.Online
	var upid string
	err := c.do(ctx, request{call: "Migrate", method: http.MethodPost, path: vmPath(node, vmid, "/migrate"),
		form: form, fields: f}, &upid)
	return upidResult("Migrate", upid, err)
}
