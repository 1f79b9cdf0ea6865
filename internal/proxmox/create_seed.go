package proxmox

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// seedUpload is a seed ISO upload running beside the clone task: the seed goes to the ISO
// storage of the target node and does not depend on the VM, so Create sends it as soon as
// Proxmox has accepted the clone instead of after the clone task ends. The config write
// that names the seed waits for it (join).
type seedUpload struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// startSeedUpload builds and uploads the seed on c.node in a goroutine.
func (c *creation) startSeedUpload(ctx context.Context) *seedUpload {
	uctx, cancel := context.WithCancel(ctx)
	u := &seedUpload{cancel: cancel, done: make(chan struct{})}
	node, s, net0 := c.node, c.s, c.cfg["net0"]
	go func() {
		defer close(u.done)
		u.err = c.b.uploadSeed(uctx, node, s, net0)
	}()
	return u
}

// join waits for the upload and returns its error.
func (u *seedUpload) join() error {
	<-u.done
	u.cancel()
	return u.err
}

// abandonSeedUpload runs when the clone failed after its upload was started: the upload is
// cancelled and joined, then the seed it may have written is deleted, so that a clone
// Proxmox removed leaves no seed behind. When ctx has ended (Ctrl-C, the create timeout)
// nothing more can be sent; the VMID is in the state then, and the Delete of that resource
// removes the seed with the VM. It returns cloneErr, with a note when the seed could not
// be deleted.
func (c *creation) abandonSeedUpload(ctx context.Context, u *seedUpload, cloneErr error) error {
	u.cancel()
	_ = u.join()
	if ctx.Err() != nil {
		return cloneErr
	}
	seed := c.b.createSeed(c.s)
	if err := c.b.deleteSeed(ctx, "create", c.node, seed); err != nil {
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed delete after a failed clone failed", map[string]any{
			"vmid": c.vmid, "name": c.s.Name, "node": c.node, "error": err.Error(),
		})
		return &Error{
			Class: ClassOf(cloneErr),
			Err: fmt.Errorf("%w; the seed ISO %s uploaded meanwhile could not be deleted (%s): remove it with `pvesm free %s` on node %s "+
				"(the proxy_vms data source lists it under orphan_seeds, "+
				"and the proxy_orphan_cleanup action removes it)", cloneErr, seed.volid(), err.Error(), seed.volid(), c.node),
		}
	}
	return cloneErr
}
