package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmPower is the power facet (vm_facet.go): whether and how the VM runs. Its state as
// Proxmox reports it (vmPowerState: status and onboot) and the provider's settings of what
// a create, an update and a restart do (started, shutdown_timeout, reboot_on_change,
// wait_for_ip), which cannot be read from the VM: an import gives them their defaults
// (started from the VM's status). Not the power action (vm_power_action.go), which starts,
// stops or reboots a VM once.
//
// How a change of a restart option restarts a running VM, or stays pending, is planned in
// proxy_vm_restart.go.
type vmPower struct {
	vmPowerState
	Started         types.Bool   `tfsdk:"started"`
	ShutdownTimeout types.String `tfsdk:"shutdown_timeout"`
	RebootOnChange  types.Bool   `tfsdk:"reboot_on_change"`
	WaitForIP       types.Bool   `tfsdk:"wait_for_ip"`
}

// vmPowerState is the part of the power facet read from the VM: the proxy_vm data source
// embeds it (proxy_vms lists the cluster listing's status of its own, and no onboot).
type vmPowerState struct {
	Status      types.String `tfsdk:"status"`
	StartOnBoot types.Bool   `tfsdk:"start_on_boot"`
}

// Status values of the status attribute.
const (
	statusRunning      = "running"
	statusProvisioning = "provisioning"
	statusStopped      = "stopped"
)

const defaultShutdownTimeout = "2m"

// powerStateAttrs are the attributes of vmPowerState.
func powerStateAttrs() []facetAttr {
	return []facetAttr{{
		name:   "status",
		md:     "`running`, `provisioning` (started, the guest's network not up yet) or `stopped` (also paused or hibernated).",
		change: "`deleted`: the VM is gone; the plan replaces it.",
		read:   "From the VM's current status; a guest without a guest agent is `running` too, only without addresses.",
		resource: schema.StringAttribute{
			Computed:      true,
			PlanModifiers: []planmodifier.String{statusBackToRunning()},
		},
	}, {
		name:   "start_on_boot",
		md:     "Whether Proxmox starts the VM when its node boots (`onboot`), so proxies come back after a host reboot.",
		change: "Default `true`. Changed in place.",
		resource: schema.BoolAttribute{
			Optional: true, Computed: true,
			Default: booldefault.StaticBool(true),
		},
	}}
}

// powerAttrs are the power facet's attributes.
func powerAttrs() []facetAttr {
	return append(powerStateAttrs(), facetAttr{
		name: "started",
		md:   "Whether the VM runs.",
		change: "Default `true`; a VM found stopped is started again. " +
			"`false` creates the VM without starting it (cloud-init runs at its first start), or shuts a running one down.",
		resource: schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true)},
	}, facetAttr{
		name: "shutdown_timeout",
		md: "How long a restart for a " + restartAttrsMD("or") +
			" change, or `started = false`, gives the guest to shut down before Proxmox stops it.",
		change: "Default `2m`, at most half of `timeouts.update`.",
		resource: schema.StringAttribute{Optional: true, Computed: true,
			Default:    stringdefault.StaticString(defaultShutdownTimeout),
			Validators: []validator.String{validators.Duration()}},
	}, facetAttr{
		name:     "reboot_on_change",
		md:       "Whether a " + restartAttrsMD("or") + " change restarts a running VM to apply it.",
		change:   "Default `true`. With `false` the change waits for the VM's next start (see [Restarts](#restarts)).",
		resource: schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true)},
	}, facetAttr{
		name: "wait_for_ip",
		md: "Whether create (and an update that starts or restarts the VM) waits until the guest agent " +
			"reports an IPv4 address.",
		change:   "Default `true`.",
		resource: schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true)},
	})
}

// read takes the status and onboot of the VM as the backend read it; a status the backend
// could not read (StatusUnknown) keeps the prior one. The settings that cannot be read
// get their defaults where they have no value (an import); started is whether the VM
// runs.
func (p *vmPower) read(fc *facetCtx) {
	vm := fc.vm
	p.StartOnBoot = types.BoolValue(vm.OnBoot)
	switch {
	case !vm.StatusUnknown:
		p.Status = statusOf(vm.State)
	case p.Status.IsUnknown():
		p.Status = types.StringNull()
	}
	if p.Started.IsNull() || p.Started.IsUnknown() {
		p.Started = types.BoolValue(vm.State != proxmox.StateStopped)
	}
	for _, b := range []*types.Bool{&p.RebootOnChange, &p.WaitForIP} {
		if b.IsNull() || b.IsUnknown() {
			*b = types.BoolValue(true)
		}
	}
	if p.ShutdownTimeout.IsNull() || p.ShutdownTimeout.IsUnknown() {
		p.ShutdownTimeout = types.StringValue(defaultShutdownTimeout)
	}
}

// statusOf maps the backend's state onto the status attribute.
func statusOf(s proxmox.State) types.String {
	switch s {
	case proxmox.StateRunning:
		return types.StringValue(statusRunning)
	case proxmox.StateProvisioning:
		return types.StringValue(statusProvisioning)
	case "":
		return types.StringNull()
	default:
		return types.StringValue(statusStopped)
	}
}

// nullUnknown nulls the values still unknown (the partial state of a create).
func (p *vmPower) nullUnknown() {
	for _, s := range []*types.String{&p.Status, &p.ShutdownTimeout} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	for _, b := range []*types.Bool{&p.StartOnBoot, &p.Started, &p.RebootOnChange, &p.WaitForIP} {
		if b.IsUnknown() {
			*b = types.BoolNull()
		}
	}
}

// spec puts onboot and the address wait into a create (both true unless known false);
// started = false makes the VM without starting it, and so without the wait.
func (p vmPower) spec(fc *facetCtx) {
	s := fc.spec
	s.OnBoot = p.StartOnBoot.IsNull() || p.StartOnBoot.IsUnknown() || p.StartOnBoot.ValueBool()
	s.WaitForIP = p.WaitForIP.IsNull() || p.WaitForIP.IsUnknown() || p.WaitForIP.ValueBool()
	if startedFalse(p.Started) {
		s.Stopped, s.WaitForIP = true, false
	}
}

// changes puts a changed onboot into an update, a start when the prior status needs one,
// and, with started = false, no start but a stop of a VM that runs.
func (p vmPower) changes(fc *facetCtx) {
	prior, c := fc.prior.vmPower, fc.changes
	changed := false
	if !p.StartOnBoot.IsNull() && !p.StartOnBoot.IsUnknown() && !p.StartOnBoot.Equal(prior.StartOnBoot) {
		v := p.StartOnBoot.ValueBool()
		c.OnBoot, changed = &v, true
	}
	if needsStart(prior.Status) {
		c.Start, changed = true, true
	}
	if startedFalse(p.Started) {
		c.Start = false
		if !prior.Status.IsNull() && !prior.Status.IsUnknown() && !needsStart(prior.Status) {
			c.Stop, changed = true, true
		}
	}
	fc.changed = fc.changed || changed
}

// plan plans the status an update leaves (planStatus) and what a size or option change
// does to a running VM (planPower, with the power record of the private state).
func (p *vmPower) plan(fc *facetCtx) {
	planStatus(fc.m, fc.prior)
	fc.diags.Append(planPower(fc.m, fc.prior, readPower(fc.ctx, fc.private))...)
}

// startedFalse reports a known false (started = false, reboot_on_change = false).
func startedFalse(b types.Bool) bool { return !b.IsNull() && !b.IsUnknown() && !b.ValueBool() }

// planStatus plans the status an update leaves: a VM found stopped is started, and
// without the IP wait its status after the start is running or provisioning, whichever
// the VM reaches first (unknown); a VM kept stopped (started = false) is stopped, without
// an address. The status of a VM found running, or of a new VM, is statusBackToRunning's.
func planStatus(plan, prior *proxyVMModel) {
	if prior == nil {
		return
	}
	if needsStart(prior.Status) && !plan.WaitForIP.IsUnknown() && !plan.WaitForIP.ValueBool() {
		plan.Status = types.StringUnknown()
	}
	if !startedFalse(plan.Started) {
		return
	}
	plan.Status = types.StringValue(statusStopped)
	plan.IPAddress = types.StringNull()
	plan.IPv4Addresses, plan.IPv6Addresses, plan.NetworkInterface = nullStringList, nullStringList, types.StringNull()
}

// validatePower checks a configured shutdown_timeout against timeouts.update (when both
// are known): at most half of it, as the update must also hold the start and the address
// wait after the shutdown.
func validatePower(ctx context.Context, config proxyVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	s, ok := knownString(config.ShutdownTimeout)
	if !ok {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return nil // the attribute's validator says so
	}
	if !config.Timeouts.IsNull() && !config.Timeouts.IsUnknown() {
		if v, ok := config.Timeouts.Attributes()["update"].(types.String); ok && v.IsUnknown() {
			return nil
		}
	}
	update, tdiags := config.Timeouts.Update(ctx, mustDuration(defaultUpdateTimeout))
	if tdiags.HasError() {
		return nil
	}
	if d > update/2 {
		diags.AddAttributeError(
			path.Root("shutdown_timeout"),
			summaryInvalidConfig,
			fmt.Sprintf(
				"shutdown_timeout is %s, but an update may take %s in all (timeouts.update), and after the shutdown it still has to "+
					"start the VM and wait for its address: set shutdown_timeout to at most half of it (%s), or raise timeouts.update.",
				d,
				update,
				update/2,
			),
		)
	}
	return diags
}

// statusBackToRunning plans a VM found stopped (also paused or hibernated) back to
// running, which Update does by starting it; a running or provisioning VM keeps its
// status; a new VM's status is unknown until it is created.
func statusBackToRunning() planmodifier.String { return statusModifier{} }

type statusModifier struct{}

var _ planmodifier.String = statusModifier{}

func (statusModifier) Description(context.Context) string {
	return "A VM found stopped, paused or hibernated is planned back to running and started in place."
}

func (m statusModifier) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (statusModifier) PlanModifyString(_ context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if req.State.Raw.IsNull() || req.Plan.Raw.IsNull() {
		return
	}
	resp.PlanValue = plannedStatus(req.StateValue)
}

// plannedStatus is the status planned from the prior one.
func plannedStatus(prior types.String) types.String {
	switch {
	case prior.IsNull() || prior.IsUnknown():
		return types.StringUnknown()
	case needsStart(prior):
		return types.StringValue(statusRunning)
	default:
		return prior
	}
}

// needsStart reports whether a prior status means the VM must be started.
func needsStart(prior types.String) bool {
	if prior.IsNull() || prior.IsUnknown() {
		return false
	}
	s := prior.ValueString()
	return s != statusRunning && s != statusProvisioning
}
