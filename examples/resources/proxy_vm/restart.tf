# A proxy whose cloud-init is its configuration. With cloud_init_change = "restart" a change of
# the text uploads a new seed ISO and restarts the VM in place (same VMID, MAC address and
# disk) instead of replacing it. The guest then regenerates its SSH host keys.
resource "proxy_vm" "acl" {
  name              = "proxy-acl"
  image             = "debian-13"
  machine_type      = "small"
  cloud_init_change = "restart"

  cloud_init = <<-EOT
    #cloud-config
    packages: [squid]
    write_files:
      - path: /etc/squid/conf.d/clients.conf
        content: |
          acl clients src 10.20.0.0/16
          http_access allow clients
    runcmd:
      - systemctl restart squid
  EOT
}
