# Any of the three ID forms: vms/<vmid>/<name>, <vmid>, or <name>.
terraform import proxy_vm.egress vms/105967/proxy-a
terraform import proxy_vm.egress 105967
terraform import proxy_vm.egress proxy-a
