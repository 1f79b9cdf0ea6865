package proxmox

import (
	"context"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Get maps a VM's state for Terraform's Read (decision: state-mapping): ErrNotFound
// (errors.Is) when the VMID no longer holds the resource's VM (gone, reused, or not proved
// ours by ownedBy), Transient for a nameless VM mid-clone (fact: nameless-mid-clone), and
// otherwise the VM as read: a lock, a hibernated or paused VM and a status not reported yet
// (VM.StatusUnknown) are values, not errors. Only with opts.Agent does the guest agent give
// the address (decision: address-discovery); without it a Get makes at most three requests:
// the shared listing, the config and status/current.
func (b *Backend) Get(ctx context.Context, id ID, opts GetOptions) (VM, error) {
	start := b.clock.Now()
	vm, err := b.get(ctx, id, opts)
	if err == nil && opts.HA {
		b.getHA(ctx, &vm)
	}
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "duration_ms": b.clock.Now().Sub(start).Milliseconds()}
	if err != nil {
		err = wrap("get", id.Name, id.VMID, err)
		fields["class"] = ClassOf(err).String()
		fields["error"] = err.Error()
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm get failed", fields)
		return VM{}, err
	}
	fields["node"], fields["state"], fields["ip"], fields["uid"] = vm.Node, string(vm.State), vm.IP, vm.UID
	if vm.Lock != "" {
		fields["lock"] = vm.Lock
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm fetched", fields)
	return vm, nil
}

// get reads the VM at id (getConfig), proves it the resource's (owned), then adds what
// status/current (getStatus) and, with opts.Agent, the guest agent (getAgent) say.
func (b *Backend) get(ctx context.Context, id ID, opts GetOptions) (VM, error) {
	if err := id.Validate(); err != nil {
		return VM{}, err
	}
	r, cfg, err := b.getConfig(ctx, id, opts.FreshListing)
	if err != nil {
		return VM{}, err
	}
	mark, err := b.owned(ctx, id, r.Node, cfg, Owner{UID: opts.UID, Instance: opts.Instance}, opts.AnyOwner)
	if err != nil {
		return VM{}, err
	}
	vm := vmFromConfig(id, r.Node, cfg, mark)
	if !opts.AnyOwner && (!mark.Managed || mark.UID != opts.UID) {
		// Shown the resource's by the state's record alone (recordedInstance): its mark
		// wiped, or its uid line deleted or rewritten. The state's uid stays; an update
		// writes the whole mark back (restoredMark).
		vm.UID, vm.MarkEdited = opts.UID, true
	}
	if v, ok := vmSeed(id.Name, cfg); ok {
		vm.Seed = v.volid()
	}
	vm.Pool = r.Pool
	if err := b.verifyPool(ctx, &vm, opts.Pool); err != nil {
		return VM{}, err
	}
	// The config's lock is current; the listing's may be a snapshot's.
	vm.Lock = cfg["lock"]
	if vm.Lock == "suspended" {
		vm.State, vm.Hibernated = StateStopped, true
		return vm, nil
	}
	more, err := b.getStatus(ctx, &vm, r, cfg)
	switch {
	case err != nil:
		return VM{}, err
	case !more:
		return vm, nil
	}
	if vm.State != StateRunning || !opts.Agent {
		return vm, nil
	}
	if err := b.getAgent(ctx, &vm, r.Node); err != nil {
		return VM{}, err
	}
	return vm, nil
}

// getConfig finds id's VMID in the listing and reads its config: NotFound when the VMID
// is not listed, holds a container or a template, or was deleted meanwhile; busy when the
// config has no name yet and a lock (a clone in progress).
//
// Without fresh the listing is readListing's: a VMID missing, or a config gone from the
// node an aged walk listing names, is looked up again in a listing younger than
// ListingTTL (confirmListing) before it is NotFound.
func (b *Backend) getConfig(ctx context.Context, id ID, fresh bool) (pveapi.Resource, map[string]string, error) {
	var res []pveapi.Resource
	var aged bool
	var err error
	if fresh {
		res, err = b.listing(ctx, true)
	} else {
		res, aged, err = b.readListing(ctx)
	}
	if err != nil {
		return pveapi.Resource{}, nil, apiErrorf("get", err, "listing the cluster's VMs")
	}
	r, ok := findResource(res, id.VMID)
	if aged && (!ok || r.Type != "qemu" || r.Template == 1) {
		return b.getConfigConfirmed(ctx, id)
	}
	return b.getConfigFrom(ctx, id, r, ok, false)
}

// getConfigConfirmed is getConfig on confirmListing's listing.
func (b *Backend) getConfigConfirmed(ctx context.Context, id ID) (pveapi.Resource, map[string]string, error) {
	res, err := b.confirmListing(ctx)
	if err != nil {
		return pveapi.Resource{}, nil, apiErrorf("get", err, "listing the cluster's VMs")
	}
	r, ok := findResource(res, id.VMID)
	return b.getConfigFrom(ctx, id, r, ok, false)
}

// getConfigAfterMove is getConfig on a fresh listing, asked for after the VM's config was
// found gone from the node a listing named: a VM migrated (by the HA manager, or by hand)
// since that listing was answered is read on its new node, not reported deleted, which
// would plan the replacement of a live VM. One listing more, only on that path.
func (b *Backend) getConfigAfterMove(ctx context.Context, id ID) (pveapi.Resource, map[string]string, error) {
	res, err := b.listing(ctx, true)
	if err != nil {
		return pveapi.Resource{}, nil, apiErrorf("get", err, "listing the cluster's VMs")
	}
	r, ok := findResource(res, id.VMID)
	return b.getConfigFrom(ctx, id, r, ok, true)
}

// getConfigFrom reads the config of the VM listed as r (ok: listed). A config gone from
// r's node is NotFound only once a listing asked for after that answer (confirmed) says
// so: the VM may have migrated since the listing r comes from was answered, however young
// it is (getConfigAfterMove).
func (b *Backend) getConfigFrom(ctx context.Context, id ID, r pveapi.Resource, ok, confirmed bool) (
	pveapi.Resource, map[string]string, error) {
	if !ok {
		// The listing shows only what the token may audit (fact: pool-privileges).
		if err := b.hiddenVM(ctx, "get", id.VMID, "The VM"); err != nil {
			return r, nil, err
		}
	}
	switch {
	case !ok:
		return r, nil, notFoundf("VMID %d is not in the cluster any more", id.VMID)
	case r.Type != "qemu" || r.Template == 1:
		return r, nil, notFoundf("VMID %d now holds a %s, not this VM", id.VMID, guestKind(r))
	}
	// The listed name is a hint only: pvestatd's snapshot may still show "VM <vmid>", no
	// name, or the name of a VM that held the VMID before. The config decides.
	cfg, err := b.api.VMConfig(ctx, r.Node, id.VMID)
	if err != nil {
		if isNotExist(err) && !confirmed {
			return b.getConfigAfterMove(ctx, id)
		}
		if isNotExist(err) {
			return r, nil, notFoundf("VMID %d was deleted", id.VMID)
		}
		return r, nil, apiErrorf("get", err, "reading the config on node %s", r.Node)
	}
	if cfg["name"] == "" && (cfg["lock"] != "" || r.Lock != "") {
		lock := cfg["lock"]
		if lock == "" {
			lock = r.Lock
		}
		return r, nil, busyf("VMID %d is being created (lock %q, a clone in progress); try again once the task ends", id.VMID, lock)
	}
	return r, cfg, nil
}

// getStatus fills vm's state from status/current (mapState) and its running sizes. more
// is false when the read ends there: the VM is hibernated, or its node does not answer
// (StatusUnknown).
func (b *Backend) getStatus(ctx context.Context, vm *VM, r pveapi.Resource, cfg map[string]string) (more bool, err error) {
	st, err := b.api.VMStatus(ctx, r.Node, vm.ID.VMID)
	if err != nil {
		switch {
		case isNotExist(err):
			return false, notFoundf("VMID %d was deleted", vm.ID.VMID)
		case r.Status == "unknown" && classify("get", err) == pveapi.Transient && ctx.Err() == nil:
			vm.State, vm.StatusUnknown = StateProvisioning, true
			return false, nil
		}
		return false, apiErrorf("get", err, "reading the status on node %s", r.Node)
	}
	if st.Lock != "" && vm.Lock == "" {
		vm.Lock = st.Lock
	}
	if st.Lock == "suspended" {
		vm.State, vm.Hibernated, vm.QMPStatus = StateStopped, true, st.QMPStatus
		return false, nil
	}
	vm.State, vm.QMPStatus = mapState(st.Status, st.QMPStatus), st.QMPStatus
	if err := b.applyRunningSizes(ctx, vm, r.Node, cfg, st); err != nil {
		return false, err
	}
	return true, nil
}

// getAgent asks a running VM's guest agent for its addresses (decision: address-discovery).
func (b *Backend) getAgent(ctx context.Context, vm *VM, node string) error {
	ifaces, err := b.api.AgentNetworkInterfaces(ctx, node, vm.ID.VMID)
	switch {
	case err == nil:
		vm.Addresses = agentAddresses(ifaces)
		if vm.IP = firstIPv4(ifaces); vm.IP == "" {
			vm.State = StateProvisioning // network still coming up
		}
	case isAgentNotRunning(err):
		vm.State = StateProvisioning // booting, or the agent is not installed yet
	case isNoAgentConfigured(err):
		vm.State, vm.AgentEnabled = StateStopped, false // can never report an address
	case isVMNotRunning(err):
		return Transientf("VM stopped while its guest agent was queried")
	default: // anything else: cannot tell
		return &Error{Class: pveapi.Transient, Err: wrapMsg("querying the guest agent", err)}
	}
	return nil
}

// applyRunningSizes reports a running VM's cores and memory as it runs with them, and the
// config's values that differ as pending (runningSizes): no request beyond the config and
// status/current the read makes anyway, but for a running VM whose config read (pending
// values included) shows memory hotplug, which is judged from its current values
// (runningHotplug).
func (b *Backend) applyRunningSizes(ctx context.Context, vm *VM, node string, cfg map[string]string, st pveapi.VMStatus) error {
	hot, err := b.runningHotplug(ctx, node, vm.ID.VMID, cfg, st.Status == "running")
	if err != nil {
		return err
	}
	vm.MemoryHotplug = hot
	if hot {
		vm.HotplugHugepages1G, vm.HotplugSockets = cfg["hugepages"] == "1024", atoiDefault(cfg["sockets"], 1)
	}
	cores, mem := runningSizes(cfg, st, vm.Cores, vm.MemoryMiB)
	if cores != vm.Cores {
		vm.PendingCores, vm.Cores = vm.Cores, cores
	}
	if mem != vm.MemoryMiB {
		vm.PendingMemoryMiB, vm.MemoryMiB = vm.MemoryMiB, mem
	}
	return nil
}

// owned applies the ownership predicate (ownedBy) to a config read at id's VMID: a VM
// that is not the resource's (another name, no mark, a mark without a uid or with another
// uid, or a caller without a uid) is NotFound, logged. With anyOwner (read-only callers)
// our name and the mark suffice (marked).
func (b *Backend) owned(ctx context.Context, id ID, node string, cfg map[string]string, o Owner, anyOwner bool) (Mark, error) {
	if anyOwner {
		if cfg["name"] != id.Name {
			b.logReused(ctx, id, node, cfg["name"])
			return Mark{}, notFoundf("VMID %d now holds VM %q: this VM was removed and its VMID reused", id.VMID, cfg["name"])
		}
		if m, ok := marked(cfg, id.Name); ok {
			return m, nil
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not ours: no mark", map[string]any{"vmid": id.VMID, "name": id.Name, "node": node})
		return Mark{}, notFoundf("VM at VMID %d carries no %s=true mark in its description: not managed by this provider",
			id.VMID, MarkKeyManaged)
	}
	mark, why := ownedBy(cfg, id.Name, o)
	if why != notOursNone {
		return Mark{}, b.notOursErr(ctx, id, node, cfg, o, mark, why)
	}
	return mark, nil
}

// notOursErr is the NotFound a read or a write answers for a VM ownedBy refused, logged
// with why. A VM of the resource's name whose mark does not prove it this resource's (no
// mark, no uid, another uid, or a state without uid) is also ErrNotOurs: it exists, so a
// message says it is not this resource's any more rather than gone. A VMID that holds a VM
// of another name is only NotFound: the resource's VM was removed and the VMID reused.
func (b *Backend) notOursErr(ctx context.Context, id ID, node string, cfg map[string]string, o Owner, mark Mark, why notOurs) error {
	err := b.notOursFound(ctx, id, node, cfg, o, mark, why)
	if _, renamed := renamedUnbound(cfg, o); why == notOursName && !renamed {
		return err
	}
	return &Error{Class: err.Class, Op: err.Op, Name: err.Name, VMID: err.VMID, Err: notOursError{err.Err}}
}

// notOursFound is notOursErr's message, as a NotFound.
func (b *Backend) notOursFound(ctx context.Context, id ID, node string, cfg map[string]string, o Owner, mark Mark, why notOurs) *Error {
	switch why {
	case notOursName:
		b.logReused(ctx, id, node, cfg["name"])
		if m, ok := renamedUnbound(cfg, o); ok {
			return renamedFound(id, cfg, o, m)
		}
		return notFoundf("VMID %d now holds VM %q: this VM was removed and its VMID reused%s", id.VMID, cfg["name"], markEditedHint(o))
	case notOursUnmarked:
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not ours: no mark", map[string]any{"vmid": id.VMID, "name": id.Name, "node": node})
		return notFoundf("VM at VMID %d carries no %s=true mark in its description: not managed by this provider%s", id.VMID, MarkKeyManaged,
			markEditedHint(o))
	case notOursNoUIDHere:
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not ours: the state records no uid",
			map[string]any{"vmid": id.VMID, "name": id.Name, "node": node})
		return notFoundf("the state records no uid for this VM, so no VM can be proved this resource's: VMID %d is left alone", id.VMID)
	case notOursNoUID:
		b.logOtherUID(ctx, id, node, o.UID, "")
		return notFoundf("VMID %d holds a VM named %q whose mark carries no uid, not this resource's %s: another VM on a reused VMID%s",
			id.VMID, id.Name, o.UID, markEditedHint(o))
	case notOursRanUnbound:
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not ours: an unbound creating mark on a VM that ran",
			map[string]any{"vmid": id.VMID, "name": id.Name, "node": node})
		return notFoundf("VMID %d holds a VM named %q whose mark carries this resource's uid and says it is being created, as written "+
			"before the create's config step, but the VM has run: a description copied onto another VM at a reused VMID, or this "+
			"resource's VM with its description rewritten with an older text. If it is this resource's VM, restore its finished mark in "+
			"Proxmox (delete its %s and %s lines and add the line %s=%s), or destroy it (`qm stop %d && qm destroy %d --purge`)",
			id.VMID, id.Name, MarkKeyState, MarkKeyProof, MarkKeyInstance, instanceOf(cfg), id.VMID, id.VMID)
	case notOursBound:
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not ours: not the recorded instance", map[string]any{
			"vmid": id.VMID, "name": id.Name, "node": node, "recorded": o.Instance, "smbios_uuid": instanceOf(cfg),
		})
		return notFoundf("VMID %d holds a VM named %q whose SMBIOS uuid (%q) is not the one this resource's VM had (%s, recorded in the state): "+
			"another VM at a reused VMID, whatever its description says", id.VMID, id.Name, instanceOf(cfg), o.Instance)
	case notOursUnbound:
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not shown ours: a mark without an instance line",
			map[string]any{"vmid": id.VMID, "name": id.Name, "node": node})
		return notFoundf("VM %s (VMID %d) carries this resource's uid, but its mark has no %s line, so nothing shows it is the VM this "+
			"resource made (a VM made by version 0.1.0 or imported, or a description rewritten by hand): apply the proxy_vm once with this "+
			"version to bind it (the apply writes that line, or writes it back when it was deleted), then run the action again",
			id.Name, id.VMID, MarkKeyInstance)
	case notOursInstance:
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not ours: another instance", map[string]any{
			"vmid": id.VMID, "name": id.Name, "node": node, "instance": mark.Instance, "smbios_uuid": instanceOf(cfg),
		})
		then := ""
		if o.Bound {
			then = " (then the plan of the proxy_vm that manages it warns that its mark was edited outside Terraform, and its apply " +
				"writes the line back: run the action again after it)"
		}
		return notFoundf("VMID %d holds a VM named %q whose mark carries this resource's uid but names another VM "+
			"(its %s line names SMBIOS uuid %s, the VM's is %q): a copied mark, another VM at a reused VMID, or this resource's "+
			"VM with that line rewritten outside Terraform%s", id.VMID, id.Name, MarkKeyInstance, mark.Instance, instanceOf(cfg), then)
	default:
		b.logOtherUID(ctx, id, node, o.UID, mark.UID)
		return notFoundf("VMID %d holds a VM named %q whose mark carries uid %q, not this resource's %s: another workspace's VM%s",
			id.VMID, id.Name, mark.UID, o.UID, markEditedHint(o))
	}
}

// markEditedHint is what the power action (o.Bound), which has no state to check the VM
// by, adds to the refusal of a VM of another name or whose mark is not there or not this
// resource's: it may be the resource's own VM renamed or with its description edited
// outside Terraform, which an apply of its proxy_vm repairs when the state recorded its
// SMBIOS uuid (recordedInstance).
func markEditedHint(o Owner) string {
	if !o.Bound {
		return ""
	}
	return ", or this resource's VM renamed or with its description edited outside Terraform (then the plan of the proxy_vm that " +
		"manages it warns of that, and its apply writes the name and mark back: run the action again after it)"
}

// renamedUnbound reports a VM of another name whose mark carries o.UID, met by a caller
// with no recorded SMBIOS uuid (a 0.1.0 state, an import of an unbound mark, the power
// action): the resource's VM renamed outside Terraform (name is a VM.Config.Options key,
// Qemu.pm:823-839), or a VM carrying a copy of its mark. A caller with a recorded uuid
// tells them apart (recordedInstance). It is refused as ErrNotOurs, not as a reused VMID.
func renamedUnbound(cfg map[string]string, o Owner) (Mark, bool) {
	m := ParseMark(cfg["description"])
	return m, o.Instance == "" && o.UID != "" && m.Managed && m.UID == o.UID
}

// renamedFound is notOursFound's message for renamedUnbound: the power action (o.Bound)
// on a VM whose mark names its SMBIOS uuid is told the VM was renamed and what puts the
// name back (decision: state-binding); a caller without that evidence, that both
// readings are open.
func renamedFound(id ID, cfg map[string]string, o Owner, m Mark) *Error {
	if o.Bound && boundInstance(cfg, m) != "" {
		return notFoundf("VM %s (VMID %d) was renamed outside Terraform to %q: its mark carries this resource's uid and names its "+
			"SMBIOS uuid, but the action acts only on a VM with the resource's name. Apply the proxy_vm that manages it (its plan "+
			"names the VM %s again, in place), then run the action again", id.Name, id.VMID, cfg["name"], id.Name)
	}
	return notFoundf("VMID %d holds VM %q, not %q, and its mark carries this resource's uid: this resource's VM renamed outside "+
		"Terraform, or another VM carrying a copy of its mark, and no recorded SMBIOS uuid tells which", id.VMID, cfg["name"], id.Name)
}

// logOtherUID logs a VM with our name and mark but another uid than the caller's.
func (b *Backend) logOtherUID(ctx context.Context, id ID, node, want, other string) {
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not ours: another uid", map[string]any{
		"vmid": id.VMID, "name": id.Name, "node": node, "uid": want, "other_uid": other,
	})
}

func (b *Backend) logReused(ctx context.Context, id ID, node, other string) {
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vmid reused by another vm", map[string]any{
		"vmid": id.VMID, "name": id.Name, "node": node, "other_name": other,
	})
}

// guestRunning is the one rule for "the guest runs": status running
// with qmpstatus running (or not reported).
func guestRunning(status, qmp string) bool {
	return status == "running" && (qmp == "running" || qmp == "")
}

// mapState maps status/current (decision: state-mapping), the agent aside.
func mapState(status, qmp string) State {
	switch {
	case guestRunning(status, qmp):
		return StateRunning
	case status == "running" && qmp == "prelaunch":
		return StateProvisioning
	default: // stopped, paused, suspended, io-error, anything else
		return StateStopped
	}
}

// vmFromConfig fills what a config says.
func vmFromConfig(id ID, node string, cfg map[string]string, mark Mark) VM {
	vm := VM{
		ID: id, Node: node, UID: mark.UID, CreatedAt: mark.CreatedAt,
		Cores:         atoiDefault(cfg["cores"], 1),
		MemoryMiB:     atoiDefault(strings.TrimPrefix(getOptionOrValue(cfg["memory"], "current"), "current="), 512),
		OnBoot:        cfg["onboot"] == "1",
		AgentEnabled:  agentEnabled(cfg["agent"]),
		Tags:          splitTags(cfg["tags"]),
		Meta:          cfg["meta"],
		Creating:      mark.Creating,
		BoundInstance: boundInstance(cfg, mark),
		MarkEdited:    mark.Managed && instanceOf(cfg) != "" && boundInstance(cfg, mark) == "",
		Renamed:       renamedTo(cfg, id),
		MarkExtra:     ParseMarkExtra(cfg["description"]),
		Note:          NoteOf(cfg["description"]),
		Protected:     cfg["protection"] == "1",
	}
	if _, n, ok := bootDiskSize(cfg); ok {
		vm.DiskGiB = ceilGiB(n)
	}
	n := parseNet0(cfg["net0"])
	vm.Bridge, vm.VLANTag, vm.MAC = n.Bridge, n.Tag, n.MAC
	readOptions(&vm, cfg)
	readInPlaceOptions(&vm, cfg)
	return vm
}

// getOptionOrValue returns key's value when v is an option list carrying it, else v.
func getOptionOrValue(v, key string) string {
	if o := getOption(v, key); o != "" {
		return o
	}
	return v
}

func atoiDefault(s string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil {
		return n
	}
	return def
}

// agentEnabled reads the agent option: "1", "1,fstrim_cloned_disks=1", "enabled=1,..." or
// "fstrim_cloned_disks=1,enabled=1": its default key, enabled, wherever it stands
// (propString.defaultValue).
func agentEnabled(v string) bool {
	e, _ := parsePropString(v).defaultValue("enabled")
	return e == "1"
}

// splitTags splits a tags value on ";", "," or spaces.
func splitTags(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })
}

func guestKind(r pveapi.Resource) string {
	switch {
	case r.Type != "qemu":
		return "container"
	case r.Template == 1:
		return "template"
	default:
		return "VM"
	}
}
