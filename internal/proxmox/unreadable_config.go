package proxmox

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// errUnreadableConfig marks a permanent failure to read a VM's config (a 403 on a
// foreign VM, say), as opposed to a verdict on a config that was read.
type errUnreadableConfig struct{ error }

func (e errUnreadableConfig) Unwrap() error { return e.error }

func unreadableConfig(err error) error { return errUnreadableConfig{err} }

// probePast reports whether the allocation should go on to the next VMID after err from
// the ownership check of entry r: a nameless entry whose config cannot be read for good
// is not one we could ever adopt, so it holds that VMID as far as we are concerned.
func probePast(ctx context.Context, r pveapi.Resource, err error) bool {
	var u errUnreadableConfig
	if !listedPlaceholder(r) || !errors.As(err, &u) {
		return false
	}
	tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox vmid taken by a guest whose config cannot be read", map[string]any{
		"vmid": r.VMID, "node": r.Node,
	})
	return true
}
