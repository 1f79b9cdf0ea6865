package pvesim

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// response is what the API pipeline answers. The reason phrase is free text: Proxmox puts
// the error message there (F1), which net/http's ResponseWriter cannot do, so the simulator
// runs its own small HTTP/1.1 connection loop.
type response struct {
	status int
	reason string
	body   []byte // nil: empty body
	// drop closes the connection without writing anything (fault injection).
	drop bool
	// retry: not an answer; the pipeline runs the handler again later.
	retry *retryResponse
}

const (
	idleTimeout    = 90 * time.Second
	requestTimeout = 5 * time.Minute
	// maxDrain is how much of an unread request body is discarded to keep the connection.
	maxDrain = 1 << 20
)

func (s *Sim) acceptLoop(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return
		}
		if !s.trackConn(c, true) {
			_ = c.Close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.trackConn(c, false)
			s.serveConn(c)
		}()
	}
}

func (s *Sim) trackConn(c net.Conn, add bool) bool {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if add {
		if s.closing {
			return false
		}
		s.conns[c] = struct{}{}
		return true
	}
	delete(s.conns, c)
	return true
}

func (s *Sim) serveConn(c net.Conn) {
	defer func() { _ = c.Close() }()
	if tc, ok := c.(*tls.Conn); ok {
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		hctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			return
		}
	}
	br := bufio.NewReader(c)
	bw := bufio.NewWriter(c)
	for {
		_ = c.SetDeadline(time.Now().Add(idleTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) && !isTimeout(err) && !errors.Is(err, net.ErrClosed) {
				writeResponse(bw, &response{status: 400, reason: "Bad Request"}, true, false)
				_ = bw.Flush()
			}
			return
		}
		_ = c.SetDeadline(time.Now().Add(requestTimeout))
		if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			_, _ = bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
			_ = bw.Flush()
		}
		resp := s.safeHandle(req)
		if resp.drop {
			return
		}
		closeAfter := req.Close || req.ProtoMajor != 1 || req.ProtoMinor == 0
		if n, _ := io.CopyN(io.Discard, req.Body, maxDrain+1); n > maxDrain {
			closeAfter = true
		}
		_ = req.Body.Close()
		writeResponse(bw, resp, closeAfter, req.Method == http.MethodHead)
		if err := bw.Flush(); err != nil || closeAfter {
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// safeHandle turns a panic into a 500 so that one bad request never takes the simulator
// down; the panic is printed because it is a simulator bug (the fuzz test calls handle
// directly so that it sees panics).
func (s *Sim) safeHandle(req *http.Request) (resp *response) {
	received := time.Now()
	defer func() { s.logRequest(req, received, resp) }()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "pvesim: panic serving %s %s: %v\n%s", req.Method, req.URL.Path, r, debug.Stack())
			resp = &response{status: 500, reason: "Internal Server Error"}
		}
	}()
	return s.handle(req)
}

func writeResponse(w *bufio.Writer, r *response, closeConn, head bool) {
	reason := sanitizeReason(r.reason)
	if reason == "" {
		reason = http.StatusText(r.status)
	}
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\n", r.status, reason)
	date := time.Now().UTC().Format(http.TimeFormat)
	w.WriteString("Cache-Control: max-age=0\r\n")
	if closeConn {
		w.WriteString("Connection: close\r\n")
	} else {
		w.WriteString("Connection: Keep-Alive\r\n")
	}
	w.WriteString("Date: " + date + "\r\n")
	w.WriteString("Pragma: no-cache\r\n")
	w.WriteString("Server: pve-api-daemon/3.0\r\n")
	w.WriteString("Content-Length: " + strconv.Itoa(len(r.body)) + "\r\n")
	if len(r.body) > 0 {
		w.WriteString("Content-Type: application/json;charset=UTF-8\r\n")
	}
	w.WriteString("Expires: " + date + "\r\n\r\n")
	if !head {
		w.Write(r.body)
	}
}

// sanitizeReason keeps a reason phrase on one line: the first line of the message, with
// control characters replaced.
func sanitizeReason(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
