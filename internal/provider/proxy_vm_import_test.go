package provider

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// importEnv is a simulator with one running proxy VM made from debian-13 by the backend,
// and the resource configured with the simulator's whole catalogue (two templates).
type importEnv struct {
	sim  *pvesim.Sim
	cfg  resolvedConfig
	res  *proxyVMResource
	name string
	vmid int
}

func newImportEnv(t *testing.T) *importEnv {
	t.Helper()
	sim := pvesim.NewForTest(t, pvesim.Options{})
	client, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM, RequestTimeout: harnessRequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	cfg := resolvedConfig{
		Endpoint: sim.Endpoint, Nodes: sim.Nodes, ISOStorage: sim.ISOStorage, Templates: maps.Clone(sim.Templates),
		VMIDMin: defaultVMIDMin, VMIDMax: defaultVMIDMax, InstallGuestAgent: true,
	}
	// A second template to tell the VM's from (it refuses creates, not imports).
	cfg.Templates["ubuntu-ci"] = pvesim.CloudInitTemplateVMID
	if len(cfg.Templates) < 2 {
		t.Fatalf("the simulator's catalogue %v has fewer than two templates: the test would prove nothing", cfg.Templates)
	}
	backend := proxmox.New(client, cfg.backendConfig(client.TokenID))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name := "proxy-imp"
	vm, err := backend.Create(ctx, proxmox.Spec{
		Name: name, UID: uidFor("", name), Node: sim.Nodes[0], TemplateVMID: sim.Templates["debian-13"],
		Cores: 1, MemoryMiB: 512, OnBoot: true, WaitForIP: true, CreatedAt: time.Now().UTC().Truncate(time.Second),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &importEnv{
		sim: sim, cfg: cfg, name: name, vmid: vm.ID.VMID,
		res: &proxyVMResource{data: &providerData{backend: backend, client: client, cfg: cfg}},
	}
}

// importCounting runs importVM with catalogue templates and returns the template it
// identified, the diagnostics and the requests it made.
func (e *importEnv) importCounting(t *testing.T, templates map[string]int, ref importRef) (int, diag.Diagnostics, map[string]int) {
	t.Helper()
	r := &proxyVMResource{data: &providerData{backend: e.res.data.backend, client: e.res.data.client, cfg: e.cfg}}
	r.data.cfg.Templates = templates
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.sim.ResetStats()
	vm, tmpl, diags := r.importVM(ctx, ref)
	st := e.sim.Stats()
	if !diags.HasError() && (vm.ID.VMID != e.vmid || vm.ID.Name != e.name || vm.IP == "") {
		t.Fatalf("imported %+v, want VMID %d %s with its address", vm.ID, e.vmid, e.name)
	}
	return tmpl, diags, st
}

// TestImportVM_identifiesTemplate: an import tells the VM's template apart from the other
// catalogue template, and that costs exactly one config read per catalogue template: the
// listing is the one the read just fetched. Import by each ID form.
func TestImportVM_identifiesTemplate(t *testing.T) {
	t.Parallel()
	e := newImportEnv(t)
	const config = "GET /nodes/{node}/qemu/{vmid}/config"
	for _, ref := range []importRef{{Name: e.name}, {VMID: e.vmid}, {VMID: e.vmid, Name: e.name}} {
		base, d, without := e.importCounting(t, map[string]int{}, ref)
		if d.HasError() || base != 0 {
			t.Fatalf("%+v without a catalogue: template %d, diags %v", ref, base, d)
		}
		tmpl, d, with := e.importCounting(t, e.cfg.Templates, ref)
		if len(d) != 0 || tmpl != e.cfg.Templates["debian-13"] {
			t.Fatalf("%+v: template %d, want %d (diags %v)", ref, tmpl, e.cfg.Templates["debian-13"], d)
		}
		extra := map[string]int{}
		for k := range with {
			if n := with[k] - without[k]; n != 0 {
				extra[k] = n
			}
		}
		for k := range without {
			if _, ok := with[k]; !ok {
				extra[k] = -without[k]
			}
		}
		want := len(templateCandidates(&e.cfg))
		if len(extra) != 1 || extra[config] != want {
			t.Errorf("%+v: identifying the template made %v more requests, want only %d config reads (without: %v, with: %v)",
				ref, extra, want, without, with)
		}
		t.Logf("import %+v: %d requests, of which %d to identify the template among %d", ref, simTotal(with), extra[config], want)
	}
}

// TestImportVM_templateLookupFailureWarns: a template whose config cannot be read (a token
// without VM.Audit on it) leaves the template unread with a warning; the import succeeds.
func TestImportVM_templateLookupFailureWarns(t *testing.T) {
	t.Parallel()
	e := newImportEnv(t)
	other := e.cfg.Templates["ubuntu-ci"]
	e.sim.InjectFault(pvesim.Fault{Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/config", VMID: other,
		Status: 403, Message: "Permission check failed (/vms/" + strconv.Itoa(other) + ", VM.Audit)"})
	tmpl, d, _ := e.importCounting(t, e.cfg.Templates, importRef{Name: e.name})
	if d.HasError() || d.WarningsCount() != 1 || tmpl != 0 {
		t.Fatalf("template %d, diags %v: want no template and one warning", tmpl, d)
	}
	w := d.Warnings()[0]
	for _, want := range []string{e.name, strconv.Itoa(e.vmid), "recorded without replacing"} {
		if !strings.Contains(w.Summary()+w.Detail(), want) {
			t.Errorf("warning %q: %q lacks %q", w.Summary(), w.Detail(), want)
		}
	}
	// Unknown and missing candidates are skipped, not errors.
	tmpl, d, _ = e.importCounting(t, map[string]int{"debian-13": e.cfg.Templates["debian-13"], "gone": 99998}, importRef{Name: e.name})
	if len(d) != 0 || tmpl != e.cfg.Templates["debian-13"] {
		t.Errorf("with a missing candidate: template %d, diags %v", tmpl, d)
	}
}

func simTotal(st map[string]int) int {
	n := 0
	for _, c := range st {
		n += c
	}
	return n
}

// TestImportVM_stillCreating: importing a VM whose mark still says creating is refused
// with the advice that fits: retrying helps once that create finishes, not "retrying will
// not help".
func TestImportVM_stillCreating(t *testing.T) {
	t.Parallel()
	e := newImportEnv(t)
	const vmid = 150997
	desc := proxmox.MarkLines{UID: "c0ffee00c0ffee00", CreatedAt: time.Now(), Namespace: "default", Creating: true}.Format()
	if err := e.sim.AddVM(pvesim.VMSpec{VMID: vmid, Name: "proxy-unfinished", Config: map[string]string{"description": desc}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ref := range []importRef{{Name: "proxy-unfinished"}, {VMID: vmid}} {
		_, _, diags := e.res.importVM(ctx, ref)
		if !diags.HasError() {
			t.Fatalf("%+v: imported a VM still being created", ref)
		}
		detail := diags.Errors()[0].Detail()
		if strings.Contains(detail, "Retrying will not help") || !strings.Contains(detail, "Retrying helps once that create finishes") {
			t.Errorf("%+v: detail %q, want the advice that retrying helps once the create finishes", ref, detail)
		}
	}
}
