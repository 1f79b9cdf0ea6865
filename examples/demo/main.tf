# The demo of `make demo`: three Squid proxies on a Proxmox cluster, gated on its health.
# scripts/demo.sh runs it against the standalone simulator; it runs unchanged against a real
# cluster given these variables (e.g. in a terraform.tfvars).

terraform {
  required_version = ">= 1.5"
  required_providers {
    proxy = {
      source = "proxy-operator/proxy"
    }
  }
}

provider "proxy" {
  endpoint    = var.endpoint
  api_token   = var.api_token
  ca_file     = var.ca_file
  nodes       = var.nodes
  iso_storage = var.iso_storage
  templates   = var.templates

  machine_types = {
    small = { cores = 1, memory_mib = 1024 }
  }

  # Keeps the demo's VMs apart from other configurations' on a shared cluster.
  uid_namespace = "proxy-demo"
}

# One verdict per node. The precondition below stops the apply before anything is created when
# a node is not ready; the check block keeps reporting it on every later plan.
data "proxy_health" "cluster" {}

locals {
  unhealthy = join("; ", [
    for n in data.proxy_health.cluster.nodes : "${n.name}: ${n.reason} (${n.message})" if !n.ready
  ])
}

check "cluster_ready" {
  assert {
    condition     = data.proxy_health.cluster.ready
    error_message = local.unhealthy
  }
}

resource "proxy_vm" "squid" {
  for_each = toset(var.proxies)

  name         = "proxy-demo-${each.key}"
  image        = var.image
  machine_type = "small"
  cloud_init   = file("${path.module}/squid.yaml")

  lifecycle {
    precondition {
      condition     = data.proxy_health.cluster.ready
      error_message = "The Proxmox cluster is not ready: ${local.unhealthy}"
    }
  }
}
