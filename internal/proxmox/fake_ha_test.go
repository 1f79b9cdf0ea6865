package proxmox

// The fake's HA: an in-memory ha/resources.cfg and ha/rules.cfg good enough for unit tests
// (the simulator, internal/pvesim/ha*.go, models the checks and the recovery in full).
// Errors come from the err_ha_* fixtures. What it checks: a create for a VMID no guest holds,
// a duplicate SID or rule id, an update or read of a missing one, a delete of an SID that is
// not configured, a rule naming SIDs that are not HA resources, a negative rule with more
// resources than nodes; purge takes the SID out of every rule and deletes a rule left
// empty; a rule delete of an unknown id succeeds, as Proxmox's does. Every HA resource reads
// as started on its VM's node in HAStatus.
//
//	f.haResource("vm:100")  // a copy of an HA resource (ok false when absent)
//	f.haRule("pair")        // a copy of a rule (ok false when absent)
//	f.putHAResource(r)      // set an HA resource as is (a foreign one, say)
//	f.putHARule(r)          // set a rule as is

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

type fakeHA struct {
	resources map[string]pveapi.HAResource
	rules     map[string]pveapi.HARule
	order     int
}

// fakeHAs holds each fake's HA state, so that fake_test.go's struct stays as it is.
var fakeHAs sync.Map // *fakeAPI -> *fakeHA

// ha returns f's HA state. Caller holds mu.
func (f *fakeAPI) ha() *fakeHA {
	v, _ := fakeHAs.LoadOrStore(f, &fakeHA{resources: map[string]pveapi.HAResource{}, rules: map[string]pveapi.HARule{}})
	return v.(*fakeHA)
}

func (f *fakeAPI) haResource(sid string) (pveapi.HAResource, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.ha().resources[sid]
	return r, ok
}

func (f *fakeAPI) haRule(id string) (pveapi.HARule, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.ha().rules[id]
	return r, ok
}

func (f *fakeAPI) putHAResource(r pveapi.HAResource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Type == "" {
		r.Type = "vm"
	}
	f.ha().resources[r.SID] = r
}

func (f *fakeAPI) putHARule(r pveapi.HARule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.ha()
	h.order++
	r.Order = pveapi.Int(h.order)
	h.rules[r.Rule] = r
}

const fakeHADigest = "0000000000000000000000000000000000000000"

func haSub(name, old, repl string) error { return fixtureErrSub(name, old, repl) }

func (f *fakeAPI) HAResources(ctx context.Context) ([]pveapi.HAResource, error) {
	if err := f.enter(ctx, fakeCall{Method: "HAResources"}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]pveapi.HAResource, 0, len(f.ha().resources))
	for _, r := range f.ha().resources {
		r.Digest = fakeHADigest
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SID < out[j].SID })
	return out, nil
}

func (f *fakeAPI) HAResource(ctx context.Context, sid string) (pveapi.HAResource, error) {
	if err := f.enter(ctx, fakeCall{Method: "HAResource", Args: map[string]string{"sid": sid}}); err != nil {
		return pveapi.HAResource{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.ha().resources[sid]
	if !ok {
		return pveapi.HAResource{}, haSub("err_ha_resource_missing", "vm:199999", sid)
	}
	r.Digest = fakeHADigest
	return r, nil
}

func haResourceArgs(p pveapi.HAResourceParams) map[string]string {
	a := map[string]string{"sid": p.SID, "state": p.State, "comment": p.Comment, "delete": strings.Join(p.Delete, ",")}
	if p.MaxRestart != nil {
		a["max_restart"] = strconv.Itoa(*p.MaxRestart)
	}
	if p.MaxRelocate != nil {
		a["max_relocate"] = strconv.Itoa(*p.MaxRelocate)
	}
	if p.Failback != nil {
		a["failback"] = strconv.FormatBool(*p.Failback)
	}
	return a
}

func applyHAResource(r *pveapi.HAResource, p pveapi.HAResourceParams) {
	if p.State != "" {
		r.State = p.State
	}
	if p.MaxRestart != nil {
		v := pveapi.Int(*p.MaxRestart)
		r.MaxRestart = &v
	}
	if p.MaxRelocate != nil {
		v := pveapi.Int(*p.MaxRelocate)
		r.MaxRelocate = &v
	}
	if p.Failback != nil {
		v := pveapi.Flag(*p.Failback)
		r.Failback = &v
	}
	if p.Comment != "" {
		r.Comment = p.Comment
	}
	for _, d := range p.Delete {
		switch d {
		case "state":
			r.State = ""
		case "max_restart":
			r.MaxRestart = nil
		case "max_relocate":
			r.MaxRelocate = nil
		case "failback":
			r.Failback = nil
		case "comment":
			r.Comment = ""
		}
	}
}

func (f *fakeAPI) CreateHAResource(ctx context.Context, p pveapi.HAResourceParams) error {
	if err := f.enter(ctx, fakeCall{Method: "CreateHAResource", VMID: vmidOfSID(p.SID), Args: haResourceArgs(p)}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	vmid := vmidOfSID(p.SID)
	if v := f.vms[vmid]; v == nil || v.Type != "qemu" {
		return haSub("err_ha_guest_missing", "vm:999999", p.SID)
	}
	if _, ok := f.ha().resources[p.SID]; ok {
		return haSub("err_ha_resource_exists", "vm:199999", p.SID)
	}
	r := pveapi.HAResource{SID: p.SID, Type: "vm"}
	applyHAResource(&r, p)
	f.ha().resources[p.SID] = r
	return nil
}

func (f *fakeAPI) UpdateHAResource(ctx context.Context, p pveapi.HAResourceParams) error {
	if err := f.enter(ctx, fakeCall{Method: "UpdateHAResource", VMID: vmidOfSID(p.SID), Args: haResourceArgs(p)}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.ha().resources[p.SID]
	if !ok {
		return haSub("err_ha_resource_update_missing", "vm:199999", p.SID)
	}
	applyHAResource(&r, p)
	f.ha().resources[p.SID] = r
	return nil
}

func (f *fakeAPI) DeleteHAResource(ctx context.Context, sid string, purge bool) error {
	if err := f.enter(ctx, fakeCall{Method: "DeleteHAResource", VMID: vmidOfSID(sid), Args: map[string]string{"sid": sid, "purge": strconv.FormatBool(purge)}}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.ha()
	if _, ok := h.resources[sid]; !ok {
		return haSub("err_ha_not_managed", "vm:199999", sid)
	}
	delete(h.resources, sid)
	if purge {
		for id, r := range h.rules {
			left := slices.DeleteFunc(pveapi.SplitHAList(r.Resources), func(s string) bool { return s == sid })
			if len(left) == 0 {
				delete(h.rules, id)
				continue
			}
			r.Resources = pveapi.JoinHAList(left)
			h.rules[id] = r
		}
	}
	return nil
}

func (f *fakeAPI) HARules(ctx context.Context) ([]pveapi.HARule, error) {
	if err := f.enter(ctx, fakeCall{Method: "HARules"}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]pveapi.HARule, 0, len(f.ha().rules))
	for _, r := range f.ha().rules {
		r.Digest = fakeHADigest
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out, nil
}

func (f *fakeAPI) HARule(ctx context.Context, id string) (pveapi.HARule, error) {
	if err := f.enter(ctx, fakeCall{Method: "HARule", Args: map[string]string{"rule": id}}); err != nil {
		return pveapi.HARule{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.ha().rules[id]
	if !ok {
		return pveapi.HARule{}, haSub("err_ha_rule_missing", "'proxy-pair'", "'"+id+"'")
	}
	r.Digest = fakeHADigest
	return r, nil
}

func haRuleArgs(p pveapi.HARuleParams) map[string]string {
	a := map[string]string{"rule": p.Rule, "type": p.Type, "resources": p.Resources, "affinity": p.Affinity,
		"nodes": p.Nodes, "comment": p.Comment, "disable": strconv.FormatBool(p.Disable), "delete": strings.Join(p.Delete, ",")}
	if p.Strict != nil {
		a["strict"] = strconv.FormatBool(*p.Strict)
	}
	return a
}

// checkHARule refuses what the fake models of Proxmox's rule checks. Caller holds mu.
func (f *fakeAPI) checkHARule(op string, r pveapi.HARule) error {
	var unmanaged []string
	sids := pveapi.SplitHAList(r.Resources)
	for _, sid := range sids {
		if _, ok := f.ha().resources[sid]; !ok {
			unmanaged = append(unmanaged, sid)
		}
	}
	if len(unmanaged) > 0 {
		sort.Strings(unmanaged)
		e := fixtureErrSub("err_ha_rule_unmanaged", "vm:199999", strings.Join(unmanaged, ", "))
		if op == "update" {
			e.Message = strings.Replace(e.Message, "create ha rule failed", "update HA rules failed", 1)
		}
		return e
	}
	if r.Type == "resource-affinity" && r.Affinity == "negative" && !bool(r.Disable) && len(sids) > len(f.nodes) {
		return haSub("err_ha_rule_invalid", "'proxy-pair'", "'"+r.Rule+"'")
	}
	return nil
}

func applyHARule(r *pveapi.HARule, p pveapi.HARuleParams) {
	if p.Resources != "" {
		r.Resources = pveapi.JoinHAList(pveapi.SplitHAList(p.Resources))
	}
	if p.Affinity != "" {
		r.Affinity = p.Affinity
	}
	if p.Nodes != "" {
		r.Nodes = p.Nodes
	}
	if p.Strict != nil {
		r.Strict = pveapi.Flag(*p.Strict)
	}
	if p.Comment != "" {
		r.Comment = p.Comment
	}
	if p.Disable {
		r.Disable = true
	}
	for _, d := range p.Delete {
		switch d {
		case "comment":
			r.Comment = ""
		case "disable":
			r.Disable = false
		case "strict":
			r.Strict = false
		}
	}
}

func (f *fakeAPI) CreateHARule(ctx context.Context, p pveapi.HARuleParams) error {
	if err := f.enter(ctx, fakeCall{Method: "CreateHARule", Args: haRuleArgs(p)}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.ha()
	if _, ok := h.rules[p.Rule]; ok {
		return haSub("err_ha_rule_exists", "'proxy-pair'", "'"+p.Rule+"'")
	}
	r := pveapi.HARule{Rule: p.Rule, Type: p.Type}
	applyHARule(&r, p)
	if err := f.checkHARule("create", r); err != nil {
		return err
	}
	h.order++
	r.Order = pveapi.Int(h.order)
	h.rules[p.Rule] = r
	return nil
}

func (f *fakeAPI) UpdateHARule(ctx context.Context, p pveapi.HARuleParams) error {
	if err := f.enter(ctx, fakeCall{Method: "UpdateHARule", Args: haRuleArgs(p)}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.ha()
	r, ok := h.rules[p.Rule]
	if !ok {
		return haSub("err_ha_rule_update_missing", "'proxy-pair'", "'"+p.Rule+"'")
	}
	applyHARule(&r, p)
	if err := f.checkHARule("update", r); err != nil {
		return err
	}
	h.rules[p.Rule] = r
	return nil
}

func (f *fakeAPI) DeleteHARule(ctx context.Context, id string) error {
	if err := f.enter(ctx, fakeCall{Method: "DeleteHARule", Args: map[string]string{"rule": id}}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.ha().rules, id)
	return nil
}

func (f *fakeAPI) HAStatus(ctx context.Context) ([]pveapi.HAStatusEntry, error) {
	if err := f.enter(ctx, fakeCall{Method: "HAStatus"}); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []pveapi.HAStatusEntry{{ID: "quorum", Type: "quorum", Node: f.nodes[0], Status: "OK", Quorate: true}}
	sids := make([]string, 0, len(f.ha().resources))
	for sid := range f.ha().resources {
		sids = append(sids, sid)
	}
	sort.Strings(sids)
	for _, sid := range sids {
		r := f.ha().resources[sid]
		node := ""
		if v := f.vms[vmidOfSID(sid)]; v != nil {
			node = v.Node
		}
		req := r.State
		if req == "" {
			req = "started"
		}
		out = append(out, pveapi.HAStatusEntry{ID: "service:" + sid, Type: "service", SID: sid, Node: node,
			CRMState: req, State: req, RequestState: req, Status: sid + " (" + node + ", " + req + ")"})
	}
	return out, nil
}

func vmidOfSID(sid string) int {
	id, _ := pveapi.VMIDOfSID(sid)
	return id
}

// TestFakeHA holds the fake's HA to the behaviour its comment promises, so that tests built
// on it meet Proxmox's answers (the err_ha_* fixtures).
func TestFakeHA(t *testing.T) {
	ctx := context.Background()
	f := newFakeAPI("pv1-1", "pv1-2")
	f.addVM(&fakeVM{VMID: 100})
	f.addVM(&fakeVM{VMID: 101})
	if err := f.CreateHAResource(ctx, pveapi.HAResourceParams{SID: "vm:102"}); !pveapi.IsHAGuestMissing(err) {
		t.Errorf("a missing guest: %v", err)
	}
	if err := f.CreateHAResource(ctx, pveapi.HAResourceParams{SID: "vm:100", State: "started"}); err != nil {
		t.Fatal(err)
	}
	if err := f.CreateHAResource(ctx, pveapi.HAResourceParams{SID: "vm:100"}); !pveapi.IsHAResourceExists(err) {
		t.Errorf("a duplicate: %v", err)
	}
	pair := pveapi.HARuleParams{Rule: "pair", Type: "resource-affinity", Affinity: "negative", Resources: "vm:100,vm:101"}
	if err := f.CreateHARule(ctx, pair); err == nil {
		t.Error("a rule naming an unmanaged resource was made")
	} else if sids, ok := pveapi.IsHAUnmanagedResources(err); !ok || len(sids) != 1 || sids[0] != "vm:101" {
		t.Errorf("unmanaged: %v", err)
	}
	f.putHAResource(pveapi.HAResource{SID: "vm:101"})
	if err := f.CreateHARule(ctx, pair); err != nil {
		t.Fatal(err)
	}
	f.putHARule(pveapi.HARule{Rule: "foreign", Type: "node-affinity", Resources: "vm:101", Nodes: "pv1-2"})
	if err := f.CreateHARule(ctx, pair); !pveapi.IsHARuleExists(err) {
		t.Errorf("a duplicate rule: %v", err)
	}
	if err := f.DeleteHAResource(ctx, "vm:101", true); err != nil {
		t.Fatal(err)
	}
	if r, ok := f.haRule("pair"); !ok || r.Resources != "vm:100" {
		t.Errorf("purge left %+v", r)
	}
	if _, ok := f.haRule("foreign"); ok {
		t.Error("purge kept a rule left without resources")
	}
	if _, ok := f.haResource("vm:101"); ok {
		t.Error("the deleted resource is still there")
	}
	if err := f.DeleteHAResource(ctx, "vm:101", true); !pveapi.IsHANotManaged(err) {
		t.Errorf("a second delete: %v", err)
	}
	if err := f.DeleteHARule(ctx, "nope"); err != nil {
		t.Errorf("a delete of an unknown rule: %v", err)
	}
	if _, err := f.HARule(ctx, "nope"); !pveapi.IsHARuleMissing(err) {
		t.Errorf("a read of an unknown rule: %v", err)
	}
}
