package pveapi

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
)

// migrateContractCase is the contract of Migrate: a live migration with the local disks and
// a target storage, answered by migrate_response.
func migrateContractCase() contractCase {
	return contractCase{name: "Migrate", fixture: "migrate_response", method: "POST", path: "/nodes/pv1-1/qemu/199999/migrate",
		form: url.Values{"target": {"pv1-2"}, "online": {"1"}, "with-local-disks": {"1"}, "targetstorage": {"local-lvm"}},
		call: func(ctx context.Context, c *Client) (any, error) {
			return c.Migrate(ctx, tNode, tVMID, MigrateParams{Target: "pv1-2", Online: true, WithLocalDisks: true, TargetStorage: "local-lvm"})
		},
		check: wantUPID("migrate_response")}
}

// TestClient_migrateOfflineSendsOnlyTheTarget: a stopped VM's migration sends target alone
// (no online=0, which Proxmox would accept but the log would misread).
func TestClient_migrateOfflineSendsOnlyTheTarget(t *testing.T) {
	ts := newTestServer(t, fixtureReply(t, "migrate_response"))
	c := newTestClient(t, ts)
	if _, err := c.Migrate(context.Background(), tNode, tVMID, MigrateParams{Target: "pv1-2"}); err != nil {
		t.Fatal(err)
	}
	reqs := ts.requests()
	if len(reqs) != 1 || len(reqs[0].Form) != 1 || reqs[0].Form.Get("target") != "pv1-2" {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestClient_migrateRefusals: the refusals a migration meets before its task starts keep
// Proxmox's text and class: a running VM without online (500) and the VM's own
// node as the target (400, permanent). A target equal to the node is refused before sending.
func TestClient_migrateRefusals(t *testing.T) {
	for _, name := range []string{"err_migrate_running_offline", "err_migrate_target_local"} {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t, fixtureReply(t, name))
			c := newTestClient(t, ts)
			_, err := c.Migrate(context.Background(), tNode, tVMID, MigrateParams{Target: "pv1-2"})
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err %v, want an APIError", err)
			}
			f := fixture.MustLoad(name)
			if ae.Status != f.Status || ae.Message != f.Message() {
				t.Errorf("got %d %q, want %d %q", ae.Status, ae.Message, f.Status, f.Message())
			}
			if f.Status == 400 && Classify("update", err) != Permanent {
				t.Errorf("class %v, want Permanent", Classify("update", err))
			}
		})
	}
	ts := newTestServer(t, fixtureReply(t, "migrate_response"))
	c := newTestClient(t, ts)
	if _, err := c.Migrate(context.Background(), tNode, tVMID, MigrateParams{Target: tNode}); err == nil || Classify("update", err) != Permanent {
		t.Errorf("a migration onto the VM's own node: err %v", err)
	}
	if len(ts.requests()) != 0 {
		t.Errorf("%d requests sent for a refused migration", len(ts.requests()))
	}
}
