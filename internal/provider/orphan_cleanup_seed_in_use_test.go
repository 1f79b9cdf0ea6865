package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestOrphanCleanup_keepsASeedAVMStillHas runs the cleanup (the proxy_orphan_cleanup
// action's CleanOrphans) against the simulator, where a VM of another name holds a seed
// named like ours whose VM is gone (decision: seed-in-use): the seed is kept however the VM
// holds it, and an orphan beside it is still deleted.
//   - pending: the VM runs and its ide2 was deleted through the API; Proxmox keeps an ide
//     drive until the restart (a pending delete), so GET .../config no longer shows it
//     while the VM still has the ISO attached.
//   - snapshot: only a snapshot section names it (the VM's config has a parent); a
//     rollback makes it the VM's again.
//   - cdrom: the ISO was attached with cdrom=, the alias Proxmox stores as ide2.
func TestOrphanCleanup_keepsASeedAVMStillHas(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attach func(t *testing.T, e *directEnv, api *pveapi.Client, vmid int, vol string)
		drive  string
	}{
		{name: "pending", drive: "ide2 until it restarts (its removal is pending)", attach: func(t *testing.T, e *directEnv, api *pveapi.Client, vmid int, vol string) {
			if err := api.SetVMConfig(e.ctx, e.sim.Nodes[0], vmid, map[string]string{"ide2": vol + ",media=cdrom"}); err != nil {
				t.Fatal(err)
			}
			if err := e.sim.SetVMState(vmid, pvesim.VMPatch{Power: "running"}); err != nil {
				t.Fatal(err)
			}
			if err := api.SetVMConfig(e.ctx, e.sim.Nodes[0], vmid, map[string]string{"delete": "ide2"}); err != nil {
				t.Fatal(err)
			}
			if cfg, err := api.VMConfig(e.ctx, e.sim.Nodes[0], vmid); err != nil || cfg["ide2"] != "" {
				t.Fatalf("GET config shows ide2 %q (err %v): the removal should be pending", cfg["ide2"], err)
			}
		}},
		{name: "snapshot", drive: "ide2 in its snapshot before-upgrade", attach: func(t *testing.T, e *directEnv, _ *pveapi.Client, vmid int, vol string) {
			if err := e.sim.SetVMState(vmid, pvesim.VMPatch{
				Config:    map[string]string{"parent": "before-upgrade"},
				Snapshots: map[string]map[string]string{"before-upgrade": {"name": "rescue", "ide2": vol + ",media=cdrom", "snaptime": "1790150000"}},
			}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "cdrom", drive: "ide2", attach: func(t *testing.T, e *directEnv, api *pveapi.Client, vmid int, vol string) {
			if err := api.SetVMConfig(e.ctx, e.sim.Nodes[0], vmid, map[string]string{"cdrom": vol}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newDirectEnv(t, pvesim.Options{})
			api, err := pveapi.New(pveapi.Options{Endpoint: e.sim.Endpoint, Token: e.sim.APIToken, CAPEM: e.sim.CAPEM, RequestTimeout: harnessRequestTimeout})
			if err != nil {
				t.Fatal(err)
			}
			node := e.sim.Nodes[0]
			const (
				held   = "proxy-renamed-5f0e8d2a-1b3c-4d5e-8f90-a1b2c3d4e5f6-seed.iso"
				orphan = "proxy-gone-6a1f0c9d-2e4b-4a8c-9f5d-1e0b9a8c7d6e-seed.iso"
				rescue = 150200
			)
			for _, f := range []string{held, orphan} {
				if err := e.sim.AddISO(node, e.sim.ISOStorage, f, []byte("seed")); err != nil {
					t.Fatal(err)
				}
				if err := e.sim.SetVolumeCTime(node, e.sim.ISOStorage+":iso/"+f, time.Now().Add(-2*time.Hour)); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.sim.AddVM(pvesim.VMSpec{VMID: rescue, Node: node, Name: "rescue"}); err != nil {
				t.Fatal(err)
			}
			tc.attach(t, e, api, rescue, e.sim.ISOStorage+":iso/"+held)
			ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
			defer cancel()
			var events []string
			if _, err := e.b.CleanOrphans(ctx, proxmox.CleanOptions{Grace: time.Hour, Seeds: true}, func(ev proxmox.CleanEvent) { events = append(events, ev.String()) }); err != nil {
				t.Fatal(err)
			}
			if _, ok := e.sim.ISO(node, e.sim.ISOStorage+":iso/"+held); !ok {
				t.Errorf("the seed VM %d still has was deleted:\n%s", rescue, strings.Join(events, "\n"))
			}
			if _, ok := e.sim.ISO(node, e.sim.ISOStorage+":iso/"+orphan); ok {
				t.Errorf("the orphan was kept:\n%s", strings.Join(events, "\n"))
			}
			if want := "attached to VM 150200 (rescue) as " + tc.drive; !strings.Contains(strings.Join(events, "\n"), want) {
				t.Errorf("events do not say %q:\n%s", want, strings.Join(events, "\n"))
			}
		})
	}
}
