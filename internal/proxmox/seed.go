package proxmox

import (
	"path"
	"strconv"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/seedname"
)

// Seed ISOs (decision: seed-iso, decision: seed-location). Everything about a VM's NoCloud
// seed lives in this file: its name, where it lives, building it (internal/nocloud),
// uploading it, attaching it on ide2, ejecting it and deleting it. Create, Update (the seed
// rebuilt before a start), a migration, a takeover, Delete and the orphan listing all go
// through it.
//
// Where a seed lives: a new seed is uploaded to the provider's iso_storage, on the VM's
// node. From then on the seed is the volume its VM's ide2 names, on whatever storage that
// is: an iso_storage changed later does not move it, and every delete removes it where it
// is. For a VM that is already gone, the seed is the volume its state recorded (the
// resource's private state, refreshed by every read).

// seedSuffix ends every seed ISO's file name: <name>-seed.iso (decision: seed-iso).
const seedSuffix = seedname.Suffix

// seedFile is the seed ISO file of VM name with uid. A VM this provider creates boots from
// <name>-<uid>-seed.iso, unique per VM, so same-name VMs (a create_before_destroy
// replacement and its predecessor, two workspaces) never share one.
func seedFile(name, uid string) string { return seedname.File(name, uid, 1) }

// operatorSeedFile is the proxy operator's seed ISO file, <name>-seed.iso, shared by every
// VM of that name it made; its VMs can be imported, and keep booting from it.
func operatorSeedFile(name string) string { return name + seedSuffix }

// SeedFile is the seed ISO file a Create of VM name with uid uploads.
func SeedFile(name, uid string) string { return seedFile(name, uid) }

// seedVolID is a seed file's volume id on storage.
func seedVolID(storage, file string) string { return storage + ":iso/" + file }

// SeedVolID is the volume id of the seed ISO a Create of VM name with uid uploads now: on
// the provider's iso_storage.
func (b *Backend) SeedVolID(name, uid string) string {
	return seedVolID(b.cfg.ISOStorage, seedFile(name, uid))
}

// Seed generations (decision: seed-swap). A VM's first seed, the one its Create uploads,
// is <name>-<uid>-seed.iso, generation 1. A cloud-init change applied in place
// (cloud_init_change = "restart", Changes.Reseed) uploads the next generation,
// <name>-<uid>-<g>-seed.iso (g = 2, 3...), swaps ide2 to it and deletes the one before: a
// new file, so the old seed stays whole until the VM no longer names it. Its meta-data
// carries a new instance-id, <name>-<uid>-<g>, so cloud-init runs its per-instance modules
// again at the next boot; generation 1's instance-id is the name, as it has always been.
// The uid in every generation's name is what proves a seed is this VM's.

// parseUIDSeed splits <name>-<uid>-seed.iso and <name>-<uid>-<g>-seed.iso.
func parseUIDSeed(file string) (name, uid string, ok bool) {
	name, uid, _, ok = parseSeedGen(file)
	return name, uid, ok
}

// parseSeedGen splits a seed file of this provider into its VM name, uid and generation
// (1 for <name>-<uid>-seed.iso).
func parseSeedGen(file string) (name, uid string, gen int, ok bool) { return seedname.ParseUID(file) }

// SeedGeneration is the generation of the seed ISO volid names when it is a seed of VM
// name with uid (decision: seed-swap); ok is false for any other volume, the proxy
// operator's <name>-seed.iso among them.
func SeedGeneration(volid, name, uid string) (gen int, ok bool) {
	v, ok := parseISOVol(volid)
	if !ok {
		return 0, false
	}
	n, u, gen, ok := parseSeedGen(v.file)
	if !ok || n != name || u != uid {
		return 0, false
	}
	return gen, true
}

// SeedFileGen is the file of generation gen of the seed of VM name with uid.
func SeedFileGen(name, uid string, gen int) string { return seedFileGen(name, uid, gen) }

// seedFileGen is generation gen of the seed of VM name with uid (seedFile for 1).
func seedFileGen(name, uid string, gen int) string { return seedname.File(name, uid, gen) }

// instanceIDOf is the meta-data instance-id of seed file of VM name: the name for a first
// seed (and for the proxy operator's), <name>-<uid>-<g> for a later generation. A seed
// rebuilt for the same volume (a missing seed before a start, a migration's copy) keeps it,
// so the guest sees no new instance.
func instanceIDOf(name, file string) string {
	if n, uid, gen, ok := parseSeedGen(file); ok && n == name && gen > 1 {
		return name + "-" + uid + "-" + strconv.Itoa(gen)
	}
	return name
}

// seedVol is a seed ISO volume: the storage that holds it and its file name.
type seedVol struct {
	storage string
	file    string
}

func (v seedVol) volid() string { return seedVolID(v.storage, v.file) }

// parseISOVol splits an ISO volume id, <storage>:iso/<file>.
func parseISOVol(volid string) (seedVol, bool) {
	storage, rest, ok := strings.Cut(volid, ":")
	if !ok || storage == "" {
		return seedVol{}, false
	}
	file, ok := strings.CutPrefix(rest, "iso/")
	if !ok || file == "" || strings.Contains(file, "/") {
		return seedVol{}, false
	}
	return seedVol{storage: storage, file: file}, true
}

// isoPathKey is the key a drive attached by absolute path (`ide1: /mnt/pve/nfs/template/iso/
// x.iso`, only root@pam may set one) is recorded under as a seed holder: "path:" and the file
// name. It matches the seed of that file name on every storage, with no request and no
// privilege: a superset of the volume Proxmox's path_to_volume_id names, so it may keep a
// seed of that name on another storage but never deletes one the path names (decision:
// seed-in-use).
func isoPathKey(vol string) (string, bool) {
	if !strings.HasPrefix(vol, "/") {
		return "", false
	}
	file := path.Base(vol)
	if file == "/" || file == "." || file == ".." {
		return "", false
	}
	return "path:" + file, true
}

// seedName returns the VM name of a seed ISO's volid: <storage>:iso/<name>-<uid>-seed.iso
// (uid set) or <storage>:iso/<name>-seed.iso (uid empty).
func seedName(volid string) (name, uid string, ok bool) {
	v, ok := parseISOVol(volid)
	if !ok {
		return "", "", false
	}
	return seedFileName(v.file)
}

// seedFileName is seedName of a file name: <name>-<uid>-seed.iso or <name>-seed.iso.
func seedFileName(file string) (name, uid string, ok bool) { return seedname.Parse(file) }

// isSeedOf reports whether file is a seed of VM name: <name>-seed.iso or
// <name>-<uid>-seed.iso. An ISO of anything else (an installer image) is not a seed and is
// never deleted.
func isSeedOf(name, file string) bool {
	if file == operatorSeedFile(name) {
		return true
	}
	n, _, ok := parseUIDSeed(file)
	return ok && n == name
}

// vmSeed returns the seed volume the config's ide2 names, on whatever storage, when it is a
// seed of VM name.
func vmSeed(name string, cfg map[string]string) (seedVol, bool) {
	v, ok := parseISOVol(driveVolume(cfg["ide2"]))
	if !ok || !isSeedOf(name, v.file) {
		return seedVol{}, false
	}
	return v, true
}

// recordedSeed is the seed a caller's state recorded (VM.Seed of its last read): a volume
// id, <storage>:iso/<file>.
func (b *Backend) recordedSeed(rec string) (seedVol, bool) {
	return parseISOVol(rec)
}

// isSeedVolID reports whether vol names a seed ISO (a start that fails on a missing volume
// tells the seed from other drives with it).
func isSeedVolID(vol string) bool {
	_, _, ok := seedName(vol)
	return ok
}

// ide2Seed is ide2's value for an attached seed.
func ide2Seed(v seedVol) string { return v.volid() + ",media=cdrom" }

// ide2Empty is ide2's value for an ejected seed: an empty CD-ROM drive.
const ide2Empty = "none,media=cdrom"

// checkIDE2Free refuses a template whose ide2 holds a disk: the seed ISO is attached on
// ide2, so every clone would lose that disk from its config. A CD-ROM there (empty, or
// an ISO) is fine: the seed takes its place.
func checkIDE2Free(templateVMID int, cfg map[string]string) error {
	v, ok := cfg["ide2"]
	if !ok || isCDROM(v) {
		return nil
	}
	return Permanentf(
		"template %d has a disk on ide2, which the provider's seed ISO would replace in every clone; "+
			"move that disk to another slot (e.g. scsi1) in the template",
		templateVMID,
	)
}

// storageOf is the storage of a volume id, <storage>:<content>/<file>.
func storageOf(volid string) string {
	for i := range len(volid) {
		if volid[i] == ':' {
			return volid[:i]
		}
	}
	return volid
}
