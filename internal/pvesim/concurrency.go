package pvesim

import "sync"

// concurrencyGauge counts API requests being served (admin calls under /pvesim are not
// counted), and the most at once. Its zero value is ready.
type concurrencyGauge struct {
	mu       sync.Mutex
	inFlight int
	max      int
}

// enter counts one request in; the returned function counts it out.
func (g *concurrencyGauge) enter() func() {
	g.mu.Lock()
	g.inFlight++
	g.max = max(g.max, g.inFlight)
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}
}

// Concurrency is the simulator's request gauge.
type Concurrency struct {
	// InFlight is how many API requests are being served now (from the request line read
	// to the answer built, including injected latency and lock waits).
	InFlight int `json:"in_flight"`
	// Max is the most API requests served at once since the simulator started or since the
	// last ResetConcurrency.
	Max int `json:"max"`
}

// Concurrency returns the request gauge: API requests in flight now and the most at once.
// It counts what Stats counts (admin calls under /pvesim are left out).
func (s *Sim) Concurrency() Concurrency {
	s.conc.mu.Lock()
	defer s.conc.mu.Unlock()
	return Concurrency{InFlight: s.conc.inFlight, Max: s.conc.max}
}

// ResetConcurrency restarts the maximum from the requests in flight now.
func (s *Sim) ResetConcurrency() {
	s.conc.mu.Lock()
	defer s.conc.mu.Unlock()
	s.conc.max = s.conc.inFlight
}
