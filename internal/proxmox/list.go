package proxmox

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// defaultListConcurrency is Config.ListConcurrency when unset.
const defaultListConcurrency = 4

// listWindow is how many listed VMs a listing holds at once (their configs being read, or
// read and not yet handed on), whatever the cluster's size: with the fixed pool of
// readers, it bounds the memory and goroutines of a listing (decision: list-marked).
const listWindow = 64

// listConcurrency is how many config reads a listing runs at once.
func (b *Backend) listConcurrency() int {
	if n := b.cfg.ListConcurrency; n > 0 {
		return n
	}
	return defaultListConcurrency
}

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
	var out []Instance
	skipped, err := b.ListEach(ctx, func(in Instance) bool {
		out = append(out, in)
		return true
	})
	if err != nil {
		return nil, nil, err
	}
	return out, skipped, nil
}

// ListEach is List as a stream: fn gets each marked VM in VMID order as soon as it and the
// ones before it are read, and may stop the listing by returning false. At most
// ListConcurrency configs are read at once and at most listWindow candidates are held, so
// a listing of any size runs in bounded memory and goroutines. It returns the candidates
// left out because their config could not be read.
func (b *Backend) ListEach(ctx context.Context, fn func(Instance) bool) ([]SkippedVM, error) {
	res, err := b.listing(ctx, false)
	if err != nil {
		return nil, wrap("list", "", 0, apiErrorf("list", err, "listing the cluster's VMs"))
	}
	cands := listCandidates(res)
	var skipped []SkippedVM
	marked := 0
	err = b.eachConfig(ctx, cands, func(r pveapi.Resource, cfg map[string]string, err error) bool {
		if err != nil {
			skipped = append(skipped, SkippedVM{ID: ID{VMID: r.VMID, Name: r.Name}, Node: r.Node, Err: err})
			tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox list candidate skipped", map[string]any{
				"vmid": r.VMID, "name": r.Name, "node": r.Node, "error": err.Error(),
			})
			return true
		}
		m := ParseMark(cfg["description"])
		if !m.Managed {
			return true
		}
		marked++
		return fn(Instance{
			ID: ID{VMID: r.VMID, Name: r.Name}, Node: r.Node,
			UID: m.UID, CreatedAt: m.CreatedAt, Status: r.Status,
			CreatedBy: ParseMarkExtra(cfg["description"]).CreatedBy,
			Config:    vmFromConfig(ID{VMID: r.VMID, Name: r.Name}, r.Node, cfg, m),
		})
	})
	if err != nil {
		return nil, wrap("list", "", 0, apiErrorf("list", err, "reading the candidates' configs"))
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vms listed", map[string]any{
		"listed": len(res), "candidates": len(cands), "marked": marked, "skipped": len(skipped),
		"concurrency": b.listConcurrency(),
	})
	return skipped, nil
}

// eachConfig reads the config of each entry and calls fn with it (or with the error that
// read ended with) in the entries' order, until fn returns false. A fixed pool of
// listConcurrency readers works at most listWindow entries ahead of fn, so memory and
// goroutines stay bounded whatever the number of entries. ctx ending stops it with ctx's
// error; every reader has returned by then.
func (b *Backend) eachConfig(ctx context.Context, entries []pveapi.Resource, fn func(r pveapi.Resource, cfg map[string]string, err error) bool) error {
	type slot struct {
		cfg  map[string]string
		err  error
		done chan struct{}
	}
	n := len(entries)
	if n == 0 {
		return ctx.Err()
	}
	window := min(listWindow, n)
	slots := make([]slot, window)
	jobs := make(chan int, window)
	var wg sync.WaitGroup
	for range min(b.listConcurrency(), n) {
		wg.Go(func() {
			for i := range jobs {
				s := &slots[i%window]
				if ctx.Err() == nil {
					r := entries[i]
					s.cfg, s.err = b.api.VMConfig(ctx, r.Node, r.VMID)
				} else {
					s.err = ctx.Err()
				}
				close(s.done)
			}
		})
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()
	next := 0 // the next entry handed to a reader
	for i := range n {
		for ; next < n && next-i < window; next++ {
			slots[next%window] = slot{done: make(chan struct{})}
			jobs <- next
		}
		s := &slots[i%window]
		select {
		case <-s.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cont := fn(entries[i], s.cfg, s.err)
		*s = slot{}
		if !cont {
			return nil
		}
	}
	return nil
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
