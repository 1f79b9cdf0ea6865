package provider

import (
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// fleetAttributes are proxy_vm's attributes for running a fleet of proxies: the guest's
// addresses (proxy_vm_addresses.go), user tags, description and protection
// (proxy_vm_notes.go), network_config and static_ipv4 (proxy_vm_network.go).
func fleetAttributes() map[string]schema.Attribute {
	out := map[string]schema.Attribute{}
	maps.Copy(out, addressAttributes())
	maps.Copy(out, notesAttributes())
	out["started"] = startedAttribute()
	maps.Copy(out, networkAttributes())
	maps.Copy(out, powerAttributes())
	out["cloud_init_change"] = cloudInitChangeAttribute()
	maps.Copy(out, resourceAttributes(sizeAttrs()))
	return out
}

// withAttributes adds attrs to s; a name s already has is a programming error.
func withAttributes(s schema.Schema, attrs map[string]schema.Attribute) schema.Schema {
	for k, a := range attrs {
		if _, dup := s.Attributes[k]; dup {
			panic("proxy_vm schema: attribute " + k + " defined twice")
		}
		s.Attributes[k] = a
	}
	return s
}
