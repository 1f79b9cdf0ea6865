package proxmox

import (
	"context"
	"errors"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestBackend_cancelledContextReturnsPromptly blocks each operation on its first seam call
// until ctx ends, then cancels: the operation returns a Transient error wrapping
// context.Canceled (Create and Delete have their own mid-operation tables).
func TestBackend_cancelledContextReturnsPromptly(t *testing.T) {
	ops := map[string]func(h *harness, ctx context.Context) error{
		"Create": func(h *harness, ctx context.Context) error { _, err := h.b.Create(ctx, h.spec(), nil); return err },
		"Get": func(h *harness, ctx context.Context) error {
			_, err := h.b.Get(ctx, testID, GetOptions{AnyOwner: true})
			return err
		},
		"Update": func(h *harness, ctx context.Context) error {
			return h.b.Update(ctx, testID, Changes{UID: testUID, Cores: ptr(4)})
		},
		// No node in the state: the listing decides (on the state's node the config does).
		"Delete": func(h *harness, ctx context.Context) error { return h.b.DeleteOwned(ctx, testID, "", testUID) },
		"FindByName": func(h *harness, ctx context.Context) error {
			_, err := h.b.FindByName(ctx, testName)
			return err
		},
		"FindByVMID": func(h *harness, ctx context.Context) error {
			_, err := h.b.FindByVMID(ctx, testVMID0)
			return err
		},
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			h.f.onCall("ClusterResources", func(ctx context.Context, _ fakeCall) error { <-ctx.Done(); return ctx.Err() })
			ctx, cancel := context.WithCancel(h.ctx)
			go func() {
				waitFor(t, func() bool { return h.f.calls("ClusterResources") > 0 })
				cancel()
			}()
			err := op(h, ctx)
			assertClass(t, err, pveapi.Transient)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err %v does not wrap context.Canceled", err)
			}
		})
	}
}

// BenchmarkGet_sharedListing reports the seam requests a plan's Read of a running VM
// costs when N reads share the listing (the target: at most 3 for the first, 2 after).
func BenchmarkGet_sharedListing(b *testing.B) {
	h := newHarness(b)
	h.ourRunningVM(testVMID0, testName)
	b.ResetTimer()
	for b.Loop() {
		if _, err := h.b.Get(h.ctx, testID, GetOptions{AnyOwner: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(h.f.calls(""))/float64(b.N), "requests/op")
}
