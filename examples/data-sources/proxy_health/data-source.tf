# One verdict per node of the provider's `nodes`. Reading it never fails because a node is
# unhealthy: the verdict is the data, and you decide what it gates.
data "proxy_health" "cluster" {
  timeouts {
    read = "20s" # a node that hangs is reported as Timeout after this; default 30s
  }
}

# A check block warns on every plan and apply while a node is not ready, without blocking.
check "proxmox_ready" {
  assert {
    condition = data.proxy_health.cluster.ready
    error_message = join("\n", [
      for n in data.proxy_health.cluster.nodes :
      "${n.name}: ${n.reason}: ${n.message}" if !n.ready
    ])
  }
}

# A precondition blocks the apply of whatever depends on the gate while a node is not ready,
# with the reasons in the error. The same lifecycle block fits on a proxy_vm.
locals {
  not_ready = [for n in data.proxy_health.cluster.nodes : n if !n.ready]
  low_space = [for n in data.proxy_health.cluster.nodes : n if coalesce(n.iso_storage_avail_gib, 0) < 1]
}

resource "terraform_data" "proxmox_gate" {
  input = [for n in data.proxy_health.cluster.nodes : n.pve_version]

  lifecycle {
    precondition {
      condition     = length(local.not_ready) == 0
      error_message = join("; ", [for n in local.not_ready : "Proxmox node ${n.name} is not ready (${n.reason}): ${n.message}"])
    }
    precondition {
      condition     = length(local.low_space) == 0
      error_message = join("; ", [for n in local.low_space : "The ISO storage ${n.iso_storage} on ${n.name} has less than 1 GiB free."])
    }
  }
}

output "proxmox_nodes" {
  value = {
    for n in data.proxy_health.cluster.nodes : n.name => {
      reason      = n.reason
      pve_version = n.pve_version
      templates   = n.templates
    }
  }
}
