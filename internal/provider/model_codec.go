package provider

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// modelCodec reads a whole state, plan or configuration into a model struct and writes a
// model back, with what the framework's Get and Set do (tfsdk tags, embedded structs
// flattened; each field an attr.Value made by its attribute's type's ValueFromTerraform,
// and written by its ToTerraformValue, of exactly the schema's type) but with the fields
// and their types found once per model type. The framework's Get and Set find them on
// every call: they build the schema's type, walk the struct's tags (compiling a regular
// expression per field) and go through an intermediate object value. A no-op plan of one
// proxy_vm made seven such calls, about a third of the provider's CPU in it
// (BenchmarkNoopPlan, noop_plan_test.go; bench/profile-noop-plan.md).
//
// The schema's type is taken from the first call's schema; a value of another type is an
// error, never a wrong read (TestModelCodec_sameAsFramework).
type modelCodec[T any] struct {
	once   sync.Once
	typ    tftypes.Object
	fields []codecField
	err    error
}

// codecField is an attribute's struct field and its schema type.
type codecField struct {
	objectField
	typ attr.Type
	// vtype is the field's Go type, which the attribute type's values must have.
	vtype reflect.Type
	// validate is the type's own check of a value (Int64Type's: an integer in range), which
	// the framework's Get and Set run on each value; nil for types without one.
	validate func(context.Context, tftypes.Value, path.Path) diag.Diagnostics
}

// schemaTyper is what tfsdk.State, Plan and Config hold as their Schema.
type schemaTyper interface{ Type() attr.Type }

var attrValueType = reflect.TypeFor[attr.Value]()

func (c *modelCodec[T]) init(ctx context.Context, s schemaTyper) error {
	c.once.Do(func() {
		st, ok := s.Type().(attr.TypeWithAttributeTypes)
		if !ok {
			c.err = fmt.Errorf("the schema's type %s has no attributes", s.Type())
			return
		}
		ot, ok := st.TerraformType(ctx).(tftypes.Object)
		if !ok {
			c.err = fmt.Errorf("the schema's type %s is not an object", st)
			return
		}
		fields, err := objectFields(reflect.TypeFor[T](), ot)
		if err != nil {
			c.err = err
			return
		}
		types := st.AttributeTypes()
		model := reflect.TypeFor[T]()
		for _, f := range fields {
			ft := model.FieldByIndex(f.index).Type
			if !ft.Implements(attrValueType) {
				c.err = fmt.Errorf("the field for %s is a %s, not an attr.Value", f.name, ft)
				return
			}
			at := types[f.name]
			// Values that validate themselves are not supported: none of the model's do.
			if ft.Implements(reflect.TypeFor[xattr.ValidateableAttribute]()) {
				c.err = fmt.Errorf("the values of %s validate themselves", f.name)
				return
			}
			cf := codecField{objectField: f, typ: at, vtype: ft}
			if tv, ok := at.(xattr.TypeWithValidate); ok { //nolint:staticcheck // the deprecated interface the framework still honours
				cf.validate = tv.Validate
			}
			c.fields = append(c.fields, cf)
		}
		c.typ = ot
	})
	return c.err
}

// get reads raw, a value of s's type, into target.
func (c *modelCodec[T]) get(ctx context.Context, s schemaTyper, raw tftypes.Value, target *T) error {
	if err := c.init(ctx, s); err != nil {
		return err
	}
	if !raw.Type().Equal(c.typ) {
		return fmt.Errorf("the value is a %s, not the schema's object", raw.Type())
	}
	if raw.IsNull() || !raw.IsKnown() {
		return fmt.Errorf("the value is null or unknown as a whole")
	}
	var attrs map[string]tftypes.Value
	if err := raw.As(&attrs); err != nil {
		return err
	}
	var m T
	rv := reflect.ValueOf(&m).Elem()
	for _, f := range c.fields {
		if f.validate != nil {
			if diags := f.validate(ctx, attrs[f.name], path.Root(f.name)); diags.HasError() {
				return fmt.Errorf("%s: %s", f.name, diags.Errors()[0].Detail())
			}
		}
		v, err := f.typ.ValueFromTerraform(ctx, attrs[f.name])
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		fv := reflect.ValueOf(v)
		if fv.Type() != f.vtype {
			return fmt.Errorf("%s: the schema's type makes a %s, the field is a %s", f.name, fv.Type(), f.vtype)
		}
		rv.FieldByIndex(f.index).Set(fv)
	}
	*target = m
	return nil
}

// value is m as a value of s's type.
func (c *modelCodec[T]) value(ctx context.Context, s schemaTyper, m *T) (tftypes.Value, error) {
	if err := c.init(ctx, s); err != nil {
		return tftypes.Value{}, err
	}
	rv := reflect.ValueOf(m).Elem()
	vals := make(map[string]tftypes.Value, len(c.fields))
	for _, f := range c.fields {
		av, ok := rv.FieldByIndex(f.index).Interface().(attr.Value)
		if !ok {
			return tftypes.Value{}, fmt.Errorf("the field for %s is not an attr.Value", f.name)
		}
		tv, err := av.ToTerraformValue(ctx)
		if err != nil {
			return tftypes.Value{}, fmt.Errorf("%s: %w", f.name, err)
		}
		if want := c.typ.AttributeTypes[f.name]; !tv.Type().Equal(want) {
			return tftypes.Value{}, fmt.Errorf("%s is a %s, the schema says %s", f.name, tv.Type(), want)
		}
		if f.validate != nil {
			if diags := f.validate(ctx, tv, path.Root(f.name)); diags.HasError() {
				return tftypes.Value{}, fmt.Errorf("%s: %s", f.name, diags.Errors()[0].Detail())
			}
		}
		vals[f.name] = tv
	}
	return tftypes.NewValue(c.typ, vals), nil
}

// vmCodec reads and writes proxy_vm's model (proxyVMModel).
var vmCodec modelCodec[proxyVMModel]

// codecDiag is a codec failure: a bug in the provider, never the user's input.
func codecDiag(what string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Unable to "+what+" proxy VM data",
		fmt.Sprintf("%s. This is a bug in the provider; please report it.", err))
}

// getState, getPlan and getConfig read a proxy_vm state, plan or configuration into m.
func getState(ctx context.Context, s tfsdk.State, m *proxyVMModel) diag.Diagnostics {
	return vmGet(ctx, "read the state of", s.Schema, s.Raw, m)
}

func getPlan(ctx context.Context, p tfsdk.Plan, m *proxyVMModel) diag.Diagnostics {
	return vmGet(ctx, "read the plan of", p.Schema, p.Raw, m)
}

func getConfig(ctx context.Context, c tfsdk.Config, m *proxyVMModel) diag.Diagnostics {
	return vmGet(ctx, "read the configuration of", c.Schema, c.Raw, m)
}

func vmGet(ctx context.Context, what string, s schemaTyper, raw tftypes.Value, m *proxyVMModel) diag.Diagnostics {
	if err := vmCodec.get(ctx, s, raw, m); err != nil {
		return diag.Diagnostics{codecDiag(what, err)}
	}
	return nil
}

// setState and setPlan write m as the whole proxy_vm state or plan.
func setState(ctx context.Context, s *tfsdk.State, m *proxyVMModel) diag.Diagnostics {
	v, err := vmCodec.value(ctx, s.Schema, m)
	if err != nil {
		return diag.Diagnostics{codecDiag("save the state of", err)}
	}
	s.Raw = v
	return nil
}

func setPlan(ctx context.Context, p *tfsdk.Plan, m *proxyVMModel) diag.Diagnostics {
	v, err := vmCodec.value(ctx, p.Schema, m)
	if err != nil {
		return diag.Diagnostics{codecDiag("plan", err)}
	}
	p.Raw = v
	return nil
}
