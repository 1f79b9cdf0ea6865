package proxmox

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestListEach_boundedAndInOrder: a listing of 3,000 marked VMs reads at most
// ListConcurrency configs at once with as many readers, holds at most listWindow VMs ahead
// of its caller, and hands them on in VMID order; the caller can stop it early.
func TestListEach_boundedAndInOrder(t *testing.T) {
	const n, conc = 3000, 3
	f := newCheckFake(t)
	var res []pveapi.Resource
	for i := range n {
		res = append(res, pveapi.Resource{ID: fmt.Sprintf("qemu/%d", 200000+n-i), Type: "qemu", VMID: 200000 + n - i, Node: "pv1-1", Name: fmt.Sprintf("proxy-%d", i), Status: "running"})
	}
	f.resources = func(context.Context) ([]pveapi.Resource, error) { return res, nil }
	var inflight, maxInflight, started, maxGoroutines atomic.Int64
	base := int64(runtime.NumGoroutine())
	f.config = func(_ context.Context, _ string, vmid int) (map[string]string, error) {
		started.Add(1)
		cur := inflight.Add(1)
		defer inflight.Add(-1)
		for old := maxInflight.Load(); cur > old && !maxInflight.CompareAndSwap(old, cur); old = maxInflight.Load() {
		}
		if g := int64(runtime.NumGoroutine()); g > maxGoroutines.Load() {
			maxGoroutines.Store(g)
		}
		runtime.Gosched()
		return map[string]string{"description": FormatMark(fmt.Sprintf("u-%d", vmid), time.Unix(0, 0))}, nil
	}
	b := ckBackend(f)
	b.cfg.ListConcurrency = conc
	var got []int
	var ahead int64
	skipped, err := b.ListEach(context.Background(), func(in Instance) bool {
		got = append(got, in.ID.VMID)
		ahead = max(ahead, started.Load()-int64(len(got)))
		return true
	})
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	if len(got) != n || !slices.IsSorted(got) {
		t.Fatalf("%d VMs listed, sorted %v", len(got), slices.IsSorted(got))
	}
	if m := maxInflight.Load(); m > conc {
		t.Errorf("%d config reads at once, want at most %d", m, conc)
	}
	if g := maxGoroutines.Load(); g > base+conc+4 {
		t.Errorf("%d goroutines while listing (%d before), want at most %d more: one per reader", g, base, conc+4)
	}
	if ahead > listWindow {
		t.Errorf("%d configs read ahead of the caller, want at most %d", ahead, listWindow)
	}
	// Stopped after 10: the readers stop within the window.
	started.Store(0)
	count := 0
	if _, err := b.ListEach(context.Background(), func(Instance) bool { count++; return count < 10 }); err != nil {
		t.Fatal(err)
	}
	if s := started.Load(); count != 10 || s > 10+listWindow {
		t.Errorf("stopped after %d; %d configs read, want at most %d", count, s, 10+listWindow)
	}
}

// TestListEach_cancelledReturnsPromptly: ctx ending stops the listing with an error, and
// no reader outlives the call.
func TestListEach_cancelledReturnsPromptly(t *testing.T) {
	f := newCheckFake(t)
	var res []pveapi.Resource
	for i := range 500 {
		res = append(res, pveapi.Resource{Type: "qemu", VMID: 300000 + i, Node: "pv1-1", Name: fmt.Sprintf("proxy-%d", i)})
	}
	f.resources = func(context.Context) ([]pveapi.Resource, error) { return res, nil }
	ctx, cancel := context.WithCancel(context.Background())
	var reads atomic.Int64
	f.config = func(ctx context.Context, _ string, _ int) (map[string]string, error) {
		if reads.Add(1) == 20 {
			cancel()
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return map[string]string{"description": FormatMark("u", time.Unix(0, 0))}, nil
	}
	base := runtime.NumGoroutine()
	_, err := ckBackend(f).ListEach(ctx, func(Instance) bool { return true })
	if err == nil {
		t.Fatal("a cancelled listing succeeded")
	}
	if r := reads.Load(); r > 20+listWindow {
		t.Errorf("%d reads after the cancel at 20", r)
	}
	if g := runtime.NumGoroutine(); g > base+1 {
		t.Errorf("%d goroutines after the call, %d before", g, base)
	}
}

// halfMadeCluster is a cluster with half-made VMs of several kinds in the VMID range.
func halfMadeCluster(t *testing.T, now time.Time) (*checkFake, *Backend, map[int]map[string]string) {
	t.Helper()
	f := newCheckFake(t)
	creating := func(vmid int, name, uid string, at time.Time, ns string) string {
		return CreatingMark(testProofKey, MarkLines{UID: uid, CreatedAt: at, Namespace: ns}, vmid, name)
	}
	old, young := now.Add(-3*time.Hour), now.Add(-5*time.Minute)
	cfgs := map[int]map[string]string{
		100001: {"name": "proxy-old", "description": creating(100001, "proxy-old", "11111111-1111-4111-8111-111111111111", old, "ns")},
		100002: {"name": "proxy-young", "description": creating(100002, "proxy-young", "22222222-2222-4222-8222-222222222222", young, "ns")},
		100003: {"name": "proxy-otherns", "description": creating(100003, "proxy-otherns", "33333333-3333-4333-8333-333333333333", old, "other")},
		100004: {"name": "proxy-finished", "description": MarkLines{UID: "44444444-4444-4444-8444-444444444444", CreatedAt: old, Namespace: "ns"}.Format()},
		100005: {"name": "proxy-operator", "description": FormatMark("55555555-5555-4555-8555-555555555555", old)},
		// A creating mark written by hand (no proof), and one copied from another VMID.
		100006: {"name": "proxy-byhand", "description": MarkLines{UID: "66666666-6666-4666-8666-666666666666", CreatedAt: old, Namespace: "ns", Creating: true}.Format()},
		100008: {"name": "proxy-copied", "description": creating(100009, "proxy-copied", "88888888-8888-4888-8888-888888888888", old, "ns")},
		100007: {"name": "edge-1", "description": creating(100007, "edge-1", "77777777-7777-4777-8777-777777777777", old, "ns"),
			"ide2": "local:iso/edge-1-77777777-7777-4777-8777-777777777777-seed.iso,media=cdrom"},
	}
	var res []pveapi.Resource
	for vmid, c := range cfgs {
		res = append(res, pveapi.Resource{Type: "qemu", VMID: vmid, Node: "pv1-1", Name: c["name"]})
	}
	res = append(res, pveapi.Resource{Type: "qemu", VMID: 99999, Node: "pv1-1", Name: "outside-range"})
	f.resources = func(context.Context) ([]pveapi.Resource, error) { return res, nil }
	f.config = func(_ context.Context, _ string, vmid int) (map[string]string, error) {
		c, ok := cfgs[vmid]
		if !ok {
			t.Errorf("config of VM %d read: it is outside the VMID range", vmid)
			return nil, ckAPIErr("err_not_exist")
		}
		return c, nil
	}
	b := ckBackend(f)
	b.cfg.VMIDMin, b.cfg.VMIDMax = 100000, 199999
	b.cfg.ProofKey = func() ([]byte, error) { return testProofKey, nil }
	return f, b, cfgs
}

// TestOrphanVMs_onlyProvedHalfMadeOfThisNamespace: a half-made VM is one whose creating
// mark is proved this provider's for its VMID (decision: creating-proof), in this
// uid_namespace, in the VMID range, whatever its name. Finished VMs, the operator's,
// another namespace's, hand-written and copied creating marks are not; without the proof
// key, none is.
func TestOrphanVMs_onlyProvedHalfMadeOfThisNamespace(t *testing.T) {
	now := time.Now()
	_, b, _ := halfMadeCluster(t, now)
	got, skipped, err := b.OrphanVMs(context.Background(), "ns")
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	var names []string
	for _, o := range got {
		names = append(names, fmt.Sprintf("%s %s", o.ID.Name, o.Seed))
	}
	want := []string{
		"proxy-old proxy-seeds:iso/proxy-old-11111111-1111-4111-8111-111111111111-seed.iso",
		"proxy-young proxy-seeds:iso/proxy-young-22222222-2222-4222-8222-222222222222-seed.iso",
		"edge-1 local:iso/edge-1-77777777-7777-4777-8777-777777777777-seed.iso",
	}
	if !slices.Equal(names, want) {
		t.Errorf("half-made VMs %q, want %q", names, want)
	}
	b.cfg.ProofKey = nil
	if got, _, err := b.OrphanVMs(context.Background(), "ns"); err != nil || len(got) != 0 {
		t.Errorf("without the proof key: %v, %v; want none", got, err)
	}
}

// cleanupHarness is a harness-backed cluster for CleanOrphans: an old and a young orphan seed,
// an old and a young half-made VM, and a finished VM with its seed.
func cleanupHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, "pv1-1")
	now := h.clock.Now()
	half := func(vmid int, name, uid string, at time.Time) {
		h.f.addOurVM(vmid, name, uid)
		h.f.mutate(vmid, func(v *fakeVM) {
			// Interrupted between its clone and its config step: its seed uploaded, not
			// attached yet, stopped, no instance line (decision: instance-binding).
			v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: uid, CreatedAt: at, Namespace: "ns"}, vmid, name)
		})
		h.f.putISO("pv1-1", fakeISOStorage, seedFile(name, uid), []byte("seed"))
	}
	half(100001, "proxy-half-old", testUID, now.Add(-2*time.Hour))
	half(100002, "proxy-half-young", otherUID, now.Add(-10*time.Minute))
	h.addFinished(100003, "proxy-done", prevUID)
	h.f.mu.Lock()
	delete(h.f.isos, "pv1-1/"+fakeISOStorage+"/"+seedVolID(fakeISOStorage, seedFile("proxy-done", testUID))) // ourRunningVM's, replaced
	h.f.mu.Unlock()
	h.b.cfg.VMIDMin, h.b.cfg.VMIDMax = 100000, 199999
	return h
}

// TestCleanOrphans_dryRunThenReal: a dry run reports what is older than the grace period
// and changes nothing; the real run deletes exactly that (the old half-made VM with its
// seed, the old orphan seed) and keeps the young ones and every VM in use.
func TestCleanOrphans_dryRunThenReal(t *testing.T) {
	h := cleanupHarness(t)
	// The fake's volumes are days older than its clock: an orphan seed to delete.
	h.f.putISO("pv1-1", fakeISOStorage, seedFile("proxy-gone", otherUID), []byte("old orphan"))
	opts := CleanOptions{DryRun: true, Grace: time.Hour, Seeds: true, VMs: true, Namespace: "ns"}
	before := h.f.seeds()
	var events []string
	rep, err := h.b.CleanOrphans(h.ctx, opts, func(e CleanEvent) { events = append(events, e.String()) })
	if err != nil {
		t.Fatal(err)
	}
	if m := mutating(h.f); len(m) != 0 {
		t.Fatalf("the dry run changed something: %v", m)
	}
	if rep.Deleted != 2 || rep.Kept != 1 || rep.Failed != 0 || len(events) != 3 {
		t.Fatalf("dry run: %+v\n%s", rep, strings.Join(events, "\n"))
	}
	assertContains(t, strings.Join(events, "\n"), "would delete half-made VM proxy-half-old (VMID 100001)",
		"kept half-made VM proxy-half-young (VMID 100002)", "would delete seed ISO proxy-seeds:iso/"+seedFile("proxy-gone", otherUID))

	opts.DryRun = false
	rep, err = h.b.CleanOrphans(h.ctx, opts, nil)
	if err != nil || rep.Deleted != 2 || rep.Failed != 0 {
		t.Fatalf("cleanup: %+v, %v", rep, err)
	}
	if h.f.vm(100001) != nil || h.f.vm(100002) == nil || h.f.vm(100003) == nil {
		t.Errorf("VMs left: old %v young %v finished %v; want only the old half-made one gone", h.f.vm(100001) != nil, h.f.vm(100002) != nil, h.f.vm(100003) != nil)
	}
	after := h.f.seeds()
	for _, s := range before {
		gone := !slices.Contains(after, s)
		want := strings.Contains(s, "proxy-half-old") || strings.Contains(s, "proxy-gone")
		if gone != want {
			t.Errorf("seed %s deleted %v, want %v", s, gone, want)
		}
	}
	// The claim came first: a compare-and-swap on the digest, to "abandoned".
	for _, c := range h.f.callsOf("SetVMConfig") {
		if c.VMID == 100001 && !strings.Contains(c.Args["description"], MarkKeyState+"="+markStateAbandoned) {
			t.Errorf("the half-made VM's config write %v is not the claim", c.Args)
		}
	}
}

// TestCleanOrphans_takenOverMeanwhileIsLeftAlone: a create that takes the half-made VM over
// between the listing and the claim (its uid and created-at change, or its digest does
// while the claim is written) wins: the cleanup leaves the VM alone and says so.
func TestCleanOrphans_takenOverMeanwhileIsLeftAlone(t *testing.T) {
	for _, when := range []string{"before the claim", "during the claim"} {
		t.Run(when, func(t *testing.T) {
			h := cleanupHarness(t)
			takeOver := func() {
				h.f.mutate(100001, func(v *fakeVM) {
					v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: prevUID, CreatedAt: h.clock.Now(), Namespace: "ns"}, 100001, "proxy-half-old")
				})
			}
			reads := 0
			h.f.onCall("VMConfig", func(_ context.Context, c fakeCall) error {
				if c.VMID == 100001 {
					reads++
					if reads == 2 && when == "before the claim" {
						takeOver()
					}
				}
				return nil
			})
			if when == "during the claim" {
				h.f.onCall("SetVMConfig", func(_ context.Context, c fakeCall) error {
					if c.VMID == 100001 {
						takeOver()
					}
					return nil
				})
			}
			rep, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: time.Hour, VMs: true, Namespace: "ns"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h.f.vm(100001) == nil || h.f.calls("Destroy") != 0 || rep.Failed != 1 {
				t.Fatalf("VM left %v, destroys %d, report %+v", h.f.vm(100001) != nil, h.f.calls("Destroy"), rep)
			}
			assertContains(t, rep.Events[0].Why, "left alone")
		})
	}
}

// TestCleanOrphans_seedsNeedAFullView: a seed is an orphan only when the token sees every
// VM that could use it (decision: orphan-visibility). A token without VM.Audit on /vms,
// propagated (one scoped to a pool, one granted it unpropagated, one whose privileges
// cannot be read) does not see the VM of another pool, so the seed that VM boots from
// looks unused: the cleanup keeps every seed, dry run or not, saying which privilege is
// missing and what to do, and still deletes the half-made VM its mark proves ours, seed
// included. With VM.Audit on /vms propagated, the true orphan is deleted and the other
// pool's VM, seen, keeps its seed.
func TestCleanOrphans_seedsNeedAFullView(t *testing.T) {
	// Sys.Audit on the node: the half-made VM's task history is read (clone_history.go).
	pool := map[string][]string{"/pool/proxies": allFakePrivs, "/nodes/pv1-1": {"Sys.Audit"}}
	for _, tc := range []struct {
		name   string
		setup  func(f *fakeAPI)
		hidden bool     // the other pool's VM is not listed
		why    []string // the kept seeds' reason; none: the view is complete
	}{
		{name: "pool-scoped token", hidden: true, setup: func(f *fakeAPI) { f.privs = pool },
			why: []string{"lacks VM.Audit on /vms (propagated)"}},
		{name: "VM.Audit on /vms unpropagated", hidden: true, setup: func(f *fakeAPI) {
			f.privs = map[string][]string{"/pool/proxies": allFakePrivs, "/vms": {"VM.Audit"}, "/nodes/pv1-1": {"Sys.Audit"}}
			f.unpropagated = map[string]bool{"/vms": true}
		}, why: []string{"VM.Audit on /vms without propagate"}},
		{name: "privileges unreadable", hidden: true, setup: func(f *fakeAPI) {
			f.privs = pool
			failed := false
			f.onCall("Permissions", func(_ context.Context, c fakeCall) error {
				if c.Args["path"] != "/vms" || failed {
					return nil
				}
				failed = true
				return fixtureErr("err_not_implemented")
			})
		}, why: []string{"reading its privileges on /vms failed", fixture.MustLoad("err_not_implemented").Message()}},
		{name: "VM.Audit on /vms propagated", setup: func(f *fakeAPI) {
			f.privs = map[string][]string{"/pool/proxies": allFakePrivs, "/vms": {"VM.Audit"}, "/nodes/pv1-1": {"Sys.Audit"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanupHarness(t)
			h.addFinished(100010, "proxy-team-b", otherUID) // another pool's VM, booting from its seed
			h.f.mu.Lock()
			delete(h.f.isos, "pv1-1/"+fakeISOStorage+"/"+seedVolID(fakeISOStorage, seedFile("proxy-team-b", testUID))) // ourRunningVM's, replaced
			h.f.mu.Unlock()
			teamB := "pv1-1/" + seedVolID(fakeISOStorage, seedFile("proxy-team-b", otherUID))
			gone := "pv1-1/" + seedVolID(fakeISOStorage, seedFile("proxy-gone", otherUID))
			h.f.putISO("pv1-1", fakeISOStorage, seedFile("proxy-gone", otherUID), []byte("old orphan"))
			if tc.hidden {
				h.f.hide(100010)
			}
			tc.setup(h.f)
			if !slices.Contains(h.f.seeds(), teamB) || !slices.Contains(h.f.seeds(), gone) {
				t.Fatalf("setup: seeds %v", h.f.seeds())
			}
			var events []CleanEvent
			rep, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: time.Hour, Seeds: true, VMs: true, Namespace: "ns"},
				func(e CleanEvent) { events = append(events, e) })
			if err != nil {
				t.Fatal(err)
			}
			if h.f.vm(100001) != nil || h.f.vm(100010) == nil {
				t.Errorf("half-made VM left %v, the other pool's VM gone %v", h.f.vm(100001) != nil, h.f.vm(100010) == nil)
			}
			after := h.f.seeds()
			if !slices.Contains(after, teamB) {
				t.Errorf("the seed of the other pool's VM was deleted: seeds %v", after)
			}
			if slices.ContainsFunc(after, func(s string) bool { return strings.Contains(s, "proxy-half-old") }) {
				t.Errorf("the half-made VM's seed is left: %v", after)
			}
			var seedEvents []CleanEvent
			for _, e := range events {
				if e.Kind == CleanSeed {
					seedEvents = append(seedEvents, e)
				}
			}
			if len(tc.why) == 0 {
				if slices.Contains(after, gone) || len(seedEvents) != 1 || seedEvents[0].Action != CleanDeleted ||
					seedEvents[0].What != strings.TrimPrefix(gone, "pv1-1/") {
					t.Errorf("with a full view the orphan is deleted alone: seeds %v, events %+v", after, seedEvents)
				}
				if n := len(slices.DeleteFunc(h.f.callsOf("Permissions"), func(c fakeCall) bool { return c.Args["path"] != "/vms" })); n != 1 {
					t.Errorf("%d privilege reads of /vms, want 1", n)
				}
				return
			}
			if !slices.Contains(after, gone) {
				t.Errorf("a seed was deleted though the token may not see every VM: seeds %v", after)
			}
			if len(seedEvents) != 2 || rep.Kept != 3 { // the two seeds, and the young half-made VM
				t.Fatalf("seed events %+v, report %+v; want the two seeds kept", seedEvents, rep)
			}
			for _, e := range seedEvents {
				if e.Action != CleanKept {
					t.Errorf("%s", e)
				}
				assertContains(t, e.String(), append([]string{"kept seed ISO", "VM.Audit on /vms", "outside its pool",
					"run the cleanup with a token that has VM.Audit on /vms (propagated)", "delete the seed by hand"}, tc.why...)...)
			}
			for _, c := range h.f.callsOf("DeleteVolume") {
				if !strings.Contains(c.Args["volume"]+c.Args["volid"], "proxy-half-old") {
					t.Errorf("a seed delete reached %v", c.Args)
				}
			}
			// A dry run says the same: it would delete no seed.
			events = nil
			if _, err := h.b.CleanOrphans(h.ctx, CleanOptions{DryRun: true, Grace: time.Hour, Seeds: true}, func(e CleanEvent) { events = append(events, e) }); err != nil {
				t.Fatal(err)
			}
			for _, e := range events {
				if e.Action != CleanKept {
					t.Errorf("dry run: %s", e)
				}
			}
		})
	}
}

// TestCleanOrphans_seedAttachedElsewhereIsKept: a seed named like ours whose VM is gone,
// but that a VM of another name has on a drive (a renamed proxy VM's ide2, a rescue VM's
// ide3, a sata or scsi CD-ROM; the volume keyless, as file= or as volume=), is kept: the cleanup reads every listed VM's config before it
// deletes a seed, so it never takes a CD-ROM image from a VM. A seed no VM has is deleted.
func TestCleanOrphans_seedAttachedElsewhereIsKept(t *testing.T) {
	for _, tc := range seedDriveForms([]string{"ide2", "ide3", "sata0", "scsi5"}) {
		drive := tc.drive
		t.Run(tc.name, func(t *testing.T) {
			h := cleanupHarness(t)
			used, free := seedFile("proxy-renamed", otherUID), seedFile("proxy-gone", prevUID)
			h.f.putISO("pv1-1", fakeISOStorage, used, []byte("attached elsewhere"))
			h.f.putISO("pv1-1", fakeISOStorage, free, []byte("orphan"))
			h.f.addVM(&fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1", Config: map[string]string{
				drive: tc.value(seedVolID(fakeISOStorage, used)),
			}})
			var events []string
			rep, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: time.Hour, Seeds: true}, func(e CleanEvent) { events = append(events, e.String()) })
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := h.f.iso("pv1-1", fakeISOStorage, used); !ok {
				t.Errorf("the seed VM 100100 has on %s was deleted:\n%s", drive, strings.Join(events, "\n"))
			}
			if _, ok := h.f.iso("pv1-1", fakeISOStorage, free); ok {
				t.Errorf("the orphan %s was kept: %+v", free, rep)
			}
			assertContains(t, strings.Join(events, "\n"), "attached to VM 100100 (rescue) as "+drive)
		})
	}
}

// TestCleanOrphans_pastCloneNeedsALook: a proved half-made VM that shows any sign of having
// got past its clone (decision: instance-binding) is never deleted, whatever its age, in a
// dry run or not: reported "needs a look" with the VMID, the sign and the `qm destroy`
// advice, and no request writes to it. The first two rows are the replayed-creating-text threat: a
// finished, running VM whose description a Notes-only user replaced with the creating text
// they read while it was created (before and after the config step).
func TestCleanOrphans_pastCloneNeedsALook(t *testing.T) {
	const vmid, name = 100001, "proxy-half-old"
	seedOn := func(v *fakeVM) string { return seedVolID(fakeISOStorage, seedFile(name, testUID)) + ",media=cdrom" }
	for _, tc := range []struct {
		name string
		mut  func(h *harness, v *fakeVM)
		sign string
	}{
		{"a live VM with the creating text replayed (captured before the config step)", func(_ *harness, v *fakeVM) {
			v.Status, v.QMP = "running", "running"
			v.Config["ide2"] = seedOn(v)
		}, "it is running"},
		{"a live VM with the creating text replayed (captured after the config step)", func(h *harness, v *fakeVM) {
			v.Config["description"] = CreatingMark(testProofKey, MarkLines{UID: testUID, CreatedAt: h.clock.Now().Add(-2 * time.Hour), Namespace: "ns",
				Instance: instanceOf(v.Config)}, vmid, name)
		}, "carries a " + MarkKeyInstance + " line"},
		{"stopped, its seed on ide2", func(_ *harness, v *fakeVM) { v.Config["ide2"] = seedOn(v) }, "is attached to VM 100001 (proxy-half-old) as ide2"},
		{"stopped, its seed detached but pending", func(_ *harness, v *fakeVM) {
			v.Config["ide2"] = seedOn(v)
			v.PendingDelete = map[string]bool{"ide2": true}
		}, "as ide2"},
		{"stopped, its seed on a snapshot only", func(_ *harness, v *fakeVM) {
			v.Config["parent"] = "s1"
			v.Snapshots = map[string]map[string]string{"s1": {"ide2": seedOn(v), "scsi0": v.Config["scsi0"]}}
		}, "in its snapshot s1"},
		{"hibernated", func(_ *harness, v *fakeVM) { v.Lock = "suspended" }, "it is hibernated"},
	} {
		for _, dry := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, dry run %v", tc.name, dry), func(t *testing.T) {
				h := cleanupHarness(t)
				h.f.mutate(vmid, func(v *fakeVM) { tc.mut(h, v) })
				before := h.f.vm(vmid).clone()
				h.f.mu.Lock()
				h.f.calllog = nil
				h.f.mu.Unlock()
				rep, err := h.b.CleanOrphans(h.ctx, CleanOptions{DryRun: dry, Grace: time.Hour, VMs: true, Namespace: "ns"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if w := writesTo(h, vmid); len(w) != 0 || len(mutating(h.f)) != 0 {
					t.Errorf("writes: %v (any VM: %v)", w, mutating(h.f))
				}
				if after := h.f.vm(vmid); after == nil || after.Config["description"] != before.Config["description"] || after.Status != before.Status {
					t.Errorf("the VM changed: %+v", after)
				}
				if rep.NeedsLook != 1 || rep.Deleted != 0 {
					t.Fatalf("report %+v", rep)
				}
				e := rep.Events[0]
				if e.Action != CleanNeedsLook {
					t.Fatalf("event %v", e)
				}
				assertContains(t, e.String(), "half-made VM proxy-half-old (VMID 100001) on node pv1-1", "needs a look", tc.sign,
					"qm stop 100001 && qm destroy 100001 --purge")
			})
		}
	}
}

// TestCleanOrphans_reportsTheSeedAsItWent: the event of a deleted half-made VM names its
// seed ISO as deleted only when it was; a seed another VM has on a drive is kept by the
// delete's sweep, and the event says so, naming that VM.
func TestCleanOrphans_reportsTheSeedAsItWent(t *testing.T) {
	for _, held := range []bool{false, true} {
		h := cleanupHarness(t)
		seed := seedVolID(fakeISOStorage, seedFile("proxy-half-old", testUID))
		if held {
			h.f.addVM(&fakeVM{VMID: 300, Name: "rescue", Status: "running", Config: map[string]string{"ide3": seed + ",media=cdrom", "scsi0": "local-lvm:vm-300-disk-0,size=3G"}})
		}
		rep, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: time.Hour, VMs: true, Namespace: "ns"}, nil)
		if err != nil || rep.Deleted != 1 || h.f.vm(100001) != nil {
			t.Fatalf("held %v: %+v, %v", held, rep, err)
		}
		e := rep.Events[0].String()
		_, kept := h.f.iso("pv1-1", fakeISOStorage, seedFile("proxy-half-old", testUID))
		if kept != held {
			t.Errorf("held %v: seed kept %v", held, kept)
		}
		if held {
			assertContains(t, e, "its seed ISO "+seed+" was kept", "VM 300 (rescue)")
			if strings.Contains(e, "with its seed ISO") {
				t.Errorf("the event claims the kept seed deleted: %s", e)
			}
		} else {
			assertContains(t, e, "deleted half-made VM proxy-half-old (VMID 100001)", "with its seed ISO "+seed)
		}
	}
}
