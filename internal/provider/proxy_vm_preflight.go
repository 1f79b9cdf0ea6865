package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// preflightFor is the preflight of a planned create: only the values the plan knows; a
// disk_gib the configuration does not set is unknown here (the template's size or the
// machine type's minimum, whichever is larger), so it is not checked. ok is false when the
// node or the template is not known yet.
func preflightFor(plan proxyVMModel) (proxmox.PreflightSpec, bool) {
	node, okNode := knownString(plan.Node)
	tmpl, okTmpl := knownInt(plan.TemplateVMID)
	if !okNode || !okTmpl {
		return proxmox.PreflightSpec{}, false
	}
	s := proxmox.PreflightSpec{Node: node, TemplateVMID: tmpl}
	if v, ok := knownInt(plan.DiskGiB); ok {
		s.DiskGiB = v
	}
	if v, ok := knownString(plan.Bridge); ok {
		s.Bridge = v
	}
	if v, ok := knownInt(plan.VLANTag); ok {
		s.VLANTag = v
	}
	return s, true
}

// preflight runs the backend's Preflight for a create of plan (config is the resource's
// configuration, telling which attribute holds a value) and reports a mistake on that
// attribute. verb is "plan" (ModifyPlan) or "create". replacing says the create is the
// replacement of a VM that exists (replacesExisting): the refusal then says the VM was not
// changed, not that nothing was cloned. It reports whether the create may go on: a failure
// of the check itself that is not Permanent leaves the verdict to Create.
func (r *proxyVMResource) preflight(ctx context.Context, verb string, replacing bool, config, plan proxyVMModel,
	diags *diag.Diagnostics) bool {
	s, ok := preflightFor(plan)
	if !ok || r.data == nil || r.data.backend == nil {
		return true
	}
	err := r.data.backend.Preflight(ctx, s)
	if err == nil {
		return true
	}
	name := plan.Name.ValueString()
	summary := "Unable to " + verb + " proxy VM"
	label, nothing := vmLabel(name, 0), nothingTouched
	if replacing {
		label, nothing = fmt.Sprintf("Proxy VM %q (the replacement this change needs)", name), nothingChanged
	}
	var pe *proxmox.PreflightError
	if !errors.As(err, &pe) {
		if proxmox.ClassOf(err) != proxmox.Permanent {
			tflog.Debug(ctx, "proxy VM preflight inconclusive, left to create", map[string]any{"name": name, "error": err.Error()})
			return true
		}
		if fix, conn := r.data.connectionFix(err); conn && verb == "plan" && !r.data.reportOnce("connection\x00"+fix) {
			return false // the endpoint, TLS or token: reported once per plan (see below)
		}
		labelOp := verb
		if replacing {
			labelOp = "update" // the VM exists: not "no VMID allocated yet"
		}
		diags.AddError(summary, r.vmErrorDetail(labelOp, name, 0, err, nothing))
		return false
	}
	msg := r.redact(pe.Err.Err.Error())
	attr, where := preflightAttribute(pe.Subject, config)
	advice := where
	if pe.Err.Class == proxmox.Permanent {
		advice = "Retrying will not help. " + where
	}
	tflog.Warn(ctx, "proxy VM preflight refused the configuration", map[string]any{
		"name": name, "subject": string(pe.Subject), "error": msg})
	if attr.Equal(path.Empty()) {
		// A mistake of the provider block (its iso_storage, storage, nodes or bridge) is
		// the same for every proxy_vm: reported once per provider instance, on the first
		// resource that meets it, not once per resource (the framework has no way to put a
		// resource's diagnostic on the provider block). Every other resource's plan still
		// stops: the one error fails the whole plan before anything is touched. A create
		// must fail on its own, so it says so in one line.
		if !r.data.reportOnce("preflight\x00" + msg) {
			if verb == "plan" {
				return false
			}
			diags.AddError(summary, fmt.Sprintf("%s: not created: %s (reported in full above). %s", label, trimEnd(msg), nothing))
			return false
		}
		diags.AddError(summary, fmt.Sprintf("%s.\n\n%s This stops every proxy_vm of this provider configuration; it is reported once, "+
			"here, for %q. %s", capitalize(trimEnd(msg)), advice, name, nothing))
		return false
	}
	diags.AddAttributeError(attr, summary, fmt.Sprintf("%s: %s.\n\n%s %s", label, trimEnd(msg), advice, nothing))
	return false
}

const (
	nothingTouched = "Nothing was cloned, uploaded or saved in the state; fix the configuration and run the command again."
	nothingChanged = "The VM was not changed: the plan stopped before anything was touched. Fix the configuration and run the command again."
)

// replacesExisting says a create's plan is the replacement of a VM that exists: Terraform
// plans a replacement's create with no prior state but with the private state its update
// plan returned (PriorPrivate), which holds the node record every read, create and update of
// the VM writes; a new resource has none.
func replacesExisting(ctx context.Context, p privateGetter) bool {
	_, ok, _ := readNodeRecord(ctx, p)
	return ok
}

// preflightAttribute maps a preflight subject to the resource attribute that holds the
// value, or to an empty path and a sentence naming the provider attribute when the value
// comes from the provider block.
func preflightAttribute(s proxmox.Subject, config proxyVMModel) (path.Path, string) {
	switch s {
	case proxmox.SubjectNode:
		if !config.Node.IsNull() {
			return path.Root("node"), "Fix node."
		}
		return path.Empty(), "The node comes from the provider's nodes: fix nodes in the provider block."
	case proxmox.SubjectISOStorage:
		return path.Empty(), "The storage is the provider's iso_storage: fix iso_storage in the provider block."
	case proxmox.SubjectStorage:
		return path.Empty(), "The storage is the provider's storage: fix storage in the provider block, or remove it " +
			"to clone onto the template's own storage."
	case proxmox.SubjectTemplate:
		if !config.Image.IsNull() {
			return path.Root("image"), "Fix image, or the provider's templates entry it names."
		}
		return path.Root("template_vmid"), "Fix template_vmid."
	case proxmox.SubjectDisk:
		return path.Root("disk_gib"), "Fix disk_gib."
	case proxmox.SubjectBridge:
		if !config.Bridge.IsNull() || !config.VLANTag.IsNull() {
			if config.Bridge.IsNull() {
				return path.Root("vlan_tag"), "Fix vlan_tag, or the template."
			}
			return path.Root("bridge"), "Fix bridge."
		}
		return path.Empty(), "The bridge comes from the provider's bridge (or vlan_tag): fix it in the provider block."
	}
	return path.Empty(), ""
}
