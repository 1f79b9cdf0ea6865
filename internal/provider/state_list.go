package provider

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// setObjectList sets the list nested attribute name of state, already Set, to items:
// structs tagged as the framework reads them (tfsdk tags, embedded structs flattened, "-"
// skipped), the value State.Set makes of them. State.Set converts each element through an
// attr.Value with type maps of its own before its tftypes value, so a list of ten thousand
// VMs (proxy_vms) held ten thousand copies of the same object type at the provider's peak;
// here every element shares the schema's one (bench/results.md, "Listing at scale").
func setObjectList[T any](ctx context.Context, state *tfsdk.State, name string, items []T) error {
	at, diags := state.Schema.TypeAtPath(ctx, path.Root(name))
	if diags.HasError() {
		return fmt.Errorf("%s: %s", name, diags.Errors()[0].Detail())
	}
	lt, ok := at.TerraformType(ctx).(tftypes.List)
	if !ok {
		return fmt.Errorf("%s is a %s, not a list", name, at.TerraformType(ctx))
	}
	v, err := objectList(ctx, lt, items)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var attrs map[string]tftypes.Value
	if err := state.Raw.As(&attrs); err != nil {
		return err
	}
	if _, ok := attrs[name]; !ok {
		return fmt.Errorf("the state has no attribute %s", name)
	}
	attrs[name] = v
	state.Raw = tftypes.NewValue(state.Raw.Type(), attrs)
	return nil
}

// objectList is the tftypes list of type lt whose elements are items (setObjectList);
// null for a nil slice, as State.Set makes it.
func objectList[T any](ctx context.Context, lt tftypes.List, items []T) (tftypes.Value, error) {
	ot, ok := lt.ElementType.(tftypes.Object)
	if !ok {
		return tftypes.Value{}, fmt.Errorf("the list's elements are %s, not objects", lt.ElementType)
	}
	fields, err := objectFields(reflect.TypeFor[T](), ot)
	if err != nil {
		return tftypes.Value{}, err
	}
	if items == nil {
		return tftypes.NewValue(lt, nil), nil
	}
	elems := make([]tftypes.Value, len(items))
	for i := range items {
		rv := reflect.ValueOf(&items[i]).Elem()
		vals := make(map[string]tftypes.Value, len(fields))
		for _, f := range fields {
			av, ok := rv.FieldByIndex(f.index).Interface().(attr.Value)
			if !ok {
				return tftypes.Value{}, fmt.Errorf("field for %s is not an attr.Value", f.name)
			}
			tv, err := av.ToTerraformValue(ctx)
			if err != nil {
				return tftypes.Value{}, fmt.Errorf("%s: %w", f.name, err)
			}
			if !tv.Type().UsableAs(ot.AttributeTypes[f.name]) {
				return tftypes.Value{}, fmt.Errorf("%s is a %s, the schema says %s", f.name, tv.Type(), ot.AttributeTypes[f.name])
			}
			vals[f.name] = tv
		}
		elems[i] = tftypes.NewValue(ot, vals)
	}
	return tftypes.NewValue(lt, elems), nil
}

// objectField is a struct field that holds the object's attribute name.
type objectField struct {
	name  string
	index []int
}

// objectFields maps each attribute of ot to its field of t, as the framework's reflection
// reads a struct: every attribute has exactly one field, and every tagged field an attribute.
func objectFields(t reflect.Type, ot tftypes.Object) ([]objectField, error) {
	var out []objectField
	var walk func(t reflect.Type, index []int) error
	walk = func(t reflect.Type, index []int) error {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(append([]int(nil), index...), i)
			tag, tagged := f.Tag.Lookup("tfsdk")
			switch {
			case f.Anonymous && !tagged && f.Type.Kind() == reflect.Struct:
				if err := walk(f.Type, idx); err != nil {
					return err
				}
			case !tagged || tag == "-" || !f.IsExported():
			default:
				name, _, _ := strings.Cut(tag, ",")
				if _, ok := ot.AttributeTypes[name]; !ok {
					return fmt.Errorf("field %s: the object has no attribute %s", f.Name, name)
				}
				out = append(out, objectField{name: name, index: idx})
			}
		}
		return nil
	}
	if err := walk(t, nil); err != nil {
		return nil, err
	}
	if len(out) != len(ot.AttributeTypes) {
		return nil, fmt.Errorf("%d fields for the object's %d attributes", len(out), len(ot.AttributeTypes))
	}
	return out, nil
}
