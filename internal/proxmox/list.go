package proxmox

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// listConfigReads caps the config reads List runs at once.
const listConfigReads = 4

// List returns every marked VM (decision: list-marked) in the cluster, sorted by VMID, from one listing
// (shared with other reads within Budgets.ListingTTL) plus one config read per candidate.
// Candidates are QEMU VMs that are not templates, have a name (a clone in progress has
// none) and carry the tag proxy_operator or a name starting with "proxy-"; the mark in the
// description decides. A candidate whose config cannot be read (its node down, the VM
// destroyed meanwhile) is skipped with a log line, unless ctx ended, which fails the call;
// the listing failing fails the call.
func (b *Backend) List(ctx context.Context) ([]Instance, error) {
	out, _, err := b.ListWithSkipped(ctx)
	return out, err
}

// SkippedVM is a List candidate left out because its config could not be read.
type SkippedVM struct {
	ID   ID
	Node string
	Err  error
}

// ListWithSkipped is List plus the candidates it left out because their config could not
// be read (sorted by VMID), so that a caller can say the list may be incomplete.
func (b *Backend) ListWithSkipped(ctx context.Context) ([]Instance, []SkippedVM, error) {
	res, err := b.listing(ctx, false)
	if err != nil {
		return nil, nil, wrap("list", "", 0, apiErrorf("list", err, "listing the cluster's VMs"))
	}
	cands := listCandidates(res)
	found := make([]*Instance, len(cands))
	failed := make([]error, len(cands))
	sem := make(chan struct{}, listConfigReads)
	var wg sync.WaitGroup
	for i, r := range cands {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			cfg, err := b.api.VMConfig(ctx, r.Node, r.VMID)
			if err != nil {
				if ctx.Err() == nil {
					failed[i] = err
					tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox list candidate skipped", map[string]any{
						"vmid": r.VMID, "name": r.Name, "node": r.Node, "error": err.Error(),
					})
				}
				return
			}
			m := ParseMark(cfg["description"])
			if !m.Managed {
				return
			}
			found[i] = &Instance{
				ID: ID{VMID: r.VMID, Name: r.Name}, Node: r.Node,
				UID: m.UID, CreatedAt: m.CreatedAt, Status: r.Status,
				CreatedBy: ParseMarkExtra(cfg["description"]).CreatedBy,
				Config:    vmFromConfig(ID{VMID: r.VMID, Name: r.Name}, r.Node, cfg, m),
			}
			found[i].Config.Pool = r.Pool
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, wrap("list", "", 0, apiErrorf("list", err, "reading the candidates' configs"))
	}
	out := make([]Instance, 0, len(cands))
	var skipped []SkippedVM
	for i, in := range found {
		switch {
		case in != nil:
			out = append(out, *in)
		case failed[i] != nil:
			r := cands[i]
			skipped = append(skipped, SkippedVM{ID: ID{VMID: r.VMID, Name: r.Name}, Node: r.Node, Err: failed[i]})
		}
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vms listed", map[string]any{
		"listed": len(res), "candidates": len(cands), "marked": len(out), "skipped": len(skipped),
	})
	return out, skipped, nil
}

// listCandidates are the listing's entries whose config List reads, sorted by VMID.
func listCandidates(res []pveapi.Resource) []pveapi.Resource {
	var out []pveapi.Resource
	for _, r := range res {
		if r.Type != "qemu" || r.Template != 0 || r.Name == "" {
			continue
		}
		if hasManagedTag(r.Tags) || strings.HasPrefix(r.Name, "proxy-") {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b pveapi.Resource) int { return a.VMID - b.VMID })
	return out
}

// hasManagedTag reports whether a listing's tags (split on ';', ',' or space; Proxmox
// folds them to lowercase) hold ManagedTag.
func hasManagedTag(tags string) bool {
	return slices.ContainsFunc(strings.FieldsFunc(tags, func(r rune) bool {
		return r == ';' || r == ',' || r == ' '
	}), func(t string) bool { return strings.EqualFold(t, ManagedTag) })
}
