package provider

import (
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// warnRecentPassed warns about each finished VM of the created VM's name and namespace
// that the create left alone and that is younger than the create timeout. Such a VM is
// another resource's (another workspace's, a create_before_destroy predecessor made a
// moment ago), or the VM of a create killed right after its last step and before Terraform
// saved it: the two cannot be told apart, so the create never takes it over, but the user
// is told, with the VMID and the import command. An older VM (the usual create_before_
// destroy predecessor) is not mentioned.
func warnRecentPassed(diags *diag.Diagnostics, name string, vm proxmox.VM, createdAt time.Time, timeout time.Duration) {
	for _, p := range vm.Passed {
		if p.CreatedAt.IsZero() {
			continue
		}
		age := createdAt.Sub(p.CreatedAt)
		if age > timeout {
			continue
		}
		ago := "less than a second"
		if age >= time.Second {
			ago = age.Round(time.Second).String()
		}
		diags.AddWarning("Recent proxy VM of the same name left alone",
			fmt.Sprintf("%s was created. VMID %d on node %s also holds a finished VM named %q of this provider in the "+
				"same uid_namespace, whose create started %s before this one (within the create timeout of %s); this create left it alone. "+
				"It is another resource's VM (another workspace's, or a replacement's predecessor), or the VM of an "+
				"apply killed right after its create finished and before Terraform saved it. "+
				"If no Terraform state tracks VMID %d (the proxy_vms data source lists it), import it into a resource "+
				"of its own with `terraform import <address> vms/%d/%s`, or destroy it in Proxmox.",
				vmLabel(name, vm.ID.VMID), p.VMID, p.Node, name, ago, timeout, p.VMID, p.VMID, name))
	}
}

// startedBy is the process that started this provider: Terraform (or, in debug mode, the
// developer's shell). When it dies, the kernel re-parents the provider at once, before
// the gRPC connection's close reaches the request's context.
var startedBy = os.Getppid()

// parentGone reports that the process that started the provider (pid) is gone: the
// provider has been re-parented. A create whose Terraform is gone skips its last step
// (Spec.Abandoned), so that the VM stays "creating" and the next apply takes it over.
func parentGone(pid int) bool { return os.Getppid() != pid }
