package pveapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// HA resources, rules and status (pve-ha-manager src/PVE/API2/HA/Resources.pm, Rules.pm,
// Status.pm). Every change needs Sys.Console on /, every read Sys.Audit on / (the
// permissions blocks of each method): a token whose ACLs stop at a pool can do neither.

// HAResource is one entry of GET /cluster/ha/resources or the answer of GET
// /cluster/ha/resources/{sid}: the section of ha/resources.cfg as written, without defaults
// (Resources.pm api_copy_config, lines 24-35). A property left unset is absent: State "",
// MaxRestart, MaxRelocate and Failback nil; Proxmox then uses started, 1, 1 and true
// (pve-ha-manager src/PVE/HA/Resources.pm:19-90).
type HAResource struct {
	// SID is "<type>:<name>", "vm:<vmid>" for a VM.
	SID  string `json:"sid"`
	Type string `json:"type"`
	// State is the requested state: started, stopped, disabled, ignored ("enabled" is an
	// old alias of started).
	State       string `json:"state"`
	MaxRestart  *Int   `json:"max_restart"`
	MaxRelocate *Int   `json:"max_relocate"`
	Failback    *Flag  `json:"failback"`
	Comment     string `json:"comment"`
	// Group is the PVE 8 HA group; PVE 9 leaves it out once groups are migrated.
	Group string `json:"group"`
	// Digest is the digest of the whole ha/resources.cfg, for UpdateHAResource.
	Digest string `json:"digest"`
}

// VMID is the VMID of a "vm:<vmid>" SID, or 0 for any other SID.
func (r HAResource) VMID() int {
	id, ok := VMIDOfSID(r.SID)
	if !ok {
		return 0
	}
	return id
}

// HAResourceParams is the form of POST /cluster/ha/resources and PUT
// /cluster/ha/resources/{sid} (Resources.pm create, update; the properties of
// src/PVE/HA/Resources.pm:12-98). Empty strings and nil pointers are not sent.
type HAResourceParams struct {
	// SID is "vm:<vmid>" (HASID). Required.
	SID string
	// State: started, stopped, disabled or ignored.
	State       string
	MaxRestart  *int
	MaxRelocate *int
	Failback    *bool
	Comment     string
	// Delete names properties to unset (update only): "comment", "max_restart", ...
	Delete []string
	// Digest, when set, makes the update fail if ha/resources.cfg changed since it was
	// read (update only).
	Digest string
}

// HARule is one entry of GET /cluster/ha/rules or the answer of GET /cluster/ha/rules/{rule}
// (Rules.pm $get_api_ha_rule, lines 22-43). Resources and Nodes are Proxmox's encoded lists,
// sorted ("vm:100,vm:101"; "pve1:2,pve2"); see SplitHAList and ParseHANodes.
type HARule struct {
	Rule string `json:"rule"`
	// Type is "node-affinity" or "resource-affinity".
	Type      string `json:"type"`
	Resources string `json:"resources"`
	// Affinity is "positive" or "negative" (resource-affinity only).
	Affinity string `json:"affinity"`
	// Nodes and Strict belong to node-affinity rules.
	Nodes   string `json:"nodes"`
	Strict  Flag   `json:"strict"`
	Comment string `json:"comment"`
	Disable Flag   `json:"disable"`
	Order   Int    `json:"order"`
	Digest  string `json:"digest"`
	// Errors is what the feasibility checks hold against the rule, by property (Rules.pm
	// index/read_rule: a rule the checks refuse is listed but not applied by the CRM).
	Errors map[string][]string `json:"errors"`
}

// HARuleParams is the form of POST /cluster/ha/rules and PUT /cluster/ha/rules/{rule}
// (src/PVE/HA/Rules.pm:138-169, Rules/NodeAffinity.pm:58-93, Rules/ResourceAffinity.pm:56-76).
// Empty strings and nil pointers are not sent.
type HARuleParams struct {
	// Rule is the rule id (a pve-configid). Required.
	Rule string
	// Type is "node-affinity" or "resource-affinity"; sent on create only (an update keeps
	// the rule's type).
	Type string
	// Resources is the encoded list of SIDs, "vm:100,vm:101" (JoinHAList). Every SID must
	// be an HA resource already.
	Resources string
	// Affinity is "positive" or "negative" (resource-affinity).
	Affinity string
	// Nodes is "node[:priority],..." (node-affinity; FormatHANodes).
	Nodes  string
	Strict *bool
	// Disable sends disable=1 when true. Proxmox drops disable=0 (Rules.pm:276, 328): to
	// enable a disabled rule, put "disable" in Delete.
	Disable bool
	Comment string
	// Delete names properties to unset (update only).
	Delete []string
	// Digest, when set, makes the update fail if ha/rules.cfg changed (update only).
	Digest string
}

// HAStatusEntry is one entry of GET /cluster/ha/status/current (src/PVE/API2/HA/Status.pm
// status, lines 65-359): id "quorum", "master", "fencing", "lrm:<node>" or
// "service:<sid>".
type HAStatusEntry struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Node   string `json:"node"`
	Status string `json:"status"`
	// Quorate is set on the quorum entry.
	Quorate   Flag  `json:"quorate"`
	Timestamp int64 `json:"timestamp"`
	// The service entry: the SID, the CRM's state (started, fence, recovery, error...),
	// the verbose state and the requested state of ha/resources.cfg.
	SID          string `json:"sid"`
	CRMState     string `json:"crm_state"`
	State        string `json:"state"`
	RequestState string `json:"request_state"`
	MaxRestart   *Int   `json:"max_restart"`
	MaxRelocate  *Int   `json:"max_relocate"`
	Failback     *Flag  `json:"failback"`
	Comment      string `json:"comment"`
	// ArmedState and ResourceMode are set on the fencing entry.
	ArmedState   string `json:"armed-state"`
	ResourceMode string `json:"resource_mode"`
}

// VMStatusHA is the "ha" object of GET /nodes/{node}/qemu/{vmid}/status/current (qemu-server
// src/PVE/API2/Qemu.pm:3478, pve-ha-manager src/PVE/HA/Config.pm:492-507 get_service_status):
// Managed for an HA resource that is not ignored, State the HA manager's state of it
// (started, stopped, fence, recovery, error...; empty until the manager has seen it).
type VMStatusHA struct {
	Managed Flag   `json:"managed"`
	State   string `json:"state"`
}

// HANode is one entry of a node-affinity rule's node list.
type HANode struct {
	Node     string
	Priority int
}

// Int is a Proxmox integer, which arrives as a number or, read back from a section config,
// as a numeric string.
type Int int

// UnmarshalJSON accepts 2, "2" and null (0).
func (n *Int) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "null" || s == "" {
		*n = 0
		return nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not an integer: %s", b)
	}
	*n = Int(v)
	return nil
}

// IntPtr returns a pointer to i, for the optional fields of the HA params.
func IntPtr(i int) *int { return &i }

// BoolPtr returns a pointer to b, for the optional fields of the HA params.
func BoolPtr(b bool) *bool { return &b }

// HASID is the SID of a VM, "vm:<vmid>".
func HASID(vmid int) string { return "vm:" + strconv.Itoa(vmid) }

var reVMSID = regexp.MustCompile(`^vm:([1-9][0-9]+)$`)

// VMIDOfSID is the VMID of a "vm:<vmid>" SID (src/PVE/HA/Resources/PVEVM.pm:29-33 takes
// [1-9][0-9]+ as a VMID).
func VMIDOfSID(sid string) (int, bool) {
	m := reVMSID.FindStringSubmatch(sid)
	if m == nil {
		return 0, false
	}
	id, err := strconv.Atoi(m[1])
	return id, err == nil
}

// JoinHAList is the encoded list of a rule's resources as Proxmox writes it: sorted,
// comma-separated (src/PVE/HA/Rules.pm:236-249).
func JoinHAList(sids []string) string {
	s := append([]string(nil), sids...)
	sort.Strings(s)
	return strings.Join(s, ",")
}

// SplitHAList splits an encoded list ("vm:100,vm:101"; PVE::Tools::split_list also takes
// spaces and semicolons).
func SplitHAList(s string) []string {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' })
	if len(f) == 0 {
		return nil
	}
	return f
}

var reHANode = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)(:(\d+))?$`)

// ParseHANodes decodes a node-affinity node list, "node[:priority],..." (a node without
// priority has priority 0; pve-ha-manager src/PVE/HA/Tools.pm:118-128 parse_node_priority).
func ParseHANodes(s string) ([]HANode, error) {
	var out []HANode
	for _, e := range SplitHAList(s) {
		m := reHANode.FindStringSubmatch(e)
		if m == nil {
			return nil, fmt.Errorf("unable to parse HA node entry '%s'", e)
		}
		p := 0
		if m[4] != "" {
			v, err := strconv.Atoi(m[4])
			if err != nil {
				return nil, fmt.Errorf("unable to parse HA node entry '%s'", e)
			}
			p = v
		}
		out = append(out, HANode{Node: m[1], Priority: p})
	}
	return out, nil
}

// FormatHANodes encodes a node list as Proxmox writes it: sorted by node, ":priority" only
// when not 0 (src/PVE/HA/Rules/NodeAffinity.pm:115-135).
func FormatHANodes(nodes []HANode) string {
	s := append([]HANode(nil), nodes...)
	sort.Slice(s, func(i, j int) bool { return s[i].Node < s[j].Node })
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = n.Node
		if n.Priority != 0 {
			parts[i] += ":" + strconv.Itoa(n.Priority)
		}
	}
	return strings.Join(parts, ",")
}

const haResourcesPath = "/cluster/ha/resources"
const haRulesPath = "/cluster/ha/rules"

func haArg(call, what, v string) error {
	if v == "" {
		return WithClass(Permanent, fmt.Errorf("proxmox API %s: empty %s", call, what))
	}
	if strings.ContainsAny(v, "/?#") {
		return WithClass(Permanent, fmt.Errorf("proxmox API %s: invalid %s %q", call, what, v))
	}
	return nil
}

// HAResources is GET /cluster/ha/resources (Sys.Audit on /).
func (c *Client) HAResources(ctx context.Context) ([]HAResource, error) {
	var v []HAResource
	err := c.do(ctx, request{call: "HAResources", method: http.MethodGet, path: haResourcesPath}, &v)
	return v, err
}

// HAResource is GET /cluster/ha/resources/{sid} (Sys.Audit on /). A SID that is not an HA
// resource answers 500 "no such resource '<sid>'" (IsHAResourceMissing).
func (c *Client) HAResource(ctx context.Context, sid string) (HAResource, error) {
	var v HAResource
	if err := haArg("HAResource", "sid", sid); err != nil {
		return v, err
	}
	err := c.do(ctx, request{call: "HAResource", method: http.MethodGet, path: haResourcesPath + "/" + seg(sid),
		fields: map[string]any{"sid": sid}}, &v)
	return v, err
}

func (p HAResourceParams) form(create bool) url.Values {
	f := url.Values{}
	if create {
		f.Set("sid", p.SID)
	}
	if p.State != "" {
		f.Set("state", p.State)
	}
	if p.MaxRestart != nil {
		f.Set("max_restart", strconv.Itoa(*p.MaxRestart))
	}
	if p.MaxRelocate != nil {
		f.Set("max_relocate", strconv.Itoa(*p.MaxRelocate))
	}
	if p.Failback != nil {
		f.Set("failback", boolString(*p.Failback))
	}
	if p.Comment != "" {
		f.Set("comment", p.Comment)
	}
	if !create {
		if len(p.Delete) > 0 {
			f.Set("delete", strings.Join(p.Delete, ","))
		}
		if p.Digest != "" {
			f.Set("digest", p.Digest)
		}
	}
	return f
}

// CreateHAResource is POST /cluster/ha/resources (Sys.Console on /): the VM must exist,
// and an SID already configured answers 500 "create resource failed: resource ID '<sid>'
// already defined" (IsHAResourceExists).
func (c *Client) CreateHAResource(ctx context.Context, p HAResourceParams) error {
	if err := haArg("CreateHAResource", "sid", p.SID); err != nil {
		return err
	}
	return c.do(ctx, request{call: "CreateHAResource", method: http.MethodPost, path: haResourcesPath,
		form: p.form(true), fields: map[string]any{"sid": p.SID}}, nil)
}

// UpdateHAResource is PUT /cluster/ha/resources/{sid} (Sys.Console on /).
func (c *Client) UpdateHAResource(ctx context.Context, p HAResourceParams) error {
	if err := haArg("UpdateHAResource", "sid", p.SID); err != nil {
		return err
	}
	f := p.form(false)
	if len(f) == 0 {
		return WithClass(Permanent, errors.New("proxmox API UpdateHAResource: no parameters"))
	}
	return c.do(ctx, request{call: "UpdateHAResource", method: http.MethodPut, path: haResourcesPath + "/" + seg(p.SID),
		form: f, fields: map[string]any{"sid": p.SID}}, nil)
}

// DeleteHAResource is DELETE /cluster/ha/resources/{sid}?purge=0|1 (Sys.Console on /).
// purge also takes the SID out of every rule, deleting a rule left without resources
// (pve-ha-manager src/PVE/HA/Config.pm:437-465). An SID that is not configured answers 500
// "cannot delete service '<sid>', not HA managed!" (IsHANotManaged).
func (c *Client) DeleteHAResource(ctx context.Context, sid string, purge bool) error {
	if err := haArg("DeleteHAResource", "sid", sid); err != nil {
		return err
	}
	return c.do(ctx, request{call: "DeleteHAResource", method: http.MethodDelete, path: haResourcesPath + "/" + seg(sid),
		query: url.Values{"purge": {boolString(purge)}}, fields: map[string]any{"sid": sid, "purge": purge}}, nil)
}

// HARules is GET /cluster/ha/rules (Sys.Audit on /), in the rules' order.
func (c *Client) HARules(ctx context.Context) ([]HARule, error) {
	var v []HARule
	err := c.do(ctx, request{call: "HARules", method: http.MethodGet, path: haRulesPath}, &v)
	return v, err
}

// HARule is GET /cluster/ha/rules/{rule} (Sys.Audit on /). An unknown id answers 500 "no
// such ha rule '<rule>'" (IsHARuleMissing).
func (c *Client) HARule(ctx context.Context, id string) (HARule, error) {
	var v HARule
	if err := haArg("HARule", "rule", id); err != nil {
		return v, err
	}
	err := c.do(ctx, request{call: "HARule", method: http.MethodGet, path: haRulesPath + "/" + seg(id),
		fields: map[string]any{"rule": id}}, &v)
	return v, err
}

func (p HARuleParams) form(create bool) url.Values {
	f := url.Values{}
	if create {
		f.Set("rule", p.Rule)
		f.Set("type", p.Type)
	}
	for k, v := range map[string]string{"resources": p.Resources, "affinity": p.Affinity, "nodes": p.Nodes, "comment": p.Comment} {
		if v != "" {
			f.Set(k, v)
		}
	}
	if p.Strict != nil {
		f.Set("strict", boolString(*p.Strict))
	}
	if p.Disable {
		f.Set("disable", "1")
	}
	if !create {
		if len(p.Delete) > 0 {
			f.Set("delete", strings.Join(p.Delete, ","))
		}
		if p.Digest != "" {
			f.Set("digest", p.Digest)
		}
	}
	return f
}

// CreateHARule is POST /cluster/ha/rules (Sys.Console on /). A taken id answers 500 "create
// ha rule failed: HA rule '<rule>' already defined" (IsHARuleExists); a resource that is not
// an HA resource, "... cannot use unmanaged resource(s) <sids>." (IsHAUnmanagedResources);
// an infeasible rule, 400 "Rule '<rule>' is invalid." with the reasons by property.
func (c *Client) CreateHARule(ctx context.Context, p HARuleParams) error {
	if err := haArg("CreateHARule", "rule", p.Rule); err != nil {
		return err
	}
	if p.Type == "" {
		return WithClass(Permanent, errors.New("proxmox API CreateHARule: empty type"))
	}
	return c.do(ctx, request{call: "CreateHARule", method: http.MethodPost, path: haRulesPath,
		form: p.form(true), fields: map[string]any{"rule": p.Rule, "type": p.Type}}, nil)
}

// UpdateHARule is PUT /cluster/ha/rules/{rule} (Sys.Console on /). An unknown id answers
// 500 "update HA rules failed: HA rule '<rule>' does not exist" (IsHARuleMissing).
func (c *Client) UpdateHARule(ctx context.Context, p HARuleParams) error {
	if err := haArg("UpdateHARule", "rule", p.Rule); err != nil {
		return err
	}
	f := p.form(false)
	if len(f) == 0 {
		return WithClass(Permanent, errors.New("proxmox API UpdateHARule: no parameters"))
	}
	return c.do(ctx, request{call: "UpdateHARule", method: http.MethodPut, path: haRulesPath + "/" + seg(p.Rule),
		form: f, fields: map[string]any{"rule": p.Rule}}, nil)
}

// DeleteHARule is DELETE /cluster/ha/rules/{rule} (Sys.Console on /). Proxmox answers
// success for an id it does not have (src/PVE/API2/HA/Rules.pm:386-402 deletes without a
// check).
func (c *Client) DeleteHARule(ctx context.Context, id string) error {
	if err := haArg("DeleteHARule", "rule", id); err != nil {
		return err
	}
	return c.do(ctx, request{call: "DeleteHARule", method: http.MethodDelete, path: haRulesPath + "/" + seg(id),
		fields: map[string]any{"rule": id}}, nil)
}

// HAStatus is GET /cluster/ha/status/current (Sys.Audit on /).
func (c *Client) HAStatus(ctx context.Context) ([]HAStatusEntry, error) {
	var v []HAStatusEntry
	err := c.do(ctx, request{call: "HAStatus", method: http.MethodGet, path: "/cluster/ha/status/current"}, &v)
	return v, err
}

// HA errors (all 500 dies of pve-ha-manager; lock_ha_domain prefixes the message of a die
// inside the lock with its own, src/PVE/HA/Config.pm:311-320).
var (
	reHAResourceMissing = regexp.MustCompile(`^(?:update resources config failed: )?no such resource '([^']+)'$`)
	reHANotManaged      = regexp.MustCompile(`^cannot delete service '([^']+)', not HA managed!$`)
	reHAResourceExists  = regexp.MustCompile(`^create resource failed: resource ID '([^']+)' already defined$`)
	reHARuleMissing     = regexp.MustCompile(`^(?:no such ha rule '([^']+)'|update HA rules failed: HA rule '([^']+)' does not exist)$`)
	reHARuleExists      = regexp.MustCompile(`^create ha rule failed: HA rule '([^']+)' already defined$`)
	reHAUnmanaged       = regexp.MustCompile(`^(?:create ha rule|update HA rules) failed: cannot use unmanaged resource\(s\) (.+)\.$`)
	reHAGuestMissing    = regexp.MustCompile(`^resource '([^']+)' does not exist in cluster$`)
	reHAGroupsMigrated  = regexp.MustCompile(`ha groups have been migrated to rules$`)
)

// IsHAResourceMissing reports a read or update of an SID that is not an HA resource: 500
// "no such resource '<sid>'" (Resources.pm:27, Config.pm:144-145).
func IsHAResourceMissing(err error) bool { return is500(err, reHAResourceMissing.MatchString) }

// IsHANotManaged reports a delete of an SID that is not an HA resource: 500 "cannot delete
// service '<sid>', not HA managed!" (Resources.pm:313-315). The resource is gone: a delete
// meeting it has nothing left to do.
func IsHANotManaged(err error) bool { return is500(err, reHANotManaged.MatchString) }

// IsHAResourceExists reports a create of an SID already configured (Resources.pm:217-219).
func IsHAResourceExists(err error) bool { return is500(err, reHAResourceExists.MatchString) }

// IsHAGuestMissing reports a create for a VMID no guest of the cluster holds: 500
// "resource 'vm:<vmid>' does not exist in cluster" (Resources/PVEVM.pm:52-61).
func IsHAGuestMissing(err error) bool { return is500(err, reHAGuestMissing.MatchString) }

// IsHARuleMissing reports a read or update of an unknown rule id (Rules.pm:25, 340).
func IsHARuleMissing(err error) bool { return is500(err, reHARuleMissing.MatchString) }

// IsHARuleExists reports a create of a rule id already taken (Rules.pm:286).
func IsHARuleExists(err error) bool { return is500(err, reHARuleExists.MatchString) }

// IsHAUnmanagedResources reports a rule naming SIDs that are not HA resources
// (Rules.pm:45-59) and returns them.
func IsHAUnmanagedResources(err error) ([]string, bool) {
	ae, ok := apiError(err)
	if !ok || ae.Status != http.StatusInternalServerError {
		return nil, false
	}
	m := reHAUnmanaged.FindStringSubmatch(ae.Message)
	if m == nil {
		return nil, false
	}
	return strings.Split(m[1], ", "), true
}

// IsHAGroupsMigrated reports the PVE 9 refusal of HA groups: "... ha groups have been
// migrated to rules" (src/PVE/API2/HA/Groups.pm:60, 97, 118, 172, 248; Resources.pm:202,
// 260).
func IsHAGroupsMigrated(err error) bool { return is500(err, reHAGroupsMigrated.MatchString) }

// isHAPermanent reports the HA answers no retry heals (decision: error-classes): a missing
// or duplicate resource or rule, a rule naming unmanaged resources, groups refused.
func isHAPermanent(err error) bool {
	_, unmanaged := IsHAUnmanagedResources(err)
	return unmanaged || IsHAResourceMissing(err) || IsHANotManaged(err) || IsHAResourceExists(err) ||
		IsHAGuestMissing(err) || IsHARuleMissing(err) || IsHARuleExists(err) || IsHAGroupsMigrated(err)
}
