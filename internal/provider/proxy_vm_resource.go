package provider

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/resourcevalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var (
	_ resource.Resource                     = (*proxyVMResource)(nil)
	_ resource.ResourceWithConfigure        = (*proxyVMResource)(nil)
	_ resource.ResourceWithImportState      = (*proxyVMResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*proxyVMResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*proxyVMResource)(nil)
	_ resource.ResourceWithConfigValidators = (*proxyVMResource)(nil)
)

// proxyVMResource is proxy_vm: Terraform's plan/apply/destroy/import mapped onto the
// backend's Create (decision: create-steps), Get (decision: state-mapping), Update and Delete
// (decision: delete-steps).
type proxyVMResource struct{ data *providerData }

// NewProxyVMResource is the proxy_vm resource factory.
func NewProxyVMResource() resource.Resource { return &proxyVMResource{} }

func (r *proxyVMResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm"
}

func (r *proxyVMResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = proxyVMSchema(ctx)
}

func (r *proxyVMResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (r *proxyVMResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{
		// Both may be set when they agree (a generated configuration): checkTemplatePair.
		resourcevalidator.AtLeastOneOf(path.MatchRoot("image"), path.MatchRoot("template_vmid")),
	}
}

func (r *proxyVMResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var config proxyVMModel
	resp.Diagnostics.Append(getConfig(ctx, req.Config, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(validateProxyVMConfig(config)...)
	resp.Diagnostics.Append(validatePower(ctx, config)...)
}

// cfg is the provider's resolved configuration, nil before Configure.
func (r *proxyVMResource) cfg() *resolvedConfig {
	if r.data == nil {
		return nil
	}
	return &r.data.cfg
}

// configured reports whether the provider handed over its data; without it the
// operation fails with a diagnostic.
func (r *proxyVMResource) configured(verb string, resp interface{ AddError(string, string) }) bool {
	if r.data != nil && r.data.backend != nil {
		return true
	}
	resp.AddError("Unable to "+verb+" proxy VM",
		"The proxy provider is not configured. This is a bug in the provider or in Terraform; please report it.")
	return false
}

func (r *proxyVMResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		warnGoneDestroy(ctx, req, resp) // destroy
		refuseUnboundDestroy(ctx, req, resp)
		return
	}
	plan, config, prior := planModels(ctx, req, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if isGone(prior) {
		if !refuseUnboundGone(ctx, req, resp, prior, "replace") { // vm_binding.go
			planGone(ctx, req, resp, prior, &plan) // deleted outside Terraform: replaced (proxy_vm_gone.go)
		}
		return
	}
	asPlanned := plan                                              // before the facets: what the schema's plan modifiers planned
	resp.Diagnostics.Append(checkTemplatePair(r.cfg(), config)...) // image and template_vmid agree
	// The facets' plan checks, in the facets' order (proxyVMModel.facets).
	fc := &facetCtx{ctx: ctx, cfg: r.cfg(), m: &plan, prior: prior, r: r, config: config, private: req.Private}
	for _, f := range plan.facets() {
		f.plan(fc)
	}
	resp.Diagnostics.Append(fc.diags...)
	replace := fc.replace
	// What changes the seed's content: replaced, or swapped in place (proxy_vm_reseed.go).
	seedReplace, reseed, diags := planReseed(ctx, config, &plan, prior, fc.seedReplace)
	resp.Diagnostics.Append(diags...)
	replace = append(replace, seedReplace...)
	if unbound(prior) { // no SMBIOS uuid recorded: no replacement (vm_binding.go)
		if what := unboundReplaces(prior, &asPlanned, replace); len(what) > 0 {
			refuseUnbound(resp, prior, "replace", strings.Join(what, "; "), "")
		}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(writeReseed(ctx, resp.Private, reseed)...)
	if !r.planPreflights(ctx, req.Private, config, plan, prior, &resp.Diagnostics) {
		return
	}
	resp.RequiresReplace = append(resp.RequiresReplace, replace...)
	planReplaceOrBind(ctx, req.Private, replace, prior, &plan, &resp.Diagnostics)
	resp.Diagnostics.Append(setPlan(ctx, &resp.Plan, &plan)...)
}

// planModels reads a plan's planned and configured models and the prior state's, nil for a
// create.
func planModels(ctx context.Context, req resource.ModifyPlanRequest, diags *diag.Diagnostics) (plan, config proxyVMModel,
	prior *proxyVMModel) {
	diags.Append(getPlan(ctx, req.Plan, &plan)...)
	diags.Append(getConfig(ctx, req.Config, &config)...)
	if !req.State.Raw.IsNull() {
		prior = &proxyVMModel{}
		diags.Append(getState(ctx, req.State, prior)...)
	}
	return plan, config, prior
}

// planPreflights checks at plan time what the cluster must provide for a create (node,
// storages, template, bridge, disk size; decision: preflight), once per provider instance, and
// the token's HA privileges for a plan that writes HA (ha_preflight.go), so that a mistake
// fails the plan on its attribute instead of the apply. It reports whether the plan goes on.
func (r *proxyVMResource) planPreflights(ctx context.Context, private privateGetter, config, plan proxyVMModel,
	prior *proxyVMModel, diags *diag.Diagnostics) bool {
	if prior == nil && !r.preflight(r.data.withLogging(ctx), "plan", replacesExisting(ctx, private), config, plan, diags) {
		return false
	}
	if vmHAWrites(prior, plan) {
		vmid, _ := knownInt(plan.VMID)
		haPreflight(r.data.withLogging(ctx), r.data, vmLabelFor("plan", plan.Name.ValueString(), vmid), diags)
		return !diags.HasError()
	}
	return true
}

// planReplaceOrBind finishes the diagnostics of a plan that replace decides: a replacement
// makes a new VM, bound from its create, so no in-place warning holds
// (proxy_vm_replace_warnings.go); an in-place plan checks the binding (vm_identity_facet.go).
func planReplaceOrBind(ctx context.Context, private privateGetter, replace path.Paths, prior, plan *proxyVMModel,
	diags *diag.Diagnostics) {
	replaces := replacesVM(replace, prior, plan)
	*diags = withoutInPlaceWarnings(*diags, replaces)
	if !replaces {
		drift, d := readMarkDrift(ctx, private)
		diags.Append(d...)
		diags.Append(planBinding(plan, prior, drift)...)
	}
}

func (r *proxyVMResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx = r.data.withLogging(ctx)
	// A state saved before identities (or by Terraform before 1.12) gets one on refresh.
	resp.Diagnostics.Append(setIdentity(ctx, req.State, resp.Identity)...)
	defer func() { resp.Diagnostics.Append(setIdentity(ctx, resp.State, resp.Identity)...) }()
	var state proxyVMModel
	resp.Diagnostics.Append(getState(ctx, req.State, &state)...)
	if resp.Diagnostics.HasError() || !r.configured("read", &resp.Diagnostics) {
		return
	}
	id, err := proxmox.ParseID(state.ID.ValueString())
	if err != nil {
		r.addVMError(&resp.Diagnostics, "read", state.Name.ValueString(), 0, err,
			"The state holds a malformed ID; remove the resource from the state and import the VM again.")
		return
	}
	timeout, diags := state.Timeouts.Read(ctx, mustDuration(defaultReadTimeout))
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// The uid too: our name and mark with another uid is another workspace's VM (one cloned
	// onto the VMID saved before our clone was refused), not this resource.
	// Never another uid, and never none: the state's uid is never replaced by the VM's.
	// And the SMBIOS uuid the state recorded: a VM with another one is not this resource's,
	// whatever its description says (decision: state-binding).
	vm, err := r.data.backend.Get(ctx, id, proxmox.GetOptions{UID: state.UID.ValueString(), Instance: state.SMBIOSUUID.ValueString(),
		Pool: state.Pool.ValueString(), HA: !state.HA.IsNull()})
	switch {
	case errors.Is(err, proxmox.ErrNotFound):
		// Kept in the state, marked deleted, so that the plan replaces it and the seed ISO it
		// left is deleted with it (proxy_vm_gone.go); Read changes nothing in Proxmox.
		tflog.Warn(ctx, "proxy VM gone or its VMID reused, kept in the state as deleted", map[string]any{
			"name": id.Name, "vmid": id.VMID, "node": state.Node.ValueString(), "seed": readSeed(ctx, req.Private)})
		markGone(&state)
		resp.Diagnostics.Append(setState(ctx, &resp.State, &state)...)
		resp.Diagnostics.Append(writeGoneRecord(ctx, resp.Private, goneRecordOf(err, r.redact))...)
		return
	case err != nil && keepsPriorValues(err):
		// A task holding the VM (a clone in progress, a lock): report what the last apply
		// saved, with a warning. A status the listing does not know yet is not an error
		// (vm.StatusUnknown, below).
		tflog.Warn(ctx, "proxy VM refresh incomplete, keeping the prior values", map[string]any{
			"name": id.Name, "vmid": id.VMID, "error": err.Error()})
		resp.Diagnostics.AddWarning("Unable to refresh proxy VM",
			r.vmErrorDetail("refresh", id.Name, id.VMID, err, "The values saved by the last apply are kept for this plan."))
		return
	case err != nil:
		// The plan could not look (no answer, its node not answering behind it, TLS,
		// 401/403, an answer that failed): it must fail, never report "No changes".
		r.refreshFailed(&resp.Diagnostics, id, state.Node.ValueString(), err)
		return
	}
	resp.Diagnostics.Append(recordNodeIfAbsent(ctx, req.Private, resp.Private, state.Node)...)
	resp.Diagnostics.Append(readWarnings(id, vm)...)
	priorNode := state.Node.ValueString()
	r.fillAddress(ctx, state, &vm)
	// cores and memory_mib are what the VM runs with (a value pending in its config shows
	// as a plan warning, proxy_vm_restart.go): an update interrupted after its config write
	// is then planned again, restart included, and converges.
	applyVM(&state, vm)
	// A seed swap cut off by a kill (proxy_vm_reseed.go): the storage is listed only when
	// the mark says a swap was under way.
	leftovers, err := r.data.backend.SwapLeftovers(ctx, vm, state.UID.ValueString())
	if err != nil {
		resp.Diagnostics.AddWarning("Unable to check proxy VM seed ISOs",
			r.vmErrorDetail("refresh", id.Name, id.VMID, err, "Its mark says a seed swap was under way; the next plan checks again."))
	}
	readSeedDrift(ctx, req.Private, resp.Private, &state, vm, leftovers, &resp.Diagnostics)
	tflog.Debug(ctx, "proxy VM read", map[string]any{
		"name": id.Name, "vmid": id.VMID, "node": vm.Node, "status": string(vm.State)})
	resp.Diagnostics.Append(setState(ctx, &resp.State, &state)...)
	// A VM found on another node than the state's keeps its seed recorded where it was put
	// (an HA recovery moves the config alone).
	resp.Diagnostics.Append(writeSeed(ctx, req.Private, resp.Private, seedWrite{volid: vm.Seed, lastSeen: priorNode})...)
	resp.Diagnostics.Append(writePower(ctx, resp.Private, vm)...)
	resp.Diagnostics.Append(recordMarkDrift(ctx, resp.Private, vm)...) // vm_identity_facet.go
	resp.Diagnostics.Append(writeGone(ctx, resp.Private, "")...)
}

// readWarnings are the warnings of a refresh that read vm only in part: its pool, its status
// or its HA resource not known.
func readWarnings(id proxmox.ID, vm proxmox.VM) diag.Diagnostics {
	var diags diag.Diagnostics
	if vm.PoolUnverified {
		diags.AddWarning(poolUnverifiedWarning(vm))
	}
	if vm.StatusUnknown {
		diags.AddWarning("Proxy VM status not known yet",
			fmt.Sprintf("%s: node %s has not reported the VM's status yet (it is new, or the node's status service lags); "+
				"the status and address saved by the last apply are kept for this plan.", vmLabel(id.Name, id.VMID), vm.Node))
	}
	if vm.HAUnread {
		diags.Append(haUnreadWarning(id, vm)) // vm_ha.go
	}
	return diags
}

// fillAddress asks the guest agent once for the addresses of a running VM whose state has
// none although wait_for_ip says its guest reports one (a start or restart applied while
// wait_for_ip was false, or an agent that answered late), so a refresh fills them in once
// the agent answers. A VM whose address is known, or with wait_for_ip = false (a guest that
// may have no agent at all), costs nothing more: a refresh never asks the agent for it. An
// agent that does not answer leaves the address empty, as before; it never fails the
// refresh.
func (r *proxyVMResource) fillAddress(ctx context.Context, state proxyVMModel, vm *proxmox.VM) {
	if vm.IP != "" || vm.StatusUnknown || vm.State != proxmox.StateRunning || !vm.AgentEnabled || startedFalse(state.WaitForIP) {
		return
	}
	if ip, ok := knownString(state.IPAddress); ok && ip != "" {
		return
	}
	a, err := r.data.backend.AgentAddresses(ctx, vm.Node, vm.ID.VMID)
	if err != nil {
		tflog.Debug(ctx, "proxy VM address not read: the guest agent did not answer", map[string]any{
			"name": vm.ID.Name, "vmid": vm.ID.VMID, "error": err.Error()})
		return
	}
	if len(a.IPv4) > 0 {
		vm.Addresses, vm.IP = a, a.IPv4[0]
	} else if len(a.IPv6) > 0 {
		vm.Addresses = a
	}
}

func (r *proxyVMResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ctx = r.data.withLogging(ctx)
	var ref importRef
	if req.ID == "" && req.Identity != nil && !req.Identity.Raw.IsNull() {
		// An import block with identity = { vmid = ..., name = ... } (Terraform 1.12+).
		var diags diag.Diagnostics
		ref, diags = importRefFromIdentity(ctx, req.Identity)
		resp.Diagnostics.Append(diags...)
		if diags.HasError() {
			return
		}
	} else {
		var err error
		if ref, err = parseImportID(req.ID); err != nil {
			resp.Diagnostics.AddError("Unable to import proxy VM", err.Error())
			return
		}
	}
	defer func() { resp.Diagnostics.Append(setIdentity(ctx, resp.State, resp.Identity)...) }()
	if !r.configured("import", &resp.Diagnostics) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, mustDuration(defaultReadTimeout))
	defer cancel()

	vm, tmpl, diags := r.importVM(ctx, ref)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	var nullTimeouts timeouts.Value
	resp.Diagnostics.Append(resp.State.GetAttribute(ctx, path.Root("timeouts"), &nullTimeouts)...)
	model, unread := importedModel(vm, r.cfg(), tmpl, nullTimeouts)
	resp.Diagnostics.Append(setState(ctx, &resp.State, &model)...)
	resp.Diagnostics.Append(writeImportMarker(ctx, resp.Private, unread)...)
	resp.Diagnostics.Append(writeNetworkDigest(ctx, resp.Private, importedNetworkDigest(vm.MarkExtra))...)
	if vm.MarkExtra.StaticUnreadable {
		resp.Diagnostics.AddWarning("Static address of the imported proxy VM not read",
			vmLabel(vm.ID.Name, vm.ID.VMID)+": its description's "+proxmox.MarkKeyStaticIPv4+" line does not read as one this provider "+
				"writes (was it edited?), so static_ipv4 is left unset and the first value set is compared with the mark's network digest. "+
				"Restore the line, or check the VM's network before setting static_ipv4.")
	}
	if vm.BoundInstance == "" {
		resp.Diagnostics.AddWarning("Imported proxy VM bound to its current SMBIOS uuid",
			vmLabel(vm.ID.Name, vm.ID.VMID)+": its mark has no "+proxmox.MarkKeyInstance+" line (a VM made by the proxy operator or by "+
				"version 0.1.0, or a description edited by hand), so nothing but the uid in its description, which whoever may edit the VM's "+
				"notes can copy, shows it is the VM you mean. The next apply binds the resource to the VM's current SMBIOS uuid (the uuid= "+
				"of the smbios1 line of `qm config "+strconv.Itoa(vm.ID.VMID)+"`) and writes that line: check first that this VMID holds the "+
				"VM you meant to import (its name, disks, and when it was made), not one made by hand at a VMID a deleted VM left.")
	}
	resp.Diagnostics.Append(writeSeed(ctx, nil, resp.Private, seedWrite{volid: vm.Seed, put: vm.Node, maybe: r.cfg().Nodes})...)
	resp.Diagnostics.Append(writePower(ctx, resp.Private, vm)...)
	tflog.Info(ctx, "proxy VM imported", map[string]any{
		"name": vm.ID.Name, "vmid": vm.ID.VMID, "node": vm.Node, "machine_type": model.MachineType.ValueString(),
		"image": model.Image.ValueString(), "template_vmid": tmpl, "unread": fmt.Sprint(unread)})
}

// importVM finds the marked VM ref names and reads it back, with the guest agent's address
// when the agent answers. It then identifies the template the VM was cloned from among the
// catalogue's (proxmox.Backend.TemplateOf: a full clone keeps its template's meta ctime),
// which costs one config read per catalogue template on top of the lookup and the read;
// Read never does it. The template is 0 when it cannot be told; a failure to tell is a
// warning, not an error: the template is then left unread, as for a VM whose meta says
// nothing.
func (r *proxyVMResource) importVM(ctx context.Context, ref importRef) (proxmox.VM, int, diag.Diagnostics) {
	vm, tmpl, diags, _ := r.importVMErr(ctx, ref)
	return vm, tmpl, diags
}

// importVMErr is importVM plus the error its error diagnostic reports (nil without one),
// for a caller that words a failure itself.
func (r *proxyVMResource) importVMErr(ctx context.Context, ref importRef) (proxmox.VM, int, diag.Diagnostics, error) {
	var diags diag.Diagnostics
	var id proxmox.ID
	var err error
	switch {
	case ref.VMID != 0 && ref.Name != "":
		id, err = r.data.backend.FindByID(ctx, proxmox.ID{VMID: ref.VMID, Name: ref.Name})
	case ref.VMID != 0:
		id, err = r.data.backend.FindByVMID(ctx, ref.VMID)
	default:
		id, err = r.data.backend.FindByName(ctx, ref.Name)
	}
	if err != nil {
		note := "Only VMs carrying this provider's (or the proxy operator's) mark can be imported; accepted IDs are " + importForms + "."
		if errors.Is(err, proxmox.ErrStillCreating) || proxmox.IsForbidden(err) {
			note = "" // it carries the mark, or the token may not see it: the note would mislead
		}
		r.addVMError(&diags, "import", ref.Name, ref.VMID, err, note)
		return proxmox.VM{}, 0, diags, err
	}
	// The lookup checked that the VM may be imported (a finished mark with a uid); the state
	// takes the uid read here, which must still be there.
	vm, err := r.data.backend.Get(ctx, id, proxmox.GetOptions{Agent: true, FreshListing: true, AnyOwner: true, HA: true})
	if err != nil && !errors.Is(err, proxmox.ErrNotFound) && proxmox.ClassOf(err) == proxmox.Transient {
		vm, err = r.data.backend.Get(ctx, id, proxmox.GetOptions{FreshListing: true, AnyOwner: true, HA: true}) // the agent is optional here
	}
	if err == nil && (vm.UID == "" || vm.Creating) {
		err = proxmox.Transientf("its mark changed while it was imported (it now has no uid line, or says it is being created); import it again")
	}
	if err != nil {
		r.addVMError(&diags, "import", id.Name, id.VMID, err, "")
		return proxmox.VM{}, 0, diags, err
	}
	tmpl, ok, err := r.data.backend.TemplateOf(ctx, vm, templateCandidates(r.cfg()))
	switch {
	case err != nil:
		tflog.Warn(ctx, "proxy VM template not identified", map[string]any{"name": id.Name, "vmid": id.VMID, "error": err.Error()})
		diags.AddWarning("Template of the imported proxy VM not identified",
			r.vmErrorDetail("import", id.Name, id.VMID, err,
				"The VM is imported without image and template_vmid: the first value the configuration sets is recorded without replacing the VM."))
		tmpl = 0
	case !ok:
		tmpl = 0
	}
	return vm, tmpl, diags, nil
}

// settle waits, within ctx, until a VM that was just started or restarted runs and, with
// waitIP, until its agent reports an address (proxmox.Backend.WaitReady: a VM found
// stopped, gone or without its agent ends the wait at once with the reason). ch holds the
// state's uid and SMBIOS uuid (GetOptions.UID, GetOptions.Instance).
func (r *proxyVMResource) settle(ctx context.Context, id proxmox.ID, ch proxmox.Changes, pool string, waitIP bool) (proxmox.VM, error) {
	return r.data.backend.WaitReady(ctx, id, proxmox.ReadyOptions{UID: ch.UID, Instance: ch.Instance, Pool: pool, Address: waitIP})
}

// mismatch names the planned values the VM does not have after an apply, with what to
// do; "" when it matches. Terraform would otherwise report a bare inconsistency.
func mismatch(plan, got proxyVMModel) string {
	var out []string
	ints := []struct {
		name      string
		want, has types.Int64
	}{
		{"cores", plan.Cores, got.Cores}, {"memory_mib", plan.MemoryMiB, got.MemoryMiB},
		{"disk_gib", plan.DiskGiB, got.DiskGiB}, {"vlan_tag", plan.VLANTag, got.VLANTag},
	}
	for _, a := range ints {
		w, ok := knownInt(a.want)
		if !ok || a.want.Equal(a.has) {
			continue
		}
		h := "none"
		if v, ok := knownInt(a.has); ok {
			h = strconv.Itoa(v)
		}
		if a.name == "disk_gib" && a.has.ValueInt64() > int64(w) {
			out = append(out, fmt.Sprintf("the boot disk is %s GiB, larger than disk_gib = %d: the template's disk is "+
				"larger and a disk is never shrunk. Set disk_gib to at least %s, or remove it", h, w, h))
			continue
		}
		out = append(out, fmt.Sprintf("%s is %s, planned %d", a.name, h, w))
	}
	if w, ok := knownString(plan.Pool); ok && w != got.Pool.ValueString() {
		out = append(out, fmt.Sprintf("pool is %s, planned %q", got.Pool.String(), w))
	}
	if w, ok := knownString(plan.Bridge); ok && !plan.Bridge.Equal(got.Bridge) {
		out = append(out, fmt.Sprintf("bridge is %s, planned %q (does the template have a net0?)", got.Bridge.String(), w))
	}
	if !plan.StartOnBoot.IsUnknown() && !plan.StartOnBoot.IsNull() && !plan.StartOnBoot.Equal(got.StartOnBoot) {
		out = append(out, fmt.Sprintf("start_on_boot is %s, planned %s", got.StartOnBoot.String(), plan.StartOnBoot.String()))
	}
	if w, ok := knownString(plan.Status); ok && !plan.Status.Equal(got.Status) {
		out = append(out, fmt.Sprintf("status is %s, planned %q", got.Status.String(), w))
	}
	out = append(out, networkMismatch(plan, got)...)
	if len(out) == 0 {
		return ""
	}
	return "after the apply, " + strings.Join(out, "; ") + "."
}

func changeFields(c proxmox.Changes) map[string]any {
	f := map[string]any{"start": c.Start}
	if c.Cores != nil {
		f["cores"] = *c.Cores
	}
	if c.MemoryMiB != nil {
		f["memory_mib"] = *c.MemoryMiB
	}
	if c.DiskGiB != nil {
		f["disk_gib"] = *c.DiskGiB
	}
	if c.Bridge != nil {
		f["bridge"] = *c.Bridge
	}
	if c.VLANTag != nil {
		f["vlan_tag"] = *c.VLANTag
	}
	if c.OnBoot != nil {
		f["onboot"] = *c.OnBoot
	}
	return f
}

func withFields(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// mustDuration parses a default timeout constant.
func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// keepsPriorValues reports a refresh failure that keeps the values the last apply saved
// (with a warning): a task holds the VM (a clone in progress, a lock). Every other failure
// (the endpoint not answering, its node not answering behind it (595/596), TLS, 401/403,
// any permanent error) fails the plan: a plan that could not look never says "No changes".
func keepsPriorValues(err error) bool {
	return errors.Is(err, proxmox.ErrBusy) || proxmox.IsLocked(err)
}
