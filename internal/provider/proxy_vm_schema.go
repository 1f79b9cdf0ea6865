package provider

import (
	"context"
	"maps"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
)

// vmNameRE is a DNS label: the VM name is also the guest's hostname (meta-data
// local-hostname) and part of the seed ISO's file name.
var vmNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Default operation timeouts (the backend's budgets fit inside them, decision: poll-schedule).
const (
	defaultCreateTimeout = "20m"
	defaultReadTimeout   = "5m"
	defaultUpdateTimeout = "20m"
	defaultDeleteTimeout = "10m"
)

func proxyVMSchema(ctx context.Context) schema.Schema {
	return withPlainDescriptions(withAttributes(schema.Schema{
		Version:             0,
		MarkdownDescription: proxyVMMarkdown(),
		Attributes:          map[string]schema.Attribute{},
		Blocks: map[string]schema.Block{
			"timeouts": positiveTimeouts(timeouts.Block(ctx, timeouts.Opts{
				Create: true, Read: true, Update: true, Delete: true,
				CreateDescription: "How long create may take, clone to IP address (default " + defaultCreateTimeout + ").",
				ReadDescription:   "How long a refresh may take (default " + defaultReadTimeout + ").",
				UpdateDescription: "How long an in-place update may take, restart and IP wait included (default " + defaultUpdateTimeout + ").",
				DeleteDescription: "How long delete may take: stop, seed delete, destroy (default " + defaultDeleteTimeout + ").",
			})),
		},
	}, conceptAttributes()))
}

// proxyVMMarkdown is the resource's description.
func proxyVMMarkdown() string {
	return `A proxy VM: a full clone of a template on a Proxmox VE node, booted with a NoCloud seed ISO
that carries ` + "`cloud_init`" + `, and marked as managed by this provider (the same mark as the proxy
operator's, so VMs made by either can be imported by the other).

Create blocks until the VM runs and, unless ` + "`wait_for_ip = false`" + `, until its guest agent reports an
IPv4 address. As soon as the VMID is known it is saved in the state, so a failed or interrupted
create leaves a tainted resource that the next apply replaces, never an untracked VM.

**In place:** ` + restartAttrsMD("and") + ` (config write, then a graceful restart of a running VM, which
the plan warns about: see "Restarts" below), a larger
` + "`disk_gib`" + ` (resize), ` + "`bridge` and `vlan_tag`" + ` (net0 rewrite keeping model and MAC),
` + "`start_on_boot`" + `, ` + "`pool`" + ` (a move between pools, which needs ` + "`Pool.Allocate`" + ` on both), and a VM found stopped,
paused or hibernated is started again. A ` + "`node`" + ` change
migrates the VM (online when it runs: its address, MAC, VMID and disks stay), and so does a VM found on another
node than the configured one, unless ` + "`migrate_back = false`" + `. Without ` + "`node`" + ` the VM is placed automatically
at create and stays where it is.

**Restarts.** Proxmox applies a ` + restartAttrsMD("or") + ` change to a running VM at its next start. The
apply shuts the guest down (the guest agent's shutdown when the agent answers, else ACPI), gives it
` + "`shutdown_timeout`" + ` (default 2m), lets Proxmox stop it if it is still up, and starts it again. With
` + "`reboot_on_change = false`" + ` the change is written and left pending instead: the state reports what the VM
runs with, so every plan shows the change (and warns that it is pending) until the VM restarts, by
` + "`started`" + ` going ` + "`false`" + ` then ` + "`true`" + `, or a stop and start in Proxmox (a reboot inside the guest does not
apply it). Memory on a VM with memory hotplug (` + "`hotplug`" + ` naming ` + "`memory`" + `, ` + "`numa: 1`" + `) applies
without a restart, in DIMM steps; cores always need the restart (Proxmox hotplugs only ` + "`vcpus`" + `, which this
provider does not manage).

**Replacement:** ` + "`name`" + `, the template (` + "`image`/`template_vmid`" + `), ` + "`cloud_init`" + `,
` + "`network_config` and `static_ipv4`" + ` (cloud-init applies them at first boot only; with
` + "`cloud_init_change = \"restart\"`" + ` they swap the seed for one with a new instance-id and restart the VM in place), a smaller ` + "`disk_gib`" + `,
and a VM whose guest agent was switched off.

**Import** accepts ` + "`vms/<vmid>/<name>`, `<vmid>` or `<name>`" + ` (or, Terraform 1.12+ or OpenTofu 1.12+, the identity
` + "`{ vmid, name }`" + `) and only VMs carrying the mark. ` + "`cloud_init`" + ` cannot be read back; the digest of
` + "`cloud_init_wo`" + ` is, so the same text plans nothing. The template is identified among the catalogue's templates by
the creation time a full clone copies from its template (` + "`meta`" + `), which costs one config read per
catalogue template at import and nothing in a plan; when no single template matches (a template outside the
catalogue, several templates sharing that time, an edited ` + "`meta`" + `), it is left unset. For values left unset
the first value you set after the import is recorded without replacing the VM (later changes replace it as
usual).
`
}

// positiveTimeouts adds a duration-above-zero check to every timeouts attribute: the
// timeouts package accepts "-5m" and "0s", which would end the operation at once.
func positiveTimeouts(b schema.Block) schema.Block {
	nb, ok := b.(schema.SingleNestedBlock)
	if !ok {
		return b
	}
	attrs := make(map[string]schema.Attribute, len(nb.Attributes))
	for k, a := range nb.Attributes {
		if sa, ok := a.(schema.StringAttribute); ok {
			sa.Validators = append(append([]validator.String(nil), sa.Validators...), validators.Duration())
			sa.Description += " A duration above zero."
			a = sa
		}
		attrs[k] = a
	}
	nb.Attributes = attrs
	return nb
}

// conceptAttributes are the proxy_vm attributes, declared in the files of their facets:
// identity (vm_identity_facet.go), placement (vm_placement.go), template (vm_template.go),
// size (vm_size.go), cloud-init (vm_cloud_init.go), network (vm_network.go), power
// (vm_power.go), guest addresses (vm_addresses.go), note and tags (vm_note_tags.go), HA
// (vm_ha.go).
func conceptAttributes() map[string]schema.Attribute {
	out := map[string]schema.Attribute{}
	for _, attrs := range [][]facetAttr{
		identityFacetAttrs(), placementAttrs(), templateAttrs(), sizeAttrs(), cloudInitAttrs(),
		networkAttrs(), powerAttrs(), addressesAttrs(), noteTagsAttrs(), haAttrs(),
	} {
		maps.Copy(out, resourceAttributes(attrs))
	}
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
