package pveapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Pools and permissions (fact: pool-privileges, fact: access-permissions).

// Permissions is GET /access/permissions?path={path}: the privileges the token has on path
// (for a privilege-separated token, what its user and its own ACLs both grant), each to its
// propagate flag. A path the token has nothing on answers an empty map.
func (c *Client) Permissions(ctx context.Context, path string) (map[string]bool, error) {
	if path == "" || !strings.HasPrefix(path, "/") {
		return nil, WithClass(Permanent, fmt.Errorf("proxmox API Permissions: invalid ACL path %q", path))
	}
	var v map[string]map[string]int
	err := c.do(ctx, request{call: "Permissions", method: http.MethodGet, path: "/access/permissions",
		query: url.Values{"path": {path}}, fields: map[string]any{"path": path}}, &v)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for priv, prop := range v[path] {
		out[priv] = prop != 0
	}
	return out, nil
}

// PoolUpdate is the form of PUT /pools: VMIDs to add to the pool (moving them out of the pool
// they are in, allow-move=1), or, with Remove, to take out of it.
type PoolUpdate struct {
	Pool   string
	VMIDs  []int
	Remove bool
}

// UpdatePool is PUT /pools?poolid= (the PVE 8+ form, which takes nested pools; PUT
// /pools/{poolid} is deprecated), synchronous.
func (c *Client) UpdatePool(ctx context.Context, p PoolUpdate) error {
	if p.Pool == "" || len(p.VMIDs) == 0 {
		return WithClass(Permanent, errors.New("proxmox API UpdatePool: a pool and at least one VMID are required"))
	}
	ids := make([]string, len(p.VMIDs))
	for i, id := range p.VMIDs {
		if id <= 0 {
			return WithClass(Permanent, fmt.Errorf("proxmox API UpdatePool: invalid VMID %d", id))
		}
		ids[i] = strconv.Itoa(id)
	}
	form := url.Values{"poolid": {p.Pool}, "vms": {strings.Join(ids, ",")}}
	if p.Remove {
		form.Set("delete", "1")
	} else {
		form.Set("allow-move", "1")
	}
	return c.do(ctx, request{call: "UpdatePool", method: http.MethodPut, path: "/pools", form: form,
		fields: map[string]any{"pool": p.Pool, "vmids": strings.Join(ids, ","), "remove": p.Remove}}, nil)
}

// VMIDFree is GET /cluster/nextid?vmid={vmid}: whether any guest of the cluster holds the
// VMID, whoever may see it. Every user may ask (fact: pool-privileges): the answer is the
// one way to tell a VMID without a guest from one whose guest the token may not audit, which
// the listing leaves out and whose config read answers 403 either way.
func (c *Client) VMIDFree(ctx context.Context, vmid int) (bool, error) {
	if vmid <= 0 {
		return false, WithClass(Permanent, fmt.Errorf("proxmox API VMIDFree: invalid VMID %d", vmid))
	}
	var v json.RawMessage
	err := c.do(ctx, request{call: "VMIDFree", method: http.MethodGet, path: "/cluster/nextid",
		query: url.Values{"vmid": {strconv.Itoa(vmid)}}, fields: map[string]any{"vmid": vmid}}, &v)
	if err == nil {
		return true, nil
	}
	if ae, ok := apiError(err); ok && ae.Status == http.StatusBadRequest && ae.Errors["vmid"] == fmt.Sprintf("VM %d already exists", vmid) {
		return false, nil
	}
	return false, err
}

var (
	rePermDenied     = regexp.MustCompile(`^Permission check failed \((/[^,()]*), ([A-Za-z.|]+)\)$`)
	rePoolMember     = regexp.MustCompile(`^update pools failed: VM ([0-9]+) is already a pool member$`)
	reNotPoolMember  = regexp.MustCompile(`^update pools failed: VM ([0-9]+) is not a pool member$`)
	rePoolNotExist   = regexp.MustCompile(`^update pools failed: pool '([^']+)' does not exist$`)
	rePoolMissingPrm = regexp.MustCompile(`^Permission check failed \(pool '([^']+)' does not exist\)$`)
)

// Denied is what a 403 names (fact: permission-403): the ACL path and the privilege, or
// several joined by "|" when any of them would do. Both are empty for a refusal that names
// nothing (fact: pool-privileges: the clone's "VM.Allocate on the VMID or the pool").
type Denied struct {
	Path      string
	Privilege string
}

// PermissionDenied reports a 403 and what it names. Proxmox's pool check also answers 403
// ("pool '<pool>' does not exist"): that is not a privilege, see IsPoolMissing.
func PermissionDenied(err error) (Denied, bool) {
	ae, ok := apiError(err)
	if !ok || ae.Status != http.StatusForbidden {
		return Denied{}, false
	}
	if m := rePermDenied.FindStringSubmatch(ae.Message); m != nil {
		return Denied{Path: m[1], Privilege: m[2]}, true
	}
	return Denied{}, true
}

// IsPoolMissing reports a pool the cluster does not have: the clone's 403 "Permission check
// failed (pool '<pool>' does not exist)" or the pool update's "pool '<pool>' does not exist".
func IsPoolMissing(err error) bool {
	ae, ok := apiError(err)
	if !ok {
		return false
	}
	return (ae.Status == http.StatusForbidden && rePoolMissingPrm.MatchString(ae.Message)) ||
		(ae.Status == http.StatusInternalServerError && rePoolNotExist.MatchString(ae.Message))
}

// IsAlreadyPoolMember reports a pool update that adds a VM the pool holds already.
func IsAlreadyPoolMember(err error) bool { return is500(err, rePoolMember.MatchString) }

// IsNotPoolMember reports a pool update that removes a VM the pool does not hold.
func IsNotPoolMember(err error) bool { return is500(err, reNotPoolMember.MatchString) }
