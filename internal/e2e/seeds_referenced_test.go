package e2e

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// referenceForm is a way a VM somebody made by hand references a proxy VM's seed that a
// destroy's sweep and the clean-up once did not see (decision: seed-in-use).
type referenceForm struct {
	name string
	// attach makes VM vmid reference the seed file on storage (volid storage:iso/file).
	attach func(t *testing.T, sim *pvesim.Sim, vmid int, storage, file string)
	drive  string // what the clean-up's report names after "as "
}

var referenceForms = []referenceForm{
	// Only a snapshot names the seed and the config has no parent: taken s0 (no seed) and
	// s1 (the seed on ide2), rolled back to s0 and deleted s0, which Proxmox's
	// snapshot_delete leaves as s1 without parent and a config without parent.
	{"snapshot without parent", func(t *testing.T, sim *pvesim.Sim, vmid int, storage, file string) {
		patch := func(p pvesim.VMPatch) {
			t.Helper()
			if err := sim.SetVMState(vmid, p); err != nil {
				t.Fatal(err)
			}
		}
		op := func(op, name string) pvesim.VMPatch {
			return pvesim.VMPatch{SnapshotOps: []pvesim.SnapshotOp{{Op: op, Name: name}}}
		}
		patch(op("create", "s0"))
		patch(pvesim.VMPatch{Config: map[string]string{"ide2": storage + ":iso/" + file + ",media=cdrom"}})
		patch(op("create", "s1"))
		patch(op("rollback", "s0"))
		patch(op("delete", "s0"))
		v, _ := sim.VM(vmid)
		if v.Config["parent"] != "" || strings.Contains(v.Config["ide2"], file) {
			t.Fatalf("the rescue VM's config %v: want no parent and no seed", v.Config)
		}
	}, "ide2 in its snapshot s1"},
	// Attached by absolute path, where a directory storage keeps the file.
	{"absolute path", func(t *testing.T, sim *pvesim.Sim, vmid int, storage, file string) {
		if err := sim.SetVMState(vmid, pvesim.VMPatch{Config: map[string]string{
			"ide1": "/mnt/pve/" + storage + "/template/iso/" + file + ",media=cdrom",
		}}); err != nil {
			t.Fatal(err)
		}
	}, "ide1 (by path /mnt/pve/"},
}

// TestE2E_Seeds_ReferencedSeedIsNeverDeleted (Terraform 1.14+): a proxy VM is deleted
// outside Terraform (its seed stays), and a VM made by hand references that seed, only in
// a snapshot of a config with no parent, or by absolute path. Neither the workspace's
// destroy (its seed sweep) nor the proxy_orphan_cleanup action (a real run, the seed three
// hours old), in either order, deletes it: the clean-up reports it attached to that VM, naming it. Once the
// VM is gone, the next clean-up deletes the seed, and nothing of the provider's is left.
// Counted under seeds/referenced; a seed deleted while a VM referenced it is counted in
// the figures' ref-lost column, and fails the test.
func TestE2E_Seeds_ReferencedSeedIsNeverDeleted(t *testing.T) {
	needTF(t)
	tf := latestTerraform(t)
	for _, form := range referenceForms {
		for _, order := range []string{"clean-up first", "destroy first"} {
			t.Run(form.name+"/"+order, func(t *testing.T) {
				s := newScenario(t, "seeds/referenced", scenarioOpts{NoForeign: true})
				v := s.vm("a")
				s.vms = []tfrun.VM{v}
				s.mustApply()
				seed, _ := s.deleteOutOfBand(v.Name, false)
				storage, file, _ := strings.Cut(seed, ":iso/")
				node := s.sim.Nodes[0]
				const rescue = vmidMax
				if err := s.sim.AddVM(pvesim.VMSpec{VMID: rescue, Name: "rescue", Config: map[string]string{"ide2": "none,media=cdrom"}}); err != nil {
					t.Fatal(err)
				}
				form.attach(t, s.sim, rescue, storage, file)
				s.chk.Baseline.VMs[rescue], _ = s.sim.VM(rescue) // somebody else's: no path may touch it
				if err := s.sim.SetVolumeCTime(node, seed, time.Now().Add(-3*time.Hour)); err != nil {
					t.Fatal(err)
				}
				present := func() bool {
					for _, l := range s.seedVolumes() {
						if l == node+":"+seed {
							return true
						}
					}
					return false
				}
				ok, lost := true, 0
				fail := func(format string, args ...any) {
					ok = false
					t.Errorf(format, args...)
				}

				// The clean-up action, a real run.
				p := *provider
				p.Terraform = tf
				cw := p.NewWorkspace(t)
				cw.Timeout = commandTimeout
				if err := cw.WriteConfig(tfrun.RequiredProviders + s.pc.HCL() + cleanupAction(t, true)); err != nil {
					t.Fatal(err)
				}
				invoke := func() string {
					t.Helper()
					r := cw.Run(s.ctx, "apply", "-auto-approve", "-input=false", "-no-color", "-invoke=action.proxy_orphan_cleanup.all")
					if !r.OK() {
						fail("the clean-up failed:\n%s", r)
					}
					return strings.Join(strings.Fields(r.Output()), " ")
				}
				cleanUp := func() {
					if !present() {
						return
					}
					out := invoke()
					if !present() {
						lost++
						fail("the clean-up deleted seed %s, which VM %d references (%s):\n%s", seed, rescue, form.name, out)
					} else if want := fmt.Sprintf("attached to VM %d (rescue) as %s", rescue, form.drive); !strings.Contains(out, want) {
						fail("the clean-up's output lacks %q:\n%s", want, out)
					}
				}
				// The destroy of the VM deleted outside Terraform sweeps its seed.
				destroy := func() {
					was := present()
					if d := s.destroy(); !d.OK() {
						fail("destroy after the out-of-band delete failed:\n%s", d)
					}
					if was && !present() {
						lost++
						fail("the destroy deleted seed %s, which VM %d references (%s)", seed, rescue, form.name)
					}
				}
				if order == "clean-up first" {
					cleanUp()
					destroy()
				} else {
					destroy()
					cleanUp()
				}
				// The checker's Gone would count the kept seed as an orphan (it reads ide2 only):
				// the hand-made VM is compared here, and Gone runs once it is gone.
				if got, there := s.sim.VM(rescue); !there || !maps.Equal(got.Config, s.chk.Baseline.VMs[rescue].Config) {
					fail("VM %d was touched: %+v (present %v)", rescue, got.Config, there)
				}

				// Once nothing references it, the seed is the clean-up's to delete.
				delete(s.chk.Baseline.VMs, rescue)
				if err := s.sim.DeleteVM(rescue); err != nil {
					t.Fatal(err)
				}
				invoke()
				left := s.seedVolumes()
				if len(left) != 0 {
					fail("seed ISOs left once no VM references them: %v", left)
				}
				if g := s.chk.Gone(); !g.OK() {
					fail("after the last clean-up: %v", g.Err())
				}
				s.figure(func(row *figureRow) {
					row.Run++
					if ok && len(left) == 0 {
						row.Converged++
					}
					row.Orphans += len(left)
					row.RefLost += lost
				})
			})
		}
	}
}
