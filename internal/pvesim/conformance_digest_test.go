package pvesim_test

import (
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// A config write carrying the digest of the config it was based on is refused when the
// config changed since (qemu-server update_vm_api, "Prevent changes if current
// configuration file has different SHA1 digest"), and applied when it did not: the
// compare-and-swap Create's last step relies on.
func TestConfigWriteWithStaleDigestIsRefused(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.parallel()
	tg.cloned()
	cfg, err := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	old := cfg["digest"]
	if len(old) != 40 {
		t.Fatalf("config digest %q is not a sha1", old)
	}
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"description": "first", "digest": old}); err != nil {
		t.Fatalf("write with the current digest: %v", err)
	}
	err = tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"description": "second", "digest": old})
	tg.wantAPIError(err, "err_config_modified")
	if !pveapi.IsConfigModified(err) {
		t.Error("IsConfigModified is false for the stale-digest answer")
	}
	cfg, err = tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if cfg["description"] != "first" {
		t.Errorf("description %q after the refused write, want %q", cfg["description"], "first")
	}
}
