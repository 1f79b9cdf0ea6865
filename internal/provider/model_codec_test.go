package provider

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// randomValue is a value of typ: null, unknown (when unknown is allowed) or known, with
// known collections and objects holding random values in turn.
func randomValue(r *rand.Rand, typ tftypes.Type, unknown bool) tftypes.Value {
	switch n := r.IntN(10); {
	case n == 0:
		return tftypes.NewValue(typ, nil)
	case n == 1 && unknown:
		return tftypes.NewValue(typ, tftypes.UnknownValue)
	}
	switch typ := typ.(type) {
	case tftypes.Object:
		vals := map[string]tftypes.Value{}
		for k, at := range typ.AttributeTypes {
			vals[k] = randomValue(r, at, unknown)
		}
		return tftypes.NewValue(typ, vals)
	case tftypes.List:
		return tftypes.NewValue(typ, randomElems(r, typ.ElementType, unknown))
	case tftypes.Set:
		// Set elements must differ: strings with their index.
		elems := randomElems(r, typ.ElementType, unknown)
		if typ.ElementType.Is(tftypes.String) {
			for i := range elems {
				if elems[i].IsKnown() && !elems[i].IsNull() {
					elems[i] = tftypes.NewValue(tftypes.String, fmt.Sprintf("e%d", i))
				}
			}
		}
		return tftypes.NewValue(typ, elems)
	case tftypes.Map:
		vals := map[string]tftypes.Value{}
		for i, e := range randomElems(r, typ.ElementType, unknown) {
			vals[fmt.Sprintf("k%d", i)] = e
		}
		return tftypes.NewValue(typ, vals)
	}
	switch {
	case typ.Is(tftypes.String):
		return tftypes.NewValue(typ, fmt.Sprintf("s%d", r.IntN(1000)))
	case typ.Is(tftypes.Bool):
		return tftypes.NewValue(typ, r.IntN(2) == 0)
	case typ.Is(tftypes.Number):
		if r.IntN(20) == 0 { // not an integer: an Int64 attribute's type refuses it
			return tftypes.NewValue(typ, big.NewFloat(1.5))
		}
		return tftypes.NewValue(typ, big.NewFloat(float64(r.IntN(100000))))
	}
	panic(fmt.Sprintf("randomValue: %s", typ))
}

func randomElems(r *rand.Rand, typ tftypes.Type, unknown bool) []tftypes.Value {
	out := make([]tftypes.Value, r.IntN(3))
	for i := range out {
		out[i] = randomValue(r, typ, unknown)
		if out[i].IsNull() { // collections hold no null elements
			out[i] = randomValue(r, typ, false)
		}
		for out[i].IsNull() {
			out[i] = randomValue(r, typ, false)
		}
	}
	return out
}

// TestModelCodec_sameAsFramework: the codec reads every value the framework's Get reads
// into the same model (field by field), refuses what it refuses, and writes every model
// as the framework's Set does: over random states of proxy_vm's schema (nulls, unknowns,
// nested objects, sets, non-integer numbers), and models changed after the read.
func TestModelCodec_sameAsFramework(t *testing.T) {
	ctx := context.Background()
	sch := proxyVMSchema(ctx)
	typ, ok := sch.Type().TerraformType(ctx).(tftypes.Object)
	if !ok {
		t.Fatal("the schema is not an object")
	}
	r := rand.New(rand.NewPCG(1, 2))
	var prior proxyVMModel
	if diags := (tfsdk.State{Schema: sch, Raw: nullsOf(typ)}).Get(ctx, &prior); diags.HasError() {
		t.Fatal(diags)
	}
	prior.Name = types.StringValue("prior")
	var read, refused int
	for i := range 400 {
		raw := randomValue(r, typ, true)
		if raw.IsNull() || !raw.IsKnown() {
			continue
		}
		st := tfsdk.State{Schema: sch, Raw: raw}
		// Both targets hold a model already: a refused value leaves it as it was.
		want, got := prior, prior
		wantDiags := st.Get(ctx, &want)
		gotDiags := getState(ctx, st, &got)
		if !sameRefusal(ctx, sch, raw, wantDiags, gotDiags) {
			t.Fatalf("value %d: the framework's Get says %v, the codec %v", i, wantDiags, gotDiags)
		}
		if wantDiags.HasError() {
			refused++
			sameModel(t, i, want, got)
			continue
		}
		read++
		sameModel(t, i, want, got)
		// A model as a resource method leaves it: some values replaced.
		got.Name = types.StringValue(fmt.Sprintf("vm-%d", i))
		got.VMID = types.Int64Unknown()
		for _, m := range []proxyVMModel{want, got} {
			fw, ours := tfsdk.State{Schema: sch}, tfsdk.State{Schema: sch}
			fwDiags := fw.Set(ctx, &m)
			ourDiags := setState(ctx, &ours, &m)
			if fwDiags.HasError() || ourDiags.HasError() {
				t.Fatalf("value %d: Set %v, the codec %v", i, fwDiags, ourDiags)
			}
			if !fw.Raw.Equal(ours.Raw) {
				diffs, _ := fw.Raw.Diff(ours.Raw)
				t.Fatalf("value %d: the codec writes another value than Set: %v", i, diffs)
			}
		}
	}
	// Both branches ran: models read and values refused.
	if read < 100 || refused < 10 {
		t.Fatalf("%d values read, %d refused: the generator does not cover both", read, refused)
	}
	// The fields are found once, however many calls.
	if len(vmCodec.fields) != len(typ.AttributeTypes) {
		t.Fatalf("the codec holds %d fields for %d attributes", len(vmCodec.fields), len(typ.AttributeTypes))
	}
}

// sameRefusal reports whether the codec's diagnostics of raw are the framework's: equal,
// or, where several attributes are refused, the same diagnostic on another of them (the
// framework's reflection walks the struct's fields in map order, so which one it names
// varies from call to call).
func sameRefusal(ctx context.Context, sch rschema.Schema, raw tftypes.Value, want, got diag.Diagnostics) bool {
	if want.Equal(got) {
		return true
	}
	if len(want) != 1 || len(got) != 1 || want[0].Summary() != got[0].Summary() || want[0].Detail() != got[0].Detail() {
		return false
	}
	wp, ok1 := want[0].(diag.DiagnosticWithPath)
	gp, ok2 := got[0].(diag.DiagnosticWithPath)
	if !ok1 || !ok2 {
		return false
	}
	refused := func(p path.Path) bool {
		at, diags := sch.TypeAtPath(ctx, p)
		v, err := raw.ApplyTerraform5AttributePathStep(tftypes.AttributeName(p.String()))
		if diags.HasError() || err != nil {
			return false
		}
		tv, _ := v.(tftypes.Value)
		_, err = at.ValueFromTerraform(ctx, tv)
		return err != nil
	}
	return refused(wp.Path()) && refused(gp.Path())
}

// nullsOf is the object of typ with every attribute null.
func nullsOf(typ tftypes.Object) tftypes.Value {
	vals := map[string]tftypes.Value{}
	for k, at := range typ.AttributeTypes {
		vals[k] = tftypes.NewValue(at, nil)
	}
	return tftypes.NewValue(typ, vals)
}

func sameModel(t *testing.T, i int, want, got proxyVMModel) {
	t.Helper()
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	fields, err := objectFields(reflect.TypeFor[proxyVMModel](), mustObjectType(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		w, _ := wv.FieldByIndex(f.index).Interface().(attr.Value)
		g, _ := gv.FieldByIndex(f.index).Interface().(attr.Value)
		if w == nil || g == nil || !w.Equal(g) || reflect.TypeOf(w) != reflect.TypeOf(g) {
			t.Fatalf("value %d: %s is %v (%T) by Get, %v (%T) by the codec", i, f.name, w, w, g, g)
		}
	}
}

func mustObjectType(t *testing.T) tftypes.Object {
	t.Helper()
	ot, ok := proxyVMSchema(context.Background()).Type().TerraformType(context.Background()).(tftypes.Object)
	if !ok {
		t.Fatal("the schema is not an object")
	}
	return ot
}

// TestModelCodec_refusesAnotherType: a value of another schema's type is an error, not a
// read of whatever attributes match.
func TestModelCodec_refusesAnotherType(t *testing.T) {
	ctx := context.Background()
	other := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String}}
	raw := tftypes.NewValue(other, map[string]tftypes.Value{"name": tftypes.NewValue(tftypes.String, "x")})
	var m proxyVMModel
	if diags := getState(ctx, tfsdk.State{Schema: proxyVMSchema(ctx), Raw: raw}, &m); !diags.HasError() {
		t.Fatal("a value of another type was read")
	}
	// Nor is a model written into a state of another schema's type (the codec keeps the
	// type of the first schema it met).
	var good proxyVMModel
	if diags := getState(ctx, tfsdk.State{Schema: proxyVMSchema(ctx), Raw: nullsOf(mustObjectType(t))}, &good); diags.HasError() {
		t.Fatal(diags)
	}
	if diags := setState(ctx, &tfsdk.State{Schema: proxyVMSchema(ctx), Raw: raw}, &good); !diags.HasError() {
		t.Fatal("a model was written into a state of another type")
	}
	if diags := setPlan(ctx, &tfsdk.Plan{Schema: proxyVMSchema(ctx), Raw: raw}, &good); !diags.HasError() {
		t.Fatal("a model was written into a plan of another type")
	}
	// And a zero model (types.Object without attribute types) cannot be written, as Set refuses it.
	st := tfsdk.State{Schema: proxyVMSchema(ctx)}
	if diags := setState(ctx, &st, &proxyVMModel{}); !diags.HasError() {
		t.Fatal("a zero model was written")
	}
	if diags := (&tfsdk.State{Schema: proxyVMSchema(ctx)}).Set(ctx, &proxyVMModel{}); !diags.HasError() {
		t.Fatal("the framework's Set writes a zero model: the codec should too")
	}
}

// evenType is an Int64 type that validates its values (xattr.TypeWithValidate): only even
// numbers, as a custom type's own check.
type evenType struct{ basetypes.Int64Type }

func (evenType) Validate(_ context.Context, v tftypes.Value, p path.Path) diag.Diagnostics {
	var f big.Float
	if v.IsKnown() && !v.IsNull() && v.As(&f) == nil {
		if n, _ := f.Int64(); n%2 != 0 {
			return diag.Diagnostics{diag.NewAttributeErrorDiagnostic(p, "odd", "the number is odd")}
		}
	}
	return nil
}

// selfCheckedString validates itself (xattr.ValidateableAttribute).
type selfCheckedString struct{ basetypes.StringValue }

func (selfCheckedString) ValidateAttribute(context.Context, xattr.ValidateAttributeRequest, *xattr.ValidateAttributeResponse) {
}

// selfCheckedType is the String type whose values are selfCheckedString.
type selfCheckedType struct{ basetypes.StringType }

func (selfCheckedType) ValueFromTerraform(ctx context.Context, v tftypes.Value) (attr.Value, error) {
	sv, err := basetypes.StringType{}.ValueFromTerraform(ctx, v)
	if err != nil {
		return nil, err
	}
	return selfCheckedString{StringValue: sv.(basetypes.StringValue)}, nil
}

// TestModelCodec_generic: the codec on small models of its own, for what proxyVMModel does
// not exercise: a type's own Validate runs on read and on write, as the framework's Get and
// Set run it; a field of another Go type than the schema's values, a value that is null as a
// whole, and fields whose values validate themselves are errors, never a wrong read.
func TestModelCodec_generic(t *testing.T) {
	ctx := context.Background()
	sch := rschema.Schema{Attributes: map[string]rschema.Attribute{
		"n": rschema.Int64Attribute{Optional: true, CustomType: evenType{}},
		"s": rschema.StringAttribute{Optional: true},
	}}
	typ := sch.Type().TerraformType(ctx)
	val := func(n int) tftypes.Value {
		return tftypes.NewValue(typ, map[string]tftypes.Value{
			"n": tftypes.NewValue(tftypes.Number, big.NewFloat(float64(n))), "s": tftypes.NewValue(tftypes.String, "x")})
	}
	type model struct {
		N types.Int64  `tfsdk:"n"`
		S types.String `tfsdk:"s"`
	}
	var c modelCodec[model]
	var m model
	if diags, err := c.get(ctx, sch, val(2), &m); err != nil || diags.HasError() || m.N.ValueInt64() != 2 || m.S.ValueString() != "x" {
		t.Fatalf("an even number: %+v, %v %v", m, diags, err)
	}
	for _, st := range []tfsdk.State{{Schema: sch, Raw: val(3)}} {
		var fw model
		if diags := st.Get(ctx, &fw); !diags.HasError() {
			t.Fatal("the framework's Get reads an odd number: the codec's check is not the framework's")
		}
		diags, err := c.get(ctx, sch, st.Raw, &m)
		if want := st.Get(ctx, &fw); err != nil || !diags.Equal(want) {
			t.Errorf("an odd number: the codec says %v %v, the framework's Get %v", diags, err, want)
		}
	}
	odd := model{N: types.Int64Value(3), S: types.StringValue("x")}
	if diags := (&tfsdk.State{Schema: sch}).Set(ctx, &odd); !diags.HasError() {
		t.Fatal("the framework's Set writes an odd number: the codec's check is not the framework's")
	}
	if _, diags, err := c.value(ctx, sch, &odd); err != nil || !diags.Equal((&tfsdk.State{Schema: sch}).Set(ctx, &odd)) {
		t.Errorf("an odd number: the codec writes it (%v %v), or not as the framework's Set refuses it", diags, err)
	}
	if _, err := c.get(ctx, sch, tftypes.NewValue(typ, nil), &m); err == nil {
		t.Error("a null value was read as a model")
	}
	if _, err := c.get(ctx, sch, tftypes.NewValue(typ, tftypes.UnknownValue), &m); err == nil {
		t.Error("an unknown value was read as a model")
	}

	type wrongField struct {
		N types.String `tfsdk:"n"`
		S types.String `tfsdk:"s"`
	}
	var cw modelCodec[wrongField]
	var w wrongField
	if _, err := cw.get(ctx, sch, val(2), &w); err == nil {
		t.Error("an Int64 attribute was read into a String field")
	}

	type selfChecked struct {
		N types.Int64       `tfsdk:"n"`
		S selfCheckedString `tfsdk:"s"`
	}
	selfSch := rschema.Schema{Attributes: map[string]rschema.Attribute{
		"n": rschema.Int64Attribute{Optional: true},
		"s": rschema.StringAttribute{Optional: true, CustomType: selfCheckedType{}},
	}}
	var cs modelCodec[selfChecked]
	var s selfChecked
	if _, err := cs.get(ctx, selfSch, val(2), &s); err == nil {
		t.Error("a model whose values validate themselves was read (the codec does not run ValidateAttribute)")
	}
}
