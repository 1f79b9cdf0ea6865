# Two proxies that are never on the same node: each VM is an HA resource (ha), and one
# negative resource-affinity rule keeps them apart. When the node of one fails, HA starts it
# on a node the other is not on.
resource "proxy_vm" "pair" {
  count        = 2
  name         = "proxy-${count.index}"
  image        = "debian-13"
  machine_type = "small"
  ha           = {}

  cloud_init = <<-EOT
    #cloud-config
    packages: [squid]
  EOT
}

resource "proxy_ha_rule" "apart" {
  name     = "proxy-pair-apart"
  type     = "resource-affinity"
  affinity = "negative"
  vms      = proxy_vm.pair[*].vmid
  comment  = "egress proxies: one per node"
}

# Keep the pair on pve1 and pve2. With strict = true a VM whose allowed nodes are all down
# stays stopped instead of running elsewhere. A node-affinity rule on VMs that are also in a
# resource-affinity rule must give every node the same priority (Proxmox refuses it otherwise).
resource "proxy_ha_rule" "on_two_nodes" {
  name   = "proxy-pair-nodes"
  type   = "node-affinity"
  nodes  = { pve1 = 0, pve2 = 0 }
  strict = true
  vms    = proxy_vm.pair[*].vmid
}
