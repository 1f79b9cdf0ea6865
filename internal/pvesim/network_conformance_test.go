package pvesim_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestNetwork_bridgesAsNetworkPmListsThem: GET /nodes/{node}/network?type=any_bridge lists
// the node's Linux and OVS bridges sorted by iface, without the loopback or other types;
// on the simulator the answer is node_network_bridges' exactly. A bridge the token may not
// use (neither SDN.Audit nor SDN.Use on /sdn/zones/localnetwork/<bridge>) is left out, as
// Network.pm's "always check bridge access" does.
func TestNetwork_bridgesAsNetworkPmListsThem(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	got, err := tg.api.NodeNetwork(tg.ctx(), tg.node, "any_bridge")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("no bridge listed")
	}
	for i, n := range got {
		if n.Type != "bridge" && n.Type != "OVSBridge" {
			t.Errorf("type=any_bridge listed %s of type %s", n.Iface, n.Type)
		}
		if i > 0 && got[i-1].Iface >= n.Iface {
			t.Errorf("not sorted by iface: %s before %s", got[i-1].Iface, n.Iface)
		}
	}
	all, err := tg.api.NodeNetwork(tg.ctx(), tg.node, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range all {
		if n.Iface == "lo" {
			t.Error("the loopback is listed")
		}
	}
	if len(all) <= len(got) && tg.sim != nil {
		t.Errorf("without a type filter %d interfaces, with any_bridge %d: the port is missing", len(all), len(got))
	}
	sim := tg.simOnly("compares with the fixture and denies SDN privileges")

	f := fixture.MustLoad("node_network_bridges")
	_, body := tg.raw("GET", "/nodes/"+tg.node+"/network?type=any_bridge", nil, nil)
	var gotBody, wantBody map[string]any
	if err := json.Unmarshal(body, &gotBody); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(f.BodyBytes(), &wantBody); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotBody, wantBody) {
		t.Errorf("body %s\nwant %s", body, f.BodyBytes())
	}

	sim.Deny("/sdn/zones/localnetwork/vmbr1", "SDN.Audit")
	if got, _ := tg.api.NodeNetwork(tg.ctx(), tg.node, "any_bridge"); len(got) != 2 {
		t.Errorf("SDN.Use alone still shows the bridge: got %+v", got)
	}
	sim.Deny("/sdn/zones/localnetwork/vmbr1", "SDN.Use")
	got, err = tg.api.NodeNetwork(tg.ctx(), tg.node, "any_bridge")
	if err != nil || len(got) != 1 || got[0].Iface != "vmbr0" {
		t.Errorf("vmbr1 denied: got %+v, %v", got, err)
	}
}
