# fleet.tfquery.hcl, beside a configuration that configures the provider.
# terraform query lists the marked VMs; -generate-config-out=fleet.tf also writes an import
# block (by identity) and a proxy_vm block for each.
list "proxy_vm" "edge" {
  provider         = proxy
  include_resource = true
  config {
    name_prefix = "proxy-edge-"
    made_by     = "provider"
  }
}
