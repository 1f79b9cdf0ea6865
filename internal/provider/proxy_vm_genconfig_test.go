package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestCheckTemplatePair: an image and a template_vmid naming the same template are
// accepted (a generated configuration sets both); different templates are refused on
// template_vmid with both values named; one of them alone is not this check's business.
func TestCheckTemplatePair(t *testing.T) {
	cfg := &resolvedConfig{Templates: map[string]int{"debian-13": 9001, "ubuntu": 9002}}
	m := func(image string, vmid int64) proxyVMModel {
		v := proxyVMModel{vmTemplate: vmTemplate{Image: types.StringNull(), TemplateVMID: types.Int64Null()}}
		if image != "" {
			v.Image = types.StringValue(image)
		}
		if vmid != 0 {
			v.TemplateVMID = types.Int64Value(vmid)
		}
		return v
	}
	for _, ok := range []proxyVMModel{m("debian-13", 9001), m("debian-13", 0), m("", 9002), m("unknown-key", 9001)} {
		if d := checkTemplatePair(cfg, ok); d.HasError() {
			t.Errorf("%v %v refused: %v", ok.Image, ok.TemplateVMID, d)
		}
	}
	d := checkTemplatePair(cfg, m("debian-13", 9002))
	if !d.HasError() || len(d) != 1 {
		t.Fatalf("image debian-13 with template_vmid 9002: %v", d)
	}
	pd, ok := d[0].(interface{ Path() path.Path })
	if !ok || !pd.Path().Equal(path.Root("template_vmid")) || !strings.Contains(d[0].Detail(), "9001") || !strings.Contains(d[0].Detail(), "9002") {
		t.Errorf("diagnostic %v: want it on template_vmid naming 9001 and 9002", d[0])
	}
}
