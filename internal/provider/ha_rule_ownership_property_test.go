package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The ownership property for HA rules (decision: ha-rule-mark), as TestOwnership_property
// for VMs: on every path a proxy_ha_rule takes (create of the same id, refresh, update,
// destroy, import) and for every kind of rule that is not the resource's but looks like it,
// no write reaches that rule: counted from the simulator's request log (every non-GET
// request on /cluster/ha/rules), and the rule compared before and after.

const haPropRule = "proxy-pair"

func haRulePropVariants() []struct{ name, comment string } {
	mark := proxmox.MarkKeyHARule + "="
	return []struct{ name, comment string }{
		{"no mark", "made in the web UI"},
		{"other uid", "keep apart\n" + mark + propOtherUID},
		{"mark without a uid", mark},
		{"padded mark line", mark + " " + propStateUID},
		{"mark not on a line of its own", "see " + mark + propStateUID},
		{"a VM's mark", proxmox.MarkLines{UID: propStateUID, CreatedAt: propAt}.Format()},
		{"other uid first, ours second", mark + propOtherUID + "\n" + mark + propStateUID},
	}
}

func haRulePropPaths() []struct {
	name string
	run  func(ctx context.Context, t *testing.T, b *proxmox.Backend)
} {
	spec := proxmox.HARuleSpec{ID: haPropRule, Type: proxmox.HARuleResourceAffinity, Affinity: "positive", VMIDs: []int{7001, 7002}, UID: propStateUID}
	refused := func(t *testing.T, what string, err error) {
		if !errors.Is(err, proxmox.ErrHARuleNotOurs) || proxmox.ClassOf(err) != pveapi.Permanent {
			t.Errorf("%s: %v, want a refusal (not this resource's rule)", what, err)
		}
	}
	return []struct {
		name string
		run  func(ctx context.Context, t *testing.T, b *proxmox.Backend)
	}{
		{"create of the same id", func(ctx context.Context, t *testing.T, b *proxmox.Backend) {
			if err := b.CreateHARule(ctx, spec); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("create: %v, want a refusal naming the rule", err)
			}
		}},
		{"refresh", func(ctx context.Context, t *testing.T, b *proxmox.Backend) {
			_, err := b.GetHARule(ctx, haPropRule, propStateUID)
			refused(t, "refresh", err)
		}},
		{"refresh of a state without a uid", func(ctx context.Context, t *testing.T, b *proxmox.Backend) {
			_, err := b.GetHARule(ctx, haPropRule, "")
			refused(t, "refresh", err)
		}},
		{"update", func(ctx context.Context, t *testing.T, b *proxmox.Backend) {
			refused(t, "update", b.UpdateHARule(ctx, spec))
		}},
		{"destroy", func(ctx context.Context, t *testing.T, b *proxmox.Backend) {
			refused(t, "destroy", b.DeleteHARule(ctx, haPropRule, propStateUID))
		}},
		{"import", func(ctx context.Context, t *testing.T, b *proxmox.Backend) {
			r, err := b.ImportHARule(ctx, haPropRule)
			if err == nil && (r.UID == "" || r.UID == propStateUID) {
				t.Errorf("import took the rule with uid %q", r.UID)
			}
		}},
	}
}

func TestOwnership_haRuleProperty(t *testing.T) {
	cases, writes := 0, 0
	for _, p := range haRulePropPaths() {
		for _, v := range haRulePropVariants() {
			t.Run(p.name+"/"+v.name, func(t *testing.T) {
				sim := pvesim.NewForTest(t, pvesim.Options{Nodes: []string{"pve1", "pve2", "pve3"}})
				client, err := pveapi.New(pveapi.Options{Endpoint: sim.Endpoint, Token: sim.APIToken, CAPEM: sim.CAPEM, RequestTimeout: harnessRequestTimeout})
				if err != nil {
					t.Fatal(err)
				}
				b := proxmox.New(client, proxmox.Config{Nodes: sim.Nodes, ISOStorage: sim.ISOStorage, Budgets: proxmox.DefaultBudgets()})
				for i, node := range []string{"pve1", "pve2"} {
					if err := sim.AddVM(pvesim.VMSpec{VMID: 7001 + i, Node: node, Power: "running"}); err != nil {
						t.Fatal(err)
					}
					if err := sim.AddHAResource(7001+i, ""); err != nil {
						t.Fatal(err)
					}
				}
				foreign := pvesim.HARuleState{ID: haPropRule, Type: "resource-affinity", Affinity: "negative", Resources: []string{"vm:7001", "vm:7002"}, Comment: v.comment}
				if err := sim.AddHARule(foreign); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				sim.EnableRequestLog()
				p.run(ctx, t, b)
				var wrote []string
				for _, r := range sim.RequestLog() {
					if r.Method != http.MethodGet && strings.HasPrefix(r.Path, "/cluster/ha/rules") {
						wrote = append(wrote, r.Method+" "+r.Path)
					}
				}
				if after, ok := simRuleOf(sim, haPropRule); !ok || !reflect.DeepEqual(after, foreign) {
					wrote = append(wrote, fmt.Sprintf("the rule changed: %+v -> %+v", foreign, after))
				}
				if len(wrote) > 0 {
					t.Errorf("%d writes reached the foreign rule: %v", len(wrote), wrote)
				}
				cases++
				writes += len(wrote)
			})
		}
	}
	t.Logf("HA rule ownership property: %d cases, writes to foreign rules: %d", cases, writes)
	if want := len(haRulePropPaths()) * len(haRulePropVariants()); cases != want {
		t.Errorf("%d cases ran, want %d", cases, want)
	}
}

func simRuleOf(sim *pvesim.Sim, id string) (pvesim.HARuleState, bool) {
	for _, r := range sim.HARules() {
		if r.ID == id {
			return r, true
		}
	}
	return pvesim.HARuleState{}, false
}
