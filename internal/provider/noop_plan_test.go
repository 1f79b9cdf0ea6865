package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// A no-op plan of one proxy_vm as Terraform drives the provider through the protocol:
// ValidateResourceConfig, ReadResource (the refresh), PlanResourceChange with the
// proposed new state Terraform computes from the refreshed state and the configuration.
// BenchmarkNoopPlan measures what the provider spends on it per VM (the framework's
// decoding, plan modifiers and our Read and ModifyPlan, the simulator's requests
// included); bench/results.md's no-op plan is the same work through terraform.

// noopPlanEnv is one proxy_vm created through the provider's protocol server over an
// in-process simulator.
type noopPlanEnv struct {
	ctx     context.Context
	sim     *pvesim.Sim
	srv     tfprotov6.ProviderServer
	sch     *tfprotov6.Schema
	typ     tftypes.Type
	config  tftypes.Value
	state   *tfprotov6.DynamicValue
	private []byte
}

func newNoopPlanEnv(tb testing.TB) *noopPlanEnv {
	tb.Helper()
	ctx := context.Background()
	sim := pvesim.NewForTest(tb, pvesim.Options{TemplateAgent: true})
	srv := providerserver.NewProtocol6(New("test")())()
	schemas, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || len(schemas.Diagnostics) > 0 {
		tb.Fatalf("schema: %v%s", err, diagText(schemas.Diagnostics))
	}
	templates := map[string]any{}
	for k, v := range sim.Templates {
		templates[k] = v
	}
	nodes := make([]any, len(sim.Nodes))
	for i, n := range sim.Nodes {
		nodes[i] = n
	}
	configured, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{
		TerraformVersion: "1.11.4",
		Config: dynamicValue(tb, schemas.Provider.ValueType(), cfg{
			"endpoint": sim.Endpoint, "api_token": sim.APIToken, "ca_pem": sim.CAPEM,
			"nodes": nodes, "iso_storage": sim.ISOStorage, "templates": templates,
			"machine_types":       map[string]any{"small": map[string]any{"cores": 1, "memory_mib": 512}},
			"install_guest_agent": false,
		}),
	})
	if err != nil || hasErrorDiag(configured.Diagnostics) {
		tb.Fatalf("configure: %v%s", err, diagText(configured.Diagnostics))
	}
	sch := schemas.ResourceSchemas["proxy_vm"]
	e := &noopPlanEnv{ctx: ctx, sim: sim, srv: srv, sch: sch, typ: sch.ValueType()}
	e.config = tfValue(tb, e.typ, map[string]any{"name": "noop-1", "image": "debian-13", "machine_type": "small"})
	config := e.dynamic(tb, e.config)
	if v, err := srv.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: "proxy_vm", Config: config}); err != nil || hasErrorDiag(v.Diagnostics) {
		tb.Fatalf("validate: %v%s", err, diagText(v.Diagnostics))
	}
	null := e.dynamic(tb, tftypes.NewValue(e.typ, nil))
	planned, err := srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{
		TypeName: "proxy_vm", PriorState: null, ProposedNewState: config, Config: config})
	if err != nil || hasErrorDiag(planned.Diagnostics) {
		tb.Fatalf("plan of the create: %v%s", err, diagText(planned.Diagnostics))
	}
	applied, err := srv.ApplyResourceChange(ctx, &tfprotov6.ApplyResourceChangeRequest{
		TypeName: "proxy_vm", PriorState: null, PlannedState: planned.PlannedState, Config: config,
		PlannedPrivate: planned.PlannedPrivate})
	if err != nil || hasErrorDiag(applied.Diagnostics) {
		tb.Fatalf("create: %v%s", err, diagText(applied.Diagnostics))
	}
	e.state, e.private = applied.NewState, applied.Private
	return e
}

func (e *noopPlanEnv) dynamic(tb testing.TB, v tftypes.Value) *tfprotov6.DynamicValue {
	tb.Helper()
	dv, err := tfprotov6.NewDynamicValue(e.typ, v)
	if err != nil {
		tb.Fatal(err)
	}
	return &dv
}

// plan makes one no-op plan: it returns the refreshed state, the planned state and the
// paths the plan says require a replacement.
func (e *noopPlanEnv) plan(tb testing.TB) (refreshed, planned tftypes.Value, replace []*tftypes.AttributePath) {
	tb.Helper()
	config := e.dynamic(tb, e.config)
	v, err := e.srv.ValidateResourceConfig(e.ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: "proxy_vm", Config: config})
	if err != nil || hasErrorDiag(v.Diagnostics) {
		tb.Fatalf("validate: %v%s", err, diagText(v.Diagnostics))
	}
	read, err := e.srv.ReadResource(e.ctx, &tfprotov6.ReadResourceRequest{TypeName: "proxy_vm", CurrentState: e.state, Private: e.private})
	if err != nil || len(read.Diagnostics) > 0 {
		tb.Fatalf("read: %v%s", err, diagText(read.Diagnostics))
	}
	refreshed, err = read.NewState.Unmarshal(e.typ)
	if err != nil {
		tb.Fatal(err)
	}
	proposed := proposedNew(e.sch.Block, refreshed, e.config)
	p, err := e.srv.PlanResourceChange(e.ctx, &tfprotov6.PlanResourceChangeRequest{
		TypeName: "proxy_vm", PriorState: read.NewState, ProposedNewState: e.dynamic(tb, proposed),
		Config: config, PriorPrivate: read.Private})
	if err != nil || len(p.Diagnostics) > 0 {
		tb.Fatalf("plan: %v%s", err, diagText(p.Diagnostics))
	}
	planned, err = p.PlannedState.Unmarshal(e.typ)
	if err != nil {
		tb.Fatal(err)
	}
	return refreshed, planned, p.RequiresReplace
}

// proposedNew is the proposed new state Terraform sends to PlanResourceChange
// (objchange.ProposedNew in Terraform's sources): the configuration, with each computed
// attribute the configuration leaves null taken from the prior state, nested attributes
// set in the configuration merged the same way, blocks and write-only attributes as
// configured (write-only ones null).
func proposedNew(b *tfprotov6.SchemaBlock, prior, config tftypes.Value) tftypes.Value {
	var p, c map[string]tftypes.Value
	if prior.IsNull() || config.IsNull() || !config.IsKnown() {
		return config
	}
	if prior.As(&p) != nil || config.As(&c) != nil {
		return config
	}
	out := make(map[string]tftypes.Value, len(c))
	for k, v := range c {
		out[k] = v
	}
	for _, a := range b.Attributes {
		cv, pv := c[a.Name], p[a.Name]
		switch {
		case a.WriteOnly:
			out[a.Name] = tftypes.NewValue(cv.Type(), nil)
		case cv.IsNull() && a.Computed:
			out[a.Name] = pv
		case a.NestedType != nil && a.NestedType.Nesting == tfprotov6.SchemaObjectNestingModeSingle:
			out[a.Name] = proposedNew(&tfprotov6.SchemaBlock{Attributes: a.NestedType.Attributes}, pv, cv)
		}
	}
	return tftypes.NewValue(config.Type(), out)
}

// diagText is diags as text, for a failure message.
func diagText(diags []*tfprotov6.Diagnostic) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "\n%s: %s: %s (%v)", d.Severity, d.Summary, d.Detail, d.Attribute)
	}
	return b.String()
}

func hasErrorDiag(diags []*tfprotov6.Diagnostic) bool {
	for _, d := range diags {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			return true
		}
	}
	return false
}

// TestNoopPlan_protocol: a VM just created plans nothing (the planned state is the
// refreshed one, nothing to replace), plan after plan: the benchmark below measures a
// no-op plan, not a change.
func TestNoopPlan_protocol(t *testing.T) {
	e := newNoopPlanEnv(t)
	for i := range 3 {
		refreshed, planned, replace := e.plan(t)
		if !planned.Equal(refreshed) {
			diffs, _ := refreshed.Diff(planned)
			t.Fatalf("plan %d: the planned state differs from the refreshed one: %v", i+1, diffs)
		}
		if len(replace) > 0 {
			t.Fatalf("plan %d: requires replacement of %v", i+1, replace)
		}
	}
}

// BenchmarkNoopPlan: one VM's share of a no-op plan in the provider (per op: validate,
// refresh, plan), requests to the in-process simulator included.
func BenchmarkNoopPlan(b *testing.B) {
	e := newNoopPlanEnv(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.plan(b)
	}
}
