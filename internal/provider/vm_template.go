package provider

import (
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmTemplate is the template facet (vm_facet.go): the template the VM is cloned from (a
// catalogue key, image, or its VMID, template_vmid) and the machine type whose sizes the
// size facet (vm_size.go) takes. None of them can be read back from a VM: an import
// identifies them (read). It has no changes: a template change replaces the VM, and a
// machine type reaches the VM through the sizes it gives.
//
// proxy_vms lists VMs without them (identifying a template asks the backend per VM).
type vmTemplate struct {
	facetBase                 // no changes
	Image        types.String `tfsdk:"image"`
	TemplateVMID types.Int64  `tfsdk:"template_vmid"`
	MachineType  types.String `tfsdk:"machine_type"`
}

// templateAttrs are the template facet's attributes.
func templateAttrs() []facetAttr {
	return []facetAttr{{
		name:   "image",
		md:     "A key of the provider's templates catalogue: the template the VM is cloned from.",
		change: "Set this or `template_vmid`. Resolving to another template replaces the VM.",
		read:   "Null unless the template was identified and exactly one key names it.",
		resource: schema.StringAttribute{
			Optional:   true,
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
		},
	}, {
		name:   "template_vmid",
		md:     "The VMID of the template the VM is cloned from.",
		change: "For a template outside the catalogue; otherwise computed from `image`. Another template replaces the VM.",
		read:   "Null when the template could not be identified.",
		resource: schema.Int64Attribute{
			Optional: true, Computed: true,
			Validators: []validator.Int64{int64validator.Between(100, 999999999)},
			PlanModifiers: []planmodifier.Int64{
				int64planmodifier.UseStateForUnknown(),
				requiresReplaceUnlessUnreadInt64(unreadTemplate),
			},
		},
	}, {
		name:   "machine_type",
		md:     "A key of the provider's `machine_types` catalogue: cores, `memory_mib` and an optional minimum `disk_gib`.",
		change: "Explicit `cores`, `memory_mib` or `disk_gib` override it.",
		read:   "The key whose sizes the VM has, when exactly one matches; null otherwise.",
		resource: schema.StringAttribute{
			Optional:   true,
			Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
		},
	}}
}

// read identifies the template and the machine type of an imported VM (a refresh reads
// none of them): the template the backend identified (fc.templateVMID, 0 when it could not
// tell) with its catalogue key when exactly one key names it, and the machine type when it
// resolves unambiguously. What it cannot tell stays null; fc.templateUnread says the
// template was not identified.
func (t *vmTemplate) read(fc *facetCtx) {
	if !fc.imported {
		return
	}
	vm, cfg, templateVMID := fc.vm, fc.cfg, fc.templateVMID
	t.Image, t.TemplateVMID, t.MachineType = types.StringNull(), types.Int64Null(), types.StringNull()
	if key, ok := resolveMachineType(cfg, vm); ok {
		t.MachineType = types.StringValue(key)
	}
	if templateVMID == 0 {
		fc.templateUnread = true
		return
	}
	t.TemplateVMID = types.Int64Value(int64(templateVMID))
	t.Image = stringOrNull(imageKeyOf(cfg, templateVMID))
}

// nullUnknown nulls the values still unknown (the partial state of a create).
func (t *vmTemplate) nullUnknown() {
	for _, s := range []*types.String{&t.Image, &t.MachineType} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	if t.TemplateVMID.IsUnknown() {
		t.TemplateVMID = types.Int64Null()
	}
}

// spec puts the planned template into a create, and the planned machine type (nil when
// none, or fc.cfg is nil) into fc.machineType, whose disk the size facet's spec takes.
func (t vmTemplate) spec(fc *facetCtx) {
	if v, ok := knownInt(t.TemplateVMID); ok {
		fc.spec.TemplateVMID = v
	}
	fc.machineType = nil
	if key, ok := knownString(t.MachineType); ok && fc.cfg != nil {
		if m, found := fc.cfg.MachineTypes[key]; found {
			fc.machineType = &m
		}
	}
}

// imageKeyOf is the one catalogue key of templateVMID, "" when none or several name it
// (image then stays unset and the configuration's key is recorded in place).
func imageKeyOf(cfg *resolvedConfig, templateVMID int) string {
	if cfg == nil || templateVMID == 0 {
		return ""
	}
	var keys []string
	for k, v := range cfg.Templates {
		if v == templateVMID {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 {
		return ""
	}
	return keys[0]
}

// resolveMachineType names the machine type of an imported VM: the one catalogue entry
// whose cores and memory equal the VM's and whose disk (when set) the VM's disk reaches.
func resolveMachineType(cfg *resolvedConfig, vm proxmox.VM) (string, bool) {
	if cfg == nil {
		return "", false
	}
	var keys []string
	for k, mt := range cfg.MachineTypes {
		if mt.Cores == vm.Cores && mt.MemoryMiB == vm.MemoryMiB && (mt.DiskGiB == 0 || mt.DiskGiB <= vm.DiskGiB) {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 {
		return "", false
	}
	return keys[0], true
}

// plan resolves the template (planTemplate); an import that left the template unread
// replaces nothing for the first value set.
func (t *vmTemplate) plan(fc *facetCtx) {
	unread := fc.unread(unreadTemplate)
	if fc.cfg == nil {
		return
	}
	replace, diags := planTemplate(fc.cfg, fc.config, fc.m, fc.prior, unread)
	fc.diags.Append(diags...)
	fc.replace = append(fc.replace, replace...)
}

// planTemplate resolves image through the catalogue (template_vmid is taken as set) and
// returns template_vmid when the effective template changes, which replaces the VM.
func planTemplate(
	cfg *resolvedConfig,
	config proxyVMModel,
	plan, prior *proxyVMModel,
	templateUnread bool,
) ([]path.Path, diag.Diagnostics) {
	var diags diag.Diagnostics
	var replace []path.Path
	creating := prior == nil
	switch {
	case !config.Image.IsNull() && !config.Image.IsUnknown():
		vmid, err := cfg.Template(config.Image.ValueString())
		switch {
		case err != nil && (creating || !prior.Image.Equal(config.Image)):
			diags.AddAttributeError(path.Root("image"), summaryInvalidConfig,
				err.Error()+". Set image to one of the provider's templates, or add it to the provider's templates.")
		case err != nil:
			// The key left the catalogue after this VM was made from it: nothing to change.
			plan.TemplateVMID = prior.TemplateVMID
		default:
			plan.TemplateVMID = types.Int64Value(int64(vmid))
			if !creating && !plan.TemplateVMID.Equal(prior.TemplateVMID) && (!prior.TemplateVMID.IsNull() || !templateUnread) {
				replace = append(replace, path.Root("template_vmid"))
			}
		}
	case config.Image.IsUnknown() && config.TemplateVMID.IsNull():
		plan.TemplateVMID = types.Int64Unknown()
		if !creating {
			replace = append(replace, path.Root("template_vmid"))
		}
	}
	return replace, diags
}
