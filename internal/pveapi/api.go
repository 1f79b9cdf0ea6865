// Package pveapi is the seam between the provider and Proxmox VE: one Go method per REST
// endpoint the product uses (decision: seam), the net/http adapter that implements it, the
// apiError type and the classification of failures (decision: error-classes). Proxmox's wording lives
// here and nowhere above this package.
package pveapi

import (
	"context"
	"io"
)

// API is the seam. Every method takes ctx first and makes exactly one HTTP request.
// Async calls return the task's UPID; TaskStatus polls it.
type API interface {
	// Version is GET /version.
	Version(ctx context.Context) (VersionInfo, error)
	// NodeStatus is GET /nodes/{node}/status.
	NodeStatus(ctx context.Context, node string) (NodeStatus, error)
	// StorageStatus is GET /nodes/{node}/storage/{storage}/status.
	StorageStatus(ctx context.Context, node, storage string) (StorageStatus, error)
	// CPUModels is GET /nodes/{node}/capabilities/qemu/cpu.
	CPUModels(ctx context.Context, node string) ([]CPUModel, error)
	// StorageContent is GET /nodes/{node}/storage/{storage}/content?content={content}.
	StorageContent(ctx context.Context, node, storage, content string) ([]StorageVolume, error)
	// ClusterResources is GET /cluster/resources?type=vm.
	ClusterResources(ctx context.Context) ([]Resource, error)
	// VMConfig is GET /nodes/{node}/qemu/{vmid}/config; every scalar decoded to a string.
	VMConfig(ctx context.Context, node string, vmid int) (map[string]string, error)
	// VMConfigCurrent is GET /nodes/{node}/qemu/{vmid}/config?current=1: the values a
	// running VM runs with, its pending section left out.
	VMConfigCurrent(ctx context.Context, node string, vmid int) (map[string]string, error)
	// VMPending is GET /nodes/{node}/qemu/{vmid}/pending: the current values, the pending
	// values and the pending deletes of a VM's config, in one read.
	VMPending(ctx context.Context, node string, vmid int) (PendingConfig, error)
	// VMSnapshots is GET /nodes/{node}/qemu/{vmid}/snapshot: the VM's snapshots and
	// "current".
	VMSnapshots(ctx context.Context, node string, vmid int) ([]Snapshot, error)
	// VMSnapshotConfig is GET /nodes/{node}/qemu/{vmid}/config?snapshot={name}: the config
	// of one snapshot section.
	VMSnapshotConfig(ctx context.Context, node string, vmid int, name string) (map[string]string, error)
	// SetVMConfig is PUT /nodes/{node}/qemu/{vmid}/config (synchronous), form-encoded.
	SetVMConfig(ctx context.Context, node string, vmid int, params map[string]string) error
	// Clone is POST /nodes/{node}/qemu/{vmid}/clone.
	Clone(ctx context.Context, node string, vmid int, p CloneParams) (string, error)
	// Resize is PUT /nodes/{node}/qemu/{vmid}/resize with an absolute size such as "8G".
	Resize(ctx context.Context, node string, vmid int, disk, size string) (string, error)
	// Start is POST /nodes/{node}/qemu/{vmid}/status/start.
	Start(ctx context.Context, node string, vmid int) (string, error)
	// Stop is POST /nodes/{node}/qemu/{vmid}/status/stop.
	Stop(ctx context.Context, node string, vmid int) (string, error)
	// Shutdown is POST /nodes/{node}/qemu/{vmid}/status/shutdown with timeout and forceStop.
	Shutdown(ctx context.Context, node string, vmid int, p ShutdownParams) (string, error)
	// VMStatus is GET /nodes/{node}/qemu/{vmid}/status/current.
	VMStatus(ctx context.Context, node string, vmid int) (VMStatus, error)
	// Destroy is DELETE /nodes/{node}/qemu/{vmid}?purge=1&destroy-unreferenced-disks=1.
	Destroy(ctx context.Context, node string, vmid int) (string, error)
	// TaskStatus is GET /nodes/{node}/tasks/{upid}/status.
	TaskStatus(ctx context.Context, node, upid string) (TaskStatus, error)
	// Nodes is GET /nodes (node_tasks.go).
	Nodes(ctx context.Context) ([]NodeEntry, error)
	// NodeTasks is GET /nodes/{node}/tasks (node_tasks.go).
	NodeTasks(ctx context.Context, node string, q TaskQuery) ([]TaskEntry, error)
	// AgentNetworkInterfaces is GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces.
	AgentNetworkInterfaces(ctx context.Context, node string, vmid int) ([]NetworkInterface, error)
	// UploadISO is POST /nodes/{node}/storage/{storage}/upload (multipart, content=iso first,
	// the file part last), streaming size bytes from r.
	UploadISO(ctx context.Context, node, storage, filename string, r io.Reader, size int64) (string, error)
	// DeleteVolume is DELETE /nodes/{node}/storage/{storage}/content/{volid}.
	DeleteVolume(ctx context.Context, node, storage, volid string) (string, error)
	// Migrate is POST /nodes/{node}/qemu/{vmid}/migrate (migrate.go).
	Migrate(ctx context.Context, node string, vmid int, p MigrateParams) (string, error)
	// NodeNetwork is GET /nodes/{node}/network?type={ifaceType}.
	NodeNetwork(ctx context.Context, node, ifaceType string) ([]NodeInterface, error)
	// Permissions is GET /access/permissions?path={path} (access.go).
	Permissions(ctx context.Context, path string) (map[string]bool, error)
	// UpdatePool is PUT /pools (access.go).
	UpdatePool(ctx context.Context, p PoolUpdate) error
	// VMIDFree is GET /cluster/nextid?vmid={vmid} (access.go).
	VMIDFree(ctx context.Context, vmid int) (bool, error)
	// HAResources is GET /cluster/ha/resources (ha.go).
	HAResources(ctx context.Context) ([]HAResource, error)
	// HAResource is GET /cluster/ha/resources/{sid} (ha.go).
	HAResource(ctx context.Context, sid string) (HAResource, error)
	// CreateHAResource is POST /cluster/ha/resources (ha.go).
	CreateHAResource(ctx context.Context, p HAResourceParams) error
	// UpdateHAResource is PUT /cluster/ha/resources/{sid} (ha.go).
	UpdateHAResource(ctx context.Context, p HAResourceParams) error
	// DeleteHAResource is DELETE /cluster/ha/resources/{sid}?purge= (ha.go).
	DeleteHAResource(ctx context.Context, sid string, purge bool) error
	// HARules is GET /cluster/ha/rules (ha.go).
	HARules(ctx context.Context) ([]HARule, error)
	// HARule is GET /cluster/ha/rules/{rule} (ha.go).
	HARule(ctx context.Context, id string) (HARule, error)
	// CreateHARule is POST /cluster/ha/rules (ha.go).
	CreateHARule(ctx context.Context, p HARuleParams) error
	// UpdateHARule is PUT /cluster/ha/rules/{rule} (ha.go).
	UpdateHARule(ctx context.Context, p HARuleParams) error
	// DeleteHARule is DELETE /cluster/ha/rules/{rule} (ha.go).
	DeleteHARule(ctx context.Context, id string) error
	// HAStatus is GET /cluster/ha/status/current (ha.go).
	HAStatus(ctx context.Context) ([]HAStatusEntry, error)
}

// VersionInfo is the answer of GET /version.
type VersionInfo struct {
	Version string `json:"version"`
	Release string `json:"release"`
	RepoID  string `json:"repoid"`
}

// NodeStatus is the part of GET /nodes/{node}/status the product reads.
type NodeStatus struct {
	KVersion   string `json:"kversion"`
	PVEVersion string `json:"pveversion"`
	Uptime     int64  `json:"uptime"`
	// Memory is the node's RAM in bytes; automatic placement breaks ties by Free.
	Memory NodeMemory `json:"memory"`
}

// NodeMemory is the memory object of GET /nodes/{node}/status.
type NodeMemory struct {
	Total int64 `json:"total"`
	Used  int64 `json:"used"`
	Free  int64 `json:"free"`
}

// StorageStatus is GET /nodes/{node}/storage/{storage}/status.
type StorageStatus struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	Total   int64  `json:"total"`
	Used    int64  `json:"used"`
	Avail   int64  `json:"avail"`
	Active  int    `json:"active"`
	Enabled int    `json:"enabled"`
	Shared  int    `json:"shared"`
}

// StorageVolume is one entry of GET /nodes/{node}/storage/{storage}/content.
type StorageVolume struct {
	VolID   string `json:"volid"`
	Format  string `json:"format"`
	Size    int64  `json:"size"`
	CTime   int64  `json:"ctime"`
	Content string `json:"content"`
}

// Resource is one entry of GET /cluster/resources?type=vm. A clone in progress has no
// name, lock "clone" and status "unknown" (fact: nameless-mid-clone).
type Resource struct {
	ID       string `json:"id"`
	VMID     int    `json:"vmid"`
	Node     string `json:"node"`
	Type     string `json:"type"`
	Status   string `json:"status"`
	Name     string `json:"name"`
	Template int    `json:"template"`
	Tags     string `json:"tags"`
	Lock     string `json:"lock"`
	// Pool is the pool the guest belongs to, set only when the token has Pool.Audit on it
	// (fact: pool-privileges).
	Pool    string  `json:"pool"`
	MaxCPU  float64 `json:"maxcpu"`
	MaxMem  int64   `json:"maxmem"`
	MaxDisk int64   `json:"maxdisk"`
	Uptime  int64   `json:"uptime"`
}

// CloneParams are the form fields of a clone. Full is always sent as full=1.
type CloneParams struct {
	NewID       int
	Name        string
	Description string
	Storage     string // empty: the template's own storage
	Target      string // empty: the template's node
	// Pool, when set, is the pool the new VM joins at the end of the clone task; VM.Allocate
	// on /pool/<pool> then allows the clone (fact: pool-privileges).
	Pool string
}

// VMStatus is GET /nodes/{node}/qemu/{vmid}/status/current.
type VMStatus struct {
	Status    string `json:"status"`
	QMPStatus string `json:"qmpstatus"`
	Lock      string `json:"lock"`
	Agent     int    `json:"agent"`
	Name      string `json:"name"`
	Uptime    int64  `json:"uptime"`
	// CPUs and MaxMem (bytes) come from the config's current values, not its pending
	// section (qemu-server vmstatus loads the config and reads sockets x cores, or vcpus,
	// and memory): for a running VM they are what it runs with.
	CPUs   int   `json:"cpus"`
	MaxMem int64 `json:"maxmem"`
	// HA is whether the VM is an HA resource Proxmox manages (not ignored) and the HA
	// manager's state of it (ha.go); only VM.Audit on the VM is needed to read it.
	HA VMStatusHA `json:"ha"`
}

// ShutdownParams are the form fields of a shutdown. TimeoutSeconds is how long Proxmox
// waits for the guest to power off (sent when positive; Proxmox's default is 60 s, or the
// config's startup down= value); ForceStop makes Proxmox kill the VM past it, and the task
// then ends with a warning instead of failing.
type ShutdownParams struct {
	TimeoutSeconds int
	ForceStop      bool
}

// TaskStatus is GET /nodes/{node}/tasks/{upid}/status. ExitStatus is set only when
// Status is "stopped": "OK", "WARNINGS: <n>" or the error text (fact: task-status).
type TaskStatus struct {
	UPID       string `json:"upid"`
	Node       string `json:"node"`
	PID        int64  `json:"pid"`
	PStart     int64  `json:"pstart"`
	StartTime  int64  `json:"starttime"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	User       string `json:"user"`
	TokenID    string `json:"tokenid"`
	Status     string `json:"status"`
	ExitStatus string `json:"exitstatus"`
}

// NetworkInterface is one entry of the agent's network-get-interfaces result (fact: agent-interfaces).
type NetworkInterface struct {
	Name            string      `json:"name"`
	HardwareAddress string      `json:"hardware-address"`
	IPAddresses     []IPAddress `json:"ip-addresses"`
}

// IPAddress is one address of a NetworkInterface.
type IPAddress struct {
	Address string `json:"ip-address"`
	Type    string `json:"ip-address-type"`
	Prefix  int    `json:"prefix"`
}
