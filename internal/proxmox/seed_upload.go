package proxmox

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

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
		return seedPresent, apiErrorf(
			"update",
			err,
			"listing storage %s on node %s to check the seed ISO before the start",
			v.storage,
			node,
		)
	}
	for _, got := range vols {
		if got.VolID == v.volid() {
			return seedPresent, nil
		}
	}
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "node": node, "volid": v.volid()}
	if !ch.UserDataKnown {
		if hibernated {
			return seedPresent, Permanentf(
				"the VM is hibernated and its seed ISO %s is missing, so Proxmox cannot resume it, and its cloud-init user-data is not known "+
					"(the VM was imported) to rebuild the seed; "+
					"set cloud_init to the VM's user-data and apply again, or upload an ISO named %s to storage %s on node %s",
				v.volid(),
				v.file,
				v.storage,
				node,
			)
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
		return m.rollbackSeed(
			ctx,
			apiErrorf(
				m.op,
				err,
				"ejecting the seed ISO on node %s before the migration (Proxmox cannot migrate a VM with a CD-ROM ISO on a storage that is not shared)",
				m.from,
			),
		)
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
		return &Error{
			Class: ClassOf(err),
			Err:   fmt.Errorf("the VM moved to node %s, but its seed ISO's old copy was not deleted: %w", m.to, err),
		}
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
			return &Error{
				Class: ClassOf(cause),
				Err:   fmt.Errorf("%w; the seed ISO copy made for the migration was not deleted either: %s", cause, err.Error()),
			}
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

// swapSeed replaces the seed of the VM at id on node (settled as ours by the caller, under its
// lock) with the next generation and returns the VM's config after it (decision: seed-swap):
// delete what an earlier cut-off swap left, upload the next generation, name it on ide2 in one
// config write, delete the old seed. The mark's swap line, written first and dropped by that
// write, lets a refresh find a swap that was killed; a failure cleans up what it uploaded.
func (b *Backend) swapSeed(
	ctx context.Context,
	node string,
	id ID,
	uid string,
	cfg map[string]string,
	ch Changes,
) (map[string]string, error) {
	if !ch.UserDataKnown {
		return cfg, Permanentf(
			"the VM's cloud-init user-data is not known (it was imported and cloud_init was never set), so its seed ISO cannot be rebuilt; " +
				"set cloud_init (or cloud_init_wo) to the VM's user-data and apply again",
		)
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
			return out, &Error{
				Class: ClassOf(err),
				Err: fmt.Errorf("the VM boots from its new seed ISO %s now, but its old one was not deleted: %w "+
					"(the next apply of this change, or the VM's destroy, deletes it)", next.volid(), err),
			}
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
		return apiErrorf(
			"update",
			err,
			"listing storage %s on node %s for seed ISOs an earlier cloud-init change left",
			b.cfg.ISOStorage,
			node,
		)
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
		tflog.SubsystemDebug(
			ctx,
			LogSubsystem,
			"proxmox seed left by an earlier swap: deleting it",
			map[string]any{"name": name, "node": node, "seed": v.volid()},
		)
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
		return &Error{
			Class: ClassOf(cause),
			Err: fmt.Errorf(
				"%w; the new seed ISO %s may be left on node %s: the next apply of this change deletes it",
				cause,
				v.volid(),
				node,
			),
		}
	}
	if err := b.deleteSeed(ctx, "update", node, v); err != nil {
		return &Error{
			Class: ClassOf(cause),
			Err: fmt.Errorf(
				"%w; the new seed ISO %s could not be deleted either (%s): the next apply of this change deletes it",
				cause,
				v.volid(),
				err.Error(),
			),
		}
	}
	if desc := withMarkLines(cfg["description"], []markLine{{MarkKeySeedSwap, ""}}); desc != cfg["description"] {
		if err := b.api.SetVMConfig(ctx, node, vmid, map[string]string{"description": desc}); err != nil {
			tflog.SubsystemDebug(
				ctx,
				LogSubsystem,
				"proxmox seed swap line not dropped",
				map[string]any{"vmid": vmid, "node": node, "error": err.Error()},
			)
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
		return nil, apiErrorf(
			"read",
			err,
			"listing storage %s on node %s for seed ISOs a cut-off cloud-init change left",
			b.cfg.ISOStorage,
			vm.Node,
		)
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
