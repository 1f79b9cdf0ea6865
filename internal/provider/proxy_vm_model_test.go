package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestUIDFor_version5(t *testing.T) {
	// Reference values from Python's uuid.uuid5 with the same namespace. The empty
	// uid_namespace gives exactly the values of the releases before uid_namespace existed.
	for name, want := range map[string]string{
		"proxy-a": "e6087077-8a3e-5978-be39-54b7d191f1b9",
		"proxy-0": "09299cb8-c9bf-5662-9cfc-f34cf86ad905",
		"x":       "56fd3c4d-c93f-5bbb-b3f9-ae1c9ae76cdd",
	} {
		if got := uidFor("", name); got != want {
			t.Errorf("uidFor(\"\", %q) = %s, want %s", name, got, want)
		}
	}
	// Deterministic: the same name gives the same UID again after other calls (the plan and
	// the apply's plan must agree), and every UID is a version 5, RFC 9562 variant UUID.
	first := uidFor("", "proxy-a")
	_, _ = uidFor("", "proxy-b"), uidFor("ns", "proxy-a")
	if again := uidFor("", "proxy-a"); again != first {
		t.Errorf("uidFor(\"\", \"proxy-a\") gave %s, then %s", first, again)
	}
	for _, u := range []string{first, uidFor("ns", "proxy-a"), uidFor("", "")} {
		if len(u) != 36 || u[14] != '5' || !strings.ContainsRune("89ab", rune(u[19])) {
			t.Errorf("%s is not a version 5 RFC 9562 UUID", u)
		}
	}
}

func TestUIDFor_namespace(t *testing.T) {
	// Python: uuid.uuid5(uuid.uuid5(NS, namespace), name), NS = 97f2a18c-280b-47d9-b6b4-54c4ae21a231.
	for _, c := range []struct{ ns, name, want string }{
		{"a", "proxy-a", "13c5bd05-3c82-59dd-8756-e82b3441b14f"},
		{"a", "proxy-shared", "a12d1f30-00aa-5110-910c-3f2e644d8855"},
		{"b", "proxy-a", "f3539b28-5b0b-56e2-9454-d12788a5156a"},
		{"b", "proxy-shared", "dd91580a-0c06-5cb2-b4d3-94ad6a4757e5"},
		{"team-x.prod_1", "proxy-a", "e6987faf-1b26-558d-bad8-20d373479c4c"},
		{"", "proxy-shared", "ad5080c0-0356-5d11-bb1d-f38f60d4e8cc"},
	} {
		if got := uidFor(c.ns, c.name); got != c.want {
			t.Errorf("uidFor(%q, %q) = %s, want %s", c.ns, c.name, got, c.want)
		}
	}
	// Every namespace gives other UIDs, hence (almost always) other VMIDs.
	seen := map[string]string{}
	for _, ns := range []string{"", "a", "b", "A", "a.", "proxy-a"} {
		u := uidFor(ns, "proxy-a")
		if other, dup := seen[u]; dup {
			t.Errorf("namespaces %q and %q give the same uid %s", ns, other, u)
		}
		seen[u] = ns
	}
}

func TestParseImportID_forms(t *testing.T) {
	ok := map[string]importRef{
		"vms/105967/proxy-a": {VMID: 105967, Name: "proxy-a"},
		"105967":             {VMID: 105967},
		"100":                {VMID: 100},
		"999999999":          {VMID: 999999999},
		"proxy-a":            {Name: "proxy-a"},
		"a":                  {Name: "a"},
		"1a":                 {Name: "1a"},
	}
	for in, want := range ok {
		got, err := parseImportID(in)
		if err != nil || got != want {
			t.Errorf("parseImportID(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{
		"", "vms/105967", "vms/0105967/proxy-a", "vms/99/proxy-a", "vms/105967/", "vm/105967/proxy-a",
		"vms/105967/proxy-a/x", "0105967", "99", "1000000000", "Proxy-A", "proxy_a", "-proxy", "proxy-",
		" 105967", "105967 ", strings.Repeat("a", 64),
	} {
		_, err := parseImportID(in)
		if err == nil {
			t.Errorf("parseImportID(%q) accepted", in)
			continue
		}
		for _, form := range []string{"vms/<vmid>/<name>", "<vmid>", "<name>"} {
			if !strings.Contains(err.Error(), form) {
				t.Errorf("parseImportID(%q) error %q does not list the form %s", in, err, form)
			}
		}
	}
}

func testCfg() *resolvedConfig {
	return &resolvedConfig{
		Nodes:     []string{"pve1"},
		Templates: map[string]int{"debian-13": 9001},
		MachineTypes: map[string]machineType{
			"small": {Cores: 1, MemoryMiB: 512},
			"large": {Cores: 4, MemoryMiB: 4096, DiskGiB: 20},
		},
		VMIDMin: 100000, VMIDMax: 199999,
	}
}

func vmFixture() proxmox.VM {
	return proxmox.VM{
		ID: proxmox.ID{VMID: 105967, Name: "proxy-a"}, Node: "pve1", UID: "u-1",
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), State: proxmox.StateRunning,
		IP: "192.0.2.10", MAC: "BC:24:11:EE:48:83", Cores: 1, MemoryMiB: 512, DiskGiB: 3,
		Bridge: "vmbr0", OnBoot: true, AgentEnabled: true,
	}
}

func TestApplyVM_readsEverything(t *testing.T) {
	var m proxyVMModel
	applyVM(&m, vmFixture())
	checks := map[string][2]string{
		"id":         {m.ID.ValueString(), "vms/105967/proxy-a"},
		"name":       {m.Name.ValueString(), "proxy-a"},
		"node":       {m.Node.ValueString(), "pve1"},
		"uid":        {m.UID.ValueString(), "u-1"},
		"created_at": {m.CreatedAt.ValueString(), "2026-01-02T03:04:05Z"},
		"status":     {m.Status.ValueString(), "running"},
		"ip":         {m.IPAddress.ValueString(), "192.0.2.10"},
		"mac":        {m.MACAddress.ValueString(), "BC:24:11:EE:48:83"},
		"bridge":     {m.Bridge.ValueString(), "vmbr0"},
	}
	for k, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s = %q, want %q", k, v[0], v[1])
		}
	}
	if m.VMID.ValueInt64() != 105967 || m.Cores.ValueInt64() != 1 || m.MemoryMiB.ValueInt64() != 512 || m.DiskGiB.ValueInt64() != 3 {
		t.Errorf("numbers: %v %v %v %v", m.VMID, m.Cores, m.MemoryMiB, m.DiskGiB)
	}
	if !m.VLANTag.IsNull() {
		t.Errorf("vlan_tag = %v, want null for an untagged NIC", m.VLANTag)
	}
	if !m.StartOnBoot.ValueBool() || !m.AgentEnabled.ValueBool() {
		t.Error("start_on_boot/agent_enabled not read")
	}
}

func TestApplyVM_address(t *testing.T) {
	prior := types.StringValue("192.0.2.10")
	cases := []struct {
		name   string
		state  proxmox.State
		ip     string
		prior  types.String
		want   types.String
		status string
	}{
		{"reported", proxmox.StateRunning, "192.0.2.11", prior, types.StringValue("192.0.2.11"), "running"},
		{"running, agent not asked: kept", proxmox.StateRunning, "", prior, prior, "running"},
		{"provisioning: kept", proxmox.StateProvisioning, "", prior, prior, "provisioning"},
		{"stopped: cleared", proxmox.StateStopped, "", prior, types.StringNull(), "stopped"},
		{"unknown plan, none reported: null", proxmox.StateRunning, "", types.StringUnknown(), types.StringNull(), "running"},
	}
	for _, c := range cases {
		m := proxyVMModel{vmAddresses: vmAddresses{IPAddress: c.prior}}
		vm := vmFixture()
		vm.State, vm.IP = c.state, c.ip
		applyVM(&m, vm)
		if !m.IPAddress.Equal(c.want) || m.Status.ValueString() != c.status {
			t.Errorf("%s: ip %v status %v, want %v %s", c.name, m.IPAddress, m.Status, c.want, c.status)
		}
	}
}

func TestApplyVM_statusUnknownKeepsPrior(t *testing.T) {
	m := proxyVMModel{vmPower: vmPower{vmPowerState: vmPowerState{Status: types.StringValue("running")}}, vmAddresses: vmAddresses{IPAddress: types.StringValue("192.0.2.10")}}
	vm := vmFixture()
	vm.State, vm.IP, vm.StatusUnknown = proxmox.StateProvisioning, "", true
	applyVM(&m, vm)
	if m.Status.ValueString() != "running" || m.IPAddress.ValueString() != "192.0.2.10" {
		t.Errorf("status %v ip %v, want the prior running/192.0.2.10", m.Status, m.IPAddress)
	}
}

func TestStatusOf(t *testing.T) {
	for in, want := range map[proxmox.State]string{
		proxmox.StateRunning: "running", proxmox.StateProvisioning: "provisioning",
		proxmox.StateStopped: "stopped", "paused-ish": "stopped",
	} {
		if got := statusOf(in).ValueString(); got != want {
			t.Errorf("statusOf(%q) = %q, want %q", in, got, want)
		}
	}
	if !statusOf("").IsNull() {
		t.Error("empty state should be null")
	}
}

// TestPartialState_savesIntoNullState proves onAllocated's write works on the null state
// Create starts from and leaves no unknown value (Terraform rejects unknowns after apply).
func TestPartialState_savesIntoNullState(t *testing.T) {
	ctx := context.Background()
	sch := proxyVMSchema(ctx)
	st := tfsdk.State{Schema: sch, Raw: tftypes.NewValue(sch.Type().TerraformType(ctx), nil)}
	plan := proxyVMModel{
		vmIdentityFacet: vmIdentityFacet{Name: types.StringValue("proxy-a"), ID: types.StringUnknown(), VMID: types.Int64Unknown(),
			UID: types.StringValue("u-1"), CreatedAt: types.StringUnknown()},
		vmPlacement: vmPlacement{vmLocation: vmLocation{Node: types.StringValue("pve1")}},
		vmTemplate:  vmTemplate{Image: types.StringValue("debian-13"), TemplateVMID: types.Int64Value(9001), MachineType: types.StringValue("small")}, vmSize: vmSize{Cores: types.Int64Value(1), MemoryMiB: types.Int64Value(512), DiskGiB: types.Int64Unknown()},
		vmCloudInit: vmCloudInit{CloudInit: types.StringValue("#cloud-config\n")},
		vmNetwork:   vmNetwork{vmNetworkReadable: vmNetworkReadable{Bridge: types.StringUnknown(), VLANTag: types.Int64Unknown()}},
		vmPower:     vmPower{vmPowerState: vmPowerState{Status: types.StringUnknown(), StartOnBoot: types.BoolValue(true)}, WaitForIP: types.BoolValue(true)},
		vmAddresses: vmAddresses{IPAddress: types.StringUnknown(), MACAddress: types.StringUnknown(), AgentEnabled: types.BoolUnknown()},
	}
	var nullTimeouts proxyVMModel
	if d := st.GetAttribute(ctx, path.Root("timeouts"), &nullTimeouts.Timeouts); d.HasError() {
		t.Fatal(d)
	}
	plan.Timeouts = nullTimeouts.Timeouts
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	partial := partialState(plan, proxmox.ID{VMID: 105967, Name: "proxy-a"}, "pve1", "u-1", created)
	if d := st.Set(ctx, &partial); d.HasError() {
		t.Fatal(d)
	}
	if !st.Raw.IsFullyKnown() {
		t.Fatal("partial state holds unknown values")
	}
	var back proxyVMModel
	if d := st.Get(ctx, &back); d.HasError() {
		t.Fatal(d)
	}
	if back.ID.ValueString() != "vms/105967/proxy-a" || back.VMID.ValueInt64() != 105967 || back.Node.ValueString() != "pve1" ||
		back.UID.ValueString() != "u-1" || back.CreatedAt.ValueString() != "2026-01-02T03:04:05Z" {
		t.Errorf("identity not saved: %+v", back)
	}
	if back.CloudInit.ValueString() != "#cloud-config\n" || back.Image.ValueString() != "debian-13" || !back.DiskGiB.IsNull() {
		t.Errorf("plan inputs not carried over: cloud_init %v image %v disk %v", back.CloudInit, back.Image, back.DiskGiB)
	}
}

func TestImportedModel_resolvesCatalogue(t *testing.T) {
	cfg := testCfg()
	vm := vmFixture()
	m, unread := importedModel(vm, cfg, 9001, proxyVMModel{}.Timeouts)
	if m.MachineType.ValueString() != "small" {
		t.Errorf("machine_type = %v, want small (the only entry with 1 core and 512 MiB)", m.MachineType)
	}
	if m.Image.ValueString() != "debian-13" || m.TemplateVMID.ValueInt64() != 9001 {
		t.Errorf("image/template = %v/%v, want the identified template and its key", m.Image, m.TemplateVMID)
	}
	if fmt.Sprint(unread) != "[cloud_init network]" {
		t.Errorf("unread = %v, want [cloud_init network]", unread)
	}
	if !m.CloudInit.IsNull() || !m.WaitForIP.ValueBool() || m.ID.ValueString() != "vms/105967/proxy-a" {
		t.Errorf("defaults: cloud_init %v wait_for_ip %v id %v", m.CloudInit, m.WaitForIP, m.ID)
	}

	// The template not identified: unread, even with a single-template catalogue (a guess
	// could be wrong, and a wrong value would replace the VM).
	m, unread = importedModel(vm, cfg, 0, proxyVMModel{}.Timeouts)
	if !m.Image.IsNull() || !m.TemplateVMID.IsNull() || fmt.Sprint(unread) != "[cloud_init network template]" {
		t.Errorf("template not identified: image %v template %v unread %v", m.Image, m.TemplateVMID, unread)
	}

	// Identified, but two keys name it: template_vmid set, image left for the configuration.
	cfg.Templates["alias"] = 9001
	m, unread = importedModel(vm, cfg, 9001, proxyVMModel{}.Timeouts)
	if !m.Image.IsNull() || m.TemplateVMID.ValueInt64() != 9001 || fmt.Sprint(unread) != "[cloud_init network]" {
		t.Errorf("two keys: image %v template %v unread %v", m.Image, m.TemplateVMID, unread)
	}
	// Identified outside the catalogue (a template_vmid VM): template_vmid only.
	m, _ = importedModel(vm, cfg, 9005, proxyVMModel{}.Timeouts)
	if !m.Image.IsNull() || m.TemplateVMID.ValueInt64() != 9005 {
		t.Errorf("template outside the catalogue: image %v template %v", m.Image, m.TemplateVMID)
	}

	// Two machine types match: none is chosen.
	cfg.MachineTypes["tiny"] = machineType{Cores: 1, MemoryMiB: 512}
	if m, _ = importedModel(vm, cfg, 0, proxyVMModel{}.Timeouts); !m.MachineType.IsNull() {
		t.Errorf("ambiguous machine types resolved to %v", m.MachineType)
	}
	// A machine type whose disk the VM does not reach does not match.
	vm.Cores, vm.MemoryMiB = 4, 4096
	if m, _ = importedModel(vm, cfg, 0, proxyVMModel{}.Timeouts); !m.MachineType.IsNull() {
		t.Errorf("large (20 GiB) matched a 3 GiB VM: %v", m.MachineType)
	}
	vm.DiskGiB = 20
	if m, _ = importedModel(vm, cfg, 0, proxyVMModel{}.Timeouts); m.MachineType.ValueString() != "large" {
		t.Errorf("machine_type = %v, want large", m.MachineType)
	}
}

func TestImageKeyOf(t *testing.T) {
	cfg := testCfg()
	cfg.Templates["debian-12"] = 9002
	for _, c := range []struct {
		vmid int
		want string
	}{{9002, "debian-12"}, {9001, "debian-13"}, {9003, ""}, {0, ""}} {
		if got := imageKeyOf(cfg, c.vmid); got != c.want {
			t.Errorf("imageKeyOf(%d) = %q, want %q", c.vmid, got, c.want)
		}
	}
	cfg.Templates["alias"] = 9002
	if got := imageKeyOf(cfg, 9002); got != "" {
		t.Errorf("two keys for 9002: %q, want none", got)
	}
	if got := imageKeyOf(nil, 9002); got != "" {
		t.Errorf("nil config: %q", got)
	}
}

func TestTemplateCandidates(t *testing.T) {
	cfg := testCfg()
	cfg.Templates["alias"] = 9001
	cfg.Templates["old"] = 120
	if got := fmt.Sprint(templateCandidates(cfg)); got != "[120 9001]" {
		t.Errorf("candidates = %s, want [120 9001] (distinct, sorted)", got)
	}
	if got := templateCandidates(nil); got != nil {
		t.Errorf("nil config: %v", got)
	}
}

func TestSpecFor(t *testing.T) {
	plan := proxyVMModel{
		vmIdentityFacet: vmIdentityFacet{Name: types.StringValue("proxy-a"), UID: types.StringValue("u")}, vmPlacement: vmPlacement{vmLocation: vmLocation{Node: types.StringValue("pve1")}},
		vmTemplate: vmTemplate{TemplateVMID: types.Int64Value(9001), MachineType: types.StringValue("large")}, vmSize: vmSize{Cores: types.Int64Value(4), MemoryMiB: types.Int64Value(4096), DiskGiB: types.Int64Unknown()},
		vmCloudInit: vmCloudInit{CloudInit: types.StringValue("UD")},
		vmNetwork:   vmNetwork{vmNetworkReadable: vmNetworkReadable{Bridge: types.StringUnknown(), VLANTag: types.Int64Value(4)}},
		vmPower:     vmPower{vmPowerState: vmPowerState{StartOnBoot: types.BoolValue(false)}, WaitForIP: types.BoolValue(false)},
	}
	now := time.Now()
	s := specFor(plan, testCfg(), now)
	if s.Name != "proxy-a" || s.UID != "u" || s.Node != "pve1" || s.TemplateVMID != 9001 || s.Cores != 4 ||
		s.MemoryMiB != 4096 || s.DiskGiB != 20 || string(s.UserData) != "UD" || s.Bridge != "" || s.VLANTag != 4 ||
		s.OnBoot || s.WaitForIP || !s.CreatedAt.Equal(now) {
		t.Errorf("spec = %+v", s)
	}
	plan.DiskGiB = types.Int64Value(30)
	if s := specFor(plan, testCfg(), now); s.DiskGiB != 30 {
		t.Errorf("explicit disk: %d, want 30", s.DiskGiB)
	}
}

func TestChangesFor(t *testing.T) {
	prior := proxyVMModel{
		vmSize: vmSize{Cores: types.Int64Value(1), MemoryMiB: types.Int64Value(512), DiskGiB: types.Int64Value(3)}, vmNetwork: vmNetwork{vmNetworkReadable: vmNetworkReadable{Bridge: types.StringValue("vmbr0"), VLANTag: types.Int64Null()}},
		vmPower: vmPower{vmPowerState: vmPowerState{Status: types.StringValue("running"), StartOnBoot: types.BoolValue(true)}},
	}
	if _, changed := changesFor(prior, prior, false); changed {
		t.Error("no change reported as a change")
	}
	plan := prior
	plan.Cores, plan.DiskGiB, plan.VLANTag, plan.StartOnBoot = types.Int64Value(2), types.Int64Value(8), types.Int64Value(4), types.BoolValue(false)
	c, changed := changesFor(prior, plan, false)
	if !changed || c.Cores == nil || *c.Cores != 2 || c.DiskGiB == nil || *c.DiskGiB != 8 || c.VLANTag == nil || *c.VLANTag != 4 ||
		c.OnBoot == nil || *c.OnBoot || c.MemoryMiB != nil || c.Bridge != nil || c.Start {
		t.Errorf("changes = %+v", c)
	}
	if !restarts(prior.Status, c) {
		t.Error("a cores change on a running VM must restart it")
	}
	stopped := prior
	stopped.Status = types.StringValue("stopped")
	c, changed = changesFor(stopped, prior, false)
	if !changed || !c.Start || restarts(stopped.Status, c) {
		t.Errorf("stopped VM: %+v changed=%v", c, changed)
	}
}

// TestSeedUserData: the user-data a start rebuilds a missing seed from is the configured
// cloud_init, else the state's, else empty; only an import's unread cloud_init is unknown.
func TestSeedUserData(t *testing.T) {
	set, null := types.StringValue("#cloud-config\n"), types.StringNull()
	for _, tc := range []struct {
		name        string
		plan, prior types.String
		unread      bool
		want        string
		known       bool
	}{
		{"configured", set, set, false, "#cloud-config\n", true},
		{"set after an import", set, null, true, "#cloud-config\n", true},
		{"made without cloud_init", null, null, false, "", true},
		{"imported, never set", null, null, true, "", false},
	} {
		var c proxmox.Changes
		vmCloudInit{CloudInit: tc.plan}.changes(&facetCtx{prior: &proxyVMModel{vmCloudInit: vmCloudInit{CloudInit: tc.prior}}, changes: &c, cloudInitUnread: tc.unread})
		got, known := c.UserData, c.UserDataKnown
		if string(got) != tc.want || known != tc.known || (known && got == nil) {
			t.Errorf("%s: %q, %t (nil %t); want %q, %t", tc.name, got, known, got == nil, tc.want, tc.known)
		}
	}
}

func TestMismatch(t *testing.T) {
	plan := proxyVMModel{vmSize: vmSize{DiskGiB: types.Int64Value(2), Cores: types.Int64Value(1)}, vmPower: vmPower{vmPowerState: vmPowerState{Status: types.StringUnknown()}}}
	got := proxyVMModel{vmSize: vmSize{DiskGiB: types.Int64Value(3), Cores: types.Int64Value(1)}, vmPower: vmPower{vmPowerState: vmPowerState{Status: types.StringValue("running")}}}
	msg := mismatch(plan, got)
	if !strings.Contains(msg, "disk_gib") || !strings.Contains(msg, "at least 3") {
		t.Errorf("mismatch = %q, want the disk advice", msg)
	}
	plan.DiskGiB = types.Int64Unknown()
	if msg := mismatch(plan, got); msg != "" {
		t.Errorf("unknown plan values must match anything: %q", msg)
	}
	plan.Status = types.StringValue("running")
	got.Status = types.StringValue("stopped")
	if msg := mismatch(plan, got); !strings.Contains(msg, "status") {
		t.Errorf("status mismatch not reported: %q", msg)
	}
}

// notOursErr is an error errors.Is takes for proxmox.ErrNotOurs, as the backend's refusals are.
type notOursErr struct{ error }

func (notOursErr) Is(target error) bool { return target == proxmox.ErrNotOurs }

func TestVMErrorDetail_classes(t *testing.T) {
	perm := &proxmox.Error{Class: pveapi.Permanent, Op: "create", Name: "proxy-a", VMID: 105967, Err: errors.New("template 9001 carries a cloud-init drive")}
	d := vmErrorDetail("create", "", 0, perm, "")
	for _, want := range []string{`"proxy-a"`, "105967", "cloud-init drive", "Retrying will not help"} {
		if !strings.Contains(d, want) {
			t.Errorf("permanent detail %q lacks %q", d, want)
		}
	}
	if strings.Count(d, "proxy-a") != 1 {
		t.Errorf("the VM is named more than once: %q", d)
	}
	tr := &proxmox.Error{Class: pveapi.Transient, Err: errors.New("task failed")}
	if d := vmErrorDetail("update", "proxy-a", 105967, tr, "NOTE"); !strings.Contains(d, "may succeed if retried") || !strings.HasSuffix(d, "NOTE") {
		t.Errorf("transient detail = %q", d)
	}
	if d := vmErrorDetail("create", "proxy-a", 0, fmt.Errorf("x: %w", context.DeadlineExceeded), ""); !strings.Contains(d, "timeouts.create") ||
		!strings.Contains(d, "no VMID allocated yet") {
		t.Errorf("deadline detail = %q", d)
	}
	if d := vmErrorDetail("import", "proxy-a", 0, context.DeadlineExceeded, ""); !strings.Contains(d, "timeouts.read") {
		t.Errorf("import deadline detail = %q", d)
	}
	gone := &proxmox.Error{Class: pveapi.NotFound, Err: errors.New("no VM at VMID 105967")}
	if d := vmErrorDetail("import", "proxy-a", 105967, gone, ""); !strings.Contains(d, "Nothing in the cluster answers to that ID") {
		t.Errorf("import of nothing: %q", d)
	}
	// A VM is there but its mark does not prove it ours: it exists, so not "nothing answers".
	notOurs := &proxmox.Error{Class: pveapi.NotFound, Err: notOursErr{errors.New("VMID 105967 (proxy-a) carries no mark")}}
	if d := vmErrorDetail("import", "proxy-a", 105967, notOurs, ""); strings.Contains(d, "Nothing in the cluster") ||
		!strings.Contains(d, "A VM answers to that ID, but it is not one this provider may import") || !strings.Contains(d, "run the import again") {
		t.Errorf("import of a VM not ours: %q", d)
	}
}

func TestValidateProxyVMConfig(t *testing.T) {
	m := proxyVMModel{vmTemplate: vmTemplate{MachineType: types.StringNull()}, vmSize: vmSize{Cores: types.Int64Value(1), MemoryMiB: types.Int64Null()}}
	d := validateProxyVMConfig(m)
	if !d.HasError() || len(d) != 1 || !hasPath(d, path.Root("memory_mib")) {
		t.Errorf("diags = %v, want one error on memory_mib", d)
	}
	m.MemoryMiB = types.Int64Value(512)
	if d := validateProxyVMConfig(m); d.HasError() {
		t.Errorf("cores+memory rejected: %v", d)
	}
	m = proxyVMModel{vmTemplate: vmTemplate{MachineType: types.StringUnknown()}, vmSize: vmSize{Cores: types.Int64Null(), MemoryMiB: types.Int64Null()}}
	if d := validateProxyVMConfig(m); d.HasError() {
		t.Errorf("unknown machine_type rejected: %v", d)
	}
}

func TestSchema_valid(t *testing.T) {
	ctx := context.Background()
	var resp resource.SchemaResponse
	NewProxyVMResource().Schema(ctx, resource.SchemaRequest{}, &resp)
	if d := resp.Schema.ValidateImplementation(ctx); d.HasError() {
		t.Fatal(d)
	}
	for name, a := range resp.Schema.Attributes {
		if a.GetDescription() == "" {
			t.Errorf("attribute %s has no description", name)
		}
	}
	if !resp.Schema.Attributes["cloud_init"].IsSensitive() {
		t.Error("cloud_init is not sensitive")
	}
}

func hasPath(d diag.Diagnostics, p path.Path) bool {
	for _, x := range d {
		if wp, ok := x.(diag.DiagnosticWithPath); ok && wp.Path().Equal(p) {
			return true
		}
	}
	return false
}
