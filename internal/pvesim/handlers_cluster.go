package pvesim

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// PVE version the simulator claims (the recon host's, docs/design/facts.md).
const (
	pveVersion = "9.2.20"
	pveRelease = "9.2"
	pveRepoID  = "49318c671b82f31e"
	kversion   = "Linux 7.0.14-17-pve #1 SMP PREEMPT_DYNAMIC PMX 7.0.14-17 (2026-09-01T10:00Z) x86_64"
)

func (s *Sim) hVersion(c *call) *response {
	return okData(map[string]any{"version": pveVersion, "release": pveRelease, "repoid": pveRepoID})
}

func (s *Sim) nodeEntry(n string, c *call) map[string]any {
	nd := s.nodes[n]
	e := map[string]any{"id": "node/" + n, "node": n, "type": "node", "level": ""}
	if s.nodeDown(n) {
		e["status"] = "offline"
		return e
	}
	e["status"] = "online"
	e["maxcpu"] = 16
	e["maxmem"] = int64(64 << 30)
	e["mem"] = int64(9 << 30)
	e["maxdisk"] = int64(100 << 30)
	e["disk"] = int64(12 << 30)
	e["cpu"] = 0.031
	e["uptime"] = int64(s.simSince(nd.bootTime, c.now).Seconds())
	e["cgroup-mode"] = 2
	return e
}

func (s *Sim) hNodes(c *call) *response {
	out := []map[string]any{}
	for _, n := range s.nodeOrder {
		out = append(out, s.nodeEntry(n, c))
	}
	return okData(out)
}

func (s *Sim) hNodeStatus(c *call) *response {
	nd := s.nodes[c.node]
	const total, used = int64(64 << 30), int64(9 << 30)
	return okData(map[string]any{
		"kversion":   kversion,
		"pveversion": "pve-manager/" + pveVersion + "/" + pveRepoID,
		"uptime":     int64(s.simSince(nd.bootTime, c.now).Seconds()),
		"cpu":        0.0312,
		"wait":       0.0004,
		"idle":       0,
		"loadavg":    []string{"0.21", "0.18", "0.12"},
		"memory":     map[string]any{"total": total, "used": used, "free": total - used, "available": total - used - (2 << 30)},
		"swap":       map[string]any{"total": int64(8 << 30), "used": 0, "free": int64(8 << 30)},
		"rootfs":     map[string]any{"total": int64(100 << 30), "used": int64(12 << 30), "free": int64(88 << 30), "avail": int64(83 << 30)},
		"ksm":        map[string]any{"shared": 0},
		"cpuinfo": map[string]any{
			"cpus": 16, "cores": 8, "sockets": 1, "model": "AMD Ryzen 7 5700G with Radeon Graphics",
			"mhz": "3800.000", "hvm": "1", "user_hz": 100, "flags": "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge",
		},
		"boot-info": map[string]any{"mode": "efi", "secureboot": 0},
		"current-kernel": map[string]any{"sysname": "Linux", "release": "7.0.14-17-pve", "machine": "x86_64",
			"version": "#1 SMP PREEMPT_DYNAMIC PMX 7.0.14-17 (2026-09-01T10:00Z)"},
	})
}

func (s *Sim) hResources(c *call) *response {
	typ := c.params["type"]
	out := []map[string]any{}
	// pve-manager PVE/API2/Cluster.pm resources: a pool is listed with Pool.Audit on it, a
	// guest with VM.Audit on /vms/<vmid> (its pool's roles included), its pool field only
	// with Pool.Audit on that pool; a storage with Datastore.Audit on /storage/<id>.
	if typ == "" {
		for _, p := range slices.Sorted(maps.Keys(s.access.pools)) {
			if c.can("/pool/"+p, "Pool.Audit") {
				out = append(out, map[string]any{"id": "/pool/" + p, "pool": p, "type": "pool"})
			}
		}
	}
	if typ == "" || typ == "vm" {
		for _, id := range slices.Sorted(maps.Keys(s.vms)) {
			if !c.can("/vms/"+strconv.Itoa(id), "VM.Audit") {
				continue
			}
			e := s.vmEntry(s.vms[id], c)
			if p := s.access.vmPool[id]; p != "" && c.can("/pool/"+p, "Pool.Audit") {
				e["pool"] = p
			}
			out = append(out, e)
		}
	}
	if typ == "" || typ == "node" {
		for _, n := range s.nodeOrder {
			out = append(out, s.nodeEntry(n, c))
		}
	}
	if typ == "" || typ == "storage" {
		for _, n := range s.nodeOrder {
			for _, id := range slices.Sorted(maps.Keys(s.storages)) {
				st := s.storages[id]
				if !c.can("/storage/"+id, "Datastore.Audit") {
					continue
				}
				e := map[string]any{
					"id": "storage/" + n + "/" + id, "storage": id, "node": n, "type": "storage",
					"plugintype": st.typ, "content": strings.Join(st.content, ","), "shared": b2i(st.shared),
					"status": "available", "maxdisk": st.total, "disk": s.storageUsed(n, st),
				}
				if s.nodeDown(n) {
					e["status"] = "unknown"
				}
				out = append(out, e)
			}
		}
	}
	if typ == "" || typ == "sdn" {
		for _, n := range s.nodeOrder {
			status := "ok"
			if s.nodeDown(n) {
				status = "unknown"
			}
			out = append(out, map[string]any{"id": "sdn/" + n + "/localnetwork", "sdn": "localnetwork", "node": n, "type": "sdn", "status": status})
		}
	}
	return okData(out)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Sim) hNextID(c *call) *response {
	if v, ok := c.params["vmid"]; ok {
		id, _ := strconv.Atoi(v)
		if _, taken := s.vms[id]; taken {
			return paramError(map[string]string{"vmid": "VM " + v + " already exists"})
		}
		return okData(v)
	}
	for id := 100; ; id++ {
		if _, taken := s.vms[id]; !taken {
			return okData(strconv.Itoa(id))
		}
	}
}

func (s *Sim) lookupTask(c *call) (*task, *response) {
	upid := c.vars["upid"]
	m := upidRe.FindStringSubmatch(upid)
	if m == nil {
		return nil, paramError(map[string]string{"upid": "unable to parse worker upid"})
	}
	t := s.tasks[upid]
	if t == nil || m[1] != c.node {
		return nil, paramError(map[string]string{"upid": "no such task"})
	}
	return t, nil
}

func (s *Sim) hTaskStatus(c *call) *response {
	t, r := s.lookupTask(c)
	if r != nil {
		return r
	}
	if err := c.checkTaskUser(t); err != nil {
		return errResponse(err)
	}
	return okData(s.taskStatus(t))
}

func (s *Sim) hTaskLog(c *call) *response {
	t, r := s.lookupTask(c)
	if r != nil {
		return r
	}
	if err := c.checkTaskUser(t); err != nil {
		return errResponse(err)
	}
	out := []map[string]any{}
	for i, l := range t.log {
		out = append(out, map[string]any{"n": i + 1, "t": l})
	}
	return okData(out)
}

// checkTaskUser is pve-manager PVE/API2/Tasks.pm $check_task_user (taskOwnedBy): a token
// sees its own tasks; another task needs Sys.Audit on the task's node (read_task_status,
// read_task_log).
func (c *call) checkTaskUser(t *task) error {
	if t.authid == c.authid || taskOwnedBy(t.user, t.tokenid, c.authid) {
		return nil
	}
	return c.check("/nodes/"+c.node, "Sys.Audit")
}

// nodeIP is the address a node's corosync link would have.
func (s *Sim) nodeIP(n string) string {
	return "192.168.0." + strconv.Itoa(10+slices.Index(s.nodeOrder, n))
}

// hClusterStatus is pve-manager PVE/API2/Cluster.pm get_status: on a cluster a "cluster"
// entry (nodes, version, name, quorate) and one "node" entry per member (id, name,
// nodeid, local, online, ip, level); a single node without a cluster gets the fake local
// entry with nodeid 0.
func (s *Sim) hClusterStatus(c *call) *response {
	out := []map[string]any{}
	if len(s.nodeOrder) == 1 {
		n := s.nodeOrder[0]
		return okData(append(out, map[string]any{
			"type": "node", "id": "node/" + n, "name": n, "ip": s.nodeIP(n), "local": 1,
			"nodeid": 0, "online": 1, "level": "",
		}))
	}
	online := 0
	for _, n := range s.nodeOrder {
		if !s.nodeDown(n) {
			online++
		}
	}
	out = append(out, map[string]any{
		"type": "cluster", "id": "cluster", "nodes": len(s.nodeOrder), "version": len(s.nodeOrder),
		"name": "pvesim", "quorate": b2i(online*2 > len(s.nodeOrder)),
	})
	for i, n := range s.nodeOrder {
		e := map[string]any{
			"type": "node", "id": "node/" + n, "name": n, "nodeid": i + 1, "local": b2i(i == 0),
			"online": b2i(!s.nodeDown(n)), "ip": s.nodeIP(n),
		}
		if !s.nodeDown(n) {
			e["level"] = ""
		}
		out = append(out, e)
	}
	return okData(out)
}

// hNodeVersion is pve-manager PVE/API2/Nodes.pm version: PVE::pvecfg::version_info.
func (s *Sim) hNodeVersion(c *call) *response {
	return okData(map[string]any{"version": pveVersion, "release": pveRelease, "repoid": pveRepoID})
}

// hClusterTasks is pve-manager PVE/API2/Cluster.pm tasks: the cluster-wide recent task
// list (pvestatd broadcasts each node's), the token user split into user and tokenid.
func (s *Sim) hClusterTasks(c *call) *response {
	out := []map[string]any{}
	for i := len(s.taskList) - 1; i >= 0 && len(out) < 50; i-- {
		t := s.taskList[i]
		e := map[string]any{
			"upid": t.upid, "node": t.node, "pid": t.pid, "pstart": t.pstart, "starttime": t.submitted.Unix(),
			"type": t.typ, "id": t.id, "user": t.user, "tokenid": t.tokenid,
		}
		if t.done {
			e["status"] = t.exit
			e["endtime"] = t.endAt.Unix()
		}
		out = append(out, e)
	}
	return okData(out)
}
