package pvesim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strconv"
	"time"
)

// Fault is an injected failure. The match fields select calls (all set ones must match);
// the effect fields say what happens to a matching call. Faults are checked in the order
// they were injected; the first one with a response effect answers the call, latencies add up.
type Fault struct {
	// ID is assigned by InjectFault.
	ID string `json:"id,omitempty"`

	// Method: "GET", "POST"... ("" any).
	Method string `json:"method,omitempty"`
	// Path: a route template exactly as in the stats keys ("/nodes/{node}/qemu/{vmid}/clone"),
	// or a path.Match glob over the request path after /api2/json ("/nodes/pve1/qemu/*/config");
	// "" any.
	Path string `json:"path,omitempty"`
	// Node and VMID restrict to calls on that node or VM (path variables).
	Node string `json:"node,omitempty"`
	VMID int    `json:"vmid,omitempty"`
	// Times: only the next N matching calls (0: every matching call until removed).
	Times int `json:"times,omitempty"`
	// Probability: each matching call is hit with this probability (0: always), drawn from
	// a generator seeded with Seed (0: from the simulator's seed).
	Probability float64 `json:"probability,omitempty"`
	Seed        uint64  `json:"seed,omitempty"`

	// Status answers with this HTTP status: 595, 596 and 401 with an empty body and
	// Message as reason phrase; 400 with Errors as field errors; any other with the
	// Proxmox error body {"data":null,"message":"<Message>\n"}.
	Status  int               `json:"status,omitempty"`
	Message string            `json:"message,omitempty"`
	Errors  map[string]string `json:"errors,omitempty"`
	// Drop closes the connection without an answer.
	Drop bool `json:"drop,omitempty"`
	// Latency is wall time added before the call is served (JSON: nanoseconds or "250ms").
	Latency time.Duration `json:"latency,omitempty"`
	// TaskExit makes the task the call starts fail with this exitstatus (a failed clone
	// removes its VM); TaskWarnings makes it end "WARNINGS: <n>"; TaskHang makes it never end.
	TaskExit     string `json:"task_exit,omitempty"`
	TaskWarnings int    `json:"task_warnings,omitempty"`
	TaskHang     bool   `json:"task_hang,omitempty"`
	// Lock sets this lock on the call's VM (or VMID) before the call is served, for
	// LockFor simulated time (0: until SetVMState clears it).
	Lock    string        `json:"lock,omitempty"`
	LockFor time.Duration `json:"lock_for,omitempty"`
	// NodeDown: Node stops answering while the fault is registered: its calls get 595,
	// its guests are listed with status unknown. Match and Times fields are ignored.
	NodeDown bool `json:"node_down,omitempty"`
}

// UnmarshalJSON accepts durations as nanoseconds or Go duration strings.
func (f *Fault) UnmarshalJSON(b []byte) error {
	type plain Fault
	var aux struct {
		plain
		Latency any `json:"latency,omitempty"`
		LockFor any `json:"lock_for,omitempty"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*f = Fault(aux.plain)
	var err error
	if f.Latency, err = anyDuration(aux.Latency); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	if f.LockFor, err = anyDuration(aux.LockFor); err != nil {
		return fmt.Errorf("lock_for: %w", err)
	}
	return nil
}

func anyDuration(v any) (time.Duration, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil
	case float64:
		return time.Duration(x), nil
	case string:
		return time.ParseDuration(x)
	}
	return 0, errors.New("want nanoseconds or a duration string")
}

type faultEntry struct {
	f    Fault
	left int // remaining calls when f.Times > 0
	rng  *rand.Rand
}

type faultResult struct {
	resp    *response
	latency time.Duration
	task    *Fault
	lock    string
	lockFor time.Duration
	lockVM  int
}

// InjectFault registers a fault and returns its id.
func (s *Sim) InjectFault(f Fault) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faultSeq++
	f.ID = "f" + strconv.Itoa(s.faultSeq)
	seed := f.Seed
	if seed == 0 {
		seed = s.rng.Uint64()
	}
	s.faults = append(s.faults, &faultEntry{f: f, left: f.Times, rng: rand.New(rand.NewPCG(seed, seed>>1|1))})
	return f.ID
}

// RemoveFault removes one fault; false when there was none with that id.
func (s *Sim) RemoveFault(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.faults {
		if e.f.ID == id {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			return true
		}
	}
	return false
}

// ClearFaults removes every fault (nodes marked down come back).
func (s *Sim) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Faults lists the registered faults; Times is the number of calls left.
func (s *Sim) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Fault, 0, len(s.faults))
	for _, e := range s.faults {
		f := e.f
		if f.Times > 0 {
			f.Times = e.left
		}
		out = append(out, f)
	}
	return out
}

// SetNodeDown makes a node stop answering (down) or come back. It is a NodeDown fault.
func (s *Sim) SetNodeDown(nodeName string, down bool) error {
	s.mu.Lock()
	_, ok := s.nodes[nodeName]
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("pvesim: no node %q", nodeName)
	}
	if down {
		s.InjectFault(Fault{Node: nodeName, NodeDown: true})
		s.mu.Lock()
		s.advance(time.Now())
		s.haNodeChange(nodeName, true, time.Now()) // the CRM's fence delay starts (ha_crm.go)
		s.mu.Unlock()
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	defer s.haNodeChange(nodeName, false, time.Now())
	kept := s.faults[:0]
	for _, e := range s.faults {
		if !e.f.NodeDown || e.f.Node != nodeName {
			kept = append(kept, e)
		}
	}
	s.faults = kept
	return nil
}

func (s *Sim) nodeDown(n string) bool {
	for _, e := range s.faults {
		if e.f.NodeDown && e.f.Node == n {
			return true
		}
	}
	return false
}

// matchFaults consumes the faults matching c. Called with mu held.
func (s *Sim) matchFaults(c *call) faultResult {
	var res faultResult
	kept := s.faults[:0]
	for _, e := range s.faults {
		f := &e.f
		hit := !f.NodeDown && faultMatches(f, c) && (f.Probability <= 0 || f.Probability >= 1 || e.rng.Float64() < f.Probability)
		if hit {
			res.latency += f.Latency
			if res.resp == nil {
				res.resp = faultResponse(f)
			}
			if res.task == nil && (f.TaskExit != "" || f.TaskHang || f.TaskWarnings > 0) {
				cp := *f
				res.task = &cp
			}
			if res.lock == "" && f.Lock != "" {
				res.lock, res.lockFor, res.lockVM = f.Lock, f.LockFor, f.VMID
			}
			if f.Times > 0 {
				e.left--
				if e.left <= 0 {
					continue
				}
			}
		}
		kept = append(kept, e)
	}
	clear(s.faults[len(kept):])
	s.faults = kept
	return res
}

func faultMatches(f *Fault, c *call) bool {
	if f.Method != "" && f.Method != c.method {
		return false
	}
	if f.Path != "" && f.Path != c.route.tmpl {
		if ok, err := path.Match(f.Path, c.rel); err != nil || !ok {
			return false
		}
	}
	if f.Node != "" && c.vars["node"] != f.Node {
		return false
	}
	if f.VMID != 0 && c.vars["vmid"] != strconv.Itoa(f.VMID) {
		return false
	}
	return true
}

func faultResponse(f *Fault) *response {
	switch {
	case f.Drop:
		return &response{drop: true}
	case f.Status == 0:
		return nil
	case f.Status == 595 || f.Status == 596 || f.Status == 401:
		reason := f.Message
		if reason == "" {
			reason = map[int]string{595: "Connection refused", 596: "Connection reset by peer", 401: "Authentication failed!"}[f.Status]
		}
		return &response{status: f.Status, reason: reason}
	case f.Status == 400 && len(f.Errors) > 0:
		return paramError(f.Errors)
	}
	msg := f.Message
	if msg == "" {
		msg = fmt.Sprintf("pvesim: injected fault %s", f.ID)
	}
	return apiError(f.Status, msg)
}

func (s *Sim) applyFaultLock(c *call, fr faultResult) {
	id := fr.lockVM
	if id == 0 {
		id = c.vmid
	}
	v := s.vms[id]
	if v == nil {
		return
	}
	v.lock = fr.lock
	v.lockUntil = time.Time{}
	if fr.lockFor > 0 {
		v.lockUntil = c.now.Add(s.real(fr.lockFor))
	}
}
