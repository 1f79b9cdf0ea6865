package e2e

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The kill and the requests around it, from the simulator's request log.
//
// What the crash suite measured (docs/design/identity.md, "the windows"): a kill -9 of
// terraform closes the provider's gRPC connection, which cancels the create's context
// (the provider then dies of SIGPIPE at its next log line); requests already on their way
// still arrive, up to a few tens of milliseconds after the kill on a loaded machine. A
// create whose final mark write was answered a few milliseconds before the kill may not
// be in the state yet (terraform had not written it), and one whose final write was sent
// in that tail finishes after terraform died. Both leave a finished VM no state tracks.
// The suite's trigger (a request count) lands in that window often because the end of a
// create is a burst: the read-back and the final write of both VMs, about ten requests in
// five milliseconds, right after their last address poll.

// windowBound is how far a VM's final mark write may lie from the kill for the finished,
// untracked VM it leaves to count as that window: far above the milliseconds measured,
// so that only a real defect (a create that went on long after terraform died, or a
// finished create terraform never saved) fails the suite.
const windowBound = 500 * time.Millisecond

// tailBound is how long after a kill of terraform the provider may still send requests
// (in flight when its context was cancelled). Measured: under 40 ms.
const tailBound = 500 * time.Millisecond

// crashTimeline is what the request log says about a crash.
type crashTimeline struct {
	KilledAt time.Time
	// After counts, per VMID of the scenario, the requests received after the kill; Late
	// those received more than tailBound after it.
	After, Late map[int]int
	// Last is, per VMID, the last request received; FinalPut the last config write.
	Last, FinalPut map[int]pvesim.Request
}

// timeline reads the request log against the kill time (zero: no kill).
func (s *scenario) timeline(killedAt time.Time) crashTimeline {
	tl := crashTimeline{KilledAt: killedAt, After: map[int]int{}, Late: map[int]int{},
		Last: map[int]pvesim.Request{}, FinalPut: map[int]pvesim.Request{}}
	ours := map[int]bool{}
	for _, v := range s.sim.State().VMs {
		if s.chk.Owns(v.Name) {
			ours[v.VMID] = true
		}
	}
	for _, r := range s.sim.RequestLog() {
		if r.VMID == 0 || !ours[r.VMID] {
			continue
		}
		tl.Last[r.VMID] = r
		if r.Method == http.MethodPut && strings.HasSuffix(r.Path, "/config") && r.Status == http.StatusOK {
			tl.FinalPut[r.VMID] = r
		}
		if !killedAt.IsZero() && r.Received.After(killedAt) {
			tl.After[r.VMID]++
			if r.Received.Sub(killedAt) > tailBound {
				tl.Late[r.VMID]++
			}
		}
	}
	return tl
}

// finalPutToKill is how long before the kill the VM's final config write was answered
// (negative: after the kill); ok is false without a kill or a write.
func (tl crashTimeline) finalPutToKill(vmid int) (time.Duration, bool) {
	p, ok := tl.FinalPut[vmid]
	if !ok || tl.KilledAt.IsZero() {
		return 0, false
	}
	return tl.KilledAt.Sub(p.Answered), true
}

// windowBucket names the range of d for the figures.
func windowBucket(d time.Duration) string {
	switch {
	case d < 0:
		return "answered after the kill"
	case d < 10*time.Millisecond:
		return "0-10 ms before the kill"
	case d < 50*time.Millisecond:
		return "10-50 ms before the kill"
	default:
		return fmt.Sprintf("50-%d ms before the kill", windowBound.Milliseconds())
	}
}

func (tl crashTimeline) String() string {
	var b strings.Builder
	ids := make([]int, 0, len(tl.Last))
	for id := range tl.Last {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		l := tl.Last[id]
		rel := "no kill"
		if !tl.KilledAt.IsZero() {
			rel = fmt.Sprintf("answered %s after the kill", l.Answered.Sub(tl.KilledAt).Round(time.Microsecond))
		}
		fmt.Fprintf(&b, "VM %d: %d requests after the kill; the last %s %s (%d) %s\n", id, tl.After[id], l.Method, l.Path, l.Status, rel)
	}
	return b.String()
}
