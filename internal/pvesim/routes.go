package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

const uploadTmpl = "/nodes/{node}/storage/{storage}/upload"

var routes []*route

func vmPriv(priv string) func(c *call) []Privilege {
	return func(c *call) []Privilege { return []Privilege{{"/vms/" + c.vars["vmid"], priv}} }
}

func storagePriv(priv string) func(c *call) []Privilege {
	return func(c *call) []Privilege { return []Privilege{{"/storage/" + c.vars["storage"], priv}} }
}

func driveKeys() []string {
	var out []string
	for i := 0; i <= 3; i++ {
		out = append(out, fmt.Sprintf("ide%d", i))
	}
	for i := 0; i <= 30; i++ {
		out = append(out, fmt.Sprintf("scsi%d", i))
	}
	for i := 0; i <= 15; i++ {
		out = append(out, fmt.Sprintf("virtio%d", i))
	}
	for i := 0; i <= 5; i++ {
		out = append(out, fmt.Sprintf("sata%d", i))
	}
	return append(out, "efidisk0", "tpmstate0")
}

func fixed(m map[string]pspec) *schema { return &schema{fixed: m} }

func init() {
	add := func(method, tmpl string, sc *schema, perms func(c *call) []Privilege, h handlerFunc) {
		if sc == nil {
			sc = fixed(nil)
		}
		routes = append(routes, &route{method: method, tmpl: tmpl, segs: strings.Split(strings.TrimPrefix(tmpl, "/"), "/"), schema: sc, perms: perms, h: h})
	}
	add("GET", "/version", nil, nil, (*Sim).hVersion)
	add("GET", "/nodes", nil, nil, (*Sim).hNodes)
	add("GET", "/nodes/{node}/status", nil, func(c *call) []Privilege { return []Privilege{{"/nodes/" + c.node, "Sys.Audit"}} }, (*Sim).hNodeStatus)
	add("GET", "/cluster/resources", fixed(map[string]pspec{"type": {optional: true, enum: []string{"vm", "storage", "node", "sdn"}}}), nil, (*Sim).hResources)
	add("GET", "/cluster/nextid", fixed(map[string]pspec{"vmid": optional(pVMID)}), nil, (*Sim).hNextID)
	add("GET", "/nodes/{node}/tasks/{upid}/status", nil, nil, (*Sim).hTaskStatus)
	add("GET", "/nodes/{node}/tasks/{upid}/log", fixed(map[string]pspec{"start": {typ: tInt, optional: true, min: i64(0)}, "limit": {typ: tInt, optional: true, min: i64(0)}, "download": pBool}), nil, (*Sim).hTaskLog)

	add("GET", "/nodes/{node}/storage", fixed(map[string]pspec{"content": pStr, "enabled": pBool, "format": pBool, "storage": optional(pStorage), "target": pStr}), nil, (*Sim).hStorageList)
	add("GET", "/nodes/{node}/storage/{storage}/status", nil, storagePriv("Datastore.Audit"), (*Sim).hStorageStatus)
	add("GET", "/nodes/{node}/storage/{storage}/content", fixed(map[string]pspec{"content": pStr, "vmid": optional(pVMID)}), storagePriv("Datastore.Audit"), (*Sim).hStorageContent)
	add("POST", uploadTmpl, fixed(map[string]pspec{
		"content": {}, "filename": {maxLen: 255}, "checksum": pStr, "tmpfilename": pStr,
		"checksum-algorithm": {optional: true, enum: []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}},
	}), storagePriv("Datastore.AllocateTemplate"), (*Sim).hUpload)
	add("GET", "/nodes/{node}/storage/{storage}/content/{volume}", nil, storagePriv("Datastore.Audit"), (*Sim).hVolumeInfo)
	add("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}", fixed(map[string]pspec{"delay": {typ: tInt, optional: true, min: i64(1), max: i64(30)}}), storagePriv("Datastore.Allocate"), (*Sim).hVolumeDelete)

	add("GET", "/nodes/{node}/qemu", fixed(map[string]pspec{"full": pBool}), nil, (*Sim).hQemuList)
	add("GET", "/nodes/{node}/qemu/{vmid}/config", fixed(map[string]pspec{"current": pBool, "snapshot": pStr}), vmPriv("VM.Audit"), (*Sim).hConfigGet)
	add("PUT", "/nodes/{node}/qemu/{vmid}/config", configSchema, configPrivs, (*Sim).hConfigPut)
	add("POST", "/nodes/{node}/qemu/{vmid}/config", configSchema, configPrivs, (*Sim).hConfigPost)
	add("POST", "/nodes/{node}/qemu/{vmid}/clone", fixed(map[string]pspec{
		"newid": pVMID, "name": {optional: true, format: fmtDNSName}, "description": pStr, "full": pBool,
		"storage": optional(pStorage), "target": {optional: true, format: fmtNode},
		"format": {optional: true, enum: []string{"raw", "qcow2", "vmdk"}}, "pool": pStr, "snapname": pStr,
		"bwlimit": {typ: tInt, optional: true, min: i64(0)},
	}), clonePrivs, (*Sim).hClone)
	add("PUT", "/nodes/{node}/qemu/{vmid}/resize", fixed(map[string]pspec{
		"disk": {enum: driveKeys()}, "size": {format: fmtSize}, "digest": {optional: true, maxLen: 64}, "skiplock": pBool,
	}), vmPriv("VM.Config.Disk"), (*Sim).hResize)
	add("GET", "/nodes/{node}/qemu/{vmid}/status/current", nil, vmPriv("VM.Audit"), (*Sim).hStatusCurrent)
	add("POST", "/nodes/{node}/qemu/{vmid}/status/start", fixed(map[string]pspec{
		"skiplock": pBool, "timeout": {typ: tInt, optional: true, min: i64(0), max: i64(86400)}, "machine": pStr,
		"migratedfrom": {optional: true, format: fmtNode}, "stateuri": pStr, "targetstorage": pStr, "force-cpu": pStr,
	}), vmPriv("VM.PowerMgmt"), (*Sim).hStart)
	add("POST", "/nodes/{node}/qemu/{vmid}/status/stop", fixed(map[string]pspec{
		"skiplock": pBool, "timeout": {typ: tInt, optional: true, min: i64(0)}, "keepActive": pBool,
		"overrule-shutdown": pBool, "migratedfrom": {optional: true, format: fmtNode},
	}), vmPriv("VM.PowerMgmt"), (*Sim).hStop)
	add("POST", "/nodes/{node}/qemu/{vmid}/status/suspend", fixed(map[string]pspec{
		"todisk": pBool, "skiplock": pBool, "statestorage": optional(pStorage),
	}), vmPriv("VM.PowerMgmt"), (*Sim).hSuspend)
	add("POST", "/nodes/{node}/qemu/{vmid}/status/resume", fixed(map[string]pspec{"skiplock": pBool, "nocheck": pBool}), vmPriv("VM.PowerMgmt"), (*Sim).hResume)
	add("DELETE", "/nodes/{node}/qemu/{vmid}", fixed(map[string]pspec{"purge": pBool, "destroy-unreferenced-disks": pBool, "skiplock": pBool}), vmPriv("VM.Allocate"), (*Sim).hDestroy)
	add("GET", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", nil, agentPriv, (*Sim).hAgentNetwork)
	add("GET", "/nodes/{node}/qemu/{vmid}/agent/get-osinfo", nil, agentPriv, (*Sim).hAgentOSInfo)
	add("GET", "/nodes/{node}/qemu/{vmid}/agent/get-host-name", nil, agentPriv, (*Sim).hAgentHostName)
	add("POST", "/nodes/{node}/qemu/{vmid}/status/shutdown", fixed(map[string]pspec{
		"skiplock": pBool, "timeout": {typ: tInt, optional: true, min: i64(0)}, "forceStop": pBool, "keepActive": pBool,
	}), vmPriv("VM.PowerMgmt"), (*Sim).hShutdown)
	add("GET", "/cluster/status", nil, func(c *call) []Privilege { return []Privilege{{"/", "Sys.Audit"}} }, (*Sim).hClusterStatus)
	add("GET", "/cluster/tasks", nil, nil, (*Sim).hClusterTasks)
	add("GET", "/nodes/{node}/version", nil, nil, (*Sim).hNodeVersion)
	add("GET", "/pools", fixed(map[string]pspec{"poolid": pStr, "type": {optional: true, enum: []string{"qemu", "lxc", "storage"}}}), nil, (*Sim).hPools)
}

func configPrivs(c *call) []Privilege {
	path := "/vms/" + c.vars["vmid"]
	seen := map[string]bool{}
	var out []Privilege
	addp := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, Privilege{path, p})
		}
	}
	for k, v := range c.params {
		switch {
		case k == "cores" || k == "sockets" || k == "vcpus" || k == "cpu" || k == "cpulimit" || k == "cpuunits" || k == "numa":
			addp("VM.Config.CPU")
		case k == "memory" || k == "balloon" || k == "shares":
			addp("VM.Config.Memory")
		case netKeyRe.MatchString(k):
			addp("VM.Config.Network")
			out = append(out, bridgePrivs(v)...)
		case driveKeyRe.MatchString(k):
			if isCDROM(v) {
				addp("VM.Config.CDROM")
			} else {
				addp("VM.Config.Disk")
			}
		case k == "delete" || k == "digest" || k == "skiplock" || k == "background_delay" || k == "revert" || k == "force":
		default:
			addp("VM.Config.Options")
		}
	}
	return out
}

// agentPriv: an agent command accepts its own privilege or VM.GuestAgent.Unrestricted
// (qemu-server src/PVE/API2/Qemu/Agent.pm register_command, line 184: any => 1).
func agentPriv(c *call) []Privilege {
	return []Privilege{{"/vms/" + c.vars["vmid"], "VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted"}}
}

// bridgePrivs is pve-guest-common src/PVE/GuestHelpers.pm check_vnet_access (lines
// 397-421): SDN.Use on the VLAN of the bridge when a tag is set (a grant on the bridge
// covers it), on the bridge itself otherwise.
func bridgePrivs(net string) []Privilege {
	bridge := optValue(net, "bridge")
	if bridge == "" {
		return nil
	}
	if tag := optValue(net, "tag"); tag != "" {
		return []Privilege{{"/sdn/zones/localnetwork/" + bridge + "/" + tag, "SDN.Use"}}
	}
	return []Privilege{{"/sdn/zones/localnetwork/" + bridge, "SDN.Use"}}
}

// clonePrivs: a clone also checks the source's bridges (qemu-server src/PVE/API2/Qemu.pm
// clone_vm, check_bridge_access on the old config, line 4494).
func clonePrivs(c *call) []Privilege {
	out := []Privilege{{"/vms/" + c.vars["vmid"], "VM.Clone"}}
	if src := c.sim.vms[c.vmid]; src != nil {
		for _, k := range slices.Sorted(maps.Keys(src.conf)) {
			if netKeyRe.MatchString(k) {
				out = append(out, bridgePrivs(src.conf[k])...)
			}
		}
	}
	if id := c.params["newid"]; id != "" {
		out = append(out, Privilege{"/vms/" + id, "VM.Allocate"})
	}
	if st := c.params["storage"]; st != "" {
		out = append(out, Privilege{"/storage/" + st, "Datastore.AllocateSpace"})
	}
	return out
}
