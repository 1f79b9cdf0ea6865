package provider

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Ownership with the real terraform binary (decision: identity-and-adoption, decision:
// creating-proof): a VM that only looks like this resource's gets no write, whatever the
// path. Each test counts the requests that reached the look-alike VM from the simulator's
// request log (every request but a GET naming its VMID) and compares its config.

// simProbe is the VMID a create of name tries at attempt, in the provider's default range.
func simProbe(name string, attempt int) int {
	return proxmox.ProbeVMID(uidFor("", name), attempt, 100000, 199999)
}

// untouched fails the test when a request other than a read named vmid since the log
// was enabled, or when its config, power or description changed since before.
func untouched(t *testing.T, sim *pvesim.Sim, vmid int, before pvesim.VMState) error {
	t.Helper()
	var wrote []string
	for _, r := range sim.RequestLog() {
		if r.VMID == vmid && r.Method != http.MethodGet {
			wrote = append(wrote, r.Method+" "+r.Path)
		}
	}
	after, ok := sim.VM(vmid)
	switch {
	case len(wrote) > 0:
		return fmt.Errorf("%d writes reached VM %d, which is not this resource's: %v", len(wrote), vmid, wrote)
	case !ok:
		return fmt.Errorf("VM %d, which is not this resource's, is gone", vmid)
	case after.Power != before.Power || after.Description != before.Description || !maps.Equal(after.Config, before.Config):
		return fmt.Errorf("VM %d, which is not this resource's, changed:\nbefore %+v\nafter  %+v", vmid, before, after)
	}
	return nil
}

// lookAlike adds a running VM named name at vmid with description, devices of its own
// (a second disk, a serial port, its own bridge options) and its own seed ISO.
func lookAlike(t *testing.T, sim *pvesim.Sim, vmid int, name, description string) pvesim.VMState {
	t.Helper()
	seed := name + "-theirs-seed.iso"
	if err := sim.AddISO(sim.Nodes[0], sim.ISOStorage, seed, []byte("their seed")); err != nil {
		t.Fatal(err)
	}
	if err := sim.AddVM(pvesim.VMSpec{VMID: vmid, Name: name, Power: "running", ShipsAgent: true, Config: map[string]string{
		"description": description,
		"scsi1":       "local-lvm:vm-" + strconv.Itoa(vmid) + "-disk-1,size=8G",
		"serial0":     "socket",
		"net0":        "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0,firewall=1",
		"ide2":        sim.ISOStorage + ":iso/" + seed + ",media=cdrom",
		"agent":       "1",
	}}); err != nil {
		t.Fatal(err)
	}
	v, _ := sim.VM(vmid)
	return v
}

// TestAccProxyVM_handWrittenCreatingMarkNotTakenOver: a running VM on the name's first
// probe VMID whose description claims, by hand, to be an interrupted create of this name
// (managed, namespace, state=creating, no proof) is left alone: no config write, no stop,
// no destroy, no seed; the create clones onto the next VMID, and destroy leaves it too.
func TestAccProxyVM_handWrittenCreatingMarkNotTakenOver(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("needs the simulator's request log")
	}
	name := vmName("forged")
	probe0 := simProbe(name, 0)
	desc := "proxy-operator-managed=true\nproxy-operator-namespace=\nproxy-operator-state=creating"
	var before pvesim.VMState
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			return untouched(t, env.Sim, probe0, before)
		},
		Steps: []resource.TestStep{{
			PreConfig: func() {
				before = lookAlike(t, env.Sim, probe0, name, desc)
				env.Sim.EnableRequestLog()
			},
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("vmid"), knownvalue.Int64Exact(int64(simProbe(name, 1)))),
			},
			Check: func(*terraform.State) error { return untouched(t, env.Sim, probe0, before) },
		}},
	})
}

// TestAccProxyVM_copiedHalfMadeVMNotTakenOver: an interrupted create left a half-made VM
// (its creating mark and proof made with this token for its VMID, the name's second probe);
// an operator full-cloned it, description and all, onto the first probe VMID. The next
// apply leaves the copy alone (its proof is for another VMID) and takes the genuine one
// over: one VM, tracked, at the second probe, with a new uid.
func TestAccProxyVM_copiedHalfMadeVMNotTakenOver(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("needs the simulator's request log")
	}
	c := newCluster(t, env)
	name := vmName("copied")
	probe0, probe1 := simProbe(name, 0), simProbe(name, 1)
	const prevUID = "3c2e8a41-5b6d-4f70-8a9b-0c1d2e3f4a5b"
	var before pvesim.VMState
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if _, left := env.Sim.VM(probe1); left {
				return fmt.Errorf("the taken-over VM %d is still there after destroy", probe1)
			}
			return untouched(t, env.Sim, probe0, before)
		},
		Steps: []resource.TestStep{{
			PreConfig: func() {
				key, err := pveapi.DeriveKey(env.Token, proxmox.ProofKeyLabel)
				if err != nil {
					t.Fatal(err)
				}
				desc := proxmox.CreatingMark(key, proxmox.MarkLines{UID: prevUID, CreatedAt: time.Now().Add(-10 * time.Minute)}, probe1, name)
				tmpl := env.Templates[imageKey(env)]
				for _, vmid := range []int{probe1, probe0} { // the genuine one, then its full clone
					ctx, cancel := c.ctx()
					upid, err := c.api.Clone(ctx, env.Nodes[0], tmpl, pveapi.CloneParams{NewID: vmid, Name: name, Description: desc})
					cancel()
					if err == nil {
						err = c.wait(env.Nodes[0], upid)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				before, _ = env.Sim.VM(probe0)
				env.Sim.EnableRequestLog()
			},
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("vmid"), knownvalue.Int64Exact(int64(probe1))),
				statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("uid"), knownvalue.StringFunc(func(v string) error {
					if v == prevUID || v == "" {
						return fmt.Errorf("uid %q, want a new one", v)
					}
					return nil
				})),
			},
			Check: func(*terraform.State) error {
				if err := untouched(t, env.Sim, probe0, before); err != nil {
					return err
				}
				v, _ := env.Sim.VM(probe1)
				if m := proxmox.ParseMark(v.Description); m.Creating || m.UID == prevUID {
					return fmt.Errorf("the genuine half-made VM was not finished: mark %+v", m)
				}
				return nil
			},
		}},
	})
}

// TestAccProxyVM_uidlessMarkOnReusedVMIDNotAdopted: the VM of a resource is deleted out
// of band and its VMID reused by a running VM of the same name whose description is only
// proxy-operator-managed=true and a note. Refresh does not adopt it (the state's uid is
// never replaced by an empty one: the resource is kept marked deleted and planned for
// replacement, decision: drift-gone, whose destroy half deletes only the seed the state
// recorded), the create refuses to clone beside a VM of its name that it cannot tell apart,
// naming the VMID, and neither the apply nor the destroy writes to that VM.
func TestAccProxyVM_uidlessMarkOnReusedVMIDNotAdopted(t *testing.T) {
	env := newTestEnv(t, pvesim.Options{})
	if env.Sim == nil {
		t.Skip("needs the simulator's request log")
	}
	name := vmName("reused")
	var vmid int
	var before pvesim.VMState
	cfg := vmProviderConfig(env, "") + vmResource(env, name, `  machine_type = "small"`)

	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			return untouched(t, env.Sim, vmid, before)
		},
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(vmAddr, tfjsonpath.New("uid"), knownvalue.StringRegexp(uuidV4RE)),
				},
				Check: func(s *terraform.State) (err error) {
					vmid, err = vmidOf(s, vmAddr)
					return err
				},
			},
			{
				PreConfig: func() {
					if err := env.Sim.DeleteVM(vmid); err != nil {
						t.Fatal(err)
					}
					before = lookAlike(t, env.Sim, vmid, name, "proxy-operator-managed=true\n\nreused by hand")
					env.Sim.EnableRequestLog()
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// Not an in-place update of the look-alike: the resource is gone, so it is
					// replaced (its destroy leaves the look-alike alone).
					plancheck.ExpectResourceAction(vmAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				// The VMID is known only once step 1 ran; the look-alike is the only VM of the name.
				ExpectError: regexp.MustCompile(`(?s)Unable to create proxy VM.*holds\s+a\s+VM\s+named.*carries\s+no\s+uid\s+line`),
			},
			{
				PreConfig: func() {
					if err := untouched(t, env.Sim, vmid, before); err != nil {
						t.Error(err)
					}
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}
