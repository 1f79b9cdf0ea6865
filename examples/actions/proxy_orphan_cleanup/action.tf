# Deletes the seed ISOs no VM uses and the half-made VMs of this configuration's
# uid_namespace once they are older than grace_period (Terraform 1.14 and later):
#
#   terraform apply -invoke=action.proxy_orphan_cleanup.all
#
# dry_run defaults to true, so this first run only reports what it would delete. Read the
# report, then set dry_run = false and invoke it again to delete.
action "proxy_orphan_cleanup" "all" {
  config {
    dry_run      = true
    grace_period = "2h"
  }
}
