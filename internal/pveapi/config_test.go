package pveapi

import (
	"reflect"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// TestDecodeConfig_scalarsAsStrings: numbers keep their text, strings stay, booleans become
// "1"/"0", null is dropped; nested values are refused.
func TestDecodeConfig_scalarsAsStrings(t *testing.T) {
	got, err := decodeConfig([]byte(`{"cores":2,"memory":"2048","template":1,"balloon":0,"cpuunits":1024.5,
		"big":123456789012,"onboot":true,"protection":false,"gone":null,"description":"a\nb"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cores": "2", "memory": "2048", "template": "1", "balloon": "0", "cpuunits": "1024.5",
		"big": "123456789012", "onboot": "1", "protection": "0", "description": "a\nb"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{`{"a":{"b":1}}`, `{"a":[1]}`, `[1]`, `{`} {
		if _, err := decodeConfig([]byte(bad)); err == nil {
			t.Errorf("decodeConfig(%s) succeeded", bad)
		}
	}
}

// TestDecodeConfig_templateFixtures: the template captures decode with every key a string.
func TestDecodeConfig_templateFixtures(t *testing.T) {
	for _, name := range []string{"vm_config_template_9001", "vm_config_template_9000"} {
		var raw map[string]any
		f := fixture.MustLoad(name)
		if err := f.Data(&raw); err != nil {
			t.Fatal(err)
		}
		cfg := map[string]string{}
		if err := decodeData(mustRawData(t, f), &cfg); err != nil {
			t.Fatal(err)
		}
		if len(cfg) != len(raw) || cfg["template"] != "1" || cfg["cores"] != "2" || cfg["agent"] != "1" {
			t.Errorf("%s: %v", name, cfg)
		}
	}
}

func mustRawData(t *testing.T, f fixture.Fixture) []byte {
	t.Helper()
	var raw rawJSON
	if err := f.Data(&raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}
