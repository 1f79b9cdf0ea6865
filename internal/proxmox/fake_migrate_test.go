package proxmox

import (
	"context"
	"strconv"
	"sync"

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
	if isHAManaged(f) {
		// The HA manager moves the VM later; the test moves it (mutate).
		return f.newTask(node, "hamigrate", strconv.Itoa(vmid), nil), nil
	}
	return f.newTask(node, "qmigrate", strconv.Itoa(vmid), func() { v.Node = p.Target }), nil
}

// haManaged marks fakes whose VMs are HA-managed: a migration answers a hamigrate task
// that moves nothing (qemu-server migrate_vm hands the move to ha-manager).
var haManaged sync.Map // *fakeAPI -> bool

func setHAManaged(f *fakeAPI) { haManaged.Store(f, true) }

func isHAManaged(f *fakeAPI) bool { _, ok := haManaged.Load(f); return ok }
