# A replacement (a new template, say) creates the new VM before it destroys the old one: each
# has its own uid, VMID and seed ISO, so both run side by side for a moment. Use DHCP here: with
# static_ipv4 both VMs would hold the same address.
resource "proxy_vm" "edge" {
  name         = "proxy-edge"
  image        = "debian-13"
  machine_type = "small"

  cloud_init = <<-EOT
    #cloud-config
    packages: [squid]
    runcmd:
      - systemctl enable --now squid
  EOT

  lifecycle {
    create_before_destroy = true
  }
}
