package provider

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// proxy_vms' per-VM details and filters: addresses, sizes, who made the VM,
// and the name_prefix and made_by filters (as on the proxy_vm list resource).

// vmsAgentReads caps the guest agent reads proxy_vms runs at once.
const vmsAgentReads = 4

// vmsFilterAttributes are proxy_vms' filters beyond node and name_regex.
func vmsFilterAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"name_prefix": schema.StringAttribute{
			Optional:            true,
			MarkdownDescription: "Only VMs, and orphan seeds, whose VM name starts with this prefix.",
			Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
		},
		"made_by": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "`provider`: only VMs this provider made (their mark says " +
				"`proxy-operator-created-by=terraform-provider-proxy`); `other`: only VMs whose mark does not (made by " +
				"the proxy operator, or by a release of this provider before the line existed). Unset: both. Orphan seeds " +
				"are not filtered by it.",
			Validators: []validator.String{stringvalidator.OneOf(madeByProvider, madeByOther)},
		},
	}
}

// vmsDetailAttributes are the per-VM attributes beyond identity and status.
func vmsDetailAttributes() map[string]schema.Attribute {
	list := func(md string) schema.ListAttribute {
		return schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: md}
	}
	out := dataAttributes(sizeAttrs())
	maps.Copy(out, map[string]schema.Attribute{
		"made_by":    schema.StringAttribute{Computed: true, MarkdownDescription: "`provider` or `other`, as the `made_by` filter."},
		"ip_address": schema.StringAttribute{Computed: true, MarkdownDescription: "The first of `ipv4_addresses`; null when there is none."},
		"ipv4_addresses": list("The IPv4 addresses the guest agent reports (not loopback, not link-local), in " +
			"its order; empty when the VM is not running, its agent option is off or its agent does not answer."),
		"ipv6_addresses": list("The IPv6 addresses the guest agent reports (not loopback, not link-local), in " +
			"its order; empty when the VM is not running, its agent option is off or its agent does not answer."),
	})
	return out
}

// vmsMatch applies the name_prefix and made_by filters.
func vmsMatch(m vmsModel, in proxmox.Instance) bool {
	return listMatches(proxyVMListModel{NamePrefix: m.NamePrefix, MadeBy: m.MadeBy}, in)
}

// checkVMsNode refuses a node filter naming no node of the cluster (an empty list would
// hide the typo).
func (d *vmsDataSource) checkVMsNode(ctx context.Context, node string, diags *diag.Diagnostics) bool {
	if node == "" {
		return true
	}
	if err := d.data.backend.CheckNodeKnown(ctx, node); err != nil {
		diags.AddAttributeError(path.Root("node"), "Unable to list the marked VMs",
			d.redact(trimEnd(err.Error()))+". Set node to one of the cluster's nodes, or leave it out for every node.")
		return false
	}
	return true
}

// vmsDetails fills each listed VM's sizes, maker and the guest agent's addresses (one agent
// read per VM whose config enables the agent, vmsAgentReads at a time). An agent read that
// fails leaves that VM's addresses empty and is reported as one warning.
func (d *vmsDataSource) vmsDetails(ctx context.Context, ins []proxmox.Instance, out []vmsVMModel, diags *diag.Diagnostics) {
	addrs := make([]proxmox.Addresses, len(ins))
	failed := make([]error, len(ins))
	// A fixed pool of readers, whatever the number of VMs (decision: list-marked).
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(vmsAgentReads, max(d.data.cfg.MaxInFlight, 1), len(ins)) {
		wg.Go(func() {
			for i := range next {
				addrs[i], failed[i] = d.data.backend.AgentAddresses(ctx, ins[i].Node, ins[i].ID.VMID)
			}
		})
	}
	for i, in := range ins {
		// The config says whether there is an agent to ask; the listing's status may lag a
		// start or restart by seconds, so it does not decide (an agent of a VM that is not
		// running answers so at once, and the VM is listed without addresses).
		if in.Config.AgentEnabled {
			next <- i
		}
	}
	close(next)
	wg.Wait()
	var lines []string
	for i, in := range ins {
		c := in.Config
		o := &out[i]
		o.MadeBy = types.StringValue(madeByOf(in.CreatedBy))
		o.vmSize.read(&facetCtx{vm: c})
		o.IPv4Addresses, o.IPv6Addresses = stringList(addrs[i].IPv4), stringList(addrs[i].IPv6)
		o.IPAddress = types.StringNull()
		if len(addrs[i].IPv4) > 0 {
			o.IPAddress = types.StringValue(addrs[i].IPv4[0])
		}
		if failed[i] != nil {
			lines = append(lines, fmt.Sprintf("- VMID %d (%s) on node %s: %s", in.ID.VMID, in.ID.Name, in.Node, d.redact(failed[i].Error())))
		}
	}
	if len(lines) > 0 {
		diags.AddWarning("Some guest agents could not be read",
			"These running VMs are listed without addresses, since their guest agent could not be read:\n"+strings.Join(lines, "\n"))
	}
}

// withDSAttributes adds extra to attrs; a name attrs already has is a programming error.
func withDSAttributes(extra, attrs map[string]schema.Attribute) map[string]schema.Attribute {
	for k, a := range extra {
		if _, dup := attrs[k]; dup {
			panic("data source schema: attribute " + k + " defined twice")
		}
		attrs[k] = a
	}
	return attrs
}
