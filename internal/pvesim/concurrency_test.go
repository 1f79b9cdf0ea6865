package pvesim

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

func TestConcurrency_countsRequestsServedAtOnce(t *testing.T) {
	s := NewForTest(t, Options{})
	// Every API call is held long enough for all of them to arrive, even on a loaded
	// machine: the loop below watches them in flight rather than timing them.
	s.InjectFault(Fault{Path: "/version", Latency: 3 * time.Second})
	c := rawClient(t, s)
	get := func(path string) {
		req, _ := http.NewRequest(http.MethodGet, s.Endpoint+path, nil)
		req.Header.Set("Authorization", "PVEAPIToken="+s.APIToken)
		resp, err := c.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	const n = 5
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() { defer wg.Done(); get("/api2/json/version") }()
	}
	seen := 0
	for deadline := time.Now().Add(3 * time.Second); seen < n && time.Now().Before(deadline); {
		seen = max(seen, s.Concurrency().InFlight)
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	got := s.Concurrency()
	if got.Max != n || got.InFlight != 0 || seen != n {
		t.Fatalf("Concurrency() = %+v, in flight seen %d; want max %d, none in flight after, %d seen", got, seen, n, n)
	}

	s.ResetConcurrency()
	get("/pvesim/stats") // admin calls are not API requests
	if got := s.Concurrency(); got.Max != 0 {
		t.Fatalf("after reset and an admin call: %+v, want max 0", got)
	}
	get("/api2/json/nodes")
	if got := s.Concurrency(); got.Max != 1 {
		t.Fatalf("after one API call: %+v, want max 1", got)
	}
}
