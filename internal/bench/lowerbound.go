package bench

import (
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// Op is one measured terraform command of a scenario.
type Op string

// The four operations of a scenario, in the order they run.
const (
	OpCreate  Op = "create"  // terraform apply of N new VMs
	OpPlan    Op = "plan"    // terraform plan right after: a refresh that finds no change
	OpUpdate  Op = "update"  // terraform apply of a memory change: in place, with a restart
	OpDestroy Op = "destroy" // terraform destroy
)

// Ops lists the operations in run order.
var Ops = []Op{OpCreate, OpPlan, OpUpdate, OpDestroy}

// Waves is how many rounds N resources take at parallelism P: ceil(N/P).
func Waves(n, p int) int {
	if n <= 0 {
		return 0
	}
	if p <= 0 {
		p = 1
	}
	return (n + p - 1) / p
}

// Path is the simulated critical path of one VM for an operation: the task durations and
// agent delays that one VM waits through one after the other, at the simulator's pace
// (speed 1). A plan runs no task: its path is zero.
//
//   - create: clone, seed upload, resize (when the disk grows), start, then the guest agent
//     installed at first boot (AgentInstall) and its DHCP lease (wait_for_ip is on);
//   - update of memory on a running VM: stop, start, then the agent's boot and the lease;
//   - destroy: stop, seed delete, destroy.
func Path(op Op, d pvesim.Durations, resize bool) time.Duration {
	switch op {
	case OpCreate:
		t := d.Clone + d.Upload + d.Start + d.AgentInstall + d.DHCP
		if resize {
			t += d.Resize
		}
		return t
	case OpUpdate:
		return d.Stop + d.Start + d.AgentBoot + d.DHCP
	case OpDestroy:
		return d.Stop + d.VolumeDelete + d.Destroy
	}
	return 0
}

// Migration is what a create adds when its VM goes to another node than the template's
// and the template is on node-local storage: the clone lands on the template's node and
// migrates, stopped, before the seed upload (the simulator's qmigrate task lasts the
// clone's duration).
func Migration(d pvesim.Durations) time.Duration { return d.Clone }

// LowerBound is the least wall time an operation on n VMs at parallelism p can take
// against a simulator running speed times faster than a real host: ceil(n/p) waves of
// the critical path, divided by the speed. migrate says every create needs a migration.
func LowerBound(op Op, n, p int, d pvesim.Durations, resize, migrate bool, speed float64) time.Duration {
	if speed <= 0 {
		speed = 1
	}
	path := Path(op, d, resize)
	if op == OpCreate && migrate {
		path += Migration(d)
	}
	return time.Duration(float64(Waves(n, p)) * float64(path) / speed)
}
