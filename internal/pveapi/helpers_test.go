package pveapi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflogtest"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// testToken is the token every test client sends unless a test says otherwise.
const testToken = "proxy-operator@pve!tf=0c1d2e3f-4a5b-6c7d-8e9f-a0b1c2d3e4f5"

// recorded is what the test server saw of one request.
type recorded struct {
	Method        string
	EscapedPath   string // as sent on the wire, before the query
	Path          string // decoded
	Query         url.Values
	Form          url.Values // urlencoded PUT/POST body
	Header        http.Header
	ContentLength int64
	Body          []byte
	ProtoMajor    int
}

// testServer is an httptest TLS server that records requests and answers with reply.
type testServer struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []recorded
	reply func(w http.ResponseWriter, r *http.Request)
}

func newTestServer(t *testing.T, reply func(w http.ResponseWriter, r *http.Request), setup ...func(*httptest.Server)) *testServer {
	t.Helper()
	ts := &testServer{reply: reply}
	ts.Server = httptest.NewUnstartedServer(http.HandlerFunc(ts.handle))
	for _, f := range setup {
		f(ts.Server)
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts
}

func (ts *testServer) handle(w http.ResponseWriter, r *http.Request) {
	rec := recorded{
		Method:        r.Method,
		EscapedPath:   strings.SplitN(r.RequestURI, "?", 2)[0],
		Path:          r.URL.Path,
		Query:         r.URL.Query(),
		Header:        r.Header.Clone(),
		ContentLength: r.ContentLength,
		ProtoMajor:    r.ProtoMajor,
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "multipart/form-data" {
		rec.Body, _ = io.ReadAll(r.Body)
		if ct == "application/x-www-form-urlencoded" {
			rec.Form, _ = url.ParseQuery(string(rec.Body))
		}
	}
	ts.mu.Lock()
	ts.reqs = append(ts.reqs, rec)
	ts.mu.Unlock()
	ts.reply(w, r)
}

func (ts *testServer) requests() []recorded {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]recorded(nil), ts.reqs...)
}

func (ts *testServer) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}))
}

// newTestClient returns a client of ts trusting its certificate, with opts applied on top.
func newTestClient(t *testing.T, ts *testServer, mod ...func(*Options)) *Client {
	t.Helper()
	o := Options{Endpoint: ts.URL, Token: testToken, CAPEM: ts.caPEM(), RequestTimeout: 10 * time.Second}
	for _, m := range mod {
		m(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// fixtureReply answers every request with the named fixture.
func fixtureReply(t *testing.T, name string) func(http.ResponseWriter, *http.Request) {
	f := fixture.MustLoad(name)
	return func(w http.ResponseWriter, r *http.Request) { writeFixture(t, w, f) }
}

// writeFixture replays a fixture. net/http cannot send a custom reason phrase, so non-200
// answers are written raw on the hijacked connection, byte for byte as pveproxy would.
func writeFixture(t *testing.T, w http.ResponseWriter, f fixture.Fixture) {
	body := f.BodyBytes()
	if f.Status == http.StatusOK {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
		return
	}
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	defer func() { _ = conn.Close() }()
	_, _ = fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Type: application/json;charset=UTF-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
		f.Status, f.Reason, len(body))
	_, _ = buf.Write(body)
	_ = buf.Flush()
}

// logCapture returns a ctx with a TRACE root logger writing JSON lines into the buffer.
func logCapture() (context.Context, *syncBuffer) {
	buf := &syncBuffer{}
	return tflogtest.RootLogger(context.Background(), buf), buf
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	entries, err := tflogtest.MultilineJSONDecode(strings.NewReader(b.String()))
	if err != nil {
		t.Fatalf("decoding log output: %v", err)
	}
	return entries
}

// testCA is a throwaway certificate authority for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  string
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}
}

// leaf issues a server certificate for the given names (IP literals become IP SANs).
func (ca *testCA) leaf(t *testing.T, notAfter time.Time, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-2 * time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// newCertServer starts a TLS server presenting cert and answering the version fixture.
func newCertServer(t *testing.T, cert tls.Certificate) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(fixtureHandler(t, "version"))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func fixtureHandler(t *testing.T, name string) http.Handler {
	return http.HandlerFunc(fixtureReply(t, name))
}
