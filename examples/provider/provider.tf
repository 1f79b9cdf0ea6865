terraform {
  required_providers {
    proxy = {
      source = "proxy-operator/proxy"
    }
  }
}

# Credentials: api_token_file below, api_token, or the PROXMOX_VE_API_TOKEN environment variable.
provider "proxy" {
  endpoint = "https://192.168.0.8:8006"
  # One line <user>@<realm>!<tokenid>=<secret>, re-read on every request.
  api_token_file = pathexpand("~/.config/proxmox-token")
  # The cluster CA, a copy of /etc/pve/pve-root-ca.pem.
  ca_file = pathexpand("~/.config/proxmox-ca.pem")

  nodes       = var.proxmox_nodes # the nodes' names as Proxmox shows them (pvecm nodes)
  iso_storage = "proxy-seeds"     # ISO-only; the token holds Datastore.Allocate there
  storage     = "local-lvm"       # where clones' disks go; default: the template's storage

  bridge   = "vmbr0"
  vlan_tag = 4

  # The pool every clone is made into: a privilege-separated token granted on /pool/proxies
  # (see the setup guide) can then act on these VMs and nothing else.
  pool = "proxies"

  vmid_range = {
    min = 100000
    max = 199999
  }

  templates = {
    "debian-13" = 9001
  }

  machine_types = {
    small  = { cores = 1, memory_mib = 1024 }
    medium = { cores = 2, memory_mib = 2048, disk_gib = 10 }
  }

  request_timeout        = "30s" # one API request, response included
  max_requests_in_flight = 8     # API requests this provider runs at once
  install_guest_agent    = true  # the seed installs qemu-guest-agent at first boot

  # One value per configuration sharing the cluster: another configuration's VM with the same
  # name is then refused (with the import command) instead of adopted. Default "".
  uid_namespace = "team-egress"
}

variable "proxmox_nodes" {
  type        = list(string)
  description = "Names of the Proxmox VE nodes proxy VMs may run on."
}
