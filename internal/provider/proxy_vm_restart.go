package provider

import (
	"reflect"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"

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
