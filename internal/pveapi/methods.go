package pveapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

func vmPath(node string, vmid int, rest string) string {
	return "/nodes/" + seg(node) + "/qemu/" + strconv.Itoa(vmid) + rest
}

func storagePath(node, storage, rest string) string {
	return "/nodes/" + seg(node) + "/storage/" + seg(storage) + rest
}

// checkArgs refuses arguments that would build a wrong path; no request is sent.
func checkArgs(call string, node string, vmid int, strs ...string) error {
	if node == "" {
		return WithClass(Permanent, fmt.Errorf("proxmox API %s: empty node name", call))
	}
	if vmid < 0 {
		return WithClass(Permanent, fmt.Errorf("proxmox API %s: invalid VMID %d", call, vmid))
	}
	for _, s := range strs {
		if s == "" {
			return WithClass(Permanent, fmt.Errorf("proxmox API %s: empty argument", call))
		}
	}
	return nil
}

func vmFields(node string, vmid int) map[string]any {
	return map[string]any{"node": node, "vmid": vmid}
}

// upidResult checks that an async call answered a UPID.
func upidResult(call, upid string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if _, perr := ParseUPID(upid); perr != nil {
		return "", fmt.Errorf("proxmox API %s: answer is not a task id: %w", call, perr)
	}
	return upid, nil
}

// Version is GET /version.
func (c *Client) Version(ctx context.Context) (VersionInfo, error) {
	var v VersionInfo
	err := c.do(ctx, request{call: "Version", method: http.MethodGet, path: "/version"}, &v)
	return v, err
}

// NodeStatus is GET /nodes/{node}/status.
func (c *Client) NodeStatus(ctx context.Context, node string) (NodeStatus, error) {
	var v NodeStatus
	if err := checkArgs("NodeStatus", node, 0); err != nil {
		return v, err
	}
	err := c.do(ctx, request{call: "NodeStatus", method: http.MethodGet, path: "/nodes/" + seg(node) + "/status",
		fields: map[string]any{"node": node}}, &v)
	return v, err
}

// StorageStatus is GET /nodes/{node}/storage/{storage}/status.
func (c *Client) StorageStatus(ctx context.Context, node, storage string) (StorageStatus, error) {
	var v StorageStatus
	if err := checkArgs("StorageStatus", node, 0, storage); err != nil {
		return v, err
	}
	err := c.do(ctx, request{call: "StorageStatus", method: http.MethodGet, path: storagePath(node, storage, "/status"),
		fields: map[string]any{"node": node, "storage": storage}}, &v)
	return v, err
}

// StorageContent is GET /nodes/{node}/storage/{storage}/content?content={content}; an
// empty content lists every kind.
func (c *Client) StorageContent(ctx context.Context, node, storage, content string) ([]StorageVolume, error) {
	var v []StorageVolume
	if err := checkArgs("StorageContent", node, 0, storage); err != nil {
		return nil, err
	}
	var q url.Values
	if content != "" {
		q = url.Values{"content": {content}}
	}
	err := c.do(ctx, request{call: "StorageContent", method: http.MethodGet, path: storagePath(node, storage, "/content"),
		query: q, fields: map[string]any{"node": node, "storage": storage}}, &v)
	return v, err
}

// ClusterResources is GET /cluster/resources?type=vm.
func (c *Client) ClusterResources(ctx context.Context) ([]Resource, error) {
	var v []Resource
	err := c.do(ctx, request{call: "ClusterResources", method: http.MethodGet, path: "/cluster/resources",
		query: url.Values{"type": {"vm"}}}, &v)
	return v, err
}

// VMConfig is GET /nodes/{node}/qemu/{vmid}/config; every scalar decoded to a string
// (numbers keep their text, booleans become "1"/"0").
func (c *Client) VMConfig(ctx context.Context, node string, vmid int) (map[string]string, error) {
	if err := checkArgs("VMConfig", node, vmid); err != nil {
		return nil, err
	}
	var v map[string]string
	err := c.do(ctx, request{call: "VMConfig", method: http.MethodGet, path: vmPath(node, vmid, "/config"),
		fields: vmFields(node, vmid)}, &v)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// SetVMConfig is PUT /nodes/{node}/qemu/{vmid}/config (synchronous), form-encoded. Values
// are sent as given: booleans must already be "0"/"1".
func (c *Client) SetVMConfig(ctx context.Context, node string, vmid int, params map[string]string) error {
	if err := checkArgs("SetVMConfig", node, vmid); err != nil {
		return err
	}
	if len(params) == 0 {
		return WithClass(Permanent, errors.New("proxmox API SetVMConfig: no parameters"))
	}
	form := url.Values{}
	for k, v := range params {
		form.Set(k, v)
	}
	return c.do(ctx, request{call: "SetVMConfig", method: http.MethodPut, path: vmPath(node, vmid, "/config"),
		form: form, fields: vmFields(node, vmid)}, nil)
}

// Clone is POST /nodes/{node}/qemu/{vmid}/clone with newid, name, description, full=1 and,
// when set, storage, target and pool. It returns the qmclone task's UPID.
func (c *Client) Clone(ctx context.Context, node string, vmid int, p CloneParams) (string, error) {
	if err := checkArgs("Clone", node, vmid); err != nil {
		return "", err
	}
	if p.NewID <= 0 {
		return "", WithClass(Permanent, fmt.Errorf("proxmox API Clone: invalid new VMID %d", p.NewID))
	}
	form := url.Values{"newid": {strconv.Itoa(p.NewID)}, "full": {"1"}}
	if p.Name != "" {
		form.Set("name", p.Name)
	}
	if p.Description != "" {
		form.Set("description", p.Description)
	}
	if p.Storage != "" {
		form.Set("storage", p.Storage)
	}
	if p.Target != "" {
		form.Set("target", p.Target)
	}
	if p.Pool != "" {
		form.Set("pool", p.Pool)
	}
	f := vmFields(node, vmid)
	f["newid"], f["name"] = p.NewID, p.Name
	if p.Target != "" {
		f["target"] = p.Target
	}
	if p.Pool != "" {
		f["pool"] = p.Pool
	}
	var upid string
	err := c.do(ctx, request{call: "Clone", method: http.MethodPost, path: vmPath(node, vmid, "/clone"),
		form: form, fields: f}, &upid)
	return upidResult("Clone", upid, err)
}

// Resize is PUT /nodes/{node}/qemu/{vmid}/resize with an absolute size such as "8G"; it
// returns the resize task's UPID (fact: resize-task).
func (c *Client) Resize(ctx context.Context, node string, vmid int, disk, size string) (string, error) {
	if err := checkArgs("Resize", node, vmid, disk, size); err != nil {
		return "", err
	}
	if strings.HasPrefix(size, "+") {
		return "", WithClass(Permanent, fmt.Errorf("proxmox API Resize: size %q must be absolute", size))
	}
	f := vmFields(node, vmid)
	f["disk"], f["size"] = disk, size
	var upid string
	err := c.do(ctx, request{call: "Resize", method: http.MethodPut, path: vmPath(node, vmid, "/resize"),
		form: url.Values{"disk": {disk}, "size": {size}}, fields: f}, &upid)
	return upidResult("Resize", upid, err)
}

// Start is POST /nodes/{node}/qemu/{vmid}/status/start; it returns the qmstart UPID.
func (c *Client) Start(ctx context.Context, node string, vmid int) (string, error) {
	return c.power(ctx, "Start", node, vmid, "/status/start")
}

// Stop is POST /nodes/{node}/qemu/{vmid}/status/stop; it returns the qmstop UPID.
func (c *Client) Stop(ctx context.Context, node string, vmid int) (string, error) {
	return c.power(ctx, "Stop", node, vmid, "/status/stop")
}

// Shutdown is POST /nodes/{node}/qemu/{vmid}/status/shutdown: the guest agent's
// guest-shutdown when the agent is configured and answers, else an ACPI power button
// press. It returns the qmshutdown UPID; the task waits for the guest to power off.
func (c *Client) Shutdown(ctx context.Context, node string, vmid int, p ShutdownParams) (string, error) {
	if err := checkArgs("Shutdown", node, vmid); err != nil {
		return "", err
	}
	form := url.Values{}
	f := vmFields(node, vmid)
	if p.TimeoutSeconds > 0 {
		form.Set("timeout", strconv.Itoa(p.TimeoutSeconds))
		f["timeout"] = p.TimeoutSeconds
	}
	if p.ForceStop {
		form.Set("forceStop", "1")
		f["force_stop"] = true
	}
	var upid string
	err := c.do(ctx, request{call: "Shutdown", method: http.MethodPost, path: vmPath(node, vmid, "/status/shutdown"),
		form: form, fields: f}, &upid)
	return upidResult("Shutdown", upid, err)
}

func (c *Client) power(ctx context.Context, call, node string, vmid int, rest string) (string, error) {
	if err := checkArgs(call, node, vmid); err != nil {
		return "", err
	}
	var upid string
	err := c.do(ctx, request{call: call, method: http.MethodPost, path: vmPath(node, vmid, rest),
		fields: vmFields(node, vmid)}, &upid)
	return upidResult(call, upid, err)
}

// VMStatus is GET /nodes/{node}/qemu/{vmid}/status/current.
func (c *Client) VMStatus(ctx context.Context, node string, vmid int) (VMStatus, error) {
	var v VMStatus
	if err := checkArgs("VMStatus", node, vmid); err != nil {
		return v, err
	}
	err := c.do(ctx, request{call: "VMStatus", method: http.MethodGet, path: vmPath(node, vmid, "/status/current"),
		fields: vmFields(node, vmid)}, &v)
	return v, err
}

// Destroy is DELETE /nodes/{node}/qemu/{vmid}?purge=1&destroy-unreferenced-disks=1; it
// returns the qmdestroy UPID.
func (c *Client) Destroy(ctx context.Context, node string, vmid int) (string, error) {
	if err := checkArgs("Destroy", node, vmid); err != nil {
		return "", err
	}
	var upid string
	err := c.do(ctx, request{call: "Destroy", method: http.MethodDelete, path: vmPath(node, vmid, ""),
		query: url.Values{"purge": {"1"}, "destroy-unreferenced-disks": {"1"}}, fields: vmFields(node, vmid)}, &upid)
	return upidResult("Destroy", upid, err)
}

// TaskStatus is GET /nodes/{node}/tasks/{upid}/status.
func (c *Client) TaskStatus(ctx context.Context, node, upid string) (TaskStatus, error) {
	var v TaskStatus
	if err := checkArgs("TaskStatus", node, 0, upid); err != nil {
		return v, err
	}
	err := c.do(ctx, request{call: "TaskStatus", method: http.MethodGet, path: "/nodes/" + seg(node) + "/tasks/" + seg(upid) + "/status",
		fields: map[string]any{"node": node, "upid": upid}}, &v)
	return v, err
}

// AgentNetworkInterfaces is GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces: the
// "result" list (fact: agent-interfaces).
func (c *Client) AgentNetworkInterfaces(ctx context.Context, node string, vmid int) ([]NetworkInterface, error) {
	if err := checkArgs("AgentNetworkInterfaces", node, vmid); err != nil {
		return nil, err
	}
	var v struct {
		Result []NetworkInterface `json:"result"`
	}
	err := c.do(ctx, request{call: "AgentNetworkInterfaces", method: http.MethodGet,
		path: vmPath(node, vmid, "/agent/network-get-interfaces"), fields: vmFields(node, vmid)}, &v)
	return v.Result, err
}

// UploadISO is POST /nodes/{node}/storage/{storage}/upload: multipart with the content=iso
// field first and the file part (form name "filename", file name filename) last, an exact
// Content-Length, and the size bytes of r streamed, never buffered. It returns the imgcopy
// UPID. A reader shorter than size fails the request.
func (c *Client) UploadISO(ctx context.Context, node, storage, filename string, r io.Reader, size int64) (string, error) {
	if err := checkArgs("UploadISO", node, 0, storage, filename); err != nil {
		return "", err
	}
	if strings.ContainsAny(filename, "/\\\r\n\"") || size < 0 || r == nil {
		return "", WithClass(Permanent, fmt.Errorf("proxmox API UploadISO: invalid file name %q or size %d", filename, size))
	}
	head, tail, boundary := multipartFrame("content", "iso", "filename", filename)
	body := func() io.Reader {
		return io.MultiReader(strings.NewReader(head), io.LimitReader(r, size), strings.NewReader(tail))
	}
	var upid string
	err := c.do(ctx, request{call: "UploadISO", method: http.MethodPost, path: storagePath(node, storage, "/upload"),
		body: body, length: int64(len(head)) + size + int64(len(tail)),
		contentType: "multipart/form-data; boundary=" + boundary,
		fields:      map[string]any{"node": node, "storage": storage, "filename": filename, "size": size}}, &upid)
	return upidResult("UploadISO", upid, err)
}

// DeleteVolume is DELETE /nodes/{node}/storage/{storage}/content/{volid}, the volid
// path-escaped ("/" as %2F); it returns the imgdel UPID. A missing volume still ends OK (fact: volume-delete-task).
func (c *Client) DeleteVolume(ctx context.Context, node, storage, volid string) (string, error) {
	if err := checkArgs("DeleteVolume", node, 0, storage, volid); err != nil {
		return "", err
	}
	var upid string
	err := c.do(ctx, request{call: "DeleteVolume", method: http.MethodDelete, path: storagePath(node, storage, "/content/"+seg(volid)),
		fields: map[string]any{"node": node, "storage": storage, "volid": volid}}, &upid)
	return upidResult("DeleteVolume", upid, err)
}
