package proxmox

import (
	"context"
	"strconv"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Migrate moves the VM to p.Target when its task completes. Like Proxmox it refuses a
// running VM without Online before the task, and a locked VM.
func (f *fakeAPI) Migrate(ctx context.Context, node string, vmid int, p pveapi.MigrateParams) (string, error) {
	args := map[string]string{"target": p.Target, "online": boolParam(p.Online), "with-local-disks": boolParam(p.WithLocalDisks), "targetstorage": p.TargetStorage}
	if err := f.enter(ctx, fakeCall{Method: "Migrate", Node: node, VMID: vmid, Args: args}); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return "", err
	}
	if v.Lock != "" {
		return "", errLocked(v.Lock)
	}
	if v.Status == "running" && !p.Online {
		return "", fixtureErr("err_migrate_running_offline")
	}
	return f.newTask(node, "qmigrate", strconv.Itoa(vmid), func() { v.Node = p.Target }), nil
}
