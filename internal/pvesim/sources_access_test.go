package pvesim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// The permission model against pve-access-control 5ccd07d, pve-manager 14a22df and
// qemu-server e6352be (fact: pool-privileges, fact: access-permissions). Every call here
// goes through the real API endpoints an administrator uses (/pools, /access/users, the
// token endpoint, /access/acl, /access/roles, /access/permissions); the tests are
// simulator-only because they create users, tokens and ACLs.

// as sends a request with another token and decodes data when the answer is 200.
func (tg *target) as(token, method, path string, form url.Values, data any) (int, string) {
	tg.t.Helper()
	resp, b := tg.raw(method, path, form, map[string]string{"Authorization": "PVEAPIToken=" + token})
	var env struct {
		Data    json.RawMessage `json:"data"`
		Message string          `json:"message"`
	}
	_ = json.Unmarshal(b, &env)
	if resp.StatusCode == http.StatusOK && data != nil {
		if err := json.Unmarshal(env.Data, data); err != nil {
			tg.t.Fatalf("%s %s: %v in %s", method, path, err, env.Data)
		}
	}
	return resp.StatusCode, strings.TrimSuffix(env.Message, "\n")
}

// adminOK sends a request with the simulator's root token that must succeed.
func (tg *target) adminOK(method, path string, form url.Values, data any) {
	tg.t.Helper()
	if code, msg := tg.as(tg.token, method, path, form, data); code != http.StatusOK {
		tg.t.Fatalf("%s %s: %d %s", method, path, code, msg)
	}
}

// grant gives the user and its token the roles on path, as the setup guide's two pveum acl
// modify lines do.
func (tg *target) grant(user, token, path, roles string) {
	tg.t.Helper()
	tg.adminOK("PUT", "/access/acl", url.Values{"path": {path}, "users": {user}, "roles": {roles}}, nil)
	if token != "" {
		tg.adminOK("PUT", "/access/acl", url.Values{"path": {path}, "tokens": {token}, "roles": {roles}}, nil)
	}
}

// poolToken sets up what the setup guide describes: pool proxies, user proxy@pve, a
// privilege-separated token proxy@pve!tf, and the grants; it returns the full token.
func (tg *target) poolToken() string {
	tg.t.Helper()
	tg.adminOK("POST", "/pools", url.Values{"poolid": {"proxies"}, "comment": {"proxy VMs"}}, nil)
	tg.adminOK("POST", "/access/users", url.Values{"userid": {"proxy@pve"}}, nil)
	var tok struct {
		FullID string         `json:"full-tokenid"`
		Value  string         `json:"value"`
		Info   map[string]any `json:"info"`
	}
	tg.adminOK("POST", "/access/users/proxy@pve/token/tf", url.Values{"privsep": {"1"}}, &tok)
	if tok.FullID != "proxy@pve!tf" || tok.Value == "" || tok.Info["privsep"] != float64(1) {
		tg.t.Fatalf("token answer %+v", tok)
	}
	tg.grant("proxy@pve", tok.FullID, "/pool/proxies", "PVEVMAdmin")
	tg.grant("proxy@pve", tok.FullID, "/vms/"+strconv.Itoa(tg.template), "PVETemplateUser")
	tg.grant("proxy@pve", tok.FullID, "/storage/local-lvm", "PVEDatastoreUser")
	tg.grant("proxy@pve", tok.FullID, "/sdn/zones/localnetwork/vmbr0", "PVESDNUser")
	return tok.FullID + "=" + tok.Value
}

func (tg *target) clientFor(token string) *pveapi.Client {
	tg.t.Helper()
	c, err := pveapi.New(pveapi.Options{Endpoint: tg.endpoint, Token: token, CAPEM: tg.caPEM(), RequestTimeout: 30 * time.Second})
	if err != nil {
		tg.t.Fatal(err)
	}
	return c
}

// wantFixture403 asserts an answer is a fixture's 403 text with the target's VMID.
func wantFixture(t *testing.T, code int, msg, name string, repl ...string) {
	t.Helper()
	f := fixture.MustLoad(name)
	want := strings.NewReplacer(repl...).Replace(f.Message())
	if code != f.Status || msg != want {
		t.Fatalf("got %d %q, want %d %q (fixture %s)", code, msg, f.Status, want, name)
	}
}

// TestSource_builtinRoles: the built-in roles carry the privileges pve-access-control
// src/PVE/AccessControl.pm create_roles derives from $privgroups (admin, user and audit
// privileges of a category for PVE<cat>Admin, user and audit ones for PVE<cat>User, audit
// ones for PVEAuditor; PVETemplateUser by hand), listed by GET /access/roles.
func TestSource_builtinRoles(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.simOnly("reads the simulator's roles")
	tg.parallel()
	var roles []struct {
		RoleID  string `json:"roleid"`
		Privs   string `json:"privs"`
		Special int    `json:"special"`
	}
	tg.rawJSON("GET", "/access/roles", nil, &roles)
	got := map[string]string{}
	for _, r := range roles {
		if r.Special != 1 {
			t.Errorf("%s is built in but not special", r.RoleID)
		}
		got[r.RoleID] = r.Privs
	}
	sorted := func(s string) string {
		p := strings.Split(s, ",")
		sort.Strings(p)
		return strings.Join(p, ",")
	}
	for role, privs := range map[string]string{
		"PVEVMAdmin": "VM.Allocate,VM.Audit,VM.Backup,VM.Clone,VM.Config.CDROM,VM.Config.CPU,VM.Config.Cloudinit,VM.Config.Disk," +
			"VM.Config.HWType,VM.Config.Memory,VM.Config.Network,VM.Config.Options,VM.Console,VM.GuestAgent.Audit," +
			"VM.GuestAgent.FileRead,VM.GuestAgent.FileSystemMgmt,VM.GuestAgent.FileWrite,VM.GuestAgent.Unrestricted," +
			"VM.Migrate,VM.PowerMgmt,VM.Replicate,VM.Snapshot,VM.Snapshot.Rollback",
		"PVEVMUser": "VM.Audit,VM.Backup,VM.Config.CDROM,VM.Config.Cloudinit,VM.Console,VM.GuestAgent.Audit,VM.GuestAgent.FileRead," +
			"VM.GuestAgent.FileSystemMgmt,VM.GuestAgent.FileWrite,VM.PowerMgmt",
		"PVEDatastoreUser":  "Datastore.AllocateSpace,Datastore.Audit",
		"PVEDatastoreAdmin": "Datastore.Allocate,Datastore.AllocateSpace,Datastore.AllocateTemplate,Datastore.Audit",
		"PVESDNUser":        "SDN.Audit,SDN.Use",
		"PVEPoolUser":       "Pool.Audit",
		"PVEPoolAdmin":      "Pool.Allocate,Pool.Audit",
		"PVETemplateUser":   "VM.Audit,VM.Clone",
		"PVEAuditor":        "Datastore.Audit,Mapping.Audit,Pool.Audit,SDN.Audit,Sys.Audit,VM.Audit,VM.GuestAgent.Audit",
		"NoAccess":          "",
	} {
		if sorted(got[role]) != sorted(privs) {
			t.Errorf("%s: %q, want %q", role, got[role], privs)
		}
	}
	if !strings.Contains(got["Administrator"], "Permissions.Modify") || strings.Contains(got["PVEAdmin"], "Mapping.Modify") {
		t.Errorf("Administrator %q, PVEAdmin %q", got["Administrator"], got["PVEAdmin"])
	}
	// A custom role: the PVE namespace is reserved, privileges are checked.
	code, msg := tg.as(tg.token, "POST", "/access/roles", url.Values{"roleid": {"PVEProxy"}}, nil)
	if code != 400 || !strings.Contains(msg, "Parameter verification failed") {
		t.Errorf("PVE-prefixed role: %d %s", code, msg)
	}
	code, _ = tg.as(tg.token, "POST", "/access/roles", url.Values{"roleid": {"Proxy"}, "privs": {"VM.Audit,VM.Bogus"}}, nil)
	if code != 400 {
		t.Errorf("unknown privilege: %d", code)
	}
	tg.adminOK("POST", "/access/roles", url.Values{"roleid": {"Proxy"}, "privs": {"VM.Audit VM.PowerMgmt"}}, nil)
	var role map[string]int
	tg.rawJSON("GET", "/access/roles/Proxy", nil, &role)
	if len(role) != 2 || role["VM.Audit"] != 1 || role["VM.PowerMgmt"] != 1 {
		t.Errorf("custom role %v", role)
	}
}

// TestSource_poolScopedTokenLifecycle: a privilege-separated token granted on a pool (plus
// the template, the storage and the bridge) clones into the pool, sees only what it may
// audit, manages its VM through the pool's roles, is refused outside it with Proxmox's texts,
// and the destroy takes the VM out of the pool.
func TestSource_poolScopedTokenLifecycle(t *testing.T) {
	// A clone long enough to look at the VM while it runs (600 ms at the default speed).
	tg := newTarget(t, pvesim.Options{Durations: pvesim.Durations{Clone: 10 * time.Minute}})
	s := tg.simOnly("creates users, tokens and ACLs")
	tg.parallel()
	token := tg.poolToken()
	pc := tg.clientFor(token)
	ctx := tg.ctx()

	// Without the pool parameter neither VM.Allocate branch passes: a bare refusal
	// (qemu-server clone_vm, RPCEnvironment.pm exec_api2_perm_check 'or').
	_, err := pc.Clone(ctx, tg.node, tg.template, pveapi.CloneParams{NewID: tg.vmid, Name: captureName})
	tg.wantAPIError(err, "err_permission_clone_allocate")
	// A pool that does not exist (check_pool_exist) needs the declared check to pass
	// first: the root token's.
	_, err = tg.api.Clone(ctx, tg.node, tg.template, pveapi.CloneParams{NewID: tg.vmid, Name: captureName, Pool: "edge"})
	tg.wantAPIError(err, "err_permission_pool_missing")

	upid, err := pc.Clone(ctx, tg.node, tg.template, pveapi.CloneParams{NewID: tg.vmid, Name: captureName, Pool: "proxies"})
	if err != nil {
		t.Fatal(err)
	}
	// The VM joins the pool at the end of the clone task (clone_vm: add_vm_to_pool last);
	// the token polls its own task without Sys.Audit.
	// The pool is read first, the task's state after it: a task still running then was
	// running when the pool was read. A loaded machine may let the clone end first; then
	// there is nothing to check.
	pool := s.PoolOf(tg.vmid)
	u, err := pveapi.ParseUPID(upid)
	if err != nil {
		t.Fatal(err)
	}
	switch st, err := tg.api.TaskStatus(ctx, u.Node, upid); {
	case err != nil:
		t.Fatal(err)
	case st.Status != "running":
		t.Logf("the clone ended before the pool was looked at (a loaded machine): its pool while it ran is not checked")
	case pool != "":
		t.Errorf("in the pool %q before the clone ended", pool)
	}
	if st, err := pveapi.ParseUPID(upid); err != nil || st.User != "proxy@pve!tf" {
		t.Errorf("UPID user %+v: %v", st, err)
	}
	tpc := &target{t: t, api: pc, poll: tg.poll, deadline: tg.deadline}
	if st := tpc.waitTask(upid); st.ExitStatus != "OK" {
		t.Fatalf("clone ended %q", st.ExitStatus)
	}
	if s.PoolOf(tg.vmid) != "proxies" {
		t.Fatalf("pool %q after the clone", s.PoolOf(tg.vmid))
	}

	// The listing: the template (ACL) and the pool's VM, nothing else; the pool field needs
	// Pool.Audit, which PVEVMAdmin lacks (pve-manager PVE/API2/Cluster.pm resources).
	listed := func() map[int]pveapi.Resource {
		res, err := pc.ClusterResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int]pveapi.Resource{}
		for _, r := range res {
			out[r.VMID] = r
		}
		return out
	}
	got := listed()
	if len(got) != 2 || got[tg.template].VMID == 0 || got[tg.vmid].VMID == 0 || got[tg.vmid].Pool != "" {
		t.Fatalf("listing %+v, want the template and the VM, no pool field", got)
	}
	tg.grant("proxy@pve", "proxy@pve!tf", "/pool/proxies", "PVEPoolUser")
	if got := listed(); got[tg.vmid].Pool != "proxies" {
		t.Errorf("with Pool.Audit the pool field is %q", got[tg.vmid].Pool)
	}

	// The pool's roles reach the VM: config, start, stop, destroy.
	if err := pc.SetVMConfig(ctx, tg.node, tg.vmid, map[string]string{"cores": "3", "description": "pool member"}); err != nil {
		t.Fatal(err)
	}
	upid, err = pc.Start(ctx, tg.node, tg.vmid)
	tpc.mustOK(upid, err)

	// Outside the pool: VM 100 is hidden and refused, before Proxmox looks for the VM; the
	// VMID 999999 that holds nothing answers the same.
	for _, id := range []int{100, captureMissing} {
		_, err = pc.VMConfig(ctx, tg.node, id)
		ae := apiErr(t, err)
		wantFixture(t, ae.Status, ae.Message, "err_permission_vm_audit", "199999", strconv.Itoa(id))
	}
	// Whether a guest holds a VMID is every user's to ask (pve-manager PVE/API2/Cluster.pm
	// nextid: user => 'all'), hidden guests included.
	if free, err := pc.VMIDFree(ctx, 100); err != nil || free {
		t.Errorf("VMID 100 free %v: %v", free, err)
	}
	code, _ := tg.as(token, "GET", "/cluster/nextid", url.Values{"vmid": {"100"}}, nil)
	resp, b := tg.raw("GET", "/cluster/nextid", url.Values{"vmid": {"100"}}, map[string]string{"Authorization": "PVEAPIToken=" + token})
	if want := strings.ReplaceAll(string(fixture.MustLoad("err_nextid_taken").BodyBytes()), "199999", "100"); code != http.StatusBadRequest || resp.StatusCode != http.StatusBadRequest || string(b) != want {
		t.Errorf("nextid of a hidden guest: %d %s, want %s", resp.StatusCode, b, want)
	}
	var next string
	if code, _ := tg.as(token, "GET", "/cluster/nextid", url.Values{"vmid": {strconv.Itoa(captureMissing)}}, &next); code != 200 || next != strconv.Itoa(captureMissing) {
		t.Errorf("nextid of a free VMID: %d %q", code, next)
	}
	code, msg := tg.as(token, "POST", "/nodes/"+tg.node+"/qemu/100/status/stop", url.Values{}, nil)
	wantFixture(t, code, msg, "err_permission_vm_audit", "199999", "100", "VM.Audit", "VM.PowerMgmt")
	if v, _ := s.VM(100); v.Power != "running" {
		t.Errorf("VM 100 is %s", v.Power)
	}
	// A task of another token needs Sys.Audit on its node (pve-manager PVE/API2/Tasks.pm).
	rootUPID, err := tg.api.Stop(ctx, tg.node, 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pc.TaskStatus(ctx, tg.node, rootUPID); err == nil || !strings.Contains(err.Error(), "Permission check failed (/nodes/"+tg.node+", Sys.Audit)") {
		t.Errorf("another token's task: %v", err)
	}

	// The token's effective privileges on the pool: what both its user and it were granted.
	privs, err := pc.Permissions(ctx, "/pool/proxies")
	if err != nil || !privs["VM.Allocate"] || !privs["Pool.Audit"] || len(privs) != 24 {
		t.Errorf("privileges on /pool/proxies: %v (%d): %v", privs, len(privs), err)
	}

	upid, err = pc.Stop(ctx, tg.node, tg.vmid)
	tpc.mustOK(upid, err)
	upid, err = pc.Destroy(ctx, tg.node, tg.vmid)
	tpc.mustOK(upid, err)
	var pools []struct {
		Members []map[string]any `json:"members"`
	}
	tg.rawJSON("GET", "/pools", url.Values{"poolid": {"proxies"}}, &pools)
	if s.PoolOf(tg.vmid) != "" || len(pools) != 1 || len(pools[0].Members) != 0 {
		t.Errorf("the destroyed VM is still in the pool: %q %+v", s.PoolOf(tg.vmid), pools)
	}
}

// TestSource_privilegeSeparation: a privilege-separated token has what its user and its own
// ACLs both grant (RPCEnvironment.pm $compile_acl_path, the intersection); a token without
// privilege separation has its user's; a propagated ACL reaches the paths below, an
// unpropagated one only its own, and a more specific ACL replaces the inherited roles
// (AccessControl.pm roles).
func TestSource_privilegeSeparation(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.simOnly("creates users, tokens and ACLs")
	tg.parallel()
	tg.adminOK("POST", "/access/users", url.Values{"userid": {"ops@pve"}}, nil)
	var sep, full struct {
		Value string `json:"value"`
	}
	tg.adminOK("POST", "/access/users/ops@pve/token/sep", nil, &sep)
	tg.adminOK("POST", "/access/users/ops@pve/token/full", url.Values{"privsep": {"0"}}, &full)
	sepTok, fullTok := "ops@pve!sep="+sep.Value, "ops@pve!full="+full.Value
	perms := func(token, path string) []string {
		var m map[string]map[string]int
		if code, msg := tg.as(token, "GET", "/access/permissions", url.Values{"path": {path}}, &m); code != 200 {
			t.Fatalf("permissions %s: %d %s", path, code, msg)
		}
		var out []string
		for p := range m[path] {
			out = append(out, p)
		}
		slices.Sort(out)
		return out
	}
	// The user may audit /vms; the separated token was given more, on /vms/100 only.
	tg.grant("ops@pve", "", "/vms", "PVEAuditor")
	tg.adminOK("PUT", "/access/acl", url.Values{"path": {"/vms/100"}, "tokens": {"ops@pve!sep"}, "roles": {"PVEVMAdmin"}}, nil)
	if got := perms(sepTok, "/vms/100"); !slices.Equal(got, []string{"VM.Audit", "VM.GuestAgent.Audit"}) {
		t.Errorf("separated token on /vms/100: %v, want the intersection", got)
	}
	if got := perms(sepTok, "/vms/101"); len(got) != 0 {
		t.Errorf("separated token on /vms/101: %v, want none (no ACL of its own)", got)
	}
	if got := perms(fullTok, "/vms/101"); !slices.Contains(got, "VM.Audit") || slices.Contains(got, "VM.PowerMgmt") {
		t.Errorf("token without separation on /vms/101: %v, want its user's", got)
	}
	// Unpropagated: /storage only, not /storage/local.
	tg.adminOK("PUT", "/access/acl", url.Values{"path": {"/storage"}, "users": {"ops@pve"}, "roles": {"PVEDatastoreUser"}, "propagate": {"0"}}, nil)
	if perms(fullTok, "/storage") == nil || len(perms(fullTok, "/storage/local")) != 0 {
		t.Errorf("unpropagated ACL: /storage %v, /storage/local %v", perms(fullTok, "/storage"), perms(fullTok, "/storage/local"))
	}
	// A more specific ACL replaces: NoAccess on /vms/101 hides it from the user's tokens.
	tg.grant("ops@pve", "", "/vms/101", "NoAccess")
	if got := perms(fullTok, "/vms/101"); len(got) != 0 {
		t.Errorf("NoAccess on /vms/101: %v", got)
	}
	// The same call with a userid needs Sys.Audit on /access unless it is one's own token.
	code, msg := tg.as(fullTok, "GET", "/access/permissions", url.Values{"userid": {"root@pam"}}, nil)
	if code != 403 || msg != "Permission check failed (/access, Sys.Audit)" {
		t.Errorf("another user's permissions: %d %q", code, msg)
	}
	// An ACL for a token or role that does not exist is refused inside lock_user_config.
	code, msg = tg.as(tg.token, "PUT", "/access/acl", url.Values{"path": {"/vms"}, "tokens": {"ops@pve!nope"}, "roles": {"PVEAuditor"}}, nil)
	if code != 500 || msg != "ACL update failed: no such token 'nope' for user 'ops@pve'" {
		t.Errorf("unknown token: %d %q", code, msg)
	}
	code, msg = tg.as(tg.token, "PUT", "/access/acl", url.Values{"path": {"/vms"}, "users": {"ops@pve"}, "roles": {"Nope"}}, nil)
	if code != 500 || msg != "ACL update failed: role 'Nope' does not exist" {
		t.Errorf("unknown role: %d %q", code, msg)
	}
	code, _ = tg.as(tg.token, "PUT", "/access/acl", url.Values{"path": {"/bogus/path"}, "users": {"ops@pve"}, "roles": {"NoAccess"}}, nil)
	if code != 400 {
		t.Errorf("invalid ACL path: %d", code)
	}
}

// TestSource_poolUpdates: PUT /pools (pve-manager PVE/API2/Pool.pm update_pool) adds a VM,
// moves it from another pool only with allow-move and Pool.Allocate on both pools, removes
// it with delete; its refusals keep Proxmox's texts.
func TestSource_poolUpdates(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	s := tg.simOnly("creates pools")
	tg.parallel()
	put := func(token string, form url.Values) (int, string) {
		return tg.as(token, "PUT", "/pools", form, nil)
	}
	tg.adminOK("POST", "/pools", url.Values{"poolid": {"a"}}, nil)
	tg.adminOK("POST", "/pools", url.Values{"poolid": {"b"}}, nil)
	code, msg := tg.as(tg.token, "POST", "/pools", url.Values{"poolid": {"a"}}, nil)
	if code != 500 || msg != "create pool failed: pool 'a' already exists" {
		t.Errorf("duplicate pool: %d %q", code, msg)
	}
	if code, _ := tg.as(tg.token, "POST", "/pools", url.Values{"poolid": {"a/b/c/d"}}, nil); code != 400 {
		t.Errorf("a pool nested four deep: %d", code)
	}
	tg.adminOK("PUT", "/pools", url.Values{"poolid": {"a"}, "vms": {"100"}}, nil)
	code, msg = put(tg.token, url.Values{"poolid": {"a"}, "vms": {"100"}})
	wantFixture(t, code, msg, "err_pool_already_member", "199999", "100")
	code, msg = put(tg.token, url.Values{"poolid": {"b"}, "vms": {"100"}})
	if code != 500 || msg != "update pools failed: VM 100 belongs already to pool 'a' and 'allow-move' is not set" {
		t.Errorf("move without allow-move: %d %q", code, msg)
	}
	tg.adminOK("PUT", "/pools", url.Values{"poolid": {"b"}, "vms": {"100"}, "allow-move": {"1"}}, nil)
	if s.PoolOf(100) != "b" {
		t.Fatalf("pool %q after the move", s.PoolOf(100))
	}
	code, msg = put(tg.token, url.Values{"poolid": {"a"}, "vms": {"100"}, "delete": {"1"}})
	wantFixture(t, code, msg, "err_pool_not_member", "199999", "100")
	code, msg = put(tg.token, url.Values{"poolid": {"edge"}, "vms": {"100"}})
	wantFixture(t, code, msg, "err_pool_update_missing")
	// The deprecated form takes the pool in the path.
	tg.adminOK("PUT", "/pools/b", url.Values{"vms": {"100"}, "delete": {"1"}}, nil)
	if s.PoolOf(100) != "" {
		t.Fatalf("pool %q after the removal", s.PoolOf(100))
	}
	// A token with Pool.Allocate on a only cannot touch b, nor move a VM out of b.
	tg.adminOK("POST", "/pools", url.Values{"poolid": {"edge"}}, nil)
	tg.adminOK("POST", "/access/users", url.Values{"userid": {"ops@pve"}}, nil)
	var tok struct {
		Value string `json:"value"`
	}
	// A token id is a realm-like name of two characters or more (AccessControl.pm
	// $token_subid_regex).
	if code, _ := tg.as(tg.token, "POST", "/access/users/ops@pve/token/t", nil, nil); code != 400 {
		t.Errorf("one-letter token id: %d", code)
	}
	tg.adminOK("POST", "/access/users/ops@pve/token/tk", url.Values{"privsep": {"0"}}, &tok)
	tg.grant("ops@pve", "", "/pool/a", "PVEPoolAdmin,PVEVMAdmin")
	token := "ops@pve!tk=" + tok.Value
	code, msg = put(token, url.Values{"poolid": {"edge"}, "vms": {"100"}})
	wantFixture(t, code, msg, "err_pool_update_forbidden")
	tg.adminOK("PUT", "/pools", url.Values{"poolid": {"b"}, "vms": {"101"}}, nil)
	tg.grant("ops@pve", "", "/vms/101", "PVEVMAdmin")
	code, msg = put(token, url.Values{"poolid": {"a"}, "vms": {"101"}, "allow-move": {"1"}})
	if code != 403 || msg != "Permission check failed (/pool/b, Pool.Allocate)" || s.PoolOf(101) != "b" {
		t.Errorf("move out of a pool without Pool.Allocate there: %d %q, pool %q", code, msg, s.PoolOf(101))
	}
}

// TestSource_permissionBeforeParameters: the declared check runs before the parameters are
// validated (pve-manager PVE/HTTPServer.pm rest_handler calls check_api2_permissions before
// the handler validates), so a token without the privilege learns nothing about them.
func TestSource_permissionBeforeParameters(t *testing.T) {
	tg := newTarget(t, pvesim.Options{})
	tg.simOnly("creates users and tokens")
	tg.parallel()
	token := tg.poolToken()
	code, msg := tg.as(token, "PUT", "/nodes/"+tg.node+"/qemu/100/config", url.Values{"cores": {"many"}}, nil)
	if code != 403 || !strings.HasPrefix(msg, "Permission check failed (/vms/100, ") {
		t.Errorf("got %d %q, want the 403 before the 400", code, msg)
	}
	code, _ = tg.as(tg.token, "PUT", "/nodes/"+tg.node+"/qemu/100/config", url.Values{"cores": {"many"}}, nil)
	if code != 400 {
		t.Errorf("root gets the parameter error: %d", code)
	}
}

// TestSource_resizeChecksStorageInTask: a resize's Datastore.AllocateSpace on the disk's
// storage is checked inside the task (qemu-server resize_vm's worker): the call answers a
// UPID, the task fails with the refusal.
func TestSource_resizeChecksStorageInTask(t *testing.T) {
	tg := newTarget(t, pvesim.Options{Deny: []pvesim.Privilege{{Path: "/storage/local-lvm", Privilege: "Datastore.AllocateSpace"}}})
	s := tg.simOnly("denies a privilege")
	tg.parallel()
	s.Allow("/storage/local-lvm", "Datastore.AllocateSpace")
	tg.cloned()
	s.Deny("/storage/local-lvm", "Datastore.AllocateSpace")
	upid, err := tg.api.Resize(tg.ctx(), tg.node, tg.vmid, "scsi0", "8G")
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)" {
		t.Errorf("resize task ended %q", st.ExitStatus)
	}
}
