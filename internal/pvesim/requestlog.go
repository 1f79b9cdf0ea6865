package pvesim

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is one API request the simulator answered, as RequestLog records it.
type Request struct {
	Method string
	Path   string // below /api2/json, unescaped: "/nodes/pve1/qemu/1003/config"
	VMID   int    // the {vmid} of the path, 0 when none
	Status int    // the HTTP status answered (0: the connection was dropped)
	// Received is when the request was read; Answered when its answer was ready to be
	// written (the client may still miss it: a killed process never reads it).
	Received, Answered time.Time
}

// requestLog is the opt-in record of every API request (admin calls excluded).
type requestLog struct {
	mu      sync.Mutex
	on      bool
	entries []Request
}

// EnableRequestLog starts recording every API request (admin calls under /pvesim are not
// recorded), for tests that must tell when each request arrived relative to an event of
// their own (a kill). It is off by default: a long benchmark would grow it without bound.
func (s *Sim) EnableRequestLog() {
	s.reqlog.mu.Lock()
	defer s.reqlog.mu.Unlock()
	s.reqlog.on = true
}

// RequestLog returns the requests recorded since EnableRequestLog, oldest first.
func (s *Sim) RequestLog() []Request {
	s.reqlog.mu.Lock()
	defer s.reqlog.mu.Unlock()
	return append([]Request(nil), s.reqlog.entries...)
}

// ResetRequestLog forgets the requests recorded so far (the log stays on).
func (s *Sim) ResetRequestLog() {
	s.reqlog.mu.Lock()
	defer s.reqlog.mu.Unlock()
	s.reqlog.entries = nil
}

// logRequest records one answered request when the log is on.
func (s *Sim) logRequest(req *http.Request, received time.Time, resp *response) {
	s.reqlog.mu.Lock()
	defer s.reqlog.mu.Unlock()
	if !s.reqlog.on || strings.HasPrefix(req.URL.Path, "/pvesim") {
		return
	}
	rel := strings.TrimPrefix(req.URL.Path, "/api2/json")
	r := Request{Method: req.Method, Path: rel, Received: received, Answered: time.Now()}
	if resp != nil && !resp.drop {
		r.Status = resp.status
	}
	if segs := strings.Split(rel, "/"); len(segs) >= 5 && segs[1] == "nodes" && (segs[3] == "qemu" || segs[3] == "lxc") {
		r.VMID, _ = strconv.Atoi(segs[4])
	}
	s.reqlog.entries = append(s.reqlog.entries, r)
}
