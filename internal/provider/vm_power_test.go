package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestVMPower_read: status and start_on_boot come from the VM; a status the backend could
// not read keeps the prior one (null when it was unknown); started, shutdown_timeout,
// reboot_on_change and wait_for_ip, which cannot be read, get their defaults only where
// they have no value (started from whether the VM runs), and keep a value they have.
func TestVMPower_read(t *testing.T) {
	var p vmPower
	p.read(onVM(proxmox.VM{State: proxmox.StateRunning, OnBoot: true}))
	if p.Status.ValueString() != statusRunning || !p.StartOnBoot.ValueBool() || !p.Started.ValueBool() ||
		p.ShutdownTimeout.ValueString() != "2m" || !p.RebootOnChange.ValueBool() || !p.WaitForIP.ValueBool() {
		t.Errorf("running VM, nothing known: %+v", p)
	}

	p = vmPower{}
	p.read(onVM(proxmox.VM{State: proxmox.StateStopped}))
	if p.Status.ValueString() != statusStopped || p.StartOnBoot.IsNull() || p.StartOnBoot.ValueBool() ||
		p.Started.IsNull() || p.Started.ValueBool() {
		t.Errorf("stopped VM without onboot: %+v", p)
	}

	p = vmPower{vmPowerState: vmPowerState{StartOnBoot: types.BoolValue(true)},
		Started: types.BoolValue(false), ShutdownTimeout: types.StringValue("30s"),
		RebootOnChange: types.BoolValue(false), WaitForIP: types.BoolValue(false)}
	p.read(onVM(proxmox.VM{State: proxmox.StateProvisioning}))
	if p.Status.ValueString() != statusProvisioning || p.StartOnBoot.ValueBool() || p.Started.ValueBool() ||
		p.ShutdownTimeout.ValueString() != "30s" || p.RebootOnChange.ValueBool() || p.WaitForIP.ValueBool() {
		t.Errorf("settings known: %+v, want them kept and onboot false", p)
	}

	p = vmPower{vmPowerState: vmPowerState{Status: types.StringValue(statusRunning)}}
	p.read(onVM(proxmox.VM{State: proxmox.StateStopped, StatusUnknown: true}))
	if p.Status.ValueString() != statusRunning {
		t.Errorf("status unknown to the backend: %v, want the prior running", p.Status)
	}
	p = vmPower{vmPowerState: vmPowerState{Status: types.StringUnknown()}}
	p.read(onVM(proxmox.VM{StatusUnknown: true}))
	if !p.Status.IsNull() {
		t.Errorf("status unknown to the backend and to the plan: %v, want null", p.Status)
	}
}

// TestVMPower_nullUnknown: every unknown value is nulled, a known one kept.
func TestVMPower_nullUnknown(t *testing.T) {
	p := vmPower{vmPowerState: vmPowerState{Status: types.StringUnknown(), StartOnBoot: types.BoolUnknown()},
		Started: types.BoolUnknown(), ShutdownTimeout: types.StringUnknown(), RebootOnChange: types.BoolUnknown(),
		WaitForIP: types.BoolUnknown()}
	p.nullUnknown()
	if !p.Status.IsNull() || !p.StartOnBoot.IsNull() || !p.Started.IsNull() || !p.ShutdownTimeout.IsNull() ||
		!p.RebootOnChange.IsNull() || !p.WaitForIP.IsNull() {
		t.Errorf("unknown values left: %+v", p)
	}
	p = vmPower{vmPowerState: vmPowerState{Status: types.StringValue(statusRunning), StartOnBoot: types.BoolValue(false)},
		Started: types.BoolValue(false), ShutdownTimeout: types.StringValue("1m"), RebootOnChange: types.BoolValue(false),
		WaitForIP: types.BoolValue(false)}
	want := p
	p.nullUnknown()
	if p != want {
		t.Errorf("known values changed: %+v, want %+v", p, want)
	}
}

// TestVMPower_spec: onboot and the address wait are on unless known false; started =
// false makes the VM stopped, without the wait.
func TestVMPower_spec(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		p                     vmPower
		onBoot, wait, stopped bool
	}{
		{"null", vmPower{}, true, true, false},
		{"unknown", vmPower{vmPowerState: vmPowerState{StartOnBoot: types.BoolUnknown()}, WaitForIP: types.BoolUnknown(),
			Started: types.BoolUnknown()}, true, true, false},
		{"false", vmPower{vmPowerState: vmPowerState{StartOnBoot: types.BoolValue(false)}, WaitForIP: types.BoolValue(false),
			Started: types.BoolValue(true)}, false, false, false},
		{"not started", vmPower{vmPowerState: vmPowerState{StartOnBoot: types.BoolValue(true)}, WaitForIP: types.BoolValue(true),
			Started: types.BoolValue(false)}, true, false, true},
	} {
		var s proxmox.Spec
		tc.p.spec(intoSpec(&s))
		if s.OnBoot != tc.onBoot || s.WaitForIP != tc.wait || s.Stopped != tc.stopped {
			t.Errorf("%s: onboot %v, wait %v, stopped %v; want %v, %v, %v", tc.name, s.OnBoot, s.WaitForIP, s.Stopped,
				tc.onBoot, tc.wait, tc.stopped)
		}
	}
}

// TestVMPower_changes: a known onboot that differs is written; a prior status that needs
// a start starts the VM, unless started is false; started = false stops a VM that runs.
func TestVMPower_changes(t *testing.T) {
	status := func(s string, onBoot bool) vmPower {
		return vmPower{vmPowerState: vmPowerState{Status: types.StringValue(s), StartOnBoot: types.BoolValue(onBoot)},
			Started: types.BoolValue(true)}
	}
	running := status(statusRunning, true)
	for _, tc := range []struct {
		name        string
		prior, plan vmPower
		changed     bool
		onBoot      *bool
		start, stop bool
	}{
		{"no change", running, running, false, nil, false, false},
		{"onboot off", running, status(statusRunning, false), true, new(false), false, false},
		{"onboot unknown", running, vmPower{vmPowerState: vmPowerState{StartOnBoot: types.BoolUnknown()}}, false, nil, false, false},
		{"found stopped", status(statusStopped, true), running, true, nil, true, false},
		{"stop", running, vmPower{vmPowerState: running.vmPowerState, Started: types.BoolValue(false)}, true, nil, false, true},
		{"kept stopped", status(statusStopped, true), vmPower{vmPowerState: running.vmPowerState, Started: types.BoolValue(false)},
			true, nil, false, false},
		{"stop, status null", vmPower{}, vmPower{Started: types.BoolValue(false)}, false, nil, false, false},
	} {
		var c proxmox.Changes
		changed := facetChanges(&tc.plan, proxyVMModel{vmPower: tc.prior}, &c)
		if changed != tc.changed || c.Start != tc.start || c.Stop != tc.stop || (c.OnBoot == nil) != (tc.onBoot == nil) ||
			(c.OnBoot != nil && *c.OnBoot != *tc.onBoot) {
			t.Errorf("%s: changed %v, start %v, stop %v, onboot %v; want %v, %v, %v, %v", tc.name, changed, c.Start, c.Stop,
				c.OnBoot, tc.changed, tc.start, tc.stop, tc.onBoot)
		}
	}
}

// TestPlanStatus: a VM found stopped and started without the address wait has an unknown
// status (running or provisioning); with the wait it keeps statusBackToRunning's; a VM kept
// stopped is planned stopped, without addresses; a create is left alone.
func TestPlanStatus(t *testing.T) {
	plan := func(wait, started bool) proxyVMModel {
		m := priorState()
		m.Status = types.StringValue(statusRunning) // statusBackToRunning's
		m.WaitForIP, m.Started = types.BoolValue(wait), types.BoolValue(started)
		return m
	}
	stopped := priorState()
	stopped.Status = types.StringValue(statusStopped)

	p := plan(false, true)
	planStatus(&p, &stopped)
	if !p.Status.IsUnknown() {
		t.Errorf("started without the wait: status %v, want unknown", p.Status)
	}
	p = plan(true, true)
	planStatus(&p, &stopped)
	if p.Status.ValueString() != statusRunning {
		t.Errorf("started with the wait: status %v, want running", p.Status)
	}
	running := priorState()
	p = plan(true, false)
	planStatus(&p, &running)
	if p.Status.ValueString() != statusStopped || !p.IPAddress.IsNull() || !p.IPv4Addresses.IsNull() ||
		!p.IPv6Addresses.IsNull() || !p.NetworkInterface.IsNull() {
		t.Errorf("started = false: status %v, addresses %v %v %v %v; want stopped and null", p.Status, p.IPAddress,
			p.IPv4Addresses, p.IPv6Addresses, p.NetworkInterface)
	}
	p = plan(false, false)
	planStatus(&p, nil)
	if p.Status.ValueString() != statusRunning || p.IPAddress.ValueString() != "192.0.2.10" {
		t.Errorf("create: status %v, ip %v, want them left alone", p.Status, p.IPAddress)
	}
}

// TestPowerAttrs_dataSourcesShowTheReadPart: the proxy_vm data source shows status and
// start_on_boot with the resource's wording, and none of the settings that cannot be read;
// proxy_vms shows none of the facet's attributes but its own listing status.
func TestPowerAttrs_dataSourcesShowTheReadPart(t *testing.T) {
	ctx := context.Background()
	res := resourceAttributes(powerAttrs())
	for _, a := range powerStateAttrs() {
		if r := res[a.name].GetMarkdownDescription(); len(r) < len(a.md) || r[:len(a.md)] != a.md {
			t.Errorf("%s: resource %q must start with %q", a.name, r, a.md)
		}
	}
	var vm, vms datasource.SchemaResponse
	(&vmDataSource{}).Schema(ctx, datasource.SchemaRequest{}, &vm)
	(&vmsDataSource{}).Schema(ctx, datasource.SchemaRequest{}, &vms)
	list := vms.Schema.Attributes["vms"].(dschema.ListNestedAttribute).NestedObject.Attributes
	for _, a := range powerAttrs() {
		_, inVM := vm.Schema.Attributes[a.name]
		_, inList := list[a.name]
		wantVM := a.name == "status" || a.name == "start_on_boot"
		if inVM != wantVM || inList != (a.name == "status") {
			t.Errorf("%s: in proxy_vm %v, in proxy_vms %v", a.name, inVM, inList)
		}
	}
	if d := vm.Schema.Attributes["status"].GetMarkdownDescription(); d[:len(powerStateAttrs()[0].md)] != powerStateAttrs()[0].md {
		t.Errorf("proxy_vm status %q: not the facet's wording", d)
	}
	if d := list["status"].GetMarkdownDescription(); d[:len(powerStateAttrs()[0].md)] == powerStateAttrs()[0].md {
		t.Errorf("proxy_vms status %q: the listing's status is not the facet's", d)
	}
}
