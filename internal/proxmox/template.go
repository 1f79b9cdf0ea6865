package proxmox

import (
	"context"
)

// TemplateOf tells which of the candidate template VMIDs vm was cloned from, for import:
// a full clone copies the template's meta value, ctime included (fact: meta-copied), so the one
// candidate template whose meta ctime equals vm's is its source. ok is false when vm has
// no meta ctime, or when no candidate or more than one matches; candidates that are
// missing or are not templates are skipped. It reads the shared listing and one config
// per candidate; an error is the listing's or a config read's (other than a missing
// template).
func (b *Backend) TemplateOf(ctx context.Context, vm VM, candidates []int) (int, bool, error) {
	ctime := getOption(vm.Meta, "ctime")
	if ctime == "" {
		return 0, false, nil
	}
	res, err := b.listing(ctx, false)
	if err != nil {
		return 0, false, wrap("import", vm.ID.Name, vm.ID.VMID, apiErrorf("import", err, "listing the cluster's VMs"))
	}
	var match []int
	seen := map[int]bool{}
	for _, vmid := range candidates {
		if seen[vmid] {
			continue
		}
		seen[vmid] = true
		r, ok := findResource(res, vmid)
		if !ok || r.Type != "qemu" || r.Template != 1 {
			continue
		}
		cfg, err := b.api.VMConfig(ctx, r.Node, vmid)
		if err != nil {
			if isNotExist(err) {
				continue
			}
			return 0, false, wrap("import", vm.ID.Name, vm.ID.VMID, apiErrorf("import", err, "reading the config of template %d", vmid))
		}
		if getOption(cfg["meta"], "ctime") == ctime {
			match = append(match, vmid)
		}
	}
	if len(match) != 1 {
		return 0, false, nil
	}
	return match[0], true, nil
}
