package pvesim_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// HA conformance (pve-ha-manager src/PVE/API2/HA/{Resources,Rules,Groups,Status}.pm,
// src/PVE/HA/{Config,Manager,NodeStatus}.pm, Rules/*.pm; qemu-server src/PVE/API2/Qemu.pm
// vm_start, vm_stop, vm_shutdown, destroy_vm). Texts come from the err_ha_* fixtures.

// haNodes are three nodes, so that one can go down and the cluster stays quorate.
var haNodes = []string{captureNode, "pv1-2", "pv1-3"}

// haTarget is a three-node simulator with the capture's VM 199999 cloned on pv1-1 and
// a second VM 199998 on pv1-2.
func haTarget(t *testing.T, durations ...pvesim.Durations) (*target, *pvesim.Sim) {
	t.Helper()
	opts := pvesim.Options{Nodes: haNodes}
	if len(durations) > 0 {
		opts.Durations = durations[0]
	}
	tg := newTarget(t, opts)
	s := tg.simOnly("builds a three-node cluster and moves nodes down")
	tg.parallel()
	tg.cloned()
	if err := s.AddVM(pvesim.VMSpec{VMID: captureVMID - 1, Node: "pv1-2", Name: "proxy-pair-b"}); err != nil {
		t.Fatal(err)
	}
	return tg, s
}

func haSID(vmid int) string { return pveapi.HASID(vmid) }

// TestSource_haResources: create, read, update and delete of an HA resource with the
// checks of Resources.pm (create: the guest must exist, PVEVM.pm:52-61; a second create of
// the SID is refused, lines 212-227; read and update of an unknown SID, line 27 and
// Config.pm:144-145; delete of an unknown SID, lines 313-315) and the shape of
// api_copy_config (lines 24-35: only the properties set, plus sid, type, digest).
func TestSource_haResources(t *testing.T) {
	tg, _ := haTarget(t)
	ctx := tg.ctx()
	sid := haSID(tg.vmid)
	tg.wantAPIError(tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: haSID(captureMissing)}), "err_ha_guest_missing")
	_, err := tg.api.HAResource(ctx, sid)
	tg.wantAPIError(err, "err_ha_resource_missing")
	tg.wantAPIError(tg.api.UpdateHAResource(ctx, pveapi.HAResourceParams{SID: sid, State: "stopped"}), "err_ha_resource_update_missing")
	tg.wantAPIError(tg.api.DeleteHAResource(ctx, sid, true), "err_ha_not_managed")

	if err := tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: sid, State: "stopped", MaxRelocate: pveapi.IntPtr(2), Comment: "pair"}); err != nil {
		t.Fatal(err)
	}
	tg.wantAPIError(tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: sid}), "err_ha_resource_exists")
	r, err := tg.api.HAResource(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if r.SID != sid || r.Type != "vm" || r.State != "stopped" || r.MaxRelocate == nil || *r.MaxRelocate != 2 || r.MaxRestart != nil || r.Failback != nil || r.Comment != "pair" || len(r.Digest) != 40 {
		t.Errorf("read back %+v", r)
	}
	// A stale digest is refused (Config.pm:174, PVE::Tools assert_if_modified).
	if err := tg.api.UpdateHAResource(ctx, pveapi.HAResourceParams{SID: sid, Comment: "x", Digest: strings.Repeat("0", 40)}); err == nil {
		t.Error("an update with a stale digest passed")
	}
	if err := tg.api.UpdateHAResource(ctx, pveapi.HAResourceParams{SID: sid, Failback: pveapi.BoolPtr(false), Delete: []string{"comment", "max_relocate"}, Digest: r.Digest}); err != nil {
		t.Fatal(err)
	}
	list, err := tg.api.HAResources(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %+v, %v", list, err)
	}
	if got := list[0]; got.Comment != "" || got.MaxRelocate != nil || got.Failback == nil || bool(*got.Failback) || got.Digest == r.Digest {
		t.Errorf("after the update: %+v", got)
	}
	// A bare VMID is taken for the SID (Config.pm parse_sid, lines 194-204).
	if _, err := tg.api.HAResource(ctx, strconv.Itoa(tg.vmid)); err != nil {
		t.Errorf("read by VMID: %v", err)
	}
	if err := tg.api.DeleteHAResource(ctx, sid, true); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.api.HAResource(ctx, sid); !pveapi.IsHAResourceMissing(err) {
		t.Errorf("after the delete: %v", err)
	}
}

// TestSource_haRules: rules need their resources HA-managed (Rules.pm:45-59), take a
// rule id once (line 286), answer an unknown id on read and update (lines 25, 340), refuse
// an infeasible rule with a 400 (lines 111-137; here
// ResourceAffinity.pm check_negative_resource_affinity_resources_count), delete an unknown
// id without complaint (lines 386-402), and a resource deleted with purge leaves every rule,
// a rule left empty going too (Config.pm:437-465).
func TestSource_haRules(t *testing.T) {
	tg, s := haTarget(t)
	ctx := tg.ctx()
	a, b := haSID(tg.vmid), haSID(tg.vmid-1)
	pair := pveapi.HARuleParams{Rule: "proxy-pair", Type: "resource-affinity", Affinity: "negative", Resources: pveapi.JoinHAList([]string{a, b})}
	if err := tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: b, State: "stopped"}); err != nil {
		t.Fatal(err)
	}
	err := tg.api.CreateHARule(ctx, pair)
	tg.wantAPIError(err, "err_ha_rule_unmanaged")
	if got, ok := pveapi.IsHAUnmanagedResources(err); !ok || !slices.Equal(got, []string{a}) {
		t.Errorf("unmanaged resources %v", got)
	}
	if err := tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: a, State: "stopped"}); err != nil {
		t.Fatal(err)
	}
	if err := tg.api.CreateHARule(ctx, pair); err != nil {
		t.Fatal(err)
	}
	tg.wantAPIError(tg.api.CreateHARule(ctx, pair), "err_ha_rule_exists")
	r, err := tg.api.HARule(ctx, "proxy-pair")
	if err != nil {
		t.Fatal(err)
	}
	if r.Type != "resource-affinity" || r.Affinity != "negative" || r.Resources != a+","+b && r.Resources != b+","+a || r.Order != 1 || len(r.Digest) != 40 || len(r.Errors) != 0 {
		t.Errorf("rule %+v", r)
	}
	if r.Resources != pveapi.JoinHAList([]string{b, a}) {
		t.Errorf("resources %q are not sorted (Rules.pm:236-249)", r.Resources)
	}
	_, err = tg.api.HARule(ctx, "nope")
	tg.wantAPIError(subst(err, "'nope'", "'proxy-pair'"), "err_ha_rule_missing")
	tg.wantAPIError(subst(tg.api.UpdateHARule(ctx, pveapi.HARuleParams{Rule: "nope", Comment: "x"}), "'nope'", "'proxy-pair'"), "err_ha_rule_update_missing")
	if err := tg.api.DeleteHARule(ctx, "nope"); err != nil {
		t.Errorf("delete of an unknown rule: %v", err)
	}
	// A property of the other type is refused by check_config (pve-common SectionConfig.pm
	// check_value, line 1178).
	if err := tg.api.UpdateHARule(ctx, pveapi.HARuleParams{Rule: "proxy-pair", Strict: pveapi.BoolPtr(true)}); err == nil || !strings.Contains(err.Error(), "unexpected property 'strict'") {
		t.Errorf("strict on a resource-affinity rule: %v", err)
	}
	// Four resources kept apart on three nodes are refused.
	if err := s.AddVM(pvesim.VMSpec{VMID: tg.vmid - 2, Node: "pv1-3"}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddVM(pvesim.VMSpec{VMID: tg.vmid - 3, Node: "pv1-3"}); err != nil {
		t.Fatal(err)
	}
	c, d := haSID(tg.vmid-2), haSID(tg.vmid-3)
	for _, sid := range []string{c, d} {
		if err := tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: sid, State: "stopped"}); err != nil {
			t.Fatal(err)
		}
	}
	wide := pveapi.JoinHAList([]string{a, b, c, d})
	err = tg.api.CreateHARule(ctx, pveapi.HARuleParams{Rule: "proxy-pair-wide", Type: "resource-affinity", Affinity: "negative", Resources: wide})
	tg.wantAPIError(subst(err, "'proxy-pair-wide'", "'proxy-pair'"), "err_ha_rule_invalid")
	if _, err := tg.api.HARule(ctx, "proxy-pair-wide"); !pveapi.IsHARuleMissing(err) {
		t.Errorf("a refused rule was written: %v", err)
	}
	// Purge: b leaves the pair, which is left with one resource and is then flagged
	// (check_resource_affinity_resources_count) but kept; a's delete empties it.
	if err := tg.api.DeleteHAResource(ctx, b, true); err != nil {
		t.Fatal(err)
	}
	if r, err := tg.api.HARule(ctx, "proxy-pair"); err != nil || r.Resources != a || len(r.Errors["resources"]) != 1 {
		t.Errorf("after b's purge: %+v, %v", r, err)
	}
	if err := tg.api.DeleteHAResource(ctx, a, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.api.HARule(ctx, "proxy-pair"); err != nil {
		t.Errorf("a delete without purge removed the rule: %v", err)
	}
}

// subst rewrites an API error's message so that a fixture naming another id applies.
func subst(err error, from, to string) error {
	var ae *pveapi.APIError
	if errors.As(err, &ae) {
		cp := *ae
		cp.Message = strings.Replace(cp.Message, from, to, 1)
		return &cp
	}
	return err
}

// TestSource_haGroupsAndPermissions: HA groups are refused on PVE 9 (Groups.pm:60-61);
// every HA method checks Sys.Audit (reads) or Sys.Console (changes) on / (the methods'
// permissions blocks), which a pool-scoped token does not have.
func TestSource_haGroupsAndPermissions(t *testing.T) {
	tg, _ := haTarget(t)
	resp, body := tg.raw("GET", "/cluster/ha/groups", nil, nil)
	wantFixture(t, resp.StatusCode, strings.TrimSuffix(messageOf(t, body), "\n"), "err_ha_groups_migrated")

	pool := tg.clientFor(tg.poolToken())
	_, err := pool.HAResources(tg.ctx())
	tg.wantAPIError(err, "err_forbidden_ha_audit")
	tg.wantAPIError(pool.CreateHARule(tg.ctx(), pveapi.HARuleParams{Rule: "proxy-pair", Type: "resource-affinity", Affinity: "negative", Resources: "vm:1,vm:2"}), "err_forbidden_ha_console")
	for _, call := range []func() error{
		func() error { _, err := pool.HARules(tg.ctx()); return err },
		func() error { _, err := pool.HAStatus(tg.ctx()); return err },
		func() error { return pool.CreateHAResource(tg.ctx(), pveapi.HAResourceParams{SID: haSID(tg.vmid)}) },
		func() error { return pool.DeleteHARule(tg.ctx(), "proxy-pair") },
	} {
		if d, ok := pveapi.PermissionDenied(call()); !ok || d.Path != "/" || (d.Privilege != "Sys.Audit" && d.Privilege != "Sys.Console") {
			t.Errorf("pool token: %+v %v", d, ok)
		}
	}
	// Sys.Audit on / lets the token read, not change.
	tg.grant("proxy@pve", "proxy@pve!tf", "/", "PVEAuditor")
	if _, err := pool.HAResources(tg.ctx()); err != nil {
		t.Errorf("with PVEAuditor on /: %v", err)
	}
	tg.wantAPIError(pool.CreateHARule(tg.ctx(), pveapi.HARuleParams{Rule: "proxy-pair", Type: "resource-affinity", Affinity: "negative", Resources: "vm:1,vm:2"}), "err_forbidden_ha_console")
	// A role with Sys.Audit and Sys.Console on / alone (propagate=0) is enough for HA, and
	// gives no console below / (pve-access-control: an unpropagated ACL holds on its path only).
	tg.adminOK("POST", "/access/roles", url.Values{"roleid": {"ProxyHA"}, "privs": {"Sys.Audit,Sys.Console"}}, nil)
	for _, who := range []url.Values{{"users": {"proxy@pve"}}, {"tokens": {"proxy@pve!tf"}}} {
		form := url.Values{"path": {"/"}, "roles": {"ProxyHA"}, "propagate": {"0"}}
		for k, v := range who {
			form[k] = v
		}
		tg.adminOK("PUT", "/access/acl", form, nil)
	}
	if err := pool.CreateHAResource(tg.ctx(), pveapi.HAResourceParams{SID: haSID(tg.vmid)}); err != nil {
		t.Errorf("with ProxyHA on /: %v", err)
	}
	if privs, err := pool.Permissions(tg.ctx(), "/nodes/"+captureNode); err != nil || privs["Sys.Console"] {
		t.Errorf("Sys.Console reached /nodes/%s: %v %v", captureNode, privs, err)
	}
}

func messageOf(t *testing.T, body []byte) string {
	t.Helper()
	var b struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Message == "" {
		t.Fatalf("no message in %s: %v", body, err)
	}
	return b.Message
}

// haPair makes both VMs HA resources started, kept apart by a negative rule, and waits
// until both run.
func haPair(t *testing.T, tg *target, s *pvesim.Sim) {
	t.Helper()
	ctx := tg.ctx()
	for _, id := range []int{tg.vmid, tg.vmid - 1} {
		if err := tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: haSID(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tg.api.CreateHARule(ctx, pveapi.HARuleParams{Rule: "proxy-pair", Type: "resource-affinity", Affinity: "negative",
		Resources: pveapi.JoinHAList([]string{haSID(tg.vmid), haSID(tg.vmid - 1)})}); err != nil {
		t.Fatal(err)
	}
	tg.eventually("the pair started by HA", func() bool {
		a, _ := s.HAResourceOf(tg.vmid)
		b, _ := s.HAResourceOf(tg.vmid - 1)
		return a.CRMState == "started" && b.CRMState == "started"
	})
	for _, id := range []int{tg.vmid, tg.vmid - 1} {
		if v, _ := s.VM(id); v.Status != "running" {
			t.Fatalf("VM %d is %s after HA started it", id, v.Status)
		}
	}
}

// TestSource_haRecovery: a node down for the fence delay (NodeStatus.pm:8, 60 s) puts its
// services in fence; once its agent lock expires (Env/PVE2.pm:311, 120 s) the fencing is
// acknowledged and each service is recovered (Manager.pm next_state_recovery) to a node
// select_service_node allows: not the dead one, not the partner's of a negative rule.
func TestSource_haRecovery(t *testing.T) {
	// The real fence delay and lock timeout times 10 (600 ms and 1.2 s at the default
	// speed): the state right after the node goes down is read well before the fence.
	tg, s := haTarget(t, pvesim.Durations{HAFenceDelay: 10 * time.Minute, HALockTimeout: 20 * time.Minute})
	haPair(t, tg, s)
	// A third HA resource on pv1-3 makes pv1-2 and pv1-3 equal by count, so that only the
	// negative rule sends the recovery to pv1-3 (pv1-2 first by name).
	if err := s.AddVM(pvesim.VMSpec{VMID: tg.vmid - 2, Node: "pv1-3"}); err != nil {
		t.Fatal(err)
	}
	if err := tg.api.CreateHAResource(tg.ctx(), pveapi.HAResourceParams{SID: haSID(tg.vmid - 2), State: "stopped"}); err != nil {
		t.Fatal(err)
	}
	downAt := time.Now()
	if err := s.SetNodeDown(captureNode, true); err != nil {
		t.Fatal(err)
	}
	// Not before the fence delay.
	if r, _ := s.HAResourceOf(tg.vmid); r.CRMState != "started" || r.Node != captureNode {
		t.Fatalf("right after the node went down: %+v", r)
	}
	tg.eventually("the recovery", func() bool {
		r, _ := s.HAResourceOf(tg.vmid)
		return r.CRMState == "started" && r.Node != captureNode
	})
	if took, least := time.Since(downAt), s.WallTime(s.Durations().HALockTimeout); took < least {
		t.Errorf("recovered after %s, before the lock timeout %s", took, least)
	}
	r, _ := s.HAResourceOf(tg.vmid)
	if r.Node != "pv1-3" {
		t.Errorf("recovered to %s, want pv1-3 (pv1-2 holds the negative partner)", r.Node)
	}
	tg.eventually("the recovered VM running", func() bool {
		v, _ := s.VM(tg.vmid)
		return v.Status == "running" && v.Node == "pv1-3"
	})
	log := haLogText(s)
	for _, want := range []string{
		"service '" + haSID(tg.vmid) + "': state changed from 'started' to 'fence'",
		"fencing: acknowledged - got agent lock for node '" + captureNode + "'",
		"recover service '" + haSID(tg.vmid) + "' from fenced node '" + captureNode + "' to node 'pv1-3'",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("CRM log lacks %q:\n%s", want, log)
		}
	}
	st, err := tg.api.HAStatus(tg.ctx())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range st {
		if e.ID == "service:"+haSID(tg.vmid) {
			found = true
			if e.Node != "pv1-3" || e.CRMState != "started" || e.State != "started" || e.RequestState != "started" {
				t.Errorf("status entry %+v", e)
			}
		}
		if e.ID == "quorum" && !bool(e.Quorate) {
			t.Errorf("two of three nodes up is quorate: %+v", e)
		}
	}
	if !found {
		t.Errorf("no service entry in %+v", st)
	}
}

// TestSource_haRecoveryNowhere: a strict node-affinity rule naming only the dead node
// leaves nowhere to go: the service stays in recovery with the CRM's error line
// (Manager.pm:1647-1652) and the VM stays down, until the node comes back.
func TestSource_haRecoveryNowhere(t *testing.T) {
	tg, s := haTarget(t)
	haPair(t, tg, s)
	if err := tg.api.CreateHARule(tg.ctx(), pveapi.HARuleParams{Rule: "pin", Type: "node-affinity", Resources: haSID(tg.vmid),
		Nodes: captureNode, Strict: pveapi.BoolPtr(true)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNodeDown(captureNode, true); err != nil {
		t.Fatal(err)
	}
	want := "recovering service '" + haSID(tg.vmid) + "' from fenced node '" + captureNode + "' failed, no recovery node found"
	tg.eventually("the failed recovery", func() bool { return strings.Contains(haLogText(s), want) })
	time.Sleep(s.WallTime(3 * s.Durations().HARound))
	r, _ := s.HAResourceOf(tg.vmid)
	v, _ := s.VM(tg.vmid)
	if r.CRMState != "recovery" || r.Node != captureNode || v.Status == "running" {
		t.Fatalf("with nowhere allowed: HA %+v, VM %s on %s", r, v.Status, v.Node)
	}
	st, _ := tg.api.HAStatus(tg.ctx())
	for _, e := range st {
		if e.SID == haSID(tg.vmid) && (e.State != "recovery" || e.CRMState != "recovery") {
			t.Errorf("status entry %+v, want recovery", e)
		}
	}
	// The node back: recovered onto it again (Manager.pm:1633-1636).
	if err := s.SetNodeDown(captureNode, false); err != nil {
		t.Fatal(err)
	}
	tg.eventually("the recovery onto the node back", func() bool {
		r, _ := s.HAResourceOf(tg.vmid)
		v, _ := s.VM(tg.vmid)
		return r.CRMState == "started" && v.Status == "running" && v.Node == captureNode
	})
	if !strings.Contains(haLogText(s), "recover service '"+haSID(tg.vmid)+"' to previous failed and fenced node '"+captureNode+"' again") {
		t.Errorf("log:\n%s", haLogText(s))
	}
}

// TestSource_haNoQuorum: with two nodes, one down leaves no quorum and the CRM does not
// recover; HA writes answer "cluster not ready - no quorum?" (pve-cluster
// src/PVE/Cluster.pm:129, called at Resources.pm:192 and Rules.pm:267).
func TestSource_haNoQuorum(t *testing.T) {
	tg := newTarget(t, pvesim.Options{Nodes: haNodes[:2]})
	s := tg.simOnly("moves a node down")
	tg.parallel()
	tg.cloned()
	if err := tg.api.CreateHAResource(tg.ctx(), pveapi.HAResourceParams{SID: haSID(tg.vmid)}); err != nil {
		t.Fatal(err)
	}
	tg.eventually("started by HA", func() bool { r, _ := s.HAResourceOf(tg.vmid); return r.CRMState == "started" })
	if err := s.SetNodeDown(captureNode, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(s.WallTime(s.Durations().HALockTimeout + 3*s.Durations().HARound))
	if r, _ := s.HAResourceOf(tg.vmid); r.CRMState != "started" || r.Node != captureNode {
		t.Errorf("without quorum the CRM acted: %+v", r)
	}
	err := tg.api.CreateHARule(tg.ctx(), pveapi.HARuleParams{Rule: "pin", Type: "node-affinity", Resources: haSID(tg.vmid), Nodes: "pv1-2"})
	tg.wantAPIError(err, "err_ha_no_quorum")
}

// TestSource_haPowerAndDestroy: qm start, stop and shutdown of an HA-managed VM start an
// hastart or hastop task that only changes the requested state (Qemu.pm:3631-3642,
// 3750-3768, 3932-3945); the VM follows one HA round later. A destroy without purge is
// refused (Qemu.pm:2831-2836); with purge the VM leaves HA and its rules (lines 2874-2885).
func TestSource_haPowerAndDestroy(t *testing.T) {
	tg, s := haTarget(t)
	ctx := tg.ctx()
	sid := haSID(tg.vmid)
	if err := tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: sid, State: "stopped"}); err != nil {
		t.Fatal(err)
	}
	upid, err := tg.api.Start(ctx, tg.node, tg.vmid)
	tg.mustOK(upid, err)
	if u, _ := pveapi.ParseUPID(upid); u.Type != "hastart" {
		t.Errorf("start of an HA-managed VM ran %q", u.Type)
	}
	if r, _ := s.HAResourceOf(tg.vmid); r.State != "started" {
		t.Errorf("requested state after the start: %+v", r)
	}
	tg.eventually("HA starting the VM", func() bool { v, _ := s.VM(tg.vmid); return v.Status == "running" })
	// status/current carries get_service_status (Qemu.pm:3478, Config.pm:492-507).
	if st, err := tg.api.VMStatus(ctx, tg.node, tg.vmid); err != nil || !bool(st.HA.Managed) || st.HA.State != "started" {
		t.Errorf("status/current ha: %+v, %v", st.HA, err)
	}

	upid, err = tg.api.Shutdown(ctx, tg.node, tg.vmid, pveapi.ShutdownParams{TimeoutSeconds: 30})
	tg.mustOK(upid, err)
	if u, _ := pveapi.ParseUPID(upid); u.Type != "hastop" {
		t.Errorf("shutdown of an HA-managed VM ran %q", u.Type)
	}
	tg.eventually("HA stopping the VM", func() bool { v, _ := s.VM(tg.vmid); return v.Status == "stopped" })
	if r, _ := s.HAResourceOf(tg.vmid); r.State != "stopped" || r.CRMState != "stopped" {
		t.Errorf("after the HA stop: %+v", r)
	}

	resp, body := tg.raw("DELETE", "/nodes/"+tg.node+"/qemu/"+strconv.Itoa(tg.vmid), nil, nil)
	wantFixture(t, resp.StatusCode, strings.TrimSuffix(messageOf(t, body), "\n"), "err_ha_destroy_managed")

	if err := tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: haSID(tg.vmid - 1), State: "stopped"}); err != nil {
		t.Fatal(err)
	}
	if err := tg.api.CreateHARule(ctx, pveapi.HARuleParams{Rule: "proxy-pair", Type: "resource-affinity", Affinity: "negative",
		Resources: pveapi.JoinHAList([]string{sid, haSID(tg.vmid - 1)})}); err != nil {
		t.Fatal(err)
	}
	upid, err = tg.api.Destroy(ctx, tg.node, tg.vmid) // purge=1
	tg.mustOK(upid, err)
	if _, ok := s.HAResourceOf(tg.vmid); ok {
		t.Error("the destroy with purge left the HA resource")
	}
	for _, r := range s.HARules() {
		if slices.Contains(r.Resources, sid) {
			t.Errorf("rule %s still names %s", r.ID, sid)
		}
	}
	// An ignored resource is not HA-managed: the start is a plain qmstart.
	if err := tg.api.UpdateHAResource(ctx, pveapi.HAResourceParams{SID: haSID(tg.vmid - 1), State: "ignored"}); err != nil {
		t.Fatal(err)
	}
	if st, err := tg.api.VMStatus(ctx, "pv1-2", tg.vmid-1); err != nil || bool(st.HA.Managed) {
		t.Errorf("an ignored resource reads managed: %+v, %v", st.HA, err)
	}
	var up string
	tg.rawJSON("POST", "/nodes/pv1-2/qemu/"+strconv.Itoa(tg.vmid-1)+"/status/start", url.Values{}, &up)
	if u, _ := pveapi.ParseUPID(up); u.Type != "qmstart" {
		t.Errorf("start of an ignored HA resource ran %q", u.Type)
	}
}

func haLogText(s *pvesim.Sim) string {
	var b strings.Builder
	for _, e := range s.HALog() {
		b.WriteString(e.Level + ": " + e.Message + "\n")
	}
	return b.String()
}

// TestSource_haRecoverySeedLeftBehind: a VM whose seed ISO sits on the dead node's own ISO
// storage cannot start where it is recovered to (vm_start activates every drive volume:
// "volume ... does not exist"); the LRM gives up after max_restart (LRM.pm:879-891), the
// CRM relocates while the failed nodes number at most max_relocate, then puts the service
// in error (Manager.pm:1468-1497), which takes no new request but disabled
// (Resources.pm:37-51).
func TestSource_haRecoverySeedLeftBehind(t *testing.T) {
	tg := newTarget(t, pvesim.Options{Nodes: haNodes})
	s := tg.simOnly("moves a node down")
	tg.parallel()
	tg.seeded("#cloud-config\n")
	sid := haSID(tg.vmid)
	if err := tg.api.CreateHAResource(tg.ctx(), pveapi.HAResourceParams{SID: sid}); err != nil {
		t.Fatal(err)
	}
	tg.eventually("started by HA", func() bool { r, _ := s.HAResourceOf(tg.vmid); return r.CRMState == "started" })
	if err := s.SetNodeDown(captureNode, true); err != nil {
		t.Fatal(err)
	}
	tg.eventually("the error state", func() bool { r, _ := s.HAResourceOf(tg.vmid); return r.CRMState == "error" })
	log := haLogText(s)
	for _, want := range []string{
		"recover service '" + sid + "' from fenced node '" + captureNode + "' to node 'pv1-2'",
		"starting service " + sid + " on node 'pv1-2' failed, relocating service.",
		"recovery policy for service " + sid + " failed, entering error state. Failed nodes: pv1-2, pv1-3",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("CRM log lacks %q:\n%s", want, log)
		}
	}
	if v, _ := s.VM(tg.vmid); v.Status == "running" {
		t.Errorf("the VM runs without its seed: %+v", v)
	}
	tg.wantAPIError(tg.api.UpdateHAResource(tg.ctx(), pveapi.HAResourceParams{SID: sid, State: "started"}), "err_ha_service_error")
	if err := tg.api.UpdateHAResource(tg.ctx(), pveapi.HAResourceParams{SID: sid, State: "disabled"}); err != nil {
		t.Errorf("disabling a service in error: %v", err)
	}
}

// TestSource_haFailbackAndMigrate: with a node-affinity rule of two priorities, a service
// recovered to the lower one goes back when the higher node returns, failback being on by
// default (Resources.pm:65-73; Manager.pm select_service_node lines 334-359, 1508-1540),
// and stays with failback off. qm migrate of an HA-managed VM is an hamigrate task
// (Qemu.pm:5639-5651) the CRM refuses towards a negative partner's node
// (Manager.pm:588-601) and carries out otherwise.
func TestSource_haFailbackAndMigrate(t *testing.T) {
	tg, s := haTarget(t)
	ctx := tg.ctx()
	a, b := haSID(tg.vmid), haSID(tg.vmid-1)
	for _, sid := range []string{a, b} {
		if err := tg.api.CreateHAResource(ctx, pveapi.HAResourceParams{SID: sid}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tg.api.UpdateHAResource(ctx, pveapi.HAResourceParams{SID: b, Failback: pveapi.BoolPtr(false)}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ rule, sid, nodes string }{{"pin-a", a, "pv1-1:2,pv1-3:1"}, {"pin-b", b, "pv1-2:2,pv1-3:1"}} {
		if err := tg.api.CreateHARule(ctx, pveapi.HARuleParams{Rule: p.rule, Type: "node-affinity", Resources: p.sid, Nodes: p.nodes}); err != nil {
			t.Fatal(err)
		}
	}
	tg.eventually("both started", func() bool {
		x, _ := s.HAResourceOf(tg.vmid)
		y, _ := s.HAResourceOf(tg.vmid - 1)
		return x.CRMState == "started" && y.CRMState == "started"
	})
	for _, n := range []string{captureNode, "pv1-2"} {
		if err := s.SetNodeDown(n, true); err != nil {
			t.Fatal(err)
		}
	}
	// Two of three down: no quorum, nothing happens; bring pv1-2 back at once, so that only
	// pv1-1 stays down.
	if err := s.SetNodeDown("pv1-2", false); err != nil {
		t.Fatal(err)
	}
	tg.eventually("a recovered to pv1-3", func() bool { r, _ := s.HAResourceOf(tg.vmid); return r.Node == "pv1-3" && r.CRMState == "started" })
	if err := s.SetNodeDown(captureNode, false); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Log(haLogText(s))
		}
	}()
	tg.eventually("a back on pv1-1 (failback)", func() bool {
		r, _ := s.HAResourceOf(tg.vmid)
		v, _ := s.VM(tg.vmid)
		return r.Node == captureNode && v.Status == "running"
	})
	// b has failback off: moved to pv1-3 by hand, it stays there.
	upid, err := tg.api.Migrate(ctx, "pv1-2", tg.vmid-1, pveapi.MigrateParams{Target: "pv1-3", Online: true})
	tg.mustOK(upid, err)
	if u, _ := pveapi.ParseUPID(upid); u.Type != "hamigrate" {
		t.Errorf("migrate of an HA-managed VM ran %q", u.Type)
	}
	tg.eventually("b on pv1-3", func() bool { r, _ := s.HAResourceOf(tg.vmid - 1); return r.Node == "pv1-3" })
	time.Sleep(s.WallTime(3 * s.Durations().HARound))
	if r, _ := s.HAResourceOf(tg.vmid - 1); r.Node != "pv1-3" {
		t.Errorf("b with failback off moved back to %s", r.Node)
	}
	// A negative rule between them: a's move to b's node is refused by the CRM.
	if err := tg.api.DeleteHARule(ctx, "pin-a"); err != nil {
		t.Fatal(err)
	}
	if err := tg.api.DeleteHARule(ctx, "pin-b"); err != nil {
		t.Fatal(err)
	}
	if err := tg.api.CreateHARule(ctx, pveapi.HARuleParams{Rule: "proxy-pair", Type: "resource-affinity", Affinity: "negative", Resources: a + "," + b}); err != nil {
		t.Fatal(err)
	}
	upid, err = tg.api.Migrate(ctx, captureNode, tg.vmid, pveapi.MigrateParams{Target: "pv1-3", Online: true})
	tg.mustOK(upid, err)
	want := "crm command 'migrate " + a + " pv1-3' error - service '" + b + "' on node 'pv1-3' in negative affinity with service '" + a + "'"
	tg.eventually("the refused migrate", func() bool { return strings.Contains(haLogText(s), want) })
	if r, _ := s.HAResourceOf(tg.vmid); r.Node != captureNode {
		t.Errorf("a moved to %s despite the negative rule", r.Node)
	}
}

// TestSource_haNoFenceWithoutServices: a node without HA services is never fenced
// (Manager.pm:1158-1172 fences the nodes of services in fence), so its guests are left as
// they were; the admin API shows the HA state (GET /pvesim/ha).
func TestSource_haNoFenceWithoutServices(t *testing.T) {
	tg := newTarget(t, pvesim.Options{Nodes: haNodes})
	s := tg.simOnly("moves a node down")
	tg.parallel()
	tg.cloned()
	tg.started()
	if err := s.SetNodeDown(captureNode, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(s.WallTime(s.Durations().HALockTimeout + 3*s.Durations().HARound))
	if v, _ := s.VM(tg.vmid); v.Status != "running" || v.Node != captureNode {
		t.Errorf("a guest outside HA on a node down: %s on %s", v.Status, v.Node)
	}
	if log := haLogText(s); log != "" {
		t.Errorf("the CRM acted without HA services:\n%s", log)
	}
	var got struct {
		Resources []pvesim.HAResourceState `json:"resources"`
		Rules     []pvesim.HARuleState     `json:"rules"`
		Log       []pvesim.HAEvent         `json:"log"`
	}
	tg.admin("GET", "/ha", nil, &got)
	if got.Resources == nil || got.Rules == nil || len(got.Resources) != 0 {
		t.Errorf("admin HA state %+v", got)
	}
}

// TestSource_haDeleteLetsGo: a deleted HA resource leaves the config at once (status/current
// reads managed 0, Config.pm:492-507) and the manager's status at its next round; meanwhile
// the status API lists it as deleting (Status.pm:309-331, Tools.pm:219). The VM keeps
// running: nothing stops it.
func TestSource_haDeleteLetsGo(t *testing.T) {
	// A round of 10 simulated minutes (600 ms at the default speed) leaves time to see the
	// deleting entry on a loaded machine.
	tg, s := haTarget(t, pvesim.Durations{HARound: 10 * time.Minute})
	haPair(t, tg, s)
	sid := haSID(tg.vmid)
	if err := tg.api.DeleteHAResource(tg.ctx(), sid, true); err != nil {
		t.Fatal(err)
	}
	if st, err := tg.api.VMStatus(tg.ctx(), tg.node, tg.vmid); err != nil || bool(st.HA.Managed) || st.Status != "running" {
		t.Errorf("after the delete: %+v, %v", st, err)
	}
	state := func() string {
		st, err := tg.api.HAStatus(tg.ctx())
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range st {
			if e.SID == sid {
				return e.State
			}
		}
		return ""
	}
	if got := state(); got != "deleting" {
		t.Errorf("right after the delete the status reads %q, want deleting", got)
	}
	tg.eventually("the service gone from the status", func() bool { return state() == "" })
	if rules := s.HARules(); len(rules) != 1 || len(rules[0].Resources) != 1 {
		t.Errorf("purge left the rules %+v", rules)
	}
}
