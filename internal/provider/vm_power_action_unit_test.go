package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestVMPowerAction_schema: the power values, and the validators that refuse a malformed id
// and a shutdown_timeout above the action's bound at validate time, on their attribute.
func TestVMPowerAction_schema(t *testing.T) {
	var resp action.SchemaResponse
	NewVMPowerAction().Schema(context.Background(), action.SchemaRequest{}, &resp)
	for _, a := range []string{"id", "uid", "power"} {
		if !resp.Schema.Attributes[a].IsRequired() {
			t.Errorf("%s is not required", a)
		}
	}
	desc := resp.Schema.Attributes["power"].GetMarkdownDescription()
	for _, op := range []string{`"start"`, `"shutdown"`, `"reboot"`, `"stop"`} {
		if !strings.Contains(desc, op) {
			t.Errorf("power's description does not document %s", op)
		}
	}
	check := func(v validator.String, value string) bool {
		var r validator.StringResponse
		v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: types.StringValue(value)}, &r)
		return !r.Diagnostics.HasError()
	}
	for id, ok := range map[string]bool{"vms/104211/proxy-a": true, "104211": false, "vms/99/proxy-a": false, "vms/104211/": false} {
		if check(vmIDValidator(), id) != ok {
			t.Errorf("id %q accepted %v, want %v", id, !ok, ok)
		}
	}
	for d, ok := range map[string]bool{"10m": true, "30s": true, "11m": false} {
		if check(maxDuration(actionMaxShutdown), d) != ok {
			t.Errorf("shutdown_timeout %q accepted %v, want %v", d, !ok, ok)
		}
	}
}

// The action's refusal of a VM that is not the resource's says the VM exists and is left
// alone, never that it no longer exists.
func TestVMPowerAction_notOursDetail(t *testing.T) {
	sim := pvesim.NewForTest(t, pvesim.Options{Nodes: []string{"pve1"}, TemplateAgent: true})
	client, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	b := proxmox.New(client, proxmox.Config{Nodes: sim.Nodes, ISOStorage: sim.ISOStorage, Budgets: proxmox.DefaultBudgets()})
	mark := proxmox.FormatMark("7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35", time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC))
	if err := sim.AddVM(pvesim.VMSpec{VMID: 1200, Name: "px-a", Power: "running", Config: map[string]string{"description": mark}}); err != nil {
		t.Fatal(err)
	}
	id := proxmox.ID{VMID: 1200, Name: "px-a"}
	_, err = b.Power(context.Background(), id, proxmox.PowerOptions{Op: proxmox.PowerStop, UID: "3c2e8a41-5b6d-4f70-8a9b-0c1d2e3f4a5b"})
	if err == nil {
		t.Fatal("the action stopped another workspace's VM")
	}
	detail := vmErrorDetailFor(nil, "stop", id.Name, id.VMID, err, "")
	if strings.Contains(detail, "no longer exists") {
		t.Errorf("the refusal of an existing VM says it no longer exists: %s", detail)
	}
	for _, want := range []string{"another workspace's VM", "Nothing was sent to the VM", "retrying will not help"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail lacks %q: %s", want, detail)
		}
	}
	if v, _ := sim.VM(1200); v.Power != "running" {
		t.Errorf("the foreign VM is %s", v.Power)
	}
}
