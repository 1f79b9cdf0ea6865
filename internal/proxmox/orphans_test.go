package proxmox

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// goneSeed is a seed this provider names (<name>-<uid>-seed.iso) whose VM is gone.
const goneSeed = "proxy-seeds:iso/proxy-gone-5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6-seed.iso"

// orphanFake: storage_content_iso.json on every node (the operator's <name>-seed.iso ISOs:
// one whose VM, proxy-reconaaaaaaaaaaa, is in cluster_resources.json, and one without a VM;
// neither is a seed this provider names, so neither is ever an orphan), goneSeed, plus per
// node extras.
func orphanFake(t *testing.T, extra map[string][]pveapi.StorageVolume) *checkFake {
	t.Helper()
	f := newCheckFake(t)
	var base []pveapi.StorageVolume
	ckData(t, "storage_content_iso", &base)
	base = append(base, pveapi.StorageVolume{VolID: goneSeed, Format: "iso", Size: 47104, CTime: base[0].CTime, Content: "iso"})
	f.content = func(_ context.Context, node, storage, content string) ([]pveapi.StorageVolume, error) {
		if storage != "proxy-seeds" || content != "iso" {
			t.Errorf("content of %s/%s listed, want proxy-seeds/iso", storage, content)
		}
		if f.n("ClusterResources") != 0 {
			t.Error("the VM listing was taken before the seed listing")
		}
		return append(append([]pveapi.StorageVolume(nil), extra[node]...), base...), nil
	}
	return f
}

func TestOrphanSeeds_seedWithoutVMIsOrphan(t *testing.T) {
	t.Parallel()
	f := orphanFake(t, map[string][]pveapi.StorageVolume{
		"pv1-2": {
			{VolID: "proxy-seeds:iso/debian-13.iso", Size: 1 << 30},                                        // not a seed
			{VolID: "proxy-seeds:iso/homeassistant-seed.iso", Size: 4096},                                  // a VM (foreign) has the name
			{VolID: "proxy-seeds:iso/-seed.iso", Size: 1},                                                  // no name
			{VolID: "proxy-seeds:iso/netboot-seed.iso", Size: 2048},                                        // no uid: another tool's ISO
			{VolID: "proxy-seeds:iso/proxy-zzz-0f1e2d3c-4b5a-4968-8776-655443322110-seed.iso", Size: 2048}, // orphan, sorted last
		},
	})
	got, err := ckBackend(f, "pv1-2", "pv1-1").OrphanSeeds(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The age comes from the volume's ctime (storage_content_iso.json); the extra entry
	// gives none.
	ctime := time.Date(2026, 9, 19, 8, 12, 0, 0, time.UTC)
	want := []Seed{
		{Node: "pv1-2", VolID: goneSeed, Name: "proxy-gone", UID: "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6", Size: 47104, CreatedAt: ctime},
		{Node: "pv1-2", VolID: "proxy-seeds:iso/proxy-zzz-0f1e2d3c-4b5a-4968-8776-655443322110-seed.iso", Name: "proxy-zzz", UID: "0f1e2d3c-4b5a-4968-8776-655443322110", Size: 2048},
		{Node: "pv1-1", VolID: goneSeed, Name: "proxy-gone", UID: "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6", Size: 47104, CreatedAt: ctime},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("OrphanSeeds =\n%+v\nwant\n%+v", got, want)
	}
	if f.n("StorageContent pv1-1") != 1 || f.n("StorageContent pv1-2") != 1 || f.n("ClusterResources") != 1 {
		t.Errorf("requests %v, want one content listing per node and one VM listing", f.calls)
	}
}

func TestOrphanSeeds_unreadableNodeIsPartial(t *testing.T) {
	t.Parallel()
	f := orphanFake(t, nil)
	inner := f.content
	f.content = func(ctx context.Context, node, storage, content string) ([]pveapi.StorageVolume, error) {
		if node == "pv1-2" {
			return nil, ckAPIErr("err_595")
		}
		return inner(ctx, node, storage, content)
	}
	got, err := ckBackend(f, "pv1-1", "pv1-2").OrphanSeeds(context.Background())
	var skipped *SkippedNodesError
	if !errors.As(err, &skipped) || len(skipped.Nodes) != 1 || skipped.Nodes[0].Node != "pv1-2" {
		t.Fatalf("error %v, want pv1-2 skipped", err)
	}
	if len(got) != 1 || got[0].Node != "pv1-1" {
		t.Errorf("seeds %+v, want pv1-1's orphan", got)
	}
}

// TestOrphanSeeds_unprovedWithoutAFullView: with a token that lacks VM.Audit on /vms,
// propagated (decision: orphan-visibility), each seed says it may be a hidden VM's, naming
// the privilege, from one privilege read; a cleanup keeps such seeds. No seed to report: no
// read.
func TestOrphanSeeds_unprovedWithoutAFullView(t *testing.T) {
	t.Parallel()
	f := orphanFake(t, nil)
	f.perms = func(_ context.Context, path string) (map[string]bool, error) {
		if path == "/pool/proxies" {
			return map[string]bool{"VM.Audit": false}, nil
		}
		return map[string]bool{}, nil
	}
	got, err := ckBackend(f, "pv1-1", "pv1-2").OrphanSeeds(context.Background())
	if err != nil || len(got) != 2 {
		t.Fatalf("OrphanSeeds = %+v, %v; want the orphan on each node", got, err)
	}
	for _, s := range got {
		if !strings.Contains(s.Unproved, "lacks "+SeedVisibilityPrivilege+" (propagated)") {
			t.Errorf("seed %s: Unproved %q", s.VolID, s.Unproved)
		}
	}
	if n := f.n("Permissions /vms"); n != 1 {
		t.Errorf("%d privilege reads on /vms, want 1", n)
	}

	none := newCheckFake(t)
	none.content = func(context.Context, string, string, string) ([]pveapi.StorageVolume, error) { return nil, nil }
	if got, err := ckBackend(none).OrphanSeeds(context.Background()); err != nil || len(got) != 0 || none.n("Permissions /vms") != 0 {
		t.Errorf("no seed: %+v, %v, %d privilege reads; want none", got, err, none.n("Permissions /vms"))
	}
}

func TestOrphanSeeds_listingFailureFailsTheCall(t *testing.T) {
	t.Parallel()
	f := orphanFake(t, nil)
	f.resources = func(context.Context) ([]pveapi.Resource, error) { return nil, ckAPIErr("err_596") }
	got, err := ckBackend(f).OrphanSeeds(context.Background())
	var skipped *SkippedNodesError
	if err == nil || got != nil || errors.As(err, &skipped) {
		t.Errorf("OrphanSeeds = %v, %v; want a plain error", got, err)
	}
}

// The VM listing is fresh even right after List cached one: a VM created between the two
// must not make its own seed look orphaned.
func TestOrphanSeeds_listingIsFreshAfterList(t *testing.T) {
	t.Parallel()
	f := newCheckFake(t)
	b := ckBackend(f)
	if _, err := b.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.OrphanSeeds(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.n("ClusterResources"); n != 2 {
		t.Errorf("%d listings, want 2", n)
	}
}

func TestOrphanSeeds_expiredContextReturnsPromptly(t *testing.T) {
	t.Parallel()
	f := newCheckFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var (
		got []Seed
		err error
	)
	ckWithin(t, 5*time.Second, func() { got, err = ckBackend(f, "a", "b").OrphanSeeds(ctx) })
	if !errors.Is(err, context.Canceled) || got != nil {
		t.Errorf("OrphanSeeds = %v, %v; want canceled", got, err)
	}
}

func TestSeedName_table(t *testing.T) {
	t.Parallel()
	for volid, want := range map[string]string{
		"proxy-seeds:iso/proxy-a-seed.iso":                 "proxy-a",
		"local:iso/web-seed.iso":                           "web",
		"proxy-seeds:iso/proxy-a.iso":                      "",
		"proxy-seeds:iso/-seed.iso":                        "",
		"proxy-seeds:vztmpl/x-seed.iso":                    "",
		"proxy-seeds:iso/sub/x-seed.iso":                   "",
		"no-colon-seed.iso":                                "",
		"proxy-seeds:iso/proxy-a-seed.iso2":                "",
		"proxy-seeds:iso/proxy-a-" + testUID + "-seed.iso": "proxy-a/" + testUID,
		"proxy-seeds:iso/" + testUID + "-seed.iso":         testUID,
	} {
		name, uid, ok := seedName(volid)
		got := name
		if uid != "" {
			got += "/" + uid
		}
		if got != want || ok != (want != "") {
			t.Errorf("seedName(%q) = %q, %v; want %q", volid, got, ok, want)
		}
	}
}

// TestOrphanSeeds_attachedElsewhereIsNoOrphan: a seed named like ours whose VM is gone, but
// that a VM of another name has on a drive (a rescue VM's ide3, a sata CD-ROM), is not an
// orphan: the report does not list it and the cleanup, reading the same listing, keeps it.
// Only the seed no VM has is listed and deleted.
// The drive value takes each form Proxmox reads (driveVolume): the volume as the keyless
// first option, or as file= or volume= (its alias) in any position, as a hand-edited
// config keeps them.
func TestOrphanSeeds_attachedElsewhereIsNoOrphan(t *testing.T) {
	for _, tc := range seedDriveForms([]string{"ide3", "sata0"}) {
		drive := tc.drive
		t.Run(tc.name, func(t *testing.T) {
			h := cleanupHarness(t)
			used, free := seedFile("proxy-renamed", otherUID), seedFile("proxy-gone", prevUID)
			h.f.putISO("pv1-1", fakeISOStorage, used, []byte("attached elsewhere"))
			h.f.putISO("pv1-1", fakeISOStorage, free, []byte("orphan"))
			h.f.addVM(&fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1", Config: map[string]string{
				drive: tc.value(seedVolID(fakeISOStorage, used)),
			}})
			seeds, err := h.b.OrphanSeeds(h.ctx)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, s := range seeds {
				listed = append(listed, s.VolID)
			}
			if slices.Contains(listed, seedVolID(fakeISOStorage, used)) || !slices.Contains(listed, seedVolID(fakeISOStorage, free)) {
				t.Errorf("orphans %v: want %s listed and not %s (VM 100100 has it on %s)", listed, free, used, drive)
			}
			if _, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: time.Hour, Seeds: true}, nil); err != nil {
				t.Fatal(err)
			}
			if _, ok := h.f.iso("pv1-1", fakeISOStorage, used); !ok {
				t.Errorf("the seed VM 100100 has on %s was deleted", drive)
			}
			if _, ok := h.f.iso("pv1-1", fakeISOStorage, free); ok {
				t.Errorf("the orphan %s was kept", free)
			}
		})
	}
}

// seedDriveForm is a drive slot and a way to write a volume on it.
type seedDriveForm struct {
	name, drive string
	value       func(vol string) string
}

// seedDriveForms returns, for each drive slot, the drive value forms qemu-server reads as
// the same volume (PVE/QemuServer/Drive.pm: file is the default key, volume its alias):
// keyless first, file= first, file= last, volume= first.
func seedDriveForms(drives []string) []seedDriveForm {
	var out []seedDriveForm
	for _, d := range drives {
		out = append(out,
			seedDriveForm{d + "/keyless", d, func(vol string) string { return vol + ",media=cdrom" }},
			seedDriveForm{d + "/file_first", d, func(vol string) string { return "file=" + vol + ",media=cdrom" }},
			seedDriveForm{d + "/file_last", d, func(vol string) string { return "media=cdrom,file=" + vol }},
			seedDriveForm{d + "/volume", d, func(vol string) string { return "volume=" + vol + ",media=cdrom" }},
		)
	}
	return out
}

// TestDriveVolume_table: the volume of a drive value in each form Proxmox reads.
func TestDriveVolume_table(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"local:iso/a.iso,media=cdrom", "local:iso/a.iso"},
		{"file=local:iso/a.iso,media=cdrom", "local:iso/a.iso"},
		{"media=cdrom,file=local:iso/a.iso", "local:iso/a.iso"},
		{"volume=local:iso/a.iso,media=cdrom", "local:iso/a.iso"},
		{"media=cdrom,local:iso/a.iso", "local:iso/a.iso"},
		{"none,media=cdrom", "none"},
		{"local-lvm:vm-100-disk-0,size=8G", "local-lvm:vm-100-disk-0"},
		{"media=cdrom", ""},
		{"", ""},
	} {
		if got := driveVolume(tc.in); got != tc.want {
			t.Errorf("driveVolume(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestOrphanSeeds_noOtherVMReadWithoutAnOrphan: when every seed is used by a VM of its
// name, no other VM's config is read: the scan of every VM's drives is paid only when a
// seed is left to judge.
func TestOrphanSeeds_noOtherVMReadWithoutAnOrphan(t *testing.T) {
	h := newHarness(t)
	h.ourRunningVM(testVMID0, testName) // ide2: its own seed
	h.f.addVM(&fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1", Config: map[string]string{"ide3": "local:iso/debian.iso,media=cdrom"}})
	h.f.calllog = nil
	seeds, err := h.b.OrphanSeeds(h.ctx)
	if err != nil || len(seeds) != 0 {
		t.Fatalf("orphans %+v, err %v; want none", seeds, err)
	}
	for _, c := range h.f.log() {
		if (c.Method == "VMConfig" || c.Method == "VMPending") && c.VMID != testVMID0 {
			t.Errorf("config of VMID %d read, though every seed is used by a VM of its name", c.VMID)
		}
	}
}

// TestVMSeed_explicitKeyForms: a VM's own seed on ide2 is its seed whichever form the drive
// value takes (its VM keeps it, Get reports it, Delete deletes it with the VM).
func TestVMSeed_explicitKeyForms(t *testing.T) {
	vol := seedVolID(fakeISOStorage, seedFile(testName, testUID))
	for _, tc := range seedDriveForms([]string{"ide2"}) {
		v, ok := vmSeed(testName, map[string]string{"ide2": tc.value(vol)})
		if !ok || v.volid() != vol {
			t.Errorf("%s: vmSeed = %v, %v; want %s", tc.name, v.volid(), ok, vol)
		}
	}
}
