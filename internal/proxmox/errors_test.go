package proxmox

import (
	"context"
	"errors"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func TestClassOf_table(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want pveapi.Class
	}{
		{"Permanentf", Permanentf("x"), pveapi.Permanent},
		{"Transientf", Transientf("x"), pveapi.Transient},
		{"notFoundf", notFoundf("x"), pveapi.NotFound},
		{"ErrNotFound", ErrNotFound, pveapi.NotFound},
		{"wrapped Permanentf", wrapMsg("doing", Permanentf("x")), pveapi.Permanent},
		{"403", fixtureErr("err_forbidden_volume_delete"), pveapi.Permanent},
		{"401", fixtureErr("err_auth_failed"), pveapi.Permanent},
		{"400 field error", fixtureErr("err_bad_param"), pveapi.Permanent},
		{"does not exist", fixtureErr("err_not_exist"), pveapi.NotFound},
		{"does not exist inside create", wrap("create", "a", 1, fixtureErr("err_not_exist")), pveapi.Transient},
		{"NotFound error inside create", wrap("create", "a", 1, notFoundf("gone")), pveapi.Transient},
		{"locked", fixtureErr("err_locked_clone"), pveapi.Transient},
		{"596", fixtureErr("err_596"), pveapi.Transient},
		{"cancelled", context.Canceled, pveapi.Transient},
		{"other", errors.New("x"), pveapi.Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassOf(tc.err); got != tc.want {
				t.Errorf("ClassOf = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestError_namesOperationAndVM(t *testing.T) {
	err := wrap("delete", "proxy-a", 105967, apiErrorf("delete", fixtureErr("err_forbidden_volume_delete"), "deleting the seed"))
	assertClass(t, err, pveapi.Permanent)
	assertContains(t, err.Error(), "delete VM proxy-a (VMID 105967): deleting the seed: ", "Datastore.Allocate")
	var ae *pveapi.APIError
	if !errors.As(err, &ae) {
		t.Error("the APIError is not reachable with errors.As")
	}
	if got := wrap("get", "", 0, Transientf("x")).Error(); got != "get VM: x" {
		t.Errorf("no VM known: %q", got)
	}
}
