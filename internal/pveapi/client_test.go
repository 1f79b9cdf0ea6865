package pveapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// guard bounds a wait that should end at once; it is a hang detector, not a timing target.
const guard = 10 * time.Second

func TestNew_validatesOptions(t *testing.T) {
	good := Options{Endpoint: "https://192.168.0.8:8006", Token: testToken}
	for _, ep := range []string{"https://192.168.0.8:8006", "https://pv1-1.home.lab:8006/", "https://h:8006/api2/json", "https://h:8006/api2/json/"} {
		o := good
		o.Endpoint = ep
		c, err := New(o)
		if err != nil {
			t.Errorf("New(%q): %v", ep, err)
			continue
		}
		if !strings.HasSuffix(c.base, ":8006/api2/json") && !strings.HasSuffix(c.base, "h/api2/json") {
			t.Errorf("base %q", c.base)
		}
	}
	bad := map[string]func(*Options){
		"http":             func(o *Options) { o.Endpoint = "http://h:8006" },
		"no host":          func(o *Options) { o.Endpoint = "https://:8006" },
		"path":             func(o *Options) { o.Endpoint = "https://h:8006/x" },
		"query":            func(o *Options) { o.Endpoint = "https://h:8006/?a=b" },
		"userinfo":         func(o *Options) { o.Endpoint = "https://u:p@h:8006" },
		"empty":            func(o *Options) { o.Endpoint = "" },
		"no token":         func(o *Options) { o.Token = "" },
		"malformed token":  func(o *Options) { o.Token = "root@pam=abc" },
		"two CAs":          func(o *Options) { o.CAFile, o.CAPEM = "/x", "y" },
		"insecure with CA": func(o *Options) { o.Insecure, o.CAFile = true, "/x" },
		"bad CA PEM":       func(o *Options) { o.CAPEM = "not a certificate" },
		"negative timeout": func(o *Options) { o.RequestTimeout = -time.Second },
		"negative flight":  func(o *Options) { o.MaxInFlight = -1 },
	}
	for name, mod := range bad {
		o := good
		mod(&o)
		_, err := New(o)
		if err == nil || Classify("check", err) != Permanent {
			t.Errorf("%s: New err %v, want Permanent", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "0c1d2e3f") {
			t.Errorf("%s: error carries the secret: %v", name, err)
		}
	}
	c, err := New(good)
	if err != nil || c.timeout != DefaultRequestTimeout || cap(c.sem) != DefaultMaxInFlight {
		t.Errorf("defaults: %v %v", c, err)
	}
}

// TestNew_neverDialsNorReadsFiles: New with a missing token file and CA file succeeds and
// sends nothing; the first request reports the missing token as Permanent credentials (a
// one-shot run cannot wait for the file to appear).
func TestNew_neverDialsNorReadsFiles(t *testing.T) {
	ts := newTestServer(t, fixtureReply(t, "version"))
	dir := t.TempDir()
	c, err := New(Options{Endpoint: ts.URL, TokenFile: filepath.Join(dir, "token"), CAFile: filepath.Join(dir, "ca.pem")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ts.requests()) != 0 || c.hc != nil {
		t.Fatal("New built a client or sent a request")
	}
	_, err = c.Version(context.Background())
	if !IsCredentials(err) || !errors.Is(err, fs.ErrNotExist) || Classify("check", err) != Permanent {
		t.Errorf("err %v, want Permanent credentials with fs.ErrNotExist", err)
	}
	if len(ts.requests()) != 0 {
		t.Error("a request was sent without a token")
	}
}

// TestClient_tokenFile covers a missing file, a malformed one (Permanent, content never in
// the error), and a rotation between two calls (re-read per request, whitespace trimmed).
func TestClient_tokenFile(t *testing.T) {
	ts := newTestServer(t, fixtureReply(t, "version"))
	path := filepath.Join(t.TempDir(), "token")
	c := newTestClient(t, ts, func(o *Options) { o.Token, o.TokenFile = "", path })
	ctx := context.Background()

	if _, err := c.TokenID(); !IsCredentials(err) || Classify("check", err) != Permanent {
		t.Errorf("missing: %v", err)
	}
	malformed := "proxy-operator@pve!tf SENTINEL-MALFORMED-SECRET"
	if err := os.WriteFile(path, []byte(malformed), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := c.Version(ctx)
	if !IsCredentials(err) || errors.Is(err, fs.ErrNotExist) || Classify("check", err) != Permanent {
		t.Errorf("malformed: %v", err)
	}
	if strings.Contains(err.Error(), "SENTINEL-MALFORMED") {
		t.Errorf("error carries the file content: %v", err)
	}
	if len(ts.requests()) != 0 {
		t.Fatal("a request was sent with a malformed token")
	}

	first, second := "proxy-operator@pve!tf=first-secret-1111", "proxy-operator@pve!tf2=second-secret-2222"
	for _, tok := range []string{first, second} {
		if err := os.WriteFile(path, []byte("  "+tok+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Version(ctx); err != nil {
			t.Fatal(err)
		}
		id, err := c.TokenID()
		if err != nil || !strings.HasPrefix(tok, id+"=") || strings.Contains(id, "secret") {
			t.Errorf("TokenID = %q, %v", id, err)
		}
	}
	reqs := ts.requests()
	if len(reqs) != 2 || reqs[0].Header.Get("Authorization") != "PVEAPIToken="+first ||
		reqs[1].Header.Get("Authorization") != "PVEAPIToken="+second {
		t.Errorf("rotation not picked up: %v", reqs)
	}
}

// TestClient_tlsVerificationIsPermanent: another CA, a hostname mismatch and an expired
// certificate are TLS verification failures (Permanent), never dial failures; insecure
// accepts them.
func TestClient_tlsVerificationIsPermanent(t *testing.T) {
	caA, caB := newTestCA(t, "ca-a"), newTestCA(t, "ca-b")
	day := time.Now().Add(24 * time.Hour)
	cases := map[string]*httptest.Server{
		"another CA":        newCertServer(t, caB.leaf(t, day, "127.0.0.1")),
		"hostname mismatch": newCertServer(t, caA.leaf(t, day, "pv1-1.home.lab")),
		"expired":           newCertServer(t, caA.leaf(t, time.Now().Add(-time.Hour), "127.0.0.1")),
	}
	for name, srv := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := New(Options{Endpoint: srv.URL, Token: testToken, CAPEM: caA.pem})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Version(context.Background())
			if !IsTLSVerification(err) || Classify("get", err) != Permanent || IsDialFailure(err) || IsUnreachable(err) {
				t.Errorf("err %v (%T): TLS %v class %v dial %v", err, errors.Unwrap(err), IsTLSVerification(err), Classify("get", err), IsDialFailure(err))
			}
			c, _ = New(Options{Endpoint: srv.URL, Token: testToken, Insecure: true})
			if _, err := c.Version(context.Background()); err != nil {
				t.Errorf("insecure: %v", err)
			}
		})
	}
	good := newCertServer(t, caA.leaf(t, day, "127.0.0.1"))
	c, _ := New(Options{Endpoint: good.URL, Token: testToken, CAPEM: caA.pem})
	if _, err := c.Version(context.Background()); err != nil {
		t.Errorf("a certificate of the configured CA: %v", err)
	}
}

// TestClient_caFileLoadedLazily: a missing CA file is Permanent (and not cached: once it
// lands it is loaded once and cached); a file without a certificate is Permanent.
func TestClient_caFileLoadedLazily(t *testing.T) {
	ts := newTestServer(t, fixtureReply(t, "version"))
	dir := t.TempDir()
	path := filepath.Join(dir, "ca.pem")
	c := newTestClient(t, ts, func(o *Options) { o.CAPEM, o.CAFile = "", path })
	ctx := context.Background()
	_, err := c.Version(ctx)
	if !IsCAUnavailable(err) || !errors.Is(err, fs.ErrNotExist) || Classify("check", err) != Permanent {
		t.Fatalf("missing CA: %v", err)
	}
	if err := os.WriteFile(path, []byte(ts.caPEM()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(ctx); err != nil {
		t.Fatalf("after the CA landed: %v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Version(ctx); err != nil {
		t.Fatalf("the CA is not cached: %v", err)
	}

	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("-----BEGIN NOTHING-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c2 := newTestClient(t, ts, func(o *Options) { o.CAPEM, o.CAFile = "", junk })
	if _, err := c2.Version(ctx); !IsCAUnavailable(err) || Classify("check", err) != Permanent {
		t.Errorf("junk CA: %v", err)
	}
}

// TestClient_http1Only: the client speaks HTTP/1.1 to a server offering h2.
func TestClient_http1Only(t *testing.T) {
	var proto atomic.Value
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		proto.Store(r.Proto)
		writeFixture(t, w, fixture.MustLoad("version"))
	}, func(s *httptest.Server) { s.EnableHTTP2 = true })
	c := newTestClient(t, ts)
	if _, err := c.Version(context.Background()); err != nil {
		t.Fatal(err)
	}
	if proto.Load() != "HTTP/1.1" {
		t.Errorf("client spoke %v", proto.Load())
	}
	tr := c.hc.Transport.(*http.Transport)
	if tr.ForceAttemptHTTP2 || tr.TLSNextProto == nil || len(tr.TLSNextProto) != 0 {
		t.Error("HTTP/2 guards missing")
	}
	if tr.MaxIdleConnsPerHost < cap(c.sem) || tr.IdleConnTimeout != IdleConnTimeout || c.hc.Timeout != 10*time.Second {
		t.Errorf("pool settings %d %v %v", tr.MaxIdleConnsPerHost, tr.IdleConnTimeout, c.hc.Timeout)
	}
}

// TestClient_keepAliveReusesConnection: sequential calls share one connection.
func TestClient_keepAliveReusesConnection(t *testing.T) {
	var conns atomic.Int32
	ts := newTestServer(t, fixtureReply(t, "version"), func(s *httptest.Server) {
		s.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		}
	})
	c := newTestClient(t, ts)
	for range 3 {
		if _, err := c.Version(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 sequential calls", n)
	}
}

// TestClient_droppedConnectionIsTransient: a server that closes the connection without an
// answer gives a lost connection, Transient.
func TestClient_droppedConnectionIsTransient(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	c := newTestClient(t, ts)
	_, err := c.Version(context.Background())
	if err == nil || !IsConnectionLost(err) || !IsUnreachable(err) || IsDialFailure(err) || Classify("get", err) != Transient {
		t.Errorf("err %v: lost %v dial %v", err, IsConnectionLost(err), IsDialFailure(err))
	}
}

// TestClient_dialFailures: a refused connect and a TLS handshake cut by the peer are dial
// failures, retried by the client after each of DialRetryDelays and then Permanent
// (IsEndpointUnreachable), the error naming the address with the port.
func TestClient_dialFailures(t *testing.T) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := l.Addr().String()
	_ = l.Close()

	cut, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cut.Close() })
	go func() {
		for {
			conn, err := cut.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	shortRetries(t)
	for name, addr := range map[string]string{"refused": closedAddr, "handshake cut": cut.Addr().String()} {
		c, err := New(Options{Endpoint: "https://" + addr, Token: testToken})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Version(context.Background())
		if !IsDialFailure(err) || !IsUnreachable(err) || !IsEndpointUnreachable(err) || IsTLSVerification(err) || Classify("get", err) != Permanent {
			t.Errorf("%s: err %v, dial %v", name, err, IsDialFailure(err))
		}
		var ue *UnreachableError
		if !errors.As(err, &ue) || ue.Attempts != len(DialRetryDelays)+1 || !strings.Contains(err.Error(), "https://"+addr) {
			t.Errorf("%s: err %v, want %d attempts naming https://%s", name, err, len(DialRetryDelays)+1, addr)
		}
		if strings.Contains(err.Error(), "0c1d2e3f") {
			t.Errorf("%s: error carries the secret", name)
		}
	}
}

// TestClient_contextCancelReturnsPromptly: canceling ctx ends a request the server never
// answers, and a wait for a request slot.
func TestClient_contextCancelReturnsPromptly(t *testing.T) {
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	c := newTestClient(t, ts, func(o *Options) { o.MaxInFlight = 1; o.RequestTimeout = time.Minute })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Version(ctx); done <- err }()
	<-arrived

	// The slot is taken: a second call waits for it and gives up with its own ctx.
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { _, err := c.Version(ctx2); done2 <- err }()
	cancel2()
	select {
	case err := <-done2:
		if !errors.Is(err, context.Canceled) || Classify("get", err) != Transient {
			t.Errorf("slot wait: %v", err)
		}
	case <-time.After(guard):
		t.Fatal("slot wait ignored its ctx")
	}

	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || Classify("get", err) != Transient {
			t.Errorf("err %v, want context.Canceled", err)
		}
	case <-time.After(guard):
		t.Fatal("cancel did not end the request")
	}
	if n := len(ts.requests()); n != 1 {
		t.Errorf("%d requests reached the server, want 1", n)
	}
}

// TestClient_requestTimeoutBoundsOneRequest: RequestTimeout ends a request the server never
// answers, Transient.
func TestClient_requestTimeoutBoundsOneRequest(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	c := newTestClient(t, ts, func(o *Options) { o.RequestTimeout = 50 * time.Millisecond })
	_, err := c.Version(context.Background())
	var ne net.Error
	if err == nil || !errors.As(err, &ne) || !ne.Timeout() || Classify("get", err) != Transient {
		t.Errorf("err %v", err)
	}
}

// TestClient_maxInFlightBoundsConcurrency: with MaxInFlight 3, ten concurrent calls never
// have more than 3 requests at the server, and do reach 3.
func TestClient_maxInFlightBoundsConcurrency(t *testing.T) {
	const limit, calls = 3, 10
	var cur, peak atomic.Int32
	release := make(chan struct{})
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		cur.Add(-1)
		writeFixture(t, w, fixture.MustLoad("version"))
	})
	c := newTestClient(t, ts, func(o *Options) { o.MaxInFlight = limit })
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	for range calls {
		wg.Go(func() {
			_, err := c.Version(context.Background())
			errs <- err
		})
	}
	deadline := time.Now().Add(guard)
	for cur.Load() < limit && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// Give an unbounded client the chance to overshoot before releasing.
	time.Sleep(100 * time.Millisecond)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if p := peak.Load(); p != limit {
		t.Errorf("peak concurrency %d, want %d", p, limit)
	}
	if n := len(ts.requests()); n != calls {
		t.Errorf("%d requests, want %d", n, calls)
	}
}

// stallingReader yields its first 256 KiB, then blocks until the server has seen file
// bytes. A client that buffered the body before sending would never get past it.
type stallingReader struct {
	size, sent int64
	seen       <-chan struct{}
	stalled    bool
}

const stallAfter = 256 << 10

func (s *stallingReader) Read(p []byte) (int, error) {
	if s.sent >= s.size {
		return 0, io.EOF
	}
	if s.sent >= stallAfter && !s.stalled {
		select {
		case <-s.seen:
			s.stalled = true
		case <-time.After(guard):
			return 0, errors.New("stalled: the server never saw file bytes before the whole body was read")
		}
	}
	n := int64(len(p))
	if rest := s.size - s.sent; n > rest {
		n = rest
	}
	if !s.stalled && s.sent+n > stallAfter {
		n = stallAfter - s.sent
	}
	for i := range p[:n] {
		p[i] = byte('a' + (s.sent+int64(i))%26)
	}
	s.sent += n
	return int(n), nil
}

// TestClient_uploadStreams proves the upload is streamed: the server sees file bytes while
// the reader still holds most of the file back.
func TestClient_uploadStreams(t *testing.T) {
	const size = 1 << 20
	seen := make(chan struct{})
	var got int64
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			t.Error(err)
			return
		}
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			if p.FormName() != "filename" {
				continue
			}
			buf := make([]byte, 32<<10)
			for {
				n, err := p.Read(buf)
				if n > 0 && got == 0 {
					close(seen)
				}
				got += int64(n)
				if err != nil {
					break
				}
			}
		}
		writeFixture(t, w, fixture.MustLoad("upload_response"))
	})
	c := newTestClient(t, ts)
	r := &stallingReader{size: size, seen: seen}
	if _, err := c.UploadISO(context.Background(), tNode, tStorage, "s-seed.iso", r, size); err != nil {
		t.Fatal(err)
	}
	if got != size || !r.stalled {
		t.Errorf("server got %d file bytes, stalled %v", got, r.stalled)
	}
}

// TestClient_sentinelSecretNeverLeaks: a server that echoes the token in a 401's reason,
// body and headers, and in a 400's field errors, never gets the secret into an error
// string or the TRACE log.
func TestClient_sentinelSecretNeverLeaks(t *testing.T) {
	secret := fmt.Sprintf("SENTINEL-SECRET-%d", time.Now().UnixNano())
	token := "proxy-operator@pve!tf=" + secret
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		var status, body string
		if r.URL.Path == "/api2/json/version" {
			status = "401 Authentication failed! " + auth
			body = fmt.Sprintf(`{"data":null,"message":"bad token %s\n"}`, auth)
		} else {
			status = "400 Parameter verification failed."
			body = fmt.Sprintf(`{"data":null,"errors":{"token":"%s","x":"secret %s"},"message":"Parameter verification failed. %s\n"}`, auth, secret, token)
		}
		_, _ = fmt.Fprintf(buf, "HTTP/1.1 %s\r\nX-Echo: %s\r\nWWW-Authenticate: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			status, auth, token, len(body), body)
		_ = buf.Flush()
	})
	c := newTestClient(t, ts, func(o *Options) { o.Token = token })
	ctx, logs := logCapture()
	_, err1 := c.Version(ctx)
	err2 := c.SetVMConfig(ctx, tNode, tVMID, map[string]string{"description": "x"})
	id, err3 := c.TokenID()
	if err3 != nil || strings.Contains(id, secret) {
		t.Errorf("TokenID = %q, %v", id, err3)
	}
	if !IsUnauthorized(err1) || Classify("get", err1) != Permanent {
		t.Errorf("401: %v", err1)
	}
	var ae *APIError
	if !errors.As(err2, &ae) || ae.Status != http.StatusBadRequest {
		t.Fatalf("400: %v", err2)
	}
	texts := []string{err1.Error(), err2.Error(), fmt.Sprintf("%+v %#v", err1, err2), fmt.Sprint(ae.Errors), logs.String()}
	for i, s := range texts {
		if strings.Contains(s, secret) {
			t.Errorf("text %d carries the secret: %s", i, s)
		}
	}
	if !strings.Contains(logs.String(), "proxmox api call failed") || strings.Count(logs.String(), "http_status") < 2 {
		t.Errorf("failure lines missing:\n%s", logs.String())
	}
}

// TestClient_595And596: pveproxy's forwarding failures are Unreachable and Transient, with
// the reason phrase as message.
func TestClient_595And596(t *testing.T) {
	for _, name := range []string{"err_595", "err_596"} {
		f := fixture.MustLoad(name)
		ts := newTestServer(t, fixtureReply(t, name))
		c := newTestClient(t, ts)
		_, err := c.NodeStatus(context.Background(), tNode)
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != f.Status || ae.Message != f.Reason || !IsUnreachable(err) || Classify("check", err) != Transient {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestClient_noRedirectFollowed: a redirect is an error, so the token never travels to
// another URL.
func TestClient_noRedirectFollowed(t *testing.T) {
	var other atomic.Int32
	target := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { other.Add(1) }))
	t.Cleanup(target.Close)
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/api2/json/version", http.StatusFound)
	})
	c := newTestClient(t, ts)
	if _, err := c.Version(context.Background()); err == nil {
		t.Error("a redirect was accepted")
	}
	if other.Load() != 0 {
		t.Error("the redirect was followed")
	}
}

// TestClient_notProxmoxIsPermanent: a 2xx that is not Proxmox's {"data": ...} JSON (a web
// server's page, a JSON API of something else, JSON under another content type, an empty
// body) is Permanent, names the request and the content type, points at the endpoint, and
// never carries the token; a body cut short stays Transient.
func TestClient_notProxmoxIsPermanent(t *testing.T) {
	secret := fmt.Sprintf("SENTINEL-SECRET-%d", time.Now().UnixNano())
	token := "proxy-operator@pve!tf=" + secret
	for _, tc := range []struct {
		name, contentType, body, got string
	}{
		{"html page", "text/html", "<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>", "got text/html)"},
		{"json without data", "application/json", `{"status":"ok","token":"x"}`, `got application/json without a "data" member)`},
		{"json array", "application/json", `[{"data":1}]`, "got application/json)"},
		{"json as text", "text/plain; charset=utf-8", `{"data":{"version":"9.2.20"}}`, "got text/plain)"},
		{"no content type", "", `{"data":{"version":"9.2.20"}}`, "got no content type)"},
		{"empty body", "application/json", "", "got application/json)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil // no sniffing
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				w.Header().Set("X-Echo", r.Header.Get("Authorization"))
				_, _ = io.WriteString(w, tc.body)
			})
			c := newTestClient(t, ts, func(o *Options) { o.Token = token })
			ctx, logs := logCapture()
			_, err := c.Version(ctx)
			if err == nil {
				t.Fatal("the answer was accepted")
			}
			if Classify("create", err) != Permanent || !errors.Is(err, ErrNotProxmox) {
				t.Errorf("class %v, errors.Is(ErrNotProxmox) %t: %v", Classify("create", err), errors.Is(err, ErrNotProxmox), err)
			}
			msg := err.Error()
			for _, want := range []string{"the endpoint does not answer like a Proxmox VE API (GET /version: " + tc.got, "check the provider's endpoint"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "invalid character") || strings.Contains(msg+logs.String(), secret) {
				t.Errorf("decoder detail or the secret in %q / logs", msg)
			}
		})
	}
	t.Run("body cut short stays transient", func(t *testing.T) {
		ts := newTestServer(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json;charset=UTF-8")
			w.Header().Set("Content-Length", "1000")
			_, _ = io.WriteString(w, `{"data":{"vers`)
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
		})
		_, err := newTestClient(t, ts).Version(context.Background())
		if err == nil || Classify("create", err) != Transient || errors.Is(err, ErrNotProxmox) {
			t.Errorf("a cut body: %v (class %v)", err, Classify("create", err))
		}
	})
}

// shortRetries shrinks DialRetryDelays for one test.
func shortRetries(t *testing.T) {
	t.Helper()
	saved := DialRetryDelays
	DialRetryDelays = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	t.Cleanup(func() { DialRetryDelays = saved })
}
