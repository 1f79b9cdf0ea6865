package provider

import (
	"regexp"

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

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmSize is the size facet (vm_facet.go): cores, memory, the boot disk and the CPU type.
// Without them in the configuration the sizes come from the machine type (machine_type).
type vmSize struct {
	Cores     types.Int64  `tfsdk:"cores"`
	MemoryMiB types.Int64  `tfsdk:"memory_mib"`
	DiskGiB   types.Int64  `tfsdk:"disk_gib"`
	CPUType   types.String `tfsdk:"cpu_type"`
}

// cpuTypeRE is a CPU model name as qemu-server's CPU models are named (CPUConfig.pm
// $cpu_fmt cputype, a built-in model such as host, x86-64-v2-AES, Skylake-Server-v4 or
// Opteron_G5, or custom-<id>): no ',', '=', ';' or line break, which would break out of
// the cpu property string.
var cpuTypeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// sizeAttrs are the size facet's attributes.
func sizeAttrs() []facetAttr {
	return []facetAttr{{
		name: "cores",
		md:   "Virtual CPU cores.",
		change: "Defaults to the machine type's. Changing it updates the VM in place: the " +
			"config is written, and Proxmox applies it at the VM's next start, so a running VM is restarted " +
			"gracefully (a shutdown within `shutdown_timeout`, then a stop if the guest is still up, then a start; its IP " +
			"address may change), and the plan warns about it. Cores are never hotplugged (Proxmox hotplugs only vcpus). " +
			"With `reboot_on_change` = false the change stays pending, and the value shown is what the VM runs with.",
		resource: schema.Int64Attribute{
			Optional: true, Computed: true,
			Validators:    []validator.Int64{int64validator.Between(1, 512)},
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
		},
	}, {
		name: "memory_mib",
		md:   "Memory in MiB.",
		change: "Defaults to the machine type's. Changing it updates the VM in place: the " +
			"config is written, then a running VM is restarted gracefully as for cores, unless the VM has memory " +
			"hotplug (its Proxmox hotplug option names memory, with numa on): then it applies at once, without a " +
			"restart, and must be a DIMM step (1024, then multiples of 512 up to 17408, then of 1024...). With " +
			"`reboot_on_change` = false a change that needs a restart stays pending.",
		resource: schema.Int64Attribute{
			Optional: true, Computed: true,
			Validators:    []validator.Int64{int64validator.AtLeast(16)},
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
		},
	}, {
		name: "disk_gib",
		md:   "Size of the boot disk in GiB.",
		change: "Without it the disk is the larger of the template's and the " +
			"machine type's `disk_gib`. An explicit value must not be below the template's disk (a disk is " +
			"never shrunk). Growing it resizes the disk in place; shrinking it replaces the VM.",
		read: "Null when the VM's config names no boot disk size.",
		resource: schema.Int64Attribute{
			Optional: true, Computed: true,
			Validators:    []validator.Int64{int64validator.Between(1, 65536)},
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), diskShrinkRequiresReplace()},
		},
	}, {
		name: "cpu_type",
		md: "The emulated CPU type: the `cputype` of Proxmox's `cpu` option, such as `host` (the node's CPU, with " +
			"AES-NI for TLS), `x86-64-v2-AES` or `kvm64`.",
		change: "Without it the template's stays. Changing it updates the VM in place, keeping the `cpu` option's " +
			"other properties (flags): the config is written, and Proxmox applies it at the VM's next start, so a " +
			"running VM is restarted gracefully as for cores, and the plan warns about it. With `reboot_on_change` = " +
			"false the change stays pending until the VM's next start, and the value shown is the configured one. " +
			"Removing it from the configuration leaves the current type. Letters, digits, `-`, `_` and `.`, checked " +
			"at plan time; Proxmox refuses a model it does not know when the config is written.",
		read: "The configured value (the VM's config, pending changes included): after a change it may " +
			"differ from what the VM runs with until the VM restarts. Null when the VM's config has no `cpu` " +
			"option (Proxmox's default, `kvm64`).",
		resource: schema.StringAttribute{
			Optional: true, Computed: true,
			Validators: []validator.String{stringvalidator.RegexMatches(cpuTypeRE,
				"must be a CPU model name: letters, digits, '-', '_' and '.', such as host or x86-64-v2-AES")},
			PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
		},
	}}
}

// read takes the sizes of the VM as the backend read it (what a running VM runs with).
func (s *vmSize) read(vm proxmox.VM) {
	s.Cores = intOrNull(vm.Cores)
	s.MemoryMiB = intOrNull(vm.MemoryMiB)
	s.DiskGiB = intOrNull(vm.DiskGiB)
	s.CPUType = stringOrNull(vm.Options["cpu"])
}

// nullUnknown nulls the values still unknown (the partial state of a create).
func (s *vmSize) nullUnknown() {
	for _, n := range []*types.Int64{&s.Cores, &s.MemoryMiB, &s.DiskGiB} {
		if n.IsUnknown() {
			*n = types.Int64Null()
		}
	}
	if s.CPUType.IsUnknown() {
		s.CPUType = types.StringNull()
	}
}

// spec puts the planned sizes into a create; a disk_gib the plan leaves unknown is the
// machine type's (mt, nil when none), or the template's.
func (s vmSize) spec(spec *proxmox.Spec, mt *machineType) {
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
}

// changes puts the sizes that change from prior into an update, and says whether any does.
func (s vmSize) changes(prior vmSize, c *proxmox.Changes) bool {
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
	return changed
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
