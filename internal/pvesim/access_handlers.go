package pvesim

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The admin endpoints a cluster administrator uses to set up a least-privilege token:
// pools (pve-manager PVE/API2/Pool.pm), users and their API tokens (pve-access-control
// src/PVE/API2/User.pm create_user, generate_token, remove_token), roles (API2/Role.pm),
// ACLs (API2/ACL.pm) and the effective permissions (API2/AccessControl.pm permissions).
// Errors raised inside lock_user_config carry its prefix ("create pool failed: ...",
// AccessControl.pm lock_user_config: die "$errmsg: $err"), as 500s.

// Formats of the access parameters (pve-access-control src/PVE/AccessControl.pm and
// src/PVE/Auth/Plugin.pm verify_username).
func fmtUserID(v string) string {
	switch {
	case len(v) < 3:
		return fmt.Sprintf("user name '%s' is too short", v)
	case len(v) > 64:
		return fmt.Sprintf("user name '%s' is too long (%d > 64)", v, len(v))
	case !userRe.MatchString(v):
		return fmt.Sprintf("value '%s' does not look like a valid user name", v)
	}
	return ""
}

func fmtTokenID(v string) string {
	if _, _, ok := splitTokenID(v); !ok {
		return fmt.Sprintf("value '%s' does not look like a valid token ID", v)
	}
	return ""
}

func fmtRoleID(v string) string {
	if !roleIDRe.MatchString(v) {
		return fmt.Sprintf("role name '%s' contains invalid characters", v)
	}
	return ""
}

// fmtPoolID is AccessControl.pm verify_poolname (the pve-poolid format).
func fmtPoolID(v string) string {
	if len(strings.Split(v, "/")) > 3 {
		return fmt.Sprintf("pool name '%s' nested too deeply (max levels = 3)", v)
	}
	if !poolIDRe.MatchString(v) {
		return fmt.Sprintf("pool name '%s' contains invalid characters", v)
	}
	return ""
}

func fmtPriv(v string) string {
	if !validPrivs[v] {
		return fmt.Sprintf("invalid privilege '%s'", v)
	}
	return ""
}

func fmtVMID(v string) string {
	if n, err := strconv.Atoi(v); err != nil || !intRe.MatchString(v) || n < 100 || n > 999999999 {
		return "value does not look like a valid VM ID"
	}
	return ""
}

// listOf is a "-list" format (pve-common src/PVE/JSONSchema.pm check_format): each item of
// split_list checked.
func listOf(f func(string) string) func(string) string {
	return func(v string) string {
		for _, item := range splitList(v) {
			if e := f(item); e != "" {
				return e
			}
		}
		return ""
	}
}

var (
	pPoolID   = pspec{optional: true, format: fmtPoolID}
	pTokenSub = pspec{format: func(v string) string {
		if !tokenSubRe.MatchString(v) {
			return errPattern
		}
		return ""
	}}
	pExpire = pspec{typ: tInt, optional: true, min: i64(0)}
	pPoolUp = map[string]pspec{
		"poolid": {format: fmtPoolID}, "comment": pStr,
		"vms": {optional: true, format: listOf(fmtVMID)}, "storage": {optional: true, format: listOf(fmtStorageID)},
		"allow-move": pBool, "delete": pBool,
	}
)

func init() {
	pathSpecs["poolid"] = pspec{format: fmtPoolID}
	pathSpecs["userid"] = pspec{format: fmtUserID}
	pathSpecs["tokenid"] = pTokenSub
	pathSpecs["roleid"] = pspec{format: fmtRoleID}
}

func addAccessRoutes(add func(method, tmpl string, sc *schema, perms func(c *call) error, h handlerFunc)) {
	poolAllocate := perm("/pool/{poolid}", false, "Pool.Allocate")
	add("GET", "/pools", fixed(map[string]pspec{"poolid": pPoolID, "type": {optional: true, enum: []string{"qemu",
		"lxc", "storage"}}}), nil, (*Sim).hPools)
	add("POST", "/pools", fixed(map[string]pspec{"poolid": {format: fmtPoolID}, "comment": pStr}), poolAllocate, (*Sim).hPoolCreate)
	add("PUT", "/pools", fixed(pPoolUp), poolAllocate, (*Sim).hPoolUpdate)
	add("DELETE", "/pools", fixed(map[string]pspec{"poolid": {format: fmtPoolID}}), poolAllocate, (*Sim).hPoolDelete)
	add("GET", "/pools/{poolid}", fixed(map[string]pspec{"type": {optional: true, enum: []string{"qemu", "lxc",
		"storage"}}}), perm("/pool/{poolid}", false, "Pool.Audit"), (*Sim).hPoolRead)
	inPath := maps.Clone(pPoolUp)
	delete(inPath, "poolid")
	add("PUT", "/pools/{poolid}", fixed(inPath), poolAllocate, (*Sim).hPoolUpdate)
	add("DELETE", "/pools/{poolid}", nil, poolAllocate, (*Sim).hPoolDelete)

	add("GET", "/access/permissions", fixed(map[string]pspec{
		"userid": {optional: true, format: func(v string) string {
			if fmtUserID(v) != "" && fmtTokenID(v) != "" {
				return errPattern
			}
			return ""
		}},
		"path": pStr,
	}), nil, (*Sim).hPermissions)
	add("GET", "/access/acl", nil, nil, (*Sim).hACLRead)
	add("PUT", "/access/acl", fixed(map[string]pspec{
		"path": {}, "roles": {format: listOf(fmtRoleID)}, "users": {optional: true, format: listOf(fmtUserID)},
		"groups": pStr, "tokens": {optional: true, format: listOf(fmtTokenID)}, "propagate": pBool, "delete": pBool,
	}), aclPermModify, (*Sim).hACLUpdate)
	add("GET", "/access/users", fixed(map[string]pspec{"enabled": pBool, "full": pBool}), nil, (*Sim).hUsers)
	add("POST", "/access/users", fixed(map[string]pspec{
		"userid": {format: fmtUserID}, "enable": pBool, "expire": pExpire, "firstname": pStr, "lastname": pStr,
		"email": pStr, "comment": pStr, "keys": pStr, "password": {optional: true, maxLen: 64}, "groups": pStr,
	}), userCreatePerms, (*Sim).hUserCreate)
	add("POST", "/access/users/{userid}/token/{tokenid}", fixed(map[string]pspec{"expire": pExpire, "privsep": pBool, "comment": pStr}),
		tokenPerms, (*Sim).hTokenCreate)
	add("DELETE", "/access/users/{userid}/token/{tokenid}", nil, tokenPerms, (*Sim).hTokenDelete)
	add("GET", "/access/roles", nil, nil, (*Sim).hRoles)
	add("POST", "/access/roles", fixed(map[string]pspec{"roleid": {format: fmtRoleID}, "privs": {optional: true, format: listOf(fmtPriv)}}),
		perm("/access", false, "Sys.Modify"), (*Sim).hRoleCreate)
	add("GET", "/access/roles/{roleid}", nil, nil, (*Sim).hRoleRead)
}

// Pools.

// hPools is PVE/API2/Pool.pm index: the pools the caller has Pool.Audit on, or, with
// poolid, that pool's members (the code checks Pool.Audit there but ignores the answer).
func (s *Sim) hPools(c *call) *response {
	if id := c.params["poolid"]; id != "" {
		p := s.access.pools[id]
		if p == nil {
			return apiError(500, fmt.Sprintf("pool '%s' does not exist", id))
		}
		return okData([]map[string]any{s.poolInfo(c, id, p, c.params["type"])})
	}
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.access.pools)) {
		if !c.can("/pool/"+id, "Pool.Audit") {
			continue
		}
		e := map[string]any{"poolid": id}
		if cm := s.access.pools[id].comment; cm != "" {
			e["comment"] = cm
		}
		out = append(out, e)
	}
	return okData(out)
}

// hPoolRead is Pool.pm read_pool (deprecated): index's entry without the poolid.
func (s *Sim) hPoolRead(c *call) *response {
	id := c.vars["poolid"]
	p := s.access.pools[id]
	if p == nil {
		return apiError(500, fmt.Sprintf("pool '%s' does not exist", id))
	}
	info := s.poolInfo(c, id, p, c.params["type"])
	delete(info, "poolid")
	return okData(info)
}

// poolInfo is a pool with its members: its guests as the listing shows them (the VMs that
// exist), then its storages, one entry each for the first node.
func (s *Sim) poolInfo(c *call, id string, p *simPool, typ string) map[string]any {
	members := []map[string]any{}
	for _, vmid := range slices.Sorted(maps.Keys(p.vms)) {
		v := s.vms[vmid]
		if v == nil || (typ != "" && typ != v.typ) {
			continue
		}
		members = append(members, s.vmEntry(v, c))
	}
	if typ == "" || typ == "storage" {
		n := s.nodeOrder[0]
		for _, sid := range slices.Sorted(maps.Keys(p.storage)) {
			st := s.storages[sid]
			if st == nil {
				continue
			}
			members = append(members, map[string]any{
				"id": "storage/" + n + "/" + sid, "storage": sid, "node": n, "type": "storage",
				"plugintype": st.typ, "content": strings.Join(st.content, ","), "shared": b2i(st.shared),
				"status": "available", "maxdisk": st.total, "disk": s.storageUsed(n, st),
			})
		}
	}
	info := map[string]any{"poolid": id, "members": members}
	if p.comment != "" {
		info["comment"] = p.comment
	}
	return info
}

// hPoolCreate is Pool.pm create_pool: a nested pool needs its parent, every level starts
// with a letter.
func (s *Sim) hPoolCreate(c *call) *response {
	id := c.params["poolid"]
	fail := func(msg string) *response { return apiError(500, "create pool failed: "+msg) }
	if s.access.pools[id] != nil {
		return fail(fmt.Sprintf("pool '%s' already exists", id))
	}
	leaf := id
	if i := strings.LastIndex(id, "/"); i >= 0 {
		parent := id[:i]
		leaf = id[i+1:]
		if s.access.pools[parent] == nil {
			return fail(fmt.Sprintf("parent '%s' of pool '%s' does not exist", parent, id))
		}
	}
	if leaf == "" || !isLetter(leaf[0]) {
		return fail("pool name must start with a letter")
	}
	s.access.pools[id] = &simPool{comment: c.params["comment"], vms: map[int]bool{}, storage: map[string]bool{}}
	return okData(nil)
}

func isLetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// hPoolUpdate is Pool.pm update_pool (PUT /pools, and the deprecated PUT /pools/{poolid}):
// add or (delete=1) remove guests and storages. Each object needs the right to modify its
// permissions (check_perm_modify: Permissions.Modify, or VM.Allocate on /vms/<vmid>,
// Datastore.Allocate on /storage/<id>); a guest already in another pool moves only with
// allow-move, and Pool.Allocate on that pool too. The update is all or nothing.
func (s *Sim) hPoolUpdate(c *call) *response {
	id := c.vars["poolid"]
	if id == "" {
		id = c.params["poolid"]
	}
	fail := func(msg string) *response { return apiError(500, "update pools failed: "+msg) }
	p := s.access.pools[id]
	if p == nil {
		return fail(fmt.Sprintf("pool '%s' does not exist", id))
	}
	del := c.params["delete"] == "1"
	next := &simPool{comment: p.comment, vms: maps.Clone(p.vms), storage: maps.Clone(p.storage)}
	vmPool := maps.Clone(s.access.vmPool)
	if cm, ok := c.params["comment"]; ok {
		next.comment = cm
	}
	moved := map[string]*simPool{}
	for _, item := range splitList(c.params["vms"]) {
		vmid, _ := strconv.Atoi(item)
		if err := c.checkPermModify("/vms/" + item); err != nil {
			return errResponse(err)
		}
		if del {
			if !next.vms[vmid] {
				return fail(fmt.Sprintf("VM %d is not a pool member", vmid))
			}
			delete(next.vms, vmid)
			delete(vmPool, vmid)
			continue
		}
		if next.vms[vmid] {
			return fail(fmt.Sprintf("VM %d is already a pool member", vmid))
		}
		if old, ok := vmPool[vmid]; ok && old != id {
			if r := s.poolMoveOut(c, moved, old, vmid, fail); r != nil {
				return r
			}
		}
		next.vms[vmid] = true
		vmPool[vmid] = id
	}
	if r := poolUpdateStorage(c, next, del, fail); r != nil {
		return r
	}
	s.access.pools[id] = next
	for name, op := range moved {
		s.access.pools[name] = op
	}
	s.access.vmPool = vmPool
	return okData(nil)
}

// poolMoveOut takes vmid out of its pool old, for an update that moves it (allow-move, and
// Pool.Allocate on old): the changed copy of old goes into moved, written with the update.
func (s *Sim) poolMoveOut(c *call, moved map[string]*simPool, old string, vmid int, fail func(string) *response) *response {
	if c.params["allow-move"] != "1" {
		return fail(fmt.Sprintf("VM %d belongs already to pool '%s' and 'allow-move' is not set", vmid, old))
	}
	if err := c.check("/pool/"+old, "Pool.Allocate"); err != nil {
		return errResponse(err)
	}
	op := moved[old]
	if op == nil {
		if src := s.access.pools[old]; src != nil {
			op = &simPool{comment: src.comment, vms: maps.Clone(src.vms), storage: src.storage}
			moved[old] = op
		}
	}
	if op != nil {
		delete(op.vms, vmid)
	}
	return nil
}

// poolUpdateStorage adds (or, with del, removes) an update's storages to next, the pool as
// it will be; a refusal is the response.
func poolUpdateStorage(c *call, next *simPool, del bool, fail func(string) *response) *response {
	for _, sid := range splitList(c.params["storage"]) {
		if err := c.checkPermModify("/storage/" + sid); err != nil {
			return errResponse(err)
		}
		if del {
			if !next.storage[sid] {
				return fail(fmt.Sprintf("Storage '%s' is not a pool member", sid))
			}
			delete(next.storage, sid)
			continue
		}
		if next.storage[sid] {
			return fail(fmt.Sprintf("Storage '%s' is already a pool member", sid))
		}
		next.storage[sid] = true
	}
	return nil
}

// hPoolDelete is Pool.pm delete_pool: only an empty pool (no sub-pool, no existing guest,
// no storage), its ACLs dropped.
func (s *Sim) hPoolDelete(c *call) *response {
	id := c.vars["poolid"]
	if id == "" {
		id = c.params["poolid"]
	}
	fail := func(msg string) *response { return apiError(500, "delete pool failed: "+msg) }
	p := s.access.pools[id]
	if p == nil {
		return fail(fmt.Sprintf("pool '%s' does not exist", id))
	}
	for _, other := range slices.Sorted(maps.Keys(s.access.pools)) {
		if strings.HasPrefix(other, id+"/") {
			return fail(fmt.Sprintf("pool '%s' is not empty (contains pool '%s')", id, other))
		}
	}
	for _, vmid := range slices.Sorted(maps.Keys(p.vms)) {
		if s.vms[vmid] != nil {
			return fail(fmt.Sprintf("pool '%s' is not empty (contains VM %d)", id, vmid))
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(p.storage)) {
		if s.storages[sid] != nil {
			return fail(fmt.Sprintf("pool '%s' is not empty (contains storage '%s')", id, sid))
		}
	}
	delete(s.access.pools, id)
	for vmid, name := range s.access.vmPool {
		if name == id {
			delete(s.access.vmPool, vmid)
		}
	}
	for path := range s.access.acl {
		if path == "/pool/"+id || strings.HasPrefix(path, "/pool/"+id+"/") {
			delete(s.access.acl, path)
		}
	}
	return okData(nil)
}

// addVMToPool is AccessControl.pm add_vm_to_pool: nothing when the pool is gone.
func (s *Sim) addVMToPool(vmid int, pool string) {
	p := s.access.pools[pool]
	if p == nil {
		return
	}
	p.vms[vmid] = true
	s.access.vmPool[vmid] = pool
}

// removeVMAccess is AccessControl.pm remove_vm_access: the VM's ACL entries and its pool
// membership go.
func (s *Sim) removeVMAccess(vmid int) {
	delete(s.access.acl, "/vms/"+strconv.Itoa(vmid))
	if name, ok := s.access.vmPool[vmid]; ok {
		if p := s.access.pools[name]; p != nil {
			delete(p.vms, vmid)
		}
		delete(s.access.vmPool, vmid)
	}
}

// Permissions and ACLs.

// hPermissions is API2/AccessControl.pm permissions: the effective privileges of the
// caller, or (with Sys.Audit on /access, or for a token of the caller's own user) of
// userid, on path or, without it, on every path of get_effective_permissions: the top
// levels, every ACL path, every pool member; paths without privileges left out.
func (s *Sim) hPermissions(c *call) *response {
	who := c.params["userid"]
	if who == "" {
		who = c.authid
	}
	owner, _, _ := splitTokenID(who)
	if who != c.authid && owner != c.authid {
		if err := c.check("/access", "Sys.Audit"); err != nil {
			return errResponse(err)
		}
	}
	render := func(privs map[string]bool) map[string]int {
		out := map[string]int{}
		for p, prop := range privs {
			out[p] = b2i(prop)
		}
		return out
	}
	if path := c.params["path"]; path != "" {
		return okData(map[string]any{path: render(s.effective(who, path))})
	}
	paths := map[string]bool{"/": true, "/access": true, "/access/groups": true, "/nodes": true, "/pool": true,
		"/sdn": true, "/storage": true, "/vms": true}
	for p := range s.access.acl {
		// iterate_acl_tree visits every node of the tree, the inner ones too.
		for q := p; q != "/" && q != ""; q = q[:strings.LastIndex(q, "/")] {
			paths[q] = true
		}
	}
	for _, p := range s.access.pools {
		for vmid := range p.vms {
			paths["/vms/"+strconv.Itoa(vmid)] = true
		}
		for sid := range p.storage {
			paths["/storage/"+sid] = true
		}
	}
	out := map[string]any{}
	for p := range paths {
		if privs := s.effective(who, p); len(privs) > 0 {
			out[p] = render(privs)
		}
	}
	return okData(out)
}

// aclPermModify is ACL.pm update_acl's declared check: ['perm-modify', '{path}'].
func aclPermModify(c *call) error {
	p := normalizeACLPath(c.params["path"])
	if p == "" {
		return &permError{}
	}
	return c.checkPermModify(p)
}

// hACLRead is ACL.pm read_acl: every entry, on the paths the caller may audit (Sys.Audit on
// /access) or modify the permissions of.
func (s *Sim) hACLRead(c *call) *response {
	audit := c.can("/access", "Sys.Audit")
	out := []map[string]any{}
	for _, path := range slices.Sorted(maps.Keys(s.access.acl)) {
		if !audit && c.checkPermModify(path) != nil {
			continue
		}
		node := s.access.acl[path]
		for _, id := range slices.Sorted(maps.Keys(node)) {
			typ := "user"
			if _, _, ok := splitTokenID(id); ok {
				typ = "token"
			}
			for _, role := range slices.Sorted(maps.Keys(node[id])) {
				out = append(out, map[string]any{"path": path, "type": typ, "ugid": id, "roleid": role, "propagate": b2i(node[id][role])})
			}
		}
	}
	return okData(out)
}

// hACLUpdate is ACL.pm update_acl: add (or, with delete, remove) roles for users and
// tokens on a path; propagate defaults to 1. A caller without Permissions.Modify there may
// hand out only privileges it has itself (with propagation, propagated ones). Groups are
// not simulated.
func (s *Sim) hACLUpdate(c *call) *response {
	if c.params["users"] == "" && c.params["tokens"] == "" && c.params["groups"] == "" {
		msg := "either 'users', 'groups' or 'tokens' is required."
		return paramError(map[string]string{"users": msg, "groups": msg, "tokens": msg})
	}
	path := normalizeACLPath(c.params["path"])
	del := c.params["delete"] == "1"
	if path == "" || (!del && !aclPathRe.MatchString(path)) {
		return paramError(map[string]string{"path": fmt.Sprintf("invalid ACL path '%s'", c.params["path"])})
	}
	if c.params["groups"] != "" {
		return aclUpdateFailed("pvesim: groups are not simulated")
	}
	propagate := c.params["propagate"] != "0"
	mine := s.effective(c.authid, path)
	// Check everything first: update_acl writes user.cfg only when every role passed.
	node := aclNode{}
	for id, roles := range s.access.acl[path] {
		node[id] = maps.Clone(roles)
	}
	for _, role := range splitList(c.params["roles"]) {
		privs, ok := s.access.roles[role]
		if !ok {
			return aclUpdateFailed(fmt.Sprintf("role '%s' does not exist", role))
		}
		if r := aclRoleRefusal(mine, role, privs, propagate, del); r != nil {
			return r
		}
		ids, msg := s.aclIDs(c)
		if msg != "" {
			return aclUpdateFailed(msg)
		}
		node.setRole(ids, role, propagate, del)
	}
	if len(node) == 0 {
		delete(s.access.acl, path)
	} else {
		s.access.acl[path] = node
	}
	return okData(nil)
}

// aclUpdateFailed is update_acl's failure, a 500.
func aclUpdateFailed(msg string) *response { return apiError(500, "ACL update failed: "+msg) }

// aclRoleRefusal is update_acl's check of a role a caller without Permissions.Modify (mine:
// its privileges on the path, with their propagation) hands out or removes: it must hold
// every privilege of the role (propagated, when the ACL propagates), and never NoAccess.
func aclRoleRefusal(mine map[string]bool, role string, privs map[string]bool, propagate, del bool) *response {
	if _, ok := mine["Permissions.Modify"]; ok {
		return nil
	}
	verb := "add"
	if del {
		verb = "remove"
	}
	for _, p := range sortedPrivs(privs) {
		prop, has := mine[p]
		if !has {
			return paramError(map[string]string{"role": fmt.Sprintf("Cannot %s role '%s' - requires "+
				"'Permissions.Modify' or superset of privileges.", verb, role)})
		}
		if propagate && !prop && !del {
			return paramError(map[string]string{"role": fmt.Sprintf("Cannot %s role '%s' with propagation - requires "+
				"'Permissions.Modify' or propagated superset of privileges.", verb, role)})
		}
	}
	if role == "NoAccess" {
		return paramError(map[string]string{"role": fmt.Sprintf("Cannot %s role '%s' - requires 'Permissions.Modify'", verb, role)})
	}
	return nil
}

// aclIDs are the users and tokens an ACL update names, each of which must exist; else
// the failure's text.
func (s *Sim) aclIDs(c *call) ([]string, string) {
	var ids []string
	for _, u := range splitList(c.params["users"]) {
		if s.access.users[u] == nil {
			return nil, fmt.Sprintf("user '%s' does not exist", u)
		}
		ids = append(ids, u)
	}
	for _, t := range splitList(c.params["tokens"]) {
		user, sub, _ := splitTokenID(t)
		u := s.access.users[user]
		if u == nil {
			return nil, fmt.Sprintf("no such user ('%s')", user)
		}
		if u.tokens[sub] == nil {
			return nil, fmt.Sprintf("no such token '%s' for user '%s'", sub, user)
		}
		ids = append(ids, t)
	}
	return ids, ""
}

// setRole gives each of ids role on the node (propagate its propagation), or with del
// takes it away, dropping an id left without roles.
func (n aclNode) setRole(ids []string, role string, propagate, del bool) {
	for _, id := range ids {
		if del {
			delete(n[id], role)
			if len(n[id]) == 0 {
				delete(n, id)
			}
			continue
		}
		if n[id] == nil {
			n[id] = map[string]bool{}
		}
		n[id][role] = propagate
	}
}

// Users and tokens.

func (s *Sim) hUsers(c *call) *response {
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.access.users)) {
		u := s.access.users[id]
		if c.params["enabled"] == "1" && !u.enable {
			continue
		}
		e := map[string]any{"userid": id, "enable": b2i(u.enable), "expire": u.expire, "realm-type": realmOf(id)}
		if u.comment != "" {
			e["comment"] = u.comment
		}
		if c.params["full"] == "1" {
			tokens := []map[string]any{}
			for _, sub := range slices.Sorted(maps.Keys(u.tokens)) {
				tokens = append(tokens, tokenInfo(sub, u.tokens[sub]))
			}
			e["tokens"] = tokens
		}
		out = append(out, e)
	}
	return okData(out)
}

func realmOf(userid string) string {
	_, realm, _ := strings.Cut(userid, "@")
	return realm
}

func tokenInfo(sub string, t *simToken) map[string]any {
	e := map[string]any{"tokenid": sub, "privsep": b2i(t.privsep), "expire": t.expire}
	if t.comment != "" {
		e["comment"] = t.comment
	}
	return e
}

// userCreatePerms is User.pm create_user's check: Realm.AllocateUser on the user's realm,
// and User.Modify on /access/groups when no groups are given.
func userCreatePerms(c *call) error {
	if err := c.check("/access/realm/"+realmOf(c.params["userid"]), "Realm.AllocateUser"); err != nil {
		return err
	}
	return c.checkAny("/access/groups", "User.Modify")
}

// hUserCreate is User.pm create_user (the pve realm's users; passwords are not simulated).
func (s *Sim) hUserCreate(c *call) *response {
	id := c.params["userid"]
	if s.access.users[id] != nil {
		return apiError(500, fmt.Sprintf("create user failed: user '%s' already exists", id))
	}
	if c.params["groups"] != "" {
		return apiError(500, fmt.Sprintf("create user failed: no such group '%s'", splitList(c.params["groups"])[0]))
	}
	u := &simUser{enable: c.params["enable"] != "0", comment: c.params["comment"], tokens: map[string]*simToken{}}
	if e := c.params["expire"]; e != "" && e != "0" {
		u.expire, _ = strconv.ParseInt(e, 10, 64)
	}
	s.access.users[id] = u
	return okData(nil)
}

// tokenPerms is the token methods' check: ['or', ['userid-param', 'self'], ['userid-group',
// ['User.Modify']]]: the caller is the user (never so for a token), or has User.Modify on
// /access/groups; a user that does not exist fails both branches.
func tokenPerms(c *call) error {
	if c.sim.access.users[c.vars["userid"]] == nil || (c.authid != c.vars["userid"] && !c.canAny("/access/groups", "User.Modify")) {
		return &permError{}
	}
	return nil
}

// hTokenCreate is User.pm generate_token: privsep defaults to 1; the answer carries the
// secret, shown this once.
func (s *Sim) hTokenCreate(c *call) *response {
	u := s.access.users[c.vars["userid"]]
	sub := c.vars["tokenid"]
	if u.tokens[sub] != nil {
		return paramError(map[string]string{"tokenid": "Token already exists."})
	}
	t := &simToken{secret: s.newUUID(), privsep: c.params["privsep"] != "0", comment: c.params["comment"]}
	if e := c.params["expire"]; e != "" {
		t.expire, _ = strconv.ParseInt(e, 10, 64)
	}
	u.tokens[sub] = t
	info := map[string]any{"privsep": b2i(t.privsep)}
	if c.params["expire"] != "" {
		info["expire"] = t.expire
	}
	if t.comment != "" {
		info["comment"] = t.comment
	}
	return okData(map[string]any{"full-tokenid": c.vars["userid"] + "!" + sub, "info": info, "value": t.secret})
}

// hTokenDelete is User.pm remove_token: the token and its ACL entries go.
func (s *Sim) hTokenDelete(c *call) *response {
	u := s.access.users[c.vars["userid"]]
	sub := c.vars["tokenid"]
	if u.tokens[sub] == nil {
		return apiError(500, fmt.Sprintf("no such token '%s' for user '%s'", sub, c.vars["userid"]))
	}
	delete(u.tokens, sub)
	full := c.vars["userid"] + "!" + sub
	for path, node := range s.access.acl {
		delete(node, full)
		if len(node) == 0 {
			delete(s.access.acl, path)
		}
	}
	return okData(nil)
}

// Roles.

// hRoles is Role.pm index: every role with its privileges comma-joined and sorted, and
// whether it is built in.
func (s *Sim) hRoles(c *call) *response {
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(s.access.roles)) {
		out = append(out, map[string]any{"roleid": id, "privs": strings.Join(sortedPrivs(s.access.roles[id]), ","),
			"special": b2i(specialRoles[id] != nil)})
	}
	return okData(out)
}

// hRoleRead is Role.pm read_role: the privileges as an object of 1s.
func (s *Sim) hRoleRead(c *call) *response {
	privs, ok := s.access.roles[c.vars["roleid"]]
	if !ok {
		return apiError(500, fmt.Sprintf("role '%s' does not exist", c.vars["roleid"]))
	}
	out := map[string]int{}
	for p := range privs {
		out[p] = 1
	}
	return okData(out)
}

var pveRolePrefixRe = regexp.MustCompile(`(?i)^PVE`)

// hRoleCreate is Role.pm create_role: not in the PVE namespace, not existing, valid
// privileges (checked by the privs format already).
func (s *Sim) hRoleCreate(c *call) *response {
	id := c.params["roleid"]
	if pveRolePrefixRe.MatchString(id) {
		return paramError(map[string]string{"roleid": "cannot use role ID starting with the (case-insensitive) 'PVE' namespace"})
	}
	if s.access.roles[id] != nil {
		return apiError(500, fmt.Sprintf("create role failed: role '%s' already exists", id))
	}
	privs := map[string]bool{}
	for _, p := range splitList(c.params["privs"]) {
		privs[p] = true
	}
	s.access.roles[id] = privs
	return okData(nil)
}

// Go API.

// PoolOf returns the pool a VM belongs to ("" for none), as user.cfg records it.
func (s *Sim) PoolOf(vmid int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	return s.access.vmPool[vmid]
}
