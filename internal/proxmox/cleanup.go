package proxmox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Orphans and their cleanup (decision: orphans). What the provider can leave behind with
// no resource to own it: a seed ISO no VM uses (OrphanSeeds), and a half-made VM, one whose
// create was abandoned before its last step and that no later create took over
// (OrphanVMs). Both are found with their age, and removed only by an explicit step
// (CleanOrphans: the proxy_orphan_cleanup action) that leaves alone whatever is younger
// than a grace period, since a create running in another workspace looks the same: its
// seed is uploaded while its VM is still being cloned, and its VM is marked "creating"
// until its last step.

// markStateAbandoned is the state line CleanOrphans writes on a half-made VM before it
// deletes it: no create takes over a VM that no longer says "creating", so the delete
// never races a create that takes it over at the same moment.
const markStateAbandoned = "abandoned"

// OrphanVM is a half-made VM of this provider: its mark still says "creating", with a
// proof that this provider made it there (or "abandoned": a cleanup claimed it and its
// delete did not finish).
type OrphanVM struct {
	ID   ID
	Node string
	UID  string
	// CreatedAt is the mark's created-at: when the create that made (or last took over)
	// the VM started. The zero time when the mark has none.
	CreatedAt time.Time
	// Seed is the seed volume its ide2 names, or the one its create uploads, when known.
	Seed string
	// Abandoned: a cleanup claimed it already.
	Abandoned bool
}

// OrphanVMs lists the half-made VMs of this provider in the uid_namespace namespace:
// within the provider's VMID range (the only VMIDs its creates use), a QEMU VM whose mark
// still says "creating" (or "abandoned": a cleanup claimed it) and is proved this
// provider's (halfMade). It reads the config of every VM listed in that range,
// ListConcurrency at a time; a VM whose config cannot be read (its node down) is left out
// and returned as skipped, unless ctx ended, which fails the call, as List does. A create
// that is still running is listed too: the caller tells it by its age.
func (b *Backend) OrphanVMs(ctx context.Context, namespace string) ([]OrphanVM, []SkippedVM, error) {
	var out []OrphanVM
	_, skipped, err := b.scan(ctx, scanOptions{halfMade: func(o OrphanVM) { out = append(out, o) }, namespace: namespace, fresh: true})
	if err != nil {
		return nil, nil, err
	}
	return out, skipped, nil
}

// halfMade says whether cfg, met at r's VMID, is a half-made VM of this provider in
// namespace: the ownership rule's provedCreating (ownership.go, decision: creating-proof),
// whose proof covers the uid, the VMID, the name and the namespace, with the state line
// "abandoned" (a cleanup's claim) read as "creating". Without the proof key nothing is
// proved, so no VM is half-made.
func (b *Backend) halfMade(r pveapi.Resource, cfg map[string]string, namespace string) (OrphanVM, bool) {
	name, desc := cfg["name"], cfg["description"]
	state := markState(desc)
	if name == "" || (state != MarkStateCreating && state != markStateAbandoned) || b.cfg.ProofKey == nil {
		return OrphanVM{}, false
	}
	key, err := b.cfg.ProofKey()
	if err != nil {
		return OrphanVM{}, false
	}
	check := maps.Clone(cfg)
	check["description"] = withMarkState(desc, MarkStateCreating)
	m, ok, _ := provedCreating(key, check, r.VMID, name, namespace)
	if !ok {
		return OrphanVM{}, false
	}
	o := OrphanVM{ID: ID{VMID: r.VMID, Name: name}, Node: r.Node, UID: m.UID, CreatedAt: m.CreatedAt, Abandoned: state == markStateAbandoned}
	if v, ok := vmSeed(name, cfg); ok {
		o.Seed = v.volid()
	} else if b.cfg.ISOStorage != "" {
		o.Seed = seedVolID(b.cfg.ISOStorage, seedFile(name, m.UID))
	}
	return o, true
}

// markState is the value of the mark's state line, "" without one.
func markState(desc string) string {
	for line := range strings.SplitSeq(desc, "\n") {
		if k, v, ok := parseMarkLine(line); ok && k == MarkKeyState {
			return v
		}
	}
	return ""
}

// withMarkState is desc with its state line's value replaced by state.
func withMarkState(desc, state string) string {
	lines := strings.Split(desc, "\n")
	for i, line := range lines {
		if k, _, ok := parseMarkLine(line); ok && k == MarkKeyState {
			lines[i] = MarkKeyState + "=" + state
			break
		}
	}
	return strings.Join(lines, "\n")
}

// CleanOptions tune CleanOrphans.
type CleanOptions struct {
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// Grace: only orphans at least this old are deleted (their age from the volume's ctime,
	// the mark's created-at); younger ones may belong to a create still running.
	Grace time.Duration
	// Seeds and VMs say what is looked at.
	Seeds, VMs bool
	// Namespace is the provider's uid_namespace: the half-made VMs of other namespaces
	// belong to other configurations.
	Namespace string
	// Nodes are the nodes whose ISO storage is looked at; empty: the provider's.
	Nodes []string
}

// CleanKind is what a CleanEvent is about.
type CleanKind string

// The kinds of CleanEvent.
const (
	CleanSeed CleanKind = "seed ISO"
	CleanVM   CleanKind = "half-made VM"
)

// CleanAction is what CleanOrphans did (or, in a dry run, would do) with one orphan.
type CleanAction string

// The actions of a CleanEvent.
const (
	CleanWouldDelete CleanAction = "would delete"
	CleanDeleted     CleanAction = "deleted"
	CleanKept        CleanAction = "kept"
	CleanFailed      CleanAction = "failed"
)

// CleanEvent is one orphan and what happened to it.
type CleanEvent struct {
	Kind   CleanKind
	Action CleanAction
	// What names it: the volume id for a seed, "<name> (VMID <vmid>)" for a VM.
	What string
	Node string
	Age  time.Duration // -1 when its age is not known
	// Why is the reason it was kept, or the error it failed with.
	Why string
}

// String is the event as one line.
func (e CleanEvent) String() string {
	age := "age unknown"
	if e.Age >= 0 {
		age = "age " + e.Age.Round(time.Second).String()
	}
	s := fmt.Sprintf("%s %s %s on node %s (%s)", e.Action, e.Kind, e.What, e.Node, age)
	if e.Why != "" {
		s += ": " + e.Why
	}
	return s
}

// CleanReport counts what CleanOrphans did.
type CleanReport struct {
	Events []CleanEvent
	// Deleted (or, in a dry run, would be deleted), Kept and Failed count the events.
	Deleted, Kept, Failed int
}

// CleanOrphans removes the orphans at least opts.Grace old (decision: orphans): first the
// half-made VMs (each claimed by a compare-and-swap of its mark from "creating" to
// "abandoned", so that no create can take it over meanwhile, then deleted as Delete does,
// seed included), then the seed ISOs no VM uses, listed afresh. Younger orphans are kept
// and reported, and so is every seed when the API token may not see every VM
// (Seed.Unproved, decision: orphan-visibility): a half-made VM is proved ours by its mark,
// a seed only by no VM using it. A dry run reports the same and changes nothing. progress,
// when set, gets each event as it happens. One orphan that cannot be deleted is reported
// (Failed) and the others are still done; a listing that fails ends the call with an error.
func (b *Backend) CleanOrphans(ctx context.Context, opts CleanOptions, progress func(CleanEvent)) (CleanReport, error) {
	var rep CleanReport
	emit := func(e CleanEvent) {
		rep.Events = append(rep.Events, e)
		switch e.Action {
		case CleanDeleted, CleanWouldDelete:
			rep.Deleted++
		case CleanKept:
			rep.Kept++
		case CleanFailed:
			rep.Failed++
		}
		tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox orphan cleanup", map[string]any{
			"kind": string(e.Kind), "action": string(e.Action), "what": e.What, "node": e.Node, "age": e.Age.String(), "why": e.Why,
		})
		if progress != nil {
			progress(e)
		}
	}
	age := func(t time.Time) time.Duration {
		if t.IsZero() {
			return -1
		}
		return max(b.clock.Now().Sub(t), 0)
	}
	keepYoung := func(a time.Duration) string {
		if a < 0 {
			return "its age is not known, so it may belong to a create still running"
		}
		if a < opts.Grace {
			return fmt.Sprintf("younger than the grace period (%s): it may belong to a create still running", opts.Grace)
		}
		return ""
	}
	if opts.VMs {
		vms, skipped, err := b.OrphanVMs(ctx, opts.Namespace)
		if err != nil {
			return rep, err
		}
		for _, sk := range skipped {
			emit(CleanEvent{Kind: CleanVM, Action: CleanFailed, What: fmt.Sprintf("%s (VMID %d)", sk.ID.Name, sk.ID.VMID), Node: sk.Node, Age: -1,
				Why: "its config could not be read, so whether it is a half-made VM is not known: " + sk.Err.Error()})
		}
		for _, o := range vms {
			e := CleanEvent{Kind: CleanVM, What: fmt.Sprintf("%s (VMID %d)", o.ID.Name, o.ID.VMID), Node: o.Node, Age: age(o.CreatedAt)}
			if why := keepYoung(e.Age); why != "" {
				e.Action, e.Why = CleanKept, why
				emit(e)
				continue
			}
			if opts.DryRun {
				e.Action = CleanWouldDelete
				e.Why = "with its seed ISO " + o.Seed
				emit(e)
				continue
			}
			if err := b.deleteHalfMade(ctx, o, opts.Namespace); err != nil {
				e.Action, e.Why = CleanFailed, err.Error()
				if ctx.Err() != nil {
					emit(e)
					return rep, err
				}
			} else {
				e.Action, e.Why = CleanDeleted, "with its seed ISO "+o.Seed
			}
			emit(e)
		}
	}
	if opts.Seeds {
		nodes := opts.Nodes
		if len(nodes) == 0 {
			nodes = b.cfg.Nodes
		}
		seeds, err := b.OrphanSeedsOn(ctx, nodes)
		var skipped *SkippedNodesError
		if err != nil && !errors.As(err, &skipped) {
			return rep, err
		}
		if skipped != nil {
			for _, n := range skipped.Nodes {
				emit(CleanEvent{Kind: CleanSeed, Action: CleanFailed, What: b.cfg.ISOStorage, Node: n.Node, Age: -1,
					Why: "the ISO storage could not be listed: " + n.Err.Error()})
			}
		}
		var attached map[string]string
		if len(seeds) > 0 {
			if attached, err = b.attachedISOs(ctx); err != nil {
				return rep, err
			}
		}
		done := map[string]bool{}
		for _, s := range seeds {
			e := CleanEvent{Kind: CleanSeed, What: s.VolID, Node: s.Node, Age: age(s.CreatedAt)}
			if s.Unproved != "" { // decision: orphan-visibility
				e.Action, e.Why = CleanKept, s.Unproved
				emit(e)
				continue
			}
			if vm, ok := attached[s.VolID]; ok {
				// Named like a seed of ours whose VM is gone, but a VM of another name has it
				// on a drive (a proxy VM renamed, a clone made from one in the UI, a rescue
				// VM): a delete would take its CD-ROM image away.
				e.Action, e.Why = CleanKept, "attached to "+vm+": a VM uses it, whatever its name"
				emit(e)
				continue
			}
			if why := keepYoung(e.Age); why != "" {
				e.Action, e.Why = CleanKept, why
				emit(e)
				continue
			}
			if opts.DryRun {
				e.Action = CleanWouldDelete
				emit(e)
				continue
			}
			key := s.Node + "|" + s.VolID
			if done[key] {
				continue
			}
			done[key] = true
			v, _ := parseISOVol(s.VolID)
			if err := b.deleteSeed(ctx, "delete", s.Node, v); err != nil {
				e.Action, e.Why = CleanFailed, err.Error()
				emit(e)
				if ctx.Err() != nil {
					return rep, err
				}
				continue
			}
			e.Action = CleanDeleted
			emit(e)
		}
	}
	b.invalidateListing()
	return rep, nil
}

// deleteHalfMade claims a half-made VM, then deletes it with its seed. The claim is a
// compare-and-swap of its description on the config digest, after checking that it is
// still the VM that was listed (proved half-made, same name, uid and created-at): a create
// that took it over meanwhile changed its uid and created-at, and one that takes it over
// after the claim finds it no longer "creating" and leaves it alone.
func (b *Backend) deleteHalfMade(ctx context.Context, o OrphanVM, namespace string) error {
	cfg, err := b.api.VMConfig(ctx, o.Node, o.ID.VMID)
	switch {
	case err == nil:
	case isNotExist(err):
		return nil // gone meanwhile
	default:
		return apiErrorf("delete", err, "reading the config of VMID %d on node %s", o.ID.VMID, o.Node)
	}
	desc := cfg["description"]
	now, ok := b.halfMade(pveapi.Resource{VMID: o.ID.VMID, Node: o.Node}, cfg, namespace)
	if !ok || now.ID.Name != o.ID.Name || now.UID != o.UID || !now.CreatedAt.Equal(o.CreatedAt) {
		return Transientf("VMID %d changed since it was listed (another create took it over, or it was replaced): left alone", o.ID.VMID)
	}
	if markState(desc) == MarkStateCreating {
		err := b.api.SetVMConfig(ctx, o.Node, o.ID.VMID, map[string]string{"description": withMarkState(desc, markStateAbandoned), "digest": cfg["digest"]})
		switch {
		case err == nil:
		case pveapi.IsConfigModified(err):
			return Transientf("VMID %d changed while it was claimed (a create may be taking it over): left alone", o.ID.VMID)
		default:
			return apiErrorf("delete", err, "claiming VMID %d (rewriting its mark's state line) on node %s", o.ID.VMID, o.Node)
		}
	}
	return b.DeleteVM(ctx, o.ID, DeleteOptions{Node: o.Node, UID: o.UID, Seed: o.Seed})
}

// attachedISOs maps every ISO volume that a VM the token can see has on any drive (ide,
// sata, scsi, virtio; CD-ROM or not) to that VM: one config read per listed VM, at most
// max_requests_in_flight at once. The orphan listing judges a seed by the VMs of its name;
// a delete needs to know that no VM at all uses it.
func (b *Backend) attachedISOs(ctx context.Context) (map[string]string, error) {
	res, err := b.listing(ctx, true)
	if err != nil {
		return nil, apiErrorf("delete", err, "listing the cluster's VMs")
	}
	var vms []pveapi.Resource
	for _, r := range res {
		if r.Type == "qemu" {
			vms = append(vms, r)
		}
	}
	out := map[string]string{}
	var readErr error
	err = b.eachConfig(ctx, vms, func(r pveapi.Resource, cfg map[string]string, err error) bool {
		switch {
		case isNotExist(err):
			return true
		case err != nil:
			readErr = apiErrorf("delete", err, "reading the config of VMID %d on node %s, to tell whether it uses a seed ISO", r.VMID, r.Node)
			return false
		}
		for k, v := range cfg {
			if !isDriveKey(k) {
				continue
			}
			vol, _, _ := strings.Cut(v, ",")
			if _, ok := parseISOVol(vol); ok {
				out[vol] = fmt.Sprintf("VM %d (%s) as %s", r.VMID, cfg["name"], k)
			}
		}
		return true
	})
	if readErr != nil {
		return nil, readErr
	}
	if err != nil {
		return nil, apiErrorf("delete", err, "reading the listed VMs' configs")
	}
	return out, nil
}

// isDriveKey reports a config key of a disk or CD-ROM drive: ide0-3, sata0-5, scsi0-30,
// virtio0-15 (qemu-server PVE/QemuServer/Drive.pm, the drive buses).
func isDriveKey(k string) bool {
	for _, bus := range []string{"ide", "sata", "scsi", "virtio"} {
		if n, ok := strings.CutPrefix(k, bus); ok && n != "" && strings.Trim(n, "0123456789") == "" {
			return true
		}
	}
	return false
}
