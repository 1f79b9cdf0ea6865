package pvesim_test

import (
	"net/http"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The request log is off until enabled; then it records each API request with its
// status and the VMID of its path, in order, with the answer after the receipt.
func TestRequestLog(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	sim := tg.simOnly("the request log is the simulator's")
	if _, err := tg.api.Version(tg.ctx()); err != nil {
		t.Fatal(err)
	}
	if got := sim.RequestLog(); len(got) != 0 {
		t.Fatalf("recorded %d requests before EnableRequestLog", len(got))
	}
	sim.EnableRequestLog()
	if _, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.template); err != nil {
		t.Fatal(err)
	}
	_, _ = tg.api.VMConfig(tg.ctx(), tg.node, 4242) // does not exist
	got := sim.RequestLog()
	if len(got) != 2 {
		t.Fatalf("recorded %+v, want the two config reads", got)
	}
	if got[0].Method != http.MethodGet || got[0].VMID != tg.template || got[0].Status != http.StatusOK || got[0].Path != "/nodes/"+tg.node+"/qemu/9001/config" {
		t.Errorf("first entry %+v", got[0])
	}
	if got[1].VMID != 4242 || got[1].Status == http.StatusOK {
		t.Errorf("second entry %+v, want VMID 4242 refused", got[1])
	}
	for _, r := range got {
		if r.Answered.Before(r.Received) {
			t.Errorf("%s answered before it was received", r.Path)
		}
	}
}
