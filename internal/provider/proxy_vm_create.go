package provider

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

func (r *proxyVMResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = r.data.withLogging(ctx)
	defer func() { resp.Diagnostics.Append(setIdentity(ctx, resp.State, resp.Identity)...) }()
	var plan proxyVMModel
	resp.Diagnostics.Append(getPlan(ctx, req.Plan, &plan)...)
	if resp.Diagnostics.HasError() || !r.configured("create", &resp.Diagnostics) {
		return
	}
	timeout, diags := plan.Timeouts.Create(ctx, mustDuration(defaultCreateTimeout))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The same checks as at plan time (cached when this provider instance planned too):
	// a configuration mistake fails here, before anything exists and before any state is
	// saved, so nothing is tainted.
	var config proxyVMModel
	resp.Diagnostics.Append(getConfig(ctx, req.Config, &config)...)
	if resp.Diagnostics.HasError() || !r.preflight(ctx, "create", false, config, plan, &resp.Diagnostics) {
		return
	}

	createdAt := time.Now().UTC().Truncate(time.Second)
	spec, err := r.createSpec(plan, config, createdAt)
	if err != nil {
		resp.Diagnostics.AddError("Unable to create proxy VM", err.Error())
		return
	}
	// A takeover, or a VM whose creating mark failed the proof, is said whatever the outcome.
	report := &proxmox.CreateReport{}
	spec.Report = report
	defer warnCreateReport(&resp.Diagnostics, spec.Name, report)
	tflog.Info(ctx, "proxy VM create", map[string]any{
		"name": spec.Name, "node": spec.Node, "uid": spec.UID, "template_vmid": spec.TemplateVMID,
		"cores": spec.Cores, "memory_mib": spec.MemoryMiB, "disk_gib": spec.DiskGiB,
		"bridge": spec.Bridge, "vlan_tag": spec.VLANTag, "wait_for_ip": spec.WaitForIP,
		"cloud_init_bytes": len(spec.UserData), "network_config_bytes": networkBytes(spec), "timeout": timeout.String(),
	})

	alloc := &allocation{}
	vm, err := r.data.backend.Create(ctx, spec, r.onAllocated(ctx, resp, alloc, plan, spec, createdAt))
	id := alloc.get()
	if err != nil {
		vmid, note := createFailureNote(id, err)
		tflog.Error(ctx, "proxy VM create failed", map[string]any{"name": spec.Name, "vmid": vmid, "node": spec.Node, "error": err.Error()})
		r.addVMError(&resp.Diagnostics, "create", spec.Name, vmid, err, note)
		return
	}

	// The backend has read the VM back (fresh listing, and the agent's address when it
	// waited for one) before returning it.
	final := vm
	state := plan
	applyVM(&state, final)
	state.CloudInitDigest = stringOrNull(spec.UserDataDigest)
	state.SeedGeneration = seedGenerationOf(final, spec.UID)
	if msg := mismatch(plan, state); msg != "" {
		resp.Diagnostics.AddError("Unable to create proxy VM", vmLabel(spec.Name, final.ID.VMID)+": "+msg+
			"\n\nThe VM exists and is saved in the state as tainted: the next apply destroys it and creates it again.")
	}
	resp.Diagnostics.Append(setState(ctx, &resp.State, &state)...)
	resp.Diagnostics.Append(writeSeed(ctx, resp.Private, resp.Private, seedWrite{volid: final.Seed, put: final.Node})...)
	resp.Diagnostics.Append(writePower(ctx, resp.Private, final)...)
	resp.Diagnostics.Append(recordConfiguredNode(ctx, req.Config, resp.Private)...)
	warnRecentPassed(&resp.Diagnostics, spec.Name, final, createdAt, timeout)
	tflog.Info(ctx, "proxy VM created", map[string]any{
		"name": final.ID.Name, "vmid": final.ID.VMID, "node": final.Node, "status": string(final.State), "ip": final.IP})
}

// createSpec is the backend's Spec for a create of plan, with the VM's own uid, random per VM:
// where its VMID is looked for stays the name's (uidFor), so an interrupted create of this
// name is found and taken over.
func (r *proxyVMResource) createSpec(plan, config proxyVMModel, createdAt time.Time) (proxmox.Spec, error) {
	spec := specFor(plan, r.cfg(), createdAt)
	uid, err := newUID()
	if err != nil {
		return spec, err
	}
	spec.UID = uid
	spec.Namespace = r.cfg().UIDNamespace
	spec.AllocKey = uidFor(spec.Namespace, spec.Name)
	// The digest of a write-only cloud-init is keyed by the uid: after it is minted.
	applyCloudInitWO(&spec, config, r.cfg())
	// Terraform killed (kill -9): its answer would never be saved, so the mark is left
	// "creating" for the next apply, even before the closed connection cancels ctx.
	spec.Abandoned = func() bool { return parentGone(startedBy) }
	return spec, nil
}

// allocation is the VMID a create holds, as its onAllocated hook last saw it.
type allocation struct {
	mu sync.Mutex
	id *proxmox.ID
}

func (a *allocation) get() *proxmox.ID {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.id
}

// onAllocated is the backend's hook for a create's VMID: it goes into the state the moment it
// is known, so that from then on an error or an interrupt leaves a tainted resource (replaced
// by the next apply), never an untracked VM.
func (r *proxyVMResource) onAllocated(ctx context.Context, resp *resource.CreateResponse, a *allocation, plan proxyVMModel,
	spec proxmox.Spec, createdAt time.Time) func(proxmox.ID, string) {
	return func(id proxmox.ID, node string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if id.VMID == 0 {
			// The backend holds no VM of its own any more (no free VMID, or its VM taken
			// over by another apply): no state entry may point at another guest.
			a.id = nil
			resp.State.RemoveResource(ctx)
			tflog.Info(ctx, "proxy VM holds no VMID of its own, removed from the state", map[string]any{"name": spec.Name})
			return
		}
		a.id = &id
		partial := partialState(plan, id, node, spec.UID, createdAt)
		partial.CloudInitDigest = stringOrNull(spec.UserDataDigest)
		resp.Diagnostics.Append(setState(ctx, &resp.State, &partial)...)
		resp.Diagnostics.Append(writeSeed(ctx, nil, resp.Private, seedWrite{volid: r.data.backend.SeedVolID(spec.Name, spec.UID), put: node})...)
		tflog.Info(ctx, "proxy VM allocated, saved in state", map[string]any{"name": id.Name, "vmid": id.VMID, "node": node})
	}
}
