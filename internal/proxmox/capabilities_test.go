package proxmox

import (
	"slices"
	"sync"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestCheckCPUType_knownUnknownHidden: a model the node lists is Known; one it does not is
// not, with the node's models (its architecture's, then the abstract profiles, then the
// custom ones) to name; a custom- model it does not list is Hidden (the list shows a token
// only the custom models it may see). The list is read once per node per backend, however
// many resources ask at once.
func TestCheckCPUType_knownUnknownHidden(t *testing.T) {
	h := newHarness(t, "pv1-1", "pv1-2")
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if v, err := h.b.CheckCPUType(h.ctx, "pv1-1", "host"); err != nil || !v.Known || v.Hidden {
				t.Errorf("host: %+v, %v", v, err)
			}
		})
	}
	wg.Wait()
	for _, tc := range []struct {
		cpu           string
		known, hidden bool
	}{
		{"x86-64-v2-AES", true, false}, {"custom-edge", true, false}, {"Skylake-Server-v4", true, false},
		{"x86-64-v5", false, false}, {"skylake-server-v4", false, false}, {"custom-nope", false, true},
	} {
		v, err := h.b.CheckCPUType(h.ctx, "pv1-1", tc.cpu)
		if err != nil || v.Known != tc.known || v.Hidden != tc.hidden {
			t.Errorf("%s: %+v, %v; want known %v hidden %v", tc.cpu, v, err, tc.known, tc.hidden)
		}
		if want := []string{"EPYC-Milan", "host", "kvm64", "Opteron_G5", "Skylake-Server-v4", "x86-64-v2-AES", "x86-64-v3", "custom-edge"}; !slices.Equal(v.Models, want) {
			t.Errorf("models %v, want %v", v.Models, want)
		}
	}
	if n := h.f.calls("CPUModels"); n != 1 {
		t.Errorf("%d reads of pv1-1's CPU models, want 1", n)
	}
	if _, err := h.b.CheckCPUType(h.ctx, "pv1-2", "host"); err != nil || h.f.calls("CPUModels") != 2 {
		t.Errorf("pv1-2: %v, %d reads", err, h.f.calls("CPUModels"))
	}
}

// TestCheckCPUType_readFailureIsReturnedOnce: a list that cannot be read is an error (the
// plan warns and goes on), kept for the instance: no second request.
func TestCheckCPUType_readFailureIsReturnedOnce(t *testing.T) {
	h := newHarness(t, "pv1-1")
	h.f.failNext("CPUModels", fixtureErr("err_596"))
	for range 3 {
		_, err := h.b.CheckCPUType(h.ctx, "pv1-1", "host")
		assertClass(t, err, pveapi.Transient)
		assertContains(t, err.Error(), "reading the CPU models of node pv1-1")
	}
	if n := h.f.calls("CPUModels"); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}
}
