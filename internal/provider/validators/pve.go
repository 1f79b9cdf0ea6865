package validators

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// Proxmox's own formats for the values the provider writes into Proxmox option strings
// (net0's bridge=, ide2's <storage>:iso/<file>), clone parameters or API paths (a node).
// Each follows the format Proxmox checks the same value with (pve-common
// src/PVE/JSONSchema.pm: the sub named in each comment), so a value Proxmox would refuse,
// or one that carries a ',' '=' ';' or a newline into an option string, is refused at
// plan time on its attribute, before any request.

// pveFormat is a validator for one Proxmox format.
type pveFormat struct {
	re   *regexp.Regexp
	name string // Proxmox's name for the format
	rule string // what the value must be, for the message
}

var _ validator.String = pveFormat{}

func (f pveFormat) Description(context.Context) string {
	return "must be a Proxmox " + f.name + ": " + f.rule
}

func (f pveFormat) MarkdownDescription(ctx context.Context) string { return f.Description(ctx) }

func (f pveFormat) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v := req.ConfigValue.ValueString()
	if !f.re.MatchString(v) {
		resp.Diagnostics.AddAttributeError(req.Path, summary,
			fmt.Sprintf("Attribute %s %s, got %q.", req.Path, f.Description(ctx), v))
	}
}

// bridgeIDRE is pve-bridge-id (parse_bridge_id: ^[-_.\w\d]+$, \w taken as ASCII here), at
// most 15 characters: a Linux interface name is shorter than IFNAMSIZ (16).
var bridgeIDRE = regexp.MustCompile(`^[-_.A-Za-z0-9]{1,15}$`)

// BridgeID accepts a Linux bridge (or SDN VNet) name as net0's bridge= takes it.
func BridgeID() validator.String {
	return pveFormat{re: bridgeIDRE, name: "bridge id (pve-bridge-id)",
		rule: "1 to 15 letters, digits, '-', '_' or '.', such as vmbr0"}
}

// storageIDRE is pve-storage-id (parse_id: at least 2 characters, a letter first, then
// letters, digits, '-', '_' or '.', a letter or digit last).
var storageIDRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9]$`)

// StorageID accepts a storage id.
func StorageID() validator.String {
	return pveFormat{re: storageIDRE, name: "storage id (pve-storage-id)",
		rule: "a letter, then letters, digits, '-', '_' or '.', ending with a letter or digit, at least 2 characters, such as local-lvm"}
}

// nodeNameRE is pve-node (pve_verify_node_name: letters, digits and '-', not starting or
// ending with '-') in lowercase, as node names are written in /etc/pve/nodes, at most 63
// characters (a host name label).
var nodeNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// NodeName accepts a node name.
func NodeName() validator.String {
	return pveFormat{re: nodeNameRE, name: "node name (pve-node)",
		rule: "1 to 63 lowercase letters, digits or '-', not starting or ending with '-', such as pve1"}
}

// tagRE is pve-tag (pve_verify_tag: ^[a-z0-9_][a-z0-9_\-\+\.]*$ case-insensitively) in
// lowercase only, which is what Proxmox stores, so the plan never shows a case change.
var tagRE = regexp.MustCompile(`^[a-z0-9_][a-z0-9_+.-]*$`)

// Tag accepts a VM tag.
func Tag() validator.String {
	return pveFormat{re: tagRE, name: "tag (pve-tag)",
		rule: "lowercase letters, digits and '_', then also '-', '+' and '.'"}
}
