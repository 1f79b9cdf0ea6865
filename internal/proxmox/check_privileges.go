package proxmox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// The health check's privilege round (decision: health-check, fact: pool-privileges): what
// the provider needs on the templates, the pool (or /vms), the storages and the bridges,
// compared with GET /access/permissions?path= for each path, which reports the token's
// effective privileges (for a privilege-separated token, what its user and its own ACLs
// both grant, pool roles included). A privilege that is missing is named with its path.

// needPriv is one privilege the provider needs on a path. Any lists alternatives (any of
// them will do); propagated asks that it reach the paths below (a grant on /vms for the
// VMs at /vms/<vmid>).
type needPriv struct {
	path       string
	privs      []string // all of them
	any        []string // one of them, when set
	propagated bool
	why        string
}

// vmPrivileges are what the provider does to its VMs: read config and status (VM.Audit),
// write cores, memory, net0, ide2, description, tags, onboot, agent and protection
// (VM.Config.*), resize (VM.Config.Disk), start, stop and shut down (VM.PowerMgmt),
// destroy and clone onto a VMID (VM.Allocate), and read the guest agent.
var vmPrivileges = []string{"VM.Allocate", "VM.Audit", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Disk",
	"VM.Config.Memory", "VM.Config.Network", "VM.Config.Options", "VM.PowerMgmt"}

// privilegeNeeds lists what the provider's defaults need, given the listing (for the
// templates' nodes) and the templates' configs (their disks' storages and their bridges,
// which a clone checks too).
func (b *Backend) privilegeNeeds(templates map[int]map[string]string) []needPriv {
	var out []needPriv
	for _, vmid := range slices.Sorted(maps.Keys(b.templateVMIDs())) {
		out = append(out, needPriv{path: "/vms/" + strconv.Itoa(vmid), privs: []string{"VM.Audit", "VM.Clone"},
			why: fmt.Sprintf("read and clone template %d", vmid)})
	}
	privs := slices.Clone(vmPrivileges)
	if len(b.cfg.Nodes) > 1 {
		privs = append(privs, "VM.Migrate")
	}
	agent := []string{"VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"}
	if b.cfg.Pool != "" {
		p := "/pool/" + b.cfg.Pool
		out = append(out,
			needPriv{path: p, privs: privs, why: "make and manage the VMs of pool " + b.cfg.Pool},
			needPriv{path: p, any: agent, why: "read the VMs' addresses from the guest agent"},
			needPriv{path: p, privs: []string{"Pool.Audit"}, why: "read the VMs' pool back"})
	} else {
		out = append(out,
			needPriv{path: "/vms", privs: privs, propagated: true, why: "make and manage the VMs (no pool is set)"},
			needPriv{path: "/vms", any: agent, propagated: true, why: "read the VMs' addresses from the guest agent"})
	}
	if iso := b.cfg.ISOStorage; iso != "" {
		out = append(out, needPriv{path: "/storage/" + iso, privs: []string{"Datastore.AllocateTemplate", "Datastore.Allocate"},
			why: "upload and delete the seed ISOs"})
	}
	disks := map[string]bool{}
	if b.cfg.Storage != "" {
		disks[b.cfg.Storage] = true
	}
	bridges := map[string]bool{}
	if b.cfg.Bridge != "" {
		bridges[sdnPath(b.cfg.Bridge, b.cfg.VLANTag)] = true
	}
	for _, cfg := range templates {
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			v := cfg[k]
			switch {
			case volumeKeyRE.MatchString(k) && !strings.Contains(v, "media=cdrom") && b.cfg.Storage == "":
				if sid, _, ok := strings.Cut(driveVolume(v), ":"); ok && sid != "" && sid != "none" {
					disks[sid] = true
				}
			case netKeyRE.MatchString(k):
				n := parseNet0(v)
				if n.Bridge != "" {
					bridges[sdnPath(n.Bridge, n.Tag)] = true
				}
			}
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(disks)) {
		out = append(out, needPriv{path: "/storage/" + sid, privs: []string{"Datastore.AllocateSpace"}, why: "clone " +
			"the disks onto storage " + sid})
	}
	for _, p := range slices.Sorted(maps.Keys(bridges)) {
		out = append(out, needPriv{path: p, privs: []string{"SDN.Use"}, why: "attach the VMs' network to " +
			"" + strings.TrimPrefix(p, "/sdn/zones/localnetwork/")})
	}
	return out
}

// netKeyRE names a NIC's config key; volumeKeyRE a volume's (the clone checks every one).
var (
	netKeyRE    = regexp.MustCompile(`^net[0-9]+$`)
	volumeKeyRE = regexp.MustCompile(`^(?:(?:ide|sata|scsi|virtio)[0-9]+|efidisk0|tpmstate0)$`)
)

// sdnPath is the path check_vnet_access asks SDN.Use on: the bridge, or its VLAN.
func sdnPath(bridge string, tag int) string {
	p := "/sdn/zones/localnetwork/" + bridge
	if tag > 0 {
		p += "/" + strconv.Itoa(tag)
	}
	return p
}

// templateVMIDs are the catalogue's distinct template VMIDs.
func (b *Backend) templateVMIDs() map[int]bool {
	out := map[int]bool{}
	for _, v := range b.cfg.Templates {
		out[v] = true
	}
	return out
}

// missingPriv is a privilege the token lacks: the privilege (several joined by " or " when
// any would do), its path, and what the provider needs it for.
type missingPriv struct {
	priv, path, why string
}

func (m missingPriv) String() string { return m.priv + " on " + m.path }

// privilegeRound is one health read's privilege check, shared by its nodes' rounds.
type privilegeRound struct {
	once    sync.Once
	missing []missingPriv
	err     error
}

// run reads the templates' configs (those the listing shows) and the token's privileges on
// every path the provider needs, and lists what is missing.
func (p *privilegeRound) run(ctx context.Context, b *Backend, res []pveapi.Resource) ([]missingPriv, error) {
	p.once.Do(func() { p.missing, p.err = b.missingPrivileges(ctx, res) })
	return p.missing, p.err
}

func (b *Backend) missingPrivileges(ctx context.Context, res []pveapi.Resource) ([]missingPriv, error) {
	templates := map[int]map[string]string{}
	for vmid := range b.templateVMIDs() {
		r, ok := findResource(res, vmid)
		if !ok || r.Type != "qemu" {
			continue
		}
		// The preflight's verdict on the template has its config (one read for the plan's
		// checks, the health check's and this round). A template it refused makes no VM, so
		// no privilege its config would name is needed; a verdict that could not be made
		// (an API failure) leaves the read to this round.
		v, err := b.templateVerdict(ctx, vmid, res)
		var pe *PreflightError
		switch {
		case err == nil:
			if cfg, ok := v.(map[string]string); ok && cfg != nil {
				templates[vmid] = cfg
				continue
			}
		case errors.As(err, &pe):
			continue
		}
		cfg, err := b.api.VMConfig(ctx, r.Node, vmid)
		if err != nil {
			continue // not readable: its VM.Audit is reported below, or it is gone
		}
		templates[vmid] = cfg
	}
	needs := b.privilegeNeeds(templates)
	// One read per path, at once (the client bounds how many run together).
	var paths []string
	for _, n := range needs {
		if !slices.Contains(paths, n.path) {
			paths = append(paths, n.path)
		}
	}
	have := map[string]map[string]bool{}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, path := range paths {
		wg.Go(func() {
			privs, err := b.api.Permissions(ctx, path)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			have[path] = privs
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	var missing []missingPriv
	for _, n := range needs {
		privs := have[n.path]
		holds := func(priv string) bool {
			prop, ok := privs[priv]
			return ok && (prop || !n.propagated)
		}
		for _, priv := range n.privs {
			if !holds(priv) {
				missing = append(missing, missingPriv{priv, n.path, n.why})
			}
		}
		if len(n.any) > 0 && !slices.ContainsFunc(n.any, holds) {
			missing = append(missing, missingPriv{strings.Join(n.any, " or "), n.path, n.why})
		}
	}
	return missing, nil
}
