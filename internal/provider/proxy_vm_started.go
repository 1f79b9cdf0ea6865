package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// started: whether the VM runs. false keeps it stopped (a create makes it without starting
// it and without the address wait; an update shuts a running VM down, as a restart does);
// true (the default) starts a VM found stopped, as before.

func startedAttribute() schema.BoolAttribute {
	md := "Whether the VM runs. Default `true`: a create starts it (and waits for its address unless " +
		"`wait_for_ip = false`), and a VM found stopped, paused or hibernated is started again in place. With " +
		"`false`, a create makes the VM without starting it (no address wait; its first boot, which runs " +
		"cloud-init, happens when `started` is set to `true`), an update shuts a running VM down as a restart " +
		"does (the guest has `shutdown_timeout`, then Proxmox stops it; a paused VM is stopped), and a VM found " +
		"stopped stays stopped. Changing it starts or stops the VM in place. " +
		"`status` is `stopped` and the addresses are null while it is `false`. An import sets it from the VM's " +
		"status (`false` for a stopped VM)."
	return schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
		MarkdownDescription: md, Description: plain(md)}
}

// startedFalse reports a known started = false.
func startedFalse(b types.Bool) bool { return !b.IsNull() && !b.IsUnknown() && !b.ValueBool() }

// planStarted plans a VM kept stopped: status stopped, no address.
func planStarted(plan, prior *proxyVMModel) {
	if prior == nil || !startedFalse(plan.Started) {
		return
	}
	plan.Status = types.StringValue(statusStopped)
	plan.IPAddress = types.StringNull()
	plan.IPv4Addresses, plan.IPv6Addresses, plan.NetworkInterface = nullStringList, nullStringList, types.StringNull()
}

// startedSpec leaves a new VM stopped.
func startedSpec(s *proxmox.Spec, plan proxyVMModel) {
	if startedFalse(plan.Started) {
		s.Stopped, s.WaitForIP = true, false
	}
}

// startedChanges turns a start into nothing and a running VM into a stop when started is
// false; it reports whether there is a stop.
func startedChanges(c *proxmox.Changes, prior, plan proxyVMModel) bool {
	if !startedFalse(plan.Started) {
		return false
	}
	c.Start = false
	if !prior.Status.IsNull() && !prior.Status.IsUnknown() && !needsStart(prior.Status) {
		c.Stop = true
	}
	return c.Stop
}

// importedStarted is started for an imported VM (or a state written before the attribute):
// whether the VM runs.
func importedStarted(m *proxyVMModel, vm proxmox.VM) {
	if m.Started.IsNull() || m.Started.IsUnknown() {
		m.Started = types.BoolValue(vm.State != proxmox.StateStopped)
	}
}
