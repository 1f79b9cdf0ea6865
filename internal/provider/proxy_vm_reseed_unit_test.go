package provider

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// TestPlanReseed: with cloud_init_change = "restart" a change of the seed's content is taken
// out of the replacement and the plan says what the apply does to the VM; with "replace"
// (or no prior: a create) the replacement stays.
func TestPlanReseed(t *testing.T) {
	ci := []path.Path{path.Root("cloud_init")}
	for _, tc := range []struct {
		name, mode, status string
		started, reboot    bool
		wantReseed         bool
		wantSummary        string
	}{
		{"replace keeps the replacement", "replace", "running", true, true, false, ""},
		{"restart of a running VM", "restart", "running", true, true, true, "Proxy VM will be restarted"},
		{"restart deferred", "restart", "running", true, false, true, "Proxy VM change pending"},
		{"stopped VM", "restart", "stopped", false, true, true, "Proxy VM seed replaced in place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prior := proxyVMModel{vmIdentityFacet: vmIdentityFacet{Name: types.StringValue("egress")}, vmPower: vmPower{vmPowerState: vmPowerState{Status: types.StringValue(tc.status)}}, vmAddresses: vmAddresses{IPAddress: types.StringValue("10.0.0.5")}}
			plan := prior
			plan.CloudInitChange = types.StringValue(tc.mode)
			plan.Started = types.BoolValue(tc.started)
			plan.RebootOnChange = types.BoolValue(tc.reboot)
			replace, reseed, diags := planReseed(context.Background(), proxyVMModel{}, &plan, &prior, ci)
			if reseed != tc.wantReseed || (len(replace) == 0) != tc.wantReseed {
				t.Fatalf("reseed %v, replace %v", reseed, replace)
			}
			if tc.wantSummary == "" {
				if len(diags) != 0 {
					t.Errorf("diagnostics %v", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary() != tc.wantSummary || !strings.Contains(diags[0].Detail(), "SSH host keys") {
				t.Fatalf("diagnostics %v, want one %q saying what a new instance-id does", diags, tc.wantSummary)
			}
			if restart := tc.wantSummary == "Proxy VM will be restarted"; restart != plan.IPAddress.IsUnknown() {
				t.Errorf("ip_address %s with restart %v", plan.IPAddress, restart)
			}
		})
	}
	prior := proxyVMModel{vmPower: vmPower{vmPowerState: vmPowerState{Status: types.StringValue("running")}}}
	if replace, reseed, _ := planReseed(context.Background(), proxyVMModel{}, &proxyVMModel{vmCloudInit: vmCloudInit{CloudInitChange: types.StringValue("restart")}}, nil, ci); reseed || len(replace) != 1 {
		t.Errorf("a create: reseed %v replace %v", reseed, replace)
	}
	if _, reseed, _ := planReseed(context.Background(), proxyVMModel{}, &proxyVMModel{vmCloudInit: vmCloudInit{CloudInitChange: types.StringValue("restart")}}, &prior, nil); reseed {
		t.Errorf("no seed change: reseed planned")
	}
}

// TestReadSeedDrift: a refresh that finds a sign of a cut-off seed swap reports the
// cloud-init as not known (cloud_init and its digest null), drops the import marker's
// cloud_init, and warns; then a cloud_init_wo, or a cloud_init, with the old text or with
// the text the seed carries is planned as a seed change (the swap that restarts the guest
// on it). The signs: ide2 naming another generation than the state's seed_generation (with
// no private record, as after a kill -9), or, without one, than the private record; a seed
// a killed swap left (leftovers); with neither generation known, a mark digest that is not
// the state's. The same generation, another storage (a migration), or a seed that is not
// of this uid (the proxy operator's <name>-seed.iso) is no drift. seed_generation ends as
// the one ide2 names.
func TestReadSeedDrift(t *testing.T) {
	ctx := context.Background()
	const name, uid = "egress", "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10"
	gen := func(storage string, g int) string {
		if g == 1 {
			return storage + ":iso/" + name + "-" + uid + "-seed.iso"
		}
		return storage + ":iso/" + name + "-" + uid + "-" + strconv.Itoa(g) + "-seed.iso"
	}
	cfg := &resolvedConfig{DigestKey: testDigestKey}
	oldText, newText := "#cloud-config\n# old\n", "#cloud-config\n# new\n"
	for _, tc := range []struct {
		name, recorded, seed string
		stateGen             int // 0: null (a state saved before seed_generation)
		markText             string
		leftovers            []string
		drift                bool
		detail               []string // what the warning names
	}{
		{"the next generation", gen("isos", 1), gen("isos", 2), 0, newText, nil, true, []string{gen("isos", 2), gen("isos", 1)}},
		{"an earlier generation", gen("isos", 3), gen("isos", 2), 0, oldText, nil, true, []string{gen("isos", 2), gen("isos", 3)}},
		{"the same generation", gen("isos", 2), gen("isos", 2), 0, oldText, nil, false, nil},
		{"moved to another storage", gen("isos", 2), gen("shared", 2), 0, oldText, nil, false, nil},
		{"nothing recorded, the same digest", "", gen("isos", 2), 0, oldText, nil, false, nil},
		{"the operator's seed, another digest", "isos:iso/" + name + "-seed.iso", gen("isos", 2), 0, newText, nil, true, []string{"digest"}},
		{"the operator's seed, the same digest", "isos:iso/" + name + "-seed.iso", gen("isos", 2), 0, oldText, nil, false, nil},
		// An imported proxy-operator VM, no digest key: a generation of this uid on ide2 is
		// the sign itself (adv1 finding 14).
		{"the operator's seed, no digest", "isos:iso/" + name + "-seed.iso", gen("isos", 2), 0, "", nil, true, []string{gen("isos", 2), "did not make"}},
		{"no record nor generation nor digest", "", gen("isos", 2), 0, "", nil, true, []string{gen("isos", 2), "no seed generation"}},
		{"no record nor generation nor digest, the operator's seed", "", "isos:iso/" + name + "-seed.iso", 0, "", nil, false, nil},
		// A seed of the state's generation is never a leftover (a forged swap line).
		{"the state's generation is no leftover", "", "isos:iso/" + name + "-seed.iso", 1, oldText, []string{gen("isos", 1)}, false, nil},
		{"another generation is a leftover", "", "isos:iso/" + name + "-seed.iso", 1, oldText, []string{gen("isos", 1), gen("isos", 2)}, true, []string{gen("isos", 2)}},
		{"another uid's seed", gen("isos", 1), "isos:iso/" + name + "-7d1e0c3a-5b2f-4a8e-9c61-0e4f2a7b9d35-2-seed.iso", 0, newText, nil, false, nil},
		// A kill -9: no answer to Terraform, the private state dropped.
		{"no record, the state's generation", "", gen("isos", 2), 1, newText, nil, true, []string{gen("isos", 2), "generation 1"}},
		{"no record, the state's generation named", "", gen("isos", 2), 2, oldText, nil, false, nil},
		{"the state's generation wins over the record", gen("isos", 2), gen("isos", 2), 1, newText, nil, true, []string{"generation 1"}},
		{"the state's generation, the record stale", gen("isos", 1), gen("isos", 2), 2, oldText, nil, false, nil},
		{"no record nor generation, another digest", "", gen("isos", 2), 0, newText, nil, true, []string{"digest"}},
		{"killed before its config write", "", gen("isos", 1), 1, oldText, []string{gen("isos", 2)}, true, []string{gen("isos", 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fakePrivate{}
			if tc.recorded != "" {
				writeSeed(ctx, p, p, seedWrite{volid: tc.recorded})
			}
			writeImportMarker(ctx, p, []unreadAttr{unreadCloudInit, unreadTemplate})
			state := proxyVMModel{vmIdentityFacet: vmIdentityFacet{Name: types.StringValue(name), UID: types.StringValue(uid)}, vmCloudInit: vmCloudInit{CloudInit: types.StringNull(),
				CloudInitDigest: types.StringValue(cloudInitDigest(testDigestKey, uid, oldText)), SeedGeneration: intOrNull(tc.stateGen)}}
			vm := proxmox.VM{ID: proxmox.ID{VMID: 1003, Name: name}, Seed: tc.seed}
			if tc.markText != "" { // "": no digest key, the mark carries no digest
				vm.MarkExtra.UserDataDigest = cloudInitDigest(testDigestKey, uid, tc.markText)
			}
			var d diag.Diagnostics
			readSeedDrift(ctx, p, p, &state, vm, tc.leftovers, &d)
			unread, _ := readImportMarker(ctx, p)
			if g, ok := proxmox.SeedGeneration(tc.seed, name, uid); ok != !state.SeedGeneration.IsNull() || int64(g) != state.SeedGeneration.ValueInt64() {
				t.Errorf("seed_generation %s, want the one ide2 names (%d, %t)", state.SeedGeneration, g, ok)
			}
			if !tc.drift {
				if len(d) != 0 || state.CloudInitDigest.ValueString() != cloudInitDigest(testDigestKey, uid, oldText) || len(unread) != 2 {
					t.Errorf("no drift, yet %v, digest %s, unread %v", d, state.CloudInitDigest, unread)
				}
				return
			}
			if len(d) != 1 || d.HasError() || !strings.Contains(d[0].Detail(), "was interrupted") {
				t.Fatalf("diagnostics %v, want one warning saying the last apply was interrupted", d)
			}
			for _, w := range tc.detail {
				if !strings.Contains(d[0].Detail(), w) {
					t.Errorf("the warning does not name %q: %s", w, d[0].Detail())
				}
			}
			if strings.Contains(d[0].Detail(), "hmac-sha256") {
				t.Errorf("the warning shows a digest: %s", d[0].Detail())
			}
			if !state.CloudInit.IsNull() || !state.CloudInitDigest.IsNull() {
				t.Errorf("state cloud_init %s, digest %s: want both null", state.CloudInit, state.CloudInitDigest)
			}
			if !slices.Equal(unread, []unreadAttr{unreadTemplate}) {
				t.Errorf("import marker %v, want the template only", unread)
			}
			for _, text := range []string{oldText, newText} {
				// Write-only, with the digest key: a change of cloud_init_digest.
				config := proxyVMModel{vmIdentityFacet: vmIdentityFacet{UID: types.StringValue(uid)}, vmCloudInit: vmCloudInit{CloudInit: types.StringNull(), CloudInitWO: types.StringValue(text)}}
				plan := config
				replace, pd := planCloudInitDigest(cfg, config, &plan, &state, false)
				if pd.HasError() || len(replace) != 1 || !replace[0].Equal(path.Root("cloud_init_digest")) {
					t.Errorf("cloud_init_wo %q: plan replace %v (%v), want cloud_init_digest", text, replace, pd)
				}
				// As cloud_init, with and without the key: a change of cloud_init.
				for _, c := range []*resolvedConfig{cfg, {}} {
					config = proxyVMModel{vmIdentityFacet: vmIdentityFacet{UID: types.StringValue(uid)}, vmCloudInit: vmCloudInit{CloudInit: types.StringValue(text), CloudInitWO: types.StringNull()}}
					plan = config
					if replace, _ := planCloudInitDigest(c, config, &plan, &state, false); len(replace) != 1 || !replace[0].Equal(path.Root("cloud_init")) {
						t.Errorf("cloud_init %q (key %q): replace %v, want cloud_init", text, c.DigestKey, replace)
					}
				}
			}
		})
	}
}
