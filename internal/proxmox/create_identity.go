package proxmox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Identity (docs/design/identity.md): a resource owns only a VM it created or was given
// by import. Each Create mints a random uid (Spec.UID) and writes it in the mark with the
// namespace line and the state line "creating"; where it looks for a VMID is deterministic
// (vmidFor(Spec.AllocKey, attempt), AllocKey being the name's key in the namespace), so an
// interrupted create of this name is always on this name's probe sequence. A VM found
// there is judged by its config (judge): ours by uid; an interrupted create of this name
// in this namespace (still "creating") is taken over; a finished VM of the same name is
// another resource's and is skipped; a VM of our name that this provider did not make is
// refused.

// takenOverErr is what a Create says when another Create took its VM over meanwhile: two
// applies creating the same name in the same uid_namespace at the same moment.
func takenOverErr(vmid int, name, other string) error {
	return &Error{Class: pveapi.Transient, Err: errTakenOver{fmt.Errorf("VMID %d was taken over by another apply creating %q in the "+
		"same uid_namespace at the same time (its uid %s): that apply finishes it and owns it; this one leaves it alone, and the next "+
		"apply of this resource creates its own VM",
		vmid, name, other)}}
}

// errTakenOver marks takenOverErr's message, so that Create knows its VMID holds another
// Create's VM.
type errTakenOver struct{ error }

func (e errTakenOver) Unwrap() error { return e.error }

// IsTakenOver reports a create whose VM another apply creating the same name took over
// (takenOverErr): the create holds no VM of its own.
func IsTakenOver(err error) bool { return isTakenOver(err) }

// isTakenOver reports a takenOverErr.
func isTakenOver(err error) bool {
	var t errTakenOver
	return errors.As(err, &t)
}

// failed is Create's last word on a failure: whose VM the VMID holds now, and what the state
// may keep. Our name with another uid of this namespace is a takeover by a concurrent apply
// of the same name (said so, not blamed on something outside Terraform); a VM that vanished
// is read again within lostGrace. A Create left with no VM of its own tells onAllocated to
// forget its VMID, so that no state entry points at another guest, after deleting its own
// seed (decision: create-steps).
func (c *creation) failed(ctx context.Context, err error) error {
	if c.vmid != 0 && (c.cloned || c.adopted) && !isTakenOver(err) && ctx.Err() == nil && !pveapi.IsEndpointUnreachable(err) {
		// Any failure after the clone may come from a takeover (the VM stopped, gone, or
		// rebuilt by the other apply and answering as a fresh clone does); the mark tells.
		if other, ok := c.takenOverAfterFailure(ctx, vmLost(err)); ok {
			err = takenOverErr(c.vmid, c.s.Name, other)
		}
	}
	switch {
	case isTakenOver(err):
		if c.node != "" && ctx.Err() == nil {
			if serr := c.b.deleteSeed(ctx, "create", c.node, c.b.createSeed(c.s)); serr != nil {
				tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox seed of a taken-over create not deleted; the VMID stays saved", map[string]any{
					"vmid": c.vmid, "name": c.s.Name, "node": c.node, "error": serr.Error(),
				})
				return err
			}
		}
		c.release()
		c.vmid = 0 // the error names the VMID in its text, not as this VM's
	case c.vmid == 0:
		c.release()
	}
	return err
}

// lostf is a Transient error saying that the VM stopped, paused, hibernated or vanished
// while a create or an update waited on it (vmLost tells it).
func lostf(format string, args ...any) *Error {
	return &Error{Class: pveapi.Transient, Err: errVMLost{fmt.Errorf(format, args...)}}
}

type errVMLost struct{ error }

func (e errVMLost) Unwrap() error { return e.error }

// vmLost reports a lostf failure.
func vmLost(err error) bool {
	var l errVMLost
	return errors.As(err, &l)
}

// takenOverBy reads the VMID's config: our name and mark with another uid of our namespace
// is another Create's takeover. A VMID that is gone or locked says nothing.
func (c *creation) takenOverBy(ctx context.Context) (string, bool) {
	cfg, err := c.b.api.VMConfig(ctx, c.node, c.vmid)
	if err != nil {
		return "", false
	}
	return c.otherUID(cfg)
}

// otherUID reads a config of the create's VMID: our name and mark with another uid of our
// namespace is another Create's takeover (its uid).
func (c *creation) otherUID(cfg map[string]string) (string, bool) {
	if cfg["name"] != c.s.Name {
		return "", false
	}
	m := ParseMark(cfg["description"])
	if !m.Managed || m.UID == "" || m.UID == c.s.UID || !m.HasNamespace || m.Namespace != c.s.Namespace {
		return "", false
	}
	return m.UID, true
}

// lostGrace is how long a create that failed waits for its VMID to hold a VM again: a
// takeover destroys a VM that may have booted and clones it afresh onto the same VMID at
// once (the gap is one listing), so a VMID empty for longer was emptied by someone else.
const lostGrace = 10 * time.Second

// takenOverAfterFailure reads the VMID's config after a failure: our name and mark with
// another uid of our namespace is a takeover (its uid). A takeover that rebuilds the VM
// leaves the VMID empty for a moment, then cloning (a nameless config under the clone
// lock): a VM seen cloning is read again within the clone budget, as the probe waits on a
// clone, and, when the failure was the VM vanishing (lost), a VMID that does not exist is
// read again within lostGrace. Anything else says no takeover.
func (c *creation) takenOverAfterFailure(ctx context.Context, lost bool) (string, bool) {
	var other string
	var found bool
	var goneSince time.Time
	_ = c.b.pollUntil(ctx, lostGrace+c.b.cfg.Budgets.Clone, func(ctx context.Context) (bool, error) {
		cfg, err := c.b.api.VMConfig(ctx, c.node, c.vmid)
		switch {
		case err == nil:
		case isNotExist(err):
			if goneSince.IsZero() {
				goneSince = c.b.clock.Now()
			}
			return !lost || c.b.clock.Now().Sub(goneSince) >= lostGrace, nil
		default:
			return true, nil // an answer that says nothing about the mark
		}
		goneSince = time.Time{}
		if l := cfg["lock"]; cfg["name"] == "" && l != "" && l != "suspended" {
			return false, nil // cloning: its mark comes with the clone's end
		}
		other, found = c.otherUID(cfg)
		return true, nil
	})
	return other, found
}

// stillOwned is the address wait's ownership check: the VMID's config still carries this
// Create's uid. Another uid of our name and namespace is a takeover; a read that fails
// says nothing (the wait's own polls judge the VM and its node).
func (c *creation) stillOwned(ctx context.Context) error {
	if other, ok := c.takenOverBy(ctx); ok {
		return takenOverErr(c.vmid, c.s.Name, other)
	}
	return nil
}

// release tells onAllocated that this Create holds no VMID any more (ID{} and no node).
func (c *creation) release() {
	if c.onAllocated == nil || c.notified.VMID == 0 {
		return
	}
	c.notified = ID{}
	c.onAllocated(ID{}, "")
}

// listedPlaceholder reports whether a listing entry's name tells nothing about the VM: empty
// (a clone in progress) or "VM <vmid>", the name pvestatd's snapshot shows for a VM whose
// config had no name yet when it was taken. The config decides for such an entry.
func listedPlaceholder(r pveapi.Resource) bool {
	return r.Name == "" || r.Name == "VM "+strconv.Itoa(r.VMID)
}

// settledConfig reads vmid's config within the clone budget until no task lock other than
// suspended holds it, unless the config names a VM other than name: a lock of someone
// else's VM is never waited on. gone reports a VMID that does not exist (any more).
func (b *Backend) settledConfig(ctx context.Context, vmid int, node, name string) (cfg map[string]string, gone bool, err error) {
	var lastLock string
	err = b.pollUntil(ctx, b.cfg.Budgets.Clone, func(ctx context.Context) (bool, error) {
		got, err := b.api.VMConfig(ctx, node, vmid)
		switch {
		case err == nil:
		case isNotExist(err):
			gone = true
			return true, nil
		case classify("create", err) == pveapi.Permanent:
			return false, unreadableConfig(apiErrorf("create", err, "reading the config of VMID %d on node %s", vmid, node))
		default:
			return false, nil // retried within the budget
		}
		if n := got["name"]; n != "" && n != name {
			cfg = got
			return true, nil
		}
		if l := got["lock"]; l != "" && l != "suspended" {
			lastLock = l
			return false, nil
		}
		cfg = got
		return true, nil
	})
	if errors.Is(err, errBudget) {
		return nil, false, Transientf("VMID %d on node %s is still locked (%s) after %s; if a clone was interrupted, "+
			"clear the lock with `qm unlock %d` or destroy that VM, then apply again",
			vmid, node, lastLock, b.cfg.Budgets.Clone, vmid)
	}
	if err != nil {
		return nil, false, budgetErr(err, "waiting for VMID %d to be unlocked", vmid)
	}
	return cfg, gone, nil
}

// verdictResume is a VM that an interrupted Create of this name in this namespace left
// unfinished, proved so (provedCreating): Create takes it over.
const verdictResume verdict = verdictGone + 1

// judge is the ownership rule for a VM met by a Create at vmid on node (its config
// settled): ownedBy with this Create's uid, then, for our name and mark with another uid,
// provedCreating. A VM that claims to be an interrupted create of this name in this
// namespace but fails the proof is foreign, reported (CreateReport.Unproved), and never
// touched.
func (c *creation) judge(vmid int, node string, cfg map[string]string) (verdict, error) {
	s := &c.s
	mark, why := ownedBy(cfg, s.Name, Owner{UID: s.UID})
	switch why {
	case notOursNone:
		if cfg["lock"] == "suspended" {
			return 0, Permanentf("VM %s at VMID %d is ours but hibernated (lock suspended); "+
				"resume or destroy it in Proxmox, then apply again", s.Name, vmid)
		}
		return verdictOurs, nil
	case notOursName:
		return verdictForeign, nil
	case notOursUnmarked:
		return 0, Permanentf("VMID %d already holds a VM named %q without the %s=true mark; "+
			"this provider never takes over a VM it did not create, and `terraform import proxy_vm.<name> vms/%d/%s` refuses it too: "+
			"rename or remove that VM in Proxmox",
			vmid, s.Name, MarkKeyManaged, vmid, s.Name)
	}
	// Our name and mark, another uid or none.
	if m, ok, unproved := provedCreating(c.proofKey, cfg, vmid, s.Name, s.Namespace); ok {
		if age := c.b.clock.Now().Sub(m.CreatedAt); age > TakeoverWindow || age < -TakeoverWindow {
			// Proved, but too old (or dated ahead) to be an interrupted create of this
			// configuration still worth resuming: a copy of a mark, possibly. Passed, never
			// touched; the orphan cleanup removes a genuine one.
			c.noteUnproved(vmid, node, mark, fmt.Sprintf("its creating mark is dated %s, outside the %s a create may take an interrupted "+
				"create over in (a copied mark, or a create abandoned long ago: the proxy_orphan_cleanup action removes the latter)",
				m.CreatedAt.Format(time.RFC3339), TakeoverWindow))
			return verdictForeign, nil
		}
		if cfg["lock"] == "suspended" {
			return 0, Permanentf("VMID %d holds an interrupted create of %q that is hibernated (lock suspended); "+
				"resume or destroy it in Proxmox, then apply again", vmid, s.Name)
		}
		return verdictResume, nil
	} else if mark.HasNamespace && mark.Creating && mark.Namespace == s.Namespace {
		c.noteUnproved(vmid, node, mark, unproved)
		return verdictForeign, nil
	}
	if mark.HasNamespace {
		// Finished (another resource's, workspace's or generation's VM of this name), or
		// being created in another namespace: never adopted, changed or destroyed.
		return verdictForeign, nil
	}
	if mark.UID == "" {
		return 0, Permanentf("VMID %d holds a VM named %q whose mark (%s=true) carries no uid line and none of this provider's lines: "+
			"written by hand, or by a tool that is not this provider; a create never takes over such a VM, and an import needs the uid: "+
			"to manage it here, add a line %s=<a new UUID> to its description and import it with `terraform import proxy_vm.<name> vms/%d/%s`, "+
			"or rename or remove it in Proxmox",
			vmid, s.Name, MarkKeyManaged, MarkKeyUID, vmid, s.Name)
	}
	return 0, Permanentf("VMID %d holds a VM named %q that this provider did not create (its mark carries uid %s and none of this "+
		"provider's lines: the proxy operator's, or written by hand); a create never takes over such a VM: to manage it here, import it "+
		"with `terraform import proxy_vm.<name> vms/%d/%s` instead of creating it, or rename or remove it in Proxmox",
		vmid, s.Name, mark.UID, vmid, s.Name)
}

// noteUnproved records, once per VMID, a VM that claims to be an interrupted create of
// this name in this namespace but fails the proof.
func (c *creation) noteUnproved(vmid int, node string, m Mark, why string) {
	for _, u := range c.report.Unproved {
		if u.VMID == vmid {
			return
		}
	}
	c.report.Unproved = append(c.report.Unproved, UnprovedVM{VMID: vmid, Node: node, UID: m.UID, CreatedAt: m.CreatedAt, Why: why})
}

// creatingMark is the description of this Create's VM at vmid: the mark with the instance
// line when instance is known (the config step's, decision: instance-binding), the
// creating line and its proof (no proof without a key: then no later create can take it
// over), the extra lines, the note.
func (c *creation) creatingMark(vmid int, instance string) string {
	s := &c.s
	l := MarkLines{UID: s.UID, CreatedAt: s.CreatedAt, Namespace: s.Namespace, Instance: instance}
	var mark string
	if len(c.proofKey) > 0 {
		mark = CreatingMark(c.proofKey, l, vmid, s.Name)
	} else {
		l.Creating = true
		mark = l.Format()
	}
	return withNote(mark+FormatMarkExtra(*s), noteOfSpec(*s))
}

// refuseForeignByName is the by-name lookup under the identity rule (decision: identity-and-adoption): a VM listed under our name
// anywhere that this provider did not create (the operator's, or unmarked) is refused
// before anything is touched, with the import command; the config decides, not the
// listing. Same-name VMs of this provider (a create_before_destroy predecessor, another
// workspace's) coexist.
func (c *creation) refuseForeignByName(ctx context.Context, res []pveapi.Resource) error {
	for _, r := range res {
		if r.Type != "qemu" || r.Template != 0 || r.Name != c.s.Name {
			continue
		}
		cfg, err := c.b.api.VMConfig(ctx, r.Node, r.VMID)
		switch {
		case err == nil:
		case isNotExist(err):
			continue
		default:
			return apiErrorf("create", err, "reading the config of VMID %d on node %s, a VM named %q", r.VMID, r.Node, c.s.Name)
		}
		if _, err := c.judge(r.VMID, r.Node, cfg); err != nil {
			return err
		}
	}
	return nil
}

// takeOver rewrites the mark of an interrupted create's VM (proved by judge) with this
// Create's uid and a proof for this VMID, a compare-and-swap on the config digest so that
// two Creates never both win. It reports false when the config changed since it was read
// (the caller judges the VM again). The takeover is reported (CreateReport.TakenOver) and
// logged at warning level. The seed ISO the previous uid used is deleted, and the VM is
// always destroyed so that the probe clones it afresh onto the same VMID: a proof can be
// copied onto a VM somebody else cloned (TakeoverWindow), and only a VM this Create cloned
// itself may ever receive its seed.
func (c *creation) takeOver(ctx context.Context, vmid int, node string, cfg map[string]string) (rebuilt, ok bool, err error) {
	b, s := c.b, &c.s
	prev := ParseMark(cfg["description"])
	c.vmid, c.node = vmid, node
	c.notify()
	err = b.api.SetVMConfig(ctx, node, vmid, map[string]string{"description": c.creatingMark(vmid, ""), "digest": cfg["digest"]})
	switch {
	case err == nil:
	case pveapi.IsConfigModified(err), isNotExist(err):
		return false, false, nil
	default:
		return false, false, apiErrorf("create", err, "taking over VMID %d, an interrupted create of %q, on node %s", vmid, s.Name, node)
	}
	_, seeded := vmSeed(s.Name, cfg)
	tflog.SubsystemWarn(ctx, LogSubsystem, "proxmox interrupted create taken over", map[string]any{
		"vmid": vmid, "name": s.Name, "node": node, "uid": s.UID, "previous_uid": prev.UID, "seeded": seeded,
	})
	c.report.TakenOver = append(c.report.TakenOver, TakenOverVM{VMID: vmid, Node: node, PreviousUID: prev.UID,
		CreatedAt: prev.CreatedAt, Rebuilt: true})
	c.adopted = true
	if err := b.deleteSeedsOfTakenOver(ctx, node, vmid, s.Name, prev.UID, cfg); err != nil {
		return false, false, err
	}
	st, err := b.api.VMStatus(ctx, node, vmid)
	if err != nil && !isNotExist(err) {
		return false, false, apiErrorf("create", err, "reading the status of VMID %d on node %s", vmid, node)
	}
	if err == nil && st.Status != "stopped" {
		if err := b.stopAndWait(ctx, "create", node, vmid); err != nil && !isNotExist(err) {
			return false, false, err
		}
	}
	upid, err := b.api.Destroy(ctx, node, vmid)
	switch {
	case err == nil:
		if err := b.waitTask(ctx, upid, b.cfg.Budgets.Destroy); err != nil {
			return false, false, err
		}
	case isNotExist(err):
	default:
		return false, false, apiErrorf("create", err,
			"destroying VMID %d, an interrupted create of %q that may have booted, to clone it afresh", vmid, s.Name)
	}
	c.adopted = false
	return true, true, nil
}

// checkStillOurs reads the VM's config after our clone and judges it by uid only: another
// uid means another Create took it over.
func (c *creation) checkStillOurs(ctx context.Context) (map[string]string, error) {
	cfg, gone, err := c.b.settledConfig(ctx, c.vmid, c.node, c.s.Name)
	switch {
	case err != nil:
		return nil, err
	case gone:
		return nil, Transientf("VMID %d does not exist on node %s any more; apply again", c.vmid, c.node)
	}
	switch m, why := ownedBy(cfg, c.s.Name, Owner{UID: c.s.UID}); why {
	case notOursNone:
		return cfg, nil
	case notOursName:
		return nil, Transientf("VMID %d holds another VM (%q); apply again", c.vmid, cfg["name"])
	default:
		return nil, takenOverErr(c.vmid, c.s.Name, m.UID)
	}
}
