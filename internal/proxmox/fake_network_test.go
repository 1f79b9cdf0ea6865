package proxmox

import (
	"context"
	"slices"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// fakeBridges are the bridges NodeNetwork lists on every node of the fake.
var fakeBridges = []string{"vmbr0", "vmbr1"}

func (f *fakeAPI) NodeNetwork(ctx context.Context, node, ifaceType string) ([]pveapi.NodeInterface, error) {
	if err := f.enter(ctx, fakeCall{Method: "NodeNetwork", Node: node}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.nodes, node) {
		return nil, fixtureErr("err_node_unknown")
	}
	out := make([]pveapi.NodeInterface, 0, len(fakeBridges))
	for _, b := range fakeBridges {
		out = append(out, pveapi.NodeInterface{Iface: b, Type: "bridge", Active: true, Autostart: true})
	}
	return out, nil
}
