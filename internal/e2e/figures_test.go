package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// figures collects the suite's numbers for the report table.
var figures = &figureSet{rows: map[string]*figureRow{}}

type figureSet struct {
	mu    sync.Mutex
	rows  map[string]*figureRow
	order []string
}

// figureRow is one category of scenarios.
type figureRow struct {
	Run       int // scenarios run
	Converged int // scenarios whose recovery converged with every invariant holding
	Orphans   int // VMs or seeds no state tracks and the next run did not remove
	Seeds     int // seed ISOs of the scenario that no VM uses, counted when it ends
	RefLost   int // seed ISOs a VM referenced (drive, pending value, snapshot, path) that a path deleted
	WrongWS   int // VMs adopted, changed or destroyed by a workspace that does not own them
	Leaks     int // places a sentinel secret was found
	DiagOK    int // failures whose diagnostic named the VM/step and said what to do
	DiagRun   int // failures whose diagnostic was checked
	Notes     map[string]int
}

func (f *figureSet) row(cat string) *figureRow {
	r := f.rows[cat]
	if r == nil {
		r = &figureRow{Notes: map[string]int{}}
		f.rows[cat] = r
		f.order = append(f.order, cat)
	}
	return r
}

// update changes a category's row under the lock.
func (f *figureSet) update(cat string, fn func(r *figureRow)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.row(cat))
}

// note counts an outcome worth reporting (e.g. "apply failed", "adopted").
func (f *figureSet) note(cat, what string) {
	f.update(cat, func(r *figureRow) { r.Notes[what]++ })
}

func (f *figureSet) table() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	b.WriteString("\n=== reliability figures ===\n")
	fmt.Fprintf(&b, "%-28s %5s %9s %7s %10s %8s %8s %6s %9s\n", "category", "run", "converged", "orphans", "seeds-left", "ref-lost", "wrong-ws", "leaks", "diag-ok")
	var tot figureRow
	cats := append([]string(nil), f.order...)
	sort.Strings(cats)
	for _, c := range cats {
		r := f.rows[c]
		fmt.Fprintf(&b, "%-28s %5d %9d %7d %10d %8d %8d %6d %5d/%-3d\n", c, r.Run, r.Converged, r.Orphans, r.Seeds, r.RefLost, r.WrongWS, r.Leaks, r.DiagOK, r.DiagRun)
		tot.Run += r.Run
		tot.Converged += r.Converged
		tot.Orphans += r.Orphans
		tot.Seeds += r.Seeds
		tot.RefLost += r.RefLost
		tot.WrongWS += r.WrongWS
		tot.Leaks += r.Leaks
		tot.DiagOK += r.DiagOK
		tot.DiagRun += r.DiagRun
	}
	fmt.Fprintf(&b, "%-28s %5d %9d %7d %10d %8d %8d %6d %5d/%-3d\n", "TOTAL", tot.Run, tot.Converged, tot.Orphans, tot.Seeds, tot.RefLost, tot.WrongWS, tot.Leaks, tot.DiagOK, tot.DiagRun)
	for _, c := range cats {
		r := f.rows[c]
		if len(r.Notes) == 0 {
			continue
		}
		keys := make([]string, 0, len(r.Notes))
		for k := range r.Notes {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%d", k, r.Notes[k])
		}
		fmt.Fprintf(&b, "  %s: %s\n", c, strings.Join(parts, ", "))
	}
	return b.String()
}
