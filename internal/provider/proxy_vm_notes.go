package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// The concepts of conceptAttributes beyond the facets' own functions: addresses, network,
// started, and the note-and-tags facet (vm_note_tags.go).

// applyConcepts copies what the backend read beyond applyVM's fields: addresses, network, user tags,
// note and protection.
func applyConcepts(m *proxyVMModel, vm proxmox.VM) {
	applyAddresses(m, vm)
	applyNetwork(m, vm)
	m.vmNoteTags.read(vm)
	importedStarted(m, vm)
}

// nullUnknownConcepts nulls the values of conceptAttributes still unknown (the partial state
// of a create).
func nullUnknownConcepts(m *proxyVMModel) {
	nullUnknownAddresses(m)
	applyNetwork(m, proxmox.VM{}) // types a zero static_ipv4
	m.vmNoteTags.nullUnknown()
	if m.Started.IsUnknown() {
		m.Started = types.BoolNull()
	}
}

// applyConceptsSpec puts the planned tags, note and protection into a create's spec.
func applyConceptsSpec(s *proxmox.Spec, plan proxyVMModel) {
	plan.vmNoteTags.spec(s)
	startedSpec(s, plan)
}

// conceptChanges puts the changed tags, note and protection into an update; it reports
// whether there was any.
func conceptChanges(c *proxmox.Changes, prior, plan proxyVMModel) bool {
	changed := startedChanges(c, prior, plan)
	if plan.vmNoteTags.changes(prior.vmNoteTags, c) {
		changed = true
	}
	return changed
}
