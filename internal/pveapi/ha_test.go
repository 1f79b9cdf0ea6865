package pveapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// The HA predicates join the matcher matrix and the HA error fixtures the classify table
// (errors_test.go), so that each HA answer matches exactly its own predicate.
func init() {
	for k, v := range map[string]func(error) bool{
		"IsHAResourceMissing": IsHAResourceMissing,
		"IsHANotManaged":      IsHANotManaged,
		"IsHAResourceExists":  IsHAResourceExists,
		"IsHAGuestMissing":    IsHAGuestMissing,
		"IsHARuleMissing":     IsHARuleMissing,
		"IsHARuleExists":      IsHARuleExists,
		"IsHAUnmanagedResources": func(err error) bool {
			_, ok := IsHAUnmanagedResources(err)
			return ok
		},
		"IsHAGroupsMigrated": IsHAGroupsMigrated,
	} {
		matchers[k] = v
	}
	for k, v := range map[string]classRow{
		"err_ha_resource_missing":        {Permanent, Permanent, "IsHAResourceMissing"},
		"err_ha_resource_update_missing": {Permanent, Permanent, "IsHAResourceMissing"},
		"err_ha_not_managed":             {Permanent, Permanent, "IsHANotManaged"},
		"err_ha_resource_exists":         {Permanent, Permanent, "IsHAResourceExists"},
		"err_ha_guest_missing":           {Permanent, Permanent, "IsHAGuestMissing"},
		"err_ha_rule_missing":            {Permanent, Permanent, "IsHARuleMissing"},
		"err_ha_rule_update_missing":     {Permanent, Permanent, "IsHARuleMissing"},
		"err_ha_rule_exists":             {Permanent, Permanent, "IsHARuleExists"},
		"err_ha_rule_unmanaged":          {Permanent, Permanent, "IsHAUnmanagedResources"},
		"err_ha_rule_invalid":            {Permanent, Permanent, ""},
		"err_ha_groups_migrated":         {Permanent, Permanent, "IsHAGroupsMigrated"},
		"err_forbidden_ha_console":       {Permanent, Permanent, "IsForbidden"},
		"err_forbidden_ha_audit":         {Permanent, Permanent, "IsForbidden"},
		// The product's Destroy always sends purge=1; a 500 no predicate names is Transient.
		"err_ha_destroy_managed": {Transient, Transient, ""},
		// Quorum comes back by itself; a service in error needs an admin.
		"err_ha_no_quorum":     {Transient, Transient, ""},
		"err_ha_service_error": {Transient, Transient, ""},
	} {
		classifyTable[k] = v
	}
}

// TestHA_wire checks each HA call's method, path and form against the parameter names of
// pve-ha-manager (src/PVE/HA/Resources.pm:12-98, src/PVE/HA/Rules.pm:138-169,
// Rules/NodeAffinity.pm:58-93, Rules/ResourceAffinity.pm:56-76, API2/HA/Resources.pm:290-304).
func TestHA_wire(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		_, _ = w.Write([]byte(`{"data":null}`))
	})
	c := newTestClient(t, ts)
	ctx := context.Background()
	steps := []struct {
		call   func() error
		method string
		path   string
		query  url.Values
		form   url.Values
	}{
		{func() error {
			return c.CreateHAResource(ctx, HAResourceParams{SID: HASID(100), State: "started", MaxRestart: IntPtr(2), MaxRelocate: IntPtr(0), Failback: BoolPtr(false), Comment: "x"})
		}, "POST", "/api2/json/cluster/ha/resources", nil,
			url.Values{"sid": {"vm:100"}, "state": {"started"}, "max_restart": {"2"}, "max_relocate": {"0"}, "failback": {"0"}, "comment": {"x"}}},
		{func() error {
			return c.UpdateHAResource(ctx, HAResourceParams{SID: "vm:100", State: "stopped", Delete: []string{"comment", "max_restart"}, Digest: "abc"})
		}, "PUT", "/api2/json/cluster/ha/resources/vm:100", nil,
			url.Values{"state": {"stopped"}, "delete": {"comment,max_restart"}, "digest": {"abc"}}},
		{func() error { return c.DeleteHAResource(ctx, "vm:100", true) }, "DELETE", "/api2/json/cluster/ha/resources/vm:100", url.Values{"purge": {"1"}}, nil},
		{func() error { return c.DeleteHAResource(ctx, "vm:100", false) }, "DELETE", "/api2/json/cluster/ha/resources/vm:100", url.Values{"purge": {"0"}}, nil},
		{func() error {
			return c.CreateHARule(ctx, HARuleParams{Rule: "pair", Type: "resource-affinity", Resources: JoinHAList([]string{"vm:101", "vm:100"}), Affinity: "negative", Comment: "c"})
		}, "POST", "/api2/json/cluster/ha/rules", nil,
			url.Values{"rule": {"pair"}, "type": {"resource-affinity"}, "resources": {"vm:100,vm:101"}, "affinity": {"negative"}, "comment": {"c"}}},
		{func() error {
			return c.CreateHARule(ctx, HARuleParams{Rule: "pin", Type: "node-affinity", Resources: "vm:100", Nodes: FormatHANodes([]HANode{{"pv1-2", 0}, {"pv1-1", 2}}), Strict: BoolPtr(true), Disable: true})
		}, "POST", "/api2/json/cluster/ha/rules", nil,
			url.Values{"rule": {"pin"}, "type": {"node-affinity"}, "resources": {"vm:100"}, "nodes": {"pv1-1:2,pv1-2"}, "strict": {"1"}, "disable": {"1"}}},
		{func() error {
			return c.UpdateHARule(ctx, HARuleParams{Rule: "pin", Strict: BoolPtr(false), Delete: []string{"disable"}, Digest: "d"})
		}, "PUT", "/api2/json/cluster/ha/rules/pin", nil,
			url.Values{"strict": {"0"}, "delete": {"disable"}, "digest": {"d"}}},
		{func() error { return c.DeleteHARule(ctx, "pin") }, "DELETE", "/api2/json/cluster/ha/rules/pin", nil, nil},
	}
	for i, s := range steps {
		if err := s.call(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got := ts.requests()[i]
		if got.Method != s.method || got.Path != s.path {
			t.Errorf("step %d: %s %s, want %s %s", i, got.Method, got.Path, s.method, s.path)
		}
		if s.query != nil && !reflect.DeepEqual(got.Query, s.query) {
			t.Errorf("step %d: query %v, want %v", i, got.Query, s.query)
		}
		if s.form != nil && !reflect.DeepEqual(got.Form, s.form) {
			t.Errorf("step %d: form %v, want %v", i, got.Form, s.form)
		}
	}
	if err := c.UpdateHAResource(ctx, HAResourceParams{SID: "vm:100"}); err == nil || Classify("update", err) != Permanent {
		t.Errorf("an update with nothing to change: %v", err)
	}
	if err := c.DeleteHARule(ctx, "a/b"); err == nil {
		t.Error("a rule id with a slash was sent")
	}
	if n := len(ts.requests()); n != len(steps) {
		t.Errorf("%d requests, want %d (refused arguments are not sent)", n, len(steps))
	}
}

// TestHA_decode reads the values a section config gives back as strings or numbers.
func TestHA_decode(t *testing.T) {
	var r HAResource
	if err := json.Unmarshal([]byte(`{"sid":"vm:100","type":"vm","state":"started","max_restart":"3","max_relocate":0,"failback":0,"digest":"d"}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.VMID() != 100 || r.MaxRestart == nil || *r.MaxRestart != 3 || r.MaxRelocate == nil || *r.MaxRelocate != 0 || r.Failback == nil || bool(*r.Failback) {
		t.Errorf("decoded %+v", r)
	}
	var bare HAResource
	if err := json.Unmarshal([]byte(`{"sid":"vm:101","type":"vm"}`), &bare); err != nil {
		t.Fatal(err)
	}
	if bare.MaxRestart != nil || bare.Failback != nil || bare.State != "" {
		t.Errorf("unset properties must stay unset: %+v", bare)
	}
	var st VMStatus
	if err := json.Unmarshal([]byte(`{"status":"running","ha":{"managed":1,"state":"recovery"}}`), &st); err != nil || !bool(st.HA.Managed) || st.HA.State != "recovery" {
		t.Errorf("status/current ha: %+v, %v", st.HA, err)
	}
	nodes, err := ParseHANodes("pv1-1:2,pv1-2")
	if err != nil || !reflect.DeepEqual(nodes, []HANode{{"pv1-1", 2}, {"pv1-2", 0}}) {
		t.Errorf("ParseHANodes = %v, %v", nodes, err)
	}
	if _, err := ParseHANodes("pv1-1:x"); err == nil {
		t.Error("a bad priority parsed")
	}
	if _, ok := VMIDOfSID("vm:5"); ok {
		t.Error("vm:5 is not a VMID PVEVM.pm takes ([1-9][0-9]+)")
	}
}

// checkHAData decodes an HA fixture's data into the seam's types (fixtures_test.go).
func checkHAData(t *testing.T, f fixture.Fixture, method, path string) {
	t.Helper()
	switch {
	case method != http.MethodGet:
		var v *string
		mustData(t, f, &v)
		if v != nil {
			t.Errorf("an HA write returns null data, got %q", *v)
		}
	case path == "/cluster/ha/resources":
		var v []HAResource
		mustData(t, f, &v)
		if len(v) == 0 {
			t.Fatal("no resources")
		}
		for _, r := range v {
			if r.VMID() == 0 || r.Type != "vm" || len(r.Digest) != 40 {
				t.Errorf("resource %+v", r)
			}
		}
	case path == "/cluster/ha/resources/{sid}":
		var v HAResource
		mustData(t, f, &v)
		if v.VMID() == 0 || len(v.Digest) != 40 {
			t.Errorf("resource %+v", v)
		}
	case path == "/cluster/ha/rules":
		var v []HARule
		mustData(t, f, &v)
		for i, r := range v {
			nonEmpty(t, r.Rule, r.Type, r.Resources, r.Digest)
			if i > 0 && v[i-1].Order > r.Order {
				t.Errorf("rules not in order")
			}
		}
	case path == "/cluster/ha/rules/{rule}":
		var v HARule
		mustData(t, f, &v)
		nonEmpty(t, v.Rule, v.Type, v.Resources, v.Digest)
	case path == "/cluster/ha/status/current":
		var v []HAStatusEntry
		mustData(t, f, &v)
		if len(v) == 0 || v[0].ID != "quorum" {
			t.Fatalf("status does not start with quorum: %+v", v)
		}
		for _, e := range v {
			nonEmpty(t, e.ID, e.Type, e.Status)
		}
	default:
		t.Errorf("no check for %s %s", method, path)
	}
}

// haContractCases are the contract cases of the HA seam methods (contract_test.go).
func haContractCases() []contractCase {
	wantNil := func(t *testing.T, got any) {
		if got != nil {
			t.Errorf("got %v", got)
		}
	}
	return []contractCase{
		{name: "HAResources", fixture: "ha_resources", method: "GET", path: "/cluster/ha/resources",
			call: func(ctx context.Context, c *Client) (any, error) { return c.HAResources(ctx) },
			check: func(t *testing.T, got any) {
				v := got.([]HAResource)
				if len(v) != 2 || v[0].MaxRelocate == nil || *v[0].MaxRelocate != 2 || v[1].MaxRestart == nil || *v[1].MaxRestart != 1 ||
					v[1].Failback == nil || bool(*v[1].Failback) || v[0].Failback != nil {
					t.Errorf("got %+v", v)
				}
			}},
		{name: "HAResource", fixture: "ha_resource", method: "GET", path: "/cluster/ha/resources/vm:199999",
			call: func(ctx context.Context, c *Client) (any, error) { return c.HAResource(ctx, HASID(tVMID)) },
			check: func(t *testing.T, got any) {
				if r := got.(HAResource); r.SID != "vm:199999" || r.State != "started" || r.Comment != tName {
					t.Errorf("got %+v", r)
				}
			}},
		{name: "CreateHAResource", fixture: "ha_write_response", method: "POST", path: "/cluster/ha/resources",
			form: url.Values{"sid": {"vm:199999"}, "state": {"started"}, "max_relocate": {"2"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.CreateHAResource(ctx, HAResourceParams{SID: HASID(tVMID), State: "started", MaxRelocate: IntPtr(2)})
			}, check: wantNil},
		{name: "UpdateHAResource", fixture: "ha_write_response", method: "PUT", path: "/cluster/ha/resources/vm:199999",
			form: url.Values{"state": {"stopped"}, "delete": {"comment"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.UpdateHAResource(ctx, HAResourceParams{SID: HASID(tVMID), State: "stopped", Delete: []string{"comment"}})
			}, check: wantNil},
		{name: "DeleteHAResource", fixture: "ha_write_response", method: "DELETE", path: "/cluster/ha/resources/vm:199999",
			query: url.Values{"purge": {"1"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.DeleteHAResource(ctx, HASID(tVMID), true)
			}, check: wantNil},
		{name: "HARules", fixture: "ha_rules", method: "GET", path: "/cluster/ha/rules",
			call: func(ctx context.Context, c *Client) (any, error) { return c.HARules(ctx) },
			check: func(t *testing.T, got any) {
				v := got.([]HARule)
				if len(v) != 2 || v[0].Affinity != "negative" || !bool(v[1].Strict) || v[1].Nodes != "pv1-1:2,pv1-2" || len(v[1].Errors["resources"]) != 1 {
					t.Errorf("got %+v", v)
				}
			}},
		{name: "HARule", fixture: "ha_rule", method: "GET", path: "/cluster/ha/rules/proxy-pair",
			call: func(ctx context.Context, c *Client) (any, error) { return c.HARule(ctx, "proxy-pair") },
			check: func(t *testing.T, got any) {
				if r := got.(HARule); r.Rule != "proxy-pair" || r.Resources != "vm:199998,vm:199999" || r.Order != 1 {
					t.Errorf("got %+v", r)
				}
			}},
		{name: "CreateHARule", fixture: "ha_write_response", method: "POST", path: "/cluster/ha/rules",
			form: url.Values{"rule": {"proxy-pair"}, "type": {"resource-affinity"}, "affinity": {"negative"}, "resources": {"vm:199998,vm:199999"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.CreateHARule(ctx, HARuleParams{Rule: "proxy-pair", Type: "resource-affinity", Affinity: "negative",
					Resources: JoinHAList([]string{HASID(tVMID), HASID(tVMID - 1)})})
			}, check: wantNil},
		{name: "UpdateHARule", fixture: "ha_write_response", method: "PUT", path: "/cluster/ha/rules/proxy-pair",
			form: url.Values{"comment": {"x"}, "digest": {"d"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.UpdateHARule(ctx, HARuleParams{Rule: "proxy-pair", Comment: "x", Digest: "d"})
			}, check: wantNil},
		{name: "DeleteHARule", fixture: "ha_write_response", method: "DELETE", path: "/cluster/ha/rules/proxy-pair",
			call:  func(ctx context.Context, c *Client) (any, error) { return nil, c.DeleteHARule(ctx, "proxy-pair") },
			check: wantNil},
		{name: "HAStatus", fixture: "ha_status_current", method: "GET", path: "/cluster/ha/status/current",
			call: func(ctx context.Context, c *Client) (any, error) { return c.HAStatus(ctx) },
			check: func(t *testing.T, got any) {
				v := got.([]HAStatusEntry)
				var svc []HAStatusEntry
				for _, e := range v {
					if e.Type == "service" {
						svc = append(svc, e)
					}
				}
				if !bool(v[0].Quorate) || len(svc) != 2 || svc[0].CRMState != "recovery" || svc[1].Node != "pv1-2" || svc[1].MaxRelocate == nil {
					t.Errorf("got %+v", v)
				}
			}},
	}
}
