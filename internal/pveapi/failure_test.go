package pveapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestNew_endpointWithoutPortUses8006: an endpoint without a port goes to pveproxy's 8006,
// not to https's 443; an explicit port (443 included) is kept.
func TestNew_endpointWithoutPortUses8006(t *testing.T) {
	for ep, want := range map[string]string{
		"https://pve.example.com":           "https://pve.example.com:8006",
		"https://pve.example.com/":          "https://pve.example.com:8006",
		"https://pve.example.com/api2/json": "https://pve.example.com:8006",
		"https://192.168.0.8":               "https://192.168.0.8:8006",
		"https://[fd00::8]":                 "https://[fd00::8]:8006",
		"https://pve.example.com:443":       "https://pve.example.com:443",
		"https://pve.example.com:8006":      "https://pve.example.com:8006",
	} {
		c, err := New(Options{Endpoint: ep, Token: testToken})
		if err != nil {
			t.Fatalf("%s: %v", ep, err)
		}
		if got := c.Address(); got != want {
			t.Errorf("%s: address %s, want %s", ep, got, want)
		}
		if c.base != want+"/api2/json" {
			t.Errorf("%s: base %s", ep, c.base)
		}
	}
}

// TestClient_dialRetrySucceeds: a connection refused on the first attempts is sent again,
// and the request succeeds once the endpoint listens; the retries are logged, not returned.
func TestClient_dialRetrySucceeds(t *testing.T) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	saved := DialRetryDelays
	DialRetryDelays = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond}
	t.Cleanup(func() { DialRetryDelays = saved })

	var served atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		_, _ = w.Write([]byte(`{"data":{"version":"9.0.3","release":"9.0","repoid":"x"}}`))
	}))
	go func() {
		time.Sleep(120 * time.Millisecond) // after the first attempt, before the third
		ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
		if err != nil {
			return
		}
		srv.Listener = ln
		srv.StartTLS()
	}()
	t.Cleanup(func() { srv.Close() })
	c, err := New(Options{Endpoint: "https://" + addr, Token: testToken, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(context.Background())
	if err != nil {
		t.Fatalf("the endpoint came up during the retries, yet: %v", err)
	}
	if v.Version != "9.0.3" || served.Load() != 1 {
		t.Errorf("version %+v, served %d", v, served.Load())
	}
}

// TestClient_unreachableIsNotRetriedForTheWholeContext: the retries are bounded by
// DialRetryDelays, not by ctx: with a long deadline the call still returns after them.
func TestClient_unreachableIsNotRetriedForTheWholeContext(t *testing.T) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	shortRetries(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	c, err := New(Options{Endpoint: "https://" + addr, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ClusterResources(ctx)
	if !IsEndpointUnreachable(err) || ctx.Err() != nil {
		t.Fatalf("err %v (ctx %v), want ErrUnreachable before the deadline", err, ctx.Err())
	}
	if IsLocked(err) || strings.Contains(err.Error(), "lock") {
		t.Errorf("an unreachable endpoint reads like a lock: %v", err)
	}
	if !strings.Contains(err.Error(), "https://"+addr) || !strings.Contains(err.Error(), "GET /cluster/resources") {
		t.Errorf("the error does not name the address and the request: %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("reported as a deadline: %v", err)
	}
}

// TestClient_connectionLostIsNotRetried: a connection cut after the request was sent may
// have been acted on, so it is returned at once (Transient), not sent again.
func TestClient_connectionLostIsNotRetried(t *testing.T) {
	var hits atomic.Int64
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	c := newTestClient(t, ts)
	_, err := c.Start(context.Background(), tNode, 100)
	if !IsConnectionLost(err) || IsEndpointUnreachable(err) || hits.Load() != 1 {
		t.Errorf("err %v, %d requests: want one request and a lost connection", err, hits.Load())
	}
}
