package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// vmSize is the size facet (vm_facet.go): cores, memory, the boot disk, the CPU type and
// the CPU weight. Without them in the configuration the sizes come from the machine type
// (machine_type).
type vmSize struct {
	Cores     types.Int64  `tfsdk:"cores"`
	MemoryMiB types.Int64  `tfsdk:"memory_mib"`
	DiskGiB   types.Int64  `tfsdk:"disk_gib"`
	CPUType   types.String `tfsdk:"cpu_type"`
	CPUUnits  types.Int64  `tfsdk:"cpu_units"`
}

// cpuTypeRE is a CPU model name as qemu-server's CPU models are named (CPUConfig.pm
// $cpu_fmt cputype, a built-in model such as host, x86-64-v2-AES, Skylake-Server-v4 or
// Opteron_G5, or custom-<id>): no ',', '=', ';' or line break, which would break out of
// the cpu property string.
var cpuTypeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// sizeAttrs are the size facet's attributes.
func sizeAttrs() []facetAttr {
	return []facetAttr{{
		name:   "cores",
		md:     "Virtual CPU cores.",
		change: "Default: the machine type's. A change restarts a running VM gracefully, announced in the plan (see [Restarts](#restarts)).",
		resource: schema.Int64Attribute{
			Optional: true, Computed: true,
			Validators:    []validator.Int64{int64validator.Between(1, 512)},
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
		},
	}, {
		name: "memory_mib",
		md:   "Memory in MiB.",
		change: "Default: the machine type's. " +
			"A change restarts a running VM gracefully, or applies at once in DIMM steps on a VM with memory hotplug (see [Restarts](#restarts)).",
		resource: schema.Int64Attribute{
			Optional: true, Computed: true,
			Validators:    []validator.Int64{int64validator.AtLeast(16)},
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
		},
	}, {
		name: "disk_gib",
		md:   "Size of the boot disk in GiB.",
		change: "Default: the larger of the template's disk and the machine type's `disk_gib`; " +
			"never below the template's. Growing it resizes in place; shrinking it replaces the VM.",
		read: "Null when the VM's config names no boot disk size.",
		resource: schema.Int64Attribute{
			Optional: true, Computed: true,
			Validators:    []validator.Int64{int64validator.Between(1, 65536)},
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), diskShrinkRequiresReplace()},
		},
	}, {
		name:   "cpu_type",
		md:     "The emulated CPU type (Proxmox's `cpu` option), such as `host`, `x86-64-v2-AES` or `kvm64`.",
		change: "Checked at plan against the node's CPU models. A change restarts a running VM (see [Restarts](#restarts)).",
		read: "The configured value (the VM's config, pending changes included): after a change it may " +
			"differ from what the VM runs with until the VM restarts. Null when the VM's config has no `cpu` " +
			"option (Proxmox's default, `kvm64`).",
		resource: schema.StringAttribute{
			Optional: true, Computed: true,
			Validators: []validator.String{stringvalidator.RegexMatches(cpuTypeRE,
				"must be a CPU model name: letters, digits, '-', '_' and '.', such as host or x86-64-v2-AES")},
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}, {
		// qemu-server PVE/QemuServer.pm confdesc cpuunits: 1 to 262144, clamped in cgroup v2.
		name:   "cpu_units",
		md:     "CPU weight against other VMs (Proxmox's `cpuunits`): 1 to 262144, clamped to 10000.",
		change: "Unset: left as it is (Proxmox's default: 100). Changed in place, no restart.",
		read:   "Null when the VM's config has no `cpuunits` option.",
		resource: schema.Int64Attribute{
			Optional: true, Computed: true,
			Validators:    []validator.Int64{int64validator.Between(1, 262144)},
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
		},
	}}
}

// read takes the sizes of the VM as the backend read it (what a running VM runs with).
func (s *vmSize) read(fc *facetCtx) {
	vm := fc.vm
	s.Cores = intOrNull(vm.Cores)
	s.MemoryMiB = intOrNull(vm.MemoryMiB)
	s.DiskGiB = intOrNull(vm.DiskGiB)
	s.CPUType = stringOrNull(vm.Options["cpu"])
	s.CPUUnits = types.Int64Null()
	if n, err := strconv.Atoi(vm.Options["cpuunits"]); err == nil {
		s.CPUUnits = types.Int64Value(int64(n))
	}
}

// nullUnknown nulls the values still unknown (the partial state of a create).
func (s *vmSize) nullUnknown() {
	for _, n := range []*types.Int64{&s.Cores, &s.MemoryMiB, &s.DiskGiB, &s.CPUUnits} {
		if n.IsUnknown() {
			*n = types.Int64Null()
		}
	}
	if s.CPUType.IsUnknown() {
		s.CPUType = types.StringNull()
	}
}

// spec puts the planned sizes into a create; a disk_gib the plan leaves unknown is the
// machine type's (fc.machineType, nil when none), or the template's.
func (s vmSize) spec(fc *facetCtx) {
	spec, mt := fc.spec, fc.machineType
	if v, ok := knownInt(s.Cores); ok {
		spec.Cores = v
	}
	if v, ok := knownInt(s.MemoryMiB); ok {
		spec.MemoryMiB = v
	}
	if v, ok := knownInt(s.DiskGiB); ok {
		spec.DiskGiB = v
	} else if mt != nil {
		spec.DiskGiB = mt.DiskGiB
	}
	if v, ok := knownString(s.CPUType); ok {
		if spec.Options == nil {
			spec.Options = map[string]string{}
		}
		spec.Options["cpu"] = v
	}
	if v, ok := knownInt(s.CPUUnits); ok {
		if spec.Options == nil {
			spec.Options = map[string]string{}
		}
		spec.Options["cpuunits"] = strconv.Itoa(v)
	}
}

// changes puts the sizes that change from the prior ones into an update.
func (s vmSize) changes(fc *facetCtx) {
	prior, c := fc.prior.vmSize, fc.changes
	c.Cores = intChange(prior.Cores, s.Cores)
	c.MemoryMiB = intChange(prior.MemoryMiB, s.MemoryMiB)
	c.DiskGiB = intChange(prior.DiskGiB, s.DiskGiB)
	changed := c.Cores != nil || c.MemoryMiB != nil || c.DiskGiB != nil
	if v, ok := knownString(s.CPUType); ok && !s.CPUType.Equal(prior.CPUType) {
		if c.Options == nil {
			c.Options = map[string]string{}
		}
		c.Options["cpu"], changed = v, true
	}
	if v, ok := knownInt(s.CPUUnits); ok && !s.CPUUnits.Equal(prior.CPUUnits) {
		if c.Options == nil {
			c.Options = map[string]string{}
		}
		c.Options["cpuunits"], changed = strconv.Itoa(v), true
	}
	fc.changed = fc.changed || changed
}

// intChange is the new value of an integer attribute when it is known and differs from
// prior, else nil.
func intChange(prior, planned types.Int64) *int {
	v, ok := knownInt(planned)
	if !ok || planned.Equal(prior) {
		return nil
	}
	return &v
}

// plan completes the sizes from the machine type (planSize) and checks a cpu_type that
// changes against the node's CPU models (planCPUType).
func (s *vmSize) plan(fc *facetCtx) {
	if fc.cfg != nil {
		fc.diags.Append(planSize(fc.cfg, fc.config, fc.m, fc.prior)...)
	}
	if fc.r != nil {
		fc.diags.Append(fc.r.planCPUType(fc.r.data.withLogging(fc.ctx), fc.config, fc.m, fc.prior)...)
	}
}

// planSize gives cores and memory_mib the machine type's values where the configuration
// leaves them out, and disk_gib the machine type's when it grows the disk.
func planSize(cfg *resolvedConfig, config proxyVMModel, plan, prior *proxyVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	creating := prior == nil
	var mt *machineType
	mtUnknown := config.MachineType.IsUnknown()
	if key, ok := knownString(config.MachineType); ok {
		m, err := cfg.MachineType(key)
		if err != nil {
			diags.AddAttributeError(path.Root("machine_type"), summaryInvalidConfig,
				err.Error()+". Set machine_type to one of the provider's machine types, add it to the provider's "+
					"machine_types, or set cores and memory_mib instead.")
		} else {
			mt = &m
		}
	}
	sized := func(cfgVal types.Int64, fromType func(machineType) int, dst *types.Int64, priorVal func() types.Int64) {
		if !cfgVal.IsNull() {
			return // set in the configuration (or unknown): the plan carries it
		}
		switch {
		case mt != nil:
			*dst = types.Int64Value(int64(fromType(*mt)))
		case mtUnknown:
			*dst = types.Int64Unknown()
		case !creating:
			*dst = priorVal()
		}
	}
	sized(config.Cores, func(m machineType) int { return m.Cores }, &plan.Cores, func() types.Int64 { return prior.Cores })
	sized(config.MemoryMiB, func(m machineType) int { return m.MemoryMiB }, &plan.MemoryMiB, func() types.Int64 { return prior.MemoryMiB })
	if !config.DiskGiB.IsNull() {
		return diags
	}
	switch {
	case creating:
		// The larger of the template's disk and the machine type's: known after the clone.
		plan.DiskGiB = types.Int64Unknown()
	case mtUnknown:
		plan.DiskGiB = types.Int64Unknown()
	default:
		plan.DiskGiB = prior.DiskGiB
		if cur, ok := knownInt(prior.DiskGiB); ok && mt != nil && mt.DiskGiB > cur {
			plan.DiskGiB = types.Int64Value(int64(mt.DiskGiB)) // grow; a catalogue never shrinks a disk
		}
	}
	return diags
}

// planCPUType checks a cpu_type that is set and changes (a create's, or an update's new
// value) against the CPU models of the VM's node (decision: cpu-type-check): a model the
// node does not know is an error on cpu_type naming a few it does, before the clone a
// create would make. Nothing is read when cpu_type is not set or does not change, so a
// plan with no change sends no request for it; the node's list is read once per provider
// instance (proxmox.Backend.CheckCPUType). A read that fails, or a custom- model the node
// does not list to this token, is a warning: the type could not be checked, and Proxmox
// checks it when the config is written.
func (r *proxyVMResource) planCPUType(ctx context.Context, config proxyVMModel, plan, prior *proxyVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	cputype, ok := knownString(config.CPUType)
	if !ok || r.data == nil || r.data.backend == nil || (prior != nil && prior.CPUType.Equal(plan.CPUType)) {
		return diags
	}
	// The configured node, else the planned one: the node the plan asks for, before the
	// placement's and HA's plans may keep the node a VM moved to.
	node, ok := knownString(config.Node)
	if !ok {
		node, ok = knownString(plan.Node)
	}
	if !ok {
		if nodes := r.data.cfg.Nodes; len(nodes) > 0 {
			node = nodes[0] // the cluster's nodes share the built-in list and cpu-models.conf
		} else {
			return diags
		}
	}
	at := path.Root("cpu_type")
	v, err := r.data.backend.CheckCPUType(ctx, node, cputype)
	switch {
	case err != nil:
		diags.AddAttributeWarning(at, "CPU type not checked",
			fmt.Sprintf("cpu_type = %q could not be checked against the CPU models of node %s: %s. Proxmox checks it when the "+
				"VM's config is written (after the clone, for a new VM).", cputype, node, r.redact(trimEnd(err.Error()))))
	case v.Hidden:
		diags.AddAttributeWarning(at, "CPU type not checked",
			fmt.Sprintf("cpu_type = %q is a custom CPU model that node %s does not list to this API token: Proxmox lists a "+
				"custom model only to a token with Sys.Audit on /nodes, or Mapping.Audit, Mapping.Use or Mapping.Modify on "+
				"/mapping/cpu/%s. If the model exists the apply works; if not, Proxmox refuses it when the VM's config is written.",
				cputype, node, strings.TrimPrefix(cputype, "custom-")))
	case !v.Known:
		diags.AddAttributeError(at, summaryInvalidConfig,
			fmt.Sprintf("cpu_type = %q is not a CPU model node %s knows (GET /nodes/%s/capabilities/qemu/cpu lists %d), so "+
				"Proxmox would refuse it when the VM's config is written. Use one of them, such as %s.",
				cputype, node, node, len(v.Models), strings.Join(cpuSuggestions(cputype, v.Models), ", ")))
	}
	return diags
}

// cpuSuggestions names a few of models for a cpu_type that is none of them: the ones that
// share its first word (case aside), those sharing the longest prefix with it first, then
// host and the x86-64 profiles, at most six.
func cpuSuggestions(cputype string, models []string) []string {
	low := strings.ToLower(cputype)
	word := ""
	if f := strings.FieldsFunc(low, func(r rune) bool { return r == '-' || r == '_' }); len(f) > 0 {
		word = f[0]
	}
	common := func(m string) int {
		m = strings.ToLower(m)
		n := 0
		for n < len(m) && n < len(low) && m[n] == low[n] {
			n++
		}
		return n
	}
	var near []string
	for _, m := range models {
		if word != "" && common(m) >= len(word) {
			near = append(near, m)
		}
	}
	slices.SortStableFunc(near, func(a, b string) int { return common(b) - common(a) })
	var out []string
	add := func(m string) {
		if len(out) < 6 && slices.Contains(models, m) && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	for _, m := range near {
		add(m)
	}
	for _, m := range []string{"host", "x86-64-v2-AES", "x86-64-v3", "kvm64"} {
		add(m)
	}
	for _, m := range models {
		add(m)
	}
	return out
}
