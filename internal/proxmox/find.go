package proxmox

import (
	"context"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// FindByName returns the marked VM called name (import by name). No VM of that name is
// NotFound; several are Permanent naming their VMIDs; a VM without the mark is Permanent
// saying why.
func (b *Backend) FindByName(ctx context.Context, name string) (ID, error) {
	id, err := b.findByName(ctx, name)
	return b.found(ctx, id, wrap("import", name, id.VMID, err))
}

// FindByVMID returns the marked VM at vmid (import by VMID). An absent VMID is NotFound;
// a container, a template or an unmarked VM is Permanent saying why; a clone in progress
// is Transient.
func (b *Backend) FindByVMID(ctx context.Context, vmid int) (ID, error) {
	id, err := b.findByVMID(ctx, vmid)
	return b.found(ctx, id, wrap("import", id.Name, vmid, err))
}

// FindByID is FindByVMID plus a check that the VM carries id's name (import by
// vms/<vmid>/<name>).
func (b *Backend) FindByID(ctx context.Context, id ID) (ID, error) {
	got, err := b.findByVMID(ctx, id.VMID)
	if err == nil && got.Name != id.Name {
		err = Permanentf("VMID %d holds VM %q, not %q; import vms/%d/%s, or check the ID", id.VMID, got.Name, id.Name, id.VMID, got.Name)
	}
	return b.found(ctx, got, wrap("import", id.Name, id.VMID, err))
}

func (b *Backend) found(ctx context.Context, id ID, err error) (ID, error) {
	if err != nil {
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm import lookup failed", map[string]any{"vmid": id.VMID,
			"name": id.Name, "error": err.Error()})
		return ID{}, err
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm found for import", map[string]any{"vmid": id.VMID, "name": id.Name})
	return id, nil
}

func (b *Backend) findByName(ctx context.Context, name string) (ID, error) {
	if name == "" || strings.Contains(name, "/") {
		return ID{}, Permanentf("the name %q must be non-empty and contain no /", name)
	}
	res, err := b.listing(ctx, true)
	if err != nil {
		return ID{}, apiErrorf("import", err, "listing the cluster's VMs")
	}
	var cands []pveapi.Resource
	for _, r := range res {
		if r.Type == "qemu" && r.Template == 0 && r.Name == name {
			cands = append(cands, r)
		}
	}
	switch len(cands) {
	case 0:
		return ID{}, notFoundf("no VM named %q in the cluster", name)
	case 1:
		return b.claim(ctx, cands[0])
	}
	ids := make([]string, len(cands))
	for i, r := range cands {
		ids[i] = strconv.Itoa(r.VMID)
	}
	return ID{}, Permanentf("%d VMs are named %q (VMIDs %s); import one by its ID, vms/<vmid>/%s", len(cands), name,
		strings.Join(ids, ", "), name)
}

func (b *Backend) findByVMID(ctx context.Context, vmid int) (ID, error) {
	if vmid < minVMID || vmid > maxVMID {
		return ID{}, Permanentf("VMID %d is outside %d to %d", vmid, minVMID, maxVMID)
	}
	res, err := b.listing(ctx, true)
	if err != nil {
		return ID{}, apiErrorf("import", err, "listing the cluster's VMs")
	}
	r, ok := findResource(res, vmid)
	if !ok {
		// The listing shows only what the token may audit (fact: pool-privileges).
		if err := b.hiddenVM(ctx, "import", vmid, "The VM"); err != nil {
			return ID{}, err
		}
	}
	switch {
	case !ok:
		return ID{}, notFoundf("VMID %d is not in the cluster", vmid)
	case r.Type != "qemu" || r.Template == 1:
		return ID{}, Permanentf("VMID %d is a %s, not a VM this provider manages", vmid, guestKind(r))
	case r.Name == "":
		return ID{}, Transientf("VMID %d is being cloned (lock %q); import it once the clone ends", vmid, r.Lock)
	}
	return b.claim(ctx, r)
}

// claim reads the config and accepts only a VM an import may make a resource's
// (importable: the mark with a uid, finished).
func (b *Backend) claim(ctx context.Context, r pveapi.Resource) (ID, error) {
	cfg, err := b.api.VMConfig(ctx, r.Node, r.VMID)
	if err != nil {
		if isNotExist(err) {
			return ID{}, notFoundf("VMID %d was deleted", r.VMID)
		}
		return ID{}, apiErrorf("import", err, "reading the config of VMID %d on node %s", r.VMID, r.Node)
	}
	mark, why := importable(cfg)
	switch why {
	case notOursUnmarked:
		return ID{}, Permanentf("VM %q (VMID %d) carries no %s=true line in its description: only VMs created by this "+
			"provider or the proxy operator can be imported",
			cfg["name"], r.VMID, MarkKeyManaged)
	case notOursNoUID:
		// The state's uid is the mark's, and every later read proves ownership by it: a
		// mark without one could never be told from another VM put on the same VMID.
		return ID{}, Permanentf("VM %q (VMID %d) carries the %s=true line but no %s line: the provider owns a VM only by the uid of its mark. "+
			"If it is a proxy VM to manage here, add a line %s=<a new UUID, e.g. from uuidgen> to its description in Proxmox, then import it again",
			cfg["name"], r.VMID, MarkKeyManaged, MarkKeyUID, MarkKeyUID)
	}
	if why == notOursUnboundNoSeed {
		// decision: state-binding: a mark without an instance line is anyone's to copy with
		// VM.Config.Options; the resource's seed on a drive is not.
		return ID{}, Permanentf("VM %q (VMID %d) carries a mark without a %s line and none of its drives names a seed ISO of "+
			"that mark (%s or %s): a description copied onto another VM is not imported. If it is the proxy VM to manage "+
			"here, attach its seed ISO as its CD-ROM in Proxmox (qm set %d --ide2 <storage>:iso/<seed>,media=cdrom), then import it again",
			cfg["name"], r.VMID, MarkKeyInstance, seedFile(cfg["name"], mark.UID), operatorSeedFile(cfg["name"]), r.VMID)
	}
	if why == notOursInstance {
		return ID{}, Permanentf("VM %q (VMID %d) carries a mark written for another VM (its %s line names SMBIOS uuid %s, the VM's is %q): "+
			"a description copied from another VM, or left on a VMID another VM now holds, is not imported; if this "+
			"VM is a proxy VM to manage here, "+
			"remove that line from its description in Proxmox, then import it again", cfg["name"], r.VMID,
			MarkKeyInstance, mark.Instance, instanceOf(cfg))
	}
	if mark.Creating {
		// It belongs to the create that will finish it: the next apply of that name in its
		// uid_namespace takes it over, if the mark proves it. Importing it too would give it
		// two owners.
		e := Permanentf("VM %q (VMID %d) is still being created (its mark says %s=%s): %s",
			cfg["name"], r.VMID, MarkKeyState, MarkStateCreating, b.creatingAdvice(cfg, r.VMID, mark))
		e.Err = stillCreating{e.Err}
		return ID{}, e
	}
	return ID{VMID: r.VMID, Name: cfg["name"]}, nil
}

// stillCreating is the import refusal's message, matching ErrStillCreating.
type stillCreating struct{ error }

func (e stillCreating) Is(target error) bool { return target == ErrStillCreating }

// Unwrap returns the message error.
func (e stillCreating) Unwrap() error { return e.error }

// creatingAdvice says what becomes of a VM still marked creating: the next apply of its
// configuration takes it over only when its proof verifies under this provider's API token
// and it is dated within TakeoverWindow (create_identity.go judge); otherwise nothing ever will.
func (b *Backend) creatingAdvice(cfg map[string]string, vmid int, mark Mark) string {
	var key []byte
	if b.cfg.ProofKey != nil {
		key, _ = b.cfg.ProofKey()
	}
	_, proved, why := provedCreating(key, cfg, vmid, cfg["name"], mark.Namespace)
	if proved {
		if age := b.clock.Now().Sub(mark.CreatedAt); age <= TakeoverWindow && age >= -TakeoverWindow {
			// The safe reading first: following the finish-it route on a live VM destroys it
			// (adversary finding adv1 #6).
			v := strconv.Itoa(vmid)
			return "check the VM first (`qm status " + v + "`, `qm config " + v + "`). If it runs or has its seed ISO attached, it is a " +
				"live VM whose description was rewritten with an older text: do not apply to finish it, which would destroy it and clone " +
				"it afresh. If it is someone's VM, remove the copied proxy-operator-* lines from its description in Proxmox; if it is a " +
				"proxy VM to manage here, delete only its " + MarkKeyState + " and " + MarkKeyProof + " lines and import it again. " +
				"Only if it is stopped with no seed attached is it an apply creating it that is running or was interrupted: then apply " +
				"the configuration that creates it again (its uid_namespace " + strconv.Quote(mark.Namespace) + ") to finish it, or " +
				"destroy the VM in Proxmox"
		}
		why = "it is older than the " + TakeoverWindow.String() + " a create may take an interrupted create over in"
	}
	return "no apply will finish it (" + why + "): destroy it in Proxmox (`qm stop " + strconv.Itoa(vmid) + " && qm destroy " +
		strconv.Itoa(vmid) + " --purge`), or let the proxy_orphan_cleanup action remove it if this provider made it"
}
