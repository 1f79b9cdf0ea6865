package proxmox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// checkFake is the small seam fake of the read-only paths (Check, List, OrphanSeeds). Every
// method it serves counts its call and answers a ctx that has ended with ctx.Err(), as the
// real client does; any other seam method panics through the nil embedded API.
type checkFake struct {
	pveapi.API

	mu    sync.Mutex
	calls map[string]int // "Version", "NodeStatus pve1", ...

	version       func(ctx context.Context) (pveapi.VersionInfo, error)
	nodeStatus    func(ctx context.Context, node string) (pveapi.NodeStatus, error)
	storageStatus func(ctx context.Context, node, storage string) (pveapi.StorageStatus, error)
	resources     func(ctx context.Context) ([]pveapi.Resource, error)
	content       func(ctx context.Context, node, storage, content string) ([]pveapi.StorageVolume, error)
	config        func(ctx context.Context, node string, vmid int) (map[string]string, error)
	// perms answers GET /access/permissions?path=: default, every privilege (a root token).
	perms func(ctx context.Context, path string) (map[string]bool, error)
}

// newCheckFake answers every read with the captured or reconstructed fixtures.
func newCheckFake(t *testing.T) *checkFake {
	t.Helper()
	var (
		v   pveapi.VersionInfo
		ns  pveapi.NodeStatus
		st  pveapi.StorageStatus
		res []pveapi.Resource
		vol []pveapi.StorageVolume
	)
	ckData(t, "version", &v)
	ckData(t, "node_status", &ns)
	ckData(t, "storage_status", &st)
	ckData(t, "cluster_resources", &res)
	ckData(t, "storage_content_iso", &vol)
	return &checkFake{
		calls:   map[string]int{},
		version: func(context.Context) (pveapi.VersionInfo, error) { return v, nil },
		nodeStatus: func(context.Context, string) (pveapi.NodeStatus, error) {
			return ns, nil
		},
		storageStatus: func(context.Context, string, string) (pveapi.StorageStatus, error) {
			return st, nil
		},
		resources: func(context.Context) ([]pveapi.Resource, error) { return res, nil },
		content: func(context.Context, string, string, string) ([]pveapi.StorageVolume, error) {
			return vol, nil
		},
		config: func(_ context.Context, node string, vmid int) (map[string]string, error) {
			switch vmid {
			case 9001:
				return fixtureConfig("vm_config_template_9001"), nil
			case 9000:
				// The captured template without its cloud-init drive, so that both catalogue
				// templates pass the template checks (the drive's own case puts it back).
				cfg := fixtureConfig("vm_config_template_9000")
				delete(cfg, "ide2")
				return cfg, nil
			}
			return nil, ckAPIErr("err_not_exist")
		},
		perms: func(context.Context, string) (map[string]bool, error) {
			out := map[string]bool{}
			for _, p := range allFakePrivs {
				out[p] = true
			}
			return out, nil
		},
	}
}

func (f *checkFake) Permissions(ctx context.Context, path string) (map[string]bool, error) {
	f.count("Permissions " + path)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.perms(ctx, path)
}

// privRound is the requests of the privilege round over cluster_resources.json with the
// checkFake's template configs: one config read per listed template (2, shared with the
// template checks), one permissions read per path (/vms/9000, /vms/9001, /vms,
// /storage/proxy-seeds, and from the templates' configs /storage/local-lvm,
// /sdn/zones/localnetwork/vmbr0 and its VLAN 4).
const privRound = 9

func (f *checkFake) count(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[key]++
}

func (f *checkFake) n(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

func (f *checkFake) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		n += c
	}
	return n
}

func (f *checkFake) Version(ctx context.Context) (pveapi.VersionInfo, error) {
	f.count("Version")
	if err := ctx.Err(); err != nil {
		return pveapi.VersionInfo{}, err
	}
	return f.version(ctx)
}

func (f *checkFake) NodeStatus(ctx context.Context, node string) (pveapi.NodeStatus, error) {
	f.count("NodeStatus " + node)
	if err := ctx.Err(); err != nil {
		return pveapi.NodeStatus{}, err
	}
	return f.nodeStatus(ctx, node)
}

func (f *checkFake) StorageStatus(ctx context.Context, node, storage string) (pveapi.StorageStatus, error) {
	f.count("StorageStatus " + node)
	if err := ctx.Err(); err != nil {
		return pveapi.StorageStatus{}, err
	}
	return f.storageStatus(ctx, node, storage)
}

func (f *checkFake) ClusterResources(ctx context.Context) ([]pveapi.Resource, error) {
	f.count("ClusterResources")
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.resources(ctx)
}

func (f *checkFake) StorageContent(ctx context.Context, node, storage, content string) ([]pveapi.StorageVolume, error) {
	f.count("StorageContent " + node)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.content(ctx, node, storage, content)
}

func (f *checkFake) VMConfig(ctx context.Context, node string, vmid int) (map[string]string, error) {
	f.count(fmt.Sprintf("VMConfig %d", vmid))
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return f.config(ctx, node, vmid)
}

// VMPending answers the config func's config as the current values, with no pending section.
func (f *checkFake) VMPending(ctx context.Context, node string, vmid int) (pveapi.PendingConfig, error) {
	f.count(fmt.Sprintf("VMPending %d", vmid))
	if err := ctx.Err(); err != nil {
		return pveapi.PendingConfig{}, err
	}
	cfg, err := f.config(ctx, node, vmid)
	return pveapi.PendingConfig{Current: cfg}, err
}

// VMSnapshots answers no snapshot.
func (f *checkFake) VMSnapshots(_ context.Context, _ string, vmid int) ([]pveapi.Snapshot, error) {
	f.count(fmt.Sprintf("VMSnapshots %d", vmid))
	return []pveapi.Snapshot{{Name: "current"}}, nil
}

// ckData decodes a fixture's data.
func ckData(t *testing.T, name string, v any) {
	t.Helper()
	if err := fixture.MustLoad(name).Data(v); err != nil {
		t.Fatal(err)
	}
}

// ckAPIErr is the client's error for a fixture's answer.
func ckAPIErr(name string) error {
	f := fixture.MustLoad(name)
	return &pveapi.APIError{Status: f.Status, Message: f.Message(), Errors: f.Errors()}
}

// ckWithin runs fn and fails the test by name when it does not return within d.
func ckWithin(t *testing.T, d time.Duration, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not return within %s", d)
	}
}

// ckBackend is a backend over f with the fixtures' names: ISO storage proxy-seeds and the
// two templates of cluster_resources.json.
func ckBackend(f pveapi.API, nodes ...string) *Backend {
	if len(nodes) == 0 {
		nodes = []string{"pv1-1"}
	}
	return New(f, Config{
		Endpoint:   "https://192.168.0.8:8006",
		Nodes:      nodes,
		ISOStorage: "proxy-seeds",
		Templates:  map[string]int{"debian-13": 9001, "ubuntu-2404": 9000},
		TokenID:    func() (string, error) { return "proxy-operator@pve!tf", nil },
	})
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// blockUntilDone waits for ctx and returns err(ctx).
func blockUntilDone[T any](err func(ctx context.Context) error) func(ctx context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		<-ctx.Done()
		var zero T
		return zero, err(ctx)
	}
}

// roundDeadline is a round's context whose deadline passes when a fake calls expire, not
// at a wall-clock time, so that a loaded machine cannot make it pass at an earlier step.
// Contexts derived from it (the backend's per-request ones) see its Done and its
// DeadlineExceeded.
type roundDeadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newRoundDeadline() *roundDeadline {
	return &roundDeadline{Context: context.Background(), done: make(chan struct{})}
}

func (c *roundDeadline) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (c *roundDeadline) Done() <-chan struct{}       { return c.done }
func (c *roundDeadline) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
func (c *roundDeadline) expire() { c.once.Do(func() { close(c.done) }) }

// expireThenBlock is a fake's answer that ends the round's deadline and blocks until its
// context is done.
func expireThenBlock[T any](round *roundDeadline, err func(ctx context.Context) error) func(ctx context.Context) (T, error) {
	block := blockUntilDone[T](err)
	return func(ctx context.Context) (T, error) {
		round.expire()
		return block(ctx)
	}
}

func TestCheck_reasonsTable(t *testing.T) {
	t.Parallel()
	failNode := func(err error) func(f *checkFake) {
		return func(f *checkFake) {
			f.nodeStatus = func(context.Context, string) (pveapi.NodeStatus, error) { return pveapi.NodeStatus{}, err }
		}
	}
	failVersion := func(err error) func(f *checkFake) {
		return func(f *checkFake) {
			f.version = func(context.Context) (pveapi.VersionInfo, error) { return pveapi.VersionInfo{}, err }
		}
	}
	failStorage := func(err error) func(f *checkFake) {
		return func(f *checkFake) {
			f.storageStatus = func(context.Context, string, string) (pveapi.StorageStatus, error) {
				return pveapi.StorageStatus{}, err
			}
		}
	}
	setStorage := func(edit func(*pveapi.StorageStatus)) func(f *checkFake) {
		return func(f *checkFake) {
			var st pveapi.StorageStatus
			ckData(t, "storage_status", &st)
			edit(&st)
			f.storageStatus = func(context.Context, string, string) (pveapi.StorageStatus, error) { return st, nil }
		}
	}
	setTemplate := func(vmid int, edit func(r *pveapi.Resource) bool) func(f *checkFake) {
		return func(f *checkFake) {
			var res, out []pveapi.Resource
			ckData(t, "cluster_resources", &res)
			for _, r := range res {
				if r.VMID != vmid || edit(&r) {
					out = append(out, r)
				}
			}
			f.resources = func(context.Context) ([]pveapi.Resource, error) { return out, nil }
		}
	}
	dialTimeout := &url.Error{Op: "Get", URL: "https://192.168.0.8:8006/api2/json/version",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}}
	dialRefused := &url.Error{Op: "Get", URL: "https://192.168.0.8:8006/api2/json/version",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}

	tests := []struct {
		name     string
		tokenErr error
		// roundEnds: the round has a deadline, which mutateRound's fakes end (roundDeadline).
		roundEnds   bool
		mutate      func(f *checkFake)
		mutateRound func(f *checkFake, round *roundDeadline)
		reason      Reason
		inMessage   []string
		requests    int
		// details reached
		version, kernel, storage bool
		templates                string
	}{
		{name: "reachable", reason: ReasonReachable, requests: 4 + privRound, version: true, kernel: true, storage: true,
			templates: "2/2", inMessage: []string{"9.2.20", "proxy-seeds", "2/2"}},
		{name: "token file missing", tokenErr: fmt.Errorf("%w: open /run/token: %w", pveapi.ErrCredentials, os.ErrNotExist),
			reason: ReasonCredentialsUnavailable, requests: 0, inMessage: []string{"/run/token"}},
		{name: "token file malformed", tokenErr: fmt.Errorf("%w: not <user>@<realm>!<id>=<secret>", pveapi.ErrCredentials),
			reason: ReasonCredentialsUnavailable, requests: 0},
		{name: "token file vanished mid-round", mutate: failNode(fmt.Errorf("%w: file gone", pveapi.ErrCredentials)),
			reason: ReasonCredentialsUnavailable, requests: 2, version: true},
		{name: "401 authentication failed", mutate: failVersion(ckAPIErr("err_auth_failed")),
			reason: ReasonUnauthorized, requests: 1, inMessage: []string{"Authentication failed!"}},
		{name: "401 no ticket", mutate: failVersion(ckAPIErr("err_no_ticket")), reason: ReasonUnauthorized, requests: 1},
		{name: "403 names the privilege", mutate: failStorage(ckAPIErr("err_forbidden_volume_delete")),
			reason: ReasonForbidden, requests: 3, version: true, kernel: true, inMessage: []string{"Datastore.Allocate"}},
		{name: "401 on storage keeps its reason", mutate: failStorage(ckAPIErr("err_auth_failed")),
			reason: ReasonUnauthorized, requests: 3, version: true, kernel: true},
		{name: "595 is unreachable", mutate: failNode(ckAPIErr("err_595")), reason: ReasonUnreachable, requests: 2, version: true},
		{name: "596 is unreachable", mutate: failNode(ckAPIErr("err_596")), reason: ReasonUnreachable, requests: 2, version: true},
		{name: "596 on storage keeps its reason", mutate: failStorage(ckAPIErr("err_596")),
			reason: ReasonUnreachable, requests: 3, version: true, kernel: true},
		{name: "dial timed out on its own", mutate: failVersion(dialTimeout), reason: ReasonUnreachable, requests: 1},
		{name: "dial refused", mutate: failVersion(dialRefused), reason: ReasonUnreachable, requests: 1},
		{name: "connection cut mid-response", mutate: failNode(fmt.Errorf("read body: %w", io.ErrUnexpectedEOF)),
			reason: ReasonUnreachable, requests: 2, version: true},
		{name: "request ran out of its own time", mutate: failNode(&url.Error{Op: "Get", URL: "https://x/",
			Err: fmt.Errorf("client timeout: %w", context.DeadlineExceeded)}),
			reason: ReasonTimeout, requests: 2, version: true},
		{name: "round deadline while waiting", roundEnds: true,
			mutateRound: func(f *checkFake, round *roundDeadline) {
				f.storageStatus = func(ctx context.Context, _, _ string) (pveapi.StorageStatus, error) {
					return expireThenBlock[pveapi.StorageStatus](round, func(ctx context.Context) error { return ctx.Err() })(ctx)
				}
			},
			reason: ReasonTimeout, requests: 3, version: true, kernel: true, inMessage: []string{"ran out of time", "storage"}},
		{name: "dial cut short by the round's deadline", roundEnds: true,
			mutateRound: func(f *checkFake, round *roundDeadline) {
				f.version = expireThenBlock[pveapi.VersionInfo](round, func(ctx context.Context) error {
					return &url.Error{Op: "Get", URL: "https://x/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}}
				})
			},
			reason: ReasonTimeout, requests: 1},
		{name: "TLS unknown authority", mutate: failVersion(&url.Error{Op: "Get", URL: "https://x/",
			Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}),
			reason: ReasonCertificateInvalid, requests: 1},
		{name: "TLS hostname mismatch", mutate: failVersion(&url.Error{Op: "Get", URL: "https://x/",
			Err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "192.168.2.8"}}),
			reason: ReasonCertificateInvalid, requests: 1},
		{name: "CA file missing", mutate: failVersion(fmt.Errorf("%w: open /etc/pve/pve-root-ca.pem: no such file", pveapi.ErrCA)),
			reason: ReasonCertificateInvalid, requests: 1},
		{name: "storage missing is a 400 field error", mutate: failStorage(ckAPIErr("storage_status_missing")),
			reason: ReasonStorageNotFound, requests: 3, version: true, kernel: true, inMessage: []string{"No such storage."}},
		{name: "any 500 from storage status", mutate: failStorage(&pveapi.APIError{Status: 500, Message: "storage 'proxy-seeds' is not online"}),
			reason: ReasonStorageNotFound, requests: 3, version: true, kernel: true, inMessage: []string{"is not online"}},
		{name: "other 400 from storage status", mutate: failStorage(ckAPIErr("err_bad_param")),
			reason: ReasonAPIError, requests: 3, version: true, kernel: true},
		{name: "storage inactive", mutate: setStorage(func(s *pveapi.StorageStatus) { s.Active = 0 }),
			reason: ReasonStorageNotFound, requests: 3, version: true, kernel: true, storage: true,
			inMessage: []string{"not active"}},
		{name: "storage without iso content", mutate: setStorage(func(s *pveapi.StorageStatus) { s.Content = "vztmpl,backup" }),
			reason: ReasonStorageNotFound, requests: 3, version: true, kernel: true, storage: true,
			inMessage: []string{"iso content"}},
		{name: "iso listed among other content", mutate: setStorage(func(s *pveapi.StorageStatus) { s.Content = "vztmpl, iso,backup" }),
			reason: ReasonReachable, requests: 4 + privRound, version: true, kernel: true, storage: true, templates: "2/2"},
		{name: "500 from node status is an API error", mutate: failNode(ckAPIErr("err_node_unknown")),
			reason: ReasonAPIError, requests: 2, version: true, inMessage: []string{"hostname lookup"}},
		{name: "501 from the listing", mutate: func(f *checkFake) {
			f.resources = func(context.Context) ([]pveapi.Resource, error) { return nil, ckAPIErr("err_not_implemented") }
		}, reason: ReasonAPIError, requests: 4, version: true, kernel: true, storage: true},
		{name: "template missing", mutate: setTemplate(9000, func(*pveapi.Resource) bool { return false }),
			reason: ReasonTemplateNotFound, requests: 4 + privRound - 2, version: true, kernel: true, storage: true, templates: "1/2",
			inMessage: []string{"ubuntu-2404", "9000", "does not exist"}}, // no config to read, nor its VLAN's path
		{name: "template is a plain VM", mutate: setTemplate(9001, func(r *pveapi.Resource) bool { r.Template = 0; return true }),
			reason: ReasonTemplateNotFound, requests: 4 + privRound, version: true, kernel: true, storage: true, templates: "1/2",
			inMessage: []string{"debian-13", "9001", "not a template"}},
		{name: "template VMID held by a container", mutate: setTemplate(9001, func(r *pveapi.Resource) bool { r.Type = "lxc"; return true }),
			reason: ReasonTemplateNotFound, requests: 4 + privRound - 2, version: true, kernel: true, storage: true, templates: "1/2"},
		// A template every create would refuse (the captured template's Proxmox cloud-init
		// drive on ide2) is unusable, with the reason: the listing alone would call it found.
		{name: "template with a cloud-init drive", mutate: func(f *checkFake) {
			f.config = func(_ context.Context, _ string, vmid int) (map[string]string, error) {
				return fixtureConfig(fmt.Sprintf("vm_config_template_%d", vmid)), nil
			}
		}, reason: ReasonTemplateNotFound, requests: 4 + privRound - 1, version: true, kernel: true, storage: true, templates: "1/2",
			inMessage: []string{"ubuntu-2404", "template 9000 has a Proxmox cloud-init drive on ide2", "remove that drive"}}, // a refused template needs no privilege on its VLAN
		{name: "unknown error", mutate: failVersion(errors.New("something odd")), reason: ReasonAPIError, requests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newCheckFake(t)
			if tt.mutate != nil {
				tt.mutate(f)
			}
			b := ckBackend(f)
			if tt.tokenErr != nil {
				b.cfg.TokenID = func() (string, error) { return "", tt.tokenErr }
			}
			ctx := context.Background()
			if tt.roundEnds {
				round := newRoundDeadline()
				defer round.expire()
				tt.mutateRound(f, round)
				ctx = round
			}
			var got []NodeCheck
			ckWithin(t, 10*time.Second, func() { got = b.CheckDetailed(ctx) })
			if len(got) != 1 {
				t.Fatalf("got %d verdicts, want 1", len(got))
			}
			h := got[0]
			if h.Reason != tt.reason || h.Ready != (tt.reason == ReasonReachable) {
				t.Errorf("reason %s ready %v, want %s; message %q", h.Reason, h.Ready, tt.reason, h.Message)
			}
			if h.Name != "pv1-1" || h.Address != "https://192.168.0.8:8006" || h.ISOStorage != "proxy-seeds" {
				t.Errorf("identity = %q %q %q", h.Name, h.Address, h.ISOStorage)
			}
			if h.Message == "" {
				t.Error("empty message")
			}
			for _, s := range tt.inMessage {
				if !strings.Contains(h.Message, s) {
					t.Errorf("message %q does not contain %q", h.Message, s)
				}
			}
			if n := f.total(); n != tt.requests {
				t.Errorf("%d requests, want %d: %v", n, tt.requests, f.calls)
			}
			wantToken := "proxy-operator@pve!tf"
			if tt.tokenErr != nil {
				wantToken = ""
			}
			if h.TokenID != wantToken {
				t.Errorf("token id %q, want %q", h.TokenID, wantToken)
			}
			if (h.PVEVersion == "9.2.20") != tt.version || (h.PVEVersion == "") == tt.version {
				t.Errorf("pve version %q, reached %v", h.PVEVersion, tt.version)
			}
			if (h.Kernel == "7.0.14-17-pve") != tt.kernel || (h.Kernel == "") == tt.kernel {
				t.Errorf("kernel %q, reached %v", h.Kernel, tt.kernel)
			}
			if h.StorageAnswered != tt.storage {
				t.Errorf("storage answered %v, want %v", h.StorageAnswered, tt.storage)
			}
			if tt.storage && tt.reason == ReasonReachable && h.ISOStorageAvailGiB != 80.25 {
				t.Errorf("avail %v GiB, want 80.25", h.ISOStorageAvailGiB)
			}
			if !tt.storage && h.ISOStorageAvailGiB != 0 {
				t.Errorf("avail %v GiB without an answer", h.ISOStorageAvailGiB)
			}
			if h.Templates != tt.templates {
				t.Errorf("templates %q, want %q", h.Templates, tt.templates)
			}
		})
	}
}

func TestCheck_oneEntryPerNodeInConfigOrder(t *testing.T) {
	t.Parallel()
	f := newCheckFake(t)
	f.nodeStatus = func(_ context.Context, node string) (pveapi.NodeStatus, error) {
		if node == "pv1-2" {
			return pveapi.NodeStatus{}, ckAPIErr("err_595")
		}
		var ns pveapi.NodeStatus
		ckData(t, "node_status", &ns)
		return ns, nil
	}
	nodes := []string{"pv1-3", "pv1-1", "pv1-2", "pv1-4"}
	got := ckBackend(f, nodes...).Check(context.Background())
	if len(got) != len(nodes) {
		t.Fatalf("got %d verdicts, want %d", len(got), len(nodes))
	}
	for i, h := range got {
		if h.Name != nodes[i] {
			t.Errorf("verdict %d is %s, want %s", i, h.Name, nodes[i])
		}
		want := ReasonReachable
		if h.Name == "pv1-2" {
			want = ReasonUnreachable
		}
		if h.Reason != want {
			t.Errorf("%s: reason %s, want %s (%s)", h.Name, h.Reason, want, h.Message)
		}
	}
}

// TestCheck_fourRequestsPerNode: four requests per node, and one privilege round for all
// of them.
func TestCheck_fourRequestsPerNode(t *testing.T) {
	t.Parallel()
	f := newCheckFake(t)
	nodes := []string{"pve1", "pve2", "pve3"}
	for _, h := range ckBackend(f, nodes...).Check(context.Background()) {
		if !h.Ready {
			t.Fatalf("%s not ready: %s", h.Name, h.Message)
		}
	}
	if n := f.total(); n != 4*len(nodes)+privRound {
		t.Errorf("%d requests for %d nodes, want %d: %v", n, len(nodes), 4*len(nodes)+privRound, f.calls)
	}
	for _, k := range []string{"Version", "ClusterResources"} {
		if f.n(k) != len(nodes) {
			t.Errorf("%s called %d times, want once per node", k, f.n(k))
		}
	}
	for _, node := range nodes {
		for _, k := range []string{"NodeStatus ", "StorageStatus "} {
			if f.n(k+node) != 1 {
				t.Errorf("%s%s called %d times, want 1", k, node, f.n(k+node))
			}
		}
	}
}

// Every node's Version waits until all nodes have arrived: checking them one at a time
// never gets past the barrier, and the round's deadline turns every verdict into Timeout.
func TestCheck_nodesCheckedConcurrently(t *testing.T) {
	t.Parallel()
	nodes := []string{"pve1", "pve2", "pve3"}
	f := newCheckFake(t)
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	var v pveapi.VersionInfo
	ckData(t, "version", &v)
	f.version = func(ctx context.Context) (pveapi.VersionInfo, error) {
		mu.Lock()
		arrived++
		if arrived == len(nodes) {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return v, nil
		case <-ctx.Done():
			return pveapi.VersionInfo{}, ctx.Err()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, h := range ckBackend(f, nodes...).Check(ctx) {
		if h.Reason != ReasonReachable {
			t.Errorf("%s: %s (%s)", h.Name, h.Reason, h.Message)
		}
	}
}

// A node that hangs costs only its own time: the others are answered, it is Timeout. The
// check's ctx ends once the other rounds' last requests (their listings, the template reads)
// have answered, not after a wall-clock delay a loaded machine may outlast.
func TestCheck_hangingNodeCostsOnlyItsOwnTime(t *testing.T) {
	t.Parallel()
	f := newCheckFake(t)
	var ns pveapi.NodeStatus
	ckData(t, "node_status", &ns)
	f.nodeStatus = func(ctx context.Context, node string) (pveapi.NodeStatus, error) {
		if node == "pve2" {
			<-ctx.Done()
			return pveapi.NodeStatus{}, ctx.Err()
		}
		return ns, nil
	}
	// Once both other rounds' listings, both template reads and the privilege round have
	// answered, their verdicts are made (what is left is computation and the shared template verdicts).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var answered atomic.Int32
	done := func() {
		if answered.Add(1) == 4+7 { // two listings, two template configs, the privilege round's 7 paths
			cancel()
		}
	}
	resources, config, perms := f.resources, f.config, f.perms
	f.perms = func(ctx context.Context, path string) (map[string]bool, error) {
		defer done()
		return perms(ctx, path)
	}
	f.resources = func(ctx context.Context) ([]pveapi.Resource, error) {
		defer done()
		return resources(ctx)
	}
	f.config = func(ctx context.Context, node string, vmid int) (map[string]string, error) {
		defer done()
		return config(ctx, node, vmid)
	}
	var got []NodeHealth
	ckWithin(t, time.Minute, func() { got = ckBackend(f, "pve1", "pve2", "pve3").Check(ctx) })
	want := []Reason{ReasonReachable, ReasonTimeout, ReasonReachable}
	for i, h := range got {
		if h.Reason != want[i] {
			t.Errorf("%s: %s, want %s (%s)", h.Name, h.Reason, want[i], h.Message)
		}
	}
}

func TestCheck_expiredContextReturnsPromptly(t *testing.T) {
	t.Parallel()
	f := newCheckFake(t)
	// A fake that would hang forever if the ended ctx were not honoured.
	f.version = blockUntilDone[pveapi.VersionInfo](func(ctx context.Context) error { return ctx.Err() })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var got []NodeHealth
	ckWithin(t, 5*time.Second, func() { got = ckBackend(f, "pve1", "pve2").Check(ctx) })
	for _, h := range got {
		if h.Reason != ReasonTimeout || h.Ready {
			t.Errorf("%s: %s ready=%v, want Timeout", h.Name, h.Reason, h.Ready)
		}
	}
	if len(got) != 2 {
		t.Errorf("got %d verdicts, want 2", len(got))
	}
}

// templates counts catalogue entries, not unique VMIDs.
func TestCheck_templatesCountCatalogueEntries(t *testing.T) {
	t.Parallel()
	f := newCheckFake(t)
	b := ckBackend(f)
	b.cfg.Templates = map[string]int{"a": 9001, "b": 9001, "c": 4242}
	h := b.Check(context.Background())[0]
	if h.Templates != "2/3" || h.Reason != ReasonTemplateNotFound {
		t.Errorf("templates %q reason %s, want 2/3 TemplateNotFound", h.Templates, h.Reason)
	}
	b.cfg.Templates = nil
	if h := b.Check(context.Background())[0]; h.Templates != "0/0" || !h.Ready {
		t.Errorf("empty catalogue: templates %q ready %v", h.Templates, h.Ready)
	}
}

func TestKernelRelease_table(t *testing.T) {
	t.Parallel()
	var ns pveapi.NodeStatus
	ckData(t, "node_status", &ns)
	for in, want := range map[string]string{
		ns.KVersion:             "7.0.14-17-pve",
		"Linux 6.8.12-4-pve #1": "6.8.12-4-pve",
		"6.8.12-4-pve":          "6.8.12-4-pve",
		"":                      "",
	} {
		if got := kernelRelease(in); got != want {
			t.Errorf("kernelRelease(%q) = %q, want %q", in, got, want)
		}
	}
}

// ckServer serves the check's four reads from the fixtures over TLS, with per-path
// overrides, and counts requests per path.
type ckServer struct {
	*httptest.Server
	mu    sync.Mutex
	paths map[string]int
}

func newCKServer(t *testing.T, override map[string]http.HandlerFunc) *ckServer {
	t.Helper()
	s := &ckServer{paths: map[string]int{}}
	serve := func(name string) http.HandlerFunc {
		f := fixture.MustLoad(name)
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.Status)
			_, _ = w.Write(f.BodyBytes())
		}
	}
	routes := map[string]http.HandlerFunc{
		"/api2/json/version":                               serve("version"),
		"/api2/json/nodes/pve1/status":                     serve("node_status"),
		"/api2/json/nodes/pve1/storage/proxy-seeds/status": serve("storage_status"),
		"/api2/json/cluster/resources":                     serve("cluster_resources"),
		"/api2/json/nodes/pve2/status":                     serve("node_status"),
		"/api2/json/nodes/pve2/storage/proxy-seeds/status": serve("storage_status"),
		"/api2/json/nodes/pv1-1/qemu/9001/config":          serve("vm_config_template_9001"),
		// A root token's privileges, on whatever path is asked, in the fixture's shape.
		"/api2/json/access/permissions": func(w http.ResponseWriter, r *http.Request) {
			privs := map[string]int{}
			for _, p := range allFakePrivs {
				privs[p] = 1
			}
			b, _ := json.Marshal(map[string]any{"data": map[string]any{r.URL.Query().Get("path"): privs}})
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		},
	}
	maps.Copy(routes, override)
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths[r.URL.Path]++
		s.mu.Unlock()
		if h, ok := routes[r.URL.Path]; ok {
			h(w, r)
			return
		}
		serve("err_not_implemented")(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *ckServer) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.paths {
		n += c
	}
	return n
}

func (s *ckServer) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}))
}

// TestCheck_reasonsOverHTTPClient takes the transport reasons from the real client's
// net/http and crypto/tls errors rather than from errors the fake makes up.
func TestCheck_reasonsOverHTTPClient(t *testing.T) {
	t.Parallel()
	const token = "proxy-operator@pve!tf=5e171e7c-0000-4000-8000-5e171e7c5e17"
	status := func(code int) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
	}
	cut := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"data":{"kvers`))
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	tests := []struct {
		name     string
		override map[string]http.HandlerFunc
		opts     func(s *ckServer, o *pveapi.Options)
		reason   Reason
		requests int // -1: not counted
	}{
		// Four reads per node, then the template's config (one read, shared by the template
		// check and the privilege round), and the privileges on /vms/9001, /vms,
		// /storage/proxy-seeds, /storage/local-lvm and /sdn/zones/localnetwork/vmbr0 (its
		// disks' storage and its bridge).
		{name: "reachable", reason: ReasonReachable, requests: 8 + 1 + 5},
		{name: "unknown authority", opts: func(_ *ckServer, o *pveapi.Options) { o.CAPEM = "" },
			reason: ReasonCertificateInvalid, requests: -1},
		{name: "hostname not in the certificate", opts: func(s *ckServer, o *pveapi.Options) {
			o.Endpoint = strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
		}, reason: ReasonCertificateInvalid, requests: 0},
		{name: "CA file missing", opts: func(_ *ckServer, o *pveapi.Options) {
			o.CAPEM, o.CAFile = "", filepath.Join(t.TempDir(), "absent.pem")
		}, reason: ReasonCertificateInvalid, requests: 0},
		{name: "token file missing", opts: func(_ *ckServer, o *pveapi.Options) {
			o.Token, o.TokenFile = "", filepath.Join(t.TempDir(), "absent-token")
		}, reason: ReasonCredentialsUnavailable, requests: 0},
		{name: "server gone", opts: func(s *ckServer, _ *pveapi.Options) { s.Close() },
			reason: ReasonUnreachable, requests: -1},
		{name: "401", override: map[string]http.HandlerFunc{"/api2/json/version": status(401)},
			reason: ReasonUnauthorized, requests: 2},
		{name: "596", override: map[string]http.HandlerFunc{
			"/api2/json/nodes/pve1/status": status(596), "/api2/json/nodes/pve2/status": status(596),
		}, reason: ReasonUnreachable, requests: 4},
		{name: "response cut", override: map[string]http.HandlerFunc{
			"/api2/json/nodes/pve1/status": cut, "/api2/json/nodes/pve2/status": cut,
		}, reason: ReasonUnreachable, requests: 4},
		{name: "request timeout", override: map[string]http.HandlerFunc{
			"/api2/json/cluster/resources": hang,
		}, opts: func(_ *ckServer, o *pveapi.Options) { o.RequestTimeout = 1500 * time.Millisecond }, // above a TLS handshake under -race on a loaded machine
			reason: ReasonTimeout, requests: 8}, // the listing hangs: no template is read
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newCKServer(t, tt.override)
			o := pveapi.Options{Endpoint: s.URL, Token: token, CAPEM: s.caPEM()}
			if tt.opts != nil {
				tt.opts(s, &o)
			}
			c, err := pveapi.New(o)
			if err != nil {
				t.Fatal(err)
			}
			b := New(c, Config{Endpoint: o.Endpoint, Nodes: []string{"pve1", "pve2"}, ISOStorage: "proxy-seeds",
				Templates: map[string]int{"debian-13": 9001}, TokenID: c.TokenID})
			var got []NodeCheck
			ckWithin(t, 20*time.Second, func() { got = b.CheckDetailed(context.Background()) })
			for _, h := range got {
				if h.Reason != tt.reason {
					t.Errorf("%s: %s, want %s (%s)", h.Name, h.Reason, tt.reason, h.Message)
				}
				if strings.Contains(h.Message, "5e171e7c") || strings.Contains(h.TokenID, "5e171e7c") {
					t.Errorf("%s: the token's secret leaked: %+v", h.Name, h)
				}
			}
			if tt.requests >= 0 {
				if n := s.total(); n != tt.requests {
					t.Errorf("%d requests, want %d: %v", n, tt.requests, s.paths)
				}
			}
		})
	}
}
