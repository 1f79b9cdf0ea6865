package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestRestartOptions_attributes: every restart option names an attribute of proxy_vm's
// schema and model, so that the plan's checks derived from the list see it.
func TestRestartOptions_attributes(t *testing.T) {
	s := proxyVMSchema(context.Background())
	for _, o := range proxmox.RestartOptions {
		if _, ok := s.Attributes[o.Attr]; !ok {
			t.Errorf("restart option %s: proxy_vm has no attribute %s", o.Key, o.Attr)
		}
		if modelValue(proxyVMModel{}, o.Attr) == nil {
			t.Errorf("restart option %s: proxyVMModel has no field for %s", o.Key, o.Attr)
		}
	}
}

// TestInPlaceOptions_attributes: each of proxmox.InPlaceOptions is an attribute of proxy_vm
// and a field of its model, and none is also a restart option.
func TestInPlaceOptions_attributes(t *testing.T) {
	s := proxyVMSchema(context.Background())
	for _, o := range proxmox.InPlaceOptions {
		if _, ok := s.Attributes[o.Attr]; !ok {
			t.Errorf("in-place option %s: proxy_vm has no attribute %s", o.Key, o.Attr)
		}
		if modelValue(proxyVMModel{}, o.Attr) == nil {
			t.Errorf("in-place option %s: proxyVMModel has no field for %s", o.Key, o.Attr)
		}
		for _, r := range proxmox.RestartOptions {
			if r.Key == o.Key {
				t.Errorf("option %s is both in place and a restart option", o.Key)
			}
		}
	}
}

// TestRestartOptionChanges: a changed or unknown value of a restart option's attribute is
// a change; other attributes are not.
func TestRestartOptionChanges(t *testing.T) {
	prior := proxyVMModel{vmSize: vmSize{Cores: types.Int64Value(2), MemoryMiB: types.Int64Value(1024), DiskGiB: types.Int64Value(8)}}
	same := prior
	same.DiskGiB = types.Int64Value(16)
	if restartOptionChanges(prior, same) {
		t.Error("a disk change counted as a restart option change")
	}
	for _, o := range proxmox.RestartOptions {
		for _, v := range []types.Int64{types.Int64Value(4096), types.Int64Unknown()} {
			plan := prior
			switch o.Attr {
			case "cores":
				plan.Cores = v
			case "memory_mib":
				plan.MemoryMiB = v
			default:
				continue
			}
			if !restartOptionChanges(prior, plan) {
				t.Errorf("%s %v: not a restart option change", o.Attr, v)
			}
		}
	}
}

// runningPrior is the state of a running VM with 2 cores and 2048 MiB.
func runningPrior() proxyVMModel {
	m := cfgModel("proxy-a", func(m *proxyVMModel) {
		m.Cores, m.MemoryMiB = types.Int64Value(2), types.Int64Value(2048)
		m.Status, m.IPAddress = types.StringValue(statusRunning), types.StringValue("192.0.2.10")
		m.Started, m.RebootOnChange = types.BoolValue(true), types.BoolValue(true)
	})
	return m
}

func oneDiag(t *testing.T, diags diag.Diagnostics, attr string, sev diag.Severity, want ...string) {
	t.Helper()
	if len(diags) != 1 {
		t.Fatalf("diagnostics %v, want one on %s", diags, attr)
	}
	d := diags[0]
	wp, ok := d.(diag.DiagnosticWithPath)
	if d.Severity() != sev || !ok || !wp.Path().Equal(path.Root(attr)) {
		t.Fatalf("diagnostic %v (severity %v), want one on %s", d, d.Severity(), attr)
	}
	for _, w := range want {
		if !strings.Contains(d.Summary()+"\n"+d.Detail(), w) {
			t.Errorf("diagnostic %q / %q lacks %q", d.Summary(), d.Detail(), w)
		}
	}
}

func TestPlanPower_restartWarning(t *testing.T) {
	prior := runningPrior()
	plan := prior
	plan.Cores = types.Int64Value(4)
	plan.IPAddress = types.StringUnknown() // as the addresses facet plans a restart
	diags := planPower(&plan, &prior, powerRecord{})
	oneDiag(t, diags, "cores", diag.SeverityWarning, "proxy VM proxy-a will be restarted to apply cores 2 → 4", "reboot_on_change = false")
	if !plan.IPAddress.IsUnknown() {
		t.Errorf("a restart keeps the address unknown, got %s", plan.IPAddress)
	}
}

func TestPlanPower_pending(t *testing.T) {
	prior := runningPrior()
	plan := prior
	plan.Cores, plan.RebootOnChange, plan.IPAddress = types.Int64Value(4), types.BoolValue(false), types.StringUnknown()
	diags := planPower(&plan, &prior, powerRecord{})
	oneDiag(t, diags, "cores", diag.SeverityWarning, "cores 4 is written to the config", "stays pending until the VM restarts", "set reboot_on_change = true or restart it")
	if plan.IPAddress.ValueString() != "192.0.2.10" {
		t.Errorf("no restart: the address stays, got %s", plan.IPAddress)
	}
	// Already pending (the last read saw it in the config).
	plan.IPAddress = types.StringUnknown()
	diags = planPower(&plan, &prior, powerRecord{PendingCores: 4})
	oneDiag(t, diags, "cores", diag.SeverityWarning, "cores 4 is pending until the VM restarts; set reboot_on_change = true or restart it")
	// Reverted in the configuration while a value is pending.
	plan = prior
	diags = planPower(&plan, &prior, powerRecord{PendingCores: 4})
	oneDiag(t, diags, "cores", diag.SeverityWarning, "its Proxmox config holds 4")
}

func TestPlanPower_hotplug(t *testing.T) {
	prior := runningPrior()
	plan := prior
	plan.MemoryMiB, plan.IPAddress = types.Int64Value(3072), types.StringUnknown()
	if diags := planPower(&plan, &prior, powerRecord{MemoryHotplug: true}); len(diags) != 0 {
		t.Errorf("hotplugged memory: %v, want no diagnostic", diags)
	}
	if plan.IPAddress.ValueString() != "192.0.2.10" {
		t.Errorf("hotplug: the address stays, got %s", plan.IPAddress)
	}
	plan.MemoryMiB = types.Int64Value(3000)
	oneDiag(t, planPower(&plan, &prior, powerRecord{MemoryHotplug: true}), "memory_mib", diag.SeverityError, "3000 MiB is not one", "2560 or 3072", "Proxmox's DIMM steps")
	// A stopped VM restarts nothing: no warning.
	prior.Status = types.StringValue(statusStopped)
	plan = prior
	plan.Cores = types.Int64Value(4)
	if diags := planPower(&plan, &prior, powerRecord{}); len(diags) != 0 {
		t.Errorf("stopped VM: %v", diags)
	}
}

func TestValidatePower(t *testing.T) {
	ctx := context.Background()
	withUpdate := func(st, update string) proxyVMModel {
		m := cfgModel("proxy-a", nil)
		m.ShutdownTimeout = types.StringValue(st)
		attrs := map[string]attr.Value{"create": types.StringNull(), "read": types.StringNull(), "update": types.StringNull(), "delete": types.StringNull()}
		if update != "" {
			attrs["update"] = types.StringValue(update)
		}
		m.Timeouts = timeouts.Value{Object: types.ObjectValueMust(map[string]attr.Type{
			"create": types.StringType, "read": types.StringType, "update": types.StringType, "delete": types.StringType}, attrs)}
		return m
	}
	if d := validatePower(ctx, withUpdate("5m", "")); d.HasError() {
		t.Errorf("5m within the default update timeout: %v", d)
	}
	oneDiag(t, validatePower(ctx, withUpdate("5m", "5m")), "shutdown_timeout", diag.SeverityError, "at most half of it (2m30s), or raise timeouts.update")
	oneDiag(t, validatePower(ctx, withUpdate("30m", "")), "shutdown_timeout", diag.SeverityError, "20m0s")
	// Above half of timeouts.update, below all of it: refused.
	oneDiag(t, validatePower(ctx, withUpdate("3m", "5m")), "shutdown_timeout", diag.SeverityError, "start the VM and wait for its address")
	if d := validatePower(ctx, withUpdate("2m30s", "5m")); d.HasError() {
		t.Errorf("half of timeouts.update: %v", d)
	}
	if d := validatePower(ctx, withUpdate("10m", "")); d.HasError() {
		t.Errorf("half of the default update timeout: %v", d)
	}
}

// The default shutdown_timeout with a short timeouts.update: half of it is used.
func TestPowerChanges_shutdownTimeout(t *testing.T) {
	for _, tc := range []struct {
		st     string
		update time.Duration
		want   time.Duration
	}{
		{"2m", 20 * time.Minute, 2 * time.Minute},
		{"2m", 3 * time.Minute, 90 * time.Second},
		{"1m", 3 * time.Minute, time.Minute},
	} {
		var c proxmox.Changes
		plan := runningPrior()
		plan.ShutdownTimeout = types.StringValue(tc.st)
		var diags diag.Diagnostics
		powerChanges(&c, plan, tc.update, powerRecord{}, &diags)
		if c.ShutdownTimeout != tc.want {
			t.Errorf("%s with timeouts.update %s: %s, want %s", tc.st, tc.update, c.ShutdownTimeout, tc.want)
		}
	}
}

// The update's note of a refused hotplug is a warning on memory_mib; a configured value
// that the config's pending section contradicts is sent although the plan keeps it.
func TestPowerChanges_notifyAndPending(t *testing.T) {
	var c proxmox.Changes
	var diags diag.Diagnostics
	powerChanges(&c, runningPrior(), 20*time.Minute, powerRecord{PendingCores: 8, RunningCores: 2}, &diags)
	if c.Cores == nil || *c.Cores != 2 || c.MemoryMiB != nil {
		t.Errorf("cores %v memory %v, want cores 2 sent and memory left alone", c.Cores, c.MemoryMiB)
	}
	c.Notify("Proxmox did not hotplug memory 4096 MiB (hotplug problem), so the VM is restarted to apply it.")
	oneDiag(t, diags, "memory_mib", diag.SeverityWarning, "Proxy VM memory hotplug refused", "restarted to apply it")
}

// A value the VM runs with, against another one pending in its config: a config write,
// no restart, the address known.
func TestPlanPower_pendingDropped(t *testing.T) {
	prior := runningPrior()
	prior.Cores = types.Int64Value(8) // a state holding the config's pending value
	plan := prior
	plan.Cores, plan.IPAddress = types.Int64Value(2), types.StringUnknown()
	diags := planPower(&plan, &prior, powerRecord{PendingCores: 8, RunningCores: 2})
	oneDiag(t, diags, "cores", diag.SeverityWarning, "Proxy VM pending change dropped", "runs with cores 2, as configured", "holds 8", "No restart")
	if plan.IPAddress.ValueString() != "192.0.2.10" {
		t.Errorf("no restart: the address stays, got %s", plan.IPAddress)
	}
	// The state reports the configured pending value: still pending, no change planned.
	prior.Cores = types.Int64Value(8)
	plan = prior
	oneDiag(t, planPower(&plan, &prior, powerRecord{PendingCores: 8, RunningCores: 2}), "cores", diag.SeverityWarning,
		"cores 8 is pending until proxy VM \"proxy-a\" restarts; it runs with cores 2")
}

// An unknown size on a running VM may restart it: a warning, the address unknown.
func TestPlanPower_unknownMayRestart(t *testing.T) {
	prior := runningPrior()
	plan := prior
	plan.Cores, plan.IPAddress = types.Int64Unknown(), types.StringUnknown()
	oneDiag(t, planPower(&plan, &prior, powerRecord{}), "cores", diag.SeverityWarning, "Proxy VM may be restarted", "known only at apply")
	if !plan.IPAddress.IsUnknown() {
		t.Errorf("a possible restart keeps the address unknown, got %s", plan.IPAddress)
	}
	plan.RebootOnChange = types.BoolValue(false)
	if diags := planPower(&plan, &prior, powerRecord{}); len(diags) != 0 {
		t.Errorf("reboot_on_change = false: %v, want none", diags)
	}
}

func TestHotplugStepDiag(t *testing.T) {
	if d := hotplugStepDiag("proxy-a", 1000, false, 1); !strings.Contains(d, "memory hotplug needs at least 1024 MiB") || strings.Contains(d, "1024 or 1024") {
		t.Errorf("below the minimum: %q", d)
	}
	if d := hotplugStepDiag("proxy-a", 3000, false, 1); !strings.Contains(d, "Proxmox's DIMM steps, and 3000 MiB is not one") || !strings.Contains(d, "2560 or 3072") {
		t.Errorf("off-step: %q", d)
	}
	if d := hotplugStepDiag("proxy-a", 3072, false, 1); d != "" {
		t.Errorf("on a step: %q", d)
	}
}

// The DIMM check applies to a stopped VM too (Proxmox refuses to start it off-step), and
// follows the hugepages and sockets the last read saw.
func TestPlanPower_hotplugStepStoppedHugepages(t *testing.T) {
	prior := runningPrior()
	prior.Status = types.StringValue(statusStopped)
	plan := prior
	plan.MemoryMiB = types.Int64Value(3000)
	oneDiag(t, planPower(&plan, &prior, powerRecord{MemoryHotplug: true}), "memory_mib", diag.SeverityError, "3000 MiB is not one")
	// 1 GiB hugepages on 2 sockets: 2048 MiB of static memory, 1 GiB DIMMs.
	rec := powerRecord{MemoryHotplug: true, Hugepages1G: true, Sockets: 2}
	plan.MemoryMiB = types.Int64Value(1536) // a 512 MiB step, not a 1 GiB one
	oneDiag(t, planPower(&plan, &prior, rec), "memory_mib", diag.SeverityError, "needs at least 2048 MiB")
	plan.MemoryMiB = types.Int64Value(3072)
	if diags := planPower(&plan, &prior, rec); len(diags) != 0 {
		t.Errorf("3072 MiB with 1 GiB DIMMs on 2048 MiB: %v", diags)
	}
	prior.Status = types.StringValue(statusRunning)
	plan.MemoryMiB = types.Int64Value(2560)
	oneDiag(t, planPower(&plan, &prior, rec), "memory_mib", diag.SeverityError, "2560 MiB is not one", "2048 or 3072")
}
