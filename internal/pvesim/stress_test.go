package pvesim

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// waitOK polls a task until it stops; an exitstatus other than OK is an error.
func waitOK(ctx context.Context, c *pveapi.Client, upid string) error {
	u, err := pveapi.ParseUPID(upid)
	if err != nil {
		return err
	}
	for {
		st, err := c.TaskStatus(ctx, u.Node, upid)
		if err != nil {
			return err
		}
		if st.Status == "stopped" {
			if st.ExitStatus != "OK" {
				return fmt.Errorf("%s: %s", upid, st.ExitStatus)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// TestStress_hundredClientsCycleAndStayConsistent runs 100 clients, each with its own
// connection pool, through clone, start (queued behind the clone lock), stop and destroy,
// while 20 pairs race a clone onto the same VMID and a reader lists the cluster. Run with
// -race. Afterwards only the default guests remain and the state invariants hold.
func TestStress_hundredClientsCycleAndStayConsistent(t *testing.T) {
	s := NewForTest(t, Options{Nodes: []string{"pve1", "pve2"}, Durations: Durations{FreshUnknown: time.Nanosecond}})
	// A cross-node clone needs a template whose volumes are all on shared storage.
	if err := s.AddVM(VMSpec{VMID: 9100, Name: "shared-template", Template: true, Config: map[string]string{"scsi0": "ceph-vm:base-9100-disk-0,size=3G"}}); err != nil {
		t.Fatal(err)
	}
	before := s.State()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	newClient := func() *pveapi.Client {
		c, err := pveapi.New(pveapi.Options{Endpoint: s.Endpoint, Token: s.APIToken, CAPEM: s.CAPEM})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const clients, cycles, pairs = 100, 2, 20
	var wg sync.WaitGroup
	errs := make(chan error, clients+2*pairs)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newClient()
			vmid := 500000 + i
			node := []string{"pve1", "pve2"}[i%2]
			p := pveapi.CloneParams{NewID: vmid, Name: fmt.Sprintf("stress-%d", i), Target: node}
			tmpl := 9001
			if node != "pve1" {
				tmpl = 9100
			}
			for range cycles {
				err := func() error {
					clone, err := c.Clone(ctx, "pve1", tmpl, p)
					if err != nil {
						return err
					}
					start, err := c.Start(ctx, node, vmid)
					if err != nil {
						return fmt.Errorf("start under the clone lock: %w", err)
					}
					if err := waitOK(ctx, c, clone); err != nil {
						return err
					}
					if err := waitOK(ctx, c, start); err != nil {
						return err
					}
					if st, err := c.VMStatus(ctx, node, vmid); err != nil || st.Status != "running" {
						return fmt.Errorf("after start: %+v %w", st, err)
					}
					stop, err := c.Stop(ctx, node, vmid)
					if err != nil {
						return err
					}
					if err := waitOK(ctx, c, stop); err != nil {
						return err
					}
					destroy, err := c.Destroy(ctx, node, vmid)
					if err != nil {
						return err
					}
					return waitOK(ctx, c, destroy)
				}()
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
			}
		}()
	}
	var won, lost atomic.Int32
	for p := range pairs {
		// Both of a pair try their clone before the winner destroys the VM.
		var tried sync.WaitGroup
		tried.Add(2)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := newClient()
				vmid := 600000 + p
				upid, err := c.Clone(ctx, "pve1", 9001, pveapi.CloneParams{NewID: vmid, Name: fmt.Sprintf("race-%d", p)})
				tried.Done()
				if pveapi.IsAlreadyExists(err) {
					lost.Add(1)
					return
				}
				if err == nil {
					won.Add(1)
					tried.Wait()
					err = waitOK(ctx, c, upid)
				}
				if err == nil {
					upid, err = c.Destroy(ctx, "pve1", vmid)
					if err == nil {
						err = waitOK(ctx, c, upid)
					}
				}
				if err != nil {
					errs <- fmt.Errorf("race %d: %w", p, err)
				}
			}()
		}
	}
	done := make(chan struct{})
	var listings atomic.Int32
	go func() {
		c := newClient()
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := c.ClusterResources(ctx); err == nil {
				listings.Add(1)
			}
		}
	}()
	wg.Wait()
	close(done)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if won.Load() != pairs || lost.Load() != pairs {
		t.Errorf("clone races: %d won, %d lost, want %d each", won.Load(), lost.Load(), pairs)
	}
	after := s.State()
	if len(after.VMs) != len(before.VMs) {
		t.Errorf("%d guests left, want the %d defaults", len(after.VMs), len(before.VMs))
	}
	for _, tk := range after.Tasks {
		if tk.Status != "stopped" || tk.ExitStatus != "OK" {
			t.Errorf("task %s: %s %q", tk.UPID, tk.Status, tk.ExitStatus)
		}
	}
	if got, want := len(after.Tasks), clients*cycles*4+pairs*2; got != want {
		t.Errorf("%d tasks, want %d", got, want)
	}
	if got, want := s.Stats()["POST /nodes/{node}/qemu/{vmid}/clone"], clients*cycles+2*pairs; got != want {
		t.Errorf("%d clone requests counted, want %d", got, want)
	}
	s.mu.Lock()
	s.checkInvariants(t)
	if len(s.leases) != 1 { // VM 100's
		t.Errorf("%d address leases left, want 1", len(s.leases))
	}
	s.mu.Unlock()
	total := 0
	for _, n := range s.Stats() {
		total += n
	}
	t.Logf("%d requests, %d of them listings alongside", total, listings.Load())
}
