package proxmox

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// TestSeedUse_addPendingDrives_table: a VM uses a volume that its current config or its
// pending section names (GET .../pending, decision: seed-in-use): a drive whose removal is
// pending (an ide or sata drive of a running VM, which Proxmox keeps until the restart), a
// drive whose replacement is pending, and a drive only the pending section adds. A drive
// both name alike is named plainly; a volume that is no ISO is not recorded.
func TestSeedUse_addPendingDrives_table(t *testing.T) {
	seed := seedVolID(fakeISOStorage, seedFile("proxy-renamed", otherUID))
	other := seedVolID(fakeISOStorage, seedFile("proxy-gone", prevUID))
	const pending = " until it restarts (its removal is pending)"
	for _, tc := range []struct {
		name string
		p    pveapi.PendingConfig
		want map[string]string // volume -> drive named in "VM 100100 (rescue) as <drive>"
	}{
		{"removal pending", pveapi.PendingConfig{
			Current: map[string]string{"name": "rescue", "ide2": seed + ",media=cdrom"},
			Delete:  map[string]bool{"ide2": false},
		}, map[string]string{seed: "ide2" + pending}},
		{"forced removal pending, file= form", pveapi.PendingConfig{
			Current: map[string]string{"name": "rescue", "sata1": "media=cdrom,file=" + seed},
			Delete:  map[string]bool{"sata1": true},
		}, map[string]string{seed: "sata1" + pending}},
		{"replacement pending", pveapi.PendingConfig{
			Current: map[string]string{"name": "rescue", "ide2": seed + ",media=cdrom"},
			Pending: map[string]string{"ide2": other + ",media=cdrom"},
		}, map[string]string{seed: "ide2" + pending, other: "ide2"}},
		{"addition pending", pveapi.PendingConfig{
			Current: map[string]string{"name": "rescue"},
			Pending: map[string]string{"ide3": "volume=" + seed + ",media=cdrom"},
		}, map[string]string{seed: "ide3"}},
		{"unchanged", pveapi.PendingConfig{
			Current: map[string]string{"name": "rescue", "ide2": seed + ",media=cdrom"},
			Pending: map[string]string{"cores": "4"},
		}, map[string]string{seed: "ide2"}},
		{"no ISO", pveapi.PendingConfig{
			Current: map[string]string{"name": "rescue", "scsi0": "local-lvm:vm-100100-disk-0,size=4G", "ide2": "none,media=cdrom"},
			Delete:  map[string]bool{"ide2": false},
		}, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := seedUse{drives: map[string]string{}}
			u.addPendingDrives(pveapi.Resource{VMID: 100100, Node: "pv1-1", Name: "rescue"}, tc.p)
			got := map[string]string{}
			for k, v := range u.drives {
				if vol, ok := strings.CutPrefix(k, "|"); ok {
					got[vol], _ = strings.CutPrefix(v, "VM 100100 (rescue) as ")
					if u.drives["pv1-1|"+vol] != v {
						t.Errorf("%s: node entry %q, want %q", vol, u.drives["pv1-1|"+vol], v)
					}
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("drives %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOrphanSeeds_pendingRemovalIsNoOrphan: a running VM of another name whose ide2 removal
// waits for its restart still has the seed: GET .../config no longer shows it, GET
// .../pending does. The seed is reported attached, and the cleanup keeps it; the orphan
// beside it goes. One read per VM, as before.
func TestOrphanSeeds_pendingRemovalIsNoOrphan(t *testing.T) {
	h := cleanupHarness(t)
	used, free := seedFile("proxy-renamed", otherUID), seedFile("proxy-gone", prevUID)
	h.f.putISO("pv1-1", fakeISOStorage, used, []byte("attached elsewhere"))
	h.f.putISO("pv1-1", fakeISOStorage, free, []byte("orphan"))
	h.f.addVM(&fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1", Status: "running",
		Config:        map[string]string{"ide2": seedVolID(fakeISOStorage, used) + ",media=cdrom"},
		PendingDelete: map[string]bool{"ide2": false}})
	h.f.calllog = nil
	seeds, err := h.b.OrphanSeeds(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, s := range seeds {
		listed = append(listed, s.VolID)
	}
	if !slices.Equal(listed, []string{seedVolID(fakeISOStorage, free)}) {
		t.Errorf("orphans %v, want %s alone", listed, free)
	}
	h.f.mu.Lock()
	vms := 0
	for _, v := range h.f.vms {
		if v.Type == "qemu" {
			vms++
		}
	}
	h.f.mu.Unlock()
	if n := h.f.calls("VMPending"); n != vms || h.f.calls("VMConfig") != 0 {
		t.Errorf("%d pending reads and %d config reads, want one read per VM (%d)", n, h.f.calls("VMConfig"), vms)
	}
	var events []string
	if _, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: 0, Seeds: true}, func(e CleanEvent) { events = append(events, e.String()) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, used); !ok {
		t.Error("the seed VM 100100 still has until its restart was deleted")
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, free); ok {
		t.Error("the orphan was kept")
	}
	assertContains(t, strings.Join(events, "\n"), "attached to VM 100100 (rescue) as ide2 until it restarts (its removal is pending)")
}

// TestSeedInUse_goneDestroyKeepsASeedWhoseRemovalIsPending: the destroy of a gone VM asks
// the same scan (readSeedHolders), so its recorded seed, which a running VM of another name
// still has on ide2 until its restart, is left.
func TestSeedInUse_goneDestroyKeepsASeedWhoseRemovalIsPending(t *testing.T) {
	h := newHarness(t, "pv1-1")
	h.f.putISO("pv1-1", fakeISOStorage, seedFile(testName, testUID), []byte("seed"))
	h.f.addVM(&fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1", Status: "running",
		Config:        map[string]string{"ide2": seedVolID(fakeISOStorage, seedFile(testName, testUID)) + ",media=cdrom"},
		PendingDelete: map[string]bool{"ide2": false}})
	if err := h.del(h.ctx, "pv1-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, seedFile(testName, testUID)); !ok {
		t.Error("the seed VM 100100 still has until its restart was deleted")
	}
	if n := h.f.calls("DeleteVolume"); n != 0 {
		t.Errorf("%d volume deletes", n)
	}
}

// TestOrphanSeeds_snapshotSeedIsNoOrphan: a seed only a snapshot section names (the VM's
// current ide2 moved on) is in use: a rollback makes it the VM's again. Every VM read has
// its snapshots listed (one list each, whether its config has a parent or not), and each
// snapshot is read once.
func TestOrphanSeeds_snapshotSeedIsNoOrphan(t *testing.T) {
	h := cleanupHarness(t)
	used, free := seedFile("proxy-renamed", otherUID), seedFile("proxy-gone", prevUID)
	h.f.putISO("pv1-1", fakeISOStorage, used, []byte("in a snapshot"))
	h.f.putISO("pv1-1", fakeISOStorage, free, []byte("orphan"))
	h.f.addVM(&fakeVM{VMID: 100100, Name: "rescue", Node: "pv1-1",
		Config: map[string]string{"ide2": "none,media=cdrom", "parent": "second"},
		Snapshots: map[string]map[string]string{
			"first":  {"name": "rescue", "ide2": "none,media=cdrom"},
			"second": {"name": "rescue", "parent": "first", "sata0": "file=" + seedVolID(fakeISOStorage, used) + ",media=cdrom"},
		}})
	h.f.calllog = nil
	var events []string
	if _, err := h.b.CleanOrphans(h.ctx, CleanOptions{Grace: 0, Seeds: true}, func(e CleanEvent) { events = append(events, e.String()) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, used); !ok {
		t.Error("the seed snapshot second of VM 100100 names was deleted")
	}
	if _, ok := h.f.iso("pv1-1", fakeISOStorage, free); ok {
		t.Error("the orphan was kept")
	}
	assertContains(t, strings.Join(events, "\n"), "attached to VM 100100 (rescue) as sata0 in its snapshot second")
	for _, c := range h.f.log() {
		if c.Method == "VMSnapshotConfig" && c.VMID != 100100 {
			t.Errorf("%s of VMID %d, which has no snapshots", c.Method, c.VMID)
		}
	}
	if h.f.calls("VMSnapshots") != h.f.calls("VMPending") || h.f.calls("VMSnapshotConfig") != 2 {
		t.Errorf("%d snapshot lists for %d configs read, %d snapshot reads; want one list per config and 2 reads",
			h.f.calls("VMSnapshots"), h.f.calls("VMPending"), h.f.calls("VMSnapshotConfig"))
	}
}
