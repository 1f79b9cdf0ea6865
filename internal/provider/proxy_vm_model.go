package provider

import (
	"context"
	"crypto/sha1" //nolint:gosec // UUID version 5 is defined over SHA-1 (RFC 9562); no security use.
	"encoding/hex"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// proxyVMModel is the proxy_vm resource's data.
type proxyVMModel struct {
	vmIdentityFacet // vm_identity_facet.go
	vmPlacement     // vm_placement.go
	vmTemplate
	vmSize
	vmCloudInit                // vm_cloud_init.go
	vmNetwork                  // vm_network.go
	vmPower                    // vm_power.go
	Timeouts    timeouts.Value `tfsdk:"timeouts"`
	vmAddresses                // vm_addresses.go
	vmNoteTags                 // vm_note_tags.go
	vmHA                       // vm_ha.go
	vmBinding                  // vm_identity_facet.go
}

// facets are m's facets in the order every step runs them: read, nullUnknown, spec,
// changes and, in ModifyPlan, the plan checks. The order matters where a facet's step uses
// another's result: the template's spec gives the size's disk its machine type, the sizes
// are planned before the addresses and the power plan look at a restart, the addresses
// are read before the network's static address, and the power plan before the network's
// ip_address.
func (m *proxyVMModel) facets() []vmFacet {
	return []vmFacet{
		&m.vmIdentityFacet,
		&m.vmBinding,
		&m.vmPlacement,
		&m.vmTemplate,
		&m.vmSize,
		&m.vmHA,
		&m.vmCloudInit,
		&m.vmAddresses,
		&m.vmPower,
		&m.vmNetwork,
		&m.vmNoteTags,
	}
}

// uidNamespace is the UUID namespace of proxy_vm UIDs (a fixed random UUID).
var uidNamespace = [16]byte{
	0x97, 0xf2, 0xa1, 0x8c, 0x28, 0x0b, 0x47, 0xd9, 0xb6, 0xb4, 0x54, 0xc4, 0xae, 0x21, 0xa2, 0x31,
}

// uidFor is the allocation key of a VM called name by a provider whose uid_namespace is
// namespace: the version 5 UUID (RFC 9562, section 5.5) of name in uidNamespace when
// namespace is empty, and otherwise of name in the version 5 UUID of namespace in
// uidNamespace. It picks the VMID probe sequence (the same for every create of this name
// in this namespace, so an interrupted create is found again). It is not a VM's uid, which
// is random per VM (newUID).
func uidFor(namespace, name string) string {
	ns := uidNamespace
	if namespace != "" {
		ns = uuidV5(ns, namespace)
	}
	return formatUUID(uuidV5(ns, name))
}

// formatUUID writes u in the 8-4-4-4-12 form.
func formatUUID(u [16]byte) string {
	var buf [36]byte
	hex.Encode(buf[0:8], u[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], u[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], u[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], u[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], u[10:])
	return string(buf[:])
}

// uuidV5 is the version 5 UUID of name in namespace ns (RFC 9562, section 5.5).
func uuidV5(ns [16]byte, name string) [16]byte {
	h := sha1.New() //nolint:gosec // see uidFor
	h.Write(ns[:])
	h.Write([]byte(name))
	sum := h.Sum(nil)
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = (u[6] & 0x0f) | 0x50 // version 5
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 9562 variant
	return u
}

// knownString returns v's value and whether it is known and not null.
func knownString(v types.String) (string, bool) {
	if v.IsNull() || v.IsUnknown() {
		return "", false
	}
	return v.ValueString(), true
}

// knownInt returns v's value and whether it is known and not null.
func knownInt(v types.Int64) (int, bool) {
	if v.IsNull() || v.IsUnknown() {
		return 0, false
	}
	return int(v.ValueInt64()), true
}

// stringOrNull maps "" to null.
func stringOrNull(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// intOrNull maps 0 to null.
func intOrNull(n int) types.Int64 {
	if n == 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(n))
}

// formatCreatedAt renders a mark's creation time; the zero time (no or unreadable mark
// line) is null.
func formatCreatedAt(t time.Time) types.String {
	if t.IsZero() {
		return types.StringNull()
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}

// applyVM copies what the backend read into m (vmFacet.read). Inputs that cannot be read
// back (image, template_vmid, machine_type, cloud_init, timeouts) are left alone; the
// settings that cannot be read get their defaults where they have none.
func applyVM(m *proxyVMModel, vm proxmox.VM) {
	readFacets(m, &facetCtx{vm: vm})
}

// readFacets reads fc.vm into every facet of m.
func readFacets(m *proxyVMModel, fc *facetCtx) {
	fc.m = m
	for _, f := range m.facets() {
		f.read(fc)
	}
}

// partialState is what Create saves as soon as the VMID is known: the plan with every
// unknown value nulled, and the identity. A later failure leaves it as a tainted resource.
func partialState(plan proxyVMModel, id proxmox.ID, node, uid string, createdAt time.Time) proxyVMModel {
	m := plan
	for _, f := range m.facets() {
		f.nullUnknown()
	}
	if m.Timeouts.IsUnknown() {
		m.Timeouts = timeouts.Value{Object: types.ObjectNull(m.Timeouts.AttributeTypes(context.Background()))}
	}
	m.identify(id, uid, createdAt)
	m.Node = types.StringValue(node)
	return m
}

// importedModel is the state an import writes: everything readable from the VM, the
// template the backend identified (templateVMID, 0 when it could not tell) with its
// catalogue key when exactly one key names it, the machine type when it resolves
// unambiguously, and the defaults of the inputs that cannot be read. It returns the
// attributes it had to leave unread.
func importedModel(vm proxmox.VM, cfg *resolvedConfig, templateVMID int, nullTimeouts timeouts.Value) (proxyVMModel, []unreadAttr) {
	m := proxyVMModel{
		vmAddresses: vmAddresses{IPAddress: types.StringNull()},
		Timeouts:    nullTimeouts,
	}
	unread := []unreadAttr{unreadCloudInit, unreadNetwork}
	if vm.MarkExtra.Static != nil {
		// The mark says the static address the VM was made with: read back, not unread.
		m.StaticIPv4 = staticValue(vm.MarkExtra.Static)
		unread = []unreadAttr{unreadCloudInit}
	}
	fc := &facetCtx{vm: vm, cfg: cfg, imported: true, templateVMID: templateVMID}
	readFacets(&m, fc)
	if fc.templateUnread {
		unread = append(unread, unreadTemplate)
	}
	return m, unread
}

// templateCandidates are the distinct template VMIDs of the catalogue, sorted: the
// templates an import asks the backend to tell apart (proxmox.Backend.TemplateOf).
func templateCandidates(cfg *resolvedConfig) []int {
	if cfg == nil {
		return nil
	}
	var out []int
	for _, v := range cfg.Templates {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// specFor resolves a planned model into a Create request. The plan has passed ModifyPlan,
// so node, template and sizes are known unless they depend on the template (disk).
func specFor(plan proxyVMModel, cfg *resolvedConfig, createdAt time.Time) proxmox.Spec {
	s := proxmox.Spec{CreatedAt: createdAt}
	fc := &facetCtx{cfg: cfg, m: &plan, spec: &s}
	for _, f := range plan.facets() {
		f.spec(fc)
	}
	return s
}

// changesFor is the in-place update from prior to planned, and whether it changes the VM;
// cloudInitUnread says an import left cloud_init unread.
func changesFor(prior, plan proxyVMModel, cloudInitUnread bool) (proxmox.Changes, bool) {
	var c proxmox.Changes
	fc := &facetCtx{m: &plan, prior: &prior, changes: &c, cloudInitUnread: cloudInitUnread}
	for _, f := range plan.facets() {
		f.changes(fc)
	}
	return c, fc.changed
}

// restarts reports whether applying c to a VM with the prior status restarts it.
func restarts(prior types.String, c proxmox.Changes) bool {
	running := !prior.IsNull() && !prior.IsUnknown() && !needsStart(prior)
	return running && !c.Stop && !c.DeferRestart && (proxmox.ChangesRestartOption(c) || c.Reseed != nil)
}
