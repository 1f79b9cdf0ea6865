package provider

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// TestProxyVM_handEditedMarkIsNotOursNotDeleted: a VM whose mark was edited by hand (its uid
// changed, or the mark removed) still exists at the VMID. What Read records of the backend's
// answer says so, and the plan's warning says the VM with that VMID exists but is no longer
// shown to be this resource's, not that it was deleted outside Terraform; an update meeting it
// says it is not this resource's any more, not that it no longer exists. A VMID reused by a
// VM of another name is still "deleted outside Terraform".
func TestProxyVM_handEditedMarkIsNotOursNotDeleted(t *testing.T) {
	e := newDirectEnv(t, pvesim.Options{})
	id := func(s string) string { return s }
	for _, tc := range []struct {
		name    string
		edit    map[string]string
		notOurs bool
	}{
		{"uid edited", map[string]string{"description": proxmox.FormatMark(otherSpaceUID, time.Now())}, true},
		{"mark removed", map[string]string{"description": "egress for team A"}, true},
		{"renamed: VMID reused", map[string]string{"name": "db-1", "description": "made by hand"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := e.create(t, "mark-"+strings.ReplaceAll(strings.Fields(tc.name)[0], ":", ""), directUID)
			e.c.setConfig(vm.ID.VMID, tc.edit)
			_, err := e.b.Get(e.ctx, vm.ID, proxmox.GetOptions{UID: directUID})
			if !errors.Is(err, proxmox.ErrNotFound) {
				t.Fatalf("Get: %v, want NotFound (the refresh keeps it as gone)", err)
			}
			rec := goneRecordOf(err, id)
			if rec.NotOurs != tc.notOurs {
				t.Fatalf("recorded NotOurs %v, want %v (%v)", rec.NotOurs, tc.notOurs, err)
			}
			summary := goneSummary(rec)
			plan := goneDetailOf(vm.ID.Name, vm.ID.VMID, rec, "local:iso/x-seed.iso", true)
			destroy := goneDetailOf(vm.ID.Name, vm.ID.VMID, rec, "local:iso/x-seed.iso", false)
			upd := vmErrorDetail("update", vm.ID.Name, vm.ID.VMID, e.b.Update(e.ctx, vm.ID, proxmox.Changes{Cores: ptrInt(2), UID: directUID}), "")
			if tc.notOurs {
				if summary != "Proxy VM no longer shown to be this resource's" {
					t.Errorf("summary %q", summary)
				}
				for _, d := range []string{plan, destroy} {
					assertHas(t, d, fmt.Sprintf("The VM with VMID %d exists but is no longer shown to be this resource's", vm.ID.VMID), "leaves the VM at VMID")
					assertHasNot(t, d, "deleted outside Terraform")
				}
				assertHas(t, plan, "restore its mark")
				assertHas(t, upd, "exists but is not this resource's any more")
				assertHasNot(t, upd, "no longer exists")
			} else {
				if summary != "Proxy VM deleted outside Terraform" {
					t.Errorf("summary %q", summary)
				}
				assertHas(t, plan, "was deleted outside Terraform")
			}
			if c := e.c.config(vm.ID.VMID); c["cores"] == "2" {
				t.Error("the update reached the VM")
			}
		})
	}
}

func assertHas(t *testing.T, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("%q lacks %q", s, w)
		}
	}
}

func assertHasNot(t *testing.T, s, bad string) {
	t.Helper()
	if strings.Contains(s, bad) {
		t.Errorf("%q says %q", s, bad)
	}
}

// TestAccProxyVM_refusedReplacementOfAnExistingVM: a change that replaces an existing VM
// (disk_gib below the template's boot disk, with a node change beside it) and that the
// plan-time check refuses is worded for that VM: not "no VMID allocated yet" nor "Nothing
// was cloned", but the replacement this change needs, and the VM was not changed.
func TestAccProxyVM_refusedReplacementOfAnExistingVM(t *testing.T) {
	env, c := multiNodeEnv(t, "pv1-1", "pv1-2")
	name := vmName("repl")
	base := vmProviderConfig(env, "")
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             c.checkGone(name),
		Steps: []resource.TestStep{
			{Config: base + vmResource(env, name, fmt.Sprintf("  cores = 1\n  memory_mib = 512\n  node = %q\n  disk_gib = 4", env.Nodes[0]))},
			{
				Config:      base + vmResource(env, name, fmt.Sprintf("  cores = 1\n  memory_mib = 512\n  node = %q\n  disk_gib = 1", env.Nodes[1])),
				ExpectError: regexp.MustCompile(`(?s)\(the replacement this change\s+needs\).*below the boot disk.*The VM was not\s+changed`),
			},
			{
				Config:           base + vmResource(env, name, fmt.Sprintf("  cores = 1\n  memory_mib = 512\n  node = %q\n  disk_gib = 4", env.Nodes[0])),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
