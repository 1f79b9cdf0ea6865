package proxmox

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// The seed swap of a cloud-init change applied in place (cloud_init_change = "restart";
// decision: seed-swap): Update with Changes.Reseed.

const swapDigest = "hmac-sha256:0011"

// reseed is a cloud-init change applied in place, with the user-data text.
func reseed(text string) Changes {
	return withUID(Changes{UserData: []byte(text), UserDataKnown: true, Reseed: &Reseed{UserDataDigest: swapDigest}})
}

// seedVolOf is generation gen of testName's seed on the fake's ISO storage, as f.seeds lists it.
func seedVolOf(gen int) string {
	return "pv1-1/" + seedVolID(fakeISOStorage, seedFileGen(testName, testUID, gen))
}

// onSwapWrite hooks the swap's config write (the one that names a seed on ide2), not the
// mark write that records the swap before it.
func onSwapWrite(h *harness, fn func(context.Context, fakeCall) error) {
	h.f.onCall("SetVMConfig", func(ctx context.Context, c fakeCall) error {
		if _, ok := c.Args["ide2"]; !ok {
			return nil
		}
		return fn(ctx, c)
	})
}

// readSeed reads generation gen of testName's seed back.
func (h *harness) readSeed(gen int) nocloud.Files {
	h.t.Helper()
	data, ok := h.f.iso("pv1-1", fakeISOStorage, seedFileGen(testName, testUID, gen))
	if !ok {
		h.t.Fatalf("seed generation %d is not on the storage: %v", gen, h.f.seeds())
	}
	files, err := nocloud.Read(data)
	if err != nil {
		h.t.Fatal(err)
	}
	return files
}

func TestReseed_swapsTheSeedKeepsTheVMAndRestarts(t *testing.T) {
	h := newHarness(t)
	h.b.buildSeed = nocloud.Build // the real image: its meta-data is read back
	h.ourRunningVM(testVMID0, testName)
	before := h.f.vm(testVMID0)
	h.f.calllog = nil
	if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\nruncmd: [v2]\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := mutating(h.f), []string{"SetVMConfig", "UploadISO", "SetVMConfig", "DeleteVolume", "Shutdown", "Start"}; !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v (swap recorded, upload, swap, old seed deleted, graceful restart)", got, want)
	}
	if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(2)}) {
		t.Errorf("seeds %v, want only the new one %s", got, seedVolOf(2))
	}
	v := h.f.vm(testVMID0)
	if want := ide2Seed(seedVol{storage: fakeISOStorage, file: seedFileGen(testName, testUID, 2)}); v.Config["ide2"] != want {
		t.Errorf("ide2 %q, want %q", v.Config["ide2"], want)
	}
	for _, k := range []string{"net0", "scsi0", "name"} {
		if v.Config[k] != before.Config[k] {
			t.Errorf("%s changed: %q -> %q", k, before.Config[k], v.Config[k])
		}
	}
	if m, why := ownedBy(v.Config, testName, Owner{UID: testUID}); why != notOursNone || m.UID != testUID {
		t.Errorf("the VM is no longer the resource's after the swap: %s", why)
	}
	if got := ParseMarkExtra(v.Config["description"]).UserDataDigest; got != swapDigest {
		t.Errorf("mark digest %q, want %q", got, swapDigest)
	}
	runningCheck(t, v)
	files := h.readSeed(2)
	if string(files.UserData) != "#cloud-config\nruncmd: [v2]\n" {
		t.Errorf("user-data %q", files.UserData)
	}
	want := "instance-id: " + testName + "-" + testUID + "-2\nlocal-hostname: " + testName + "\n"
	if string(files.MetaData) != want {
		t.Errorf("meta-data %q, want %q", files.MetaData, want)
	}

	// The next change: generation 3, another instance-id, generation 2 gone.
	if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\nruncmd: [v3]\n")); err != nil {
		t.Fatal(err)
	}
	if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(3)}) {
		t.Errorf("seeds %v after the second change, want only %s", got, seedVolOf(3))
	}
	if got := string(h.readSeed(3).MetaData); !strings.Contains(got, "instance-id: "+testName+"-"+testUID+"-3\n") {
		t.Errorf("meta-data %q of the third generation", got)
	}
}

// TestReseed_deferredAndStopped: with reboot_on_change = false (DeferRestart) the new seed
// is attached and the running VM is left alone; a stopped VM is swapped and not started.
func TestReseed_deferredAndStopped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		running bool
		defer_  bool
	}{{"deferred", true, true}, {"stopped", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			if !tc.running {
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = "stopped", "" })
			}
			h.f.calllog = nil
			ch := reseed("#cloud-config\n")
			ch.DeferRestart = tc.defer_
			if err := h.b.Update(h.ctx, testID, ch); err != nil {
				t.Fatal(err)
			}
			if got, want := mutating(h.f), []string{"SetVMConfig", "UploadISO", "SetVMConfig", "DeleteVolume"}; !slices.Equal(got, want) {
				t.Errorf("calls %v, want %v (no power call)", got, want)
			}
			if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(2)}) {
				t.Errorf("seeds %v", got)
			}
		})
	}
}

// TestReseed_failureInTheMiddleLeavesNoSeed: each step of the swap failing leaves the VM
// on a seed that exists, nothing else on the storage once the next apply of the same change
// ran, and that apply converges to the new generation alone. The VM is never restarted
// by a failed swap.
func TestReseed_failureInTheMiddleLeavesNoSeed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fail injects the fault into h, with cancel ending the update's context.
		fail func(h *harness, cancel context.CancelFunc)
		// left is what the storage holds right after the failed update.
		left []string
		ide2 int // the generation ide2 names after it
	}{
		{"upload task fails", func(h *harness, _ context.CancelFunc) { h.f.failTask("imgcopy", "storage full") },
			[]string{seedVolOf(1)}, 1},
		{"config write refused", func(h *harness, _ context.CancelFunc) {
			onSwapWrite(h, func(context.Context, fakeCall) error { return fixtureErr("err_596") })
		},
			[]string{seedVolOf(1)}, 1},
		{"interrupted at the config write", func(h *harness, cancel context.CancelFunc) {
			onSwapWrite(h, func(ctx context.Context, _ fakeCall) error { cancel(); return ctx.Err() })
		}, []string{seedVolOf(1), seedVolOf(2)}, 1},
		{"old seed's delete fails", func(h *harness, _ context.CancelFunc) { h.f.failNext("DeleteVolume", fixtureErr("err_596")) },
			[]string{seedVolOf(1), seedVolOf(2)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			ctx, cancel := context.WithCancel(h.ctx)
			defer cancel()
			tc.fail(h, cancel)
			h.f.calllog = nil
			err := h.b.Update(ctx, testID, reseed("#cloud-config\n"))
			if err == nil {
				t.Fatal("the update succeeded")
			}
			if slices.Contains(mutating(h.f), "Shutdown") || slices.Contains(mutating(h.f), "Stop") {
				t.Errorf("a failed swap restarted the VM: %v", mutating(h.f))
			}
			slices.Sort(tc.left)
			if got := h.f.seeds(); !slices.Equal(got, tc.left) {
				t.Errorf("seeds %v after the failure, want %v", got, tc.left)
			}
			if got := h.f.vm(testVMID0).Config["ide2"]; !strings.Contains(got, seedFileGen(testName, testUID, tc.ide2)) {
				t.Errorf("ide2 %q, want generation %d", got, tc.ide2)
			}
			for _, left := range tc.left {
				if left != seedVolOf(tc.ide2) && !strings.Contains(err.Error(), strings.TrimPrefix(left, "pv1-1/")) {
					t.Errorf("the error does not name the seed left %s: %v", left, err)
				}
			}
			// The next apply of the same change converges: one seed, the VM running on it.
			h.f.hooks = map[string][]func(context.Context, fakeCall) error{}
			if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\n")); err != nil {
				t.Fatal(err)
			}
			want := tc.ide2 + 1
			if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(want)}) {
				t.Errorf("seeds %v after the next apply, want only %s", got, seedVolOf(want))
			}
			runningCheck(t, h.f.vm(testVMID0))
		})
	}
}

// TestReseed_destroyAfterAFailedSwapLeavesNothing: a swap whose old seed's delete failed,
// then the resource destroyed: both generations go with the VM.
func TestReseed_destroyAfterAFailedSwapLeavesNothing(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.failNext("DeleteVolume", fixtureErr("err_596"))
	if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\n")); err == nil {
		t.Fatal("the update succeeded")
	}
	if len(h.f.seeds()) != 2 {
		t.Fatalf("seeds %v, want both generations", h.f.seeds())
	}
	if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, Seed: seedVolID(fakeISOStorage, seedFileGen(testName, testUID, 2))}); err != nil {
		t.Fatal(err)
	}
	if got := h.f.seeds(); len(got) != 0 {
		t.Errorf("seeds left after the destroy: %v", got)
	}
}

// TestReseed_refusedOnAVMNotProvedOurs: a VM at the VMID whose mark does not carry the
// resource's uid (another resource's, a uid-less mark, no mark) gets nothing: no upload, no
// write, no delete, no power call, and its seed stays.
func TestReseed_refusedOnAVMNotProvedOurs(t *testing.T) {
	for _, tc := range []struct {
		name string
		desc func() string
	}{
		{"another uid", func() string {
			return FormatMark("7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35", time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC))
		}},
		{"a mark without a uid", func() string { return MarkLines{CreatedAt: time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC)}.Format() }},
		{"no mark", func() string { return "made by hand" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] = tc.desc() })
			seeds := h.f.seeds()
			h.f.calllog = nil
			err := h.b.Update(h.ctx, testID, reseed("#cloud-config\n"))
			if err == nil {
				t.Fatal("the update of a VM not ours succeeded")
			}
			if got := mutating(h.f); len(got) != 0 {
				t.Errorf("writes to a VM not ours: %v", got)
			}
			if got := h.f.seeds(); !slices.Equal(got, seeds) {
				t.Errorf("seeds %v, want %v", got, seeds)
			}
			if h.f.calls("StorageContent") != 0 {
				t.Errorf("the storage was listed for a VM not ours")
			}
		})
	}
}

// TestReseed_leftoversOfOtherVMsStay: the recovery deletes only seeds of this VM's name and
// uid: another uid's seed of the same name, the proxy operator's <name>-seed.iso and an installer
// image stay.
func TestReseed_leftoversOfOtherVMsStay(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	other := seedFileGen(testName, "7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35", 2)
	for _, f := range []string{other, operatorSeedFile(testName), "debian-13.iso", seedFileGen(testName, testUID, 5)} {
		h.f.putISO("pv1-1", fakeISOStorage, f, []byte("x"))
	}
	if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\n")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{other, operatorSeedFile(testName), "debian-13.iso"} {
		if _, ok := h.f.iso("pv1-1", fakeISOStorage, f); !ok {
			t.Errorf("%s was deleted", f)
		}
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFileGen(testName, testUID, 5)); ok {
		t.Errorf("this VM's leftover generation 5 was kept")
	}
}

// TestReseed_unknownUserDataIsRefusedFirst: an imported VM whose cloud-init is not known
// cannot get a new seed; nothing is written.
func TestReseed_unknownUserDataIsRefusedFirst(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.calllog = nil
	ch := reseed("")
	ch.UserData, ch.UserDataKnown = nil, false
	err := h.b.Update(h.ctx, testID, ch)
	assertClass(t, err, pveapi.Permanent)
	if got := mutating(h.f); len(got) != 0 {
		t.Errorf("writes: %v", got)
	}
	if !strings.Contains(err.Error(), "cloud_init") {
		t.Errorf("the error does not say what to set: %v", err)
	}
}

// TestSeedGen: the names of the generations and what parses them.
func TestSeedGen(t *testing.T) {
	for gen, want := range map[int]string{1: testName + "-" + testUID + "-seed.iso", 2: testName + "-" + testUID + "-2-seed.iso", 12: testName + "-" + testUID + "-12-seed.iso"} {
		if got := seedFileGen(testName, testUID, gen); got != want {
			t.Errorf("generation %d: %q, want %q", gen, got, want)
		}
		n, u, g, ok := parseSeedGen(want)
		if !ok || n != testName || u != testUID || g != gen {
			t.Errorf("parseSeedGen(%q) = %q %q %d %v", want, n, u, g, ok)
		}
		if !isSeedOf(testName, want) {
			t.Errorf("%q is not a seed of %s", want, testName)
		}
	}
	for _, bad := range []string{testName + "-" + testUID + "-1-seed.iso", testName + "-" + testUID + "-02-seed.iso", testName + "-" + testUID + "-x-seed.iso"} {
		if n, u, _, ok := parseSeedGen(bad); ok && n == testName && u == testUID {
			t.Errorf("%q parses as a generation of %s", bad, testName)
		}
	}
	if got := instanceIDOf(testName, seedFile(testName, testUID)); got != testName {
		t.Errorf("first generation's instance-id %q", got)
	}
}

// TestReseed_networkChangeRewritesTheMarkLines: a static address set in place rewrites the
// mark's static and network-digest lines (what an import reads back) in the swap's config
// write, keeps the note after the mark, and puts the network-config in the new seed; the
// static address removed again drops both lines.
func TestReseed_networkChangeRewritesTheMarkLines(t *testing.T) {
	h := newHarness(t)
	var built []nocloud.Seed
	h.b.buildSeed = func(s nocloud.Seed) ([]byte, error) { built = append(built, s); return []byte("ISO"), nil }
	h.ourRunningVM(testVMID0, testName)
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["description"] += "\n\nowned by team edge" })
	ch := reseed("#cloud-config\n")
	ch.Network = &NetworkConfig{Static: testStatic}
	if err := h.b.Update(h.ctx, testID, ch); err != nil {
		t.Fatal(err)
	}
	desc := h.f.vm(testVMID0).Config["description"]
	x := ParseMarkExtra(desc)
	if x.Static == nil || x.Static.Address != testStatic.Address || x.NetworkDigest != NetworkDigest(ch.Network) {
		t.Errorf("mark after the static address: static %v, network digest %q:\n%s", x.Static, x.NetworkDigest, desc)
	}
	if NoteOf(desc) != "owned by team edge" || ParseMark(desc).UID != testUID {
		t.Errorf("the note or the mark changed:\n%s", desc)
	}
	if len(built) != 1 || built[0].NetworkConfig == nil || built[0].InstanceID != testName+"-"+testUID+"-2" {
		t.Fatalf("seeds built: %+v", built)
	}
	ch.Network = nil
	if err := h.b.Update(h.ctx, testID, ch); err != nil {
		t.Fatal(err)
	}
	if x := ParseMarkExtra(h.f.vm(testVMID0).Config["description"]); x.Static != nil || x.NetworkDigest != "" {
		t.Errorf("static lines left after the static address was removed: %+v", x)
	}
}

// TestReseed_rebuiltSeedKeepsItsInstanceID: a later generation's seed found missing before a
// start is rebuilt with its own instance-id, not the first one's: the guest sees no new
// instance.
func TestReseed_rebuiltSeedKeepsItsInstanceID(t *testing.T) {
	h := newHarness(t)
	var built []nocloud.Seed
	h.b.buildSeed = func(s nocloud.Seed) ([]byte, error) { built = append(built, s); return []byte("ISO"), nil }
	h.ourRunningVM(testVMID0, testName)
	if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\n")); err != nil {
		t.Fatal(err)
	}
	// A destroy that failed after deleting the seed: the VM stopped, its seed gone.
	h.f.mutate(testVMID0, func(v *fakeVM) { v.Status, v.QMP = "stopped", "" })
	h.f.mu.Lock()
	delete(h.f.isos, "pv1-1/"+fakeISOStorage+"/"+seedVolID(fakeISOStorage, seedFileGen(testName, testUID, 2)))
	h.f.mu.Unlock()
	built = nil
	if err := h.b.Update(h.ctx, testID, withUID(Changes{Start: true, UserData: []byte("#cloud-config\n"), UserDataKnown: true})); err != nil {
		t.Fatal(err)
	}
	if len(built) != 1 || built[0].InstanceID != testName+"-"+testUID+"-2" {
		t.Fatalf("rebuilt seeds %+v, want generation 2's instance-id", built)
	}
	if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(2)}) {
		t.Errorf("seeds %v", got)
	}
}

// TestReseed_destroyAfterAnInterruptedFirstSwap: the first swap cut off after its upload
// (the VM still on its first seed, generation 2 uploaded), then the resource destroyed:
// with SeedSwaps (cloud_init_change = "restart") generation 2 goes with the VM.
func TestReseed_destroyAfterAnInterruptedFirstSwap(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	onSwapWrite(h, func(ctx context.Context, _ fakeCall) error { cancel(); return ctx.Err() })
	if err := h.b.Update(ctx, testID, reseed("#cloud-config\n")); err == nil {
		t.Fatal("the interrupted update succeeded")
	}
	h.f.hooks = map[string][]func(context.Context, fakeCall) error{}
	if got := h.f.seeds(); len(got) != 2 {
		t.Fatalf("seeds %v, want both generations", got)
	}
	if err := h.b.DeleteVM(h.ctx, testID, DeleteOptions{Node: "pv1-1", UID: testUID, Seed: seedVolID(fakeISOStorage, seedFile(testName, testUID)), SeedSwaps: true}); err != nil {
		t.Fatal(err)
	}
	if got := h.f.seeds(); len(got) != 0 {
		t.Errorf("seeds left after the destroy: %v", got)
	}
}

// TestReseed_configWriteLandedButItsAnswerLost: the config write that names the new seed
// lands, but its answer is lost and the VM cannot be read back (an interrupt, or a read
// that fails): the new seed is kept, as the VM names it, and the error says the write may
// have landed. The next swap deletes the generation ide2 no longer names.
func TestReseed_configWriteLandedButItsAnswerLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(h *harness, cancel context.CancelFunc)
	}{
		{"interrupted", func(h *harness, cancel context.CancelFunc) {
			onSwapWrite(h, func(ctx context.Context, c fakeCall) error {
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["ide2"] = c.Args["ide2"] })
				cancel()
				return ctx.Err()
			})
		}},
		{"answer lost, read back fails", func(h *harness, _ context.CancelFunc) {
			onSwapWrite(h, func(_ context.Context, c fakeCall) error {
				h.f.mutate(testVMID0, func(v *fakeVM) { v.Config["ide2"] = c.Args["ide2"] })
				h.f.failNext("VMConfig", fixtureErr("err_596"))
				return fixtureErr("err_596")
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ourRunningVM(testVMID0, testName)
			ctx, cancel := context.WithCancel(h.ctx)
			defer cancel()
			tc.fail(h, cancel)
			err := h.b.Update(ctx, testID, reseed("#cloud-config\n"))
			if err == nil {
				t.Fatal("the update succeeded")
			}
			assertContains(t, err.Error(), "may have landed")
			assertContains(t, err.Error(), seedFileGen(testName, testUID, 2))
			if got := h.f.vm(testVMID0).Config["ide2"]; !strings.Contains(got, seedFileGen(testName, testUID, 2)) {
				t.Fatalf("ide2 %q, want generation 2", got)
			}
			if got := h.f.seeds(); !slices.Contains(got, seedVolOf(2)) {
				t.Errorf("seeds %v: the seed ide2 names was deleted", got)
			}
			// The next swap (the plan's swap back) converges: one seed, the one ide2 names.
			h.f.hooks = map[string][]func(context.Context, fakeCall) error{}
			if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\n")); err != nil {
				t.Fatal(err)
			}
			if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(3)}) {
				t.Errorf("seeds %v after the next swap, want only %s", got, seedVolOf(3))
			}
		})
	}
}

// TestReseed_killedSwapLeavesASign: the swap records itself in the mark before it touches
// the storage (MarkKeySeedSwap) and drops the line in the write that names the new seed. A
// swap cut off in between (a kill: nothing runs after it) leaves the line, and SwapLeftovers
// finds the new seed that ide2 does not name; a swap that ran through, or failed and
// cleaned up, leaves neither. The next swap deletes what the killed one left.
func TestReseed_killedSwapLeavesASign(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	onSwapWrite(h, func(ctx context.Context, _ fakeCall) error { cancel(); return ctx.Err() })
	if err := h.b.Update(ctx, testID, reseed("#cloud-config\n")); err == nil {
		t.Fatal("the cut-off update succeeded")
	}
	h.f.hooks = map[string][]func(context.Context, fakeCall) error{}
	vm, err := h.b.Get(h.ctx, testID, GetOptions{UID: testUID})
	if err != nil {
		t.Fatal(err)
	}
	if vm.MarkExtra.SeedSwap != "2" {
		t.Errorf("mark %q: want the swap to generation 2 recorded", h.f.vm(testVMID0).Config["description"])
	}
	left, err := h.b.SwapLeftovers(h.ctx, vm, testUID)
	if want := seedVolID(fakeISOStorage, seedFileGen(testName, testUID, 2)); err != nil || !slices.Equal(left, []string{want}) {
		t.Errorf("SwapLeftovers %v (%v), want [%s]", left, err, want)
	}
	if left, _ := h.b.SwapLeftovers(h.ctx, vm, "7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35"); len(left) != 0 {
		t.Errorf("another uid's leftovers: %v", left)
	}
	if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\n")); err != nil {
		t.Fatal(err)
	}
	vm, err = h.b.Get(h.ctx, testID, GetOptions{UID: testUID})
	if err != nil {
		t.Fatal(err)
	}
	if vm.MarkExtra.SeedSwap != "" || vm.MarkExtra.UserDataDigest != swapDigest {
		t.Errorf("mark %q after the swap: want no swap line and the new digest", h.f.vm(testVMID0).Config["description"])
	}
	if got := h.f.seeds(); !slices.Equal(got, []string{seedVolOf(2)}) {
		t.Errorf("seeds %v, want generation 2 alone", got)
	}
	h.f.calllog = nil
	if left, err := h.b.SwapLeftovers(h.ctx, vm, testUID); err != nil || len(left) != 0 || len(h.f.calllog) != 0 {
		t.Errorf("no swap line: SwapLeftovers %v (%v) with calls %v, want nothing and no request", left, err, h.f.calllog)
	}

	// A swap whose config write is refused deletes its new seed and drops the line.
	onSwapWrite(h, func(context.Context, fakeCall) error { return fixtureErr("err_596") })
	if err := h.b.Update(h.ctx, testID, reseed("#cloud-config\n# v3\n")); err == nil {
		t.Fatal("the refused update succeeded")
	}
	if d := h.f.vm(testVMID0).Config["description"]; strings.Contains(d, MarkKeySeedSwap) {
		t.Errorf("mark %q after a failed swap that cleaned up: the swap line is left", d)
	}
}
