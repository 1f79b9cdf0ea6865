package provider

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// modelCodec reads a whole state, plan or configuration into a model struct and writes a
// model back, as the framework's Get and Set do (tfsdk tags, embedded structs flattened,
// each field of exactly the schema's type), but finds the fields and their types once per
// model type instead of on every call: those calls were about a third of a no-op plan's CPU
// (BenchmarkNoopPlan, noop_plan_test.go). A value of another schema type is an error, never a
// wrong read or write (TestModelCodec_refusesAnotherType).
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

// get reads raw, a value of s's type, into target. A value an attribute's type refuses
// (a number with a fraction for an Int64) gets the framework's diagnostics, on that
// attribute, and target is left as it was; err is a mismatch between the model, the schema
// and the value (a bug in the provider).
func (c *modelCodec[T]) get(ctx context.Context, s schemaTyper, raw tftypes.Value, target *T) (diag.Diagnostics, error) {
	if err := c.init(ctx, s); err != nil {
		return nil, err
	}
	if !raw.Type().Equal(c.typ) {
		return nil, fmt.Errorf("the value is a %s, not the schema's object", raw.Type())
	}
	if raw.IsNull() || !raw.IsKnown() {
		return nil, fmt.Errorf("the value is null or unknown as a whole")
	}
	var attrs map[string]tftypes.Value
	if err := raw.As(&attrs); err != nil {
		return nil, err
	}
	var m T
	rv := reflect.ValueOf(&m).Elem()
	for _, f := range c.fields {
		// As the framework's reflection (internal/reflect NewAttributeValue): the type's
		// conversion, then its own check.
		v, err := f.typ.ValueFromTerraform(ctx, attrs[f.name])
		if err != nil {
			return conversionDiags(f.name, err), nil //nolint:nilerr // a refused value is a diagnostic, as the framework's
		}
		if f.validate != nil {
			if diags := f.validate(ctx, attrs[f.name], path.Root(f.name)); diags.HasError() {
				return diags, nil
			}
		}
		fv := reflect.ValueOf(v)
		if fv.Type() != f.vtype {
			return nil, fmt.Errorf("%s: the schema's type makes a %s, the field is a %s", f.name, fv.Type(), f.vtype)
		}
		rv.FieldByIndex(f.index).Set(fv)
	}
	*target = m
	return nil, nil
}

// conversionDiags are the framework's diagnostics of a value its attribute's type refuses
// (internal/reflect valueFromTerraformErrorDiag), on that attribute.
func conversionDiags(name string, err error) diag.Diagnostics {
	return diag.Diagnostics{diag.NewAttributeErrorDiagnostic(path.Root(name), "Value Conversion Error",
		"An unexpected error was encountered trying to convert the Terraform value. This is always an error in the provider. "+
			"Please report the following to the provider developer:\n\n"+err.Error())}
}

// value is m as a value of s's type, with the diagnostics of a value its type's own check
// refuses (as the framework's Set); err is a mismatch between the model and the schema.
func (c *modelCodec[T]) value(ctx context.Context, s schemaTyper, m *T) (tftypes.Value, diag.Diagnostics, error) {
	if err := c.init(ctx, s); err != nil {
		return tftypes.Value{}, nil, err
	}
	rv := reflect.ValueOf(m).Elem()
	vals := make(map[string]tftypes.Value, len(c.fields))
	for _, f := range c.fields {
		av, ok := rv.FieldByIndex(f.index).Interface().(attr.Value)
		if !ok {
			return tftypes.Value{}, nil, fmt.Errorf("the field for %s is not an attr.Value", f.name)
		}
		tv, err := av.ToTerraformValue(ctx)
		if err != nil {
			return tftypes.Value{}, nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if want := c.typ.AttributeTypes[f.name]; !tv.Type().Equal(want) {
			return tftypes.Value{}, nil, fmt.Errorf("%s is a %s, the schema says %s", f.name, tv.Type(), want)
		}
		if f.validate != nil {
			if diags := f.validate(ctx, tv, path.Root(f.name)); diags.HasError() {
				return tftypes.Value{}, diags, nil
			}
		}
		vals[f.name] = tv
	}
	return tftypes.NewValue(c.typ, vals), nil, nil
}

// valueFor is m as the value of raw's place: raw's type, when it has one, must be the
// schema's the codec took (a State or Plan of another schema is an error, not a value of
// the first schema's type).
func (c *modelCodec[T]) valueFor(ctx context.Context, s schemaTyper, raw tftypes.Value, m *T) (tftypes.Value, diag.Diagnostics, error) {
	v, diags, err := c.value(ctx, s, m)
	if err == nil && raw.Type() != nil && !raw.Type().Equal(c.typ) {
		err = fmt.Errorf("the value's place is a %s, not the schema's object", raw.Type())
	}
	return v, diags, err
}

// vmCodec reads and writes proxy_vm's model (proxyVMModel).
var vmCodec modelCodec[proxyVMModel]

// codecDiag is a codec failure: a bug in the provider, never the user's input.
func codecDiag(what string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Unable to "+what+" proxy VM data",
		fmt.Sprintf("%s. This is a bug in the provider; please report it.", strings.TrimSuffix(err.Error(), ".")))
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
	diags, err := vmCodec.get(ctx, s, raw, m)
	if err != nil {
		return diag.Diagnostics{codecDiag(what, err)}
	}
	return diags
}

// setState and setPlan write m as the whole proxy_vm state or plan.
func setState(ctx context.Context, s *tfsdk.State, m *proxyVMModel) diag.Diagnostics {
	v, diags, err := vmCodec.valueFor(ctx, s.Schema, s.Raw, m)
	if err != nil {
		return diag.Diagnostics{codecDiag("save the state of", err)}
	}
	if !diags.HasError() {
		s.Raw = v
	}
	return diags
}

func setPlan(ctx context.Context, p *tfsdk.Plan, m *proxyVMModel) diag.Diagnostics {
	v, diags, err := vmCodec.valueFor(ctx, p.Schema, p.Raw, m)
	if err != nil {
		return diag.Diagnostics{codecDiag("plan", err)}
	}
	if !diags.HasError() {
		p.Raw = v
	}
	return diags
}
