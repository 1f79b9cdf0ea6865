# A proxy VM from the catalogue: template "debian-13" and machine type "small" are keys of the
# provider's templates and machine_types.
resource "proxy_vm" "egress" {
  name         = "proxy-a"
  image        = "debian-13"
  machine_type = "small"

  # cloud-init user-data, delivered byte for byte on the seed ISO. Changing it replaces the VM.
  cloud_init = <<-EOT
    #cloud-config
    packages: [squid]
    runcmd:
      - systemctl enable --now squid
  EOT
}

# Explicit sizes and network, from a template outside the catalogue. With several provider
# nodes, node = "<one of them>" places it; with one, it goes there.
resource "proxy_vm" "big" {
  name          = "proxy-b"
  template_vmid = 9001
  cores         = 4    # in place: a graceful restart of the running VM, which the plan warns about
  memory_mib    = 4096 # in place, same (applied without a restart on a VM with memory hotplug)
  # How long the guest gets to shut down for that restart before Proxmox stops it.
  shutdown_timeout = "3m"
  # With false, a cores or memory change is left pending until the VM restarts, and every
  # plan shows it until then.
  # reboot_on_change = false
  disk_gib      = 20 # growing is in place; shrinking replaces the VM
  bridge        = "vmbr1"
  vlan_tag      = 10 # in place: net0 rewritten, model and MAC kept
  start_on_boot = true
  wait_for_ip   = true

  timeouts {
    create = "30m"
    delete = "15m"
  }
}

# A production proxy: tags beside proxy_operator (lowercase, as Proxmox stores them) and a
# note beside the ownership mark, both changed in place without a restart.
resource "proxy_vm" "prod" {
  name         = "proxy-prod-1"
  image        = "debian-13"
  machine_type = "small"
  tags         = ["prod", "egress"]
  description  = "Egress proxy for the payments team. Owner: netops."

  # Proxmox's protection flag: destroy (and replacement) is then refused until
  # protection = false has been applied.
  # protection = true
}

# A proxy pinned to a static address, as destinations that allow-list egress by IP need. The
# provider renders a version 2 network-config matching the NIC by its MAC; ip_address is known
# at plan time and the create waits until the guest agent reports this address. Changing it
# replaces the VM (cloud-init applies network config at first boot only). For anything else
# (several NICs, IPv6, bonds) set network_config to a netplan-style document instead.
resource "proxy_vm" "pinned" {
  name         = "proxy-pinned"
  image        = "debian-13"
  machine_type = "small"

  static_ipv4 = {
    address = "10.20.0.10/24"
    gateway = "10.20.0.1"
    dns     = ["10.20.0.53"]
    search  = ["corp.example"]
  }
}

output "proxy_a_ip" {
  value = proxy_vm.egress.ip_address
}
