# The full ID: the VMID is checked against the name and the mark.
import {
  to = proxy_vm.a
  id = "vms/105967/proxy-a"
}

# The VMID alone.
import {
  to = proxy_vm.b
  id = "107076"
}

# The name alone (refused when two VMs carry it).
import {
  to = proxy_vm.c
  id = "proxy-c"
}

resource "proxy_vm" "a" {
  name         = "proxy-a"
  image        = "debian-13"
  machine_type = "small"
}

resource "proxy_vm" "b" {
  name         = "proxy-b"
  image        = "debian-13"
  machine_type = "small"
}

resource "proxy_vm" "c" {
  name         = "proxy-c"
  image        = "debian-13"
  machine_type = "small"
  # cloud_init cannot be read back: after the import it is recorded in place, never a
  # replacement. Changing it later replaces the VM.
  cloud_init = file("${path.module}/squid.yaml")
}
