package proxmox

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Pools and what a token may see (fact: pool-privileges).
//
// A token scoped to a pool sees, in /cluster/resources, only the guests it has VM.Audit on,
// and the pool a guest is in only with Pool.Audit on that pool. So a VMID the listing does
// not show is not proof that no VM holds it: hiddenVM asks.

// hiddenVM tells a VMID the listing does not show because no guest holds it from one
// whose guest the token may not audit: the listing leaves that out, and its config read
// answers 403 whether a VM is there or not. GET /cluster/nextid?vmid= tells, for any token.
// It returns nil when no guest holds the VMID, and for a hidden guest a Permanent error
// quoting Proxmox's refusal of its config: nothing may be concluded (gone, free, not ours)
// about a VM one cannot see. what names the VM for the message ("The VM", "Template 9001").
func (b *Backend) hiddenVM(ctx context.Context, op string, vmid int, what string) error {
	free, err := b.api.VMIDFree(ctx, vmid)
	switch {
	case err != nil:
		return apiErrorf(op, err, "asking whether a guest holds VMID %d, which the cluster listing does not show", vmid)
	case free:
		return nil
	}
	// Proxmox's own refusal, for the message: the declared check comes before the lookup.
	need := fmt.Sprintf("VM.Audit on /vms/%d", vmid)
	var refusal error = &pveapi.APIError{Status: 403, Message: "Permission check failed (/vms/" + strconv.Itoa(vmid) + ", VM.Audit)"}
	if len(b.cfg.Nodes) > 0 {
		_, cerr := b.api.VMConfig(ctx, b.cfg.Nodes[0], vmid)
		switch {
		case pveapi.IsForbidden(cerr):
			refusal = cerr
			if d, _ := pveapi.PermissionDenied(cerr); d.Path != "" {
				need = fmt.Sprintf("%s on %s", d.Privilege, d.Path)
			}
		case cerr == nil, isNotExist(cerr):
			// The token may audit it after all: a guest made after the listing was read.
			return Transientf("VMID %d was taken by a new guest while it was being looked up; run the command again", vmid)
		default:
			return apiErrorf(op, cerr, "reading the config of VMID %d, which a guest the cluster listing does not show holds", vmid)
		}
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vmid holds a guest hidden from the token",
		map[string]any{"vmid": vmid, "error": refusal.Error()})
	return Permanentf("%s (VMID %d) is not in the cluster listing the API token sees, yet a guest holds VMID %d, and "+
		"Proxmox refuses to show its config (%w): "+
		"the token lacks %s, so the VM is outside the token's pool or ACLs, and the provider never acts on a VM it cannot see. "+
		"Grant the privilege (or move the VM back into the token's pool), or remove the resource from the Terraform "+
		"state if the VM is no longer yours",
		what, vmid, vmid, refusal, need)
}

// HiddenVM says whether a VMID may hold a VM the token is refused: nil when the listing the
// token sees shows the VMID or no guest holds it, else a Permanent error quoting Proxmox's
// 403. For a lookup by VMID that found nothing (fact: pool-privileges).
func (b *Backend) HiddenVM(ctx context.Context, vmid int) error {
	res, err := b.listing(ctx, false)
	if err != nil {
		return wrap("import", "", vmid, apiErrorf("import", err, "listing the cluster's VMs"))
	}
	if _, listed := findResource(res, vmid); listed {
		return nil
	}
	return wrap("import", "", vmid, b.hiddenVM(ctx, "import", vmid, "The VM"))
}

// movePool puts the VM into the pool ch.Pool names, or takes it out of ch.PriorPool when
// ch.Pool is empty: one PUT /pools (allow-move=1 moves it out of any other pool). A VM
// already where it should be (the listing did not show its pool) is not an error.
func (b *Backend) movePool(ctx context.Context, id ID, ch Changes) (bool, error) {
	if ch.Pool == nil || *ch.Pool == ch.PriorPool {
		return false, nil
	}
	to := *ch.Pool
	p := pveapi.PoolUpdate{Pool: to, VMIDs: []int{id.VMID}}
	what := fmt.Sprintf("moving the VM into pool %s", to)
	if to == "" {
		p = pveapi.PoolUpdate{Pool: ch.PriorPool, VMIDs: []int{id.VMID}, Remove: true}
		what = fmt.Sprintf("taking the VM out of pool %s", ch.PriorPool)
	}
	err := b.api.UpdatePool(ctx, p)
	switch {
	case err == nil:
	case pveapi.IsAlreadyPoolMember(err), pveapi.IsNotPoolMember(err):
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm already where its pool should be", map[string]any{
			"vmid": id.VMID, "name": id.Name, "pool": to, "error": err.Error()})
		return false, nil
	case pveapi.IsPoolMissing(err):
		return false, Permanentf("%s: pool %s does not exist in the cluster; create it (pveum pool add %s) or fix "+
			"pool (%w)", what, p.Pool, p.Pool, err)
	case pveapi.IsForbidden(err):
		need := poolMoveNeeds(id.VMID, to, ch.PriorPool)
		return false, Permanentf("%s: %w. Moving a VM between pools needs %s; grant it, or replace the VM instead "+
			"(terraform apply -replace)", what, err, need)
	default:
		return false, apiErrorf("update", err, "%s", what)
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm pool changed", map[string]any{
		"vmid": id.VMID, "name": id.Name, "pool": to, "prior_pool": ch.PriorPool})
	return true, nil
}

// poolMoveNeeds is what PUT /pools checks (pve-manager PVE/API2/Pool.pm update_pool):
// Pool.Allocate on the pool updated, the right to modify the VM's permissions
// (Permissions.Modify or VM.Allocate on /vms/<vmid>), and, to move a VM out of another
// pool, Pool.Allocate there too.
func poolMoveNeeds(vmid int, to, from string) string {
	var parts []string
	if to != "" {
		parts = append(parts, "Pool.Allocate on /pool/"+to)
	}
	if from != "" {
		parts = append(parts, "Pool.Allocate on /pool/"+from)
	}
	parts = append(parts, fmt.Sprintf("VM.Allocate (or Permissions.Modify) on /vms/%d", vmid))
	return strings.Join(parts, ", ")
}

// verifyPool fills vm.Pool for a VM the listing shows in no pool while the caller expected
// one (expected): without Pool.Audit on that pool Proxmox hides the field, so the VM keeps
// the expected pool, marked unverified; with it, the VM really is in no pool.
func (b *Backend) verifyPool(ctx context.Context, vm *VM, expected string) error {
	if vm.Pool != "" || expected == "" {
		return nil
	}
	privs, err := b.api.Permissions(ctx, "/pool/"+expected)
	if err != nil {
		return apiErrorf("get", err, "reading the API token's privileges on /pool/%s", expected)
	}
	if _, ok := privs["Pool.Audit"]; !ok {
		vm.Pool, vm.PoolUnverified = expected, true
	}
	return nil
}

// cloneRefusal words a clone that Proxmox refused with a 403: the pool's missing, or the
// privileges the clone needs (qemu-server src/PVE/API2/Qemu.pm clone_vm): VM.Clone on the
// template, VM.Allocate on /vms/<newid> or on /pool/<pool> (a refusal of both names
// nothing), Datastore.AllocateSpace on the target storage, SDN.Use on the template's
// bridges.
func cloneRefusal(err error, s *Spec, vmid int) error {
	if pveapi.IsPoolMissing(err) {
		return Permanentf("pool %s does not exist in the cluster; create it (pveum pool add %s) or fix pool: %w", s.Pool, s.Pool, err)
	}
	d, _ := pveapi.PermissionDenied(err)
	if d.Path != "" {
		return Permanentf("Proxmox refused to clone template %d onto VMID %d: %w; the API token lacks %s on %s",
			s.TemplateVMID, vmid, err, d.Privilege, d.Path)
	}
	need := fmt.Sprintf("VM.Allocate on /vms/%d", vmid)
	if s.Pool != "" {
		need = fmt.Sprintf("VM.Allocate on /pool/%s (or on /vms/%d)", s.Pool, vmid)
	}
	return Permanentf("Proxmox refused to clone template %d onto VMID %d: %w; the API token lacks %s", s.TemplateVMID, vmid, err, need)
}
