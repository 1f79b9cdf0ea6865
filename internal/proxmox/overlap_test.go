package proxmox

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// holdTaskUntil makes every status poll of a task of type typ wait until cond holds (or
// two seconds pass, the guard for code that never makes it hold), and reports whether
// cond held while such a task was still being waited on.
func holdTaskUntil(h *harness, typ string, cond func() bool) *atomic.Bool {
	var held atomic.Bool
	h.f.onCall("TaskStatus", func(ctx context.Context, c fakeCall) error {
		if !strings.Contains(c.Args["upid"], ":"+typ+":") {
			return nil
		}
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if cond() {
				held.Store(true)
				return nil
			}
		}
		return nil
	})
	return &held
}

func (h *harness) seedUploaded() bool { return len(h.f.seeds()) > 0 }

// The seed upload runs while the clone task runs: the seed is on the storage before the
// clone task is seen to end.
func TestCreate_seedUploadOverlapsTheCloneTask(t *testing.T) {
	h := newHarness(t)
	h.f.taskPolls = 1
	overlapped := holdTaskUntil(h, "qmclone", h.seedUploaded)
	h.create(h.spec())
	if !overlapped.Load() {
		t.Error("the seed was not uploaded while the clone task ran")
	}
	h.assertProvisioned(testVMID0)
	// The config that names the seed is written after the upload's task ended.
	uploadDone, config := -1, -1
	for i, c := range h.f.log() {
		if c.Method == "TaskStatus" && strings.Contains(c.Args["upid"], ":imgcopy:") {
			uploadDone = i
		}
		if c.Method == "SetVMConfig" && config < 0 {
			config = i
		}
	}
	if uploadDone < 0 || config < uploadDone {
		t.Errorf("config written at call %d, the upload's task last polled at call %d", config, uploadDone)
	}
}

// A clone whose task fails after the seed was uploaded leaves no seed: the clone removed
// its VM, and the seed is deleted before Create returns. The retry then creates one VM.
func TestCreate_failedCloneAfterTheUploadLeavesNoSeed(t *testing.T) {
	h := newHarness(t)
	h.f.failTask("qmclone", "clone failed: no space left on device")
	overlapped := holdTaskUntil(h, "qmclone", h.seedUploaded)
	var allocated []ID
	_, err := h.b.Create(h.ctx, h.spec(), func(id ID, _ string) { allocated = append(allocated, id) })
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "no space left on device")
	if !overlapped.Load() {
		t.Fatal("the seed was not uploaded before the clone task failed")
	}
	if s := h.f.seeds(); len(s) != 0 {
		t.Errorf("seed ISOs left after the failed clone: %v", s)
	}
	if n := h.f.vmCount(); n != 0 {
		t.Errorf("%d VMs after a failed clone, want 0", n)
	}
	if len(allocated) == 0 || allocated[len(allocated)-1].VMID != testVMID0 {
		t.Errorf("onAllocated calls %v, want the clone's VMID saved", allocated)
	}
	if h.f.calls("SetVMConfig")+h.f.calls("Start") != 0 {
		t.Error("the failed clone was configured or started")
	}

	h.create(h.spec())
	if n := h.f.vmCount(); n != 1 {
		t.Errorf("%d VMs after the retry, want 1", n)
	}
	h.assertProvisioned(testVMID0)
}

// When the seed cannot be deleted after a failed clone, the error says so and where it is.
func TestCreate_failedCloneSeedDeleteFailureIsReported(t *testing.T) {
	h := newHarness(t)
	h.f.failTask("qmclone", "clone failed: no space left on device")
	holdTaskUntil(h, "qmclone", h.seedUploaded)
	h.f.failNext("DeleteVolume", fixtureErr("err_595"))
	err := h.createFails(h.spec())
	assertClass(t, err, pveapi.Transient)
	assertContains(t, err.Error(), "no space left on device", seedFile(testName, testUID), "could not be deleted", "orphan_seeds")
}

// An upload that fails while the clone succeeds fails the create after the clone task
// ended: the VM exists, unlocked, its VMID saved, never configured or started, no seed
// left. The retry adopts it and finishes: one VM.
func TestCreate_failedUploadAfterTheCloneLeavesTheTrackedVM(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(h *harness)
	}{
		{"upload task fails", func(h *harness) { h.f.failTask("imgcopy", fixtureExit("task_status_stopped_error")) }},
		{"upload request fails", func(h *harness) { h.f.failNext("UploadISO", fixtureErr("err_596")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.f.taskPolls = 1
			tc.fail(h)
			first := h.spec()
			first.AllocKey, first.UID = testUID, prevUID // the retry is a new create with a uid of its own, on the same probe sequence
			var allocated []ID
			_, err := h.b.Create(h.ctx, first, func(id ID, _ string) { allocated = append(allocated, id) })
			if err == nil {
				t.Fatal("Create succeeded, want the upload's error")
			}
			assertClass(t, err, pveapi.Transient)
			v := h.f.vm(testVMID0)
			switch {
			case v == nil:
				t.Fatal("the cloned VM is gone")
			case v.Lock != "" || v.cloning:
				t.Errorf("Create returned while the clone ran (lock %q)", v.Lock)
			}
			if len(allocated) == 0 || allocated[len(allocated)-1].VMID != testVMID0 {
				t.Errorf("onAllocated calls %v, want the VM's VMID saved", allocated)
			}
			if h.f.calls("SetVMConfig")+h.f.calls("Start") != 0 {
				t.Error("configured or started without its seed")
			}
			if s := h.f.seeds(); len(s) != 0 {
				t.Errorf("seed ISOs after the failed upload: %v", s)
			}

			h.f.calllog = nil
			h.create(h.spec())
			if h.f.calls("Clone") != 1 || h.f.calls("Destroy") != 1 {
				t.Error("the retry did not take the VM over (destroyed and cloned afresh)")
			}
			if s := h.f.seeds(); len(s) != 1 || !strings.Contains(s[0], seedFile(testName, testUID)) {
				t.Errorf("seed ISOs after the retry %v, want only the retry's", s)
			}
			if n := h.f.vmCount(); n != 1 {
				t.Errorf("%d VMs after the retry, want 1", n)
			}
			h.assertProvisioned(testVMID0)
		})
	}
}

// A Create cut off while its clone and upload run returns promptly, leaves no upload
// running, and the retry converges on one VM.
func TestCreate_cancelledDuringCloneAndUpload(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(h.ctx)
	var uploads atomic.Int32
	h.f.onCall("UploadISO", func(ctx context.Context, _ fakeCall) error {
		uploads.Add(1)
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	first := h.spec()
	first.AllocKey, first.UID = testUID, prevUID
	_, err := h.b.Create(ctx, first, nil)
	if err == nil {
		t.Fatal("Create succeeded after its context ended")
	}
	if uploads.Load() != 1 {
		t.Fatalf("%d uploads, want 1", uploads.Load())
	}
	h.f.hooks = map[string][]func(context.Context, fakeCall) error{}
	h.f.finishTasks()
	h.create(h.spec())
	if n := h.f.vmCount(); n != 1 {
		t.Errorf("%d VMs after the retry, want 1", n)
	}
	h.assertProvisioned(testVMID0)
}

// The seed delete runs while the stop task runs, and the destroy comes after both ended.
func TestDelete_seedDeleteOverlapsTheStopAndPrecedesTheDestroy(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.taskPolls = 1
	overlapped := holdTaskUntil(h, "qmstop", func() bool { return !h.seedUploaded() })
	var atDestroy struct{ seedGone, stopped bool }
	h.f.onCall("Destroy", func(context.Context, fakeCall) error {
		atDestroy.seedGone = !h.seedUploaded()
		atDestroy.stopped = h.f.vm(testVMID0).Status == "stopped"
		return nil
	})
	if err := h.b.DeleteOwned(h.ctx, testID, "pv1-1", testUID); err != nil {
		t.Fatal(err)
	}
	if !overlapped.Load() {
		t.Error("the seed was not deleted while the stop task ran")
	}
	if !atDestroy.seedGone || !atDestroy.stopped {
		t.Errorf("at the destroy: seed gone %v, VM stopped %v; want both", atDestroy.seedGone, atDestroy.stopped)
	}
	if h.f.vm(testVMID0) != nil || h.seedUploaded() {
		t.Error("the VM or its seed is left")
	}
}

// A stop that fails while the seed delete succeeds fails the call without a destroy: the
// VM stays for the next Delete, which finishes (the missing seed is no error).
func TestDelete_failedStopBesideTheSeedDeleteLeavesTheVM(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName)
	h.f.failTask("qmstop", fixtureExit("task_status_stopped_error"))
	err := h.b.DeleteOwned(h.ctx, testID, "pv1-1", testUID)
	assertClass(t, err, pveapi.Transient)
	if h.f.calls("Destroy") != 0 {
		t.Fatal("destroyed after a failed stop")
	}
	if h.f.vm(testVMID0) == nil {
		t.Fatal("the VM is gone")
	}
	if h.f.calls("DeleteVolume") != 1 {
		t.Errorf("%d seed deletes, want 1 (beside the stop)", h.f.calls("DeleteVolume"))
	}
	if err := h.b.DeleteOwned(h.ctx, testID, "pv1-1", testUID); err != nil {
		t.Fatal(err)
	}
	if h.f.vm(testVMID0) != nil || h.seedUploaded() {
		t.Error("the second Delete left the VM or the seed")
	}
}
