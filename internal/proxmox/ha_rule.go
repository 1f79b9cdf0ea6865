package proxmox

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// HA rules (pve-ha-manager src/PVE/API2/HA/Rules.pm, src/PVE/HA/Rules.pm and its plugins
// Rules/NodeAffinity.pm and Rules/ResourceAffinity.pm): a proxy_ha_rule creates, reads,
// updates and deletes one rule, and only a rule its mark says is its own (ha_rule_mark.go,
// decision: ha-rule-mark). The rule's resources are VMs, "vm:<vmid>", which Proxmox takes
// only once they are HA resources (Rules.pm:45-59).

// The rule types (src/PVE/HA/Rules/NodeAffinity.pm:54-56, Rules/ResourceAffinity.pm:52-54).
const (
	HARuleNodeAffinity     = "node-affinity"
	HARuleResourceAffinity = "resource-affinity"
)

// HARuleSpec is a rule as a resource declares it.
type HARuleSpec struct {
	// ID is the rule id (a pve-configid).
	ID   string
	Type string
	// Affinity is "positive" or "negative" (resource-affinity).
	Affinity string
	// Nodes maps node name to priority (node-affinity); Strict restricts the VMs to them.
	Nodes  map[string]int
	Strict bool
	VMIDs  []int
	// Comment is the user's text; the mark line is added to it (ruleComment).
	Comment  string
	Disabled bool
	// UID is the resource's uid, written in the mark.
	UID string
}

// HARule is a rule as read back: its spec (Comment without the mark line, UID the mark's)
// and what Proxmox's feasibility checks hold against it.
type HARule struct {
	HARuleSpec
	// Errors are the feasibility checks' reasons, by property ("resources": "rule defines
	// more resources than available nodes"): Proxmox keeps such a rule but does not apply it.
	Errors map[string][]string
	// OtherSIDs are resources of the rule that are not VMs ("ct:105"), kept on update.
	OtherSIDs []string
}

// RuleError is the backend's error for an HA rule: a class, the operation and the rule id.
type RuleError struct {
	Class pveapi.Class
	// Op is create, read, update, delete or import.
	Op   string
	Rule string
	Err  error
	// notOurs marks the refusal as ErrHARuleNotOurs.
	notOurs bool
}

// Error renders "<op> HA rule <id>: <message>".
func (e *RuleError) Error() string {
	return fmt.Sprintf("%s HA rule %s: %v", e.Op, e.Rule, e.Err)
}

// Unwrap returns the message with its class attached, so that ClassOf sees the class.
func (e *RuleError) Unwrap() error { return pveapi.WithClass(e.Class, e.Err) }

// Is makes errors.Is true for ErrNotFound (the NotFound class: the rule is gone) and for
// ErrHARuleNotOurs.
func (e *RuleError) Is(target error) bool {
	return (target == ErrNotFound && e.Class == pveapi.NotFound) || (target == ErrHARuleNotOurs && e.notOurs)
}

func ruleErr(op, id string, class pveapi.Class, format string, args ...any) *RuleError {
	return &RuleError{Class: class, Op: op, Rule: id, Err: fmt.Errorf(format, args...)}
}

// ruleAPIErr is a failed request of op on rule id, with the class of the failure and, for
// the answers a user can act on, what to do.
func ruleAPIErr(op, id string, err error) *RuleError {
	if sids, ok := pveapi.IsHAUnmanagedResources(err); ok {
		return ruleErr(op, id, pveapi.Permanent, "Proxmox refuses the rule: %s %s (%w); "+
			"a rule may name only VMs that are HA resources: set ha on their proxy_vm resources (or add them in Datacenter > HA), then apply again",
			strings.Join(sids, ", "), notHAResources(len(sids)), err)
	}
	var ae *pveapi.APIError
	if errors.As(err, &ae) && ae.Status == 400 && len(ae.Errors) > 0 {
		return ruleErr(op, id, pveapi.Permanent, "Proxmox's checks refuse the rule (%w); change the rule, or the rules it conflicts with", err)
	}
	return &RuleError{Class: classify(op, err), Op: op, Rule: id, Err: err}
}

func notHAResources(n int) string {
	if n == 1 {
		return "is not an HA resource"
	}
	return "are not HA resources"
}

// ruleParams is the form of a create (or, with create false, an update) of s.
func ruleParams(s HARuleSpec, keep []string, create bool) pveapi.HARuleParams {
	sids := make([]string, 0, len(s.VMIDs)+len(keep))
	for _, v := range s.VMIDs {
		sids = append(sids, pveapi.HASID(v))
	}
	sids = append(sids, keep...)
	p := pveapi.HARuleParams{Rule: s.ID, Resources: pveapi.JoinHAList(sids), Comment: ruleComment(s.Comment, s.UID), Disable: s.Disabled}
	if create {
		p.Type = s.Type
	}
	switch s.Type {
	case HARuleResourceAffinity:
		p.Affinity = s.Affinity
	case HARuleNodeAffinity:
		nodes := make([]pveapi.HANode, 0, len(s.Nodes))
		for _, n := range slices.Sorted(maps.Keys(s.Nodes)) {
			nodes = append(nodes, pveapi.HANode{Node: n, Priority: s.Nodes[n]})
		}
		p.Nodes = pveapi.FormatHANodes(nodes)
		p.Strict = pveapi.BoolPtr(s.Strict)
	}
	if !create && !s.Disabled {
		// Proxmox drops disable=0 (Rules.pm:328): enabling is deleting the flag.
		p.Delete = []string{"disable"}
	}
	return p
}

// ruleFrom maps a rule as Proxmox answers it; the mark's uid and the comment's text are
// taken from m.
func ruleFrom(r pveapi.HARule, m RuleMark) (HARule, error) {
	out := HARule{HARuleSpec: HARuleSpec{
		ID: r.Rule, Type: r.Type, Affinity: r.Affinity, Strict: bool(r.Strict), Disabled: bool(r.Disable),
		Comment: m.Text, UID: m.UID,
	}, Errors: r.Errors}
	for _, sid := range pveapi.SplitHAList(r.Resources) {
		if vmid, ok := pveapi.VMIDOfSID(sid); ok {
			out.VMIDs = append(out.VMIDs, vmid)
		} else {
			out.OtherSIDs = append(out.OtherSIDs, sid)
		}
	}
	sort.Ints(out.VMIDs)
	if r.Nodes != "" {
		nodes, err := pveapi.ParseHANodes(r.Nodes)
		if err != nil {
			return out, err
		}
		out.Nodes = make(map[string]int, len(nodes))
		for _, n := range nodes {
			out.Nodes[n.Node] = n.Priority
		}
	}
	return out, nil
}

// readRule reads rule id: NotFound when Proxmox has no such rule.
func (b *Backend) readRule(ctx context.Context, op, id string) (pveapi.HARule, error) {
	r, err := b.api.HARule(ctx, id)
	switch {
	case err == nil:
		return r, nil
	case pveapi.IsHARuleMissing(err):
		return r, ruleErr(op, id, pveapi.NotFound, "Proxmox has no HA rule %q", id)
	}
	return r, ruleAPIErr(op, id, err)
}

// notOursRule is the refusal of op on a rule the predicate refused for why.
func notOursRule(op, id string, m RuleMark, why notOurs) *RuleError {
	var found string
	switch why {
	case notOursUnmarked:
		found = "its comment no longer carries the " + MarkKeyHARule + " line (it was edited outside Terraform, or " +
			"the rule was deleted and made again by someone else)"
	case notOursOtherUID:
		found = fmt.Sprintf("its mark names another resource (uid %s): another configuration or an import made it its own", m.UID)
	case notOursNoUID:
		found = "its mark carries no uid"
	default:
		found = "this resource's state records no uid"
	}
	e := ruleErr(op, id, pveapi.Permanent, "HA rule %q is not shown to be this resource's: %s; nothing was written to it. "+
		"If it is this resource's, put the line %s=<the uid in the state> back at the end of its comment; otherwise "+
		"remove the resource from the state (terraform state rm)",
		id, found, MarkKeyHARule)
	e.notOurs = true
	return e
}

// GetHARule reads rule id back for the resource of uid: NotFound (errors.Is ErrNotFound)
// when the rule is gone, a refusal (errors.Is ErrHARuleNotOurs) when the rule there is not
// the resource's.
func (b *Backend) GetHARule(ctx context.Context, id, uid string) (HARule, error) {
	r, err := b.readRule(ctx, "read", id)
	if err != nil {
		return HARule{}, err
	}
	m, why := ruleOwnedBy(r.Comment, uid)
	if why != notOursNone {
		return HARule{}, notOursRule("read", id, m, why)
	}
	out, err := ruleFrom(r, m)
	if err != nil {
		return HARule{}, ruleErr("read", id, pveapi.Permanent, "reading its nodes: %w", err)
	}
	return out, nil
}

// ImportHARule reads rule id for an import: only a rule carrying a proxy_ha_rule mark with a
// uid may be imported; its uid becomes the resource's.
func (b *Backend) ImportHARule(ctx context.Context, id string) (HARule, error) {
	r, err := b.readRule(ctx, "import", id)
	if err != nil {
		return HARule{}, err
	}
	m, why := ruleImportable(r.Comment)
	switch why {
	case notOursNone:
	case notOursUnmarked:
		e := ruleErr("import", id, pveapi.Permanent, "HA rule %q was not made by this provider (its comment carries no %s line), "+
			"and a proxy_ha_rule manages only rules it made; nothing was changed. Leave the rule to whoever made it, "+
			"or delete it in Proxmox and let this resource create its own", id, MarkKeyHARule)
		e.notOurs = true
		return HARule{}, e
	default:
		e := ruleErr("import", id, pveapi.Permanent, "HA rule %q carries a %s line without a uid, which names no resource; nothing was changed",
			id, MarkKeyHARule)
		e.notOurs = true
		return HARule{}, e
	}
	out, err := ruleFrom(r, m)
	if err != nil {
		return HARule{}, ruleErr("import", id, pveapi.Permanent, "reading its nodes: %w", err)
	}
	return out, nil
}

// CreateHARule creates rule s.ID with the mark of s.UID. A rule of that id already there is
// never changed: the create fails naming it, and says whether it carries a proxy_ha_rule mark
// (then it may be imported) or not.
func (b *Backend) CreateHARule(ctx context.Context, s HARuleSpec) error {
	if s.UID == "" {
		return ruleErr("create", s.ID, pveapi.Permanent, "no uid to mark the rule with; this is a provider bug")
	}
	r, err := b.readRule(ctx, "create", s.ID)
	switch {
	case err == nil:
		return ruleTaken(s.ID, r)
	case !errors.Is(err, ErrNotFound):
		return err
	}
	err = b.api.CreateHARule(ctx, ruleParams(s, nil, true))
	if pveapi.IsHARuleExists(err) {
		// Made by someone else between the read and the create.
		if r, rerr := b.readRule(ctx, "create", s.ID); rerr == nil {
			return ruleTaken(s.ID, r)
		}
		return ruleErr("create", s.ID, pveapi.Permanent, "HA rule %q already exists (made while this create ran); "+
			"nothing was changed. Choose another name", s.ID)
	}
	if err != nil {
		return ruleAPIErr("create", s.ID, err)
	}
	return nil
}

// ruleTaken is the refusal of a create whose id is taken by rule r.
func ruleTaken(id string, r pveapi.HARule) error {
	what := fmt.Sprintf("a %s rule on %s", r.Type, orNone(r.Resources))
	if m, why := ruleImportable(r.Comment); why == notOursNone {
		return ruleErr("create", id, pveapi.Permanent, "HA rule %q already exists (%s), made by a proxy_ha_rule of "+
			"uid %s that this state does not hold; "+
			"nothing was changed. If it is this configuration's (an apply interrupted before it saved the state), import it "+
			"(terraform import <address> %s); otherwise choose another name", id, what, m.UID, id)
	}
	return ruleErr("create", id, pveapi.Permanent, "HA rule %q already exists (%s) and was not made by this provider, "+
		"which never changes a rule it did not make; "+
		"nothing was changed. Choose another name, or delete that rule in Proxmox if it is no longer needed", id, what)
}

func orNone(s string) string {
	if s == "" {
		return "no resources"
	}
	return s
}

// UpdateHARule writes s to rule s.ID, which must carry the mark of s.UID: the read, the
// predicate, then the update with the digest read (a rule changed in between is refused
// by Proxmox rather than overwritten). Resources of the rule that are not VMs are kept.
//
// A rule gone by the time of the update is made again with the resource's uid: Proxmox
// deletes a rule whose VMs all left HA (a destroy's purge, pve-ha-manager
// src/PVE/HA/Config.pm:437-465), as when every VM of the rule is replaced in one apply.
func (b *Backend) UpdateHARule(ctx context.Context, s HARuleSpec) error {
	r, err := b.readRule(ctx, "update", s.ID)
	if errors.Is(err, ErrNotFound) {
		return b.CreateHARule(ctx, s)
	}
	if err != nil {
		return err
	}
	m, why := ruleOwnedBy(r.Comment, s.UID)
	if why != notOursNone {
		return notOursRule("update", s.ID, m, why)
	}
	if r.Type != s.Type {
		return ruleErr("update", s.ID, pveapi.Permanent, "HA rule %q is a %s rule, not %s; a rule's type cannot "+
			"change in place", s.ID, r.Type, s.Type)
	}
	cur, _ := ruleFrom(r, m)
	p := ruleParams(s, cur.OtherSIDs, false)
	p.Digest = r.Digest
	if err := b.api.UpdateHARule(ctx, p); err != nil {
		return ruleAPIErr("update", s.ID, err)
	}
	return nil
}

// DeleteHARule deletes rule id when it carries the mark of uid. A rule already gone is
// success; a rule the predicate refuses is left as it is, and the delete fails naming it.
func (b *Backend) DeleteHARule(ctx context.Context, id, uid string) error {
	r, err := b.readRule(ctx, "delete", id)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	m, why := ruleOwnedBy(r.Comment, uid)
	if why != notOursNone {
		return notOursRule("delete", id, m, why)
	}
	if err := b.api.DeleteHARule(ctx, id); err != nil {
		return ruleAPIErr("delete", id, err)
	}
	return nil
}
