package proxmox

import "testing"

func TestTemplateOf_matchesTheCapturedMetaCtime(t *testing.T) {
	h := newHarness(t) // template 9001 from vm_config_template_9001
	h.f.addTemplate(9000, "pv1-1", fixtureConfig("vm_config_template_9000"))
	h.f.addVM(&fakeVM{VMID: 500, Name: "not-a-template", Config: map[string]string{"meta": fixtureConfig("vm_config_template_9001")["meta"]}})
	clone := fixtureConfig("vm_config_clone")
	vm := vmFromConfig(testID, "pv1-1", clone, Mark{})
	for _, tc := range []struct {
		name       string
		candidates []int
		want       int
	}{
		{"9001 among the catalogue", []int{9000, 9001, 9001, 777}, 9001},
		{"only 9000", []int{9000}, 0},
		{"a plain VM with the same meta is not a template", []int{500}, 0},
		{"none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := h.b.TemplateOf(h.ctx, vm, tc.candidates)
			if err != nil || got != tc.want || ok != (tc.want != 0) {
				t.Errorf("TemplateOf = %d, %v, %v; want %d", got, ok, err, tc.want)
			}
		})
	}
	t.Run("two templates with the same ctime are ambiguous", func(t *testing.T) {
		h.f.addTemplate(9002, "pv1-1", nil)
		h.clock.advance(h.b.cfg.Budgets.ListingTTL)
		if _, ok, _ := h.b.TemplateOf(h.ctx, vm, []int{9001, 9002}); ok {
			t.Error("matched one of two identical templates")
		}
	})
	t.Run("no meta", func(t *testing.T) {
		if _, ok, _ := h.b.TemplateOf(h.ctx, VM{}, []int{9001}); ok {
			t.Error("matched without a meta ctime")
		}
	})
}
