package provider

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// Restarts for cores and memory. Proxmox keeps a cores or memory change to a running VM
// pending until the VM's next start; the provider then restarts it gracefully (a shutdown
// the guest has shutdown_timeout to finish, then Proxmox stops it), or with
// reboot_on_change = false leaves the change pending. Memory on a VM with memory hotplug
// applies at once. Read reports what the VM runs with, so a pending change shows in every
// plan until the VM restarts. shutdown_timeout and reboot_on_change are the power facet's
// attributes (vm_power.go).

// powerRecord is the value of privateKeyPower: what the last read saw of the VM's sizes,
// the values its config holds that wait for a restart, and whether memory is hotplugged.
// ModifyPlan reads it to say what an apply will do, without a request.
type powerRecord struct {
	PendingCores     int  `json:"pending_cores,omitempty"`
	PendingMemoryMiB int  `json:"pending_memory_mib,omitempty"`
	MemoryHotplug    bool `json:"memory_hotplug,omitempty"`
	// What the DIMM steps depend on, with MemoryHotplug (MemoryHotplugStep).
	Hugepages1G bool `json:"hugepages_1g,omitempty"`
	Sockets     int  `json:"sockets,omitempty"`
	// What the VM runs with, kept when a value is pending.
	RunningCores     int `json:"running_cores,omitempty"`
	RunningMemoryMiB int `json:"running_memory_mib,omitempty"`
}

func writePower(ctx context.Context, p privateSetter, vm proxmox.VM) diag.Diagnostics {
	rec := powerRecord{PendingCores: vm.PendingCores, PendingMemoryMiB: vm.PendingMemoryMiB, MemoryHotplug: vm.MemoryHotplug}
	if vm.MemoryHotplug {
		rec.Hugepages1G, rec.Sockets = vm.HotplugHugepages1G, vm.HotplugSockets
	}
	if vm.PendingCores != 0 {
		rec.RunningCores = vm.Cores
	}
	if vm.PendingMemoryMiB != 0 {
		rec.RunningMemoryMiB = vm.MemoryMiB
	}
	if rec == (powerRecord{}) {
		return privateKeyPower.clear(ctx, p)
	}
	return privateKeyPower.write(ctx, p, rec)
}

func readPower(ctx context.Context, p privateGetter) powerRecord {
	rec, _, _ := privateKeyPower.read(ctx, p) // none or unreadable: nothing known, the apply decides
	return rec
}

// planPower says in the plan what a cores or memory_mib change does to a running VM: a
// restart (a warning on the attribute), nothing for hotplugged memory, or, with
// reboot_on_change = false, a change left pending (a warning). A value the VM already runs
// with, against a different one pending in its config, is a config write with no restart
// (Proxmox drops the pending value). An unknown size may restart it (a warning). A size a
// VM with memory hotplug cannot take is an error here. Without a restart the address
// stays known.
func planPower(plan, prior *proxyVMModel, rec powerRecord) diag.Diagnostics {
	var diags diag.Diagnostics
	if prior == nil {
		return nil
	}
	name := plan.Name.ValueString()
	// A VM with memory hotplug takes only DIMM steps, running or not: Proxmox refuses to
	// start it with another size.
	if want, ok := knownInt(plan.MemoryMiB); ok && rec.MemoryHotplug && !plan.MemoryMiB.Equal(prior.MemoryMiB) {
		if d := hotplugStepDiag(name, want, rec.Hugepages1G, rec.Sockets); d != "" {
			diags.AddAttributeError(path.Root("memory_mib"), summaryInvalidConfig, d)
			return diags
		}
	}
	if prior.Status.IsNull() || prior.Status.IsUnknown() || needsStart(prior.Status) || startedFalse(plan.Started) {
		return nil
	}
	deferred := startedFalse(plan.RebootOnChange)
	restart := false
	for _, a := range []sizePower{
		{"cores", prior.Cores, plan.Cores, rec.PendingCores, rec.RunningCores, false},
		{"memory_mib", prior.MemoryMiB, plan.MemoryMiB, rec.PendingMemoryMiB, rec.RunningMemoryMiB, rec.MemoryHotplug},
	} {
		if a.plan(name, deferred, &diags) {
			restart = true
		}
	}
	restart = planOptionRestarts(&diags, prior, plan, restart)
	if !restart {
		// Nothing restarts: the address stays.
		plan.IPAddress, plan.IPv4Addresses, plan.IPv6Addresses, plan.NetworkInterface =
			prior.IPAddress, prior.IPv4Addresses, prior.IPv6Addresses, prior.NetworkInterface
	}
	return diags
}

// sizePower is one size attribute a running VM applies at its next start: its prior and
// planned values, the value its config holds pending (0: none) and, when one is pending,
// the value it runs with; hot: memory the VM plugs without a restart.
type sizePower struct {
	attr             string
	prior, planned   types.Int64
	pending, running int
	hot              bool
}

// plan adds the size's warnings to diags and reports whether the apply restarts the VM
// for it (planPower).
func (a sizePower) plan(name string, deferred bool, diags *diag.Diagnostics) (restart bool) {
	p := path.Root(a.attr)
	want, known := knownInt(a.planned)
	if !known {
		if a.planned.Equal(a.prior) || deferred || a.hot {
			return false
		}
		diags.AddAttributeWarning(p, "Proxy VM may be restarted",
			fmt.Sprintf("%s of proxy VM %q is known only at apply: if it differs from what the VM runs with, the apply restarts the VM "+
				"to apply it (a shutdown of up to shutdown_timeout, then a start), and its address may change. "+
				"Set reboot_on_change = false to leave such a change pending instead.", a.attr, name))
		return true
	}
	if a.pending != 0 && a.pending != want && (a.running == want || (a.running == 0 && a.planned.Equal(a.prior))) {
		a.planRunsConfigured(p, name, want, diags)
		return false
	}
	if a.planned.Equal(a.prior) {
		if a.pending != 0 && a.pending == want && a.running != 0 {
			// The configured value is pending (a prior that holds it: a synthetic state).
			diags.AddAttributeWarning(p, "Proxy VM change pending",
				fmt.Sprintf("%s %d is pending until proxy VM %q restarts; it runs with %s %d until then. Restart it (started = false, "+
					"then true) to apply it.", a.attr, want, name, a.attr, a.running))
		}
		return false
	}
	if a.hot {
		return false // plugged (on a DIMM step, checked by planPower), no restart
	}
	from := "?"
	if was, ok := knownInt(a.prior); ok {
		from = fmt.Sprint(was)
	}
	switch {
	case !deferred:
		diags.AddAttributeWarning(p, "Proxy VM will be restarted",
			fmt.Sprintf("proxy VM %s will be restarted to apply %s %s → %d: Proxmox applies it at the VM's next "+
				"start, so the apply shuts the guest "+
				"down (up to shutdown_timeout, then Proxmox stops it) and starts it again; its address may change. "+
				"Set reboot_on_change = false to leave the change pending until the VM restarts.", name, a.attr, from, want))
		return true
	case a.pending == want:
		diags.AddAttributeWarning(p, "Proxy VM change pending",
			fmt.Sprintf("%s %d is pending until the VM restarts; set reboot_on_change = true or restart it. Proxy VM %q runs with %s %s; "+
				"every plan shows this change until then.", a.attr, want, name, a.attr, from))
	default:
		diags.AddAttributeWarning(p, "Proxy VM change pending",
			fmt.Sprintf("%s %d is written to the config of proxy VM %q and stays pending until the VM restarts (reboot_on_change = false); "+
				"set reboot_on_change = true or restart it. The VM runs with %s %s until then, and every plan shows "+
				"this change.", a.attr, want, name, a.attr, from))
	}
	return false
}

// planRunsConfigured warns about a VM that runs with the configured value while its config
// holds another one, pending.
func (a sizePower) planRunsConfigured(p path.Path, name string, want int, diags *diag.Diagnostics) {
	if !a.planned.Equal(a.prior) {
		diags.AddAttributeWarning(p, "Proxy VM pending change dropped",
			fmt.Sprintf("Proxy VM %q runs with %s %d, as configured, but its Proxmox config holds %d, pending until its next start: "+
				"the apply writes %d to the config, which Proxmox takes as is, dropping the pending value. No restart.",
				name, a.attr, want, a.pending, want))
		return
	}
	diags.AddAttributeWarning(p, "Proxy VM change pending",
		fmt.Sprintf("Proxy VM %q runs with %s %d, as configured, but its Proxmox config holds %d, pending until its next start. "+
			"Any apply that changes or restarts this VM through Terraform writes %d to the config first, which drops the pending "+
			"value; a restart outside Terraform would apply %d, and the next plan would then show %s %d → %d.",
			name, a.attr, want, a.pending, want, a.pending, a.attr, a.pending, want))
}

// hotplugStepDiag is the plan's error for a memory size a VM with memory hotplug cannot
// take (MemoryHotplugStep), "" when it can.
func hotplugStepDiag(name string, want int, hugepages1G bool, sockets int) string {
	ok, below, above := proxmox.MemoryHotplugStep(want, hugepages1G, sockets)
	switch {
	case ok:
		return ""
	case want < below:
		return fmt.Sprintf("Proxy VM %q has memory hotplug (its Proxmox hotplug option names memory), and memory hotplug needs at least %d MiB: "+
			"%d MiB is below it. Set memory_mib to %d or more, on a DIMM step.", name, below, want, below)
	case below == above:
		return fmt.Sprintf("Proxy VM %q has memory hotplug (its Proxmox hotplug option names memory), which reaches at most %d MiB: "+
			"%d MiB is above it. Set memory_mib to %d or less.", name, below, want, below)
	default:
		return fmt.Sprintf("Proxy VM %q has memory hotplug (its Proxmox hotplug option names memory), so its memory grows and shrinks in "+
			"Proxmox's DIMM steps, and %d MiB is not one. Set memory_mib to %d or %d.", name, want, below, above)
	}
}

// powerChanges passes the restart settings to the backend: shutdown_timeout, at most half of
// the update timeout (validatePower); a configured value the config's pending section
// contradicts, so that the write before any power-off makes Proxmox drop the pending value
// (decision: update-in-place); a memory hotplug Proxmox refuses is a warning on memory_mib.
func powerChanges(c *proxmox.Changes, plan proxyVMModel, update time.Duration, rec powerRecord, diags *diag.Diagnostics) {
	name := plan.Name.ValueString()
	c.Notify = func(msg string) {
		diags.AddAttributeWarning(path.Root("memory_mib"), "Proxy VM memory hotplug refused",
			fmt.Sprintf("Proxy VM %q: %s The plan expected the memory to be plugged with no restart.", name, msg))
	}
	if v, ok := knownInt(plan.Cores); ok && c.Cores == nil && rec.PendingCores != 0 && rec.PendingCores != v {
		c.Cores = &v
	}
	if v, ok := knownInt(plan.MemoryMiB); ok && c.MemoryMiB == nil && rec.PendingMemoryMiB != 0 && rec.PendingMemoryMiB != v {
		c.MemoryMiB = &v
	}
	if s, ok := knownString(plan.ShutdownTimeout); ok {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			c.ShutdownTimeout = d
		}
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = mustDuration(defaultShutdownTimeout)
	}
	if c.ShutdownTimeout > update/2 {
		c.ShutdownTimeout = update / 2 // the default only: a configured value is at most half (validatePower)
	}
	c.DeferRestart = startedFalse(plan.RebootOnChange)
}

// keepPending is the state after an apply that left a change pending: the planned
// (written) value, not the one the VM runs with, so the apply is consistent; the next
// refresh reports the running value again.
func keepPending(state *proxyVMModel, plan proxyVMModel, vm proxmox.VM) {
	if v, ok := knownInt(plan.Cores); ok && vm.PendingCores == v {
		state.Cores = plan.Cores
	}
	if v, ok := knownInt(plan.MemoryMiB); ok && vm.PendingMemoryMiB == v {
		state.MemoryMiB = plan.MemoryMiB
	}
}

// The attributes whose change needs a restart of a running VM are those of
// proxmox.RestartOptions: the descriptions that name them and the plan's checks of them
// are derived from that list.

// restartAttrsMD joins the restart options' attributes in code spans: "`cores` or
// `memory_mib`".
func restartAttrsMD(conj string) string {
	return proxmox.RestartAttrs(conj, func(s string) string { return "`" + s + "`" })
}

// restartOptionChanges says plan may change a restart option's attribute from prior (an
// unknown value may).
func restartOptionChanges(prior, plan proxyVMModel) bool {
	for _, o := range proxmox.RestartOptions {
		p, n := modelValue(prior, o.Attr), modelValue(plan, o.Attr)
		if n == nil {
			continue // not an attribute of the model: TestRestartOptions_attributes
		}
		if n.IsUnknown() || !n.Equal(p) {
			return true
		}
	}
	return false
}

// planOptionRestarts says in the plan what a change of a restart option beyond cores and
// memory (whose own checks are planPower's) does to a running VM: a restart (a warning on
// the attribute), or with reboot_on_change = false a change written and left pending until
// the VM's next start. An unknown value may restart it. It reports whether the VM is
// restarted: restart (what planPower decided for cores and memory), or for an option.
// planPower calls it once it knows the VM runs and stays running.
func planOptionRestarts(diags *diag.Diagnostics, prior, plan *proxyVMModel, restart bool) bool {
	name := plan.Name.ValueString()
	deferred := startedFalse(plan.RebootOnChange)
	for _, o := range proxmox.RestartOptions {
		if o.OwnFields() {
			continue
		}
		was, now := modelValue(prior, o.Attr), modelValue(plan, o.Attr)
		if now == nil || now.IsNull() || now.Equal(was) {
			continue
		}
		p := path.Root(o.Attr)
		switch {
		case now.IsUnknown() && !deferred:
			restart = true
			diags.AddAttributeWarning(p, "Proxy VM may be restarted",
				fmt.Sprintf("%s of proxy VM %q is known only at apply: if it differs from the VM's, the apply restarts the VM "+
					"to apply it (a shutdown of up to shutdown_timeout, then a start), and its address may change. "+
					"Set reboot_on_change = false to leave such a change pending instead.", o.Attr, name))
		case now.IsUnknown():
		case !deferred:
			restart = true
			diags.AddAttributeWarning(p, "Proxy VM will be restarted",
				fmt.Sprintf("proxy VM %s will be restarted to apply %s %s → %s: Proxmox applies it at the VM's next "+
					"start, so the apply shuts the guest "+
					"down (up to shutdown_timeout, then Proxmox stops it) and starts it again; its address may change. "+
					"Set reboot_on_change = false to leave the change pending until the VM restarts.", name, o.Attr, valueText(was), valueText(now)))
		default:
			diags.AddAttributeWarning(p, "Proxy VM change pending",
				fmt.Sprintf("%s %s is written to the config of proxy VM %q and stays pending until the VM restarts (reboot_on_change = false); "+
					"the VM runs with %s until then, and the state shows the configured value.", o.Attr, valueText(now), name, valueText(was)))
		}
	}
	return restart
}

// valueText is a value for a message: a string quoted, null as "none".
func valueText(v attr.Value) string {
	if v == nil || v.IsNull() {
		return "none"
	}
	if s, ok := v.(types.String); ok {
		return fmt.Sprintf("%q", s.ValueString())
	}
	return v.String()
}

// modelValue is the value of the attribute name in a model struct (its field tagged
// tfsdk:"name", also in an embedded struct); nil when the model has no such attribute.
func modelValue(model any, name string) attr.Value {
	return fieldValue(reflect.ValueOf(model), name)
}

func fieldValue(v reflect.Value, name string) attr.Value {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			if av := fieldValue(v.Field(i), name); av != nil {
				return av
			}
			continue
		}
		if tag, _, _ := strings.Cut(f.Tag.Get("tfsdk"), ","); tag == name && f.IsExported() {
			if av, ok := v.Field(i).Interface().(attr.Value); ok {
				return av
			}
			return nil
		}
	}
	return nil
}
