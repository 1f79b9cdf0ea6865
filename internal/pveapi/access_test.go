package pveapi

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// accessContractCases are the contract cases of the pool and permission calls.
func accessContractCases() []contractCase {
	return []contractCase{
		{name: "Permissions", fixture: "access_permissions_pool", method: "GET", path: "/access/permissions",
			query: url.Values{"path": {"/pool/proxies"}},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.Permissions(ctx, "/pool/proxies") },
			check: func(t *testing.T, got any) {
				var raw map[string]map[string]int
				if err := fixture.MustLoad("access_permissions_pool").Data(&raw); err != nil {
					t.Fatal(err)
				}
				want := map[string]bool{}
				for p, v := range raw["/pool/proxies"] {
					want[p] = v == 1
				}
				if !reflect.DeepEqual(got, want) || !want["VM.Allocate"] {
					t.Errorf("privileges %v, want %v", got, want)
				}
			}},
		{name: "UpdatePool", fixture: "pool_update_response", method: "PUT", path: "/pools",
			form: url.Values{"poolid": {"proxies"}, "vms": {"199999"}, "allow-move": {"1"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.UpdatePool(ctx, PoolUpdate{Pool: "proxies", VMIDs: []int{tVMID}})
			}},
		{name: "UpdatePool", fixture: "pool_update_response", method: "PUT", path: "/pools",
			form: url.Values{"poolid": {"proxies"}, "vms": {"199999"}, "delete": {"1"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return nil, c.UpdatePool(ctx, PoolUpdate{Pool: "proxies", VMIDs: []int{tVMID}, Remove: true})
			}},
		{name: "Clone", fixture: "clone_response", method: "POST", path: "/nodes/pv1-1/qemu/9001/clone",
			form: url.Values{"newid": {"199999"}, "name": {tName}, "full": {"1"}, "pool": {"proxies"}},
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Clone(ctx, tNode, 9001, CloneParams{NewID: tVMID, Name: tName, Pool: "proxies"})
			},
			check: wantUPID("clone_response")},
		{name: "VMIDFree", fixture: "nextid_free", method: "GET", path: "/cluster/nextid",
			query: url.Values{"vmid": {"199999"}},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.VMIDFree(ctx, tVMID) },
			check: func(t *testing.T, got any) {
				if got != true {
					t.Errorf("free = %v", got)
				}
			}},
		{name: "ClusterResources", fixture: "cluster_resources_pool", method: "GET", path: "/cluster/resources",
			query: url.Values{"type": {"vm"}},
			call:  func(ctx context.Context, c *Client) (any, error) { return c.ClusterResources(ctx) },
			check: func(t *testing.T, got any) {
				res := got.([]Resource)
				if len(res) != 2 || res[0].Pool != "" || res[1].Pool != "proxies" {
					t.Errorf("pools not decoded: %+v", res)
				}
			}},
	}
}

// TestClient_permissionRefusals: a 403 keeps Proxmox's text and says what it names (the
// path and privilege, or nothing for the clone's "VM.Allocate on the VMID or the pool"),
// and is Permanent; the clone's missing pool is told apart from a privilege.
func TestClient_permissionRefusals(t *testing.T) {
	for _, tc := range []struct {
		fixture     string
		wantDenied  Denied
		poolMissing bool
	}{
		{"err_permission_vm_audit", Denied{Path: "/vms/199999", Privilege: "VM.Audit"}, false},
		{"err_permission_clone_template", Denied{Path: "/vms/9001", Privilege: "VM.Clone"}, false},
		{"err_permission_clone_allocate", Denied{}, false},
		{"err_forbidden_agent", Denied{Path: "/vms/199999", Privilege: "VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted"}, false},
		{"err_pool_update_forbidden", Denied{Path: "/pool/edge", Privilege: "Pool.Allocate"}, false},
		{"err_permission_pool_missing", Denied{}, true},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			ts := newTestServer(t, fixtureReply(t, tc.fixture))
			c := newTestClient(t, ts)
			_, err := c.VMConfig(context.Background(), tNode, tVMID)
			f := fixture.MustLoad(tc.fixture)
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != 403 || ae.Message != f.Message() {
				t.Fatalf("err %v, want the fixture's 403 %q", err, f.Message())
			}
			d, ok := PermissionDenied(err)
			if !ok || d != tc.wantDenied {
				t.Errorf("PermissionDenied = %+v, %v; want %+v", d, ok, tc.wantDenied)
			}
			if IsPoolMissing(err) != tc.poolMissing {
				t.Errorf("IsPoolMissing = %v", !tc.poolMissing)
			}
			if Classify("update", err) != Permanent {
				t.Errorf("class %v, want permanent", Classify("update", err))
			}
		})
	}
}

// TestClient_vmidTaken: nextid's refusal of a VMID a guest holds is an answer (false), not
// an error; any other refusal is.
func TestClient_vmidTaken(t *testing.T) {
	ts := newTestServer(t, fixtureReply(t, "err_nextid_taken"))
	free, err := newTestClient(t, ts).VMIDFree(context.Background(), tVMID)
	if err != nil || free {
		t.Errorf("free %v, err %v; want taken", free, err)
	}
	ts = newTestServer(t, fixtureReply(t, "err_nextid_taken"))
	if _, err := newTestClient(t, ts).VMIDFree(context.Background(), 100); err == nil {
		t.Error("another VMID's refusal taken for an answer")
	}
	ts = newTestServer(t, fixtureReply(t, "err_auth_failed"))
	if _, err := newTestClient(t, ts).VMIDFree(context.Background(), tVMID); !IsUnauthorized(err) {
		t.Errorf("401: %v", err)
	}
}

// TestClient_poolUpdateAnswers: the pool update's refusals keep their text; a VM already in
// (or already out of) the pool is recognised, a missing pool is Permanent, and a pool
// update is refused before sending without a pool or a VMID.
func TestClient_poolUpdateAnswers(t *testing.T) {
	for _, tc := range []struct {
		fixture           string
		member, notMember bool
		poolMissing       bool
		class             Class
	}{
		{"err_pool_already_member", true, false, false, Transient},
		{"err_pool_not_member", false, true, false, Transient},
		{"err_pool_update_missing", false, false, true, Permanent},
		{"err_pool_update_forbidden", false, false, false, Permanent},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			ts := newTestServer(t, fixtureReply(t, tc.fixture))
			c := newTestClient(t, ts)
			err := c.UpdatePool(context.Background(), PoolUpdate{Pool: "edge", VMIDs: []int{tVMID}})
			if err == nil {
				t.Fatal("no error")
			}
			if IsAlreadyPoolMember(err) != tc.member || IsNotPoolMember(err) != tc.notMember || IsPoolMissing(err) != tc.poolMissing {
				t.Errorf("member %v, not member %v, pool missing %v", IsAlreadyPoolMember(err), IsNotPoolMember(err), IsPoolMissing(err))
			}
			if got := Classify("update", err); got != tc.class {
				t.Errorf("class %v, want %v", got, tc.class)
			}
		})
	}
	ts := newTestServer(t, fixtureReply(t, "pool_update_response"))
	c := newTestClient(t, ts)
	for _, p := range []PoolUpdate{{VMIDs: []int{tVMID}}, {Pool: "edge"}, {Pool: "edge", VMIDs: []int{0}}} {
		if err := c.UpdatePool(context.Background(), p); err == nil || Classify("update", err) != Permanent {
			t.Errorf("%+v: err %v, want a permanent refusal", p, err)
		}
	}
	if _, err := c.Permissions(context.Background(), "pool/edge"); err == nil {
		t.Error("a relative ACL path was sent")
	}
	if n := len(ts.requests()); n != 0 {
		t.Errorf("%d requests sent for refused arguments", n)
	}
}
