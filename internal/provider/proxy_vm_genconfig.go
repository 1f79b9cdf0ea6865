package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
)

// A configuration written by `terraform plan -generate-config-out` (or `terraform query
// -generate-config-out`) holds every attribute the import read back, so it sets pairs that
// a person would set only one of: image beside template_vmid, machine_type beside cores and
// memory_mib. Such pairs are accepted when they agree, so the generated configuration plans
// without edits beyond the cloud-init, which cannot be read back.

// checkTemplatePair refuses an image and a template_vmid that name different templates;
// both naming the same one is accepted. Neither set is refused by the config validators.
func checkTemplatePair(cfg *resolvedConfig, config proxyVMModel) diag.Diagnostics {
	var diags diag.Diagnostics
	key, hasImage := knownString(config.Image)
	vmid, hasVMID := knownInt(config.TemplateVMID)
	if cfg == nil || !hasImage || !hasVMID {
		return nil
	}
	resolved, err := cfg.Template(key)
	if err != nil {
		return nil // the template facet's plan reports the unknown key on image
	}
	if resolved != vmid {
		diags.AddAttributeError(path.Root("template_vmid"), summaryInvalidConfig,
			fmt.Sprintf("image %q is template %d in the provider's templates, but template_vmid is %d. Set only one "+
				"of image and template_vmid, or make them name the same template.", key, resolved, vmid))
	}
	return diags
}
