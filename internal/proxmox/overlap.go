package proxmox

import (
	"bytes"
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

// uploadSeed builds the seed of s (its network-config rendered for net0, the VM's) and
// uploads it to node's ISO storage over any previous one (no delete first), then waits for
// the task.
func (b *Backend) uploadSeed(ctx context.Context, node string, s Spec, net0 string) error {
	iso, err := b.buildSeedFor(s.Name, s.UserData, s.Network, net0)
	if err != nil {
		return err
	}
	seed := seedFile(s.Name, s.UID)
	upid, err := b.api.UploadISO(ctx, node, b.cfg.ISOStorage, seed, bytes.NewReader(iso), int64(len(iso)))
	if err != nil {
		return apiErrorf("create", err, "uploading %s to storage %s on node %s", seed, b.cfg.ISOStorage, node)
	}
	return b.waitTask(ctx, upid, b.cfg.Budgets.Upload)
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
	seed := seedFile(c.s.Name, c.s.UID)
	if err := c.b.deleteSeed(ctx, c.node, seed); err != nil {
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed delete after a failed clone failed", map[string]any{
			"vmid": c.vmid, "name": c.s.Name, "node": c.node, "error": err.Error(),
		})
		return &Error{Class: ClassOf(cloneErr), Err: fmt.Errorf("%w; the seed ISO %s uploaded meanwhile could not be deleted (%s): remove it from storage %s on node %s "+
			"(the proxy_vms data source lists it under orphan_seeds)", cloneErr, seed, err.Error(), c.b.cfg.ISOStorage, c.node)}
	}
	return cloneErr
}

// seedDelete is a seed ISO delete running beside the stop: the seed must be gone before
// the destroy (so that a failure leaves the VM, and the next Delete, to retry it), not
// before the stop, so Delete sends both at once and joins the delete before the destroy.
type seedDelete struct {
	done chan struct{}
	err  error
}

// startSeedDelete deletes the seed files on node in a goroutine.
func (b *Backend) startSeedDelete(ctx context.Context, node string, files []string) *seedDelete {
	d := &seedDelete{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.err = b.deleteSeeds(ctx, node, files)
	}()
	return d
}

// join waits for the delete and returns its error.
func (d *seedDelete) join() error {
	<-d.done
	return d.err
}
