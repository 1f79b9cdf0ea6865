# Two proxies on two nodes, so that one keeps serving while a node is down. Each VM is pinned
# to its node; a change of node migrates it in place.
variable "proxy_pair_nodes" {
  type    = list(string)
  default = ["pve1", "pve2"]
}

resource "proxy_vm" "pair" {
  count        = 2
  name         = "proxy-pair-${count.index + 1}"
  node         = var.proxy_pair_nodes[count.index]
  image        = "debian-13"
  machine_type = "small"

  cloud_init = <<-EOT
    #cloud-config
    packages: [squid]
    runcmd:
      - systemctl enable --now squid
  EOT
}

output "proxy_pair" {
  value = [for vm in proxy_vm.pair : "${vm.ip_address}:3128"]
}
