package proxmox

// fakeAPI is an in-memory pveapi.API for the backend's tests. Every Proxmox error it
// answers is built from a testdata/ fixture (fixtureErr), so the tests stay tied to the
// captured wording.
//
// Small API:
//
//	f := newFakeAPI("pv1-1", "pv1-2")      // nodes (first is the default); storage "proxy-seeds" on each
//	f.addTemplate(9001, "pv1-1", cfg)      // a template; cfg nil: vm_config_template_9001's config
//	f.addVM(&fakeVM{VMID: 100, Name: "x"}) // any guest; Node, Type, Status default to pv1-1, qemu, stopped
//	f.addOurVM(vmid, name, uid)            // a marked, stopped VM as Create leaves it
//	f.failNext("Clone", err)               // the next Clone call answers err (queue per method)
//	f.onCall("Stop", func(ctx context.Context, c fakeCall) error { ... })
//	                                       // runs before every Stop, outside the fake's lock;
//	                                       // may block on ctx; a non-nil error is the answer
//	f.calls("VMConfig")                    // how many VMConfig calls so far
//	f.log()                                // every call in order
//	f.vm(vmid)                             // a copy of a VM (nil when absent)
//	f.iso(node, "proxy-seeds", "x-seed.iso") // an uploaded seed's bytes
//	f.seeds()                              // every seed ISO as "<node>/<volid>"
//	f.taskPolls = 2                        // TaskStatus answers "running" twice before "stopped"
//	f.failTask("resize", exitstatus)     // the next task of that type ends with that exitstatus
//	f.finishTasks()                        // completes every pending task now (a crash-then-retry)
//
// A start fails, as Proxmox's does, when a drive names a volume on the ISO storage that
// the node's storage does not hold (the seed deleted by a destroy that then failed).
// Behaviour: a clone creates the VM at once, listed nameless with lock "clone" and status
// "unknown" (fact: nameless-mid-clone) and with a config holding only the lock, until its task completes; a
// clone task that fails removes the VM, as Proxmox does. Locked
// VMs refuse config writes, resizes, starts, stops and destroys with err_locked_clone's
// text (lock name substituted). Tasks complete when polled (after taskPolls "running"
// answers); their effect applies then.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

var _ pveapi.API = (*fakeAPI)(nil)

const (
	fakeISOStorage = "proxy-seeds"
	fakeUser       = "proxy-operator@pve!tf"
)

// fixtureErr builds the APIError a client would return for a fixture.
func fixtureErr(name string) *pveapi.APIError {
	f := fixture.MustLoad(name)
	return &pveapi.APIError{Status: f.Status, Message: f.Message(), Errors: f.Errors()}
}

// fixtureErrSub is fixtureErr with old replaced by repl in the message (a VMID or a lock
// name), so the wording stays the fixture's.
func fixtureErrSub(name, old, repl string) *pveapi.APIError {
	e := fixtureErr(name)
	if !strings.Contains(e.Message, old) {
		panic(fmt.Sprintf("fixture %s: %q not in %q", name, old, e.Message))
	}
	e.Message = strings.Replace(e.Message, old, repl, 1)
	return e
}

// fixtureExit is the exitstatus of a task_status fixture.
func fixtureExit(name string) string {
	var st pveapi.TaskStatus
	if err := fixture.MustLoad(name).Data(&st); err != nil {
		panic(err)
	}
	return st.ExitStatus
}

// fixtureConfig decodes a vm_config_* fixture into the adapter's string map.
func fixtureConfig(name string) map[string]string {
	var raw map[string]any
	if err := fixture.MustLoad(name).Data(&raw); err != nil {
		panic(err)
	}
	cfg := map[string]string{}
	for k, v := range raw {
		switch x := v.(type) {
		case string:
			cfg[k] = x
		case float64:
			cfg[k] = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			cfg[k] = fmt.Sprint(x)
		}
	}
	return cfg
}

func errNotExist(node string, vmid int) *pveapi.APIError {
	return fixtureErrSub("err_not_exist", "nodes/pv1-1/qemu-server/999999.conf",
		fmt.Sprintf("nodes/%s/qemu-server/%d.conf", node, vmid))
}

func errLocked(lock string) *pveapi.APIError {
	return fixtureErrSub("err_locked_clone", "(clone)", "("+lock+")")
}

// fakeVM is one guest. Exported-style fields are set by tests; the fake keeps Config's
// "name" in step with Name.
type fakeVM struct {
	VMID     int
	Node     string
	Type     string // qemu (default) or lxc
	Name     string
	Template bool
	Status   string // running or stopped (default)
	QMP      string // qmpstatus while running: running (default), paused, prelaunch...
	Lock     string
	Config   map[string]string
	// ListedStatus overrides the listing's status (e.g. "unknown").
	ListedStatus string
	// ListedName overrides the listing's name (pvestatd's stale snapshot: "VM <vmid>", a
	// previous VM's name).
	ListedName string
	// Agent is what network-get-interfaces answers while the VM runs; nil: the agent is
	// not running yet (err_agent_not_running).
	Agent []pveapi.NetworkInterface
	// AgentErr, when set, is answered instead.
	AgentErr error
	// Uptime is the seconds status/current reports while the VM runs.
	Uptime int64
	// Pending holds cores and memory written while the VM ran (no memory hotplug): the
	// config read shows them, status/current's cpus and maxmem do not, and a start, stop
	// or shutdown applies them.
	Pending map[string]string
	// PendingDelete are keys whose delete stays pending until the next start (a drive
	// deleted from the running VM that Proxmox cannot unplug live: ide, sata): the config
	// read leaves them out, the current and pending reads show them, a start applies it.
	PendingDelete map[string]bool
	// Snapshots are the config's snapshot sections by name (Config["parent"] names the
	// newest); neither config read shows them.
	Snapshots map[string]map[string]string
	// IgnoresShutdown: the guest never powers off on a shutdown request.
	IgnoresShutdown bool
	// Pool is the pool the VM belongs to (fake_pool_test.go).
	Pool string

	cloning bool // nameless in the listing until the clone task completes
}

func (v *fakeVM) clone() *fakeVM {
	c := *v
	c.Config = maps.Clone(v.Config)
	c.Agent = slices.Clone(v.Agent)
	return &c
}

// fakeCall is one recorded seam call.
type fakeCall struct {
	Method string
	Node   string
	VMID   int
	// Args holds the call's other arguments: form params, clone params (newid, name,
	// description, storage, target), disk/size, storage/filename/volid, upid.
	Args map[string]string
}

type fakeTask struct {
	upid, node, typ, id string
	polls               int
	exit                string
	done                bool
	apply               func() // the task's effect, run once when it completes
}

type fakeAPI struct {
	mu        sync.Mutex
	nodes     []string
	vms       map[int]*fakeVM
	tasks     map[string]*fakeTask
	taskOrder []string
	isos      map[string][]byte // "<node>/<storage>/<volid>"
	storages  map[string]pveapi.StorageStatus
	failQ     map[string][]error
	hooks     map[string][]func(context.Context, fakeCall) error
	taskFails map[string][]string
	calllog   []fakeCall
	seq       int
	// uuids counts the SMBIOS uuids given to clones.
	uuids int

	// taskPolls is how many "running" answers a task gives before "stopped".
	taskPolls int
	// version and nodeStatus answer Version and NodeStatus.
	version    pveapi.VersionInfo
	nodeStatus pveapi.NodeStatus
	// privs and hidePools shape the token's privileges (fake_pool_test.go).
	privs        map[string][]string
	unpropagated map[string]bool
	hidePools    bool
	hidden       map[int]bool
	// history is each node's task list beyond the fake's own tasks (fake_tasks_test.go).
	history map[string][]pveapi.TaskEntry
}

func newFakeAPI(nodes ...string) *fakeAPI {
	if len(nodes) == 0 {
		nodes = []string{"pv1-1"}
	}
	f := &fakeAPI{
		nodes:     nodes,
		vms:       map[int]*fakeVM{},
		tasks:     map[string]*fakeTask{},
		isos:      map[string][]byte{},
		storages:  map[string]pveapi.StorageStatus{},
		failQ:     map[string][]error{},
		hooks:     map[string][]func(context.Context, fakeCall) error{},
		taskFails: map[string][]string{},
		history:   map[string][]pveapi.TaskEntry{},
		version:   pveapi.VersionInfo{Version: "9.2.20", Release: "9.2", RepoID: "49318c671b82f31e"},
		nodeStatus: pveapi.NodeStatus{
			KVersion: "Linux 7.0.14-17-pve", PVEVersion: "pve-manager/9.2.20/49318c671b82f31e", Uptime: 1209402,
		},
	}
	for _, n := range nodes {
		f.storages[n+"/"+fakeISOStorage] = pveapi.StorageStatus{
			Type: "dir", Content: "iso,vztmpl", Total: 100 << 30, Used: 1 << 30, Avail: 99 << 30, Active: 1, Enabled: 1,
		}
	}
	return f
}

// --- test-facing helpers ---

func (f *fakeAPI) addVM(v *fakeVM) *fakeVM {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v.Node == "" {
		v.Node = f.nodes[0]
	}
	if v.Type == "" {
		v.Type = "qemu"
	}
	if v.Status == "" {
		v.Status = "stopped"
	}
	if v.Config == nil {
		v.Config = map[string]string{}
	}
	if v.Name != "" {
		v.Config["name"] = v.Name
	}
	f.vms[v.VMID] = v
	return v
}

// addTemplate adds a template VM; cfg nil takes vm_config_template_9001's config.
func (f *fakeAPI) addTemplate(vmid int, node string, cfg map[string]string) {
	if cfg == nil {
		cfg = fixtureConfig("vm_config_template_9001")
	}
	cfg["template"] = "1"
	f.addVM(&fakeVM{VMID: vmid, Node: node, Name: cfg["name"], Template: true, Config: cfg})
}

// addOurVM adds a stopped VM carrying our finished mark, bound to it (its instance line),
// shaped like vm_config_clone, on the first node. addOlderVM is one made by version 0.1.0.
func (f *fakeAPI) addOurVM(vmid int, name, uid string) *fakeVM {
	v := f.addUnboundVM(vmid, name, uid)
	v.Config["description"] = MarkLines{UID: uid, CreatedAt: time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC), Instance: instanceOf(v.Config)}.Format()
	return v
}

// addOlderVM adds a stopped VM carrying the finished mark version 0.1.0 wrote (no instance
// line) and its seed ISO on ide2, shaped like vm_config_clone, on the first node.
func (f *fakeAPI) addOlderVM(vmid int, name, uid string) *fakeVM {
	v := f.addUnboundVM(vmid, name, uid)
	v.Config["ide2"] = "local:iso/" + seedFile(name, uid) + ",media=cdrom"
	return v
}

// addUnboundVM is addOlderVM without a seed on any drive.
func (f *fakeAPI) addUnboundVM(vmid int, name, uid string) *fakeVM {
	cfg := fixtureConfig("vm_config_clone")
	cfg["description"] = FormatMark(uid, time.Date(2026, 9, 19, 9, 12, 0, 0, time.UTC))
	cfg["scsi0"] = fmt.Sprintf("local-lvm:vm-%d-disk-1,iothread=1,size=3G", vmid)
	delete(cfg, "digest")
	return f.addVM(&fakeVM{VMID: vmid, Name: name, Config: cfg})
}

// failNext queues err as the answer of method's next call.
func (f *fakeAPI) failNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failQ[method] = append(f.failQ[method], err)
}

// onCall adds a hook run before every call of method, outside the fake's lock.
func (f *fakeAPI) onCall(method string, h func(context.Context, fakeCall) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hooks[method] = append(f.hooks[method], h)
}

// failTask makes the next task of type typ end with exitstatus exit (and no effect).
func (f *fakeAPI) failTask(typ, exit string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taskFails[typ] = append(f.taskFails[typ], exit)
}

// calls counts method's calls (all methods when method is "").
// fakeReads are the seam calls that only read. Any other call that names a VMID writes to
// that VM: the tests that count writes to VMs not ours (writesTo) count every call but
// these, so a write method added to the seam is counted without a list to update.
// A read added to the seam fails those tests until it is listed here: the safe side.
var fakeReads = map[string]bool{
	"VMConfig": true, "VMConfigCurrent": true, "VMPending": true, "VMSnapshots": true, "VMSnapshotConfig": true,
	"VMStatus": true, "VMIDFree": true, "ClusterResources": true, "AgentNetworkInterfaces": true, "TaskStatus": true,
	"CPUModels": true, "NodeNetwork": true, "NodeStatus": true, "Permissions": true, "StorageContent": true,
	"StorageStatus": true, "Version": true, "NodeTasks": true, "Nodes": true,
}

func (f *fakeAPI) calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calllog {
		if method == "" || c.Method == method {
			n++
		}
	}
	return n
}

// log returns a copy of the call log.
func (f *fakeAPI) log() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calllog)
}

// callsOf returns the recorded calls of method.
func (f *fakeAPI) callsOf(method string) []fakeCall {
	var out []fakeCall
	for _, c := range f.log() {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// methods returns the method names of the call log, in order.
func (f *fakeAPI) methods() []string {
	var out []string
	for _, c := range f.log() {
		out = append(out, c.Method)
	}
	return out
}

// vm returns a copy of the VM at vmid, or nil.
func (f *fakeAPI) vm(vmid int) *fakeVM {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.vms[vmid]
	if v == nil {
		return nil
	}
	return v.clone()
}

// mutate runs fn on the VM at vmid under the fake's lock.
func (f *fakeAPI) mutate(vmid int, fn func(v *fakeVM)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.vms[vmid])
	if v := f.vms[vmid]; v != nil && v.Name != "" {
		v.Config["name"] = v.Name
	}
}

// remove deletes the VM at vmid (destroyed outside the provider).
func (f *fakeAPI) remove(vmid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.vms, vmid)
}

// vmCount counts VMs that are not templates.
func (f *fakeAPI) vmCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, v := range f.vms {
		if !v.Template {
			n++
		}
	}
	return n
}

// putISO stores a volume as if uploaded.
func (f *fakeAPI) putISO(node, storage, filename string, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.isos[node+"/"+storage+"/"+storage+":iso/"+filename] = data
}

// iso returns an uploaded file's bytes.
func (f *fakeAPI) iso(node, storage, filename string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.isos[node+"/"+storage+"/"+storage+":iso/"+filename]
	return b, ok
}

// seeds lists the seed ISOs on every node's storage, as "<node>/<volid>", sorted.
func (f *fakeAPI) seeds() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.isos {
		if strings.HasSuffix(k, "-seed.iso") {
			node, rest, _ := strings.Cut(k, "/")
			_, volid, _ := strings.Cut(rest, "/")
			out = append(out, node+"/"+volid)
		}
	}
	sort.Strings(out)
	return out
}

// finishTasks completes every pending task now, applying its effect.
func (f *fakeAPI) finishTasks() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.taskOrder {
		f.completeLocked(f.tasks[u])
	}
}

// --- internals ---

// enter records the call, runs hooks and the failure queue. A non-nil error is the answer.
func (f *fakeAPI) enter(ctx context.Context, c fakeCall) error {
	f.mu.Lock()
	f.calllog = append(f.calllog, c)
	hooks := slices.Clone(f.hooks[c.Method])
	f.mu.Unlock()
	for _, h := range hooks {
		if err := h(ctx, c); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.failQ[c.Method]; len(q) > 0 {
		f.failQ[c.Method] = q[1:]
		return q[0]
	}
	return nil
}

// qemu returns the qemu VM at vmid on node, or the does-not-exist error. Caller holds mu.
func (f *fakeAPI) qemu(node string, vmid int) (*fakeVM, error) {
	v := f.vms[vmid]
	if v == nil || v.Node != node || v.Type != "qemu" {
		return nil, errNotExist(node, vmid)
	}
	return v, nil
}

// newTask registers a task and returns its UPID. Caller holds mu.
func (f *fakeAPI) newTask(node, typ, id string, apply func()) string {
	f.seq++
	upid := fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, 0x2F000+f.seq, 0x140000+f.seq, 0x6AAE5100+f.seq, typ, id, fakeUser)
	t := &fakeTask{upid: upid, node: node, typ: typ, id: id, polls: f.taskPolls, exit: "OK", apply: apply}
	if q := f.taskFails[typ]; len(q) > 0 {
		f.taskFails[typ] = q[1:]
		t.exit, t.apply = q[0], nil
	}
	f.tasks[upid] = t
	f.taskOrder = append(f.taskOrder, upid)
	return upid
}

func (f *fakeAPI) completeLocked(t *fakeTask) {
	if t.done {
		return
	}
	t.done = true
	if t.apply != nil {
		t.apply()
	}
}

func (f *fakeAPI) Version(ctx context.Context) (pveapi.VersionInfo, error) {
	if err := f.enter(ctx, fakeCall{Method: "Version"}); err != nil {
		return pveapi.VersionInfo{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version, nil
}

func (f *fakeAPI) NodeStatus(ctx context.Context, node string) (pveapi.NodeStatus, error) {
	if err := f.enter(ctx, fakeCall{Method: "NodeStatus", Node: node}); err != nil {
		return pveapi.NodeStatus{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.nodes, node) {
		return pveapi.NodeStatus{}, fixtureErrSub("err_node_unknown", "pv9-9", node)
	}
	return f.nodeStatus, nil
}

func (f *fakeAPI) StorageStatus(ctx context.Context, node, storage string) (pveapi.StorageStatus, error) {
	if err := f.enter(ctx, fakeCall{Method: "StorageStatus", Node: node, Args: map[string]string{"storage": storage}}); err != nil {
		return pveapi.StorageStatus{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.storages[node+"/"+storage]
	if !ok {
		return pveapi.StorageStatus{}, fixtureErr("storage_status_missing")
	}
	return st, nil
}

func (f *fakeAPI) StorageContent(ctx context.Context, node, storage, content string) ([]pveapi.StorageVolume, error) {
	if err := f.enter(ctx, fakeCall{Method: "StorageContent", Node: node, Args: map[string]string{"storage": storage, "content": content}}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.storages[node+"/"+storage]; !ok {
		return nil, fixtureErr("storage_status_missing")
	}
	prefix := node + "/" + storage + "/"
	var out []pveapi.StorageVolume
	for k, b := range f.isos {
		if volid, ok := strings.CutPrefix(k, prefix); ok {
			out = append(out, pveapi.StorageVolume{VolID: volid, Format: "iso", Size: int64(len(b)), CTime: 1789809130, Content: "iso"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VolID < out[j].VolID })
	return out, nil
}

func (f *fakeAPI) ClusterResources(ctx context.Context) ([]pveapi.Resource, error) {
	if err := f.enter(ctx, fakeCall{Method: "ClusterResources"}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := slices.Sorted(maps.Keys(f.vms))
	out := make([]pveapi.Resource, 0, len(ids))
	for _, id := range ids {
		v := f.vms[id]
		if f.hidden[id] {
			continue
		}
		r := pveapi.Resource{ID: fmt.Sprintf("%s/%d", v.Type, v.VMID), VMID: v.VMID, Node: v.Node, Type: v.Type, Lock: v.Lock}
		if v.cloning {
			r.Status = "unknown"
			out = append(out, r)
			continue
		}
		r.Name, r.Status, r.Tags = v.Name, v.Status, v.Config["tags"]
		if !f.hidePools {
			r.Pool = v.Pool
		}
		if v.Template {
			r.Template = 1
		}
		if v.ListedStatus != "" {
			r.Status = v.ListedStatus
		}
		if v.ListedName != "" {
			r.Name = v.ListedName
		}
		out = append(out, r)
	}
	return out, nil
}

func (f *fakeAPI) VMConfig(ctx context.Context, node string, vmid int) (map[string]string, error) {
	if err := f.enter(ctx, fakeCall{Method: "VMConfig", Node: node, VMID: vmid}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hidden[vmid] {
		return nil, errHidden(vmid)
	}
	v, err := f.qemu(node, vmid)
	if err != nil {
		return nil, err
	}
	if v.cloning {
		return map[string]string{"lock": v.Lock}, nil
	}
	cfg := maps.Clone(v.Config)
	maps.Copy(cfg, v.Pending)
	for k := range v.PendingDelete {
		delete(cfg, k)
	}
	if v.Lock != "" {
		cfg["lock"] = v.Lock
	}
	if v.Template {
		cfg["template"] = "1"
	}
	cfg["digest"] = fakeDigest(cfg, v.Snapshots)
	return cfg, nil
}

func (f *fakeAPI) VMConfigCurrent(ctx context.Context, node string, vmid int) (map[string]string, error) {
	if err := f.enter(ctx, fakeCall{Method: "VMConfigCurrent", Node: node, VMID: vmid}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return nil, err
	}
	cfg := maps.Clone(v.Config)
	if v.Lock != "" {
		cfg["lock"] = v.Lock
	}
	cfg["digest"] = fakeDigest(cfg, v.Snapshots)
	return cfg, nil
}

func (f *fakeAPI) VMPending(ctx context.Context, node string, vmid int) (pveapi.PendingConfig, error) {
	if err := f.enter(ctx, fakeCall{Method: "VMPending", Node: node, VMID: vmid}); err != nil {
		return pveapi.PendingConfig{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hidden[vmid] {
		return pveapi.PendingConfig{}, errHidden(vmid)
	}
	v, err := f.qemu(node, vmid)
	if err != nil {
		return pveapi.PendingConfig{}, err
	}
	p := pveapi.PendingConfig{Current: maps.Clone(v.Config), Pending: maps.Clone(v.Pending), Delete: maps.Clone(v.PendingDelete)}
	if v.cloning {
		p = pveapi.PendingConfig{Current: map[string]string{}}
	}
	if p.Current == nil {
		p.Current = map[string]string{}
	}
	if v.Lock != "" {
		p.Current["lock"] = v.Lock
	}
	if v.Template && !v.cloning {
		p.Current["template"] = "1"
	}
	p.Current["digest"] = fakeDigest(p.Current, v.Snapshots)
	return p, nil
}

func (f *fakeAPI) VMSnapshots(ctx context.Context, node string, vmid int) ([]pveapi.Snapshot, error) {
	if err := f.enter(ctx, fakeCall{Method: "VMSnapshots", Node: node, VMID: vmid}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return nil, err
	}
	var out []pveapi.Snapshot
	for _, name := range slices.Sorted(maps.Keys(v.Snapshots)) {
		out = append(out, pveapi.Snapshot{Name: name, Parent: v.Snapshots[name]["parent"]})
	}
	return append(out, pveapi.Snapshot{Name: "current", Parent: v.Config["parent"]}), nil
}

func (f *fakeAPI) VMSnapshotConfig(ctx context.Context, node string, vmid int, name string) (map[string]string, error) {
	if err := f.enter(ctx, fakeCall{Method: "VMSnapshotConfig", Node: node, VMID: vmid}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return nil, err
	}
	snap, ok := v.Snapshots[name]
	if !ok {
		return nil, fmt.Errorf("snapshot '%s' does not exist", name)
	}
	return maps.Clone(snap), nil
}

// fakeDigest stands for the config file's sha1, which PVE returns as digest and checks a
// config write's digest= against (testdata/err_config_modified.json); the file holds the
// snapshot sections too, so they change it as they do in PVE (qemu-server
// parse_vm_config hashes the whole file).
func fakeDigest(cfg map[string]string, snaps map[string]map[string]string) string {
	h := sha1.New() //nolint:gosec // a test fake's change detector
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if k != "digest" {
			fmt.Fprintf(h, "%s: %s\n", k, cfg[k])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(snaps)) {
		fmt.Fprintf(h, "[%s]\n", name)
		for _, k := range slices.Sorted(maps.Keys(snaps[name])) {
			fmt.Fprintf(h, "%s: %s\n", k, snaps[name][k])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

var fakeTagRE = regexp.MustCompile(`^[a-z0-9_][a-z0-9_\-+.]*$`)

func (f *fakeAPI) SetVMConfig(ctx context.Context, node string, vmid int, params map[string]string) error {
	if err := f.enter(ctx, fakeCall{Method: "SetVMConfig", Node: node, VMID: vmid, Args: maps.Clone(params)}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return err
	}
	if v.Lock != "" {
		return errLocked(v.Lock)
	}
	if d, ok := params["digest"]; ok {
		cur := maps.Clone(v.Config)
		if v.Template {
			cur["template"] = "1"
		}
		if d != fakeDigest(cur, v.Snapshots) {
			return fixtureErr("err_config_modified")
		}
		params = maps.Clone(params)
		delete(params, "digest")
	}
	if tags, ok := params["tags"]; ok {
		var norm []string
		for t := range strings.FieldsFuncSeq(strings.ToLower(tags), func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
			if !fakeTagRE.MatchString(t) {
				return fixtureErr("err_tag_invalid")
			}
			norm = append(norm, t)
		}
		params = maps.Clone(params)
		params["tags"] = strings.Join(norm, ";")
	}
	for k, val := range params {
		if k == "delete" {
			for d := range strings.SplitSeq(val, ",") {
				delete(v.Config, d)
			}
			continue
		}
		if v.Status == "running" && (k == "cores" || (k == "memory" && !fakeMemoryHotplug(v.Config))) {
			if v.Pending == nil {
				v.Pending = map[string]string{}
			}
			v.Pending[k] = val
			if v.Config[k] == val {
				delete(v.Pending, k)
			}
			continue
		}
		v.Config[k] = val
	}
	if n, ok := params["name"]; ok {
		v.Name = n
	}
	if strings.HasPrefix(params["ide2"], fakeISOStorage+":iso/") && !strings.Contains(v.Config["boot"], "ide2") && v.Config["boot"] != "" {
		v.Config["boot"] += ";ide2" // Proxmox appends the new CD-ROM to the boot order (fact: ide2-boot-order)
	}
	return nil
}

func (f *fakeAPI) Clone(ctx context.Context, node string, vmid int, p pveapi.CloneParams) (string, error) {
	args := map[string]string{"newid": strconv.Itoa(p.NewID), "name": p.Name, "description": p.Description,
		"storage": p.Storage, "target": p.Target, "full": "1", "pool": p.Pool}
	if err := f.enter(ctx, fakeCall{Method: "Clone", Node: node, VMID: vmid, Args: args}); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	src, err := f.qemu(node, vmid)
	if err != nil {
		return "", err
	}
	if _, taken := f.vms[p.NewID]; taken {
		return "", fixtureErrSub("err_clone_exists", "199999", strconv.Itoa(p.NewID))
	}
	target := node
	if p.Target != "" {
		target = p.Target
	}
	// As clone_vm makes it (qemu-server src/PVE/API2/Qemu.pm:4510-4611, the list in
	// clone_check.go): snapshot keys, unusedN and template not copied, a new SMBIOS uuid and
	// vmgenid, name and description from the call, disks on new volumes. The MACs are kept:
	// tests render static addresses for the template's.
	cfg := maps.Clone(src.Config)
	maps.DeleteFunc(cfg, func(k, _ string) bool { return cloneSkipRE.MatchString(k) })
	cfg["name"] = p.Name
	if p.Description != "" {
		cfg["description"] = p.Description
	}
	f.uuids++
	cfg["smbios1"] = setOption(cfg["smbios1"], "uuid", fmt.Sprintf("%08x-0000-4000-8000-%012x", p.NewID, f.uuids))
	if v := cfg["vmgenid"]; v != "" && v != "0" {
		cfg["vmgenid"] = fmt.Sprintf("%08x-0000-4000-9000-%012x", p.NewID, f.uuids)
	}
	for k, val := range cfg {
		if isDiskKey(k) && !strings.Contains(val, "media=cdrom") {
			store := strings.SplitN(val, ":", 2)[0]
			if p.Storage != "" {
				store = p.Storage
			}
			rest := val[strings.Index(val, ":")+1:]
			rest = strings.Replace(rest, fmt.Sprintf("base-%d-", vmid), fmt.Sprintf("vm-%d-", p.NewID), 1)
			cfg[k] = store + ":" + rest
		}
	}
	nv := &fakeVM{VMID: p.NewID, Node: target, Type: "qemu", Name: p.Name, Status: "stopped", Lock: "clone", Config: cfg, cloning: true}
	f.vms[p.NewID] = nv
	upid := f.newTask(node, "qmclone", strconv.Itoa(vmid), func() {
		if cur := f.vms[p.NewID]; cur == nv {
			nv.cloning, nv.Lock, nv.Pool = false, "", p.Pool
		}
	})
	if t := f.tasks[upid]; !taskSucceeded(t.exit) {
		// A failed clone removes the VM it was making, as Proxmox does.
		t.apply = func() {
			if cur := f.vms[p.NewID]; cur == nv {
				delete(f.vms, p.NewID)
			}
		}
	}
	return upid, nil
}

func (f *fakeAPI) Resize(ctx context.Context, node string, vmid int, disk, size string) (string, error) {
	if err := f.enter(ctx, fakeCall{Method: "Resize", Node: node, VMID: vmid, Args: map[string]string{"disk": disk, "size": size}}); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return "", err
	}
	if v.Lock != "" {
		return "", errLocked(v.Lock)
	}
	want, ok := parseSizeBytes(size)
	if !ok {
		return "", fixtureErr("err_bad_param")
	}
	cur, _ := diskSizeBytes(v.Config[disk])
	if want < cur {
		upid := f.newTask(node, "resize", strconv.Itoa(vmid), nil)
		f.tasks[upid].exit = fixtureExit("task_status_stopped_error")
		return upid, nil
	}
	return f.newTask(node, "resize", strconv.Itoa(vmid), func() {
		v.Config[disk] = setOption(v.Config[disk], "size", size)
	}), nil
}

func (f *fakeAPI) Start(ctx context.Context, node string, vmid int) (string, error) {
	if err := f.enter(ctx, fakeCall{Method: "Start", Node: node, VMID: vmid}); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return "", err
	}
	if v.Lock != "" && v.Lock != "suspended" {
		return "", errLocked(v.Lock)
	}
	if v.Status == "running" {
		upid := f.newTask(node, "qmstart", strconv.Itoa(vmid), nil)
		f.tasks[upid].exit = fixtureExit("task_status_start_already_running")
		return upid, nil
	}
	// Every drive's volume on the ISO storage must exist (task_status_start_volume_missing).
	for _, k := range slices.Sorted(maps.Keys(v.Config)) {
		vol, _, _ := strings.Cut(v.Config[k], ",")
		if !isDiskKey(k) || !strings.HasPrefix(vol, fakeISOStorage+":") {
			continue
		}
		if _, ok := f.isos[node+"/"+fakeISOStorage+"/"+vol]; !ok {
			upid := f.newTask(node, "qmstart", strconv.Itoa(vmid), nil)
			f.tasks[upid].exit = strings.Replace(fixtureExit("task_status_start_volume_missing"),
				"proxy-seeds:iso/proxy-reconaaaaaaaaaaa-seed.iso", vol, 1)
			return upid, nil
		}
	}
	return f.newTask(node, "qmstart", strconv.Itoa(vmid), func() {
		if v.Lock != "suspended" {
			v.applyPending()
		}
		v.Status, v.QMP, v.Lock = "running", "running", "" // a hibernated VM resumes
	}), nil
}

func (f *fakeAPI) Stop(ctx context.Context, node string, vmid int) (string, error) {
	if err := f.enter(ctx, fakeCall{Method: "Stop", Node: node, VMID: vmid}); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return "", err
	}
	if v.Lock != "" && v.Lock != "suspended" {
		return "", errLocked(v.Lock)
	}
	return f.newTask(node, "qmstop", strconv.Itoa(vmid), func() {
		if v.Status == "running" {
			v.applyPending()
		}
		v.Status, v.QMP = "stopped", "" // a paused VM stops too (fact: paused-stop)
	}), nil
}

// Shutdown: a guest that ignores it fails the task past the timeout
// (task_status_shutdown_timeout), or with ForceStop is killed and the task ends OK
// (task_status_shutdown_forced); a paused VM without ForceStop is refused.
func (f *fakeAPI) Shutdown(ctx context.Context, node string, vmid int, p pveapi.ShutdownParams) (string, error) {
	args := map[string]string{"timeout": strconv.Itoa(p.TimeoutSeconds), "forceStop": boolParam(p.ForceStop)}
	if err := f.enter(ctx, fakeCall{Method: "Shutdown", Node: node, VMID: vmid, Args: args}); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return "", err
	}
	if v.Status == "running" && v.QMP == "paused" && !p.ForceStop {
		return "", fixtureErr("err_shutdown_paused")
	}
	if v.Lock != "" && v.Lock != "suspended" {
		return "", errLocked(v.Lock)
	}
	if v.Status == "running" && v.IgnoresShutdown && !p.ForceStop {
		upid := f.newTask(node, "qmshutdown", strconv.Itoa(vmid), nil)
		f.tasks[upid].exit = fixtureExit("task_status_shutdown_timeout")
		return upid, nil
	}
	upid := f.newTask(node, "qmshutdown", strconv.Itoa(vmid), func() {
		if v.Status == "running" {
			v.applyPending()
		}
		v.Status, v.QMP = "stopped", ""
	})
	if v.Status == "running" && v.IgnoresShutdown {
		f.tasks[upid].exit = fixtureExit("task_status_shutdown_forced")
	}
	return upid, nil
}

func (v *fakeVM) applyPending() {
	for k := range v.PendingDelete {
		delete(v.Config, k)
	}
	maps.Copy(v.Config, v.Pending)
	v.Pending, v.PendingDelete = nil, nil
}

// fakeMemoryHotplug: the config's hotplug has memory and numa is on.
func fakeMemoryHotplug(cfg map[string]string) bool {
	return strings.Contains(cfg["hotplug"], "memory") && cfg["numa"] == "1"
}

func (f *fakeAPI) VMStatus(ctx context.Context, node string, vmid int) (pveapi.VMStatus, error) {
	if err := f.enter(ctx, fakeCall{Method: "VMStatus", Node: node, VMID: vmid}); err != nil {
		return pveapi.VMStatus{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return pveapi.VMStatus{}, err
	}
	st := pveapi.VMStatus{Status: v.Status, Lock: v.Lock, Name: v.Name, QMPStatus: "stopped",
		CPUs: atoiDefault(v.Config["cores"], 1), MaxMem: int64(atoiDefault(v.Config["memory"], 512)) << 20}
	if v.Status == "running" {
		st.QMPStatus = v.QMP
		if st.QMPStatus == "" {
			st.QMPStatus = "running"
		}
		st.Uptime = v.Uptime
	}
	if v.Config["agent"] != "" && v.Config["agent"][0] == '1' {
		st.Agent = 1
	}
	return st, nil
}

func (f *fakeAPI) Destroy(ctx context.Context, node string, vmid int) (string, error) {
	if err := f.enter(ctx, fakeCall{Method: "Destroy", Node: node, VMID: vmid}); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return "", err
	}
	if v.Lock != "" && v.Lock != "suspended" { // a hibernated VM is destroyable (fact: hibernated-vm)
		return "", errLocked(v.Lock)
	}
	if v.Status == "running" {
		return "", fixtureErrSub("err_destroy_running", "199999", strconv.Itoa(vmid))
	}
	return f.newTask(node, "qmdestroy", strconv.Itoa(vmid), func() {
		if f.vms[vmid] == v {
			delete(f.vms, vmid)
		}
	}), nil
}

func (f *fakeAPI) TaskStatus(ctx context.Context, node, upid string) (pveapi.TaskStatus, error) {
	if err := f.enter(ctx, fakeCall{Method: "TaskStatus", Node: node, Args: map[string]string{"upid": upid}}); err != nil {
		return pveapi.TaskStatus{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tasks[upid]
	if !ok || t.node != node {
		return pveapi.TaskStatus{}, fixtureErr("err_not_implemented") // no capture of an unknown task
	}
	st := pveapi.TaskStatus{UPID: upid, Node: node, Type: t.typ, ID: t.id, User: "proxy-operator@pve", TokenID: "tf", Status: "running"}
	if !t.done && t.polls > 0 {
		t.polls--
		return st, nil
	}
	f.completeLocked(t)
	st.Status, st.ExitStatus = "stopped", t.exit
	return st, nil
}

func (f *fakeAPI) AgentNetworkInterfaces(ctx context.Context, node string, vmid int) ([]pveapi.NetworkInterface, error) {
	if err := f.enter(ctx, fakeCall{Method: "AgentNetworkInterfaces", Node: node, VMID: vmid}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, err := f.qemu(node, vmid)
	if err != nil {
		return nil, err
	}
	switch {
	case v.Config["agent"] == "" || v.Config["agent"][0] != '1':
		return nil, fixtureErr("err_agent_not_configured")
	case v.Status != "running":
		return nil, fixtureErrSub("err_vm_not_running", "199999", strconv.Itoa(vmid))
	case v.AgentErr != nil:
		return nil, v.AgentErr
	case v.Agent == nil:
		return nil, fixtureErr("err_agent_not_running")
	}
	return slices.Clone(v.Agent), nil
}

func (f *fakeAPI) UploadISO(ctx context.Context, node, storage, filename string, r io.Reader, size int64) (string, error) {
	if err := f.enter(ctx, fakeCall{Method: "UploadISO", Node: node, Args: map[string]string{"storage": storage, "filename": filename, "size": strconv.FormatInt(size, 10)}}); err != nil {
		return "", err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.storages[node+"/"+storage]; !ok {
		return "", fixtureErr("storage_status_missing")
	}
	if !strings.HasSuffix(filename, ".iso") {
		return "", fixtureErr("err_upload_bad_name")
	}
	key := node + "/" + storage + "/" + storage + ":iso/" + filename
	return f.newTask(node, "imgcopy", "", func() { f.isos[key] = data }), nil
}

func (f *fakeAPI) DeleteVolume(ctx context.Context, node, storage, volid string) (string, error) {
	if err := f.enter(ctx, fakeCall{Method: "DeleteVolume", Node: node, Args: map[string]string{"storage": storage, "volid": volid}}); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.storages[node+"/"+storage]; !ok {
		return "", fixtureErr("storage_status_missing")
	}
	key := node + "/" + storage + "/" + volid
	return f.newTask(node, "imgdel", "", func() { delete(f.isos, key) }), nil // missing: still OK (fact: volume-delete-task)
}

// --- the fake's own tests ---

func TestFakeAPI_errorsMatchCaptures(t *testing.T) {
	ctx := context.Background()
	f := newFakeAPI()
	f.addTemplate(9001, "pv1-1", nil)
	f.addVM(&fakeVM{VMID: 100, Name: "locked", Lock: "backup", Config: map[string]string{"agent": "1"}})
	f.addVM(&fakeVM{VMID: 101, Name: "running", Status: "running", Config: map[string]string{"agent": "1"}})
	f.addVM(&fakeVM{VMID: 102, Name: "noagent", Status: "running"})

	_, err := f.VMConfig(ctx, "pv1-1", 555)
	if !isNotExist(err) {
		t.Errorf("missing VM: %v is not a does-not-exist", err)
	}
	if _, err := f.Clone(ctx, "pv1-1", 9001, pveapi.CloneParams{NewID: 100, Name: "x"}); !isAlreadyExists(err) {
		t.Errorf("taken newid: %v", err)
	}
	if err := f.SetVMConfig(ctx, "pv1-1", 100, map[string]string{"cores": "2"}); err == nil || !strings.Contains(err.Error(), "VM is locked (backup)") {
		t.Errorf("locked config write: %v", err)
	}
	if _, err := f.AgentNetworkInterfaces(ctx, "pv1-1", 101); !isAgentNotRunning(err) {
		t.Errorf("agent not running: %v", err)
	}
	if _, err := f.AgentNetworkInterfaces(ctx, "pv1-1", 102); !isNoAgentConfigured(err) {
		t.Errorf("no agent: %v", err)
	}
	if _, err := f.AgentNetworkInterfaces(ctx, "pv1-1", 100); !isVMNotRunning(err) {
		t.Errorf("VM not running: %v", err)
	}
	if _, err := f.Destroy(ctx, "pv1-1", 101); !isRunningDestroyFailed(err) {
		t.Errorf("destroy running: %v", err)
	}
}

func TestFakeAPI_cloneIsNamelessUntilTaskCompletes(t *testing.T) {
	ctx := context.Background()
	f := newFakeAPI()
	f.addTemplate(9001, "pv1-1", nil)
	upid, err := f.Clone(ctx, "pv1-1", 9001, pveapi.CloneParams{NewID: 199999, Name: "proxy-a", Description: "d"})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := f.ClusterResources(ctx)
	mid := fixture.MustLoad("cluster_resources_mid_clone")
	var want []pveapi.Resource
	if err := mid.Data(&want); err != nil {
		t.Fatal(err)
	}
	got, _ := findResource(res, 199999)
	capt, _ := findResource(want, 199999)
	if got.Name != capt.Name || got.Lock != capt.Lock || got.Status != capt.Status {
		t.Errorf("mid-clone entry %+v, capture %+v", got, capt)
	}
	if st, _ := f.TaskStatus(ctx, "pv1-1", upid); st.Status != "stopped" || st.ExitStatus != "OK" {
		t.Fatalf("task %+v", st)
	}
	res, _ = f.ClusterResources(ctx)
	if got, _ := findResource(res, 199999); got.Name != "proxy-a" || got.Lock != "" {
		t.Errorf("after the task: %+v", got)
	}
}

// TestFakeAPI_startNeedsEveryISOVolume: a start whose drive names a missing volume on the
// ISO storage fails as task_status_start_volume_missing does, naming that volume.
func TestFakeAPI_startNeedsEveryISOVolume(t *testing.T) {
	ctx := context.Background()
	f := newFakeAPI()
	vol := seedVolID(fakeISOStorage, seedFile("proxy-a", testUID))
	f.addVM(&fakeVM{VMID: 100, Name: "proxy-a", Config: map[string]string{"ide2": vol + ",media=cdrom"}})
	upid, err := f.Start(ctx, "pv1-1", 100)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.TaskStatus(ctx, "pv1-1", upid)
	got, ok := pveapi.MissingVolume(&pveapi.TaskError{UPID: upid, ExitStatus: st.ExitStatus})
	if !ok || got != vol || f.vm(100).Status != "stopped" {
		t.Errorf("exitstatus %q: MissingVolume %q, %t; status %s", st.ExitStatus, got, ok, f.vm(100).Status)
	}
	f.putISO("pv1-1", fakeISOStorage, seedFile("proxy-a", testUID), []byte("iso"))
	upid, _ = f.Start(ctx, "pv1-1", 100)
	if st, _ := f.TaskStatus(ctx, "pv1-1", upid); st.ExitStatus != "OK" || f.vm(100).Status != "running" {
		t.Errorf("with the seed back: %+v", st)
	}
}

// CPUModels answers the capabilities_qemu_cpu fixture on every node.
func (f *fakeAPI) CPUModels(ctx context.Context, node string) ([]pveapi.CPUModel, error) {
	if err := f.enter(ctx, fakeCall{Method: "CPUModels", Node: node}); err != nil {
		return nil, err
	}
	var out []pveapi.CPUModel
	if err := fixture.MustLoad("capabilities_qemu_cpu").Data(&out); err != nil {
		return nil, err
	}
	return out, nil
}
