variable "endpoint" {
  description = "Proxmox API endpoint, https://<host>:8006."
  type        = string
}

variable "api_token" {
  description = "API token, <user>@<realm>!<tokenid>=<secret>."
  type        = string
  sensitive   = true
}

variable "ca_file" {
  description = "PEM file of the CA that signed the endpoint's certificate."
  type        = string
}

variable "nodes" {
  description = "Proxmox node names the proxies may run on."
  type        = list(string)
}

variable "iso_storage" {
  description = "ISO-only storage for the seed ISOs."
  type        = string
}

variable "templates" {
  description = "Template catalogue: key to template VMID."
  type        = map(number)
}

variable "image" {
  description = "Key of var.templates the proxies are cloned from."
  type        = string
  default     = "debian-13"
}

variable "proxies" {
  description = "One proxy per entry, named proxy-demo-<entry>."
  type        = list(string)
  default     = ["a", "b", "c"]
}
