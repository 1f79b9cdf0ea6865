# A proxy managed elsewhere (another workspace, or the Kubernetes operator), by name.
data "proxy_vm" "shared" {
  name = "proxy-a"
}

# By VMID: needed when two configurations each made a VM of the same name.
data "proxy_vm" "by_vmid" {
  vmid = 105967
}

# Allow-list both address families of the shared proxy at a destination.
output "shared_proxy_addresses" {
  value = concat(data.proxy_vm.shared.ipv4_addresses, data.proxy_vm.shared.ipv6_addresses)
}
