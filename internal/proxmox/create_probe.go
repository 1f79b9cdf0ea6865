package proxmox

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// checkTemplate refuses (decision: template-checks), before anything exists, a template the later steps
// could not use. It returns the template's node.
func (c *creation) checkTemplate(ctx context.Context, res []pveapi.Resource) (string, error) {
	s := &c.s
	r, ok := findResource(res, s.TemplateVMID)
	if !ok {
		// The listing shows only what the token may audit (fact: pool-privileges).
		if err := c.b.hiddenVM(ctx, "create", s.TemplateVMID, fmt.Sprintf("Template %d", s.TemplateVMID)); err != nil {
			return "", err
		}
	}
	if !ok || r.Type != "qemu" {
		return "", Permanentf("template VMID %d does not exist in the cluster; fix the image catalogue or template_vmid", s.TemplateVMID)
	}
	cfg, err := c.b.api.VMConfig(ctx, r.Node, s.TemplateVMID)
	if err != nil {
		if isNotExist(err) {
			return "", Permanentf(
				"template VMID %d does not exist in the cluster; fix the image catalogue or template_vmid",
				s.TemplateVMID,
			)
		}
		return "", apiErrorf("create", err, "reading the config of template %d on node %s", s.TemplateVMID, r.Node)
	}
	c.tmplCfg, c.tmplNode = cfg, r.Node
	if cfg["template"] != "1" {
		return "", Permanentf("VMID %d (%s) is not a template: point the catalogue (templates) at the VMID of a template. "+
			"Only if VM %d is meant to be the template (converting is irreversible, and it must not be a VM in use), "+
			"convert it with `qm template %d`",
			s.TemplateVMID, r.Name, s.TemplateVMID, s.TemplateVMID)
	}
	if slot, ok := cloudInitDrive(cfg); ok {
		return "", Permanentf(
			"template %d has a Proxmox cloud-init drive on %s, which would compete with the provider's seed ISO; "+
				"remove that drive from the template",
			s.TemplateVMID,
			slot,
		)
	}
	if err := checkIDE2Free(s.TemplateVMID, cfg); err != nil {
		return "", err
	}
	if s.Network.needsMAC() && parseNet0(cfg["net0"]).MAC == "" {
		return "", Permanentf(
			"template %d has no net0 with a MAC address, so static_ipv4 cannot be matched to the VM's NIC; "+
				"add a network device to the template, or use network_config",
			s.TemplateVMID,
		)
	}
	if (s.Bridge != "" || s.VLANTag != 0) && cfg["net0"] == "" {
		return "", Permanentf(
			"template %d has no net0, so the bridge and VLAN tag cannot be set; add a network device to the template",
			s.TemplateVMID,
		)
	}
	if s.DiskGiB > 0 {
		if _, _, ok := bootDiskSize(cfg); !ok {
			return "", Permanentf(
				"template %d has no boot disk with a readable size=, so disk_gib cannot be applied; give the template a boot disk or unset disk_gib",
				s.TemplateVMID,
			)
		}
	}
	if err := c.b.agentPreflight(s, cfg); err != nil {
		return "", err
	}
	return r.Node, nil
}

// allocate probes vmidFor(AllocKey, 0..) (decision: vmid-function) until a clone lands or an
// interrupted create of this name is taken over; at most 32 distinct VMIDs.
func (c *creation) allocate(ctx context.Context, res []pveapi.Resource, tmplNode string) error {
	lo, hi := c.b.cfg.VMIDMin, c.b.cfg.VMIDMax
	probes := min(maxProbes, hi-lo+1)
	for attempt := range probes {
		vmid := vmidFor(c.s.AllocKey, attempt, lo, hi)
		done, err := c.probe(ctx, &res, vmid, tmplNode)
		if err != nil || done {
			return err
		}
	}
	c.vmid, c.node = 0, "" // none is ours: failed tells onAllocated to forget the last one saved
	// Permanent: the same name probes the same VMIDs on every run, so only freeing one of
	// them or changing the range helps. The VMIDs are other guests': none is named.
	return Permanentf("no free VMID for this name: the %d VMIDs it probes in vmid_range %d to %d all hold other guests; "+
		"widen vmid_range in the provider block, or free VMIDs in that range (destroy guests you no longer need)",
		probes, lo, hi)
}

// probeOutcome is what one look at a VMID found.
type probeOutcome int

const (
	probeNext  probeOutcome = iota // not ours to use: the next VMID is probed
	probeDone                      // the VM there is this create's: cloned, or taken over
	probeAgain                     // freed (or rebuilt) while we looked: looked at again
	probeHeld                      // a guest holds it: judged by its config (probeHeldBy)
)

// probe tries one VMID: clone onto it when free (probeFree), else judge the guest that
// holds it (probeHeldBy). It reports whether the VM there is this create's.
func (c *creation) probe(ctx context.Context, res *[]pveapi.Resource, vmid int, tmplNode string) (bool, error) {
	for range 4 { // a VMID freed (or rebuilt) while we looked is tried again
		r, taken := findResource(*res, vmid)
		if !taken {
			out, held, err := c.probeFree(ctx, res, vmid, tmplNode)
			switch {
			case err == nil && out == probeAgain:
				continue // free again: the listing was just read
			case err != nil || out != probeHeld:
				return out == probeDone, err
			}
			r = held
		}
		out, err := c.probeHeldBy(ctx, r)
		if err != nil || out != probeAgain {
			return out == probeDone, err
		}
		if *res, err = c.b.listing(ctx, true); err != nil {
			return false, apiErrorf("create", err, "listing the cluster's VMs")
		}
	}
	return false, nil
}

// probeFree clones onto a VMID the listing shows free. With a pool, a token scoped to it
// sees only the pool's guests, so whether a guest it may not see holds the VMID is asked
// first (fact: pool-privileges). A clone Proxmox refuses because someone took the VMID
// meanwhile (fact: clone-vmid-taken) lists the cluster again: probeHeld with the entry
// that holds it now, or probeAgain when it is free again.
func (c *creation) probeFree(
	ctx context.Context,
	res *[]pveapi.Resource,
	vmid int,
	tmplNode string,
) (probeOutcome, pveapi.Resource, error) {
	if c.s.Pool != "" {
		free, err := c.b.api.VMIDFree(ctx, vmid)
		if err != nil {
			return probeNext, pveapi.Resource{}, apiErrorf("create", err, "asking whether a guest holds VMID %d", vmid)
		}
		if !free {
			tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox vmid taken by a guest the token may not see", map[string]any{
				"vmid": vmid, "name": c.s.Name, "pool": c.s.Pool,
			})
			return probeNext, pveapi.Resource{}, nil
		}
	}
	cloned, err := c.clone(ctx, vmid, tmplNode)
	switch {
	case err != nil:
		return probeNext, pveapi.Resource{}, err
	case cloned:
		return probeDone, pveapi.Resource{}, nil
	}
	if *res, err = c.b.listing(ctx, true); err != nil {
		return probeNext, pveapi.Resource{}, apiErrorf("create", err, "listing the cluster's VMs")
	}
	if r, taken := findResource(*res, vmid); taken {
		return probeHeld, r, nil
	}
	return probeAgain, pveapi.Resource{}, nil
}

// probeHeldBy judges the guest that holds a VMID, listed as r, unless it is plainly
// another guest (a container, a template, another real listed name: waiting on its lock
// would hold every retry, decision: identity-and-adoption). A nameless or "VM <vmid>"
// entry (a clone in progress, or pvestatd's stale snapshot of one) is waited on within the
// clone budget: it may be an interrupted create of ours. The ownership rule (judge)
// decides: another resource's VM is passed, an interrupted create of ours taken over.
func (c *creation) probeHeldBy(ctx context.Context, r pveapi.Resource) (probeOutcome, error) {
	vmid := r.VMID
	if r.Type != "qemu" || r.Template == 1 || (!listedPlaceholder(r) && r.Name != c.s.Name) {
		tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox vmid taken by another guest", map[string]any{
			"vmid": vmid, "name": c.s.Name, "other_name": r.Name, "type": r.Type,
		})
		return probeNext, nil
	}
	cfg, gone, err := c.b.settledConfig(ctx, vmid, r.Node, c.s.Name)
	switch {
	case err != nil && probePast(ctx, r, err):
		return probeNext, nil
	case err != nil:
		return probeNext, err
	case gone:
		return probeAgain, nil
	}
	v, err := c.judge(vmid, r.Node, cfg)
	if err != nil {
		return probeNext, err
	}
	switch v {
	case verdictForeign:
		tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox vmid holds another resource's vm", map[string]any{
			"vmid": vmid, "name": c.s.Name, "other_name": cfg["name"],
		})
		c.notePassed(vmid, r.Node, cfg)
		return probeNext, nil
	case verdictOurs:
		return probeNext, Permanentf("VMID %d already carries this create's uid %s; this is a provider bug", vmid, c.s.UID)
	case verdictResume:
		why, err := c.notResumable(ctx, r.Node, vmid, cfg)
		if err != nil {
			return probeNext, err
		}
		if why != "" {
			// The proof is a bearer token: a VM whose disks the clone did not make is
			// someone's, whatever its description says (decision: instance-binding).
			c.noteUnproved(vmid, r.Node, ParseMark(cfg["description"]), why)
			return probeNext, nil
		}
		rebuilt, ok, err := c.takeOver(ctx, vmid, r.Node, cfg)
		switch {
		case err != nil:
			return probeNext, err
		case ok && !rebuilt:
			if c.cfg, err = c.checkStillOurs(ctx); err != nil {
				return probeNext, err
			}
			return probeDone, nil
		}
	}
	return probeAgain, nil
}

// notResumable says why the VM at vmid, its mark proved an interrupted create of this
// name, may not be taken over: disks the clone did not make, a sign it got past its clone,
// or, for a mark written before the config step, a config or a task history that is not
// an untouched clone's (decision: clone-history); "" when it may.
func (c *creation) notResumable(ctx context.Context, node string, vmid int, cfg map[string]string) (string, error) {
	var err error
	why := takeoverDisks(c.tmplCfg, cfg, c.s.DiskGiB, c.s.TemplateVMID)
	if why == "" {
		if why, err = c.unboundButProvisioned(ctx, node, vmid, cfg); err != nil {
			return "", err
		}
	}
	if why == "" && unbound(cfg) {
		if why = notUntouchedClone(c.tmplCfg, cfg, c.s.TemplateVMID); why == "" {
			h := cloneHistory{vmid: vmid, node: node, created: ParseMark(cfg["description"]).CreatedAt,
				tmplVMID: c.s.TemplateVMID, tmplNode: c.tmplNode, tmplMeta: c.tmplCfg["meta"]}
			if why, err = c.b.usedSinceClone(ctx, h); err != nil {
				return "", err
			}
		}
	}
	if why == "" && unbound(cfg) { // again: a start during the history reads shows now
		if why, err = c.unboundButProvisioned(ctx, node, vmid, cfg); err != nil {
			return "", err
		}
	}
	return why, nil
}
