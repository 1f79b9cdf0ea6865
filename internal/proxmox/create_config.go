package proxmox

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// waitIP is Create's address wait (waitAddress): when the seed installs the agent (or the
// user-data installs it), it waits for as long as ctx allows (a first boot installs it in
// about 50 s on a real host); otherwise the template must ship it, and an agent that does
// not answer within Budgets.AgentStart of the start ends the wait.
func (b *Backend) waitIP(
	ctx context.Context,
	node string,
	vmid int,
	s *Spec,
	started bool,
	seen *[]pveapi.NetworkInterface,
	owned func(context.Context) error,
) (string, error) {
	a := addressWait{op: "create", node: node, vmid: vmid, expect: agentAtFirstBoot, owned: owned,
		delayKey: agentDelayKey(true, s.TemplateVMID), learn: started, seen: seen, want: s.Network.WantIPv4(),
		rawNetwork: s.Network != nil && s.Network.Static == nil && s.Network.Raw != nil}
	if !b.seedInstallsAgent(s.UserData) {
		a.expect, a.delayKey = agentInstalled, agentDelayKey(false, 0)
		a.why = "install_guest_agent is off and the cloud-init does not install qemu-guest-agent, so it must come with the template"
	}
	return b.waitAddress(ctx, a)
}

// configParams is the create's config write: cores, memory, agent=1, the tag (other tags kept), the
// seed on ide2, onboot, and net0 rewritten only when a bridge or VLAN tag is set. A value
// that would break out of its option string is refused (optionValue).
func configParams(s Spec, cfg map[string]string, isoStorage string) (map[string]string, error) {
	vol, err := optionValue("ide2", specSeed(isoStorage, s).volid())
	if err != nil {
		return nil, err
	}
	p := map[string]string{
		"agent":  "1",
		"tags":   mergeTags(cfg["tags"]),
		"ide2":   vol + ",media=cdrom",
		"onboot": boolParam(s.OnBoot),
	}
	if s.Cores > 0 {
		p["cores"] = strconv.Itoa(s.Cores)
	}
	if s.MemoryMiB > 0 {
		p["memory"] = strconv.Itoa(s.MemoryMiB)
	}
	tagsCreateParams(p, s)
	if err := optionParams(p, s, cfg); err != nil {
		return nil, err
	}
	if err := inPlaceParams(p, s, cfg); err != nil {
		return nil, err
	}
	if s.Bridge != "" || s.VLANTag != 0 {
		var tag *int
		if s.VLANTag != 0 {
			tag = &s.VLANTag
		}
		net0, err := rewriteNet0(cfg["net0"], &s.Bridge, tag)
		if err != nil {
			return nil, err
		}
		p["net0"] = net0
	}
	return p, nil
}

// mergeTags keeps the VM's tags (lowercased, as Proxmox stores them) and adds ours.
func mergeTags(existing string) string {
	var tags []string
	for _, t := range splitTags(strings.ToLower(existing)) {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	if !slices.Contains(tags, ManagedTag) {
		tags = append(tags, ManagedTag)
	}
	return strings.Join(tags, ";")
}

func boolParam(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

// takeoverDisks says why the VM whose config is cfg cannot be a clone of the template whose
// config is tmpl that a create with disk_gib diskGiB left (decision: instance-binding), ""
// when it can: the same disk drive keys (CD-ROMs aside), each at least the template's size
// and at most the larger of the template's and disk_gib. A create takes over nothing else.
func takeoverDisks(tmpl, cfg map[string]string, diskGiB, tmplVMID int) string {
	if tmpl == nil {
		return "the template's config is not known, so its disks cannot be compared"
	}
	disks := func(c map[string]string) []string {
		var out []string
		for _, k := range slices.Sorted(maps.Keys(c)) {
			if isDiskKey(k) && !isCDROM(c[k]) {
				out = append(out, k)
			}
		}
		return out
	}
	want, got := disks(tmpl), disks(cfg)
	if !slices.Equal(want, got) {
		return fmt.Sprintf("its disks (%s) are not those of template %d (%s), so it is not a clone a create of this name made",
			orNoDisk(got), tmplVMID, orNoDisk(want))
	}
	for _, k := range want {
		tsize, tok := diskSizeBytes(tmpl[k])
		size, ok := diskSizeBytes(cfg[k])
		limit := max(tsize, int64(diskGiB)*gib)
		if !tok || !ok || size < tsize || size > limit {
			return fmt.Sprintf(
				"its disk %s (size=%s) is not a clone of template %d's (size=%s) grown at most to disk_gib, "+
					"so it is not a clone a create of this name made",
				k,
				getOption(cfg[k], "size"),
				tmplVMID,
				getOption(tmpl[k], "size"),
			)
		}
	}
	return ""
}

func orNoDisk(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// unboundButProvisioned says why a proved VM whose mark was written before its create's
// config step (no instance line, decision: instance-binding) cannot be that create's: it
// has a seed ISO on a drive, or runs, is paused or hibernated, which only the config step
// and the start after it do. "" when it is as a clone leaves it.
func (c *creation) unboundButProvisioned(ctx context.Context, node string, vmid int, cfg map[string]string) (string, error) {
	if !unbound(cfg) {
		return "", nil
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if isDiskKey(k) && isSeedVolID(driveVolume(cfg[k])) {
			return "its creating mark was written before its create's config step, " +
				"yet " + k + " holds a seed ISO: a text copied onto another VM", nil
		}
	}
	ran, err := c.b.unboundButRan(ctx, "create", node, vmid, cfg)
	if err != nil {
		return "", err
	}
	if ran {
		return "its creating mark was written before its create's config step, yet the VM has run: a text copied onto another VM", nil
	}
	return "", nil
}

// writeConfig is the config step as a compare-and-swap on the digest the config was read
// with: a takeover in between makes it fail instead of re-pointing another Create's VM.
func (c *creation) writeConfig(ctx context.Context, params map[string]string) error {
	b := c.b
	for range 3 {
		p := map[string]string{}
		for k, v := range params {
			p[k] = v
		}
		if d := c.cfg["digest"]; d != "" {
			p["digest"] = d
		}
		err := b.api.SetVMConfig(ctx, c.node, c.vmid, p)
		if err == nil {
			return nil
		}
		if !pveapi.IsConfigModified(err) {
			return apiErrorf("create", err, "writing the config on node %s", c.node)
		}
		cfg, err := c.checkStillOurs(ctx)
		if err != nil {
			return err
		}
		c.cfg = cfg
	}
	return Transientf("the config of VMID %d kept changing while it was written; apply again", c.vmid)
}

// finalize is Create's last step: the description without the state line, a
// compare-and-swap on the digest, after checking that the mark still carries this Create's
// uid. From then on the VM is finished: no later Create takes it over.
func (c *creation) finalize(ctx context.Context) error {
	b, s := c.b, &c.s
	for range 3 {
		cfg, err := b.api.VMConfig(ctx, c.node, c.vmid)
		switch {
		case err == nil:
		case isNotExist(err):
			return Transientf("VMID %d vanished before its create finished; apply again", c.vmid)
		default:
			return apiErrorf("create", err, "reading the config on node %s to finish the mark", c.node)
		}
		m, why := ownedBy(cfg, s.Name, Owner{UID: s.UID})
		if why != notOursNone {
			return takenOverErr(c.vmid, s.Name, m.UID)
		}
		if !m.Creating {
			return nil
		}
		// A create whose context is done (Terraform was killed or interrupted, or the
		// create timeout passed) never finishes the mark: nobody would save this VM in a
		// state, and a VM left "creating" is taken over by the next create of its name,
		// while a finished one would be left untracked. The HTTP client refuses a request
		// whose context is done too; this check is the rule, stated where it matters.
		if err := ctx.Err(); err != nil {
			return Transientf(
				"the create was cancelled before its last step; the VM is left marked %q for the next apply to take over: %w",
				MarkKeyState+"="+MarkStateCreating,
				err,
			)
		}
		if s.Abandoned != nil && s.Abandoned() {
			return Transientf(
				"the create was abandoned before its last step (nobody waits for its answer); the VM is left marked %q for the next apply to take over",
				MarkKeyState+"="+MarkStateCreating,
			)
		}
		desc := withNote(
			MarkLines{UID: s.UID, CreatedAt: m.CreatedAt, Namespace: m.Namespace, Instance: m.Instance}.Format()+FormatMarkExtra(*s),
			noteOfSpec(*s),
		)
		err = b.api.SetVMConfig(ctx, c.node, c.vmid, finishParams(map[string]string{"description": desc, "digest": cfg["digest"]}, *s))
		switch {
		case err == nil:
			return nil
		case pveapi.IsConfigModified(err):
			continue
		default:
			return apiErrorf("create", err, "finishing the mark (the last step of the create) on node %s", c.node)
		}
	}
	return Transientf("the config of VMID %d kept changing while its mark was finished; apply again", c.vmid)
}
