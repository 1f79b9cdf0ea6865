package proxmox

import (
	"slices"
	"testing"
)

// withInPlaceTestOption adds an in-place option for the test.
func withInPlaceTestOption(t *testing.T) {
	t.Helper()
	old := InPlaceOptions
	InPlaceOptions = append(slices.Clone(old), InPlaceOption{Key: "testlive", Attr: "test_live"})
	t.Cleanup(func() { InPlaceOptions = old })
}

// TestInPlaceOptions_generic: an in-place option is written by a create when it differs
// from the template's, read back, and written by an update with no restart of a running
// VM, not again when the config holds it; a value that would break out of the option
// string is refused before any request.
func TestInPlaceOptions_generic(t *testing.T) {
	withInPlaceTestOption(t)
	ch := Changes{Options: map[string]string{"testlive": "300"}}

	p, err := planUpdate(planView(t, "running", nil), ch)
	if err != nil || p.params["testlive"] != "300" || len(p.optRestart) != 0 || p.powerFor(ch) != powerNone {
		t.Fatalf("running: err %v, params %v, restart %v, power %v", err, p.params, p.optRestart, p.powerFor(ch))
	}
	if !slices.Contains(p.did, "testlive") {
		t.Errorf("did %v", p.did)
	}
	if ChangesRestartOption(ch) {
		t.Error("an in-place option counted as a restart option")
	}
	held := planView(t, "running", func(cfg map[string]string) { cfg["testlive"] = "300" })
	if p, _ := planUpdate(held, ch); len(p.params) != 0 {
		t.Errorf("config holds it: params %v", p.params)
	}
	if _, err := planUpdate(planView(t, "running", nil), Changes{Options: map[string]string{"testlive": "1,args=x"}}); err == nil {
		t.Error("a value with ',' and '=' was planned")
	}

	params := map[string]string{}
	if err := inPlaceParams(params, Spec{Options: map[string]string{"testlive": "200"}}, map[string]string{}); err != nil || params["testlive"] != "200" {
		t.Errorf("create: %v %v", params, err)
	}
	params = map[string]string{}
	if err := inPlaceParams(params, Spec{Options: map[string]string{"testlive": "200"}}, map[string]string{"testlive": "200"}); err != nil || len(params) != 0 {
		t.Errorf("create, as cloned: %v %v", params, err)
	}
	if p, err := configParams(Spec{Options: map[string]string{"testlive": "7"}}, map[string]string{}, "local"); err != nil || p["testlive"] != "7" {
		t.Errorf("configParams: %v %v", p, err)
	}
	if vm := vmFromConfig(testID, "pve1", map[string]string{"testlive": "200"}, Mark{}); vm.Options["testlive"] != "200" {
		t.Errorf("read: %v", vm.Options)
	}
	if vm := vmFromConfig(testID, "pve1", map[string]string{}, Mark{}); vm.Options != nil {
		t.Errorf("read, unset: %v", vm.Options)
	}
}
