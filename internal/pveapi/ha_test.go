package pveapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"testing"
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
