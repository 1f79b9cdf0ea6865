# Write-only cloud-init: the text, which holds a credential here, never enters the state or a
# plan's values. The provider block needs a digest key (or PROXY_CLOUD_INIT_DIGEST_KEY), and it
# must be kept: a new key replaces every VM made with cloud_init_wo.
#
#   provider "proxy" {
#     cloud_init_digest_key = var.cloud_init_digest_key
#   }
variable "upstream_password" {
  type      = string
  sensitive = true
  default   = "example-only"
}

resource "proxy_vm" "private" {
  name         = "proxy-private"
  image        = "debian-13"
  machine_type = "small"

  cloud_init_wo = <<-EOT
    #cloud-config
    packages: [squid]
    write_files:
      - path: /etc/squid/conf.d/upstream.conf
        permissions: "0600"
        content: |
          cache_peer upstream.example.com parent 3128 0 no-query login=egress:${var.upstream_password}
          never_direct allow all
    runcmd:
      - systemctl restart squid
  EOT
}
