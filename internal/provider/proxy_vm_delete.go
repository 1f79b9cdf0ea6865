package provider

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

func (r *proxyVMResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = r.data.withLogging(ctx)
	var state proxyVMModel
	resp.Diagnostics.Append(getState(ctx, req.State, &state)...)
	if resp.Diagnostics.HasError() || !r.configured("delete", &resp.Diagnostics) {
		return
	}
	id, err := proxmox.ParseID(state.ID.ValueString())
	if err != nil {
		r.addVMError(
			&resp.Diagnostics,
			"delete",
			state.Name.ValueString(),
			0,
			err,
			"The state holds a malformed ID; remove the resource from the state (terraform state rm) and delete the VM in Proxmox if it exists.",
		)
		return
	}
	timeout, diags := state.Timeouts.Delete(ctx, mustDuration(defaultDeleteTimeout))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	node := state.Node.ValueString()
	tflog.Info(ctx, "proxy VM delete", map[string]any{"name": id.Name, "vmid": id.VMID, "node": node})
	// A VM with this name and mark but another uid is another resource's: left alone. The
	// seed recorded at the last read is the one deleted when the VM is gone.
	ctx, notes := proxmox.WithNotes(ctx)
	opts := proxmox.DeleteOptions{
		Node:      node,
		UID:       state.UID.ValueString(),
		Instance:  state.SMBIOSUUID.ValueString(),
		Seed:      readSeed(ctx, req.Private),
		SeedNodes: readSeedNodes(ctx, req.Private),
		SeedSwaps: state.CloudInitChange.ValueString() == cloudInitChangeRestart,
		HA:        !state.HA.IsNull(),
	}
	err = r.data.backend.DeleteVM(ctx, id, opts)
	for _, n := range notes.Lines() {
		// What the destroy skipped on purpose (a seed on a storage that does not exist).
		resp.Diagnostics.AddWarning("Proxy VM destroy skipped a step", vmLabel(id.Name, id.VMID)+": "+r.redact(n)+".")
	}
	if err != nil && !errors.Is(err, proxmox.ErrNotFound) {
		r.addVMError(&resp.Diagnostics, "delete", id.Name, id.VMID, err, "")
		return
	}
	tflog.Info(ctx, "proxy VM deleted", map[string]any{"name": id.Name, "vmid": id.VMID, "node": node})
}
