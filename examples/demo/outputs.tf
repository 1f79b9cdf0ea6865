output "proxies" {
  description = "Each proxy's VMID, node and address, and the proxy URL to use."
  value = {
    for k, vm in proxy_vm.squid : vm.name => {
      vmid       = vm.vmid
      node       = vm.node
      ip_address = vm.ip_address
      proxy_url  = "http://${vm.ip_address}:3128"
    }
  }
}

output "cluster" {
  description = "The health verdict of every node."
  value = {
    for n in data.proxy_health.cluster.nodes : n.name => "${n.reason}: ${n.pve_version}"
  }
}
