package nocloud

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBuild_touchesNoFile: a build creates no file, not even one it removes again. TMPDIR
// points at an empty directory watched with inotify (every create, open for writing or
// move into it is an event), then at a path under a regular file, where no file can be
// made at all: the ISO library the seed used before staged every file under TMPDIR and
// failed there.
func TestBuild_touchesNoFile(t *testing.T) {
	secret := "#cloud-config\npassword: sentinel-7c1e0b\n"
	s := Seed{Name: "proxy-a", UserData: []byte(secret), VendorData: "#cloud-config\n", InstallGuestAgent: true,
		NetworkConfig: []byte("version: 2\n")}

	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	defer func() { _ = unix.Close(fd) }()
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		t.Skipf("inotify watch: %v", err)
	}
	// The watch works: a file made here is seen (so the check below can fail).
	probe := filepath.Join(dir, "probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n := inotifyEvents(t, fd); n == 0 {
		t.Fatal("inotify saw no event for a file made in the watched directory")
	}
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}
	_ = inotifyEvents(t, fd)

	iso, err := Build(s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if n := inotifyEvents(t, fd); n != 0 {
		t.Errorf("Build made %d file events under TMPDIR", n)
	}
	f, err := Read(iso)
	if err != nil || string(f.UserData) != secret {
		t.Fatalf("read back: %v, user-data %q", err, f.UserData)
	}

	// No file can be made under a regular file: a build that stages fails here.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", filepath.Join(blocker, "tmp"))
	if _, err := os.MkdirTemp("", ""); err == nil {
		t.Fatal("a directory could be made under a regular file: the check below proves nothing")
	}
	if _, err := Build(s); err != nil {
		t.Errorf("Build with an unusable TMPDIR: %v", err)
	}
}

// inotifyEvents drains the queued events and counts them.
func inotifyEvents(t *testing.T, fd int) int {
	t.Helper()
	buf := make([]byte, 64<<10)
	n := 0
	for {
		got, err := unix.Read(fd, buf)
		if err == unix.EAGAIN || got <= 0 {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= got; {
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			off += unix.SizeofInotifyEvent + nameLen
			n++
		}
	}
}

// TestWriteISO_structure checks the bytes the guest's kernel reads (fs/isofs): the
// descriptors, the path tables, the SUSP SP entry first in the root's "." record with a
// continuation holding the Rock Ridge ER entry, and per file an RR entry with the NM flag,
// an NM entry with the exact name and the primary identifier "<name>;1". The read-back
// tests check the same image with the ISO library's reader, which reads names from NM.
func TestWriteISO_structure(t *testing.T) {
	files := []isoFile{{"user-data", []byte("u")}, {"meta-data", bytes.Repeat([]byte("m"), 5000)}, {"vendor-data", nil}, {"network-config", []byte("n")}}
	img, err := writeISO(Label, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(img)%sectorSize != 0 {
		t.Fatalf("image size %d is not whole sectors", len(img))
	}
	sector := func(n int) []byte { return img[n*sectorSize : (n+1)*sectorSize] }
	pvd := sector(pvdSector)
	if pvd[0] != 1 || string(pvd[1:6]) != "CD001" || strings.TrimRight(string(pvd[40:72]), " ") != Label {
		t.Fatalf("primary volume descriptor: type %d id %q label %q", pvd[0], pvd[1:6], pvd[40:72])
	}
	if got := binary.LittleEndian.Uint32(pvd[80:]); int(got)*sectorSize != len(img) {
		t.Errorf("volume space size %d sectors, image %d bytes", got, len(img))
	}
	if term := sector(pvdSector + 1); term[0] != 255 || string(term[1:6]) != "CD001" {
		t.Errorf("no set terminator after the primary descriptor")
	}
	lLoc, mLoc := binary.LittleEndian.Uint32(pvd[140:]), binary.BigEndian.Uint32(pvd[148:])
	if l := sector(int(lLoc)); binary.LittleEndian.Uint32(l[2:]) != rootDirSector {
		t.Errorf("L path table's root extent %d", binary.LittleEndian.Uint32(l[2:]))
	}
	if m := sector(int(mLoc)); binary.BigEndian.Uint32(m[2:]) != rootDirSector {
		t.Errorf("M path table's root extent %d", binary.BigEndian.Uint32(m[2:]))
	}
	if root := pvd[156:190]; binary.LittleEndian.Uint32(root[2:]) != rootDirSector || root[25]&2 == 0 {
		t.Errorf("root directory record in the descriptor: %x", root)
	}

	dir := sector(rootDirSector)
	var recs [][]byte
	for off := 0; off < len(dir) && dir[off] != 0; off += int(dir[off]) {
		recs = append(recs, dir[off:off+int(dir[off])])
	}
	if len(recs) != 2+len(files) {
		t.Fatalf("%d directory records, want %d", len(recs), 2+len(files))
	}
	self := systemUse(recs[0])
	if !bytes.HasPrefix(self, []byte{'S', 'P', 7, 1, 0xBE, 0xEF, 0}) {
		t.Fatalf("the root's \".\" record does not start with the SP entry: %x", self[:min(len(self), 8)])
	}
	ce := entry(self, "CE")
	if ce == nil {
		t.Fatal("no CE entry in the root's \".\" record")
	}
	cont := binary.LittleEndian.Uint32(ce[4:])
	off := binary.LittleEndian.Uint32(ce[12:])
	n := binary.LittleEndian.Uint32(ce[20:])
	er := img[int(cont)*sectorSize+int(off) : int(cont)*sectorSize+int(off+n)]
	if string(er[:2]) != "ER" || string(er[8:8+int(er[4])]) != rripID {
		t.Errorf("continuation area: %q, want the ER entry for %s", er, rripID)
	}
	var names []string
	for _, r := range recs[2:] {
		id := string(r[33 : 33+int(r[32])])
		su := systemUse(r)
		rr, nmEntry := entry(su, "RR"), entry(su, "NM")
		if rr == nil || rr[4]&rrNM == 0 || nmEntry == nil {
			t.Fatalf("record %q: RR %x NM %x", id, rr, nmEntry)
		}
		name := string(nmEntry[5:])
		if id != name+";1" {
			t.Errorf("primary identifier %q for NM name %q", id, name)
		}
		if px := entry(su, "PX"); px == nil || binary.LittleEndian.Uint32(px[4:]) != modeFile {
			t.Errorf("%s: PX %x", name, px)
		}
		extent, size := binary.LittleEndian.Uint32(r[2:]), binary.LittleEndian.Uint32(r[10:])
		for _, f := range files {
			if f.name == name && !bytes.Equal(img[int(extent)*sectorSize:int(extent)*sectorSize+int(size)], f.data) {
				t.Errorf("%s: data at sector %d does not match", name, extent)
			}
		}
		names = append(names, name)
	}
	if want := "meta-data network-config user-data vendor-data"; strings.Join(names, " ") != want {
		t.Errorf("records in order %v, want sorted %s", names, want)
	}

	for _, bad := range []string{"", "User-Data", "a/b", "a;1", strings.Repeat("a", 31)} {
		if _, err := writeISO(Label, []isoFile{{bad, nil}}); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if _, err := writeISO(Label, []isoFile{{"a", nil}, {"a", nil}}); err == nil {
		t.Error("a name twice accepted")
	}
	again, err := writeISO(Label, files)
	if err != nil || !bytes.Equal(again, img) {
		t.Error("the same files do not give the same bytes")
	}
}

// systemUse returns a directory record's system use area.
func systemUse(r []byte) []byte {
	idLen := int(r[32])
	start := 33 + idLen
	if idLen%2 == 0 {
		start++
	}
	return r[start:]
}

// entry returns the first SUSP entry of signature sig in su.
func entry(su []byte, sig string) []byte {
	for off := 0; off+4 <= len(su) && su[off+2] >= 4; off += int(su[off+2]) {
		if string(su[off:off+2]) == sig {
			return su[off : off+int(su[off+2])]
		}
	}
	return nil
}
