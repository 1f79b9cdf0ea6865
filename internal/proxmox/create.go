package proxmox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Create makes the VM s describes under the per-name lock (decision: create-steps), taking
// over an interrupted create of this name or probing past a VMID that is not this
// resource's (decision: vmid-function, decision: identity-and-adoption); every step
// resumes after an interruption, and a repeat Create of a running VM changes nothing.
//
// onAllocated is called as soon as a VMID and node are chosen, before each clone request,
// so that no VM exists that no state tracks; its last call names the VM Create works on
// (fact: clone-vmid-taken). A does-not-exist inside Create is Transient, never NotFound.
func (b *Backend) Create(ctx context.Context, s Spec, onAllocated func(id ID, node string)) (VM, error) {
	start := b.clock.Now()
	c := &creation{b: b, s: s, onAllocated: onAllocated, report: s.Report}
	if c.report == nil {
		c.report = &CreateReport{}
	}
	vm, err := c.run(ctx)
	if err != nil {
		err = c.failed(ctx, err)
	}
	b.invalidateListing()
	fields := map[string]any{
		"vmid": c.vmid, "name": s.Name, "node": c.node, "cloud_init_bytes": len(s.UserData),
		"adopted": c.adopted, "cloned": c.cloned, "duration_ms": b.clock.Now().Sub(start).Milliseconds(),
	}
	if err != nil {
		err = wrap("create", s.Name, c.vmid, err)
		if e, ok := err.(*Error); ok { //nolint:errorlint // wrap returns an *Error at the top
			e.Done = c.done()
		}
		fields["class"], fields["error"] = ClassOf(err).String(), err.Error()
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm create failed", fields)
		return VM{}, err
	}
	fields["state"], fields["ip"] = string(vm.State), vm.IP
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm ensured running", fields)
	return vm, nil
}

// creation is one Create call's progress.
type creation struct {
	b           *Backend
	s           Spec
	onAllocated func(ID, string)

	vmid    int
	node    string
	cfg     map[string]string // the VM's config after the clone or at adoption
	adopted bool
	cloned  bool
	// started: this call started the VM (its address wait measures a boot).
	started bool
	// seeded and configured: this call uploaded the seed and wrote the config.
	seeded, configured bool
	// upload is the seed upload started beside the clone task, until provision joins it.
	upload *seedUpload
	// notified is the ID last handed to onAllocated.
	notified ID
	// passed are the finished VMs of this name and namespace the probe skipped.
	passed []PassedVM
	// proofKey proves this Create's creating marks and checks others' (ownership.go); nil
	// when the backend has none.
	proofKey []byte
	// tmplCfg is the template's config, read by checkTemplate, and tmplNode its node.
	tmplCfg  map[string]string
	tmplNode string
	// report is Spec.Report, or a report nobody reads.
	report *CreateReport
}

type verdict int

const (
	verdictOurs verdict = iota
	verdictForeign
	verdictGone
)

func (c *creation) run(ctx context.Context) (VM, error) {
	if err := c.b.normalizeSpec(&c.s); err != nil {
		return VM{}, err
	}
	s := &c.s
	tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox create parameters", map[string]any{
		"name": s.Name, "node": s.Node, "template_vmid": s.TemplateVMID, "cores": s.Cores,
		"memory_mib": s.MemoryMiB, "disk_gib": s.DiskGiB, "bridge": s.Bridge, "vlan_tag": s.VLANTag,
		"on_boot": s.OnBoot, "wait_for_ip": s.WaitForIP, "cloud_init_bytes": len(s.UserData),
		"vmid_min": c.b.cfg.VMIDMin, "vmid_max": c.b.cfg.VMIDMax,
	})
	if c.b.cfg.ProofKey != nil {
		key, err := c.b.cfg.ProofKey()
		if err != nil {
			return VM{}, &Error{
				Class: pveapi.Permanent,
				Err:   wrapMsg("deriving the key of the creating mark's proof from the API token", err),
			}
		}
		c.proofKey = key
	}
	unlock, err := c.b.locks.lock(ctx, s.Name)
	if err != nil {
		return VM{}, Transientf("waiting for another operation on this VM to finish: %w", err)
	}
	defer unlock()
	defer func() {
		// No upload outlives Create (provision joins it; this is a guard).
		if u := c.upload; u != nil {
			u.cancel()
			_ = u.join()
		}
	}()

	res, err := c.b.listing(ctx, true)
	if err != nil {
		return VM{}, apiErrorf("create", err, "listing the cluster's VMs")
	}
	if err := c.refuseForeignByName(ctx, res); err != nil {
		return VM{}, err
	}
	if err := c.placeSpec(ctx, res); err != nil {
		return VM{}, err
	}
	tmplNode, err := c.checkTemplate(ctx, res)
	if err != nil {
		return VM{}, err
	}
	if err := c.allocate(ctx, res, tmplNode); err != nil {
		return VM{}, err
	}
	if c.adopted {
		// A taken-over VM that never reached its config step is as cloned; it may have been
		// started by hand meanwhile.
		st, err := c.b.api.VMStatus(ctx, c.node, c.vmid)
		if err != nil {
			return VM{}, apiErrorf("create", err, "reading the status of the taken-over VM on node %s", c.node)
		}
		if st.Status != "stopped" {
			if err := c.b.stopAndWait(ctx, "create", c.node, c.vmid); err != nil {
				return VM{}, err
			}
		}
	}
	if err := c.moveToTarget(ctx); err != nil {
		return VM{}, err
	}
	if err := c.provision(ctx); err != nil {
		return VM{}, err
	}
	c.b.invalidateListing()
	return c.finish(ctx)
}

// normalizeSpec checks what must hold before any request and fills defaults.
func (b *Backend) normalizeSpec(s *Spec) error {
	switch {
	case s.Name == "" || strings.Contains(s.Name, "/"):
		return Permanentf("the name %q must be non-empty and contain no /", s.Name)
	case s.UID == "":
		return Permanentf("no uid was given for this VM (a provider bug: Create mints one)")
	case s.TemplateVMID <= 0:
		return Permanentf("no template VMID: set image or template_vmid")
	case s.Cores < 0 || s.MemoryMiB < 0 || s.DiskGiB < 0:
		return Permanentf("cores, memory and disk size must not be negative")
	case s.VLANTag < 0 || s.VLANTag > 4094:
		return Permanentf("VLAN tag %d is outside 1 to 4094", s.VLANTag)
	case b.cfg.ISOStorage == "":
		return Permanentf("the provider has no ISO storage configured for seed ISOs")
	case b.cfg.VMIDMin < minVMID || b.cfg.VMIDMax < b.cfg.VMIDMin || b.cfg.VMIDMax > maxVMID:
		return Permanentf(
			"the VMID range %d to %d is invalid (it must lie within %d to %d)",
			b.cfg.VMIDMin,
			b.cfg.VMIDMax,
			minVMID,
			maxVMID,
		)
	}
	if s.Node == "" {
		switch len(b.cfg.Nodes) {
		case 0:
			return Permanentf("node is required when the provider configures no nodes")
		case 1:
			s.Node = b.cfg.Nodes[0]
		} // several: placed at create (placement.go)
	}
	if s.Node != "" && len(b.cfg.Nodes) > 0 && !slices.Contains(b.cfg.Nodes, s.Node) {
		return Permanentf("node %q is not one of the provider's nodes (%s)", s.Node, strings.Join(b.cfg.Nodes, ", "))
	}
	if err := b.checkSpecOptions(s); err != nil {
		return err
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = b.clock.Now().UTC().Truncate(time.Second)
	}
	if s.AllocKey == "" {
		s.AllocKey = s.UID
	}
	return nil
}

// notify hands the chosen VMID and node to onAllocated, unless it already has them.
func (c *creation) notify() {
	id := ID{VMID: c.vmid, Name: c.s.Name}
	if c.onAllocated == nil || id == c.notified {
		return
	}
	c.notified = id
	c.onAllocated(id, c.node)
}

// clone clones with the mark (decision: mark-format) written with the namespace and "creating" lines. It
// reports false without error when the VMID was taken meanwhile (fact: clone-vmid-taken).
func (c *creation) clone(ctx context.Context, vmid int, tmplNode string) (bool, error) {
	b, s := c.b, &c.s
	p := pveapi.CloneParams{NewID: vmid, Name: s.Name, Description: c.creatingMark(vmid, ""), Storage: b.cfg.Storage, Pool: s.Pool}
	target, lands, err := c.cloneTarget(ctx, tmplNode)
	if err != nil {
		return false, err
	}
	p.Target = target
	// The VMID goes to the state before the request: if its answer is lost (a timeout, a
	// Ctrl-C while it is in flight) the VM may exist, and must not be left untracked.
	c.vmid, c.node = vmid, lands
	c.notify()
	upid, err := b.api.Clone(ctx, tmplNode, s.TemplateVMID, p)
	if err != nil {
		if isAlreadyExists(err) {
			return false, nil // taken meanwhile (fact: clone-vmid-taken); the probe judges who holds it
		}
		if pveapi.IsForbidden(err) {
			return false, cloneRefusal(err, s, vmid)
		}
		var ae *pveapi.APIError
		if errors.As(err, &ae) {
			return false, apiErrorf("create", err, "cloning template %d onto VMID %d", s.TemplateVMID, vmid)
		}
		return false, apiErrorf("create", err, "cloning template %d onto VMID %d (the answer was lost, so Proxmox may have made the VM; "+
			"its VMID is saved for the next apply to find it)", s.TemplateVMID, vmid)
	}
	c.cloned = true
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm clone started", map[string]any{
		"vmid": vmid, "name": s.Name, "node": s.Node, "upid": upid, "template_vmid": s.TemplateVMID,
	})
	// The seed upload does not depend on the clone: it runs while the clone task does, when
	// the clone lands where the VM will run (a clone that migrates afterwards uploads its
	// seed once it has moved, so that a failed migration leaves no seed on another node).
	// A static address is rendered for the MAC Proxmox gives the clone: that seed waits
	// for the clone (provision uploads it).
	if lands == s.Node && !s.Network.needsMAC() {
		c.upload = c.startSeedUpload(ctx)
	}
	if err := c.awaitClone(ctx, upid); err != nil {
		if c.upload != nil {
			err = c.abandonSeedUpload(ctx, c.upload, err)
			c.upload = nil
		}
		return true, err
	}
	return true, nil
}

// awaitClone waits for the clone task, then checks that the VMID holds the VM it made.
func (c *creation) awaitClone(ctx context.Context, upid string) error {
	b := c.b
	if err := b.waitTask(ctx, upid, b.cfg.Budgets.Clone); err != nil {
		return err
	}
	cfg, err := c.checkStillOurs(ctx)
	if err != nil {
		return err
	}
	c.cfg = cfg
	return nil
}

// provision is seed, config, resize, start and running; each step is repeatable.
func (c *creation) provision(ctx context.Context) error {
	b, s := c.b, &c.s
	// The seed, uploaded over any previous one (fact: upload-overwrites): no delete first.
	// After a clone of ours it was started beside the clone task; an adopted VM, or one
	// cloned on another node and migrated here, uploads it now.
	if u := c.upload; u != nil {
		c.upload = nil
		if err := u.join(); err != nil {
			return err
		}
	} else if err := b.uploadSeed(ctx, c.node, *s, c.cfg["net0"]); err != nil {
		return err
	}
	c.seeded = true
	// The config.
	params, err := configParams(*s, c.cfg, b.cfg.ISOStorage)
	if err != nil {
		return err
	}
	// The config step binds the mark to the VM the clone made (decision: instance-binding).
	if inst := instanceOf(c.cfg); inst != "" {
		params["description"] = c.creatingMark(c.vmid, inst)
	}
	if err := c.writeConfig(ctx, params); err != nil {
		return err
	}
	c.configured = true
	// Resize, only when larger (decision: boot-disk).
	if s.DiskGiB > 0 {
		disk, cur, ok := bootDiskSize(c.cfg)
		if !ok {
			return Permanentf("the VM has no boot disk with a readable size=, so disk_gib cannot be applied")
		}
		if int64(s.DiskGiB)*gib > cur {
			upid, err := b.api.Resize(ctx, c.node, c.vmid, disk, strconv.Itoa(s.DiskGiB)+"G")
			if err != nil {
				return apiErrorf("create", err, "resizing %s to %d GiB", disk, s.DiskGiB)
			}
			if err := b.waitTask(ctx, upid, b.cfg.Budgets.Resize); err != nil {
				return err
			}
		}
	}
	if s.Stopped {
		return nil // started = false: the first boot waits for the update that starts it
	}
	// Start, then wait for running/running.
	if err := b.startAndWait(ctx, "create", c.node, c.vmid, c.cfg); err != nil {
		return err
	}
	c.started = true
	return nil
}

// startAndWait starts a VM, waits for the task, then for running/running. cfg, the VM's
// config when known, names the drive of a volume the start finds missing.
func (b *Backend) startAndWait(ctx context.Context, op, node string, vmid int, cfg map[string]string) error {
	upid, err := b.api.Start(ctx, node, vmid)
	if err != nil {
		return apiErrorf(op, err, "starting the VM on node %s", node)
	}
	if err := b.waitTask(ctx, upid, b.cfg.Budgets.Start); err != nil {
		if vol, ok := pveapi.MissingVolume(err); ok {
			return b.missingVolumeErr(node, vmid, vol, cfg, err)
		}
		return err
	}
	if haHanded(upid) {
		// The HA manager starts it (decision: ha-placement).
		if err := b.waitHAPower(ctx, op, node, vmid, "running", b.cfg.Budgets.Start); err != nil {
			return err
		}
	}
	b.started.Store(vmid, b.clock.Now())
	return b.waitRunning(ctx, op, node, vmid)
}

// missingVolumeErr is a start that failed because a drive's volume does not exist: Proxmox
// will refuse every start until someone restores the volume or removes the drive, so it is
// Permanent, with what to do. The seed ISO is checked (or uploaded) right before each start,
// so a seed missing here was lost in between or is not visible from node.
func (b *Backend) missingVolumeErr(node string, vmid int, vol string, cfg map[string]string, cause error) error {
	if isSeedVolID(vol) {
		return Permanentf(
			"the VM cannot start: its seed ISO %s does not exist on node %s, although the provider checked or uploaded it just before; "+
				"make sure storage %s is available on node %s, then apply again (%w)",
			vol,
			node,
			storageOf(vol),
			node,
			cause,
		)
	}
	drive := "the drive"
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if driveVolume(cfg[k]) == vol {
			drive = k
			break
		}
	}
	fix := "remove that drive from the VM in Proxmox"
	if drive != "the drive" {
		fix = fmt.Sprintf("remove it with `qm set %d --delete %s`", vmid, drive)
	}
	return Permanentf(
		"the VM cannot start: %s refers to volume %s, which does not exist on node %s; restore that volume, or %s, then apply again (%w)",
		drive,
		vol,
		node,
		fix,
		cause,
	)
}

// stopAndWait stops a VM and waits for the task, and, when the task handed the stop to the
// HA manager (haHanded), for the VM to stop.
func (b *Backend) stopAndWait(ctx context.Context, op, node string, vmid int) error {
	upid, err := b.api.Stop(ctx, node, vmid)
	if err != nil {
		return apiErrorf(op, err, "stopping the VM on node %s", node)
	}
	if err := b.waitTask(ctx, upid, b.cfg.Budgets.Stop); err != nil || !haHanded(upid) {
		return err
	}
	return b.waitHAPower(ctx, op, node, vmid, "stopped", b.cfg.Budgets.Stop)
}

// waitRunning polls status/current until running/running within the running budget. A
// VM found stopped, hibernated or gone after the start cannot get there by waiting: it is
// Transient at once (the next apply starts it again), with what to look at.
func (b *Backend) waitRunning(ctx context.Context, op, node string, vmid int) error {
	var last pveapi.VMStatus
	spec := waitSpec{kind: "running", what: "the VM to run after its start", vmid: vmid, node: node, budget: b.cfg.Budgets.Running,
		onBudget: func(_ string, _ error) error {
			return Transientf(
				"the VM did not reach running within %s (status %q, qmpstatus %q)",
				b.cfg.Budgets.Running,
				last.Status,
				last.QMPStatus,
			)
		}}
	return b.wait(ctx, spec, func(ctx context.Context) observation {
		st, err := b.api.VMStatus(ctx, node, vmid)
		switch {
		case err == nil:
		case isNotExist(err):
			return cannot(
				"the VM is gone",
				lostf("the VM vanished after its start: something outside Terraform destroyed it; apply again to create it anew"),
			)
		default:
			return pollFailed(op, err, "its status could not be read", "reading the status on node %s", node)
		}
		last = st
		seen := fmt.Sprintf("status %s, qmpstatus %s", st.Status, st.QMPStatus)
		switch {
		case st.Status == "running" && st.QMPStatus == "running":
			return done(seen)
		case st.Lock == "suspended":
			return cannot(
				seen,
				lostf("the VM was hibernated right after it was started; resume it with `qm start %d`, then apply again", vmid),
			)
		case st.Status == "stopped":
			return cannot(
				seen,
				lostf("the VM stopped right after it was started; check its console and boot log in Proxmox, then apply again"),
			)
		}
		return keep(seen)
	})
}

// finish waits for the address when asked, reads the VM back, then finishes the mark: the
// very last request, so that a VM a crash leaves behind is nearly always still marked
// "creating", which the next Create of this name takes over.
func (c *creation) finish(ctx context.Context) (VM, error) {
	b, id := c.b, ID{VMID: c.vmid, Name: c.s.Name}
	var ip string
	var ifaces []pveapi.NetworkInterface
	if c.s.WaitForIP {
		var err error
		if ip, err = b.waitIP(ctx, c.node, c.vmid, &c.s, c.started, &ifaces, c.stillOwned); err != nil {
			return VM{}, err
		}
	}
	// Any owner: the last step (finalize) judges ownership, and says "taken over".
	vm, err := b.get(ctx, id, GetOptions{FreshListing: true, AnyOwner: true, Pool: c.s.Pool})
	if err != nil {
		if ClassOf(err) != pveapi.Transient {
			return VM{}, wrap("create", id.Name, id.VMID, err)
		}
		// The VM runs; a read-back that failed transiently must not taint it.
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm read back after create failed; reporting what create wrote", map[string]any{
			"vmid": c.vmid, "name": c.s.Name, "node": c.node, "error": err.Error(),
		})
		vm = c.written()
	}
	if ip != "" {
		vm.IP, vm.State, vm.Addresses = ip, StateRunning, agentAddresses(ifaces)
	}
	if err := c.finalize(ctx); err != nil {
		return VM{}, err
	}
	// HA only now: finalize has shown the VM to be this resource's (decision: ha-placement).
	if h := c.s.HA; h != nil {
		if err := b.putHA(ctx, "create", c.vmid, *h); err != nil {
			return VM{}, err
		}
		vm.HA, vm.HARead = h, true
	}
	vm.Creating = false
	vm.Passed = c.passed
	b.finished.Store(c.s.UID, true)
	vm.Protected = vm.Protected || c.s.Protection // set by finalize's write
	return vm, nil
}

// done says what this call did to the cluster so far, for a failure's message.
func (c *creation) done() []string {
	if c.vmid == 0 {
		return nil
	}
	var out []string
	switch {
	case c.adopted:
		out = append(out, fmt.Sprintf("took over VMID %d, a create of this name that an earlier apply left unfinished", c.vmid))
	case c.cloned && c.cfg != nil:
		out = append(out, fmt.Sprintf("cloned template %d onto VMID %d", c.s.TemplateVMID, c.vmid))
	case c.cloned:
		out = append(out, fmt.Sprintf("asked Proxmox to clone template %d onto VMID %d", c.s.TemplateVMID, c.vmid))
	default:
		return nil
	}
	if c.seeded {
		out = append(out, "uploaded its seed ISO")
	}
	if c.configured {
		out = append(out, "wrote its config")
	}
	if c.started {
		out = append(out, "started it")
	}
	return out
}

// notePassed records a skipped VM that is a finished create of this name in this
// namespace (not one being created, not another namespace's).
func (c *creation) notePassed(vmid int, node string, cfg map[string]string) {
	m, ok := marked(cfg, c.s.Name)
	if !ok || !m.HasNamespace || m.Creating || m.Namespace != c.s.Namespace {
		return
	}
	if _, ours := c.b.finished.Load(m.UID); ours {
		return // a VM of this provider process's own, already answered to Terraform
	}
	c.passed = append(c.passed, PassedVM{VMID: vmid, Node: node, CreatedAt: m.CreatedAt})
}

// written is the VM as Create left it, from the spec and the cloned config.
func (c *creation) written() VM {
	s := &c.s
	cfg := maps.Clone(c.cfg)
	if cfg == nil {
		cfg = map[string]string{}
	}
	if p, err := configParams(*s, c.cfg, c.b.cfg.ISOStorage); err == nil {
		maps.Copy(cfg, p)
	}
	vm := vmFromConfig(
		ID{VMID: c.vmid, Name: s.Name},
		c.node,
		cfg,
		Mark{Managed: true, UID: s.UID, CreatedAt: s.CreatedAt.UTC(), Namespace: s.Namespace, HasNamespace: true},
	)
	vm.Pool = s.Pool
	if s.DiskGiB > vm.DiskGiB {
		vm.DiskGiB = s.DiskGiB
	}
	vm.State = StateRunning
	return vm
}
