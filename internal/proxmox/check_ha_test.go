package proxmox

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// noQuorumAPI answers the HA status of a cluster that lost quorum.
type noQuorumAPI struct{ *fakeAPI }

func (a noQuorumAPI) HAStatus(context.Context) ([]pveapi.HAStatusEntry, error) {
	return []pveapi.HAStatusEntry{{ID: "quorum", Type: "quorum", Node: "pv1-1", Status: "No quorum on node 'pv1-1'!", Quorate: false}}, nil
}

func TestCheckHA_verdicts(t *testing.T) {
	for _, tc := range []struct {
		name       string
		privs      map[string][]string
		noQuorum   bool
		usable     bool
		missing    []string
		statusRead bool
		message    string
	}{
		{"usable", map[string][]string{"/": {"Sys.Audit", "Sys.Console"}}, false, true, []string{}, true, "HA is usable"},
		{"read only", map[string][]string{"/": {"Sys.Audit"}}, false, false, []string{"Sys.Console on /"}, true, "Sys.Console on / (to create, change and delete"},
		// A pool grant reaches no HA path: nothing is read without Sys.Audit on /.
		{"pool only", map[string][]string{"/pool/proxies": {"Sys.Audit", "Sys.Console"}}, false, false, []string{"Sys.Audit on /", "Sys.Console on /"}, false, "Sys.Audit on / (to read HA rules"},
		{"no quorum", map[string][]string{"/": {"Sys.Audit", "Sys.Console"}}, true, false, []string{}, true, "not quorate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "pv1-1", "pv1-2")
			h.f.privs = tc.privs
			if tc.noQuorum {
				h.b.api = noQuorumAPI{h.f}
			}
			got := h.b.CheckHA(h.ctx)
			if got.Usable != tc.usable || !reflect.DeepEqual(got.MissingPrivileges, tc.missing) || !strings.Contains(got.Message, tc.message) {
				t.Fatalf("CheckHA = %+v, want usable %v, missing %v, a message with %q", got, tc.usable, tc.missing, tc.message)
			}
			if got.QuorumKnown != tc.statusRead || (tc.statusRead && !tc.noQuorum && !got.Quorate) {
				t.Fatalf("quorum: %+v", got)
			}
			if n := h.f.calls("HAStatus"); !tc.noQuorum && (n == 1) != tc.statusRead {
				t.Fatalf("%d HA status reads", n)
			}
		})
	}
}

func TestPreflightHA_namesPrivilegeAndPath(t *testing.T) {
	h := newHarness(t, "pv1-1")
	h.f.privs = map[string][]string{"/": {"Sys.Audit"}, "/pool/proxies": {"Sys.Console"}}
	err := h.b.PreflightHA(h.ctx)
	var pe *PreflightError
	if !errors.As(err, &pe) || pe.Subject != SubjectHA || ClassOf(err) != pveapi.Permanent ||
		!strings.Contains(err.Error(), "Sys.Console on / (to create, change and delete HA rules and HA resources)") || strings.Contains(err.Error(), "Sys.Audit on /") {
		t.Fatalf("PreflightHA = %v", err)
	}
	if err2 := h.b.PreflightHA(h.ctx); err2 == nil || h.f.calls("Permissions") != 1 {
		t.Fatalf("second PreflightHA: %v after %d reads, want the cached verdict", err2, h.f.calls("Permissions"))
	}
	h = newHarness(t, "pv1-1")
	h.f.privs = map[string][]string{"/": {"Sys.Audit", "Sys.Console"}}
	if err := h.b.PreflightHA(h.ctx); err != nil {
		t.Fatalf("PreflightHA with both privileges: %v", err)
	}
}
