# Reboots the proxy gracefully (Terraform 1.14 and later), on demand:
#
#   terraform apply -invoke=action.proxy_vm_power.reboot_edge
#
# The guest has shutdown_timeout to power off, then Proxmox stops it; then it is started.
action "proxy_vm_power" "reboot_edge" {
  config {
    id               = proxy_vm.edge.id
    uid              = proxy_vm.edge.uid
    power            = "reboot"
    shutdown_timeout = "1m"
  }
}

# ... or whenever something else changes: here, each time the release changes.
resource "terraform_data" "squid_release" {
  input = var.squid_release

  lifecycle {
    action_trigger {
      events  = [after_update]
      actions = [action.proxy_vm_power.reboot_edge]
    }
  }
}

variable "squid_release" {
  type    = string
  default = "6.10"
}
