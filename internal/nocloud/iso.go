package nocloud

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// An in-memory ISO 9660 writer for the seed (decision: seed-iso): the image is composed in
// one byte slice and never staged on disk, so the cloud-init text (which may hold secrets)
// touches no file. It writes what a NoCloud seed needs and nothing more: one root
// directory of regular files, the primary volume descriptor, path tables, and Rock Ridge
// entries carrying each file's exact name.
//
// How the readers that matter read it:
//   - cloud-init's NoCloud datasource finds the filesystem by its label (cidata or
//     CIDATA), mounts it read-only and reads user-data, meta-data and the optional
//     vendor-data and network-config from its root by those exact names;
//   - the Linux kernel (fs/isofs, rock.c get_rock_ridge_filename and check_sp) takes a
//     file's name from its Rock Ridge NM entry when the root's "." record starts with a
//     SUSP SP entry and the record has no RR entry without the NM flag; an ER entry in
//     the root's "." record marks the volume as Rock Ridge;
//   - without Rock Ridge (mount -o norock, or a reader that has none) the primary file
//     identifier is used: it is the exact name, lowercase with "-" (what genisoimage's
//     relaxed file names write, and what this provider's seeds always carried), plus the
//     ";1" version that readers drop.
//
// The layout (2048-byte sectors): 16 sectors of system area, the primary volume
// descriptor (16), the set terminator (17), the L and M path tables (18, 19), the root
// directory (20), the SUSP continuation area holding the ER entry (21: a directory record
// is at most 255 bytes, too short for it), then each file's data from sector 22 on, each
// starting on a sector.

const (
	sectorSize     = 2048
	pvdSector      = 16
	lPathSector    = 18
	mPathSector    = 19
	rootDirSector  = 20
	contSector     = 21
	firstData      = 22
	maxFileNameLen = 30 // ECMA-119 7.5.1: name, dot and extension within 30 characters
)

// isoFile is one file of the root directory.
type isoFile struct {
	name string
	data []byte
}

// Rock Ridge (RRIP 1.10, IEEE P1282 draft "RRIP_1991A") and SUSP (IEEE P1281) texts,
// those the ER entry carries in every Rock Ridge image (genisoimage, xorriso).
const (
	rripID     = "RRIP_1991A"
	rripDesc   = "THE ROCK RIDGE INTERCHANGE PROTOCOL PROVIDES SUPPORT FOR POSIX FILE SYSTEM SEMANTICS"
	rripSource = "PLEASE CONTACT DISC PUBLISHER FOR SPECIFICATION SOURCE.  SEE PUBLISHER IDENTIFIER IN PRIMARY VOLUME " +
		"DESCRIPTOR FOR CONTACT INFORMATION."
)

// POSIX modes of the Rock Ridge PX entries: the files are read-only for everyone.
const (
	modeDir  = 0o040555
	modeFile = 0o100444
)

// recordingTime is every date in the image: a fixed one, so that the same seed gives the
// same bytes (cloud-init reads no date from it).
var recordingTime = [7]byte{70, 1, 1, 0, 0, 0, 0} // 1970-01-01 00:00:00 UTC

var errISOName = errors.New("nocloud: a seed file name must be 1 to 30 lowercase letters, digits, '-' or '_'")

// writeISO returns the image with volume label label and files in its root directory.
func writeISO(label string, files []isoFile) ([]byte, error) {
	if label == "" || len(label) > 32 {
		return nil, fmt.Errorf("nocloud: the volume label %q must be 1 to 32 characters", label)
	}
	files = slices.Clone(files)
	for _, f := range files {
		if !validISOName(f.name) {
			return nil, errISOName
		}
		if uint64(len(f.data)) > uint64(^uint32(0)) {
			return nil, fmt.Errorf("nocloud: %s is larger than 4 GiB", f.name)
		}
	}
	// ECMA-119 9.3: the records of a directory are sorted by file identifier.
	slices.SortFunc(files, func(a, b isoFile) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(files); i++ {
		if files[i].name == files[i-1].name {
			return nil, fmt.Errorf("nocloud: the seed holds %s twice", files[i].name)
		}
	}

	// Where each file's data goes.
	extents := make([]uint32, len(files))
	next := uint32(firstData)
	for i, f := range files {
		extents[i] = next
		next += sectors(len(f.data))
	}
	total := next

	rootSelf := dirRecord(rootDirSector, sectorSize, []byte{0}, true, rootSystemUse())
	rootParent := dirRecord(rootDirSector, sectorSize, []byte{1}, true, concat(rrFlags(rrPX), px(modeDir, 2)))
	dir := concat(rootSelf, rootParent)
	for i, f := range files {
		su := concat(rrFlags(rrPX|rrNM), px(modeFile, 1), nm(f.name))
		dir = append(dir, dirRecord(extents[i], uint32(len(f.data)), []byte(f.name+";1"), false, su)...)
	}
	if len(dir) > sectorSize {
		// Never with the four NoCloud files; a record must not cross a sector (ECMA-119 6.8.1.1).
		return nil, fmt.Errorf("nocloud: the root directory does not fit in one sector (%d bytes)", len(dir))
	}

	img := make([]byte, int(total)*sectorSize)
	copy(img[pvdSector*sectorSize:], primaryDescriptor(label, total))
	copy(img[(pvdSector+1)*sectorSize:], terminator())
	copy(img[lPathSector*sectorSize:], pathTable(binary.LittleEndian))
	copy(img[mPathSector*sectorSize:], pathTable(binary.BigEndian))
	copy(img[rootDirSector*sectorSize:], dir)
	copy(img[contSector*sectorSize:], erEntry())
	for i, f := range files {
		copy(img[int(extents[i])*sectorSize:], f.data)
	}
	return img, nil
}

// validISOName accepts the names a seed holds: lowercase letters, digits, '-' and '_'.
func validISOName(s string) bool {
	if s == "" || len(s) > maxFileNameLen {
		return false
	}
	for _, r := range s {
		lower, digit := r >= 'a' && r <= 'z', r >= '0' && r <= '9'
		if !lower && !digit && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

func sectors(n int) uint32 { return uint32((n + sectorSize - 1) / sectorSize) }

// both32 and both16 are ECMA-119's both-byte-order numbers (7.3.3, 7.2.3).
func both32(v uint32) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint32(b, v)
	binary.BigEndian.PutUint32(b[4:], v)
	return b
}

func both16(v uint16) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint16(b, v)
	binary.BigEndian.PutUint16(b[2:], v)
	return b
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// dirRecord is a directory record (ECMA-119 9.1) with the system use area su, padded to an
// even length.
func dirRecord(extent, size uint32, id []byte, isDir bool, su []byte) []byte {
	var r bytes.Buffer
	r.WriteByte(0) // length, set below
	r.WriteByte(0) // extended attribute record length
	r.Write(both32(extent))
	r.Write(both32(size))
	r.Write(recordingTime[:])
	flags := byte(0)
	if isDir {
		flags = 0x02
	}
	r.WriteByte(flags)
	r.WriteByte(0) // file unit size
	r.WriteByte(0) // interleave gap
	r.Write(both16(1))
	r.WriteByte(byte(len(id)))
	r.Write(id)
	if len(id)%2 == 0 {
		r.WriteByte(0) // padding field (9.1.12)
	}
	r.Write(su)
	if r.Len()%2 == 1 {
		r.WriteByte(0)
	}
	b := r.Bytes()
	if len(b) > 255 {
		panic("nocloud: a directory record longer than 255 bytes") // the callers' records are far shorter
	}
	b[0] = byte(len(b))
	return b
}

// rootSystemUse is the root's "." record's system use area: the SUSP SP entry first
// (SUSP 5.3: it must be), the RR flags, PX, and a CE entry pointing at the continuation
// area that holds the ER entry naming Rock Ridge.
func rootSystemUse() []byte {
	sp := []byte{'S', 'P', 7, 1, 0xBE, 0xEF, 0}
	ce := concat([]byte{'C', 'E', 28, 1}, both32(contSector), both32(0), both32(uint32(len(erEntry()))))
	return concat(sp, rrFlags(rrPX), px(modeDir, 2), ce)
}

// erEntry is the SUSP extension reference entry for Rock Ridge (SUSP 5.5).
func erEntry() []byte {
	return concat([]byte{'E', 'R', byte(8 + len(rripID) + len(rripDesc) + len(rripSource)), 1,
		byte(len(rripID)), byte(len(rripDesc)), byte(len(rripSource)), 1},
		[]byte(rripID), []byte(rripDesc), []byte(rripSource))
}

// The RRIP 1.09 RR entry's flags: which Rock Ridge entries the record holds.
const (
	rrPX = 0x01
	rrNM = 0x08
)

func rrFlags(f byte) []byte { return []byte{'R', 'R', 5, 1, f} }

// px is the RRIP POSIX attributes entry (RRIP 1.10, 36 bytes): mode, links, uid 0, gid 0.
func px(mode, links uint32) []byte {
	return concat([]byte{'P', 'X', 36, 1}, both32(mode), both32(links), both32(0), both32(0))
}

// nm is the RRIP alternate name entry holding the whole name.
func nm(name string) []byte {
	return concat([]byte{'N', 'M', byte(5 + len(name)), 1, 0}, []byte(name))
}

// primaryDescriptor is the primary volume descriptor (ECMA-119 8.4).
func primaryDescriptor(label string, total uint32) []byte {
	b := make([]byte, sectorSize)
	b[0] = 1
	copy(b[1:6], "CD001")
	b[6] = 1
	fill := func(off, n int, s string) {
		copy(b[off:off+n], s+strings.Repeat(" ", n-len(s)))
	}
	fill(8, 32, "LINUX")
	fill(40, 32, label)
	copy(b[80:], both32(total))
	copy(b[120:], both16(1))          // volume set size
	copy(b[124:], both16(1))          // volume sequence number
	copy(b[128:], both16(sectorSize)) // logical block size
	copy(b[132:], both32(pathTableLen))
	binary.LittleEndian.PutUint32(b[140:], lPathSector)
	binary.BigEndian.PutUint32(b[148:], mPathSector)
	copy(b[156:190], dirRecord(rootDirSector, sectorSize, []byte{0}, true, nil))
	fill(190, 128, "")                         // volume set identifier
	fill(318, 128, "")                         // publisher
	fill(446, 128, "")                         // data preparer
	fill(574, 128, "TERRAFORM-PROVIDER-PROXY") // application
	fill(702, 37, "")                          // copyright file
	fill(739, 37, "")                          // abstract file
	fill(776, 37, "")                          // bibliographic file
	date := []byte("1970010100000000\x00")
	unset := []byte("0000000000000000\x00")
	copy(b[813:], date)  // creation
	copy(b[830:], date)  // modification
	copy(b[847:], unset) // expiration: none
	copy(b[864:], date)  // effective
	b[881] = 1           // file structure version
	return b
}

// terminator is the volume descriptor set terminator (ECMA-119 8.3).
func terminator() []byte {
	b := make([]byte, sectorSize)
	b[0] = 255
	copy(b[1:6], "CD001")
	b[6] = 1
	return b
}

// pathTableLen is the size of a path table holding the root alone.
const pathTableLen = 10

// pathTable is the path table (ECMA-119 9.4) of a volume whose only directory is the
// root: one record, in order's byte order (L: little endian, M: big endian).
func pathTable(order binary.ByteOrder) []byte {
	b := make([]byte, pathTableLen)
	b[0] = 1 // length of directory identifier
	order.PutUint32(b[2:], rootDirSector)
	order.PutUint16(b[6:], 1) // parent: the root itself
	b[8] = 0                  // the root's identifier; b[9] pads to an even length
	return b
}
