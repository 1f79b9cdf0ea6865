// Package pvesim simulates the Proxmox VE 9 API for tests, the demo and benchmarks.
//
// NOTE(skeleton): the names below are the contract the provider's acceptance tests use;
// the simulator issue implements them and may add more.
package pvesim

import "testing"

// Options shape a simulated cluster.
type Options struct {
	// Nodes: default one node, "pve1".
	Nodes []string
	// Speed divides every simulated duration (default: very fast for tests).
	Speed float64
}

// Sim is a running simulator.
type Sim struct {
	Endpoint   string   // https://127.0.0.1:<port>
	APIToken   string   // "<user>@<realm>!<id>=<secret>"
	CAFile     string   // PEM of the generated CA
	CAPEM      string   // the same PEM
	Nodes      []string // node names
	ISOStorage string   // e.g. "proxy-seeds"
	// Templates maps catalogue-style keys to template VMIDs, e.g. "debian-13": 9001.
	Templates map[string]int
}

// Start starts a simulator on 127.0.0.1 with a random port.
func Start(opts Options) (*Sim, error) { panic("not implemented") }

// NewForTest starts a simulator and closes it with t.Cleanup.
func NewForTest(t testing.TB, opts Options) *Sim { panic("not implemented") }

// Close stops the simulator.
func (s *Sim) Close() {}
