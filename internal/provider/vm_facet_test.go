package provider

import (
	"context"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// onVM is the read step's context of vm, outside a model.
func onVM(vm proxmox.VM) *facetCtx { return &facetCtx{vm: vm} }

// intoSpec is the spec step's context filling s.
func intoSpec(s *proxmox.Spec) *facetCtx { return &facetCtx{spec: s} }

// facetChanges runs f's changes step against prior into c, and says whether it changed
// anything.
func facetChanges(f vmFacet, prior proxyVMModel, c *proxmox.Changes) bool {
	fc := &facetCtx{prior: &prior, changes: c}
	f.changes(fc)
	return fc.changed
}

// planFacets runs the facets' plan checks as ModifyPlan does, without a backend (no CPU
// type check) and with a private state holding no record but, with templateUnread, an
// import marker that lists the template.
func planFacets(cfg *resolvedConfig, config proxyVMModel, plan, prior *proxyVMModel, templateUnread bool) ([]path.Path, diag.Diagnostics) {
	private := fakePrivate{}
	if templateUnread {
		private[privateKeyImport.name] = []byte(`{"unread":["template"]}`)
	}
	fc := &facetCtx{ctx: context.Background(), cfg: cfg, m: plan, prior: prior, config: config, private: private}
	for _, f := range plan.facets() {
		f.plan(fc)
	}
	return fc.replace, fc.diags
}

// TestFacets_listsEveryFacet: every struct proxyVMModel embeds that implements vmFacet is
// in proxyVMModel.facets once, so every step reaches it.
func TestFacets_listsEveryFacet(t *testing.T) {
	var m proxyVMModel
	listed := map[uintptr]int{}
	for _, f := range m.facets() {
		listed[reflect.ValueOf(f).Pointer()]++
	}
	v := reflect.ValueOf(&m).Elem()
	facets := 0
	for i := range v.NumField() {
		field := v.Type().Field(i)
		p := v.Field(i).Addr()
		if !field.Anonymous || !p.Type().Implements(reflect.TypeFor[vmFacet]()) {
			continue
		}
		facets++
		if n := listed[p.Pointer()]; n != 1 {
			t.Errorf("facet %s is listed %d times in proxyVMModel.facets, want once", field.Name, n)
		}
	}
	if facets != len(m.facets()) || facets < 10 {
		t.Errorf("proxyVMModel embeds %d facets, facets lists %d", facets, len(m.facets()))
	}
}
