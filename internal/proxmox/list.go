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
	skipped, _, err := b.scan(ctx, scanOptions{list: fn})
	return skipped, err
}

// Fleet is what proxy_vms shows: the marked VMs (List) and the half-made VMs of a
// uid_namespace (OrphanVMs), read in one pass.
type Fleet struct {
	VMs      []Instance
	Skipped  []SkippedVM // List candidates whose config could not be read
	HalfMade []OrphanVM
	// HalfMadeSkipped are VMs in the VMID range whose config could not be read.
	HalfMadeSkipped []SkippedVM
}

// ListFleet is ListWithSkipped and OrphanVMs(namespace) from one listing and one pass over
// the configs (a VM both lists read is read once), bounded as ListEach is.
func (b *Backend) ListFleet(ctx context.Context, namespace string) (Fleet, error) {
	var f Fleet
	var err error
	f.Skipped, f.HalfMadeSkipped, err = b.scan(ctx, scanOptions{
		list:     func(in Instance) bool { f.VMs = append(f.VMs, in); return true },
		halfMade: func(o OrphanVM) { f.HalfMade = append(f.HalfMade, o) }, namespace: namespace,
	})
	if err != nil {
		return Fleet{}, err
	}
	return f, nil
}

// scanOptions say what a scan looks for.
type scanOptions struct {
	// list, when set, gets each marked VM among the List candidates; false stops the scan.
	list func(Instance) bool
	// halfMade, when set, gets each half-made VM of namespace in the VMID range.
	halfMade  func(OrphanVM)
	namespace string
	// fresh asks for a fresh listing (a decision that deletes is taken on it).
	fresh bool
}

// scan reads the listing, then the configs of the VMs it looks at (List's candidates, and
// every QEMU VM in the VMID range for half-made VMs), each once, in VMID order
// (eachConfig). It returns the List candidates and the range VMs whose config could not be
// read; ctx ending fails it.
func (b *Backend) scan(ctx context.Context, o scanOptions) (listSkipped, rangeSkipped []SkippedVM, err error) {
	res, err := b.listing(ctx, o.fresh)
	if err != nil {
		return nil, nil, wrap("list", "", 0, apiErrorf("list", err, "listing the cluster's VMs"))
	}
	type want struct{ list, halfMade bool }
	wants := map[int]want{}
	var entries []pveapi.Resource
	if o.list != nil {
		for _, r := range listCandidates(res) {
			wants[r.VMID] = want{list: true}
			entries = append(entries, r)
		}
	}
	if o.halfMade != nil {
		for _, r := range res {
			if r.Type != "qemu" || r.Template != 0 || r.VMID < b.cfg.VMIDMin || r.VMID > b.cfg.VMIDMax {
				continue
			}
			w, seen := wants[r.VMID]
			w.halfMade = true
			wants[r.VMID] = w
			if !seen {
				entries = append(entries, r)
			}
		}
	}
	slices.SortFunc(entries, func(a, b pveapi.Resource) int { return a.VMID - b.VMID })
	marked, half := 0, 0
	err = b.eachConfig(ctx, entries, func(r pveapi.Resource, cfg map[string]string, err error) bool {
		w := wants[r.VMID]
		if err != nil {
			sk := SkippedVM{ID: ID{VMID: r.VMID, Name: r.Name}, Node: r.Node, Err: err}
			if w.list {
				listSkipped = append(listSkipped, sk)
			} else if w.halfMade && !isNotExist(err) {
				rangeSkipped = append(rangeSkipped, sk)
			}
			tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox list candidate skipped", map[string]any{
				"vmid": r.VMID, "name": r.Name, "node": r.Node, "error": err.Error(),
			})
			return true
		}
		if w.halfMade {
			if h, ok := b.halfMade(r, cfg, o.namespace); ok {
				half++
				o.halfMade(h)
			}
		}
		if !w.list {
			return true
		}
		m, ok := markedAny(cfg)
		if !ok {
			return true
		}
		marked++
		inst := Instance{
			ID: ID{VMID: r.VMID, Name: r.Name}, Node: r.Node,
			UID: m.UID, CreatedAt: m.CreatedAt, Status: r.Status,
			CreatedBy: ParseMarkExtra(cfg["description"]).CreatedBy,
			Config:    vmFromConfig(ID{VMID: r.VMID, Name: r.Name}, r.Node, cfg, m),
		}
		inst.Config.Pool = r.Pool
		return o.list(inst)
	})
	if err != nil {
		return nil, nil, wrap("list", "", 0, apiErrorf("list", err, "reading the listed VMs' configs"))
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vms listed", map[string]any{
		"listed": len(res), "read": len(entries), "marked": marked, "half_made": half,
		"skipped": len(listSkipped) + len(rangeSkipped), "concurrency": b.listConcurrency(),
	})
	return listSkipped, rangeSkipped, nil
}

// eachConfig reads the config of each entry and calls fn with it (or with the error that
// read ended with) in the entries' order, until fn returns false. A fixed pool of
// listConcurrency readers works at most listWindow entries ahead of fn, so memory and
// goroutines stay bounded whatever the number of entries. ctx ending stops it with ctx's
// error; every reader has returned by then.
func (b *Backend) eachConfig(ctx context.Context, entries []pveapi.Resource, fn func(r pveapi.Resource,
	cfg map[string]string, err error) bool) error {
	return eachRead(ctx, b, entries, b.api.VMConfig, fn)
}

// eachRead is eachConfig with the read of each entry given (GET .../config, GET
// .../pending).
func eachRead[T any](ctx context.Context, b *Backend, entries []pveapi.Resource, read func(ctx context.Context,
	node string, vmid int) (T, error), fn func(r pveapi.Resource, cfg T, err error) bool) error {
	type slot struct {
		cfg  T
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
					s.cfg, s.err = read(ctx, r.Node, r.VMID)
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
