package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The cluster resource manager (pve-ha-crm) and the local resource managers (pve-ha-lrm)
// as far as a proxy pair meets them, advanced lazily with the rest of the state:
//
//   - a request (an HA resource created or changed, qm start/stop/shutdown of an
//     HA-managed VM) is acted on one round later (Durations.HARound: the CRM and LRM loops
//     of 10 s, src/PVE/HA/CRM.pm:363, src/PVE/HA/LRM.pm:469): the LRM starts a VM whose
//     requested state is started and stops one whose requested state is stopped or disabled
//     (Manager.pm next_state_stopped, next_state_started; Resources/PVEVM.pm start, shutdown);
//   - a node down (SetNodeDown) for Durations.HAFenceDelay (60 s, src/PVE/HA/NodeStatus.pm:8,
//     node_is_offline_delayed) puts its services in "fence" (Manager.pm:1380-1383, 1307-1313);
//     fencing succeeds once the dead node's agent lock has expired, Durations.HALockTimeout
//     after the node went down (120 s, src/PVE/HA/Env/PVE2.pm:311 "hardcoded lock lifetime
//     limit from pmxcfs"; NodeStatus.pm fence_node, lines 254-277), the node's guests are
//     then off and each service goes to "recovery" (Manager.pm:1158-1172);
//   - recovery (Manager.pm next_state_recovery, lines 1607-1661) picks a node with
//     select_service_node 'best-score' (lines 315-383): online nodes the node-affinity rule
//     allows, its highest priority class, minus the nodes of negative resource-affinity
//     partners, the node of positive partners, fewest HA services first, then by name. It
//     moves the config there (Env/PVE2.pm steal_service: no volume moves) and the service
//     goes to "started" (or request_stop); with no node it stays in "recovery", logging
//     "recovering service '<sid>' from fenced node '<node>' failed, no recovery node found",
//     and is retried when a node comes back or the rules change;
//   - a start that fails (a volume the node lacks) is relocated to the next allowed node up
//     to max_relocate times, then the service enters "error" (Manager.pm:1468-1503; a
//     reconstruction that folds the max_restart retries on the same node into one try).
//
// The CRM acts only while the cluster is quorate (a 2-node cluster with one node down is
// not: HA needs a third vote). Reconstructions: the CRM's view is updated at the event
// times rather than on a 10 s tick; a node back before its fencing puts its "fence"
// services back to "started".

// haManaged is src/PVE/HA/Config.pm vm_is_ha_managed (lines 467-478): configured and not
// ignored (there is no disarm in the simulator).
func (s *Sim) haManaged(vmid int) *haResource {
	r := s.ha.resources["vm:"+strconv.Itoa(vmid)]
	if r == nil || r.reqState() == "ignored" {
		return nil
	}
	return r
}

func (r *haResource) maxRestartOr1() int {
	if r.maxRestart != nil {
		return *r.maxRestart
	}
	return 1 // src/PVE/HA/Resources.pm:74-82, Config.pm:121
}

func (r *haResource) maxRelocateOr1() int {
	if r.maxRelocate != nil {
		return *r.maxRelocate
	}
	return 1 // src/PVE/HA/Resources.pm:83-90, Config.pm:122
}

// haRequest makes the CRM and LRM act on r one round from now.
func (s *Sim) haRequest(r *haResource, now time.Time) {
	r.dueAt = now.Add(s.real(s.dur.HARound))
}

// haRulesChanged retries the recoveries that found no node.
func (s *Sim) haRulesChanged(now time.Time) {
	for _, r := range s.ha.resources {
		if r.crm == "recovery" {
			r.dueAt = now
		}
	}
}

// haNodeChange records a node going down or coming back (SetNodeDown).
func (s *Sim) haNodeChange(nodeName string, down bool, now time.Time) {
	if down {
		if _, ok := s.ha.nodeDownAt[nodeName]; !ok {
			s.ha.nodeDownAt[nodeName] = now
		}
		return
	}
	if _, ok := s.ha.nodeDownAt[nodeName]; !ok {
		return
	}
	delete(s.ha.nodeDownAt, nodeName)
	delete(s.ha.fenced, nodeName)
	for _, r := range s.ha.resources {
		switch {
		case r.crm == "recovery":
			r.dueAt = now
		case r.crm == "fence" && s.haNodeOf(r) == nodeName:
			// Back before its fencing (reconstruction): the services stay where they are.
			r.crm = "started"
			s.haRequest(r, now)
		case r.crm == "started":
			s.haRequest(r, now) // a node back may take it back (failback)
		}
	}
}

func (s *Sim) haNodeOf(r *haResource) string {
	if v := s.vms[r.vmid]; v != nil {
		return v.node
	}
	return ""
}

// haAdvance applies the CRM's events due by now, in time order. Called from advance.
func (s *Sim) haAdvance(now time.Time) {
	if len(s.ha.resources) == 0 && len(s.ha.nodeDownAt) == 0 {
		return
	}
	// A node marked down by an injected NodeDown fault rather than SetNodeDown is noticed
	// here; a node whose fault went away is back.
	for _, n := range s.nodeOrder {
		if _, known := s.ha.nodeDownAt[n]; s.nodeDown(n) != known {
			s.haNodeChange(n, !known, now)
		}
	}
	for i := 0; i < 1000; i++ {
		at, apply := s.nextHAEvent(now)
		if apply == nil {
			return
		}
		apply(at)
	}
}

// nextHAEvent is the earliest CRM event due by now and the function applying it.
func (s *Sim) nextHAEvent(now time.Time) (time.Time, func(time.Time)) {
	var best time.Time
	var apply func(time.Time)
	consider := func(at time.Time, f func(time.Time)) {
		if at.IsZero() || at.After(now) || (apply != nil && !at.Before(best)) {
			return
		}
		best, apply = at, f
	}
	if !s.quorate() {
		return best, nil
	}
	for _, n := range slices.Sorted(maps.Keys(s.ha.nodeDownAt)) {
		down := s.ha.nodeDownAt[n]
		fenceAt := down.Add(s.real(s.dur.HAFenceDelay))
		for _, sid := range slices.Sorted(maps.Keys(s.ha.resources)) {
			r := s.ha.resources[sid]
			if s.haNodeOf(r) != n || r.crm == "fence" || r.crm == "recovery" {
				continue
			}
			if req := r.reqState(); req == "started" || req == "stopped" {
				consider(fenceAt, func(at time.Time) { s.haSetState(r, "fence", at) })
			}
		}
		// Only a node with services to fence is fenced (Manager.pm:1158-1172): a node
		// without HA services has no armed watchdog and its guests are left alone.
		if !s.ha.fenced[n] && s.haHasFenced(n) {
			node := n
			consider(down.Add(s.real(s.dur.HALockTimeout)), func(at time.Time) { s.haFence(node, at) })
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(s.ha.resources)) {
		r := s.ha.resources[sid]
		if r.dueAt.IsZero() {
			continue
		}
		consider(r.dueAt, func(at time.Time) {
			r.dueAt = time.Time{}
			s.haAct(r, at)
		})
	}
	return best, apply
}

func (s *Sim) haSetState(r *haResource, state string, at time.Time) {
	old := r.crm
	if old == "" {
		old = "request_start"
	}
	if old == state {
		return
	}
	r.crm = state
	if state != "started" {
		r.running = false
	}
	// Manager.pm $change_service_state, lines 518-522.
	s.haLog(at, "info", "service '%s': state changed from '%s' to '%s'", r.sid, old, state)
}

func (s *Sim) haHasFenced(nodeName string) bool {
	for _, r := range s.ha.resources {
		if r.crm == "fence" && s.haNodeOf(r) == nodeName {
			return true
		}
	}
	return false
}

// haFence is the fencing of node acknowledged (NodeStatus.pm:267-274): its guests are off
// (the node was reset by its watchdog) and its fenced services go to recovery.
func (s *Sim) haFence(nodeName string, at time.Time) {
	s.ha.fenced[nodeName] = true
	s.haLog(at, "info", "fencing: acknowledged - got agent lock for node '%s'", nodeName)
	for _, v := range s.vms {
		if v.node == nodeName && v.status == "running" {
			s.powerOff(v)
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(s.ha.resources)) {
		r := s.ha.resources[sid]
		if r.crm == "fence" && s.haNodeOf(r) == nodeName {
			s.haSetState(r, "recovery", at)
			r.noNodeLogged = false
			r.dueAt = at
		}
	}
}

// haAct is one CRM and LRM round for r.
func (s *Sim) haAct(r *haResource, at time.Time) {
	v := s.vms[r.vmid]

	if v == nil || r.reqState() == "ignored" {
		return
	}
	if r.crm == "recovery" {
		s.haRecover(r, v, at)
		return
	}
	if s.nodeDown(v.node) {
		return // the fence events handle it
	}
	if r.migrateTo != "" && r.crm != "error" {
		s.haMigrate(r, v, at)
		s.haRequest(r, at)
		return
	}
	switch r.reqState() {
	case "started":
		if r.crm == "error" {
			return
		}
		if v.status == "running" {
			s.haSetState(r, "started", at)
			r.running = true
			// Manager.pm:1508-1540: a started service is moved when select_service_node
			// ('none') names another node: a node of higher priority back (failback).
			if target := s.haSelectNode(r, v.node, nil, true); target != "" && target != v.node {
				s.haLog(at, "info", "migrate service '%s' to node '%s' (running)", r.sid, target)
				s.haMoveRunning(r, v, target, at)
			}
			return
		}
		s.haStart(r, v, at)
	case "stopped", "disabled":
		if r.crm == "error" && r.reqState() != "disabled" {
			return
		}
		if v.status == "running" {
			s.powerOff(v)
			v.applyPending()
		}
		s.haSetState(r, "stopped", at)
		r.failedNodes = nil
	}
}

// haStart is the LRM's start (Resources/PVEVM.pm start calls vm_start as the HA
// environment, which skips the HA branch). A failure relocates, then errors.
func (s *Sim) haStart(r *haResource, v *vm, at time.Time) {
	if v.lock != "" || v.cloning() || v.flock != nil {
		r.dueAt = at.Add(s.real(s.dur.HARound)) // the LRM retries while a task holds the VM
		return
	}
	if vol := s.missingVolume(v); vol != "" || v.isTemplate() {
		// LRM.pm:879-891 after max_restart tries on the node (folded into one), then
		// Manager.pm:1468-1497: relocate while the failed nodes are at most max_relocate.
		s.haLog(at, "err", "unable to start service %s on local node after %d retries", r.sid, r.maxRestartOr1())
		r.failedNodes = append(r.failedNodes, v.node)
		if len(r.failedNodes) <= r.maxRelocateOr1() {
			s.haLog(at, "warning", "starting service %s on node '%s' failed, relocating service.", r.sid, v.node)
			if target := s.haSelectNode(r, v.node, r.failedNodes); target != "" && target != v.node {
				// Manager.pm:1534-1540: a VM is migrated (offline here: it is not running).
				s.haLog(at, "info", "migrate service '%s' to node '%s' (running)", r.sid, target)
				v.node = target
			}
			r.dueAt = at.Add(s.real(s.dur.HARound))
			return
		}
		s.haLog(at, "err", "recovery policy for service %s failed, entering error state. Failed nodes: %s", r.sid,
			strings.Join(r.failedNodes, ", "))
		s.haSetState(r, "error", at)
		return
	}
	v.applyPending()
	v.status, v.qmp = "running", "running"
	v.bootAt = at
	s.bootGuest(v, at)
	s.haSetState(r, "started", at)
	r.running = true
	r.failedNodes = nil
	if target := s.haSelectNode(r, v.node, nil, true); target != "" && target != v.node {
		s.haRequest(r, at) // the next round moves it (a node of higher priority is back)
	}
}

// haMigrate is a migrate command (qm migrate of an HA-managed VM, Manager.pm
// update_crm_commands lines 642-670 and queue_resource_motion lines 580-624).
func (s *Sim) haMigrate(r *haResource, v *vm, at time.Time) {
	target := r.migrateTo
	r.migrateTo = ""
	cmd := "migrate " + r.sid + " " + target
	switch {
	case s.nodeDown(target):
		s.haLog(at, "err", "crm command error - node not online: %s", cmd)
		return
	case target == v.node:
		s.haLog(at, "info", "ignore crm command - service already on target node: %s", cmd)
		return
	}
	for _, rule := range s.haCompiledRules() {
		if rule.typ != "resource-affinity" || rule.affinity != "negative" || !slices.Contains(rule.resources, r.sid) {
			continue
		}
		for _, other := range rule.resources {
			if o := s.ha.resources[other]; other != r.sid && o != nil && o.reqState() != "ignored" && s.haNodeOf(o) == target {
				s.haLog(at, "err", "crm command '%s' error - service '%s' on node '%s' in negative affinity with "+
					"service '%s'", cmd, other, target, r.sid)
				return
			}
		}
	}
	s.haLog(at, "info", "got crm command: %s", cmd)
	s.haMoveRunning(r, v, target, at)
}

// haMoveRunning is the LRM's migrate (Resources/PVEVM.pm migrate: migrate_vm with force
// and with-local-disks, online when running): a local CD-ROM image refuses it (the
// simulator's scan_local_volumes) and the service stays (Manager.pm:1249-1252).
func (s *Sim) haMoveRunning(r *haResource, v *vm, target string, at time.Time) {
	if _, refusals := s.localVolumes(v, v.status == "running", true); len(refusals) > 0 {
		s.haLog(at, "err", "service '%s' - migration failed (exit code 1)", r.sid)
		return
	}
	v.node = target
	state := r.crm
	if state == "" {
		state = "request_start"
	}
	s.haLog(at, "info", "service '%s': state changed from 'migrate' to '%s'  (node = %s)", r.sid, state, target)
}

// haRecover is Manager.pm next_state_recovery (lines 1607-1661).
func (s *Sim) haRecover(r *haResource, v *vm, at time.Time) {
	fenced := v.node
	target := s.haSelectNode(r, fenced, nil)
	if target == "" {
		if !r.noNodeLogged {
			s.haLog(at, "err", "recovering service '%s' from fenced node '%s' failed, no recovery node found", r.sid, fenced)
			r.noNodeLogged = true
		}
		if r.reqState() == "disabled" {
			s.haSetState(r, "stopped", at)
		}
		return
	}
	if target == fenced {
		s.haLog(at, "info", "recover service '%s' to previous failed and fenced node '%s' again", r.sid, fenced)
	} else {
		s.haLog(at, "info", "recover service '%s' from fenced node '%s' to node '%s'", r.sid, fenced, target)
	}
	// Env/PVE2.pm steal_service: the config file is renamed to the new node's directory.
	if v.status == "running" {
		s.powerOff(v)
	}
	v.node = target
	v.lock, v.lockUntil = "", time.Time{}
	if r.reqState() == "started" {
		s.haSetState(r, "started", at)
		r.running = false
		s.haRequest(r, at)
	} else {
		s.haSetState(r, "request_stop", at)
		s.haRequest(r, at)
	}
}

// haCompiledRules are the enabled rules the feasibility checks keep (Rules.pm transform,
// lines 440-468: an infeasible rule is dropped).
func (s *Sim) haCompiledRules() []*haRule {
	bad := s.haFeasibility(s.ha.rules)
	var out []*haRule
	for _, r := range s.sortedRules() {
		if !r.disable && len(bad[r.id]) == 0 {
			out = append(out, r)
		}
	}
	return out
}

// haSelectNode is Manager.pm select_service_node (lines 315-383) with 'best-score' (tried
// nil), 'try-next' (tried: the nodes a start failed on) or, with stay, 'none' (the CRM's
// check of a started service each round, which honours failback): "" when no node is
// allowed.
func (s *Sim) haSelectNode(r *haResource, current string, tried []string, stay ...bool) string {
	online := map[string]bool{}
	for _, n := range s.nodeOrder {
		if !s.nodeDown(n) {
			online[n] = true
		}
	}
	rules := s.haCompiledRules()
	allowed, pri := haNodeAffinity(rules, r.sid, online)
	if len(pri) == 0 {
		return ""
	}
	together, separate := s.haResourceAffinity(rules, r.sid, online)
	none := len(stay) > 0 && stay[0]
	failback := r.failback == nil || *r.failback
	// Lines 334-344: stay on the current node if possible (is_allowed_on_node, 544-548).
	if none && !failback && allowed[current] && (together[current] > 0 || !separate[current]) {
		return current
	}
	for _, n := range tried {
		delete(pri, n)
	}
	// apply_negative_resource_affinity, apply_positive_resource_affinity (lines 565-607).
	for n := range separate {
		delete(pri, n)
	}
	if majority := mostTogether(together, pri); majority != "" {
		pri = map[string]bool{majority: true}
	}
	if none && pri[current] {
		return current // line 359
	}
	return s.haLeastUsed(r, pri)
}

// haNodeAffinity is get_node_affinity (Rules/NodeAffinity.pm:268-290 over plugin_compile,
// 158-190): the online nodes the resource may run on, and those of the highest priority.
func haNodeAffinity(rules []*haRule, sid string, online map[string]bool) (allowed, pri map[string]bool) {
	allowed, pri = map[string]bool{}, map[string]bool{}
	var nodeRule *haRule
	for _, rule := range rules {
		if rule.typ == "node-affinity" && slices.Contains(rule.resources, sid) {
			nodeRule = rule
			break
		}
	}
	if nodeRule == nil {
		maps.Copy(allowed, online)
		maps.Copy(pri, online)
		return allowed, pri
	}
	eff := maps.Clone(nodeRule.nodes)
	if nodeRule.strict == nil || !*nodeRule.strict {
		for n := range online {
			if _, ok := eff[n]; !ok {
				eff[n] = -1
			}
		}
	}
	best, found := 0, false
	for n, p := range eff {
		if online[n] {
			allowed[n] = true
			if !found || p > best {
				best, found = p, true
			}
		}
	}
	for n, p := range eff {
		if online[n] && p == best {
			pri[n] = true
		}
	}
	return allowed, pri
}

// haResourceAffinity is get_resource_affinity (Rules/ResourceAffinity.pm:503-534): the
// online nodes of the positive partners (with their count) and of the negative ones.
func (s *Sim) haResourceAffinity(rules []*haRule, sid string, online map[string]bool) (together map[string]int, separate map[string]bool) {
	together, separate = map[string]int{}, map[string]bool{}
	for _, rule := range rules {
		if rule.typ != "resource-affinity" || !slices.Contains(rule.resources, sid) {
			continue
		}
		for _, other := range rule.resources {
			o := s.ha.resources[other]
			if other == sid || o == nil || o.reqState() == "ignored" {
				continue
			}
			n := s.haNodeOf(o)
			switch {
			case n == "" || !online[n]:
			case rule.affinity == "negative":
				separate[n] = true
			default:
				together[n]++
			}
		}
	}
	return together, separate
}

// mostTogether is apply_positive_resource_affinity's majority node among pri, or "".
func mostTogether(together map[string]int, pri map[string]bool) string {
	var cands []string
	for n := range together {
		if pri[n] {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return ""
	}
	sort.Slice(cands, func(i, j int) bool {
		if together[cands[i]] != together[cands[j]] {
			return together[cands[i]] > together[cands[j]]
		}
		return cands[i] < cands[j]
	})
	return cands[0]
}

// haLeastUsed is the scoring of Usage/Basic.pm: the node with the fewest HA services
// first, then by name; "" for none.
func (s *Sim) haLeastUsed(r *haResource, pri map[string]bool) string {
	if len(pri) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, o := range s.ha.resources {
		if o != r {
			count[s.haNodeOf(o)]++
		}
	}
	nodes := slices.Collect(maps.Keys(pri))
	sort.Slice(nodes, func(i, j int) bool {
		if count[nodes[i]] != count[nodes[j]] {
			return count[nodes[i]] < count[nodes[j]]
		}
		return nodes[i] < nodes[j]
	})
	return nodes[0]
}

// haVerboseState is src/PVE/HA/Tools.pm get_verbose_service_state (lines 216-252).
func (s *Sim) haVerboseState(r *haResource) string {
	req := r.reqState()
	switch {
	case req == "ignored":
		return "ignored"
	case s.vms[r.vmid] == nil:
		return "not found"
	case r.crm == "":
		return "queued"
	}
	state := r.crm
	switch r.crm {
	case "stopped":
		switch req {
		case "started":
			state = "starting"
		case "disabled":
			state = "disabled"
		}
	case "started":
		if req == "stopped" || req == "disabled" {
			state = "stopping"
		}
		if !r.running {
			state = "starting"
		}
	case "error":
		if req == "disabled" {
			state = "clearing error flag"
		}
	}
	return state
}

// hHAStatus is src/PVE/API2/HA/Status.pm status (lines 166-358): quorum, master, fencing,
// one lrm entry per node, one service entry per HA resource. Timestamps are the simulated
// clock's; an LRM of a node down reads "old timestamp - dead?" (lines 20-31).
func (s *Sim) hHAStatus(c *call) *response {
	local := s.nodeOrder[0]
	for _, n := range s.nodeOrder {
		if !s.nodeDown(n) {
			local = n
			break
		}
	}
	quorate := s.quorate()
	quorum := map[string]any{"id": "quorum", "type": "quorum", "node": local, "quorate": boolInt(quorate), "status": "OK"}
	if !quorate {
		quorum["status"] = fmt.Sprintf("No quorum on node '%s'!", local)
	}
	out := []map[string]any{quorum}
	ts := c.now.Unix()
	stamp := c.now.Format("Mon Jan _2 15:04:05 2006")
	if len(s.ha.resources) > 0 {
		crm := "active"
		if !quorate {
			crm = "old timestamp - dead?"
		}
		out = append(out,
			map[string]any{"id": "master", "type": "master", "node": local, "status": fmt.Sprintf("%s (%s, %s)",
				local, crm, stamp), "timestamp": ts},
			map[string]any{"id": "fencing", "type": "fencing", "node": local, "status": "armed (CRM watchdog active)", "armed-state": "armed"})
		for _, n := range s.nodeOrder {
			active := 0
			for _, r := range s.ha.resources {
				if s.haNodeOf(r) == n && r.crm != "" && r.crm != "stopped" {
					active++
				}
			}
			status := fmt.Sprintf("%s (idle, watchdog standby, %s)", n, stamp)
			switch {
			case s.nodeDown(n):
				status = fmt.Sprintf("%s (old timestamp - dead?, watchdog standby, %s)", n, stamp)
			case active > 0:
				status = fmt.Sprintf("%s (active, watchdog active, %s)", n, stamp)
			}
			out = append(out, map[string]any{"id": "lrm:" + n, "type": "lrm", "node": n, "status": status, "timestamp": ts})
		}
	}
	for sid, d := range s.ha.deleting {
		if !d.until.After(c.now) {
			delete(s.ha.deleting, sid)
		}
	}
	for _, sid := range slices.Sorted(maps.Keys(s.ha.deleting)) {
		// Status.pm:309-331 for a service with a manager status and no config: state
		// "deleting" (Tools.pm:219), no request_state.
		d := s.ha.deleting[sid]
		out = append(out, map[string]any{"id": "service:" + sid, "type": "service", "sid": sid, "node": d.node,
			"crm_state": d.crm, "state": "deleting", "status": fmt.Sprintf("%s (%s, deleting)", sid, d.node)})
	}
	for _, sid := range slices.Sorted(maps.Keys(s.ha.resources)) {
		out = append(out, s.haServiceEntry(sid, s.ha.resources[sid]))
	}
	return okData(out)
}

// haServiceEntry is the status entry of the HA resource r (a service of Status.pm status):
// its request state, node, CRM state, verbose state and the options it sets.
func (s *Sim) haServiceEntry(sid string, r *haResource) map[string]any {
	node := s.haNodeOf(r)
	e := map[string]any{"id": "service:" + sid, "type": "service", "sid": sid, "request_state": r.reqState()}
	if r.state != "" {
		e["request_state"] = r.state
	}
	if node != "" {
		e["node"] = node
	}
	if r.crm != "" {
		e["crm_state"] = r.crm
	}
	state := s.haVerboseState(r)
	e["state"] = state
	shown := node
	if shown == "" {
		shown = "---"
	}
	e["status"] = fmt.Sprintf("%s (%s, %s)", sid, shown, state)
	if r.maxRestart != nil {
		e["max_restart"] = *r.maxRestart
	}
	if r.maxRelocate != nil {
		e["max_relocate"] = *r.maxRelocate
	}
	if r.failback != nil {
		e["failback"] = boolInt(*r.failback)
	}
	if r.comment != "" {
		e["comment"] = r.comment
	}
	return e
}

// haPowerTask answers qm start, stop and shutdown of an HA-managed VM (qemu-server
// src/PVE/API2/Qemu.pm vm_start lines 3631-3642: task hastart running "ha-manager set
// vm:<vmid> --state started"; vm_stop lines 3750-3768 and vm_shutdown lines 3932-3945:
// task hastop running "ha-manager crm-command stop vm:<vmid> <timeout>", which the CRM
// turns into request_stop and state stopped in ha/resources.cfg, Manager.pm:1422-1438).
// The task ends at once; the VM starts or stops one HA round later.
func (s *Sim) haPowerTask(c *call, r *haResource, typ, state string) *response {
	t := s.newTask(c, c.node, typ, strconv.Itoa(c.vmid), 0, false, 0)
	t.begin = func(at time.Time) string {
		if s.ha.resources[r.sid] != r {
			return ""
		}
		// check_service_state (API2/HA/Resources.pm:37-51), through ha-manager set.
		if state == "started" && r.crm == "error" {
			return fmt.Sprintf("service '%s' in error state, must be disabled and fixed first", r.sid)
		}
		r.state = state
		s.haRequest(r, at)
		return ""
	}
	t.finish = func(at time.Time) string { return "" }
	s.submitTask(t, c.now)
	return okData(t.upid)
}

// haDestroyRefusal is qemu-server src/PVE/API2/Qemu.pm destroy_vm $early_checks (lines
// 2831-2836): a VM configured in HA (ignored or not, service_is_configured) is not
// destroyed without purge.
func (s *Sim) haDestroyRefusal(c *call, vmid int) *response {
	if s.ha.resources["vm:"+strconv.Itoa(vmid)] != nil && c.params["purge"] != "1" {
		return apiError(500, fmt.Sprintf("unable to remove VM %d - used in HA resources and purge parameter not set.", vmid))
	}
	return nil
}

// haDestroyPurge is destroy_vm's purge branch (lines 2874-2885): the VM leaves HA and,
// purge being set, every rule.
func (s *Sim) haDestroyPurge(vmid int, purge bool, at time.Time) {
	sid := "vm:" + strconv.Itoa(vmid)
	if purge && s.ha.resources[sid] != nil {
		s.deleteHAService(sid, true, at)
	}
}

// haMigrateTask answers qm migrate of an HA-managed VM (qemu-server src/PVE/API2/Qemu.pm
// migrate_vm lines 5639-5651: task hamigrate running "ha-manager migrate vm:<vmid>
// <target>"); the CRM acts on it one round later.
func (s *Sim) haMigrateTask(c *call, r *haResource, target string) *response {
	t := s.newTask(c, c.node, "hamigrate", strconv.Itoa(c.vmid), 0, false, 0)
	t.begin = func(at time.Time) string {
		if s.ha.resources[r.sid] == r {
			r.migrateTo = target
			s.haRequest(r, at)
		}
		return ""
	}
	t.finish = func(at time.Time) string { return "" }
	s.submitTask(t, c.now)
	return okData(t.upid)
}

// haServiceStatus is the "ha" object of GET .../status/current (qemu-server
// src/PVE/API2/Qemu.pm:3478, pve-ha-manager src/PVE/HA/Config.pm get_service_status lines
// 492-507): managed 1 and the CRM's state for an HA-managed VM (not ignored), managed 0
// otherwise. It needs only VM.Audit on the VM, so a pool-scoped token sees it.
func (s *Sim) haServiceStatus(vmid int) map[string]any {
	r := s.haManaged(vmid)
	if r == nil {
		return map[string]any{"managed": 0}
	}
	out := map[string]any{"managed": 1}
	if r.crm != "" {
		out["state"] = r.crm
	}
	return out
}
