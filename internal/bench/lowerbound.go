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

// PathOptions shape the critical path.
type PathOptions struct {
	// Resize: the machine type's disk is larger than the template's, so a create resizes.
	Resize bool
	// Migrate: every create needs a migration (its VM goes to another node than the
	// template's, which is on node-local storage): Migration is added after the clone.
	Migrate bool
	// Shutdown is the guest's graceful shutdown time: an update restarts the VM with a
	// shutdown (the simulator's Durations.Shutdown); 0 counts a stop instead.
	Shutdown time.Duration
}

// Path is the simulated critical path of one VM for an operation, at speed 1: the task
// durations and agent delays it waits through one after the other, steps independent of each
// other counting once as the longer. create: max(clone, seed upload), then resize, start,
// agent install and DHCP; update: shutdown (or a stop), start, agent boot and DHCP; destroy:
// max(stop, seed delete), then the destroy. A plan runs no task: zero.
func Path(op Op, d pvesim.Durations, o PathOptions) time.Duration {
	switch op {
	case OpCreate:
		t := max(d.Clone, d.Upload) + d.Start + d.AgentInstall + d.DHCP
		if o.Resize {
			t += d.Resize
		}
		if o.Migrate {
			t += Migration(d)
		}
		return t
	case OpUpdate:
		halt := d.Stop
		if o.Shutdown > 0 {
			halt = o.Shutdown
		}
		return halt + d.Start + d.AgentBoot + d.DHCP
	case OpDestroy:
		return max(d.Stop, d.VolumeDelete) + d.Destroy
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
// the critical path, divided by the speed.
func LowerBound(op Op, n, p int, d pvesim.Durations, o PathOptions, speed float64) time.Duration {
	if speed <= 0 {
		speed = 1
	}
	return time.Duration(float64(Waves(n, p)) * float64(Path(op, d, o)) / speed)
}
