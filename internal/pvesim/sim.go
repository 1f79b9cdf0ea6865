// Package pvesim simulates the Proxmox VE 9 API for tests, the demo and benchmarks.
//
// It serves HTTPS with a generated CA, HTTP/1.1 only, PVEAPIToken auth, the endpoints of
// the endpoints the product uses (plus suspend, resume, nextid and a few listings)
// with the field types and error texts of docs/design/facts.md, tasks in simulated time, a
// guest agent that reads the NoCloud seed on ide2, fault injection and inspection (Go API
// here, HTTP under /pvesim/ behind the same token).
//
// Time: every simulated duration (Durations) is divided by Options.Speed. State changes
// are applied lazily on each request, in simulated time order.
package pvesim

import (
	crand "crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultSpeed is the speed used when Options.Speed is zero: a full create (clone, upload,
// config, start, agent IP, about 50 simulated seconds) takes about 50 ms of wall time.
const DefaultSpeed = 1000

// Options shape a simulated cluster.
type Options struct {
	// Nodes: default one node, "pve1".
	Nodes []string
	// Speed divides every simulated duration (0: DefaultSpeed; the standalone server
	// defaults to 1, the real host's pace).
	Speed float64
	// Durations overrides the simulated durations field by field (zero keeps the default).
	Durations Durations
	// TemplateAgent makes template 9001 ship qemu-guest-agent, so its clones report an
	// address without a seed that installs it.
	TemplateAgent bool
	// Deny removes privileges, on that path and below, from every token (the simulator's
	// own and those a test creates through the API), whatever the ACLs grant, e.g.
	// {"/storage/proxy-seeds", "Datastore.Allocate"}.
	Deny []Privilege
	// Listen is the address to listen on (default 127.0.0.1:0, a random port).
	Listen string
	// Token is the full API token "<user>@<realm>!<id>=<secret>" (default: root@pam!tf=<random uuid>).
	Token string
	// Seed seeds MACs, PIDs and fault probabilities (0: random).
	Seed uint64
	// Hosts adds names or addresses to the server certificate (127.0.0.1, ::1 and
	// localhost are always there).
	Hosts []string
	// Listing shapes how /cluster/resources gets a guest's name, status, uptime and
	// template (listing.go). The zero value is the real behaviour: a status snapshot every
	// Durations.StatusInterval (10 s at speed 1).
	Listing Listing
}

// Listing shapes the /cluster/resources status snapshot model (listing.go).
//
// On PVE, membership, node, lock and tags are live, but name, status, uptime, template and
// the resource figures come from the status data pvestatd pushes every 10 s: a VM without
// data yet is listed without a name and status "unknown", a VM whose clone was sampled
// reads "VM <vmid>", stopped, and a name or status changes only at the next snapshot.
type Listing struct {
	// Live reads every field live from the state, as before the snapshot model: a new VM
	// is listed status unknown for Durations.FreshUnknown after its clone and nothing
	// else lags. For tests that are not about the lag.
	Live bool
	// SnapshotAtCloneStart takes a snapshot right after each clone has created its
	// config (the entry then reads "VM <vmid>", stopped, lock clone), and restarts the
	// snapshot period from there.
	SnapshotAtCloneStart bool
	// StaleAfterClone takes a snapshot right before each clone writes its config, and the
	// next one a full interval after the clone ended: the stale name and status of the
	// mid-clone sample stay for the whole interval. With SnapshotAtCloneStart this is the
	// worst case.
	StaleAfterClone bool
}

// Durations are simulated durations; the wall time is each divided by the speed.
type Durations struct {
	Clone        time.Duration // full clone of the 3 GiB template (fact: task-durations): 2 s
	Upload       time.Duration // imgcopy: 1 s
	Start        time.Duration // qmstart: 1 s
	Stop         time.Duration // qmstop: 1 s
	Resize       time.Duration // resize: 1 s
	Destroy      time.Duration // qmdestroy: 1 s
	VolumeDelete time.Duration // imgdel: 0.5 s
	Suspend      time.Duration // qmsuspend, qmresume, qmconfig: 1 s
	// AgentInstall: from the end of the start to the agent answering, on the boot where
	// cloud-init installs it from the seed ISO's vendor-data (about 42 s; with DHCP about 45 s,
	// the recon saw about 50 s, fact: task-durations).
	AgentInstall time.Duration
	// AgentBoot: from the end of the start to the agent answering when it is already
	// installed (template ships it, or installed on an earlier boot): 8 s.
	AgentBoot time.Duration
	// DHCP: from the agent answering to ens18 having an IPv4 (before: link-local only): 3 s.
	DHCP time.Duration
	// FreshUnknown: how long /cluster/resources still lists a just-cloned VM with
	// status unknown after its clone ended (fact: listing-lag): 5 s.
	FreshUnknown time.Duration
	// LockWait: how long a task or a config write waits for a VM's config lock before
	// "can't lock file ... got timeout": 10 s.
	LockWait time.Duration
	// StatusInterval: the period of the status snapshot /cluster/resources reads names
	// and states from (pve-manager PVE/Service/pvestatd.pm $updatetime): 10 s.
	StatusInterval time.Duration
	// Shutdown: a clean guest shutdown (qmshutdown) of a guest that has the agent or
	// answers ACPI: 4 s.
	Shutdown time.Duration
	// HARound: how long the HA managers take to act on a request, one CRM and LRM loop
	// (pve-ha-manager src/PVE/HA/CRM.pm:363, src/PVE/HA/LRM.pm:469): 10 s.
	HARound time.Duration
	// HAFenceDelay: how long a node is down before its HA services are put to fence
	// (src/PVE/HA/NodeStatus.pm:8): 60 s.
	HAFenceDelay time.Duration
	// HALockTimeout: from a node going down to its fencing, when its HA agent lock expires
	// (src/PVE/HA/Env/PVE2.pm:311): 120 s. Recovery starts then (ha_crm.go).
	HALockTimeout time.Duration
}

// DefaultDurations are the simulated durations at speed 1, close to the recon host's (fact: task-durations).
var DefaultDurations = Durations{
	Clone: 2 * time.Second, Upload: time.Second, Start: time.Second, Stop: time.Second,
	Resize: time.Second, Destroy: time.Second, VolumeDelete: 500 * time.Millisecond,
	Suspend: time.Second, AgentInstall: 42 * time.Second, AgentBoot: 8 * time.Second,
	DHCP: 3 * time.Second, FreshUnknown: 5 * time.Second, LockWait: 10 * time.Second,
	StatusInterval: 10 * time.Second, Shutdown: 4 * time.Second,
	HARound: 10 * time.Second, HAFenceDelay: 60 * time.Second, HALockTimeout: 120 * time.Second,
}

func (d Durations) withDefaults() Durations {
	def := DefaultDurations
	pick := func(v, dv time.Duration) time.Duration {
		if v != 0 {
			return v
		}
		return dv
	}
	return Durations{
		Clone: pick(d.Clone, def.Clone), Upload: pick(d.Upload, def.Upload), Start: pick(d.Start, def.Start),
		Stop: pick(d.Stop, def.Stop), Resize: pick(d.Resize, def.Resize), Destroy: pick(d.Destroy, def.Destroy),
		VolumeDelete: pick(d.VolumeDelete, def.VolumeDelete), Suspend: pick(d.Suspend, def.Suspend),
		AgentInstall: pick(d.AgentInstall, def.AgentInstall), AgentBoot: pick(d.AgentBoot, def.AgentBoot),
		DHCP: pick(d.DHCP, def.DHCP), FreshUnknown: pick(d.FreshUnknown, def.FreshUnknown),
		LockWait: pick(d.LockWait, def.LockWait), StatusInterval: pick(d.StatusInterval, def.StatusInterval),
		Shutdown: pick(d.Shutdown, def.Shutdown), HARound: pick(d.HARound, def.HARound),
		HAFenceDelay: pick(d.HAFenceDelay, def.HAFenceDelay), HALockTimeout: pick(d.HALockTimeout, def.HALockTimeout),
	}
}

// Privilege is a privilege on an ACL path, e.g. {"/storage/proxy-seeds", "Datastore.Allocate"}.
type Privilege struct {
	Path      string `json:"path"`
	Privilege string `json:"privilege"`
}

// Sim is a running simulator.
type Sim struct {
	Endpoint   string   // https://127.0.0.1:<port>
	APIToken   string   // "<user>@<realm>!<id>=<secret>"
	CAFile     string   // PEM of the generated CA
	CAPEM      string   // the same PEM
	Nodes      []string // node names
	ISOStorage string   // e.g. "proxy-seeds"
	// Templates maps catalogue-style keys to the template VMIDs a provider can make proxy
	// VMs of, e.g. "debian-13": 9001: what the start-up line advertises. Template
	// CloudInitTemplateVMID is in the cluster too but not here: its Proxmox cloud-init drive
	// on ide2 makes the provider refuse it (tests use it for that refusal).
	Templates map[string]int

	speed       float64
	dur         Durations
	start       time.Time
	tokenUser   string // root@pam
	tokenID     string // tf
	tokenSecret string
	tmpDir      string

	ln     net.Listener
	wg     sync.WaitGroup
	once   sync.Once
	connMu sync.Mutex
	conns  map[net.Conn]struct{}

	closing bool

	mu        sync.Mutex
	rng       *rand.Rand
	nodes     map[string]*node
	nodeOrder []string
	storages  map[string]*storage
	volumes   map[string]*volume // volKey(node, volid)
	vms       map[int]*vm
	tasks     map[string]*task
	taskList  []*task
	active    []*task
	pid       uint32
	faults    []*faultEntry
	faultSeq  int
	stats     map[string]int
	reqlog    requestLog       // opt-in request record (requestlog.go)
	conc      concurrencyGauge // requests in flight (concurrency.go)
	deny      map[Privilege]bool
	access    accessState // users, tokens, roles, ACLs and pools (access.go)
	seeds     map[int]SeedFiles
	leases    map[string]int // ip -> vmid
	listing   Listing
	status    statusData // the last status snapshot (listing.go)
	ha        haState    // HA resources, rules and the CRM's view (ha.go, ha_crm.go)
}

// Start starts a simulator on 127.0.0.1 with a random port (or Options.Listen).
func Start(opts Options) (*Sim, error) {
	s, err := newSim(opts)
	if err != nil {
		return nil, err
	}
	c, err := newCerts(opts.Hosts)
	if err != nil {
		return nil, err
	}
	s.CAPEM = string(c.caPEM)
	s.tmpDir, err = os.MkdirTemp("", "pvesim-")
	if err != nil {
		return nil, err
	}
	s.CAFile = filepath.Join(s.tmpDir, "pve-root-ca.pem")
	if err := os.WriteFile(s.CAFile, c.caPEM, 0o600); err != nil {
		_ = os.RemoveAll(s.tmpDir)
		return nil, err
	}
	listen := opts.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := tls.Listen("tcp", listen, c.tlsConfig())
	if err != nil {
		_ = os.RemoveAll(s.tmpDir)
		return nil, err
	}
	s.ln = ln
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	s.Endpoint = "https://" + net.JoinHostPort(host, port)
	s.wg.Add(1)
	go s.acceptLoop(ln)
	return s, nil
}

// newSim builds the state without a listener (the fuzz test drives handle directly).
func newSim(opts Options) (*Sim, error) {
	nodes := opts.Nodes
	if len(nodes) == 0 {
		nodes = []string{"pve1"}
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		if !nodeNameRe.MatchString(n) || seen[n] {
			return nil, fmt.Errorf("pvesim: invalid or duplicate node name %q", n)
		}
		seen[n] = true
	}
	speed := opts.Speed
	if speed == 0 {
		speed = DefaultSpeed
	}
	if speed < 0 {
		return nil, errors.New("pvesim: speed must be positive")
	}
	seed := opts.Seed
	if seed == 0 {
		var b [8]byte
		_, _ = crand.Read(b[:])
		for _, x := range b {
			seed = seed<<8 | uint64(x)
		}
	}
	s := &Sim{
		Nodes: append([]string(nil), nodes...), ISOStorage: "proxy-seeds",
		Templates: map[string]int{"debian-13": 9001},
		speed:     speed, dur: opts.Durations.withDefaults(), start: time.Now(),
		conns: map[net.Conn]struct{}{},
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		nodes: map[string]*node{}, nodeOrder: append([]string(nil), nodes...),
		volumes: map[string]*volume{}, vms: map[int]*vm{}, tasks: map[string]*task{},
		stats: map[string]int{}, deny: map[Privilege]bool{}, seeds: map[int]SeedFiles{},
		leases: map[string]int{}, listing: opts.Listing, ha: newHAState(),
	}
	for i, n := range nodes {
		s.nodes[n] = &node{name: n, bootTime: s.start.Add(-time.Duration(72+i) * time.Hour)}
	}
	s.pid = uint32(100000 + s.rng.IntN(100000))
	token := opts.Token
	if token == "" {
		token = "root@pam!tf=" + s.newUUID()
	}
	user, secret, ok := strings.Cut(token, "=")
	u, id, ok2 := strings.Cut(user, "!")
	if !ok || !ok2 || u == "" || id == "" || secret == "" {
		return nil, errors.New("pvesim: token must be <user>@<realm>!<id>=<secret>")
	}
	s.APIToken, s.tokenUser, s.tokenID, s.tokenSecret = token, u, id, secret
	if !userRe.MatchString(u) || !tokenSubRe.MatchString(id) {
		return nil, errors.New("pvesim: token must be <user>@<realm>!<id>=<secret>")
	}
	// The simulator's own token: without privilege separation, so it has its user's
	// privileges, every one for root@pam; another user gets Administrator on /.
	s.access = newAccessState()
	if s.access.users[u] == nil {
		s.access.users[u] = &simUser{enable: true, tokens: map[string]*simToken{}}
		s.access.acl["/"] = aclNode{u: {"Administrator": true}}
	}
	s.access.users[u].tokens[id] = &simToken{secret: secret}
	for _, p := range opts.Deny {
		s.deny[p] = true
	}
	s.addDefaults(opts.TemplateAgent)
	s.initStatus()
	return s, nil
}

// NewForTest starts a simulator and closes it with t.Cleanup.
func NewForTest(t testing.TB, opts Options) *Sim {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("pvesim: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// CloudInitTemplateVMID is the default cluster's template ubuntu-2404-template: a template
// made the way Proxmox's cloud-init guide makes one, with a Proxmox cloud-init drive on ide2
// (fact: template-shapes). The provider refuses it (decision: template-checks), so Templates
// does not advertise it.
const CloudInitTemplateVMID = 9000

// Close stops the simulator: the listener, every open connection, and the CA file.
func (s *Sim) Close() {
	s.once.Do(func() {
		s.connMu.Lock()
		s.closing = true
		for c := range s.conns {
			_ = c.Close()
		}
		s.connMu.Unlock()
		if s.ln != nil {
			_ = s.ln.Close()
		}
		s.wg.Wait()
		if s.tmpDir != "" {
			_ = os.RemoveAll(s.tmpDir)
		}
	})
}

// Speed is the speed factor in use.
func (s *Sim) Speed() float64 { return s.speed }

// Durations are the simulated durations in use.
func (s *Sim) Durations() Durations { return s.dur }

// WallTime converts a simulated duration to the wall time the simulator takes for it.
func (s *Sim) WallTime(d time.Duration) time.Duration { return s.real(d) }

// TokenID is the token's "<user>@<realm>!<id>" part.
func (s *Sim) TokenID() string { return s.tokenUser + "!" + s.tokenID }
