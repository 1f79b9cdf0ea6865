package proxmox

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// The fake's pools and privileges. f.privs, when set, maps an ACL path to the token's
// privileges there (GET /access/permissions?path=), propagated unless f.unpropagated names
// the path; a path it does not name has none. Unset, the token has every privilege
// everywhere, as root's does. A VM's pool is fakeVM.Pool; the
// listing reports it unless f.hidePools is set (a token without Pool.Audit).

func (f *fakeAPI) Permissions(ctx context.Context, path string) (map[string]bool, error) {
	if err := f.enter(ctx, fakeCall{Method: "Permissions", Args: map[string]string{"path": path}}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	if f.privs == nil {
		for _, p := range allFakePrivs {
			out[p] = true
		}
		return out, nil
	}
	for _, p := range f.privs[path] {
		out[p] = !f.unpropagated[path]
	}
	return out, nil
}

// allFakePrivs are the privileges the provider's checks ask about.
var allFakePrivs = []string{
	"VM.Allocate", "VM.Clone", "VM.Audit", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk",
	"VM.Config.Network", "VM.Config.Options", "VM.PowerMgmt", "VM.GuestAgent.Audit", "VM.Migrate", "Pool.Audit", "Pool.Allocate",
	"Datastore.Allocate", "Datastore.AllocateTemplate", "Datastore.AllocateSpace", "Datastore.Audit", "SDN.Use", "SDN.Audit", "Sys.Audit",
}

func (f *fakeAPI) UpdatePool(ctx context.Context, p pveapi.PoolUpdate) error {
	ids := make([]string, len(p.VMIDs))
	for i, id := range p.VMIDs {
		ids[i] = strconv.Itoa(id)
	}
	args := map[string]string{"poolid": p.Pool, "vms": strings.Join(ids, ","), "delete": boolParam(p.Remove)}
	if err := f.enter(ctx, fakeCall{Method: "UpdatePool", Args: args}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range p.VMIDs {
		v := f.vms[id]
		switch {
		case p.Remove && (v == nil || v.Pool != p.Pool):
			return fixtureErrSub("err_pool_not_member", "VM 199999", fmt.Sprintf("VM %d", id))
		case p.Remove:
			v.Pool = ""
		case v != nil && v.Pool == p.Pool:
			return fixtureErrSub("err_pool_already_member", "VM 199999", fmt.Sprintf("VM %d", id))
		case v != nil:
			v.Pool = p.Pool
		}
	}
	return nil
}

// hide makes a VMID invisible to the token, as for a token scoped to a pool the VM is not
// in: the listing leaves it out and its config read answers 403 (err_permission_vm_audit),
// whether or not a VM holds it.
func (f *fakeAPI) hide(vmid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hidden == nil {
		f.hidden = map[int]bool{}
	}
	f.hidden[vmid] = true
}

// errHidden is the 403 a hidden VMID answers.
func errHidden(vmid int) *pveapi.APIError {
	return fixtureErrSub("err_permission_vm_audit", "/vms/199999", fmt.Sprintf("/vms/%d", vmid))
}

// VMIDFree is taken for any guest of the fake, hidden ones included.
func (f *fakeAPI) VMIDFree(ctx context.Context, vmid int) (bool, error) {
	if err := f.enter(ctx, fakeCall{Method: "VMIDFree", VMID: vmid}); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, taken := f.vms[vmid]
	return !taken, nil
}
