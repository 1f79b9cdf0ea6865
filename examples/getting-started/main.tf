# Getting started: one Squid proxy. The endpoint, token and CA come from the environment:
#   PROXMOX_VE_ENDPOINT, PROXMOX_VE_API_TOKEN, PROXMOX_VE_CA_FILE
terraform {
  required_providers {
    proxy = {
      source  = "proxy-operator/proxy"
      version = "~> 0.1"
    }
  }
}

provider "proxy" {
  nodes       = ["pve1"]               # your node names, as `pvecm nodes` shows them
  iso_storage = "proxy-seeds"          # an ISO storage the token may write to
  templates   = { "debian-13" = 9001 } # key => VMID of your cloud-init template
  machine_types = {
    small = { cores = 1, memory_mib = 1024 }
  }
}

resource "proxy_vm" "egress" {
  name         = "proxy-egress-1"
  image        = "debian-13"
  machine_type = "small"

  # Squid on port 3128, open to private networks. Changing cloud_init replaces the VM
  # (cloud_init_change = "restart" swaps the seed and restarts it in place instead).
  cloud_init = <<-EOT
    #cloud-config
    packages: [squid]
    write_files:
      - path: /etc/squid/conf.d/egress.conf
        content: |
          acl private_clients src 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16
          http_access allow private_clients
    runcmd:
      - systemctl restart squid
  EOT
}

output "proxy" {
  value = "${proxy_vm.egress.ip_address}:3128"
}
