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

// TestSettle_sharesTheListing: the wait after an update's restart polls status/current and
// the agent, but lists the cluster once (Update invalidated the shared listing, so that
// one is fresh), not once per poll: at 100 VMs that was 801 listings per update.
func TestSettle_sharesTheListing(t *testing.T) {
	sim := pvesim.NewForTest(t, pvesim.Options{
		TemplateAgent: true,
		// About 0.6 s of wall time from the start to the agent answering: several polls.
		Durations: pvesim.Durations{AgentBoot: 600 * time.Second},
	})
	client, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM})
	if err != nil {
		t.Fatal(err)
	}
	b := proxmox.New(client, proxmox.Config{Nodes: sim.Nodes, ISOStorage: sim.ISOStorage})
	r := &proxyVMResource{data: &providerData{backend: b}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	vm, err := b.Create(ctx, proxmox.Spec{
		Name: "settle-1", UID: "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10", Node: sim.Nodes[0],
		TemplateVMID: sim.Templates["debian-13"], Cores: 1, MemoryMiB: 512, CreatedAt: time.Now(),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A memory change on a running VM restarts it: the agent answers again only after a boot.
	if err := b.Update(ctx, vm.ID, proxmox.Changes{MemoryMiB: ptrInt(1024)}); err != nil {
		t.Fatal(err)
	}
	sim.ResetStats()
	start := time.Now()
	got, err := r.settle(ctx, vm.ID, true)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if got.IP == "" || got.State != proxmox.StateRunning {
		t.Fatalf("settled at state %q, IP %q", got.State, got.IP)
	}
	st := sim.Stats()
	agent := 0
	for k, n := range st {
		if strings.Contains(k, "/agent/") {
			agent += n
		}
	}
	if agent < 3 {
		t.Fatalf("%d agent polls: the wait was too short to tell (%v)", agent, st)
	}
	// One listing per ListingTTL (2 s) at most; a slow machine may cross one boundary.
	want := 1 + int(elapsed/proxmox.DefaultBudgets().ListingTTL)
	if n := st["GET /cluster/resources"]; n > want || n >= agent {
		t.Errorf("%d listings over %d polls in %s, want %d (the shared listing): %v", n, agent, elapsed, want, st)
	}
}

func ptrInt(v int) *int { return &v }
