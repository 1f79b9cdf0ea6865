# One verdict per node of the provider's `nodes`. Reading it never fails because a node is
# unhealthy: the verdict is the data, and you decide what it gates.
data "proxy_health" "cluster" {
  timeouts = {
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

# A precondition blocks the apply of whatever depends on the gate while pv1-1 is not ready,
# with the reason in the error. The same lifecycle block fits on a proxy_vm.
locals {
  pv1_1 = one([for n in data.proxy_health.cluster.nodes : n if n.name == "pv1-1"])
}

resource "terraform_data" "proxmox_gate" {
  input = local.pv1_1.pve_version

  lifecycle {
    precondition {
      condition     = local.pv1_1.ready
      error_message = "Proxmox node pv1-1 is not ready (${local.pv1_1.reason}): ${local.pv1_1.message}"
    }
    precondition {
      condition     = coalesce(local.pv1_1.iso_storage_avail_gib, 0) >= 1
      error_message = "The ISO storage ${local.pv1_1.iso_storage} on pv1-1 has less than 1 GiB free."
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
