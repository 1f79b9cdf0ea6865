package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

func (r *proxyVMResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = r.data.withLogging(ctx)
	defer func() { resp.Diagnostics.Append(setIdentity(ctx, resp.State, resp.Identity)...) }()
	var plan, prior proxyVMModel
	resp.Diagnostics.Append(getPlan(ctx, req.Plan, &plan)...)
	resp.Diagnostics.Append(getState(ctx, req.State, &prior)...)
	if resp.Diagnostics.HasError() || !r.configured("update", &resp.Diagnostics) {
		return
	}
	id, err := proxmox.ParseID(prior.ID.ValueString())
	if err != nil {
		r.addVMError(&resp.Diagnostics, "update", prior.Name.ValueString(), 0, err,
			"The state holds a malformed ID; remove the resource from the state and import the VM again.")
		return
	}
	timeout, diags := plan.Timeouts.Update(ctx, mustDuration(defaultUpdateTimeout))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	changes, changed, ok := r.updateChanges(ctx, req, plan, prior, timeout, &resp.Diagnostics)
	if !ok {
		return
	}
	defer func() { resp.Diagnostics.Append(writeReseed(ctx, resp.Private, false)...) }()
	waitIP := plan.WaitForIP.IsNull() || plan.WaitForIP.IsUnknown() || plan.WaitForIP.ValueBool()
	changes.WaitForIP = waitIP
	if waitIP && changes.Start && !changes.UserDataKnown && !restarts(prior.Status, changes) {
		resp.Diagnostics.Append(agentUnknownWarning(id))
	}
	fields := map[string]any{"name": id.Name, "vmid": id.VMID, "node": prior.Node.ValueString()}
	if changed {
		tflog.Info(ctx, "proxy VM update", withFields(fields, changeFields(changes)))
		if !r.runUpdate(ctx, id, changes, prior, resp) {
			return
		}
	}

	var vm proxmox.VM
	if changes.Start || restarts(prior.Status, changes) {
		vm, err = r.settle(ctx, id, changes, plan.Pool.ValueString(), waitIP)
	} else {
		vm, err = r.data.backend.Get(ctx, id, proxmox.GetOptions{FreshListing: true, UID: changes.UID, Instance: changes.Instance,
			Pool: plan.Pool.ValueString(), HA: !plan.HA.IsNull()})
	}
	if err != nil {
		note := "The changes were applied, but the VM could not be read back; the next plan shows what remains."
		if changes.Start || restarts(prior.Status, changes) {
			note = "The changes were applied, but the VM did not come up after its start; the next plan shows what remains."
		}
		r.addVMError(&resp.Diagnostics, "update", id.Name, id.VMID, err, note)
		return
	}
	state := plan
	applyVM(&state, vm)
	// An ejected seed keeps the planned generation, as a refresh keeps the state's.
	state.SeedGeneration, _ = seedGenerationKept(vm, changes.UID, plan.SeedGeneration)
	keepPending(&state, plan, vm) // reboot_on_change = false: the written value (proxy_vm_restart.go)
	if msg := mismatch(plan, state); msg != "" {
		resp.Diagnostics.AddError("Unable to update proxy VM", vmLabel(id.Name, id.VMID)+": "+msg)
	}
	resp.Diagnostics.Append(setState(ctx, &resp.State, &state)...)
	recordUpdate(ctx, req, resp, prior, vm)
	tflog.Info(ctx, "proxy VM updated", withFields(fields, map[string]any{"status": string(vm.State), "ip": vm.IP}))
}

// runUpdate sends changes to the backend and warns of what it skipped on purpose (a seed ISO
// a VM or its snapshot still has). On a failure it saves what did change before it, so that
// the next plan shows only the rest, and reports false.
func (r *proxyVMResource) runUpdate(ctx context.Context, id proxmox.ID, changes proxmox.Changes, prior proxyVMModel,
	resp *resource.UpdateResponse) bool {
	nctx, notes := proxmox.WithNotes(ctx)
	err := r.data.backend.Update(nctx, id, changes)
	for _, n := range notes.Lines() {
		resp.Diagnostics.AddWarning("Proxy VM update skipped a step", vmLabel(id.Name, id.VMID)+": "+r.redact(n)+".")
	}
	if err == nil {
		return true
	}
	if vm, gerr := r.data.backend.Get(ctx, id, proxmox.GetOptions{FreshListing: true, UID: changes.UID, Instance: changes.Instance,
		Pool: prior.Pool.ValueString(), HA: changes.HA != nil || !prior.HA.IsNull()}); gerr == nil {
		state := prior
		applyVM(&state, vm)
		resp.Diagnostics.Append(setState(ctx, &resp.State, &state)...)
	}
	r.addVMError(&resp.Diagnostics, "update", id.Name, id.VMID, err, "")
	return false
}

// agentUnknownWarning: an imported VM, whose cloud-init is not known, is started and its
// address waited for, though nothing says its guest has the agent.
func agentUnknownWarning(id proxmox.ID) diag.Diagnostic {
	return diag.NewWarningDiagnostic("Guest agent of the imported proxy VM not known",
		vmLabel(id.Name, id.VMID)+": the VM is started and its address waited for, but its cloud-init is not known (it was imported), "+
			"so nothing says its guest has qemu-guest-agent: a start is not a first boot and installs nothing. If the agent does not answer "+
			"within a few minutes of the start, the update fails saying so. Set wait_for_ip = false for a VM without the agent.")
}

// updateChanges is what an update asks the backend for: the plan's changes against the
// prior state, the seed's text (configured, write-only, or none), a seed swap the plan
// holds (proxy_vm_reseed.go) and the power step; not ok when the private state could not
// be read.
func (r *proxyVMResource) updateChanges(ctx context.Context, req resource.UpdateRequest, plan, prior proxyVMModel,
	timeout time.Duration, diagnostics *diag.Diagnostics) (changes proxmox.Changes, changed, ok bool) {
	// What a start needs to rebuild a seed ISO a failed destroy deleted (not a change).
	cloudInitUnread, diags := isUnread(ctx, req.Private, unreadCloudInit)
	diagnostics.Append(diags...)
	if diagnostics.HasError() {
		return changes, changed, false
	}
	changes, changed = changesFor(prior, plan, cloudInitUnread)
	var config proxyVMModel
	diagnostics.Append(getConfig(ctx, req.Config, &config)...)
	if v, ok := knownString(config.CloudInitWO); ok {
		changes.UserData, changes.UserDataKnown = []byte(v), true // write-only: only in the config
	}
	changes.UID = prior.UID.ValueString()
	// A state that recorded no SMBIOS uuid is bound by this update, and a VM renamed, or
	// whose mark's instance line was edited, outside Terraform is repaired (vm_identity_facet.go).
	changes.Instance = prior.SMBIOSUUID.ValueString()
	if drift, _ := readMarkDrift(ctx, req.Private); changes.Instance == "" || drift.renamed != "" || drift.edited {
		changes.Bind, changed = true, true
	}
	changes.Mark = r.markRecord(plan, prior)
	if readReseed(ctx, req.Private) {
		// cloud_init_change = "restart": the plan swaps the seed (proxy_vm_reseed.go), with
		// the configured text only (none configured any more: none in the new seed).
		reseedChanges(&changes, plan)
		if _, _, set, _ := cloudInitText(config.vmCloudInit); !set && !cloudInitUnread {
			changes.UserData, changes.UserDataKnown = []byte{}, true
		}
		changed = true
	}
	powerChanges(&changes, plan, timeout, readPower(ctx, req.Private), diagnostics)
	changes.Network, _ = networkOf(ctx, plan.vmNetwork) // for a seed rebuild (not a change)
	return changes, changed, true
}

// markRecord is what the state holds of the VM's mark, for an update that writes back a
// mark wiped outside Terraform (proxmox.Changes.Mark): the recorded created_at, the
// provider's uid_namespace and the planned cloud-init digest (a seed swap's new one),
// else the recorded one.
func (r *proxyVMResource) markRecord(plan, prior proxyVMModel) proxmox.MarkRecord {
	rec := proxmox.MarkRecord{Namespace: r.data.cfg.UIDNamespace}
	if v, ok := knownString(prior.CreatedAt); ok {
		rec.CreatedAt, _ = time.Parse(time.RFC3339, v)
	}
	if v, ok := knownString(plan.CloudInitDigest); ok {
		rec.UserDataDigest = v
	} else if v, ok := knownString(prior.CloudInitDigest); ok {
		rec.UserDataDigest = v
	}
	return rec
}

// recordUpdate writes what an update leaves beside the state: where the seed is, the
// pending power record and the configured node.
func recordUpdate(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse, prior proxyVMModel,
	vm proxmox.VM) {
	// A migration moved the seed to the VM's node; its source stays recorded, since an
	// earlier generation may be left there (decision: seed-sweep). A seed rebuilt before a
	// start is on the VM's node too.
	sw := seedWrite{volid: vm.Seed, lastSeen: prior.Node.ValueString(), put: vm.Node}
	resp.Diagnostics.Append(writeSeed(ctx, req.Private, resp.Private, sw)...)
	resp.Diagnostics.Append(writePower(ctx, resp.Private, vm)...)
	resp.Diagnostics.Append(recordMarkDrift(ctx, resp.Private, vm)...) // vm_identity_facet.go
	resp.Diagnostics.Append(recordConfiguredNode(ctx, req.Config, resp.Private)...)

}
