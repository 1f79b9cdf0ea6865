package pvesim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// HA resources and rules: ha/resources.cfg and ha/rules.cfg as pve-ha-manager's API keeps
// them (src/PVE/API2/HA/Resources.pm, Rules.pm, Groups.pm, Status.pm; src/PVE/HA/Config.pm).
// Every change needs Sys.Console on /, every read Sys.Audit on / (each method's
// permissions block): a token whose ACLs stop at its pool (/pool/<pool>, /vms/<vmid>) can
// neither read nor change HA, and no pool ACL helps. The cluster resource manager's part
// (fencing, recovery, requests from qm start/stop/shutdown) is ha_crm.go.

// haResource is one section of ha/resources.cfg and the CRM's state of it.
type haResource struct {
	sid  string
	vmid int
	// The configured properties; "" and nil: unset (src/PVE/HA/Resources.pm:12-98).
	state       string
	maxRestart  *int
	maxRelocate *int
	failback    *bool
	comment     string
	// crm is the CRM's service state (src/PVE/HA/Manager.pm:394-406 $valid_service_states);
	// "" until the CRM has seen the resource (Status.pm shows "queued").
	crm string
	// running: the LRM reported a successful start (Manager.pm:1465-1466).
	running bool
	// dueAt is when the CRM and LRM next act on a request (a round, ha_crm.go); zero: none.
	dueAt time.Time
	// failedNodes are the nodes a start failed on (Manager.pm select_service_node try-next).
	failedNodes []string
	// noNodeLogged: the "no recovery node found" line was logged for this recovery.
	noNodeLogged bool
	// migrateTo is a queued migrate command's target (qm migrate of an HA-managed VM).
	migrateTo string
}

func (r *haResource) reqState() string {
	switch r.state {
	case "", "enabled":
		return "started"
	}
	return r.state
}

// haRule is one section of ha/rules.cfg.
type haRule struct {
	id, typ   string
	resources []string       // sorted SIDs
	nodes     map[string]int // node-affinity: node to priority
	affinity  string         // resource-affinity
	strict    *bool
	disable   bool
	comment   string
	order     int
}

type haState struct {
	resources map[string]*haResource
	rules     map[string]*haRule
	// nodeDownAt is when a node stopped answering (SetNodeDown); fenced: its fencing was
	// acknowledged (src/PVE/HA/NodeStatus.pm:254-277).
	nodeDownAt map[string]time.Time
	fenced     map[string]bool
	log        []HAEvent
	// deleting are services deleted from ha/resources.cfg that the CRM has not yet dropped
	// from its status (until its next round): the status API lists them as "deleting".
	deleting map[string]deletingService
}

type deletingService struct {
	node, crm string
	until     time.Time
}

func newHAState() haState {
	return haState{resources: map[string]*haResource{}, rules: map[string]*haRule{},
		nodeDownAt: map[string]time.Time{}, fenced: map[string]bool{}, deleting: map[string]deletingService{}}
}

// HAEvent is one line of the CRM's log, as pve-ha-crm writes it to the journal.
type HAEvent struct {
	At      time.Time `json:"at"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
}

func (s *Sim) haLog(at time.Time, level, format string, args ...any) {
	s.ha.log = append(s.ha.log, HAEvent{At: at, Level: level, Message: fmt.Sprintf(format, args...)})
}

// Digests: SectionConfig's digest is the SHA-1 of the file (pve-common
// src/PVE/SectionConfig.pm parse_config); the simulator hashes its own rendering of it.
func (s *Sim) haResourcesDigest() string {
	h := sha1.New()
	for _, sid := range slices.Sorted(maps.Keys(s.ha.resources)) {
		fmt.Fprintf(h, "%s\n", haResourceJSON(s.ha.resources[sid], ""))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Sim) haRulesDigest() string {
	h := sha1.New()
	for _, id := range slices.Sorted(maps.Keys(s.ha.rules)) {
		fmt.Fprintf(h, "%s\n", haRuleJSON(s.ha.rules[id], ""))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// haResourceJSON is a resource as Resources.pm api_copy_config returns it (lines 24-35):
// the section's properties as set, sid, type and the file's digest.
func haResourceJSON(r *haResource, digest string) map[string]any {
	m := map[string]any{"sid": r.sid, "type": "vm"}
	if digest != "" {
		m["digest"] = digest
	}
	if r.state != "" {
		m["state"] = r.state
	}
	if r.maxRestart != nil {
		m["max_restart"] = *r.maxRestart
	}
	if r.maxRelocate != nil {
		m["max_relocate"] = *r.maxRelocate
	}
	if r.failback != nil {
		m["failback"] = boolInt(*r.failback)
	}
	if r.comment != "" {
		m["comment"] = r.comment
	}
	return m
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// haRuleJSON is a rule as Rules.pm $get_api_ha_rule returns it (lines 22-43): rule, digest,
// order, the lists encoded (src/PVE/HA/Rules.pm:236-249, Rules/NodeAffinity.pm:115-135),
// defaults set (set_rule_defaults, Rules.pm:274-289: strict's default 0 is falsy, so an
// unset strict stays absent).
func haRuleJSON(r *haRule, digest string) map[string]any {
	m := map[string]any{"rule": r.id, "type": r.typ, "order": r.order, "resources": strings.Join(r.resources, ",")}
	if digest != "" {
		m["digest"] = digest
	}
	if r.typ == "node-affinity" {
		m["nodes"] = encodeHANodes(r.nodes)
		if r.strict != nil {
			m["strict"] = boolInt(*r.strict)
		}
	} else {
		m["affinity"] = r.affinity
	}
	if r.disable {
		m["disable"] = 1
	}
	if r.comment != "" {
		m["comment"] = r.comment
	}
	return m
}

func encodeHANodes(nodes map[string]int) string {
	parts := []string{}
	for _, n := range slices.Sorted(maps.Keys(nodes)) {
		if p := nodes[n]; p != 0 {
			parts = append(parts, n+":"+strconv.Itoa(p))
		} else {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, ",")
}

var (
	haSIDRe      = regexp.MustCompile(`^[a-z]+:\S+$`) // src/PVE/HA/Tools.pm:33-41
	haBareVMIDRe = regexp.MustCompile(`^\d+$`)
	haSIDOrVMRe  = regexp.MustCompile(`^([a-z]+:\S+|\d+)$`)                                   // src/PVE/HA/Tools.pm:68-76
	haVMNameRe   = regexp.MustCompile(`^[1-9][0-9]+$`)                                        // src/PVE/HA/Resources/PVEVM.pm:29-33
	haNodePrioRe = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)(:(\d+))?$`) // Tools.pm:118-128
	configIDRe   = regexp.MustCompile(`^[a-z][a-z0-9_-]+$`)                                   // pve-common JSONSchema.pm pve-configid
)

func fmtHASIDList(v string) string {
	for _, sid := range splitList(v) {
		if !haSIDRe.MatchString(sid) {
			return "value does not look like a valid ha resource id"
		}
	}
	return ""
}

func fmtHANodeList(v string) string {
	for _, n := range splitList(v) {
		if !haNodePrioRe.MatchString(n) {
			return "value does not look like a valid ha node"
		}
	}
	return ""
}

func fmtConfigID(v string) string {
	if !configIDRe.MatchString(v) {
		return fmt.Sprintf("invalid configuration ID '%s'", v)
	}
	return ""
}

// parseSID is src/PVE/HA/Config.pm parse_sid (lines 189-213): "<type>:<name>" or a bare
// VMID, which must be a guest of the cluster.
func (s *Sim) parseSID(v string) (sid, typ, name string, err error) {
	if haBareVMIDRe.MatchString(v) {
		id, _ := strconv.Atoi(v)
		g := s.vms[id]
		if g == nil {
			return "", "", "", fmt.Errorf("unable to detect SID from VMID - VM/CT %s does not exist", v)
		}
		typ = "vm"
		if g.typ == "lxc" {
			typ = "ct"
		}
		return typ + ":" + v, typ, v, nil
	}
	typ, name, ok := strings.Cut(v, ":")
	if !ok || typ == "" || name == "" || strings.ContainsAny(v, " \t") {
		return "", "", "", fmt.Errorf("unable to parse service id '%s'", v)
	}
	return v, typ, name, nil
}

// pveErr is a Proxmox die text, kept verbatim (capitals and full stops included).
type pveErr string

func (e pveErr) Error() string { return string(e) }

// haLockErr is src/PVE/HA/Config.pm lock_ha_domain (lines 311-320): a die inside the lock
// is prefixed with the caller's message.
func haLockErr(prefix string, err error) *response {
	return apiError(500, prefix+": "+err.Error())
}

// quorate: more than half of the nodes answer (corosync votequorum, one vote each; the
// simulator has no QDevice). A reconstruction of pve-cluster's quorum from the nodes up.
func (s *Sim) quorate() bool {
	up := 0
	for _, n := range s.nodeOrder {
		if !s.nodeDown(n) {
			up++
		}
	}
	return up*2 > len(s.nodeOrder)
}

// noQuorum is pve-cluster src/PVE/Cluster.pm check_cfs_quorum (line 129).
const noQuorumMsg = "cluster not ready - no quorum?"

// Resources.

var haResourceProps = map[string]pspec{
	"state":        {optional: true, enum: []string{"started", "stopped", "enabled", "disabled", "ignored"}},
	"group":        {optional: true, format: fmtConfigID},
	"failback":     pBool,
	"max_restart":  {typ: tInt, optional: true, min: i64(0)},
	"max_relocate": {typ: tInt, optional: true, min: i64(0)},
	"comment":      {optional: true, maxLen: 4096},
}

func haResourceSchema(update bool) *schema {
	m := maps.Clone(haResourceProps)
	m["type"] = pspec{optional: true, enum: []string{"ct", "vm"}}
	if update {
		m["delete"] = pStr
		m["digest"] = pspec{optional: true, maxLen: 64}
	} else {
		m["sid"] = pspec{format: func(v string) string {
			if !haSIDOrVMRe.MatchString(v) {
				return "value does not look like a valid ha resource id"
			}
			return ""
		}}
	}
	return fixed(m)
}

var (
	haAudit   = perm("/", false, "Sys.Audit")
	haConsole = perm("/", false, "Sys.Console")
)

func init() {
	add := func(method, tmpl string, sc *schema, perms func(c *call) error, h handlerFunc) {
		if sc == nil {
			sc = fixed(nil)
		}
		routes = append(routes, &route{method: method, tmpl: tmpl, segs: strings.Split(strings.TrimPrefix(tmpl, "/"),
			"/"), schema: sc, perms: perms, h: h})
	}
	// Resources.pm index (lines 53-99), read (101-175), create (177-231), update (233-279),
	// delete (281-321).
	add("GET", "/cluster/ha/resources", fixed(map[string]pspec{"type": {optional: true, enum: []string{"ct", "vm"}}}),
		haAudit, (*Sim).hHAResources)
	add("GET", "/cluster/ha/resources/{sid}", nil, haAudit, (*Sim).hHAResource)
	add("POST", "/cluster/ha/resources", haResourceSchema(false), haConsole, (*Sim).hHAResourceCreate)
	add("PUT", "/cluster/ha/resources/{sid}", haResourceSchema(true), haConsole, (*Sim).hHAResourceUpdate)
	add("DELETE", "/cluster/ha/resources/{sid}", fixed(map[string]pspec{"purge": pBool}), haConsole, (*Sim).hHAResourceDelete)
	// Rules.pm index (139-206), read_rule (208-249), create_rule (251-303), update_rule
	// (305-363), delete_rule (365-404).
	add("GET", "/cluster/ha/rules", fixed(map[string]pspec{"type": {optional: true, enum: haRuleTypes},
		"resource": pStr}), haAudit, (*Sim).hHARules)
	add("GET", "/cluster/ha/rules/{rule}", nil, haAudit, (*Sim).hHARule)
	add("POST", "/cluster/ha/rules", haRuleSchema(false), haConsole, (*Sim).hHARuleCreate)
	add("PUT", "/cluster/ha/rules/{rule}", haRuleSchema(true), haConsole, (*Sim).hHARuleUpdate)
	add("DELETE", "/cluster/ha/rules/{rule}", nil, haConsole, (*Sim).hHARuleDelete)
	// Groups.pm: every method refused once groups are migrated (lines 60, 97, 118, 172, 248),
	// which they always are here.
	add("GET", "/cluster/ha/groups", nil, haAudit, groupsRefused("cannot index groups"))
	add("GET", "/cluster/ha/groups/{group}", nil, haAudit, groupsRefused("cannot read group"))
	add("POST", "/cluster/ha/groups", nil, haConsole, groupsRefused("cannot create group"))
	add("PUT", "/cluster/ha/groups/{group}", nil, haConsole, groupsRefused("cannot update group"))
	add("DELETE", "/cluster/ha/groups/{group}", nil, haConsole, groupsRefused("cannot delete group"))
	// Status.pm status (lines 65-359).
	add("GET", "/cluster/ha/status/current", nil, haAudit, (*Sim).hHAStatus)
}

// groupsMigrated is the tail of every PVE 9 refusal of HA groups.
const groupsMigrated = "ha groups have been migrated to rules"

// groupsRefused answers every group method; its parameters are not checked (the schema
// takes anything: the simulator does not model groups).
func groupsRefused(prefix string) handlerFunc {
	return func(s *Sim, c *call) *response { return apiError(500, prefix+": "+groupsMigrated) }
}

func (s *Sim) hHAResources(c *call) *response {
	digest := s.haResourcesDigest()
	out := []map[string]any{}
	for _, sid := range slices.Sorted(maps.Keys(s.ha.resources)) {
		if t := c.params["type"]; t != "" && t != "vm" {
			continue
		}
		out = append(out, haResourceJSON(s.ha.resources[sid], digest))
	}
	return okData(out)
}

func (s *Sim) hHAResource(c *call) *response {
	sid, _, _, err := s.parseSID(c.vars["sid"])
	if err != nil {
		return apiError(500, err.Error())
	}
	r := s.ha.resources[sid]
	if r == nil {
		return apiError(500, fmt.Sprintf("no such resource '%s'", sid)) // Resources.pm:27
	}
	return okData(haResourceJSON(r, s.haResourcesDigest()))
}

// setHAResourceProps applies validated form values (check_config, then the section).
func setHAResourceProps(r *haResource, p map[string]string) {
	if v, ok := p["state"]; ok {
		r.state = v
	}
	if v, ok := p["max_restart"]; ok {
		n, _ := strconv.Atoi(v)
		r.maxRestart = &n
	}
	if v, ok := p["max_relocate"]; ok {
		n, _ := strconv.Atoi(v)
		r.maxRelocate = &n
	}
	if v, ok := p["failback"]; ok {
		b := v == "1"
		r.failback = &b
	}
	if v, ok := p["comment"]; ok {
		r.comment = v
	}
}

func (s *Sim) hHAResourceCreate(c *call) *response {
	if !s.quorate() {
		return apiError(500, noQuorumMsg) // Resources.pm:192 check_cfs_quorum
	}
	sid, typ, name, err := s.parseSID(c.params["sid"])
	if err != nil {
		return apiError(500, err.Error())
	}
	if t := c.params["type"]; t != "" && t != typ {
		return apiError(500, "types does not match") // Resources.pm:197-200
	}
	if _, ok := c.params["group"]; ok {
		return apiError(500, "invalid parameter 'group': "+groupsMigrated) // Resources.pm:202-203
	}
	if typ != "vm" {
		// The simulator models the vm plugin only (src/PVE/HA/Resources/PVEVM.pm); a
		// container SID is refused as an unknown type would be (reconstruction).
		return apiError(500, fmt.Sprintf("unknown resource type '%s'", typ))
	}
	if !haVMNameRe.MatchString(name) {
		return apiError(500, "invalid VMID") // PVEVM.pm:29-33
	}
	vmid, _ := strconv.Atoi(name)
	g := s.vms[vmid]
	switch {
	case g == nil:
		return apiError(500, fmt.Sprintf("resource '%s' does not exist in cluster", sid)) // PVEVM.pm:58-61
	case g.typ != "qemu":
		return apiError(500, fmt.Sprintf("resource '%s' - guest with ID %d is not a VM", sid, vmid)) // PVEVM.pm:63-66
	}
	if s.ha.resources[sid] != nil {
		return haLockErr("create resource failed", fmt.Errorf("resource ID '%s' already defined", sid)) // Resources.pm:212-227
	}
	r := &haResource{sid: sid, vmid: vmid}
	setHAResourceProps(r, c.params)
	s.ha.resources[sid] = r
	delete(s.ha.deleting, sid)
	s.haRequest(r, c.now)
	return okData(nil)
}

func (s *Sim) hHAResourceUpdate(c *call) *response {
	sid, typ, _, err := s.parseSID(c.vars["sid"])
	if err != nil {
		return apiError(500, err.Error())
	}
	if t := c.params["type"]; t != "" && t != typ {
		return apiError(500, "types does not match") // Resources.pm:252-255
	}
	if _, ok := c.params["group"]; ok {
		return apiError(500, "invalid parameter 'group': "+groupsMigrated) // Resources.pm:257-261
	}
	r := s.ha.resources[sid]
	// check_service_state (Resources.pm:37-51): a resource in error takes only disabled.
	if r != nil && r.reqState() != "ignored" && r.crm == "error" && c.params["state"] != "disabled" {
		return apiError(500, fmt.Sprintf("service '%s' in error state, must be disabled and fixed first", sid))
	}
	// update_resources_config (src/PVE/HA/Config.pm:168-187), inside lock_ha_domain.
	const prefix = "update resources config failed"
	if d := c.params["digest"]; d != "" && d != s.haResourcesDigest() {
		return haLockErr(prefix, pveErr("detected modified configuration - file changed by other user? Try again."))
	}
	if r == nil {
		return haLockErr(prefix, fmt.Errorf("no such resource '%s'", sid)) // Config.pm:144-145
	}
	var dels []string
	for _, k := range splitList(c.params["delete"]) {
		if _, ok := haResourceProps[k]; !ok {
			return haLockErr(prefix, fmt.Errorf("no such option '%s'", k)) // Config.pm:157-158
		}
		dels = append(dels, k)
	}
	before := r.reqState()
	setHAResourceProps(r, c.params)
	for _, k := range dels {
		switch k {
		case "state":
			r.state = ""
		case "max_restart":
			r.maxRestart = nil
		case "max_relocate":
			r.maxRelocate = nil
		case "failback":
			r.failback = nil
		case "comment":
			r.comment = ""
		}
	}
	if r.reqState() != before {
		if r.reqState() == "ignored" {
			// An ignored resource leaves the manager status (Resources.pm:48-54).
			r.crm, r.running = "", false
		}
		if before == "disabled" && r.crm == "error" {
			r.crm = "stopped"
		}
		s.haRequest(r, c.now)
	}
	return okData(nil)
}

func (s *Sim) hHAResourceDelete(c *call) *response {
	sid, _, _, err := s.parseSID(c.vars["sid"])
	if err != nil {
		return apiError(500, err.Error())
	}
	purge := c.params["purge"] != "0" // Resources.pm:311: purge defaults to 1
	if s.ha.resources[sid] == nil {
		return apiError(500, fmt.Sprintf("cannot delete service '%s', not HA managed!", sid)) // Resources.pm:313-315
	}
	s.deleteHAService(sid, purge, c.now)
	return okData(nil)
}

// deleteHAService is src/PVE/HA/Config.pm delete_service_from_config (lines 437-465): the
// section goes; with purge, the SID leaves every rule and a rule left empty is deleted.
func (s *Sim) deleteHAService(sid string, purge bool, now time.Time) {
	if r := s.ha.resources[sid]; r != nil && r.crm != "" {
		// The CRM drops the service from its status at its next round (Manager.pm
		// manage: services gone from the config are removed from the manager status).
		s.ha.deleting[sid] = deletingService{node: s.haNodeOf(r), crm: r.crm, until: now.Add(s.real(s.dur.HARound))}
	}
	delete(s.ha.resources, sid)
	if !purge {
		return
	}
	for id, rule := range s.ha.rules {
		rule.resources = slices.DeleteFunc(rule.resources, func(x string) bool { return x == sid })
		if len(rule.resources) == 0 {
			delete(s.ha.rules, id)
		}
	}
}

// Rules.

var haRuleTypes = []string{"node-affinity", "resource-affinity"}

// haRuleOptions are each type's options (src/PVE/HA/Rules/NodeAffinity.pm:85-93,
// Rules/ResourceAffinity.pm:69-76); true: required.
var haRuleOptions = map[string]map[string]bool{
	"node-affinity":     {"resources": true, "nodes": true, "strict": false, "disable": false, "comment": false},
	"resource-affinity": {"resources": true, "affinity": true, "disable": false, "comment": false},
}

// haRuleSchema is the union of the rule plugins' properties (SectionConfig createSchema
// and updateSchema over src/PVE/HA/Rules.pm:138-169 and the plugins' properties). Which of
// them a type takes is check_config's (haCheckRuleConfig).
func haRuleSchema(update bool) *schema {
	m := map[string]pspec{
		"resources": {optional: update, format: fmtHASIDList},
		"nodes":     {optional: true, format: fmtHANodeList},
		"strict":    pBool,
		"affinity":  {optional: true, enum: []string{"positive", "negative"}},
		"disable":   pBool,
		"comment":   {optional: true, maxLen: 4096},
	}
	if update {
		m["delete"] = pStr
		m["digest"] = pspec{optional: true, maxLen: 64}
		m["type"] = pspec{optional: true, enum: haRuleTypes}
	} else {
		m["rule"] = pspec{format: fmtConfigID}
		m["type"] = pspec{enum: haRuleTypes}
	}
	return fixed(m)
}

// haCheckRuleConfig is pve-common SectionConfig check_config (lines 1608-1641) for a rule:
// a property of another type dies "unexpected property" (check_value, line 1178), a
// missing required one "missing value for required option" on create.
func haCheckRuleConfig(typ string, p map[string]string, create bool) error {
	opts := haRuleOptions[typ]
	for _, k := range slices.Sorted(maps.Keys(p)) {
		switch k {
		case "rule", "type", "delete", "digest":
			continue
		}
		if _, ok := opts[k]; !ok {
			return fmt.Errorf("unexpected property '%s'", k)
		}
	}
	if create {
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			if _, ok := p[k]; opts[k] && !ok {
				return fmt.Errorf("missing value for required option '%s'", k)
			}
		}
	}
	return nil
}

func applyRuleParams(r *haRule, p map[string]string) {
	if v, ok := p["resources"]; ok {
		set := map[string]bool{}
		for _, sid := range splitList(v) {
			set[sid] = true
		}
		r.resources = slices.Sorted(maps.Keys(set))
	}
	if v, ok := p["nodes"]; ok {
		r.nodes = map[string]int{}
		for _, e := range splitList(v) {
			m := haNodePrioRe.FindStringSubmatch(e)
			prio, _ := strconv.Atoi(m[4])
			r.nodes[m[1]] = prio
		}
	}
	if v, ok := p["strict"]; ok {
		b := v == "1"
		r.strict = &b
	}
	if v, ok := p["affinity"]; ok {
		r.affinity = v
	}
	// Rules.pm:276, 328: disable=0 is dropped; only delete=disable enables a rule again.
	if p["disable"] == "1" {
		r.disable = true
	}
	if v, ok := p["comment"]; ok {
		r.comment = v
	}
}

// assertRuleRefs is Rules.pm $assert_valid_resources_param and $assert_valid_nodes_param
// (lines 45-79).
func (s *Sim) assertRuleRefs(r *haRule, checkResources, checkNodes bool) error {
	if checkResources {
		if len(r.resources) == 0 {
			return fmt.Errorf("no resources were specified")
		}
		var missing []string
		for _, sid := range r.resources {
			if s.ha.resources[sid] == nil {
				missing = append(missing, sid)
			}
		}
		if len(missing) > 0 {
			return pveErr(fmt.Sprintf("cannot use unmanaged resource(s) %s.", strings.Join(missing, ", ")))
		}
	}
	if checkNodes && r.typ == "node-affinity" {
		if len(r.nodes) == 0 {
			return fmt.Errorf("no nodes were specified")
		}
		var missing []string
		for _, n := range slices.Sorted(maps.Keys(r.nodes)) {
			if s.nodes[n] == nil {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return pveErr(fmt.Sprintf("cannot use non-existent node(s) %s.", strings.Join(missing, ", ")))
		}
	}
	return nil
}

// ruleInvalid is Rules.pm $assert_feasibility (lines 111-137): the rule's errors, each
// property's messages joined with ", ", in a 400 "Rule '<id>' is invalid.".
func (s *Sim) ruleInvalid(id string) *response {
	errs := s.haFeasibility(s.ha.rules)[id]
	if len(errs) == 0 {
		return nil
	}
	out := map[string]string{}
	for k, msgs := range errs {
		out[k] = strings.Join(msgs, ", ")
	}
	msg := fmt.Sprintf("Rule '%s' is invalid.", id)
	r := paramError(out)
	r.reason = msg
	r.body = []byte(strings.Replace(string(r.body), paramFailed, msg, 1))
	return r
}

func (s *Sim) hHARules(c *call) *response {
	errs := s.haFeasibility(s.ha.rules)
	digest := s.haRulesDigest()
	out := []map[string]any{}
	for _, r := range s.sortedRules() {
		if t := c.params["type"]; t != "" && r.typ != t {
			continue
		}
		if sid := c.params["resource"]; sid != "" && !slices.Contains(r.resources, sid) {
			continue
		}
		m := haRuleJSON(r, digest)
		if e := errs[r.id]; len(e) > 0 {
			m["errors"] = e
		}
		out = append(out, m)
	}
	return okData(out)
}

func (s *Sim) sortedRules() []*haRule {
	rules := slices.Collect(maps.Values(s.ha.rules))
	sort.Slice(rules, func(i, j int) bool {
		if rules[i].order != rules[j].order {
			return rules[i].order < rules[j].order
		}
		return rules[i].id < rules[j].id
	})
	return rules
}

func (s *Sim) hHARule(c *call) *response {
	r := s.ha.rules[c.vars["rule"]]
	if r == nil {
		return apiError(500, fmt.Sprintf("no such ha rule '%s'", c.vars["rule"])) // Rules.pm:25
	}
	m := haRuleJSON(r, s.haRulesDigest())
	if e := s.haFeasibility(s.ha.rules)[r.id]; len(e) > 0 {
		m["errors"] = e
	}
	return okData(m)
}

// nextRuleOrdinal is src/PVE/HA/Rules.pm get_next_ordinal (lines 579-585), as written: the
// smallest order plus one.
func (s *Sim) nextRuleOrdinal() int {
	low := 0
	for _, r := range s.ha.rules {
		if low == 0 || r.order < low {
			low = r.order
		}
	}
	return low + 1
}

func (s *Sim) hHARuleCreate(c *call) *response {
	if !s.quorate() {
		return apiError(500, noQuorumMsg) // Rules.pm:267
	}
	typ, id := c.params["type"], c.params["rule"]
	if err := haCheckRuleConfig(typ, c.params, true); err != nil {
		return apiError(500, err.Error()) // Rules.pm:280, outside the lock
	}
	const prefix = "create ha rule failed"
	if s.ha.rules[id] != nil {
		return haLockErr(prefix, fmt.Errorf("HA rule '%s' already defined", id)) // Rules.pm:286
	}
	r := &haRule{id: id, typ: typ}
	applyRuleParams(r, c.params)
	if err := s.assertRuleRefs(r, true, true); err != nil {
		return haLockErr(prefix, err) // Rules.pm:288-289
	}
	r.order = s.nextRuleOrdinal()
	s.ha.rules[id] = r
	if resp := s.ruleInvalid(id); resp != nil {
		delete(s.ha.rules, id) // the config is not written (Rules.pm:294-296)
		return resp
	}
	s.haRulesChanged(c.now)
	return okData(nil)
}

func (s *Sim) hHARuleUpdate(c *call) *response {
	id := c.vars["rule"]
	const prefix = "update HA rules failed"
	if d := c.params["digest"]; d != "" && d != s.haRulesDigest() {
		return haLockErr(prefix, pveErr("detected modified configuration - file changed by other user? Try again.")) // Rules.pm:338
	}
	old := s.ha.rules[id]
	if old == nil {
		return haLockErr(prefix, fmt.Errorf("HA rule '%s' does not exist", id)) // Rules.pm:340
	}
	p := maps.Clone(c.params)
	delete(p, "type")
	if err := haCheckRuleConfig(old.typ, p, false); err != nil {
		return haLockErr(prefix, err) // Rules.pm:344
	}
	r := *old
	r.resources = slices.Clone(old.resources)
	r.nodes = maps.Clone(old.nodes)
	applyRuleParams(&r, p)
	_, hasRes := p["resources"]
	_, hasNodes := p["nodes"]
	if err := s.assertRuleRefs(&r, hasRes, hasNodes); err != nil {
		return haLockErr(prefix, err) // Rules.pm:346-347
	}
	// SectionConfig delete_from_config (Rules.pm:349-350): an option of the type, not
	// required, not set in the same call.
	for _, k := range splitList(c.params["delete"]) {
		req, ok := haRuleOptions[old.typ][k]
		switch {
		case !ok:
			return haLockErr(prefix, fmt.Errorf("no such option '%s'", k))
		case req:
			return haLockErr(prefix, fmt.Errorf("unable to delete required option '%s'", k))
		}
		switch k {
		case "comment":
			r.comment = ""
		case "disable":
			r.disable = false
		case "strict":
			r.strict = nil
		}
	}
	s.ha.rules[id] = &r
	if resp := s.ruleInvalid(id); resp != nil {
		s.ha.rules[id] = old
		return resp
	}
	s.haRulesChanged(c.now)
	return okData(nil)
}

// hHARuleDelete is Rules.pm delete_rule (lines 386-402): it deletes without checking that
// the rule exists, so an unknown id answers success.
func (s *Sim) hHARuleDelete(c *call) *response {
	delete(s.ha.rules, c.vars["rule"])
	s.haRulesChanged(c.now)
	return okData(nil)
}

// haFeasibility is src/PVE/HA/Rules.pm check_feasibility (lines 402-422) over the enabled
// rules with the checks a proxy pair meets: NodeAffinity.pm check_single_resource_reference
// (206-248), ResourceAffinity.pm check_resource_affinity_resources_count (147-174),
// check_negative_resource_affinity_resources_count (187-219),
// check_inter_resource_affinity_rules_consistency (234-282, pairwise over positive rules:
// the merge of connected positive rules is not modelled), and Rules.pm
// check_single_priority_node_affinity_in_resource_affinity_rules (619-674) and
// check_negative_resource_affinity_node_affinity_consistency (760-820). Not modelled:
// check_single_node_affinity_per_positive_resource_affinity_rule (691-744).
func (s *Sim) haFeasibility(rules map[string]*haRule) map[string]map[string][]string {
	f := feasibility{errs: map[string]map[string][]string{}}
	for _, r := range rules {
		switch {
		case r.disable:
		case r.typ == "node-affinity":
			f.na = append(f.na, r)
		case r.affinity == "positive":
			f.pos = append(f.pos, r)
		default:
			f.neg = append(f.neg, r)
		}
	}
	for _, rs := range [][]*haRule{f.na, f.pos, f.neg} {
		sort.Slice(rs, func(i, j int) bool { return rs[i].id < rs[j].id })
	}
	f.singleResourceReference()
	f.resourceCounts(len(s.nodeOrder))
	f.positiveNegative()
	f.singlePriority()
	f.negativeNodeConsistency()
	return f.errs
}

// feasibility holds the enabled rules by kind and the errors found, by rule and property.
type feasibility struct {
	na, pos, neg []*haRule
	errs         map[string]map[string][]string
}

func (f *feasibility) add(id, msg string) {
	if f.errs[id] == nil {
		f.errs[id] = map[string][]string{}
	}
	f.errs[id]["resources"] = append(f.errs[id]["resources"], msg)
}

// singleResourceReference is NodeAffinity.pm check_single_resource_reference (206-248).
func (f *feasibility) singleResourceReference() {
	users := map[string][]string{}
	for _, r := range f.na {
		for _, sid := range r.resources {
			users[sid] = append(users[sid], r.id)
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(users)) {
		if len(users[sid]) > 1 {
			for _, id := range users[sid] {
				f.add(id, fmt.Sprintf("resource '%s' is already used in another node affinity rule", sid))
			}
		}
	}
}

// resourceCounts is ResourceAffinity.pm check_resource_affinity_resources_count (147-174)
// and check_negative_resource_affinity_resources_count (187-219).
func (f *feasibility) resourceCounts(nodes int) {
	for _, r := range append(slices.Clone(f.pos), f.neg...) {
		if len(r.resources) < 2 {
			f.add(r.id, "rule is ineffective as there are less than two resources")
		}
	}
	for _, r := range f.neg {
		if len(r.resources) > nodes {
			f.add(r.id, "rule defines more resources than available nodes")
		}
	}
}

// positiveNegative is ResourceAffinity.pm check_inter_resource_affinity_rules_consistency
// (234-282).
func (f *feasibility) positiveNegative() {
	for _, p := range f.pos {
		for _, n := range f.neg {
			if len(intersect(p.resources, n.resources)) >= 2 {
				f.add(n.id, "rule shares two or more resources with a positive resource affinity rule")
				f.add(p.id, "rule shares two or more resources with a negative resource affinity rule")
			}
		}
	}
}

// singlePriority is Rules.pm check_single_priority_node_affinity_in_resource_affinity_rules
// (619-674).
func (f *feasibility) singlePriority() {
	for _, ra := range append(slices.Clone(f.pos), f.neg...) {
		var paired []string
		multi := false
		for _, n := range f.na {
			if len(intersect(ra.resources, n.resources)) == 0 {
				continue
			}
			paired = append(paired, n.id)
			prios := map[int]bool{}
			for _, p := range n.nodes {
				prios[p] = true
			}
			multi = multi || len(prios) > 1
		}
		if multi {
			f.add(ra.id, "resources are in node affinity rules with multiple priorities")
			for _, id := range paired {
				f.add(id, "resources are in a resource affinity rule and cannot be in a node affinity rule with multiple priorities")
			}
		}
	}
}

// negativeNodeConsistency is Rules.pm
// check_negative_resource_affinity_node_affinity_consistency (760-820).
func (f *feasibility) negativeNodeConsistency() {
	for _, ng := range f.neg {
		allowed := map[string]bool{}
		located := map[string]bool{}
		var paired []string
		for _, n := range f.na {
			common := intersect(ng.resources, n.resources)
			if len(common) == 0 {
				continue
			}
			for _, sid := range common {
				located[sid] = true
			}
			for node := range n.nodes {
				allowed[node] = true
			}
			paired = append(paired, n.id)
		}
		if len(allowed) < len(located) {
			f.add(ng.id, "two or more resources are restricted to less nodes than available to the resources")
			for _, id := range paired {
				f.add(id, "at least one resource is in a negative resource affinity rule and this rule would restrict "+
					"these to less nodes than available to the resources")
			}
		}
	}
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
