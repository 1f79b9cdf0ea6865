# Every VM in the cluster that carries the provider's mark, made by Terraform or by the
# Kubernetes operator.
data "proxy_vms" "all" {}

# Narrowed to one node (one of the provider's nodes) and a naming scheme.
variable "edge_node" {
  type = string
}

data "proxy_vms" "edge" {
  node       = var.edge_node
  name_regex = "^proxy-edge-"
}

# The proxies this provider made (not the operator's) whose names start with "proxy-edge-":
# every address of each, to allow-list at a destination. A node the cluster does not have
# is an error, not an empty list.
data "proxy_vms" "edge_fleet" {
  name_prefix = "proxy-edge-"
  made_by     = "provider"
}

output "edge_fleet_addresses" {
  value = { for vm in data.proxy_vms.edge_fleet.vms : vm.name => concat(vm.ipv4_addresses, vm.ipv6_addresses) }
}

output "marked_vms" {
  value = { for vm in data.proxy_vms.all.vms : vm.id => "${vm.node} ${vm.status} since ${coalesce(vm.created_at, "?")}" }
}

# Seed ISOs no VM uses (proved: the API token sees every VM), left by VMs deleted outside
# Terraform whose state is gone: surface them, for proxy_orphan_cleanup or by hand.
check "no_orphan_seeds" {
  assert {
    condition     = length([for s in data.proxy_vms.all.orphan_seeds : s if s.proved]) == 0
    error_message = "Seed ISOs without a VM, delete them with proxy_orphan_cleanup or in Proxmox: ${join(", ", [for s in data.proxy_vms.all.orphan_seeds : "${s.node}:${s.volid}" if s.proved])}"
  }
}
