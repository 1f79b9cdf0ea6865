package proxmox

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// The untouched-clone check (decision: instance-binding). A mark written before its
// create's config step (a state line, no instance line) is a text anyone who read the
// description can copy onto another VM, and its proof covers the uid, VMID, name and
// namespace only. So a VM carrying one is treated as a half-made VM of this provider (the
// clean-up deletes it, a create retry destroys and re-clones it) only when it is still what
// Proxmox's clone of the template made: the template's config, with only the keys the
// clone call itself sets or regenerates differing. qemu-server src/PVE/API2/Qemu.pm
// clone_vm:
//   - 4505, 4680: lock=clone while the task runs, dropped at its end;
//   - 4513-4525: snapshot keys (snapshots, parent, snaptime, vmstate, snapstate,
//     runningcpu, runningmachine, running-nets-host-mtu) and unusedN are not copied;
//   - 4531-4535: every netN gets a new MAC, its other options kept;
//   - 4536-4574, 4662-4674: a CD-ROM drive is copied as it is; any other drive (disks,
//     efidisk0, tpmstate0) gets a new volume, clone_disk (src/PVE/QemuServer.pm:8105-8110)
//     dropping format= and setting size= to the new volume's, its other options kept;
//   - 4575-4577: every other key is copied, meta included (fact: meta-copied; meta cannot
//     be written through the API, src/PVE/QemuServer.pm:1730-1740, so a VM made by the
//     create call has its own, src/PVE/API2/Qemu.pm:1487);
//   - 4592-4599: smbios1 gets a new uuid, its other options kept; vmgenid a new value when
//     the template's is set;
//   - 4601-4611: template dropped; name and description set from the call.
//
// The description, a write of the provider's (the takeover's and the clean-up's claim),
// and digest, the API's, are not compared either.

// cloneDriveRE is every drive slot clone_vm handles as a drive (is_valid_drivename): the
// disk slots, efidisk0 and tpmstate0.
var cloneDriveRE = regexp.MustCompile(`^((ide|sata|scsi|virtio)[0-9]+|efidisk0|tpmstate0)$`)

// cloneSkipRE is the template keys clone_vm does not copy (Qemu.pm:4513-4525, 4601).
var cloneSkipRE = regexp.MustCompile(`^(snapshots|parent|snaptime|vmstate|snapstate|runningcpu|runningmachine|` +
	`running-nets-host-mtu|unused[0-9]+|template|digest)$`)

// maxCloneDiffs bounds how many differences a sign lists.
const maxCloneDiffs = 6

// cloneDiffs lists how the config cfg differs from a clone of the template whose config is
// tmpl (template VMID tmplVMID), as Proxmox's clone_vm makes one; none when cfg is an
// untouched clone. A nil tmpl is one difference: nothing can be compared.
func cloneDiffs(tmpl, cfg map[string]string, tmplVMID int) []string {
	if tmpl == nil {
		return []string{fmt.Sprintf("the config of template %d could not be read", tmplVMID)}
	}
	var diffs []string
	keys := map[string]bool{}
	for k := range tmpl {
		if !cloneSkipRE.MatchString(k) {
			keys[k] = true
		}
	}
	for k := range cfg {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if d := cloneKeyDiff(k, tmpl, cfg); d != "" {
			diffs = append(diffs, d)
		}
	}
	return diffs
}

// cloneKeyDiff says how the key k of cfg differs from what the clone of tmpl has there, ""
// when it does not.
func cloneKeyDiff(k string, tmpl, cfg map[string]string) string {
	tv, tok := tmpl[k]
	if cloneSkipRE.MatchString(k) {
		tv, tok = "", false
	}
	v, ok := cfg[k]
	switch {
	case k == "name" || k == "description" || k == "digest":
		return ""
	case k == "lock":
		if v == "clone" {
			return ""
		}
		return "lock is " + v
	case !tok && !ok:
		return ""
	case !tok:
		return fmt.Sprintf("it has %s (%s), which the template has not", k, v)
	case !ok:
		return fmt.Sprintf("it has no %s, which the template has (%s)", k, tv)
	}
	var same bool
	switch {
	case cloneDriveRE.MatchString(k) && isCDROM(tv) && !strings.Contains(driveVolume(tv), "cloudinit"):
		same = v == tv
	case cloneDriveRE.MatchString(k):
		same = !isCDROM(v) && sameOptions(v, tv, "file", "volume", "format") && (k == "efidisk0" || k == "tpmstate0" || sameSize(v, tv))
	case netKeyRE.MatchString(k):
		same = sameOptions(withoutMAC(v), withoutMAC(tv))
	case k == "smbios1":
		same = sameOptions(v, tv, "uuid")
	case k == "vmgenid":
		same = tv != "0" || v == tv
	default:
		same = v == tv
	}
	if same {
		return ""
	}
	return fmt.Sprintf("%s is %s where the template's clone has %s", k, v, tv)
}

// sameOptions reports whether two comma-separated option lists hold the same options in
// any order (print_drive and print_net write them in their own order), leaving out the
// keys skip and a drive's unnamed volume.
func sameOptions(a, b string, skip ...string) bool {
	set := func(v string) []string {
		var out []string
		for opt := range strings.SplitSeq(v, ",") {
			k, _, named := strings.Cut(opt, "=")
			if opt == "" || (!named && slices.Contains(skip, "file")) || slices.Contains(skip, k) || k == "size" {
				continue
			}
			out = append(out, opt)
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(set(a), set(b))
}

// sameSize reports whether two drive values have the same size= in bytes (both without
// one counts as the same).
func sameSize(a, b string) bool {
	as, aok := diskSizeBytes(a)
	bs, bok := diskSizeBytes(b)
	return aok == bok && as == bs
}

// withoutMAC is a net value with its MAC left out: the model's value ("virtio=<MAC>") and
// macaddr=, which clone_vm regenerates (Qemu.pm:4531-4535).
func withoutMAC(v string) string {
	opts := strings.Split(v, ",")
	out := opts[:0]
	for _, opt := range opts {
		k, _, _ := strings.Cut(opt, "=")
		switch k {
		case "macaddr":
			continue
		case "virtio", "e1000", "e1000e", "rtl8139", "vmxnet3", "i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet",
			"e1000-82540em", "e1000-82544gc", "e1000-82545em":
			opt = k
		}
		out = append(out, opt)
	}
	return strings.Join(out, ",")
}

// notUntouchedClone says why a VM whose mark was written before its create's config step
// (unbound) is not an untouched clone of the template tmplVMID, whose config is tmpl: a
// sign for the clean-up and a reason for the takeover to leave it alone. "" when it is.
func notUntouchedClone(tmpl, cfg map[string]string, tmplVMID int) string {
	diffs := cloneDiffs(tmpl, cfg, tmplVMID)
	if len(diffs) == 0 {
		return ""
	}
	more := ""
	if len(diffs) > maxCloneDiffs {
		more = fmt.Sprintf("; and %d more", len(diffs)-maxCloneDiffs)
		diffs = diffs[:maxCloneDiffs]
	}
	return fmt.Sprintf("its creating mark was written before its create's config step, yet it is not an untouched clone of template %d (%s%s)",
		tmplVMID, strings.Join(diffs, "; "), more)
}

// catalogueClone says why the VM whose config is cfg, its mark written before its create's
// config step, is not an untouched clone of a template of the provider's catalogue
// (Config.Templates), "" and that template when it is one. The candidates are the
// catalogue's templates whose meta equals the VM's (fact: meta-copied); a template set by
// a resource's template_vmid outside the catalogue cannot be known here, so such a VM is
// not shown to be a clone. An error is a listing's or a template config read's.
func (b *Backend) catalogueClone(ctx context.Context, op string, cfg map[string]string) (string, pveapi.Resource, error) {
	res, err := b.listing(ctx, false)
	if err != nil {
		return "", pveapi.Resource{}, apiErrorf(op, err, "listing the cluster's VMs")
	}
	first := ""
	seen := map[int]bool{}
	for _, vmid := range slices.Sorted(maps.Values(b.cfg.Templates)) {
		r, ok := findResource(res, vmid)
		if seen[vmid] || !ok || r.Type != "qemu" || r.Template != 1 {
			continue
		}
		seen[vmid] = true
		tmpl, err := b.api.VMConfig(ctx, r.Node, vmid)
		switch {
		case isNotExist(err):
			continue
		case err != nil:
			return "", pveapi.Resource{}, apiErrorf(op, err, "reading the config of template %d on node %s", vmid, r.Node)
		case tmpl["meta"] != cfg["meta"]:
			continue
		}
		why := notUntouchedClone(tmpl, cfg, vmid)
		if why == "" {
			return "", r, nil
		}
		if first == "" {
			first = why
		}
	}
	if first != "" {
		return first, pveapi.Resource{}, nil
	}
	meta := cfg["meta"]
	if meta == "" {
		meta = "none"
	}
	return fmt.Sprintf("its creating mark was written before its create's config step, yet its meta (%s) matches no template "+
		"of the provider's image catalogue (templates), so it is not shown to be a clone the provider made", meta), pveapi.Resource{}, nil
}

// untouchedCloneSign is the clean-up's sign that the half-made VM o, its mark without an
// instance line, is not this provider's untouched clone of a catalogue template: its config
// is not (catalogueClone), or the nodes' task history shows it used or made by someone
// else (usedSinceClone). Read afresh; "" when it is one, or is gone.
func (b *Backend) untouchedCloneSign(ctx context.Context, o OrphanVM) (string, error) {
	cfg, err := b.api.VMConfig(ctx, o.Node, o.ID.VMID)
	switch {
	case isNotExist(err):
		return "", nil
	case err != nil:
		return "", apiErrorf("delete", err, "reading the config of VMID %d on node %s", o.ID.VMID, o.Node)
	}
	why, tmpl, err := b.catalogueClone(ctx, "delete", cfg)
	if why != "" || err != nil {
		return why, err
	}
	// The template was matched by its meta, which is the VM's.
	return b.usedSinceClone(ctx, cloneHistory{vmid: o.ID.VMID, node: o.Node, created: o.CreatedAt, tmplVMID: tmpl.VMID,
		tmplNode: tmpl.Node, tmplMeta: cfg["meta"]})
}
