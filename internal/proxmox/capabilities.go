package proxmox

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// CPU models (decision: cpu-type-check). A cpu_type Proxmox does not know is refused only
// when the config is written (qemu-server src/PVE/QemuServer/CPUConfig.pm
// validate_vm_cpu_conf), after the clone of a create; the plan checks it first against the
// node's list, GET /nodes/{node}/capabilities/qemu/cpu (src/PVE/API2/Qemu/CPU.pm index),
// read once per node per provider instance, only for a cpu_type that is set and changes.

// cpuModelCache holds each node's CPU models, or the error reading them ended with.
type cpuModelCache struct {
	mu    sync.Mutex
	nodes map[string]*cpuModelEntry
}

type cpuModelEntry struct {
	once   sync.Once
	models []pveapi.CPUModel
	err    error
}

// CPUTypeVerdict is what CheckCPUType says of a CPU model on a node.
type CPUTypeVerdict struct {
	// Known: the node lists the model.
	Known bool
	// Hidden: a custom-<id> model the node does not list: the list shows a token only the
	// custom models it may see (Sys.Audit on /nodes, or Mapping.Audit, Mapping.Use or
	// Mapping.Modify on /mapping/cpu/<id>), so whether it exists is not known.
	Hidden bool
	// Models are the node's models, sorted: the ones of its architecture, then the
	// built-in abstract profiles (x86-64-v2-AES...), then the custom ones it lists.
	Models []string
}

// CheckCPUType reads (once per node per provider instance) the CPU models node knows and
// says whether cputype is one of them. The list is the node's own architecture's
// (CPUConfig.pm get_cpu_models with no arch): a model of another architecture, which a
// config write accepts (get_all_cpu_models spans every one) but a VM of this node's cannot
// run, is not Known. A failed read is returned (and kept for the other checks of this
// instance): the caller warns that the type could not be checked.
func (b *Backend) CheckCPUType(ctx context.Context, node, cputype string) (CPUTypeVerdict, error) {
	models, err := b.cpuModels(ctx, node)
	if err != nil {
		return CPUTypeVerdict{}, apiErrorf("plan", err, "reading the CPU models of node %s", node)
	}
	var v CPUTypeVerdict
	var arch, abstract, custom []string
	for _, m := range models {
		switch {
		case m.Custom != 0:
			custom = append(custom, m.Name)
		case m.Abstract != 0:
			abstract = append(abstract, m.Name)
		default:
			arch = append(arch, m.Name)
		}
		v.Known = v.Known || m.Name == cputype
	}
	for _, l := range [][]string{arch, abstract, custom} {
		slices.SortFunc(l, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
		v.Models = append(v.Models, l...)
	}
	v.Hidden = !v.Known && strings.HasPrefix(cputype, "custom-")
	return v, nil
}

// cpuModels is node's list, read at most once per provider instance.
func (b *Backend) cpuModels(ctx context.Context, node string) ([]pveapi.CPUModel, error) {
	c := b.cpus
	c.mu.Lock()
	if c.nodes == nil {
		c.nodes = map[string]*cpuModelEntry{}
	}
	e, ok := c.nodes[node]
	if !ok {
		e = &cpuModelEntry{}
		c.nodes[node] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		e.models, e.err = b.api.CPUModels(ctx, node)
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox cpu models read", map[string]any{"node": node,
			"models": len(e.models), "failed": e.err != nil})
	})
	return e.models, e.err
}
