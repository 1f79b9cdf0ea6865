package proxmox

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
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
// x.iso`, which only root@pam may set) is recorded under as a seed holder: "path:" and the
// path's last element, the file name. An ISO volume <storage>:iso/<file> of a directory
// storage (dir, NFS, CIFS) is the file <path>/<iso dir>/<file> (pve-storage
// src/PVE/Storage/Plugin.pm parse_volname, line 812: iso/<file> with no "/" in <file>;
// filesystem_path and path, lines 876-901: "$dir/$name"), <iso dir> being template/iso
// unless the storage's content-dirs moves it (get_subdir, lines 839-864); Proxmox maps a
// path back to a volume the same way (src/PVE/Storage.pm path_to_volume_id, lines 691-737:
// ^<isodir>/([^/]+\.iso)$ is <sid>:iso/<name>). So a path is matched by its file name
// alone, to the seed of that file name on every storage (seedHolders.of), with no request
// and no privilege: a superset of the volume path_to_volume_id names, which may keep a
// seed that a path on another storage names by the same file name (it is reported, naming
// the VM and the path) and never deletes one the path names. Reading each storage's path
// (GET /storage, src/PVE/API2/Storage/Config.pm index, lines 121-168) would narrow it to
// the one storage. A symbolic link of another name is not seen (path_to_volume_id resolves
// it with abs_path; the API cannot).
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
	return Permanentf("template %d has a disk on ide2, which the provider's seed ISO would replace in every clone; move that disk to another slot (e.g. scsi1) in the template", templateVMID)
}

// seedOf is the seed file of a VM called name, with the provider's vendor-data, the
// user-data, the network-config rendered for net0, and the instance-id of that file
// (instanceIDOf).
func (b *Backend) seedOf(name, file string, userData []byte, n *NetworkConfig, net0 string) (nocloud.Seed, error) {
	nc, err := n.render(net0)
	if err != nil {
		return nocloud.Seed{}, err
	}
	s := nocloud.Seed{
		Name: name, UserData: userData, VendorData: b.cfg.VendorData, InstallGuestAgent: b.cfg.InstallGuestAgent,
		NetworkConfig: nc,
	}
	if id := instanceIDOf(name, file); id != name {
		s.InstanceID = id
	}
	return s, nil
}

// buildSeedFor builds the seed ISO of seedOf.
func (b *Backend) buildSeedFor(name, file string, userData []byte, n *NetworkConfig, net0 string) ([]byte, error) {
	s, err := b.seedOf(name, file, userData, n, net0)
	if err != nil {
		return nil, err
	}
	iso, err := b.buildSeed(s)
	if err != nil {
		return nil, Permanentf("building the seed ISO failed: %w", err)
	}
	return iso, nil
}

// putSeed uploads iso as v on node, over any previous file of that name
// (fact: upload-overwrites: no delete first), and waits for the task.
func (b *Backend) putSeed(ctx context.Context, op, node string, v seedVol, iso []byte, why string) error {
	upid, err := b.api.UploadISO(ctx, node, v.storage, v.file, bytes.NewReader(iso), int64(len(iso)))
	if err != nil {
		return apiErrorf(op, err, "uploading the seed ISO %s to storage %s on node %s%s", v.file, v.storage, node, why)
	}
	return b.waitTask(ctx, upid, b.cfg.Budgets.Upload)
}

// uploadSeed builds the seed of s (its network-config rendered for net0, the VM's) and
// uploads it to node's iso_storage as <name>-<uid>-seed.iso.
func (b *Backend) uploadSeed(ctx context.Context, node string, s Spec, net0 string) error {
	v := b.createSeed(s)
	iso, err := b.buildSeedFor(s.Name, v.file, s.UserData, s.Network, net0)
	if err != nil {
		return err
	}
	return b.putSeed(ctx, "create", node, v, iso, "")
}

// createSeed is where a Create of s puts its seed: <name>-<uid>-seed.iso on iso_storage.
func (b *Backend) createSeed(s Spec) seedVol { return specSeed(b.cfg.ISOStorage, s) }

// specSeed is the seed of s on storage.
func specSeed(storage string, s Spec) seedVol {
	return seedVol{storage: storage, file: seedFile(s.Name, s.UID)}
}

// seedUpload is a seed ISO upload running beside the clone task: the seed goes to the ISO
// storage of the target node and does not depend on the VM, so Create sends it as soon as
// Proxmox has accepted the clone instead of after the clone task ends. The config write
// that names the seed waits for it (join).
type seedUpload struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// startSeedUpload builds and uploads the seed on c.node in a goroutine.
func (c *creation) startSeedUpload(ctx context.Context) *seedUpload {
	uctx, cancel := context.WithCancel(ctx)
	u := &seedUpload{cancel: cancel, done: make(chan struct{})}
	node, s, net0 := c.node, c.s, c.cfg["net0"]
	go func() {
		defer close(u.done)
		u.err = c.b.uploadSeed(uctx, node, s, net0)
	}()
	return u
}

// join waits for the upload and returns its error.
func (u *seedUpload) join() error {
	<-u.done
	u.cancel()
	return u.err
}

// abandonSeedUpload runs when the clone failed after its upload was started: the upload is
// cancelled and joined, then the seed it may have written is deleted, so that a clone
// Proxmox removed leaves no seed behind. When ctx has ended (Ctrl-C, the create timeout)
// nothing more can be sent; the VMID is in the state then, and the Delete of that resource
// removes the seed with the VM. It returns cloneErr, with a note when the seed could not
// be deleted.
func (c *creation) abandonSeedUpload(ctx context.Context, u *seedUpload, cloneErr error) error {
	u.cancel()
	_ = u.join()
	if ctx.Err() != nil {
		return cloneErr
	}
	seed := c.b.createSeed(c.s)
	if err := c.b.deleteSeed(ctx, "create", c.node, seed); err != nil {
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed delete after a failed clone failed", map[string]any{
			"vmid": c.vmid, "name": c.s.Name, "node": c.node, "error": err.Error(),
		})
		return &Error{Class: ClassOf(cloneErr), Err: fmt.Errorf("%w; the seed ISO %s uploaded meanwhile could not be deleted (%s): remove it with `pvesm free %s` on node %s "+
			"(the proxy_vms data source lists it under orphan_seeds, and the proxy_orphan_cleanup action removes it)", cloneErr, seed.volid(), err.Error(), seed.volid(), c.node)}
	}
	return cloneErr
}

// deleteSeed deletes v on node and waits for the task; a missing volume is still a
// successful task (fact: volume-delete-task). A storage that does not exist (on that node,
// or at all) holds no seed: nothing is left, and the skip is noted for the caller to show.
// Any other failure is an error naming the volume, the node and what to do.
func (b *Backend) deleteSeed(ctx context.Context, op, node string, v seedVol) error {
	upid, err := b.api.DeleteVolume(ctx, node, v.storage, v.volid())
	if err == nil {
		err = b.waitTask(ctx, upid, b.cfg.Budgets.SeedDelete)
		if err == nil {
			return nil
		}
		return &Error{Class: ClassOf(err), Err: fmt.Errorf("deleting the seed ISO %s on node %s: %w; %s", v.volid(), node, err, seedDeleteFix(node, v))}
	}
	if pveapi.IsMissingStorage(err) {
		noteSeedSkipped(ctx, node, v.volid(), err)
		return nil
	}
	if pveapi.IsForbidden(err) {
		return apiErrorf(op, err, "deleting the seed ISO %s on node %s (the token needs Datastore.Allocate on /storage/%s; grant it, or %s)",
			v.volid(), node, v.storage, seedDeleteManually(node, v))
	}
	return apiErrorf(op, err, "deleting the seed ISO %s on node %s (%s)", v.volid(), node, seedDeleteFix(node, v))
}

// seedDeleteFix is what to do about a seed delete that failed.
func seedDeleteFix(node string, v seedVol) string {
	return "run the same command again once node " + node + " answers, or " + seedDeleteManually(node, v)
}

// seedDeleteManually says how to remove a seed by hand.
func seedDeleteManually(node string, v seedVol) string {
	return fmt.Sprintf("delete it by hand with `pvesm free %s` on node %s", v.volid(), node)
}

// noteSeedSkipped is the note of a seed delete skipped because its storage does not exist.
func noteSeedSkipped(ctx context.Context, node, volid string, err error) {
	note(ctx, "the seed ISO %s was not deleted on node %s: its storage %s does not exist there (%v), so there can be no seed on it",
		volid, node, storageOf(volid), err)
}

// seedDelete is a seed ISO delete running beside the stop: the seed must be gone before
// the destroy (so that a failure leaves the VM, and the next Delete, to retry it), not
// before the stop, so Delete sends both at once and joins the delete before the destroy.
type seedDelete struct {
	done chan struct{}
	err  error
}

// startSeedDelete runs the destroy's seed sweep (sweepSeeds) in a goroutine.
func (b *Backend) startSeedDelete(ctx context.Context, sw seedSweep, st settled) *seedDelete {
	d := &seedDelete{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.err = b.sweepSeeds(ctx, sw, st)
	}()
	return d
}

// join waits for the delete and returns its error.
func (d *seedDelete) join() error {
	<-d.done
	return d.err
}

// Seed sweep (decision: seed-sweep). One rule says what a destroy deletes, whatever path it
// takes (a VM of ours, a VM gone, the VMID holding a VM not ours, the replacement of a VM
// gone): every generation of the VM's seed (<name>-<uid>-seed.iso, <name>-<uid>-<g>-seed.iso,
// parseSeedGen) on the VM's own node (its node now, or for a VM not there the node the
// state last saw it on) and on every node the seed record names (DeleteOptions.SeedNodes:
// an HA recovery moves the config alone and leaves the seed where it was; a cloud-init
// change made after it swaps the seed on the new node only), except a copy some other VM
// has on a drive (decision: seed-in-use: kept, with a note naming that VM). Those nodes are
// the homes: their ISO storages are listed and a failure there fails the destroy, naming
// what to fix, so a seed is never left behind silently. A recorded node that is not among
// the provider's nodes is not listed (it may be gone for good): the named seeds are deleted
// there by name when it answers, and a note names what may remain. The volumes named
// (ide2's, the recorded one) are deleted by name without a listing when one generation on
// one node is all that ever existed (sweepNeedsListing). For a VM not there, the named
// seeds are also deleted by name on the other configured nodes, a failure there logged.

// seedSweep is what a destroy's seed sweep deletes.
type seedSweep struct {
	id        ID
	name, uid string // the generations swept are the seeds of name with uid; no uid: named alone
	// named are the seeds the state knows by name: the one ide2 names, the one recorded (or,
	// without a record, the one a Create of uid uploads), for a VM not there the proxy
	// operator's <name>-seed.iso too. A <name>-seed.iso is deleted only on vmNode (a live VM)
	// and never when a VM of that name is listed elsewhere (sameNameElsewhere).
	named []seedVol
	// vmNode is the node of a VM of ours; "" when the VM is not there.
	vmNode string
	// homes are swept (listed, when list) and fail the destroy when they fail.
	homes []string
	list  bool
	// others (a VM not there: the configured nodes outside homes) get named deleted by name,
	// a failure logged; unconfigured (recorded nodes not among the provider's nodes) too, a
	// failure noted with what may remain.
	others, unconfigured []string
	// skipVMID is the VM whose drives do not keep a seed (the VM destroyed); 0: none.
	skipVMID int
	// swept are the seeds ("<node>|<volid>") an earlier sweep of the same delete deleted:
	// not deleted again; the sweep adds those it deletes. nil: none kept.
	swept map[string]bool
}

// seedAt is a seed a sweep deletes on a node.
type seedAt struct {
	node string
	v    seedVol
	kind sweepKind
}

type sweepKind int

const (
	sweepHome sweepKind = iota
	sweepOther
	sweepUnconfigured
)

// liveSweep is the sweep of a VM of ours on node whose config is cfg (ownSeeds named).
func (b *Backend) liveSweep(ctx context.Context, id ID, node string, cfg map[string]string, opts DeleteOptions, res []pveapi.Resource) seedSweep {
	sw := seedSweep{id: id, name: id.Name, uid: opts.UID, vmNode: node, skipVMID: id.VMID}
	sw.named = dropSharedOperatorSeed(ctx, id, res, b.ownSeeds(id.Name, cfg, opts.Seed, opts.UID))
	sw.homes = []string{node}
	b.addRecordedNodes(&sw, opts.SeedNodes)
	sw.list = sweepNeedsListing(sw, opts.SeedSwaps)
	return sw
}

// goneSweep is the sweep of a VM that is gone or not ours (st.verdict): the named seeds
// are the recorded one or, without a record, <name>-<uid>-seed.iso and <name>-seed.iso on
// iso_storage.
func (b *Backend) goneSweep(ctx context.Context, id ID, st settled, opts DeleteOptions) seedSweep {
	sw := seedSweep{id: id, name: id.Name, uid: opts.UID}
	if v, ok := b.recordedSeed(opts.Seed); ok {
		sw.named = []seedVol{v}
		if n, u, ok := parseUIDSeed(v.file); ok && n == id.Name && sw.uid == "" {
			sw.uid = u // the state records no uid: the recorded seed's name carries it
		}
	} else if b.cfg.ISOStorage != "" {
		if opts.UID != "" {
			sw.named = append(sw.named, seedVol{storage: b.cfg.ISOStorage, file: seedFile(id.Name, opts.UID)})
		}
		sw.named = append(sw.named, seedVol{storage: b.cfg.ISOStorage, file: operatorSeedFile(id.Name)})
	}
	sw.named = dropSharedOperatorSeed(ctx, id, st.res, sw.named)
	b.addRecordedNodes(&sw, append([]string{opts.Node}, opts.SeedNodes...))
	for _, n := range b.cfg.Nodes {
		if !slices.Contains(sw.homes, n) {
			sw.others = append(sw.others, n)
		}
	}
	sw.list = sweepNeedsListing(sw, opts.SeedSwaps)
	return sw
}

// addRecordedNodes adds nodes to sw: a configured node (or any, when the provider lists
// none) as a home, another as unconfigured.
func (b *Backend) addRecordedNodes(sw *seedSweep, nodes []string) {
	for _, n := range nodes {
		switch {
		case n == "", slices.Contains(sw.homes, n), slices.Contains(sw.unconfigured, n):
		case len(b.cfg.Nodes) == 0 || slices.Contains(b.cfg.Nodes, n):
			sw.homes = append(sw.homes, n)
		default:
			sw.unconfigured = append(sw.unconfigured, n)
		}
	}
}

// dropSharedOperatorSeed leaves out of seeds the proxy operator's <name>-seed.iso when a VM
// of that name is listed at another VMID: it may boot from it.
func dropSharedOperatorSeed(ctx context.Context, id ID, res []pveapi.Resource, seeds []seedVol) []seedVol {
	return slices.DeleteFunc(seeds, func(v seedVol) bool {
		if v.file != operatorSeedFile(id.Name) {
			return false
		}
		r, ok := sameNameElsewhere(res, id)
		if ok {
			tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed left alone: a VM of the same name may boot from it", map[string]any{
				"vmid": id.VMID, "name": id.Name, "other_vmid": r.VMID, "other_node": r.Node, "seed": v.volid(),
			})
		}
		return ok
	})
}

// sweepNeedsListing says whether the homes are listed: not when the record proves one
// generation of the seed on one node is all there ever was (the named seeds are then
// deleted by name, and the destroy sends no request more than it always did): one home and
// no unconfigured node recorded, no named seed of a later generation, and a resource that
// does not swap its seed (SeedSwaps: a swap cut off leaves the next generation whatever ide2
// names). Without a uid there are no generations to find.
func sweepNeedsListing(sw seedSweep, swaps bool) bool {
	if sw.uid == "" {
		return false
	}
	if swaps || len(sw.homes)+len(sw.unconfigured) > 1 {
		return true
	}
	for _, v := range sw.named {
		if _, _, gen, ok := parseSeedGen(v.file); ok && gen > 1 {
			return true
		}
	}
	return false
}

// isGeneration says whether v is a generation of the sweep's seed.
func (sw seedSweep) isGeneration(v seedVol) bool {
	n, u, _, ok := parseSeedGen(v.file)
	return ok && sw.uid != "" && n == sw.name && u == sw.uid
}

// namedOn are the named seeds deleted on node: a <name>-seed.iso only on a live VM's node.
func (sw seedSweep) namedOn(node string) []seedVol {
	var out []seedVol
	for _, v := range sw.named {
		if v.file == operatorSeedFile(sw.name) && sw.vmNode != "" && node != sw.vmNode {
			continue
		}
		out = append(out, v)
	}
	return out
}

// sweepStorages are the storages listed on a home: the named seeds' and iso_storage (where
// every later generation was uploaded).
func (b *Backend) sweepStorages(sw seedSweep) []string {
	var out []string
	for _, v := range sw.named {
		if !slices.Contains(out, v.storage) {
			out = append(out, v.storage)
		}
	}
	if b.cfg.ISOStorage != "" && !slices.Contains(out, b.cfg.ISOStorage) {
		out = append(out, b.cfg.ISOStorage)
	}
	return out
}

// sweepHome lists node's ISO storages for every generation of sw's seed, and the named
// seeds there. A storage that does not exist there holds none; any other failure fails
// the destroy, saying what to fix (a 403: the privilege the listing needs).
func (b *Backend) sweepHome(ctx context.Context, sw seedSweep, node string) ([]seedVol, error) {
	named := sw.namedOn(node)
	if !sw.list {
		return named, nil
	}
	var out []seedVol
	for _, st := range b.sweepStorages(sw) {
		vols, err := b.api.StorageContent(ctx, node, st, "iso")
		switch {
		case err == nil:
		case pveapi.IsMissingStorage(err):
			continue
		case ctx.Err() != nil:
			return nil, Transientf("listing storage %s on node %s for the VM's seed ISOs: %w", st, node, ctx.Err())
		case pveapi.IsForbidden(err):
			return nil, apiErrorf("delete", err, "listing storage %s on node %s for every generation of the VM's seed ISO (%s, %s) was refused: "+
				"the API token needs Datastore.Audit on /storage/%s to find them; grant it and destroy again, or delete them by hand "+
				"(`pvesm list %s --content iso` on node %s shows them, `pvesm free` deletes each)",
				st, node, seedFile(sw.name, sw.uid), seedFileGen(sw.name, sw.uid, 2), st, st, node)
		default:
			return nil, apiErrorf("delete", err, "listing storage %s on node %s for the VM's seed ISOs (%s and its later generations); "+
				"run the same command again once node %s answers", st, node, seedFile(sw.name, sw.uid), node)
		}
		for _, vol := range vols {
			v, ok := parseISOVol(vol.VolID)
			if ok && !slices.Contains(out, v) && (sw.isGeneration(v) || slices.Contains(named, v)) {
				out = append(out, v)
			}
		}
	}
	return out, nil
}

// sweepSeeds deletes what sw names (decision: seed-sweep), except a copy a VM has on a
// drive (decision: seed-in-use), which is noted naming that VM. st is what settle read:
// its listing says which VMs could have a seed, and the VM now at a gone VM's VMID (st.r,
// st.cfg) is one of them.
func (b *Backend) sweepSeeds(ctx context.Context, sw seedSweep, st settled) error {
	var seeds []seedAt
	for _, n := range sw.homes {
		vs, err := b.sweepHome(ctx, sw, n)
		if err != nil {
			return sw.onHome(n, err)
		}
		for _, v := range vs {
			seeds = append(seeds, seedAt{node: n, v: v, kind: sweepHome})
		}
	}
	for kind, nodes := range map[sweepKind][]string{sweepOther: sw.others, sweepUnconfigured: sw.unconfigured} {
		for _, n := range nodes {
			for _, v := range sw.namedOn(n) {
				seeds = append(seeds, seedAt{node: n, v: v, kind: kind})
			}
		}
	}
	slices.SortStableFunc(seeds, func(a, b seedAt) int { return int(a.kind) - int(b.kind) })
	if len(seeds) == 0 {
		b.noteUnconfigured(ctx, sw, nil)
		return nil
	}
	held, err := b.sweepHolders(ctx, sw, st, seeds)
	if err != nil {
		return err
	}
	failed := map[string]bool{}
	for _, s := range seeds {
		if sw.swept[s.node+"|"+s.v.volid()] {
			continue
		}
		if by := held.of(s.node, s.v.volid()); by != "" {
			note(ctx, "the seed ISO %s was not deleted on node %s: %s has it on a drive, so it is that VM's to use now; "+
				"delete it by hand with `pvesm free %s` on node %s once that VM no longer uses it", s.v.volid(), s.node, by, s.v.volid(), s.node)
			continue
		}
		err := b.deleteSeed(ctx, "delete", s.node, s.v)
		switch {
		case err == nil:
			if sw.swept != nil {
				sw.swept[s.node+"|"+s.v.volid()] = true
			}
			continue
		case ctx.Err() != nil:
			return Transientf("deleting the seed ISO %s: %w; %s", s.v.volid(), ctx.Err(), seedDeleteFix(s.node, s.v))
		case s.kind == sweepHome:
			return sw.onHome(s.node, err)
		case s.kind == sweepUnconfigured:
			failed[s.node] = true
		case ClassOf(err) == pveapi.Permanent:
			return err
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed delete skipped on node", map[string]any{
			"seed": s.v.volid(), "node": s.node, "error": err.Error(),
		})
	}
	b.noteUnconfigured(ctx, sw, failed)
	return nil
}

// onHome is err of a home, said as the move it comes from when the live VM is elsewhere.
func (sw seedSweep) onHome(node string, err error) error {
	if sw.vmNode == "" || node == sw.vmNode {
		return err
	}
	return &Error{Class: ClassOf(err), Err: fmt.Errorf("the VM is on node %s now, but its seed ISO was uploaded on node %s and is deleted there too: %w", sw.vmNode, node, err)}
}

// noteUnconfigured notes, for each recorded node that is not among the provider's nodes,
// the seed files that may remain there: all of them where the delete failed (failed),
// the generations the sweep did not list for where it did not.
func (b *Backend) noteUnconfigured(ctx context.Context, sw seedSweep, failed map[string]bool) {
	for _, n := range sw.unconfigured {
		if !failed[n] && !sw.list {
			continue
		}
		// Which generations that node holds is not known without its listing: the pattern,
		// and the named seeds where their delete by name failed.
		var files []string
		if failed[n] || sw.uid == "" {
			for _, v := range sw.namedOn(n) {
				files = append(files, v.volid())
			}
		}
		if sw.uid != "" {
			files = append(files, "any generation of this VM's seed ISO ("+sw.name+"-"+sw.uid+"-seed.iso, "+sw.name+"-"+sw.uid+"-<n>-seed.iso)")
		}
		if len(files) == 0 {
			continue
		}
		why := "its ISO storage was not listed"
		if failed[n] {
			why = "it did not answer, and its ISO storage was not listed"
		}
		note(ctx, "node %s, where a copy of this VM's seed ISO was put, is not among the provider's nodes, so %s: %s may remain there; "+
			"delete them by hand with `pvesm free <volid>` on node %s (`pvesm list <storage> --content iso` shows them)",
			n, why, strings.Join(files, ", "), n)
	}
}

// sweepHolders reads which VM has each seed on a drive (readSeedHolders, the configs from
// holderConfig): the VMs of the listing other than the one destroyed, and the VM now at a
// gone VM's VMID from the config settle read.
func (b *Backend) sweepHolders(ctx context.Context, sw seedSweep, st settled, seeds []seedAt) (seedHolders, error) {
	use := seedUse{names: map[string]bool{}, vols: map[string]bool{}, uids: map[string]bool{}, drives: map[string]string{}}
	atVMID := sw.vmNode == "" && st.verdict == verdictForeign && st.r.Type == "qemu" && st.cfg != nil
	if atVMID {
		use.addDrives(st.r, st.cfg)
	}
	res := st.res
	if res == nil {
		// Settled without a listing (settleOn: the state's node proved the VM ours): the
		// shared one, younger than ListingTTL, which our own destroys void, says which other
		// VMs could have a seed (a VM made since the last destroy, at a new VMID or at the one
		// destroyed, is in it; one deleted since is not).
		var err error
		if res, err = b.listing(ctx, false); err != nil {
			return seedHolders{}, apiErrorf("delete", err, "listing the cluster's VMs to check that no other VM has the VM's seed ISO on a drive")
		}
	}
	var vms []pveapi.Resource
	for _, r := range res {
		// The VM at a gone VM's VMID is read again with the others (its pending section:
		// settle's config read shows only the pending values).
		if r.Type == "qemu" && r.VMID != sw.skipVMID {
			vms = append(vms, r)
		}
	}
	pairs := make([]Seed, len(seeds))
	for i, s := range seeds {
		pairs[i] = Seed{Node: s.node, VolID: s.v.volid()}
	}
	held, read, err := b.seedHolderVMs(ctx, "delete", pairs, vms, &use)
	if err != nil {
		return held, err
	}
	return held, b.readHolderDrives(ctx, read, &use)
}

// ownSeeds are the seeds a VM of ours names (its mark carries uid): the one its ide2 names
// (its own, whoever made the VM: <name>-seed.iso for the proxy operator's VMs), and the one
// the caller recorded or, when none was recorded, the one this provider would have uploaded
// for uid, when it differs (ide2 was ejected or removed, or a create stopped before its
// config step). A <name>-seed.iso is deleted only when ide2 names it. Every other
// generation is the sweep's to find (decision: seed-sweep).
func (b *Backend) ownSeeds(name string, cfg map[string]string, recorded, uid string) []seedVol {
	var out []seedVol
	if v, ok := vmSeed(name, cfg); ok {
		out = append(out, v)
	}
	rec, ok := b.recordedSeed(recorded)
	if !ok && uid != "" && b.cfg.ISOStorage != "" {
		rec, ok = seedVol{storage: b.cfg.ISOStorage, file: seedFile(name, uid)}, true
	}
	if ok && !slices.Contains(out, rec) && isSeedOf(name, rec.file) && rec.file != operatorSeedFile(name) {
		out = append(out, rec)
	}
	return out
}

// Seeds in use (decision: seed-in-use). One rule keeps a seed from every delete that is not
// its own VM's destroy: a seed some VM has on a drive (ide, sata, scsi, virtio; CD-ROM or
// not; the volume as driveVolume reads it, so file= and volume= forms too) is that VM's to
// use, whatever its name (a proxy VM renamed, a clone made from one in the UI, a rescue VM),
// and is never deleted: it is reported, naming the VM. On a storage that is not shared a VM
// uses its own node's copy; on a shared one (or one whose status cannot be read) any VM
// uses the one volume. The orphan cleanup (seedsUnused) and every destroy (sweepSeeds,
// decision: seed-sweep) both ask seedHolders.of, after readSeedHolders read the configs of
// the VMs that could have one.

// seedHolders says which VM has a seed on a drive.
type seedHolders struct {
	use    *seedUse
	shared map[string]bool // "<node>|<storage>": the storage is shared, or its status is not known
}

// of is the VM that has volid on a drive as node sees it ("VM <vmid> (<name>) as <drive>"),
// by volume id or by a path of its file name (isoPathKey), "" when none does.
func (h seedHolders) of(node, volid string) string {
	scope := node
	if h.shared[node+"|"+storageOf(volid)] {
		scope = ""
	}
	if d := h.use.drives[scope+"|"+volid]; d != "" {
		return d
	}
	if v, ok := parseISOVol(volid); ok {
		return h.use.drives[scope+"|path:"+v.file] // a drive attached by path (isoPathKey)
	}
	return ""
}

// readSeedHolders reads, when seeds is not empty, whether each seed's storage is shared on
// its node, then the configs of the VMs in vms that could have one of the seeds on a drive,
// and adds their drives to use: on a storage that is not shared (a directory per node, as
// iso_storage is as a rule) a seed on node N is only N's VMs' to use, so only the VMs on the
// seeds' nodes are read; on a shared one every VM is. A config that cannot be read fails
// the call (readSeedUse), so a seed is never deleted unproved; so does ctx ending.
func (b *Backend) readSeedHolders(ctx context.Context, op string, seeds []Seed, vms []pveapi.Resource, use *seedUse) (seedHolders, error) {
	held, read, err := b.seedHolderVMs(ctx, op, seeds, vms, use)
	if err != nil {
		return held, err
	}
	return held, b.readSeedUse(ctx, op, read, use)
}

// seedHolderVMs is readSeedHolders' first half: whether each seed's storage is shared on its
// node, and the VMs of vms whose configs tell who has one of the seeds on a drive.
func (b *Backend) seedHolderVMs(ctx context.Context, op string, seeds []Seed, vms []pveapi.Resource, use *seedUse) (seedHolders, []pveapi.Resource, error) {
	held := seedHolders{use: use, shared: map[string]bool{}}
	if len(seeds) == 0 {
		return held, nil, nil
	}
	anyShared := false
	nodes := map[string]bool{}
	for _, s := range seeds {
		nodes[s.Node] = true
		key := s.Node + "|" + storageOf(s.VolID)
		if _, ok := held.shared[key]; ok {
			continue
		}
		shared, err := b.storageShared(ctx, op == "delete", s.Node, storageOf(s.VolID))
		if err != nil {
			return held, nil, apiErrorf(op, err, "reading storage %s on node %s", storageOf(s.VolID), s.Node)
		}
		held.shared[key] = shared
		anyShared = anyShared || shared
	}
	var read []pveapi.Resource
	for _, r := range vms {
		if anyShared || nodes[r.Node] {
			read = append(read, r)
		}
	}
	return held, read, nil
}

// May this seed go (decision: seed-in-use): every seed delete other than a destroy's sweep
// (which reads the same holders through its cache, sweepHolders) and the clean-up (which
// reads them for all its seeds at once, seedsUnused) goes through deleteUnheld: a seed swap's
// old seed and the leftovers of a swap cut off, a migration's source copy, the seeds of an
// interrupted create taken over. A seed is kept when any VM has it (seedHolders.of): on a
// drive, in a pending value, or in any snapshot section, by volume id or by absolute path
// (addVM, isoPathKey), the VM that asks among them (its own snapshot may name the seed a
// swap replaced). A seed kept is noted, naming the VM and the snapshot; the VM's destroy
// (the sweep, which skips the VM destroyed) deletes it when the VM goes.

// seedHoldersFor reads who holds seeds: the QEMU VMs of the cluster's listing but skipVMID
// (a VM about to be destroyed; 0: none), and self (the VM that asks, when the listing does
// not show it yet), through readSeedHolders.
func (b *Backend) seedHoldersFor(ctx context.Context, op string, seeds []Seed, self pveapi.Resource, skipVMID int) (seedHolders, error) {
	use := seedUse{names: map[string]bool{}, vols: map[string]bool{}, uids: map[string]bool{}, drives: map[string]string{}}
	if len(seeds) == 0 {
		return seedHolders{use: &use}, nil
	}
	res, err := b.listing(ctx, false)
	if err != nil {
		return seedHolders{}, apiErrorf(op, err, "listing the cluster's VMs to check that no VM has the seed ISO on a drive or in a snapshot")
	}
	var vms []pveapi.Resource
	seen := false
	for _, r := range res {
		if r.Type != "qemu" || r.VMID == skipVMID {
			continue
		}
		seen = seen || r.VMID == self.VMID
		vms = append(vms, r)
	}
	if self.VMID != 0 && self.VMID != skipVMID && !seen {
		vms = append(vms, self)
	}
	return b.readSeedHolders(ctx, op, seeds, vms, &use)
}

// deleteUnheld deletes each seed on node that no VM holds (seedHoldersFor) and notes each
// one kept, naming who has it. A failed read deletes nothing and fails the call.
func (b *Backend) deleteUnheld(ctx context.Context, op, node string, seeds []seedVol, self pveapi.Resource, skipVMID int) error {
	if len(seeds) == 0 {
		return nil
	}
	pairs := make([]Seed, len(seeds))
	for i, v := range seeds {
		pairs[i] = Seed{Node: node, VolID: v.volid()}
	}
	held, err := b.seedHoldersFor(ctx, op, pairs, self, skipVMID)
	if err != nil {
		return err
	}
	for _, v := range seeds {
		if by := held.of(node, v.volid()); by != "" {
			noteSeedKept(ctx, node, v, by)
			continue
		}
		if err := b.deleteSeed(ctx, op, node, v); err != nil {
			return err
		}
	}
	return nil
}

// noteSeedKept is the note of a seed not deleted because by (seedHolders.of) has it.
func noteSeedKept(ctx context.Context, node string, v seedVol, by string) {
	note(ctx, "the seed ISO %s was kept on node %s: it is attached to %s, so it stays while that VM may use it (a "+
		"rollback to a snapshot boots from it); the destroy of this resource's VM deletes it, or delete it by hand with "+
		"`pvesm free %s` on node %s once no VM uses it", v.volid(), node, by, v.volid(), node)
}

// deleteSeedsOfTakenOver deletes, on node, the seeds an interrupted create left that this
// Create takes over (the VM at vmid, which it destroys): the one its ide2 names (wherever
// it is) and the one its uid would have uploaded to iso_storage, unless another VM holds
// one (deleteUnheld).
func (b *Backend) deleteSeedsOfTakenOver(ctx context.Context, node string, vmid int, name, prevUID string, cfg map[string]string) error {
	var seeds []seedVol
	if v, ok := vmSeed(name, cfg); ok && v.file != operatorSeedFile(name) {
		seeds = append(seeds, v)
	}
	if prevUID != "" {
		if v := (seedVol{storage: b.cfg.ISOStorage, file: seedFile(name, prevUID)}); !slices.Contains(seeds, v) {
			seeds = append(seeds, v)
		}
	}
	return b.deleteUnheld(ctx, "create", node, seeds, pveapi.Resource{}, vmid)
}

// seedFix is what ensureSeed did.
type seedFix int

const (
	seedPresent  seedFix = iota // nothing to do: ide2 holds no seed of ours, or the seed is there
	seedUploaded                // the seed was missing and was rebuilt from Changes.UserData
	seedDropIDE2                // the seed was missing and no user-data is known: remove ide2
)

// ensureSeed runs before a start in Update. When the seed the VM's ide2 names is missing
// from its storage on node (a destroy that failed after the seed delete,
// decision: seed-before-destroy), the seed is rebuilt from ch.UserData with the provider's
// vendor-data and uploaded to the same volume; without known user-data (an imported VM)
// the caller removes ide2 instead, since cloud-init reads the seed at first boot only. A
// hibernated VM refuses config writes, so without user-data it is Permanent.
func (b *Backend) ensureSeed(ctx context.Context, node string, id ID, cfg map[string]string, ch Changes, hibernated bool) (seedFix, error) {
	v, ok := vmSeed(id.Name, cfg)
	if !ok {
		return seedPresent, nil
	}
	vols, err := b.api.StorageContent(ctx, node, v.storage, "iso")
	if err != nil {
		return seedPresent, apiErrorf("update", err, "listing storage %s on node %s to check the seed ISO before the start", v.storage, node)
	}
	for _, got := range vols {
		if got.VolID == v.volid() {
			return seedPresent, nil
		}
	}
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "node": node, "volid": v.volid()}
	if !ch.UserDataKnown {
		if hibernated {
			return seedPresent, Permanentf("the VM is hibernated and its seed ISO %s is missing, so Proxmox cannot resume it, and its cloud-init user-data is not known "+
				"(the VM was imported) to rebuild the seed; set cloud_init to the VM's user-data and apply again, or upload an ISO named %s to storage %s on node %s",
				v.volid(), v.file, v.storage, node)
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed iso missing, user-data unknown: removing ide2 before the start", fields)
		return seedDropIDE2, nil
	}
	iso, err := b.buildSeedFor(id.Name, v.file, ch.UserData, ch.Network, cfg["net0"])
	if err != nil {
		return seedPresent, err
	}
	fields["cloud_init_bytes"] = len(ch.UserData)
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed iso missing: uploading it again before the start", fields)
	if err := b.putSeed(ctx, "update", node, v, iso, " (it was missing before the start)"); err != nil {
		return seedPresent, err
	}
	return seedUploaded, nil
}

// seedMove is what a migration does with the VM's seed ISO (migrate.go): Proxmox refuses
// to migrate a VM whose CD-ROM holds an ISO on storage that is not shared, so the seed is
// ejected, uploaded to the target (on iso_storage there, rebuilt from the user-data when
// known), attached there after the move, and deleted where it was.
type seedMove struct {
	src      seedVol // the seed ide2 names, on the source; zero: no seed to move
	dst      seedVol // where the rebuilt seed goes on the target
	ide2     string  // ide2's value before the eject
	ejected  bool
	uploaded bool
}

// seedToMove reads whether the seed ISO ide2 names must be carried over by a migration
// from node from: it is a CD-ROM on a storage that is not shared (a storage that is gone
// has no file to carry over, only the drive to empty).
func (b *Backend) seedToMove(ctx context.Context, op string, id ID, from string, cfg map[string]string) (seedVol, bool, error) {
	v, ok := vmSeed(id.Name, cfg)
	if !ok || !strings.Contains(cfg["ide2"], "media=cdrom") {
		return seedVol{}, false, nil
	}
	ss, err := b.api.StorageStatus(ctx, from, v.storage)
	switch {
	case err == nil:
	case pveapi.IsMissingStorage(err):
		ss = pveapi.StorageStatus{}
	default:
		return seedVol{}, false, apiErrorf(op, err, "reading storage %s on node %s before migrating the VM", v.storage, from)
	}
	return v, ss.Shared != 1, nil
}

// moveSeedOut uploads the seed ISO to the target (rebuilt from userData, when rebuild)
// and ejects it on the source, when the plan carries one over.
func (m *migration) moveSeedOut(ctx context.Context, rebuild bool, userData []byte) error {
	b := m.b
	if m.seed.src == (seedVol{}) {
		return nil
	}
	if rebuild {
		data, err := b.buildSeedFor(m.id.Name, m.seed.dst.file, userData, m.network, m.cfg["net0"])
		if err != nil {
			return err
		}
		if err := b.putSeed(ctx, m.op, m.to, m.seed.dst, data, " before the migration"); err != nil {
			return err
		}
		m.seed.uploaded = true
	}
	if err := b.api.SetVMConfig(ctx, m.from, m.id.VMID, map[string]string{"ide2": ide2Empty}); err != nil {
		return m.rollbackSeed(ctx, apiErrorf(m.op, err, "ejecting the seed ISO on node %s before the migration (Proxmox cannot migrate a VM with a CD-ROM ISO on a storage that is not shared)", m.from))
	}
	m.seed.ejected = true
	return nil
}

// finishSeed attaches the seed on the target and deletes it from the source. An attach
// that fails is logged: the VM has moved, cloud-init does not read the seed again, and the
// copy on the target carries the VM's uid, so its destroy removes it. A source copy that
// cannot be deleted fails the update, naming it: nothing else would ever remove it.
func (m *migration) finishSeed(ctx context.Context) error {
	if m.seed.src == (seedVol{}) {
		return nil
	}
	if m.seed.uploaded {
		if err := m.b.api.SetVMConfig(ctx, m.to, m.id.VMID, map[string]string{"ide2": ide2Seed(m.seed.dst)}); err != nil {
			m.logCleanup(ctx, "attaching the seed ISO on the target failed", err)
		}
	}
	self := pveapi.Resource{Type: "qemu", VMID: m.id.VMID, Node: m.to, Name: m.id.Name}
	if err := m.b.deleteUnheld(ctx, m.op, m.from, []seedVol{m.seed.src}, self, 0); err != nil {
		return &Error{Class: ClassOf(err), Err: fmt.Errorf("the VM moved to node %s, but its seed ISO's old copy was not deleted: %w", m.to, err)}
	}
	return nil
}

// rollbackSeed undoes moveSeedOut after a migration that did not happen, and returns
// cause, with the copy on the target named when it could not be deleted.
func (m *migration) rollbackSeed(ctx context.Context, cause error) error {
	if m.seed.ejected {
		if err := m.b.api.SetVMConfig(ctx, m.from, m.id.VMID, map[string]string{"ide2": m.seed.ide2}); err != nil {
			m.logCleanup(ctx, "attaching the seed ISO again on the source failed", err)
		}
	}
	if m.seed.uploaded {
		if err := m.b.deleteSeed(ctx, m.op, m.to, m.seed.dst); err != nil {
			return &Error{Class: ClassOf(cause), Err: fmt.Errorf("%w; the seed ISO copy made for the migration was not deleted either: %s", cause, err.Error())}
		}
	}
	return cause
}

// Reseed is an in-place replacement of a VM's seed ISO (Changes.Reseed,
// cloud_init_change = "restart"): the next generation of its seed (decision: seed-swap),
// built from Changes.UserData and Changes.Network with a new instance-id, and the mark lines
// that describe what the seed carries.
type Reseed struct {
	// UserDataDigest is the mark's user-data digest line after the change; "" removes it.
	UserDataDigest string
}

// swapSeed replaces the seed of the VM at id on node (settled as ours by the caller, under
// its lock) with the next generation, and returns the VM's config as it is after it:
//
//  1. leftovers of an earlier swap that did not finish (a seed of this VM, by name and
//     the resource's uid, that its ide2 does not name) are deleted: the recovery, so a swap
//     cut off anywhere converges at the next apply;
//  2. the next generation is uploaded to iso_storage (fact: upload-overwrites);
//  3. one config write names it on ide2 and rewrites the mark's digest lines;
//  4. the old seed is deleted.
//
// Before 1, the mark records the swap under way (MarkKeySeedSwap), and the write in 3 drops
// the line: a swap killed between the two (kill -9, no answer to Terraform, no private
// state) leaves the line, and a new seed on storage that ide2 does not name, which a
// refresh finds (SwapLeftovers). A kill after 3 leaves ide2 naming another generation than
// the state's. Either way the next plan swaps the seed again, and step 1 deletes what the
// killed swap left.
//
// A failure in 2 or 3 deletes the new seed again (unless the config write did land, which a
// read tells) and drops the line, so the VM keeps booting from its old seed and nothing is
// left; a failure in 4 names the old seed, which step 1 of the next swap, or the VM's
// Delete, removes.
func (b *Backend) swapSeed(ctx context.Context, node string, id ID, uid string, cfg map[string]string, ch Changes) (map[string]string, error) {
	if !ch.UserDataKnown {
		return cfg, Permanentf("the VM's cloud-init user-data is not known (it was imported and cloud_init was never set), so its seed ISO cannot be rebuilt; " +
			"set cloud_init (or cloud_init_wo) to the VM's user-data and apply again")
	}
	if b.cfg.ISOStorage == "" {
		return cfg, Permanentf("the provider has no iso_storage to upload the new seed ISO to")
	}
	cur, hasCur := vmSeed(id.Name, cfg)
	gen := 1
	if hasCur {
		if n, u, g, ok := parseSeedGen(cur.file); ok && n == id.Name && u == uid {
			gen = g
		}
	}
	next := seedVol{storage: b.cfg.ISOStorage, file: seedFileGen(id.Name, uid, gen+1)}
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "node": node, "seed": next.volid(), "cloud_init_bytes": len(ch.UserData)}
	if hasCur {
		fields["old_seed"] = cur.volid()
	}
	cfg, err := b.markSwapStarted(ctx, node, id.VMID, cfg, gen+1)
	if err != nil {
		return cfg, err
	}
	if err := b.deleteSwapLeftovers(ctx, node, id, uid, cur, next); err != nil {
		return cfg, err
	}
	iso, err := b.buildSeedFor(id.Name, next.file, ch.UserData, ch.Network, cfg["net0"])
	if err != nil {
		return cfg, err
	}
	if err := b.putSeed(ctx, "update", node, next, iso, " (the new seed of a cloud-init change)"); err != nil {
		return cfg, b.dropNewSeed(ctx, node, id.VMID, cfg, next, err)
	}
	desc := withMarkLines(cfg["description"], reseedMarkLines(ch))
	params := map[string]string{"ide2": ide2Seed(next)}
	if desc != cfg["description"] {
		params["description"] = desc
	}
	if err := b.api.SetVMConfig(ctx, node, id.VMID, params); err != nil {
		werr := apiErrorf("update", err, "naming the new seed ISO %s on ide2 on node %s", next.volid(), node)
		got, rerr := b.api.VMConfig(ctx, node, id.VMID)
		switch {
		case rerr != nil:
			// Whether the write landed is not known (an interrupt, a lost answer, and no read
			// back): the new seed is kept, as the VM may name it.
			return cfg, &Error{Class: ClassOf(werr), Err: fmt.Errorf("%w; the write may have landed all the same: the VM's CD-ROM may "+
				"name the new seed ISO %s, with the new cloud-init, which the guest then runs at its next start. The next plan reads "+
				"which seed the VM names: if it is the new one, the plan swaps it for a seed with the configured cloud-init; if not, "+
				"the next swap or the destroy deletes %s", werr, next.volid(), next.file)}
		case got["ide2"] != params["ide2"]:
			return cfg, b.dropNewSeed(ctx, node, id.VMID, got, next, werr)
		}
		// The write landed although its answer was lost: carry on.
	}
	out := maps.Clone(cfg)
	maps.Copy(out, params)
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed iso swapped", fields)
	if hasCur && cur != next {
		if err := b.deleteUnheld(ctx, "update", node, []seedVol{cur}, selfOf(node, id), 0); err != nil {
			return out, &Error{Class: ClassOf(err), Err: fmt.Errorf("the VM boots from its new seed ISO %s now, but its old one was not deleted: %w "+
				"(the next apply of this change, or the VM's destroy, deletes it)", next.volid(), err)}
		}
	}
	return out, nil
}

// deleteSwapLeftovers deletes, on node's iso_storage, the seeds of VM name with uid that
// neither its ide2 (cur) nor the swap under way (next) names: what a swap cut off left. The
// listing is one request; the uid in a file name is the resource's, and a seed some VM
// holds (its own snapshot, say) is kept (deleteUnheld, decision: seed-swap).
func (b *Backend) deleteSwapLeftovers(ctx context.Context, node string, id ID, uid string, cur, next seedVol) error {
	name := id.Name
	vols, err := b.api.StorageContent(ctx, node, b.cfg.ISOStorage, "iso")
	if err != nil {
		if pveapi.IsMissingStorage(err) {
			return nil
		}
		return apiErrorf("update", err, "listing storage %s on node %s for seed ISOs an earlier cloud-init change left", b.cfg.ISOStorage, node)
	}
	var left []seedVol
	for _, got := range vols {
		v, ok := parseISOVol(got.VolID)
		if !ok || v == cur || v == next {
			continue
		}
		if !isSwapLeftover(v, name, uid) {
			continue
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed left by an earlier swap: deleting it", map[string]any{"name": name, "node": node, "seed": v.volid()})
		left = append(left, v)
	}
	return b.deleteUnheld(ctx, "update", node, left, selfOf(node, id), 0)
}

// selfOf is the listing entry of the VM at id on node, for seedHoldersFor.
func selfOf(node string, id ID) pveapi.Resource {
	return pveapi.Resource{Type: "qemu", VMID: id.VMID, Node: node, Name: id.Name}
}

// dropNewSeed deletes a new seed whose swap failed before the VM named it, then drops the
// swap's line from the mark of the VM whose config is cfg, and returns cause, with the seed
// named when it could not be deleted (the next swap's leftovers step deletes it). When ctx
// has ended nothing more can be sent. A line that could not be dropped only costs a
// refresh one storage listing until the next swap.
func (b *Backend) dropNewSeed(ctx context.Context, node string, vmid int, cfg map[string]string, v seedVol, cause error) error {
	if ctx.Err() != nil {
		return &Error{Class: ClassOf(cause), Err: fmt.Errorf("%w; the new seed ISO %s may be left on node %s: the next apply of this change deletes it", cause, v.volid(), node)}
	}
	if err := b.deleteSeed(ctx, "update", node, v); err != nil {
		return &Error{Class: ClassOf(cause), Err: fmt.Errorf("%w; the new seed ISO %s could not be deleted either (%s): the next apply of this change deletes it", cause, v.volid(), err.Error())}
	}
	if desc := withMarkLines(cfg["description"], []markLine{{MarkKeySeedSwap, ""}}); desc != cfg["description"] {
		if err := b.api.SetVMConfig(ctx, node, vmid, map[string]string{"description": desc}); err != nil {
			tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed swap line not dropped", map[string]any{"vmid": vmid, "node": node, "error": err.Error()})
		}
	}
	return cause
}

// markSwapStarted writes MarkKeySeedSwap (generation gen) into the mark of the VM whose
// config is cfg, and returns the config as it is after it; nothing is written when the
// line is there already (a swap cut off before, swapped again).
func (b *Backend) markSwapStarted(ctx context.Context, node string, vmid int, cfg map[string]string, gen int) (map[string]string, error) {
	desc := withMarkLines(cfg["description"], []markLine{{MarkKeySeedSwap, strconv.Itoa(gen)}})
	if desc == cfg["description"] {
		return cfg, nil
	}
	if err := b.api.SetVMConfig(ctx, node, vmid, map[string]string{"description": desc}); err != nil {
		return cfg, apiErrorf("update", err, "recording the seed swap in the VM's description on node %s", node)
	}
	out := maps.Clone(cfg)
	out["description"] = desc
	return out, nil
}

// SwapLeftovers returns the seeds of vm (by its name and uid) on its node's iso_storage
// that its ide2 does not name, when its mark says a seed swap was under way
// (MarkKeySeedSwap): what a swap killed before its config write left (decision:
// seed-swap). One listing request, made only when the line is there; a refresh reads it,
// and nothing is written.
func (b *Backend) SwapLeftovers(ctx context.Context, vm VM, uid string) ([]string, error) {
	if vm.MarkExtra.SeedSwap == "" || uid == "" || b.cfg.ISOStorage == "" {
		return nil, nil
	}
	vols, err := b.api.StorageContent(ctx, vm.Node, b.cfg.ISOStorage, "iso")
	if err != nil {
		if pveapi.IsMissingStorage(err) {
			return nil, nil
		}
		return nil, apiErrorf("read", err, "listing storage %s on node %s for seed ISOs a cut-off cloud-init change left", b.cfg.ISOStorage, vm.Node)
	}
	cur, _ := parseISOVol(vm.Seed)
	var out []string
	for _, got := range vols {
		if v, ok := parseISOVol(got.VolID); ok && v != cur && isSwapLeftover(v, vm.ID.Name, uid) {
			out = append(out, v.volid())
		}
	}
	return out, nil
}

// isSwapLeftover says v is a seed of VM name with uid (any generation).
func isSwapLeftover(v seedVol, name, uid string) bool {
	n, u, ok := parseUIDSeed(v.file)
	return ok && n == name && u == uid
}

// reseedMarkLines are the mark lines that describe a swapped seed: the user-data digest,
// the network digest and the static address ("" removes a line).
func reseedMarkLines(ch Changes) []markLine {
	static := ""
	if ch.Network != nil && ch.Network.Static != nil {
		static = FormatStaticIPv4(*ch.Network.Static)
	}
	return []markLine{
		{MarkKeyUserDataDigest, ch.Reseed.UserDataDigest},
		{MarkKeyNetworkDigest, NetworkDigest(ch.Network)},
		{MarkKeyStaticIPv4, static},
		{MarkKeySeedSwap, ""},
	}
}
