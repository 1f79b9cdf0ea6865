package provider

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// The attributes whose change needs a restart of a running VM are those of
// proxmox.RestartOptions: the descriptions that name them and the plan's checks of them
// are derived from that list.

// restartAttrsMD joins the restart options' attributes in code spans: "`cores` or
// `memory_mib`".
func restartAttrsMD(conj string) string {
	return proxmox.RestartAttrs(conj, func(s string) string { return "`" + s + "`" })
}

// restartOptionChanges says plan may change a restart option's attribute from prior (an
// unknown value may).
func restartOptionChanges(prior, plan proxyVMModel) bool {
	for _, o := range proxmox.RestartOptions {
		p, n := modelValue(prior, o.Attr), modelValue(plan, o.Attr)
		if n == nil {
			continue // not an attribute of the model: TestRestartOptions_attributes
		}
		if n.IsUnknown() || !n.Equal(p) {
			return true
		}
	}
	return false
}

// planOptionRestarts says in the plan what a change of a restart option beyond cores and
// memory (whose own checks are planPower's) does to a running VM: a restart (a warning on
// the attribute), or with reboot_on_change = false a change written and left pending until
// the VM's next start. An unknown value may restart it. It reports whether the VM is
// restarted: restart (what planPower decided for cores and memory), or for an option.
// planPower calls it once it knows the VM runs and stays running.
func planOptionRestarts(diags *diag.Diagnostics, prior, plan *proxyVMModel, restart bool) bool {
	name := plan.Name.ValueString()
	deferred := startedFalse(plan.RebootOnChange)
	for _, o := range proxmox.RestartOptions {
		if o.OwnFields() {
			continue
		}
		was, now := modelValue(prior, o.Attr), modelValue(plan, o.Attr)
		if now == nil || now.IsNull() || now.Equal(was) {
			continue
		}
		p := path.Root(o.Attr)
		switch {
		case now.IsUnknown() && !deferred:
			restart = true
			diags.AddAttributeWarning(p, "Proxy VM may be restarted",
				fmt.Sprintf("%s of proxy VM %q is known only at apply: if it differs from the VM's, the apply restarts the VM "+
					"to apply it (a shutdown of up to shutdown_timeout, then a start), and its address may change. "+
					"Set reboot_on_change = false to leave such a change pending instead.", o.Attr, name))
		case now.IsUnknown():
		case !deferred:
			restart = true
			diags.AddAttributeWarning(p, "Proxy VM will be restarted",
				fmt.Sprintf("proxy VM %s will be restarted to apply %s %s → %s: Proxmox applies it at the VM's next start, so the apply shuts the guest "+
					"down (up to shutdown_timeout, then Proxmox stops it) and starts it again; its address may change. "+
					"Set reboot_on_change = false to leave the change pending until the VM restarts.", name, o.Attr, valueText(was), valueText(now)))
		default:
			diags.AddAttributeWarning(p, "Proxy VM change pending",
				fmt.Sprintf("%s %s is written to the config of proxy VM %q and stays pending until the VM restarts (reboot_on_change = false); "+
					"the VM runs with %s until then, and the state shows the configured value.", o.Attr, valueText(now), name, valueText(was)))
		}
	}
	return restart
}

// valueText is a value for a message: a string quoted, null as "none".
func valueText(v attr.Value) string {
	if v == nil || v.IsNull() {
		return "none"
	}
	if s, ok := v.(types.String); ok {
		return fmt.Sprintf("%q", s.ValueString())
	}
	return v.String()
}

// modelValue is the value of the attribute name in a model struct (its field tagged
// tfsdk:"name", also in an embedded struct); nil when the model has no such attribute.
func modelValue(model any, name string) attr.Value {
	return fieldValue(reflect.ValueOf(model), name)
}

func fieldValue(v reflect.Value, name string) attr.Value {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			if av := fieldValue(v.Field(i), name); av != nil {
				return av
			}
			continue
		}
		if tag, _, _ := strings.Cut(f.Tag.Get("tfsdk"), ","); tag == name && f.IsExported() {
			if av, ok := v.Field(i).Interface().(attr.Value); ok {
				return av
			}
			return nil
		}
	}
	return nil
}
