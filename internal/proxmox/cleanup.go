package proxmox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	// Instance is its mark's instance line (decision: instance-binding): set by the create's
	// config step, so a VM that has it got past its clone.
	Instance string
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
	o := OrphanVM{ID: ID{VMID: r.VMID, Name: name}, Node: r.Node, UID: m.UID, CreatedAt: m.CreatedAt,
		Abandoned: state == markStateAbandoned, Instance: m.Instance}
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
	// CleanNeedsLook is a half-made VM the cleanup does not delete, whatever its age: it
	// shows a sign of having got past its clone (decision: instance-binding), so its
	// creating mark may be a replayed copy on a live VM. Nothing is sent to it.
	CleanNeedsLook CleanAction = "needs a look"
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
	if e.Action == CleanNeedsLook {
		s = fmt.Sprintf("%s %s on node %s (%s) %s", e.Kind, e.What, e.Node, age, e.Action)
	}
	if e.Why != "" {
		s += ": " + e.Why
	}
	return s
}

// CleanReport counts what CleanOrphans did.
type CleanReport struct {
	Events []CleanEvent
	// Deleted (or, in a dry run, would be deleted), Kept, Failed and NeedsLook count the
	// events.
	Deleted, Kept, Failed, NeedsLook int
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
	r := &cleanRun{b: b, opts: opts, progress: progress}
	if opts.VMs {
		if err := r.cleanVMs(ctx); err != nil {
			return r.rep, err
		}
	}
	if opts.Seeds {
		if err := r.cleanSeeds(ctx); err != nil {
			return r.rep, err
		}
	}
	b.invalidateListing()
	return r.rep, nil
}

// cleanRun is one CleanOrphans call: its options and what it reported so far.
type cleanRun struct {
	b        *Backend
	opts     CleanOptions
	progress func(CleanEvent)
	rep      CleanReport
}

// emit records e in the report, logs it and tells the progress callback.
func (r *cleanRun) emit(ctx context.Context, e CleanEvent) {
	r.rep.Events = append(r.rep.Events, e)
	switch e.Action {
	case CleanDeleted, CleanWouldDelete:
		r.rep.Deleted++
	case CleanKept:
		r.rep.Kept++
	case CleanFailed:
		r.rep.Failed++
	case CleanNeedsLook:
		r.rep.NeedsLook++
	}
	tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox orphan cleanup", map[string]any{
		"kind": string(e.Kind), "action": string(e.Action), "what": e.What, "node": e.Node, "age": e.Age.String(), "why": e.Why,
	})
	if r.progress != nil {
		r.progress(e)
	}
}

// age is how old something made at t is, -1 when t is not known.
func (r *cleanRun) age(t time.Time) time.Duration {
	if t.IsZero() {
		return -1
	}
	return max(r.b.clock.Now().Sub(t), 0)
}

// cleanDecision is what the cleanup does with an orphan of age a (-1: not known), decided
// before any request: kept (keep says why), reported as a deletion in a dry run
// (CleanWouldDelete), or deleted ("").
func cleanDecision(a, grace time.Duration, dryRun bool, keep string) (CleanAction, string) {
	switch {
	case keep != "":
		return CleanKept, keep
	case a < 0:
		return CleanKept, "its age is not known, so it may belong to a create still running"
	case a < grace:
		return CleanKept, fmt.Sprintf("younger than the grace period (%s): it may belong to a create still running", grace)
	case dryRun:
		return CleanWouldDelete, ""
	}
	return "", ""
}

// cleanVMs deletes the half-made VMs old enough (deleteHalfMade), seed included, and
// reports a VM whose config could not be read as failed.
func (r *cleanRun) cleanVMs(ctx context.Context) error {
	vms, skipped, err := r.b.OrphanVMs(ctx, r.opts.Namespace)
	if err != nil {
		return err
	}
	for _, sk := range skipped {
		r.emit(ctx, CleanEvent{Kind: CleanVM, Action: CleanFailed, What: fmt.Sprintf("%s (VMID %d)", sk.ID.Name, sk.ID.VMID),
			Node: sk.Node, Age: -1, Why: "its config could not be read, so whether it is a half-made VM is not known: " + sk.Err.Error()})
	}
	for _, o := range vms {
		e := CleanEvent{Kind: CleanVM, What: fmt.Sprintf("%s (VMID %d)", o.ID.Name, o.ID.VMID), Node: o.Node, Age: r.age(o.CreatedAt)}
		e.Action, e.Why = cleanDecision(e.Age, r.opts.Grace, false, "")
		if e.Action != "" {
			r.emit(ctx, e)
			continue
		}
		signs, err := r.b.pastClone(ctx, o)
		switch {
		case err != nil:
			e.Action, e.Why = CleanFailed, "whether it got past its clone could not be read: "+err.Error()
		case len(signs) > 0:
			e.Action, e.Why = CleanNeedsLook, needsLook(o, signs)
		case r.opts.DryRun:
			e.Action, e.Why = CleanWouldDelete, "with its seed ISO "+o.Seed+" if no other VM uses it"
		}
		if e.Action != "" {
			r.emit(ctx, e)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		seed, err := r.b.deleteHalfMade(ctx, o, r.opts.Namespace)
		var look *pastCloneError
		switch {
		case errors.As(err, &look):
			e.Action, e.Why = CleanNeedsLook, needsLook(o, look.signs)
		case err != nil:
			e.Action, e.Why = CleanFailed, err.Error()
			if ctx.Err() != nil {
				r.emit(ctx, e)
				return err
			}
		default:
			e.Action, e.Why = CleanDeleted, seed
		}
		r.emit(ctx, e)
	}
	return nil
}

// pastClone says which signs the half-made VM o shows of having got past its clone, read
// afresh (decision: instance-binding): each takes more than VM.Config.Options to fake, so
// a creating (or abandoned) mark, a text anyone who read the description can write back,
// never gets a VM without them deleted on its word alone. The signs: an instance line in
// its mark (the create's config step ran), a power state other than stopped (a start, or
// a hibernation), a seed-named ISO on any drive, pending value or snapshot section (the
// seed-use reading the seed sweep uses, readSeedUse), and, for a mark without an instance
// line, a config that is not an untouched clone of a catalogue template (catalogueClone).
// A VM gone meanwhile shows none.
func (b *Backend) pastClone(ctx context.Context, o OrphanVM) ([]string, error) {
	var signs []string
	if o.Instance != "" {
		signs = append(signs, "its mark carries a "+MarkKeyInstance+" line, so its create's config step ran")
	}
	st, err := b.api.VMStatus(ctx, o.Node, o.ID.VMID)
	switch {
	case isNotExist(err):
		return nil, nil
	case err != nil:
		return nil, apiErrorf("delete", err, "reading the status of VMID %d on node %s", o.ID.VMID, o.Node)
	case st.Status != "stopped":
		signs = append(signs, "it is "+st.Status)
	case st.Lock == "suspended":
		signs = append(signs, "it is hibernated")
	}
	if o.Instance == "" {
		switch why, err := b.untouchedCloneSign(ctx, o); {
		case err != nil:
			return nil, err
		case why != "":
			signs = append(signs, why)
		}
	}
	use := seedUse{names: map[string]bool{}, vols: map[string]bool{}, uids: map[string]bool{}, drives: map[string]string{}}
	r := pveapi.Resource{VMID: o.ID.VMID, Node: o.Node, Name: o.ID.Name, Type: "qemu"}
	if err := b.readSeedUse(ctx, "delete", []pveapi.Resource{r}, &use); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(use.drives)) {
		if vol, ok := strings.CutPrefix(k, "|"); ok && isSeedVolID(vol) {
			signs = append(signs, fmt.Sprintf("seed ISO %s is attached to %s", vol, use.drives[k]))
		}
	}
	return signs, nil
}

// pastCloneError is deleteHalfMade's refusal of a VM that, read again before its claim,
// shows signs of having got past its clone.
type pastCloneError struct{ signs []string }

func (e *pastCloneError) Error() string {
	return "it got past its clone: " + strings.Join(e.signs, "; ")
}

// needsLook is a CleanNeedsLook event's reason: the VMID, what was found, how to find
// whose it is, and only then how to remove it.
func needsLook(o OrphanVM, signs []string) string {
	return fmt.Sprintf("VMID %d is marked as a half-made VM of this provider, but %s. Its mark may be a copy written on "+
		"someone's VM, so nothing was sent to it. To find whose it is: look for VMID %d in your Terraform states, and "+
		"at who ran tasks on it (`pvenode task list --vmid %d` on each node; a clone onto it is listed under its source VM, "+
		"`pvenode task list --typefilter qmclone`). "+
		"Only if no state tracks it, no apply is running and nobody claims it, destroy it with `qm stop %d && qm destroy %d --purge`",
		o.ID.VMID, strings.Join(signs, "; "), o.ID.VMID, o.ID.VMID, o.ID.VMID, o.ID.VMID)
}

// cleanSeeds deletes the orphan seeds old enough, listed afresh (seedsUnused): a seed the
// API token may not prove unused (Seed.Unproved), or that a VM of another name has on a
// drive, is kept and reported.
func (r *cleanRun) cleanSeeds(ctx context.Context) error {
	nodes := r.opts.Nodes
	if len(nodes) == 0 {
		nodes = r.b.cfg.Nodes
	}
	seeds, err := r.b.seedsUnused(ctx, nodes)
	var skipped *SkippedNodesError
	if err != nil && !errors.As(err, &skipped) {
		return err
	}
	if skipped != nil {
		for _, n := range skipped.Nodes {
			r.emit(ctx, CleanEvent{Kind: CleanSeed, Action: CleanFailed, What: r.b.cfg.ISOStorage, Node: n.Node, Age: -1,
				Why: "the ISO storage could not be listed: " + n.Err.Error()})
		}
	}
	done := map[string]bool{}
	for _, s := range seeds {
		e := CleanEvent{Kind: CleanSeed, What: s.VolID, Node: s.Node, Age: r.age(s.CreatedAt)}
		e.Action, e.Why = cleanDecision(e.Age, r.opts.Grace, r.opts.DryRun, seedKept(s))
		if e.Action != "" {
			r.emit(ctx, e)
			continue
		}
		key := s.Node + "|" + s.VolID
		if done[key] {
			continue
		}
		done[key] = true
		v, _ := parseISOVol(s.VolID)
		if err := r.b.deleteSeed(ctx, "delete", s.Node, v); err != nil {
			e.Action, e.Why = CleanFailed, err.Error()
			r.emit(ctx, e)
			if ctx.Err() != nil {
				return err
			}
			continue
		}
		e.Action = CleanDeleted
		r.emit(ctx, e)
	}
	return nil
}

// seedKept says why a seed the listing found unused by its VM is kept whatever its age,
// "" when nothing keeps it.
func seedKept(s unusedSeed) string {
	switch {
	case s.Unproved != "": // decision: orphan-visibility
		return s.Unproved
	case s.attachedTo != "":
		// Named like a seed of ours whose VM is gone, but a VM of another name has it on a
		// drive (a proxy VM renamed, a clone made from one in the UI, a rescue VM): a
		// delete would take its CD-ROM image away.
		return "attached to " + s.attachedTo + ": a VM uses it, whatever its name"
	}
	return ""
}

// deleteHalfMade claims a half-made VM, then deletes it with its seed, and says what
// became of that seed (seedOutcome). The claim is a compare-and-swap of its description on
// the config digest, after checking that it is still the VM that was listed (proved
// half-made, same name, uid and created-at) and that it still shows no sign of having got
// past its clone (pastClone; a *pastCloneError when it does): a create that took it over
// meanwhile changed its uid and created-at, and one that takes it over after the claim
// finds it no longer "creating" and leaves it alone.
func (b *Backend) deleteHalfMade(ctx context.Context, o OrphanVM, namespace string) (string, error) {
	cfg, err := b.api.VMConfig(ctx, o.Node, o.ID.VMID)
	switch {
	case err == nil:
	case isNotExist(err):
		return "it was gone meanwhile", nil
	default:
		return "", apiErrorf("delete", err, "reading the config of VMID %d on node %s", o.ID.VMID, o.Node)
	}
	desc := cfg["description"]
	now, ok := b.halfMade(pveapi.Resource{VMID: o.ID.VMID, Node: o.Node}, cfg, namespace)
	if !ok || now.ID.Name != o.ID.Name || now.UID != o.UID || !now.CreatedAt.Equal(o.CreatedAt) {
		return "", Transientf("VMID %d changed since it was listed (another create took it over, or it was replaced): left alone", o.ID.VMID)
	}
	switch signs, err := b.pastClone(ctx, now); {
	case err != nil:
		return "", err
	case len(signs) > 0:
		return "", &pastCloneError{signs: signs}
	}
	if markState(desc) == MarkStateCreating {
		claim := map[string]string{"description": withMarkState(desc, markStateAbandoned), "digest": cfg["digest"]}
		err := b.api.SetVMConfig(ctx, o.Node, o.ID.VMID, claim)
		switch {
		case err == nil:
		case pveapi.IsConfigModified(err):
			return "", Transientf("VMID %d changed while it was claimed (a create may be taking it over): left alone", o.ID.VMID)
		default:
			return "", apiErrorf("delete", err, "claiming VMID %d (rewriting its mark's state line) on node %s", o.ID.VMID, o.Node)
		}
	}
	before, berr := b.seedPresent(ctx, o)
	dctx, notes := WithNotes(ctx)
	err = b.DeleteVM(dctx, o.ID, DeleteOptions{Node: o.Node, UID: o.UID, Seed: o.Seed})
	lines := notes.Lines()
	if outer, ok := ctx.Value(notesKey{}).(*Notes); ok {
		outer.mu.Lock()
		outer.lines = append(outer.lines, lines...)
		outer.mu.Unlock()
	}
	if err != nil {
		return "", err
	}
	after, aerr := b.seedPresent(ctx, o)
	return seedOutcome(o, before, after, errors.Join(berr, aerr), lines), nil
}

// seedPresent reports whether o's seed is on its node's ISO storage.
func (b *Backend) seedPresent(ctx context.Context, o OrphanVM) (bool, error) {
	if o.Seed == "" {
		return false, nil
	}
	vols, err := b.api.StorageContent(ctx, o.Node, storageOf(o.Seed), "iso")
	if err != nil {
		return false, err
	}
	for _, v := range vols {
		if v.VolID == o.Seed {
			return true, nil
		}
	}
	return false, nil
}

// seedOutcome says what the delete of a half-made VM did with its seed ISO, from whether it
// was there before and after the delete and the delete's notes: deleted, kept (and why:
// another VM has it on a drive), or not there.
func seedOutcome(o OrphanVM, before, after bool, listErr error, notes []string) string {
	switch {
	case o.Seed == "":
		return "no seed ISO is known for it"
	case listErr != nil:
		return "its seed ISO " + o.Seed + " may remain: the ISO storage could not be listed (" + listErr.Error() + ")"
	case before && !after:
		return "with its seed ISO " + o.Seed
	case !before && !after:
		return "it had no seed ISO (" + o.Seed + " was not on node " + o.Node + ")"
	}
	for _, n := range notes {
		if strings.Contains(n, o.Seed) {
			return "its seed ISO " + o.Seed + " was kept: " + n
		}
	}
	return "its seed ISO " + o.Seed + " was kept (still on node " + o.Node + ")"
}
