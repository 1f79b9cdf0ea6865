package pvesim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// HA inspection and set-up for tests (inspect.go's style): what ha/resources.cfg,
// ha/rules.cfg and the CRM hold, the CRM's log, and HA resources and rules made out of band
// (as an admin would, for the ownership tests: a rule the provider did not make).

// HAResourceState is one HA resource: its configured properties (State "" and nil pointers:
// unset, Proxmox's defaults apply) and the CRM's view of it.
type HAResourceState struct {
	SID         string `json:"sid"`
	VMID        int    `json:"vmid"`
	State       string `json:"state,omitempty"`
	MaxRestart  *int   `json:"max_restart,omitempty"`
	MaxRelocate *int   `json:"max_relocate,omitempty"`
	Failback    *bool  `json:"failback,omitempty"`
	Comment     string `json:"comment,omitempty"`
	// CRMState is the manager's service state: "" (queued), started, stopped,
	// request_stop, fence, recovery, error.
	CRMState string `json:"crm_state,omitempty"`
	// Node is the VM's node now ("" when the VM is gone).
	Node string `json:"node,omitempty"`
}

// HARuleState is one HA rule as ha/rules.cfg holds it.
type HARuleState struct {
	ID        string         `json:"rule"`
	Type      string         `json:"type"`
	Resources []string       `json:"resources"`
	Affinity  string         `json:"affinity,omitempty"`
	Nodes     map[string]int `json:"nodes,omitempty"`
	Strict    bool           `json:"strict,omitempty"`
	Disable   bool           `json:"disable,omitempty"`
	Comment   string         `json:"comment,omitempty"`
}

func (s *Sim) haResourceState(r *haResource) HAResourceState {
	return HAResourceState{SID: r.sid, VMID: r.vmid, State: r.state, MaxRestart: r.maxRestart, MaxRelocate: r.maxRelocate,
		Failback: r.failback, Comment: r.comment, CRMState: r.crm, Node: s.haNodeOf(r)}
}

// HAResourceOf returns the HA resource of a VM (sid vm:<vmid>).
func (s *Sim) HAResourceOf(vmid int) (HAResourceState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	r := s.ha.resources["vm:"+strconv.Itoa(vmid)]
	if r == nil {
		return HAResourceState{}, false
	}
	return s.haResourceState(r), true
}

// HAResources returns every HA resource, by SID.
func (s *Sim) HAResources() []HAResourceState {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	out := []HAResourceState{}
	for _, sid := range slices.Sorted(maps.Keys(s.ha.resources)) {
		out = append(out, s.haResourceState(s.ha.resources[sid]))
	}
	return out
}

// HARules returns every HA rule, in the rules' order.
func (s *Sim) HARules() []HARuleState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []HARuleState{}
	for _, r := range s.sortedRules() {
		out = append(out, HARuleState{ID: r.id, Type: r.typ, Resources: slices.Clone(r.resources), Affinity: r.affinity,
			Nodes: maps.Clone(r.nodes), Strict: r.strict != nil && *r.strict, Disable: r.disable, Comment: r.comment})
	}
	return out
}

// HALog returns the CRM's log so far: state changes, fencing, recoveries and their failures.
func (s *Sim) HALog() []HAEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(time.Now())
	return slices.Clone(s.ha.log)
}

// AddHAResource makes a VM an HA resource out of band (state "" is started), without the
// API's checks but the VM's existence.
func (s *Sim) AddHAResource(vmid int, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advance(now)
	sid := "vm:" + strconv.Itoa(vmid)
	if v := s.vms[vmid]; v == nil || v.typ != "qemu" {
		return fmt.Errorf("pvesim: no VM %d", vmid)
	}
	if s.ha.resources[sid] != nil {
		return fmt.Errorf("pvesim: %s is an HA resource already", sid)
	}
	r := &haResource{sid: sid, vmid: vmid, state: state}
	s.ha.resources[sid] = r
	delete(s.ha.deleting, sid)
	s.haRequest(r, now)
	return nil
}

// AddHARule writes a rule out of band, as an admin would; resources must be HA resources.
func (s *Sim) AddHARule(r HARuleState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.advance(now)
	if _, ok := haRuleOptions[r.Type]; !ok || r.ID == "" {
		return errors.New("pvesim: a rule needs an id and a type node-affinity or resource-affinity")
	}
	if s.ha.rules[r.ID] != nil {
		return fmt.Errorf("pvesim: rule %q exists", r.ID)
	}
	rule := &haRule{id: r.ID, typ: r.Type, affinity: r.Affinity, nodes: maps.Clone(r.Nodes), disable: r.Disable, comment: r.Comment}
	rule.resources = slices.Sorted(slices.Values(r.Resources))
	if r.Strict {
		rule.strict = &r.Strict
	}
	if err := s.assertRuleRefs(rule, true, true); err != nil {
		return fmt.Errorf("pvesim: %w", err)
	}
	rule.order = s.nextRuleOrdinal()
	s.ha.rules[r.ID] = rule
	s.haRulesChanged(now)
	return nil
}
