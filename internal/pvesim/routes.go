package pvesim

import (
	"fmt"
	"strings"
)

const uploadTmpl = "/nodes/{node}/storage/{storage}/upload"

var routes []*route

func vmPriv(priv string) func(c *call) error { return perm("/vms/{vmid}", false, priv) }

func storagePriv(priv string) func(c *call) error { return perm("/storage/{storage}", false, priv) }

// storageRead is ['perm', '/storage/{storage}', ['Datastore.Audit', 'Datastore.AllocateSpace'],
// any => 1] (pve-storage src/PVE/API2/Storage/Status.pm read_status, Content.pm index).
var storageRead = perm("/storage/{storage}", true, "Datastore.Audit", "Datastore.AllocateSpace")

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
	add := func(method, tmpl string, sc *schema, perms func(c *call) error, h handlerFunc) {
		if sc == nil {
			sc = fixed(nil)
		}
		routes = append(routes, &route{method: method, tmpl: tmpl, segs: strings.Split(strings.TrimPrefix(tmpl, "/"),
			"/"), schema: sc, perms: perms, h: h})
	}
	// withCode adds the checks a method's code makes before it acts to the route just added.
	withCode := func(code func(c *call) error) { routes[len(routes)-1].code = code }
	add("GET", "/version", nil, nil, (*Sim).hVersion)
	add("GET", "/nodes", nil, nil, (*Sim).hNodes)
	add("GET", "/nodes/{node}/status", nil, perm("/nodes/{node}", false, "Sys.Audit"), (*Sim).hNodeStatus)
	add("GET", "/cluster/resources", fixed(map[string]pspec{"type": {optional: true, enum: []string{"vm", "storage",
		"node", "sdn"}}}), nil, (*Sim).hResources)
	add("GET", "/cluster/nextid", fixed(map[string]pspec{"vmid": optional(pVMID)}), nil, (*Sim).hNextID)
	add("GET", "/nodes/{node}/tasks", nodeTasksSchema, nil, (*Sim).hNodeTasks)
	add("GET", "/nodes/{node}/tasks/{upid}/status", nil, nil, (*Sim).hTaskStatus)
	add("GET", "/nodes/{node}/tasks/{upid}/log", fixed(map[string]pspec{"start": {typ: tInt, optional: true,
		min: i64(0)}, "limit": {typ: tInt, optional: true, min: i64(0)}, "download": pBool}), nil, (*Sim).hTaskLog)

	add("GET", "/nodes/{node}/storage", fixed(map[string]pspec{"content": pStr, "enabled": pBool, "format": pBool,
		"storage": optional(pStorage), "target": pStr}), nil, (*Sim).hStorageList)
	add("GET", "/nodes/{node}/storage/{storage}/status", nil, storageRead, (*Sim).hStorageStatus)
	add("GET", "/nodes/{node}/capabilities/qemu/cpu", fixed(map[string]pspec{"arch": {optional: true,
		enum: []string{"x86_64", "aarch64"}}}), nil, (*Sim).hCPUModels)
	add("GET", "/nodes/{node}/storage/{storage}/content", fixed(map[string]pspec{"content": pStr,
		"vmid": optional(pVMID)}), storageRead, (*Sim).hStorageContent)
	add("POST", uploadTmpl, fixed(map[string]pspec{
		"content": {}, "filename": {maxLen: 255}, "checksum": pStr, "tmpfilename": pStr,
		"checksum-algorithm": {optional: true, enum: []string{"md5", "sha1", "sha224", "sha256", "sha384", "sha512"}},
	}), storagePriv("Datastore.AllocateTemplate"), (*Sim).hUpload)
	add("GET", "/nodes/{node}/storage/{storage}/content/{volume}", nil, nil, (*Sim).hVolumeInfo)
	add("DELETE", "/nodes/{node}/storage/{storage}/content/{volume}", fixed(map[string]pspec{"delay": {typ: tInt,
		optional: true, min: i64(1), max: i64(30)}}), nil, (*Sim).hVolumeDelete)

	add("GET", "/nodes/{node}/qemu", fixed(map[string]pspec{"full": pBool}), nil, (*Sim).hQemuList)
	add("GET", "/nodes/{node}/qemu/{vmid}/config", fixed(map[string]pspec{"current": pBool, "snapshot": pStr}),
		vmPriv("VM.Audit"), (*Sim).hConfigGet)
	add("GET", "/nodes/{node}/qemu/{vmid}/pending", nil, vmPriv("VM.Audit"), (*Sim).hPending)
	add("GET", "/nodes/{node}/qemu/{vmid}/snapshot", nil, vmPriv("VM.Audit"), (*Sim).hSnapshots)
	add("PUT", "/nodes/{node}/qemu/{vmid}/config", configSchema, perm("/vms/{vmid}", true, vmConfigPrivs...), (*Sim).hConfigPut)
	withCode(configPerms)
	add("POST", "/nodes/{node}/qemu/{vmid}/config", configSchema, perm("/vms/{vmid}", true, vmConfigPrivs...), (*Sim).hConfigPost)
	withCode(configPerms)
	add("POST", "/nodes/{node}/qemu/{vmid}/clone", fixed(map[string]pspec{
		"newid": pVMID, "name": {optional: true, format: fmtDNSName}, "description": pStr, "full": pBool,
		"storage": optional(pStorage), "target": {optional: true, format: fmtNode},
		"format": {optional: true, enum: []string{"raw", "qcow2", "vmdk"}}, "pool": pPoolID, "snapname": pStr,
		"bwlimit": {typ: tInt, optional: true, min: i64(0)},
	}), clonePerms, (*Sim).hClone)
	withCode(cloneCodePerms)
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
	add("POST", "/nodes/{node}/qemu/{vmid}/status/resume", fixed(map[string]pspec{"skiplock": pBool,
		"nocheck": pBool}), vmPriv("VM.PowerMgmt"), (*Sim).hResume)
	add("DELETE", "/nodes/{node}/qemu/{vmid}", fixed(map[string]pspec{"purge": pBool,
		"destroy-unreferenced-disks": pBool, "skiplock": pBool}), vmPriv("VM.Allocate"), (*Sim).hDestroy)
	add("GET", "/nodes/{node}/qemu/{vmid}/agent/network-get-interfaces", nil, agentPerm, (*Sim).hAgentNetwork)
	add("GET", "/nodes/{node}/qemu/{vmid}/agent/get-osinfo", nil, agentPerm, (*Sim).hAgentOSInfo)
	add("GET", "/nodes/{node}/qemu/{vmid}/agent/get-host-name", nil, agentPerm, (*Sim).hAgentHostName)
	add("POST", "/nodes/{node}/qemu/{vmid}/status/shutdown", fixed(map[string]pspec{
		"skiplock": pBool, "timeout": {typ: tInt, optional: true, min: i64(0)}, "forceStop": pBool, "keepActive": pBool,
	}), vmPriv("VM.PowerMgmt"), (*Sim).hShutdown)
	add("GET", "/cluster/status", nil, perm("/", false, "Sys.Audit"), (*Sim).hClusterStatus)
	add("GET", "/cluster/tasks", nil, nil, (*Sim).hClusterTasks)
	add("GET", "/nodes/{node}/version", nil, nil, (*Sim).hNodeVersion)
	addAccessRoutes(add)
}

// vmConfigPrivs is qemu-server src/PVE/API2/Qemu.pm $vm_config_perm_list: the config
// methods' declared check takes any of them on /vms/{vmid}.
var vmConfigPrivs = []string{"VM.Config.Disk", "VM.Config.CDROM", "VM.Config.CPU", "VM.Config.Memory",
	"VM.Config.Network", "VM.Config.HWType", "VM.Config.Options", "VM.Config.Cloudinit"}

// agentPerm: an agent command accepts its own privilege or VM.GuestAgent.Unrestricted
// (qemu-server src/PVE/API2/Qemu/Agent.pm register_command, line 184: any => 1).
var agentPerm = perm("/vms/{vmid}", true, "VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted")
