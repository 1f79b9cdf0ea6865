package proxmox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// PreflightSpec is what a create will use, as far as the cluster must provide it: the node
// (already resolved), the template, the disk size and the network settings.
type PreflightSpec struct {
	Node         string
	TemplateVMID int
	DiskGiB      int    // 0: the template's size
	Bridge       string // "": as cloned
	VLANTag      int    // 0: as cloned
}

// Subject names the part of the configuration a preflight verdict is about, so that the
// caller can put the diagnostic on the attribute that holds it.
type Subject string

// The subjects of a preflight verdict.
const (
	SubjectNode       Subject = "node"
	SubjectISOStorage Subject = "iso_storage"
	SubjectStorage    Subject = "storage"
	SubjectTemplate   Subject = "template"
	SubjectDisk       Subject = "disk"
	SubjectBridge     Subject = "bridge"
)

// PreflightError is a preflight verdict: the cluster lacks something the create needs, and
// nothing was touched. Err is an *Error (Permanent, except for a node that does not answer)
// saying what is wrong and what to fix.
type PreflightError struct {
	Subject Subject
	Err     *Error
}

func (e *PreflightError) Error() string { return e.Err.Error() }

// Unwrap returns the *Error, so that ClassOf and errors.As see its class.
func (e *PreflightError) Unwrap() error { return e.Err }

// preflightCache holds the verdicts of one Backend (one provider instance): each check runs
// once per key, concurrent callers of the same key share the one request in flight, and only
// definitive answers are kept (a check that failed for a passing reason runs again).
type preflightCache struct {
	mu      sync.Mutex
	done    map[string]preflightResult
	flights map[string]*preflightFlight
}

type preflightResult struct {
	val any // the check's value (a template config, a bridge list), or nil
	err error
}

type preflightFlight struct {
	done chan struct{}
	res  preflightResult
}

// once runs check for key unless a definitive result is cached or a call is in flight,
// whose result it then shares. check's result is cached unless keep says otherwise.
func (c *preflightCache) once(ctx context.Context, key string, check func(context.Context) (any, error),
	keep func(error) bool) (any, error) {
	if c == nil { // a Backend not made by New
		return check(ctx)
	}
	c.mu.Lock()
	if r, ok := c.done[key]; ok {
		c.mu.Unlock()
		return r.val, r.err
	}
	if f, ok := c.flights[key]; ok {
		c.mu.Unlock()
		select {
		case <-f.done:
			return f.res.val, f.res.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if c.flights == nil {
		c.flights, c.done = map[string]*preflightFlight{}, map[string]preflightResult{}
	}
	f := &preflightFlight{done: make(chan struct{})}
	c.flights[key] = f
	c.mu.Unlock()

	val, err := check(ctx)
	f.res = preflightResult{val: val, err: err}
	c.mu.Lock()
	delete(c.flights, key)
	if keep(err) {
		c.done[key] = f.res
	}
	c.mu.Unlock()
	close(f.done)
	return val, err
}

// definitive is a result worth caching: success, or a verdict that will not change within
// one run (a Permanent verdict). A node that does not answer, a passing failure or an ended
// ctx is asked again by the next caller.
func definitive(err error) bool {
	if err == nil {
		return true
	}
	var pe *PreflightError
	return errors.As(err, &pe) && pe.Err.Class == pveapi.Permanent
}

// Preflight checks, before anything is touched, that the cluster has what a create of s needs
// (decision: preflight): the node, the storages, the template, the bridge and the disk size.
// A mistake is a *PreflightError naming its Subject; any other error is a check that failed,
// Permanent when no create can work either, Transient to leave the verdict to Create. Each
// check runs once per Backend and key, so a plan of many VMs costs a constant number of
// requests.
func (b *Backend) Preflight(ctx context.Context, s PreflightSpec) error {
	if s.Node == "" {
		if len(b.cfg.Nodes) != 1 {
			return nil // Create's own check names the missing node
		}
		s.Node = b.cfg.Nodes[0]
	}
	checks := []func(context.Context, PreflightSpec) error{
		b.preflightNode, b.preflightStorages, b.preflightTemplate, b.preflightBridge,
	}
	for _, check := range checks {
		if err := check(ctx, s); err != nil {
			var pe *PreflightError
			if errors.As(err, &pe) {
				tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox preflight refused", map[string]any{
					"node": s.Node, "template_vmid": s.TemplateVMID, "subject": string(pe.Subject), "error": err.Error(),
				})
			}
			return err
		}
	}
	return nil
}

func refuse(subject Subject, class pveapi.Class, format string, args ...any) *PreflightError {
	return &PreflightError{Subject: subject, Err: &Error{Class: class, Op: "preflight", Err: fmt.Errorf(format, args...)}}
}

// passOn is a failure of a check's own request: Permanent ones stop the preflight with what
// the request said; anything else is left to Create (nil).
func passOn(ctx context.Context, what string, err error) error {
	if classify("check", err) == pveapi.Permanent {
		return apiErrorf("check", err, "%s", what)
	}
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox preflight check skipped", map[string]any{"check": what, "error": err.Error()})
	return nil
}

func (b *Backend) preflightNode(ctx context.Context, s PreflightSpec) error {
	_, err := b.pre.once(ctx, "node:"+s.Node, func(ctx context.Context) (any, error) {
		_, err := b.api.NodeStatus(ctx, s.Node)
		switch {
		case err == nil:
			return nil, nil
		case pveapi.IsUnknownNode(err):
			return nil, refuse(SubjectNode, pveapi.Permanent, "node %q is not a node of the cluster at %s (%v); use a "+
				"node name as `pvecm nodes` or the Proxmox web UI lists it",
				s.Node, b.cfg.Endpoint, err)
		case pveapi.IsProxyFailure(err):
			return nil, refuse(SubjectNode, pveapi.Transient, "node %q does not answer (%v); bring it back, or place "+
				"the VM on another node", s.Node, err)
		}
		return nil, passOn(ctx, "reading the status of node "+s.Node, err)
	}, definitive)
	return err
}

// preflightStorages checks the ISO storage (iso content) and the clone storage (images
// content, when the provider sets one) on the VM's node.
func (b *Backend) preflightStorages(ctx context.Context, s PreflightSpec) error {
	if err := b.preflightStorage(ctx, s.Node, b.cfg.ISOStorage, "iso", SubjectISOStorage); err != nil {
		return err
	}
	if b.cfg.Storage == "" {
		return nil
	}
	return b.preflightStorage(ctx, s.Node, b.cfg.Storage, "images", SubjectStorage)
}

func (b *Backend) preflightStorage(ctx context.Context, node, storage, content string, subject Subject) error {
	if storage == "" {
		return nil
	}
	role := "the ISO storage for the seed ISOs"
	if subject == SubjectStorage {
		role = "the storage for the clones' disks"
	}
	_, err := b.pre.once(ctx, "storage:"+node+":"+storage+":"+content, func(ctx context.Context) (any, error) {
		st, err := b.api.StorageStatus(ctx, node, storage)
		switch {
		case err == nil:
		case pveapi.IsMissingStorage(err):
			return nil, refuse(subject, pveapi.Permanent, "storage %q (%s) does not exist in the cluster (%v); use a "+
				"storage id that `pvesm status` lists on node %s",
				storage, role, err, node)
		case pveapi.IsProxyFailure(err):
			return nil, nil // the node check reports a node that does not answer
		default:
			var ae *pveapi.APIError
			if errors.As(err, &ae) && ae.Status == 500 && !pveapi.IsLocked(err) {
				// Proxmox refuses the storage on this node (restricted to other nodes, or
				// unavailable): the create would fail the same way.
				return nil, refuse(subject, pveapi.Permanent, "storage %q (%s) cannot be used on node %s (%v); make "+
					"it available on that node in Datacenter > Storage, or use another storage",
					storage, role, node, err)
			}
			return nil, passOn(ctx, "reading the status of storage "+storage+" on node "+node, err)
		}
		switch {
		case st.Enabled != 1:
			return nil, refuse(subject, pveapi.Permanent, "storage %q (%s) is disabled; enable it in Datacenter > "+
				"Storage, or use another storage", storage, role)
		case st.Active != 1:
			return nil, refuse(subject, pveapi.Permanent, "storage %q (%s) is not active on node %s; check that it is "+
				"mounted or reachable from that node (`pvesm status`)", storage, role, node)
		case !slices.Contains(contentTypes(st.Content), content):
			return nil, refuse(subject, pveapi.Permanent, "storage %q (%s) does not hold %s content (its content: "+
				"%s); add %s to its content types in Datacenter > Storage, or use another storage",
				storage, role, content, st.Content, content)
		}
		return nil, nil
	}, definitive)
	return err
}

// preflightTemplate runs Create's template checks (checkTemplate) once per template, then
// the checks that depend on the VM (net0 for a bridge or VLAN tag, disk_gib against the boot
// disk) on the config it read.
func (b *Backend) preflightTemplate(ctx context.Context, s PreflightSpec) error {
	if s.TemplateVMID <= 0 {
		return nil
	}
	val, err := b.templateVerdict(ctx, s.TemplateVMID, nil)
	if err != nil {
		return err
	}
	cfg, _ := val.(map[string]string)
	if cfg == nil {
		return nil
	}
	if (s.Bridge != "" || s.VLANTag != 0) && cfg["net0"] == "" {
		return refuse(SubjectBridge, pveapi.Permanent, "template %d has no net0, so the bridge and VLAN tag cannot be "+
			"set; add a network device to the template, or unset bridge and vlan_tag", s.TemplateVMID)
	}
	if s.DiskGiB > 0 {
		_, size, ok := bootDiskSize(cfg)
		switch {
		case !ok:
			return refuse(SubjectDisk, pveapi.Permanent, "template %d has no boot disk with a readable size=, so "+
				"disk_gib cannot be applied; give the template a boot disk or unset disk_gib", s.TemplateVMID)
		case size > int64(s.DiskGiB)*gib:
			return refuse(SubjectDisk, pveapi.Permanent, "disk_gib = %d is below the boot disk of template %d (%s), "+
				"and a disk is never shrunk; set disk_gib to at least %d, or remove it to keep the template's size",
				s.DiskGiB, s.TemplateVMID, humanGiB(size), ceilGiB(size))
		}
	}
	return nil
}

// templateVerdict runs Create's template checks (checkTemplate) on template vmid once per
// Backend: the template's config, or a *PreflightError saying why no VM can be made of it.
// res is a listing to find the template in (nil: the shared listing).
func (b *Backend) templateVerdict(ctx context.Context, vmid int, res []pveapi.Resource) (any, error) {
	return b.pre.once(ctx, "template:"+strconv.Itoa(vmid), func(ctx context.Context) (any, error) {
		if res == nil {
			var err error
			if res, err = b.listing(ctx, false); err != nil {
				return nil, passOn(ctx, "listing the cluster's VMs", err)
			}
		}
		rec := &configRecorder{API: b.api}
		c := &creation{b: &Backend{api: rec, cfg: b.cfg, clock: b.clock, listings: b.listings, locks: b.locks}, s: Spec{TemplateVMID: vmid}}
		if _, err := c.checkTemplate(ctx, res); err != nil {
			var e *Error
			if errors.As(err, &e) && e.Class == pveapi.Permanent && !isAPIFailure(err) {
				// A verdict on what checkTemplate read: missing, not a template, disqualified.
				return nil, &PreflightError{Subject: SubjectTemplate, Err: &Error{Class: pveapi.Permanent, Op: "preflight", Err: e.Err}}
			}
			return nil, passOn(ctx, fmt.Sprintf("reading template %d", vmid), err)
		}
		return rec.cfg, nil
	}, definitive)
}

// isAPIFailure reports whether err carries a seam failure (an answer or a transport error),
// as opposed to a verdict checkTemplate made from what it read.
func isAPIFailure(err error) bool {
	var ae *pveapi.APIError
	if errors.As(err, &ae) {
		return !isNotExist(err)
	}
	return pveapi.IsUnreachable(err) || pveapi.IsTLSVerification(err) || pveapi.IsCredentials(err) || pveapi.IsCAUnavailable(err) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

func humanGiB(n int64) string {
	if n%gib == 0 {
		return strconv.FormatInt(n/gib, 10) + " GiB"
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/float64(gib))
}

// configRecorder passes every call to API and keeps the config VMConfig last answered, so
// that checkTemplate's one read serves the preflight's own checks too.
type configRecorder struct {
	pveapi.API
	mu  sync.Mutex
	cfg map[string]string
}

func (r *configRecorder) VMConfig(ctx context.Context, node string, vmid int) (map[string]string, error) {
	cfg, err := r.API.VMConfig(ctx, node, vmid)
	if err == nil {
		r.mu.Lock()
		r.cfg = cfg
		r.mu.Unlock()
	}
	return cfg, err
}

// preflightBridge checks that the bridge is one of the node's bridges (GET
// /nodes/{node}/network?type=any_bridge, once per node). Proxmox lists only the bridges the
// token may use, so the message names both causes. A failure of the listing itself is left
// to Create unless it is Permanent.
func (b *Backend) preflightBridge(ctx context.Context, s PreflightSpec) error {
	if s.Bridge == "" {
		return nil
	}
	val, err := b.pre.once(ctx, "network:"+s.Node, func(ctx context.Context) (any, error) {
		ifaces, err := b.api.NodeNetwork(ctx, s.Node, "any_bridge")
		if err != nil {
			var ae *pveapi.APIError
			if errors.As(err, &ae) && ae.Status != 401 {
				// Not a verdict on the bridge (an older API, a refusal of the listing):
				// the create reports what the bridge does.
				tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox preflight bridge check skipped", map[string]any{"node": s.Node, "error": err.Error()})
				return nil, nil
			}
			return nil, passOn(ctx, "listing the bridges of node "+s.Node, err)
		}
		names := make([]string, 0, len(ifaces))
		for _, i := range ifaces {
			names = append(names, i.Iface)
		}
		slices.Sort(names)
		return names, nil
	}, definitive)
	if err != nil {
		return err
	}
	names, ok := val.([]string)
	if !ok || slices.Contains(names, s.Bridge) {
		return nil
	}
	listed := "none"
	if len(names) > 0 {
		listed = strings.Join(names, ", ")
	}
	return refuse(SubjectBridge, pveapi.Permanent, "bridge %q is not a bridge of node %s (the bridges the API token may use there: %s); "+
		"use one of them, or create the bridge, or grant the token SDN.Use on /sdn/zones/localnetwork/%s",
		s.Bridge, s.Node, listed, s.Bridge)
}
