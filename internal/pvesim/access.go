package pvesim

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The permission model, from pve-access-control (PVE 9): users, API tokens with privilege
// separation, roles, the ACL tree with propagation, and pools whose ACLs their VMs and
// storages inherit. Guarded by Sim.mu.
//
//   - roles: src/PVE/AccessControl.pm $privgroups and create_roles (the built-in roles with
//     their privilege lists), add_role_privs;
//   - the roles of an identity on a path: AccessControl.pm roles (walk the path from /, an
//     ACL entry on a node replaces what the nodes above gave, a role reaches the nodes below
//     only with propagate set; NoAccess wins);
//   - privileges: src/PVE/RPCEnvironment.pm permissions and $compile_acl_path (root@pam has
//     every privilege; a token without privsep has its user's; a privsep token has the
//     intersection of its user's and its own; the roles granted on /pool/<pool> apply,
//     without propagation, to /vms/<vmid> and /storage/<id> of the pool's members, unless an
//     ACL there gives NoAccess);
//   - checks: RPCEnvironment.pm check (all privileges, the refusal names the first missing),
//     check_any (any of them, the refusal names them joined by '|'), exec_api2_perm_check
//     ('or' fails with a bare "Permission check failed"), raise_perm_exc (pve-common
//     src/PVE/Exception.pm: "Permission check failed (<what>)", 403).
//
// Not simulated: groups (an ACL for a group), realms other than the user's name, TFA,
// passwords and tickets (the simulator takes API tokens only).

// privGroups is src/PVE/AccessControl.pm $privgroups: per category, the privileges only root
// has, and those of the admin, user and audit roles.
var privGroups = []struct {
	cat                      string
	root, admin, user, audit []string
}{
	{"VM", nil,
		[]string{"VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network", "VM.Config.HWType",
			"VM.Config.Options", "VM.Allocate", "VM.Clone", "VM.GuestAgent.Unrestricted", "VM.Migrate", "VM.Replicate",
			"VM.Snapshot", "VM.Snapshot.Rollback"},
		[]string{"VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup", "VM.GuestAgent.FileRead",
			"VM.GuestAgent.FileSystemMgmt", "VM.GuestAgent.FileWrite", "VM.PowerMgmt"},
		[]string{"VM.Audit", "VM.GuestAgent.Audit"}},
	{"Sys", []string{"Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork"},
		[]string{"Sys.Console", "Sys.Syslog"}, nil, []string{"Sys.Audit"}},
	{"Datastore", nil, []string{"Datastore.Allocate", "Datastore.AllocateTemplate"},
		[]string{"Datastore.AllocateSpace"}, []string{"Datastore.Audit"}},
	{"SDN", nil, []string{"SDN.Allocate", "SDN.Audit"}, []string{"SDN.Use"}, []string{"SDN.Audit"}},
	{"User", []string{"Realm.Allocate"}, []string{"User.Modify", "Group.Allocate", "Realm.AllocateUser"}, nil, nil},
	{"Pool", nil, []string{"Pool.Allocate"}, []string{"Pool.Audit"}, []string{"Pool.Audit"}},
	{"Mapping", nil, []string{"Mapping.Modify"}, []string{"Mapping.Use"}, []string{"Mapping.Audit"}},
}

// validPrivs and specialRoles are create_roles' result: every privilege (plus
// Permissions.Modify, in no group), and the built-in roles NoAccess, Administrator,
// PVEAdmin, PVE<cat>Admin, PVE<cat>User (for categories with user privileges), PVEAuditor
// and PVETemplateUser.
var validPrivs, specialRoles = buildRoles()

func buildRoles() (map[string]bool, map[string]map[string]bool) {
	valid := map[string]bool{"Permissions.Modify": true}
	roles := map[string]map[string]bool{"NoAccess": {}}
	add := func(role string, privs ...string) {
		if roles[role] == nil {
			roles[role] = map[string]bool{}
		}
		for _, p := range privs {
			roles[role][p] = true
		}
	}
	for _, g := range privGroups {
		for _, list := range [][]string{g.root, g.admin, g.user, g.audit} {
			for _, p := range list {
				valid[p] = true
			}
		}
		for _, list := range [][]string{g.admin, g.user, g.audit} {
			add("PVE"+g.cat+"Admin", list...)
			add("PVEAdmin", list...)
		}
		if len(g.user) > 0 {
			add("PVE"+g.cat+"User", g.user...)
			add("PVE"+g.cat+"User", g.audit...)
		}
		add("PVEAuditor", g.audit...)
	}
	// Mapping.Modify is left out of PVEAdmin; PVETemplateUser is set by hand.
	delete(roles["PVEAdmin"], "Mapping.Modify")
	add("PVETemplateUser", "VM.Clone", "VM.Audit")
	// Administrator is $valid_privs itself: every privilege.
	roles["Administrator"] = maps.Clone(valid)
	return valid, roles
}

// simUser is one user of user.cfg; tokens by token subid.
type simUser struct {
	enable  bool
	expire  int64
	comment string
	tokens  map[string]*simToken
}

// simToken is one API token: its secret (priv/token.cfg) and its user.cfg entry.
type simToken struct {
	secret  string
	privsep bool
	expire  int64
	comment string
}

// aclNode holds the ACL entries of one path: identity (user id or full token id) to role
// to propagate.
type aclNode map[string]map[string]bool

// simPool is a pool of user.cfg: its member VMs and storages.
type simPool struct {
	comment string
	vms     map[int]bool
	storage map[string]bool
}

// accessState is user.cfg as far as the simulator models it.
type accessState struct {
	roles map[string]map[string]bool // every role, the special ones included
	users map[string]*simUser
	acl   map[string]aclNode // normalized path -> entries
	pools map[string]*simPool
	// vmPool is user.cfg's vms section: the pool each VM belongs to.
	vmPool map[int]string
}

func newAccessState() accessState {
	a := accessState{
		roles: map[string]map[string]bool{}, users: map[string]*simUser{"root@pam": {enable: true, tokens: map[string]*simToken{}}},
		acl: map[string]aclNode{}, pools: map[string]*simPool{}, vmPool: map[int]string{},
	}
	for r, privs := range specialRoles {
		a.roles[r] = maps.Clone(privs)
	}
	return a
}

var (
	userRe     = regexp.MustCompile(`^([^\s:/]+)@([A-Za-z][A-Za-z0-9.\-_]+)$`)
	tokenIDRe  = regexp.MustCompile(`^(([^\s:/]+)@([A-Za-z][A-Za-z0-9.\-_]+))!([A-Za-z][A-Za-z0-9.\-_]+)$`)
	tokenSubRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.\-_]+$`)
	roleIDRe   = regexp.MustCompile(`^[A-Za-z0-9.\-_]+$`)
	poolIDRe   = regexp.MustCompile(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`)
	aclCharsRe = regexp.MustCompile(`^[[:alnum:].\-_/]+$`)
	aclPathRe  = regexp.MustCompile(`^(?:` +
		`/|/access|/access/groups|/access/groups/[[:alnum:].\-_]+|/access/realm|` +
		`/access/realm/[[:alnum:].\-_]+|/nodes|/nodes/[[:alnum:].\-_]+|/pool|` +
		`/pool/[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}|/sdn|/sdn/controllers|` +
		`/sdn/controllers/[[:alnum:]_\-]+|/sdn/dns|/sdn/dns/[[:alnum:]]+|/sdn/fabrics|` +
		`/sdn/fabrics/[[:alnum:]]+|/sdn/ipams|/sdn/ipams/[[:alnum:]]+|/sdn/prefix-lists|` +
		`/sdn/prefix-lists/[[:alnum:]]+|/sdn/route-maps|/sdn/route-maps/[[:alnum:]]+|/sdn/zones|` +
		`/sdn/zones/[[:alnum:].\-_]+|/sdn/zones/[[:alnum:].\-_]+/[[:alnum:].\-_]+|` +
		`/sdn/zones/[[:alnum:].\-_]+/[[:alnum:].\-_]+/[1-9][0-9]{0,3}|/storage|/storage/[[:alnum:].\-_]+|/vms|` +
		`/vms/[1-9][0-9]{2,}|/mapping|/mapping/[[:alnum:].\-_]+|/mapping/[[:alnum:].\-_]+/[[:alnum:].\-_]+)$`)
	slashesRe   = regexp.MustCompile(`/+`)
	privSplitRe = regexp.MustCompile(`[,;\s]+`)
)

// splitTokenID is AccessControl.pm split_tokenid: "<user>!<subid>" into its parts.
func splitTokenID(id string) (user, sub string, ok bool) {
	m := tokenIDRe.FindStringSubmatch(id)
	if m == nil {
		return "", "", false
	}
	return m[1], m[4], true
}

// normalizeACLPath is AccessControl.pm normalize_path: "" when the path has characters an
// ACL path may not.
func normalizeACLPath(p string) string {
	if p == "" {
		return ""
	}
	p = slashesRe.ReplaceAllString(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		p = "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !aclCharsRe.MatchString(p) {
		return ""
	}
	return p
}

// splitList is pve-common PVE::Tools split_list: items separated by ',', ';' or whitespace.
func splitList(v string) []string {
	var out []string
	for _, s := range privSplitRe.Split(strings.TrimSpace(v), -1) {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// roles is AccessControl.pm roles for a user id or a token id (whose own ACL entries only:
// the user's are intersected in permissions): the roles on path, to their propagate flag.
func (a *accessState) rolesOf(id, path string) map[string]bool {
	segs := []string{""}
	if path != "/" {
		segs = strings.Split(path, "/") // "/vms/100": "", "vms", "100"
	}
	roles := map[string]bool{}
	cur := ""
	for i, seg := range segs {
		final := i == len(segs)-1
		if seg != "" {
			cur += "/" + seg
		}
		key := cur
		if key == "" {
			key = "/"
		}
		entry := a.acl[key][id]
		if len(entry) == 0 {
			continue
		}
		var next map[string]bool
		for role, propagate := range entry {
			if final || propagate {
				if next == nil {
					next = map[string]bool{}
				}
				next[role] = propagate
			}
		}
		if next != nil {
			roles = next // a more specific entry replaces what the path above gave
		}
	}
	if p, ok := roles["NoAccess"]; ok {
		return map[string]bool{"NoAccess": p}
	}
	return roles
}

// compile is RPCEnvironment.pm $compile_acl_path for an id's own ACL entries: the roles on
// path, the pool roles its VMs and storages inherit, and the privileges they give.
func (a *accessState) compile(id, path string) map[string]bool {
	roles := a.rolesOf(id, path)
	// Roles granted on a pool reach its members, unpropagated.
	poolRoles := map[string]bool{}
	for name, p := range a.pools {
		pr := a.rolesOf(id, "/pool/"+name)
		if len(pr) == 0 {
			continue
		}
		member := false
		if vmid, ok := strings.CutPrefix(path, "/vms/"); ok {
			n, err := strconv.Atoi(vmid)
			member = err == nil && p.vms[n]
		} else if sid, ok := strings.CutPrefix(path, "/storage/"); ok {
			member = p.storage[sid]
		}
		if member {
			for r := range pr {
				poolRoles[r] = true
			}
		}
	}
	if len(poolRoles) > 0 {
		if _, noAccess := roles["NoAccess"]; !noAccess {
			if poolRoles["NoAccess"] {
				roles = map[string]bool{"NoAccess": false}
			} else {
				for r := range poolRoles {
					if _, set := roles[r]; !set {
						roles[r] = false
					}
				}
			}
		}
	}
	privs := map[string]bool{}
	for role, propagate := range roles {
		for p := range a.roles[role] {
			privs[p] = privs[p] || propagate
		}
	}
	return privs
}

// rootPrivs is what root@pam has everywhere: every privilege, propagated. Shared and never
// modified.
var rootPrivs = func() map[string]bool {
	out := map[string]bool{}
	for p := range validPrivs {
		out[p] = true
	}
	return out
}()

// permissions is RPCEnvironment.pm permissions: the privileges id (a user or a full token
// id) has on path, to their propagate flag. The map may be shared: callers do not modify it.
func (a *accessState) permissions(id, path string) map[string]bool {
	if id == "root@pam" {
		return rootPrivs
	}
	if user, sub, ok := splitTokenID(id); ok {
		u := a.users[user]
		if u == nil || u.tokens[sub] == nil {
			return map[string]bool{}
		}
		userPrivs := a.permissions(user, path)
		if !u.tokens[sub].privsep {
			return userPrivs
		}
		own := a.compile(id, path)
		if user == "root@pam" {
			return own
		}
		out := map[string]bool{}
		for p, prop := range own {
			if up, ok := userPrivs[p]; ok {
				out[p] = up && prop
			}
		}
		return out
	}
	if !userRe.MatchString(id) {
		return map[string]bool{}
	}
	return a.compile(id, path)
}

// effective is permissions with the Go API's denials (Sim.Deny) taken away: a denial on a
// path covers the paths below it, for every user and token.
func (s *Sim) effective(id, path string) map[string]bool {
	privs := s.access.permissions(id, path)
	if len(s.deny) == 0 {
		return privs
	}
	privs = maps.Clone(privs)
	for d := range s.deny {
		if d.Path == "/" || d.Path == path || strings.HasPrefix(path, strings.TrimSuffix(d.Path, "/")+"/") {
			delete(privs, d.Privilege)
		}
	}
	return privs
}

// permError is a refused permission check (pve-common src/PVE/Exception.pm
// raise_perm_exc): "Permission check failed", with "(<what>)" when what is set. 403.
type permError struct{ what string }

func (e *permError) Error() string {
	if e.what == "" {
		return "Permission check failed"
	}
	return "Permission check failed (" + e.what + ")"
}

func (e *permError) response() *response { return apiError(403, e.Error()) }

// can reports whether the caller has every privilege on path (check with noerr).
func (c *call) can(path string, privs ...string) bool {
	have := c.sim.effective(c.authid, path)
	for _, p := range privs {
		if _, ok := have[p]; !ok {
			return false
		}
	}
	return true
}

// canAny reports whether the caller has any of privs on path (check_any with noerr).
func (c *call) canAny(path string, privs ...string) bool {
	have := c.sim.effective(c.authid, path)
	for _, p := range privs {
		if _, ok := have[p]; ok {
			return true
		}
	}
	return false
}

// check is RPCEnvironment.pm check: every privilege on path, the refusal naming the first
// missing one.
func (c *call) check(path string, privs ...string) error {
	have := c.sim.effective(c.authid, path)
	for _, p := range privs {
		if _, ok := have[p]; !ok {
			return &permError{path + ", " + p}
		}
	}
	return nil
}

// checkAny is RPCEnvironment.pm check_any: one of privs on path, the refusal naming them all.
func (c *call) checkAny(path string, privs ...string) error {
	if c.canAny(path, privs...) {
		return nil
	}
	return &permError{path + ", " + strings.Join(privs, "|")}
}

// checkVMPerm is RPCEnvironment.pm check_vm_perm on /vms/<vmid>. Qemu.pm's create checks
// (qemu-server src/PVE/API2/Qemu.pm:1009-1033) also pass the new VM's pool, which grants
// the privilege on /pool/<pool> as well; the simulator does not model that branch (a
// reconstruction: a token privileged only on the pool is refused here).
func (c *call) checkVMPerm(vmid string, privs ...string) error {
	return c.check("/vms/"+vmid, privs...)
}

// checkPermModify is RPCEnvironment.pm check_perm_modify: Permissions.Modify on the path,
// or the allocation privilege of its kind of object.
func (c *call) checkPermModify(path string) error {
	privs := []string{"Permissions.Modify"}
	switch {
	case strings.HasPrefix(path, "/storage/"):
		privs = append(privs, "Datastore.Allocate")
	case strings.HasPrefix(path, "/vms/"):
		privs = append(privs, "VM.Allocate")
	case strings.HasPrefix(path, "/pool/"):
		privs = append(privs, "Pool.Allocate")
	}
	return c.checkAny(path, privs...)
}

// tmpl is pve-common PVE::Tools template_replace over the request's parameters, then
// normalize_path: "{name}" takes the parameter's value, "-" when it is unset.
func (c *call) tmpl(t string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(t)
			break
		}
		j := strings.IndexByte(t[i:], '}')
		if j < 0 {
			b.WriteString(t)
			break
		}
		b.WriteString(t[:i])
		name := t[i+1 : i+j]
		v := c.vars[name]
		if v == "" {
			v = c.params[name]
		}
		if v == "" {
			v = "-"
		}
		b.WriteString(v)
		t = t[i+j+1:]
	}
	return normalizeACLPath(b.String())
}

// perm is a declared ['perm', <path template>, [privs]] check (anyOf: any => 1).
func perm(pathTmpl string, anyOf bool, privs ...string) func(c *call) error {
	return func(c *call) error {
		p := c.tmpl(pathTmpl)
		if anyOf {
			return c.checkAny(p, privs...)
		}
		return c.check(p, privs...)
	}
}

// sortedPrivs lists a privilege set in order.
func sortedPrivs(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
