package proxmox

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Test values: the test vector key of decision: vmid-function lands on 105967, 105968, 105969 in the default range.
const (
	testUID   = "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10"
	testName  = "proxy-a"
	testVMID0 = 105967
	testVMID1 = 105968
	otherUID  = "6f1d2c3b-aaaa-4bbb-8ccc-123456789abc"
	// prevUID is the uid of an earlier, interrupted Create of testName.
	prevUID = "3c2e8a41-5b6d-4f70-8a9b-0c1d2e3f4a5b"
)

// fakeClock advances only when something sleeps on it, so budgets of minutes run in
// microseconds and polls are counted, never timed.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 9, 24, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// harness is a backend over a fakeAPI with a fake clock and a template 9001 on pv1-1.
type harness struct {
	t     testing.TB
	f     *fakeAPI
	b     *Backend
	clock *fakeClock
	logs  *bytes.Buffer
	ctx   context.Context
}

func newHarness(t testing.TB, nodes ...string) *harness {
	t.Helper()
	f := newFakeAPI(nodes...)
	f.addTemplate(9001, f.nodes[0], nil)
	b := New(f, Config{Nodes: f.nodes, ISOStorage: fakeISOStorage, InstallGuestAgent: true, Templates: map[string]int{"debian-13": 9001},
		ProofKey: func() ([]byte, error) { return testProofKey, nil }, TokenID: func() (string, error) { return fakeUser, nil }})
	clk := newFakeClock()
	b.clock = clk
	b.buildSeed = func(s nocloud.Seed) ([]byte, error) {
		return []byte("ISO:" + s.Name), nil // never the user-data: tests look for it in logs
	}
	var logs bytes.Buffer
	ctx := tflog.NewSubsystem(tflogtest.RootLogger(context.Background(), &logs), LogSubsystem)
	return &harness{t: t, f: f, b: b, clock: clk, logs: &logs, ctx: ctx}
}

func (h *harness) spec() Spec {
	return Spec{
		Name: testName, UID: testUID, Node: "pv1-1", TemplateVMID: 9001, Cores: 2, MemoryMiB: 2048,
		UserData: []byte("#cloud-config\n"), OnBoot: true,
		CreatedAt: time.Date(2026, 9, 24, 11, 50, 0, 0, time.UTC), // ten minutes before the fake clock starts
	}
}

// create runs Create and fails the test on error.
func (h *harness) create(s Spec) VM {
	h.t.Helper()
	vm, err := h.b.Create(h.ctx, s, nil)
	if err != nil {
		h.t.Fatalf("Create: %v", err)
	}
	return vm
}

// createFails runs Create and returns its error, failing the test on success.
func (h *harness) createFails(s Spec) error {
	h.t.Helper()
	_, err := h.b.Create(h.ctx, s, nil)
	if err == nil {
		h.t.Fatal("Create succeeded, want an error")
	}
	return err
}

// testProofKey is the harness backend's proof key (Config.ProofKey).
var testProofKey = []byte("test proof key, derived from no token")

// addInterrupted adds a VM that an interrupted Create of name (uid, the empty namespace)
// left right after its clone: this provider's mark, still "creating", with its proof for
// vmid.
func (h *harness) addInterrupted(vmid int, name, uid string) *fakeVM {
	v := h.f.addOurVM(vmid, name, uid)
	h.f.mutate(vmid, func(v *fakeVM) {
		v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: uid, CreatedAt: h.clock.Now().Add(-10 * time.Minute)}, vmid, name)
	})
	return v
}

// addFinished adds a finished VM of this provider (its own uid, the empty namespace):
// another resource's VM of that name.
func (h *harness) addFinished(vmid int, name, uid string) *fakeVM {
	v := h.ourRunningVM(vmid, name)
	h.f.mutate(vmid, func(v *fakeVM) {
		v.Config["description"] = MarkLines{UID: uid, CreatedAt: time.Date(2026, 9, 19, 9, 0, 0, 0, time.UTC)}.Format()
		v.Config["ide2"] = seedVolID(fakeISOStorage, seedFile(name, uid)) + ",media=cdrom"
	})
	h.f.putISO(v.Node, fakeISOStorage, seedFile(name, uid), []byte("seed of "+uid))
	return v
}

// ourRunningVM adds a running, provisioned VM of ours.
func (h *harness) ourRunningVM(vmid int, name string) *fakeVM {
	v := h.f.addOurVM(vmid, name, testUID)
	h.f.mutate(vmid, func(v *fakeVM) {
		v.Status, v.QMP = "running", "running"
		v.Config["ide2"] = seedVolID(fakeISOStorage, seedFile(name, testUID)) + ",media=cdrom"
		v.Config["tags"] = ManagedTag
	})
	h.f.putISO(v.Node, fakeISOStorage, seedFile(name, testUID), []byte("seed"))
	return v
}

func assertClass(t *testing.T, err error, want pveapi.Class) {
	t.Helper()
	if err == nil {
		t.Fatalf("error is nil, want %s", want)
	}
	if got := ClassOf(err); got != want {
		t.Fatalf("class %s, want %s: %v", got, want, err)
	}
	if want != pveapi.NotFound && errors.Is(err, ErrNotFound) {
		t.Fatalf("errors.Is(err, ErrNotFound) for a %s error: %v", want, err)
	}
	if want == pveapi.NotFound && !errors.Is(err, ErrNotFound) {
		t.Fatalf("errors.Is(err, ErrNotFound) false: %v", err)
	}
}

func assertContains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q does not contain %q", s, sub)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// del deletes testID as the provider does for a VM it created: with the state's uid and
// the seed its last read recorded.
func (h *harness) del(ctx context.Context, node string) error {
	return h.b.DeleteVM(ctx, testID, DeleteOptions{Node: node, UID: testUID, Seed: seedVolID(fakeISOStorage, seedFile(testName, testUID))})
}

// withUID is ch with the uid of the tests' VMs when it names none (an update acts only
// on a VM whose mark carries the caller's uid).
func withUID(ch Changes) Changes {
	if ch.UID == "" {
		ch.UID = testUID
	}
	return ch
}

// bindInterrupted rewrites the creating mark addInterrupted wrote on v as the config step
// does: with v's SMBIOS uuid on its instance line, and a proof over it.
func bindInterrupted(h *harness, v *fakeVM, uid string) {
	v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: uid, CreatedAt: h.clock.Now().Add(-10 * time.Minute), Instance: instanceOf(v.Config)}, v.VMID, v.Name)
}
