package provider

import (
	"bytes"
	"strings"
	"testing"
)

// HA recovery of a VM in the multi-node tests (pvesim MoveVM: the config moves, no volume is
// copied).

// haMoveWithSeed is an HA recovery in a cluster that keeps every node's copy of the VM's
// seed ISO (a per-node ISO storage made available everywhere, which HA recovery needs: the
// recovery node's start activates every drive volume): the seed is copied to node, then the
// config moves and the VM keeps running there.
func haMoveWithSeed(t *testing.T, env *testEnv, c *cluster, vmid int, node string) {
	t.Helper()
	vm, _ := env.Sim.VM(vmid)
	volid, _, _ := strings.Cut(vm.Config["ide2"], ",")
	storage, file, ok := strings.Cut(volid, ":iso/")
	data, has := env.Sim.ISO(vm.Node, volid)
	if !ok || !has {
		t.Fatalf("VM %d: no seed ISO %q on node %s", vmid, volid, vm.Node)
	}
	ctx, cancel := c.ctx()
	defer cancel()
	upid, err := c.api.UploadISO(ctx, node, storage, file, bytes.NewReader(data), int64(len(data)))
	if err == nil {
		err = c.wait(node, upid)
	}
	if err == nil {
		err = env.Sim.MoveVM(vmid, node)
	}
	if err != nil {
		t.Fatal(err)
	}
	if vm, _ := env.Sim.VM(vmid); vm.Node != node || vm.Power != "running" {
		t.Fatalf("after the HA recovery with the seed on %s: %+v, want running there", node, vm)
	}
}
