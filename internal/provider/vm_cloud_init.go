package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// envDigestKey is the cloud_init_digest_key fallback.
const envDigestKey = "PROXY_CLOUD_INIT_DIGEST_KEY"

// minDigestKey is the shortest digest key accepted: 16 bytes, a 128-bit secret when random.
const minDigestKey = 16

// digestPrefix names the digest's algorithm in the state and in the mark.
const digestPrefix = "hmac-sha256:"

// cloudInitDigest is the keyed digest of a VM's cloud-init user-data: HMAC-SHA256 under the
// provider's cloud_init_digest_key over a fixed label, the VM's uid and the text. Keyed, since
// the mark that carries it is readable with VM.Audit and a short cloud-init could be guessed;
// with the uid, so that equal texts do not show as equal. A new key gives every cloud_init_wo
// VM a new digest, which plans its replacement (decision: mark-format).
func cloudInitDigest(key, uid, text string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("proxy_vm cloud-init\x00"))
	m.Write([]byte(uid))
	m.Write([]byte{0})
	m.Write([]byte(text))
	return digestPrefix + hex.EncodeToString(m.Sum(nil))
}

// cloudInitDigestKeyAttribute is the provider's cloud_init_digest_key.
func cloudInitDigestKeyAttribute() providerschema.StringAttribute {
	md := "The secret key (at least " + "16" + " characters) of the digests that detect a change of `cloud_init_wo`; " +
		"required for it. Falls back to `" + envDigestKey + "`. Sensitive. Keep it: a new key replaces every VM made with `cloud_init_wo`."
	return providerschema.StringAttribute{
		Optional: true, Sensitive: true,
		Description: plain(md), MarkdownDescription: md,
		Validators: []validator.String{stringvalidator.LengthAtLeast(minDigestKey)},
	}
}

// vmCloudInit is the cloud-init facet (vm_facet.go): the user-data of the VM's seed ISO,
// as text in the state (cloud_init) or write-only (cloud_init_wo) with its keyed digest
// (cloud_init_digest, cloudInitDigest), and what a change of the seed's content does
// (cloud_init_change, proxy_vm_reseed.go). cloud-init reads the seed at an instance's first
// boot only, so a new text is no in-place change: it replaces the VM or swaps the seed
// (planCloudInitDigest, planReseed). The text cannot be read back from a VM; the digest is
// in its mark.
//
// The data sources show none of it.
type vmCloudInit struct {
	CloudInit       types.String `tfsdk:"cloud_init"`
	CloudInitWO     types.String `tfsdk:"cloud_init_wo"`
	CloudInitDigest types.String `tfsdk:"cloud_init_digest"`
	CloudInitChange types.String `tfsdk:"cloud_init_change"`
	SeedGeneration  types.Int64  `tfsdk:"seed_generation"`
}

// cloudInitAttrs are the cloud-init facet's attributes.
func cloudInitAttrs() []facetAttr {
	return []facetAttr{{
		name:   "cloud_init",
		md:     "cloud-init user-data, written byte for byte into the seed ISO. Sensitive.",
		change: "Set this or `cloud_init_wo`. A change replaces the VM (see [Cloud-init changes](#cloud-init-changes)).",
		resource: schema.StringAttribute{
			Optional:   true,
			Sensitive:  true,
			Validators: []validator.String{validators.CloudInitFormat()},
			// Replacement is decided in ModifyPlan with cloud_init_wo (planCloudInitDigest).
		},
	}, {
		name:   "cloud_init_wo",
		md:     "cloud-init user-data as `cloud_init`, but write-only (Terraform 1.11+): for text that holds a secret.",
		change: "Needs the provider's `cloud_init_digest_key`. A change replaces the VM (see [Write-only cloud-init](#write-only-cloud-init)).",
		resource: schema.StringAttribute{
			Optional:  true,
			WriteOnly: true,
			Sensitive: true,
			Validators: []validator.String{
				stringvalidator.ConflictsWith(path.MatchRoot("cloud_init")),
				validators.CloudInitFormat(), // as cloud_init: not empty, a cloud-init format
			},
		},
	}, {
		name: "cloud_init_digest",
		md: "`hmac-sha256:<hex>`, the keyed digest of the VM's cloud-init, also kept in its mark. " +
			"Null without cloud-init or without `cloud_init_digest_key`.",
		change:   "Known at plan time when `uid` is.",
		resource: schema.StringAttribute{Computed: true},
	}, {
		name: "cloud_init_change",
		md: "What a change of `cloud_init`, `cloud_init_wo`, `network_config` or `static_ipv4` does: " +
			"`\"replace\"` (default) or `\"restart\"` (a new seed ISO, then a restart).",
		change: "See [Cloud-init changes](#cloud-init-changes).",
		resource: schema.StringAttribute{
			Optional: true, Computed: true,
			Default:    stringdefault.StaticString(cloudInitChangeReplace),
			Validators: []validator.String{stringvalidator.OneOf(cloudInitChangeReplace, cloudInitChangeRestart)},
		},
	}, {
		name: "seed_generation",
		md: "The generation of the seed ISO the VM's CD-ROM names: 1 for the seed made at create, one more per in-place swap " +
			"(`cloud_init_change = \"restart\"`). Null for a seed this provider did not make.",
		resource: schema.Int64Attribute{
			Computed:      true,
			PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
		},
	}}
}

// seedGenerationOf is the generation of the seed vm's ide2 names when it is a seed of this
// VM with uid (decision: seed-swap); null otherwise (none, the proxy operator's seed).
func seedGenerationOf(vm proxmox.VM, uid string) types.Int64 {
	if g, ok := proxmox.SeedGeneration(vm.Seed, vm.ID.Name, uid); ok {
		return types.Int64Value(int64(g))
	}
	return types.Int64Null()
}

// seedGenerationKept is seed_generation once a refresh or an update has read vm, one rule
// for both (decision: seed-swap): the generation of the seed its ide2 names
// (seedGenerationOf); when ide2 names no seed of this VM (ejected, or another ISO there),
// the generation held before (the state's on a refresh, the plan's on an update), so that
// every plan warns until the seed is attached again (readSeedDrift); else null. ejected
// says the second case.
func seedGenerationKept(vm proxmox.VM, uid string, held types.Int64) (gen types.Int64, ejected bool) {
	if g := seedGenerationOf(vm, uid); !g.IsNull() {
		return g, false
	}
	if _, ok := knownInt(held); ok && vm.Seed == "" {
		return held, true
	}
	return types.Int64Null(), false
}

// read is what an import reads of the cloud-init: the text cannot be read back (null), the
// digest the VM was made with is in its mark, so a matching cloud_init_wo plans nothing. A
// refresh reads none of it (the VM does not say). cloud_init_change gets its default where
// it has no value (an import, which cannot read it).
func (c *vmCloudInit) read(fc *facetCtx) {
	if fc.imported {
		vm := fc.vm
		c.CloudInit, c.CloudInitWO = types.StringNull(), types.StringNull()
		c.CloudInitDigest = stringOrNull(vm.MarkExtra.UserDataDigest)
		c.SeedGeneration = seedGenerationOf(vm, vm.UID)
	}
	if c.CloudInitChange.IsNull() || c.CloudInitChange.IsUnknown() {
		c.CloudInitChange = types.StringValue(cloudInitChangeReplace)
	}
}

// nullUnknown nulls the values still unknown (the partial state of a create).
func (c *vmCloudInit) nullUnknown() {
	for _, s := range []*types.String{&c.CloudInit, &c.CloudInitWO, &c.CloudInitDigest, &c.CloudInitChange} {
		if s.IsUnknown() {
			*s = types.StringNull()
		}
	}
	if c.SeedGeneration.IsUnknown() {
		c.SeedGeneration = types.Int64Null()
	}
}

// spec puts the planned cloud_init into a create; a cloud_init_wo, which only the
// configuration holds, and the digest, keyed by the uid the create mints, are put by
// applyCloudInitWO.
func (c vmCloudInit) spec(fc *facetCtx) {
	if v, ok := knownString(c.CloudInit); ok {
		fc.spec.UserData = []byte(v)
	}
}

// changes puts into an update the cloud-init user-data (proxmox.Changes.UserData) the
// backend needs to rebuild a seed ISO that a failed destroy deleted: the configured
// cloud_init, else the one in the state; a VM made without cloud_init has empty
// user-data. It is unknown (UserDataKnown false) only for an imported VM whose cloud_init
// was never set, since an import cannot read it back (fc.cloudInitUnread). It is no change
// of the VM: a new text replaces it or swaps its seed (planReseed).
func (c vmCloudInit) changes(fc *facetCtx) {
	prior, ch, cloudInitUnread := fc.prior.vmCloudInit, fc.changes, fc.cloudInitUnread
	ch.UserData, ch.UserDataKnown = nil, false
	switch {
	case !c.CloudInit.IsNull() && !c.CloudInit.IsUnknown():
		ch.UserData, ch.UserDataKnown = []byte(c.CloudInit.ValueString()), true
	case !prior.CloudInit.IsNull() && !prior.CloudInit.IsUnknown():
		ch.UserData, ch.UserDataKnown = []byte(prior.CloudInit.ValueString()), true
	case !cloudInitUnread:
		ch.UserData, ch.UserDataKnown = []byte{}, true
	}
}

// plan plans the digest of the configured cloud-init and whether a change replaces the
// VM or swaps its seed (planCloudInitDigest; the swap is planReseed's).
func (c *vmCloudInit) plan(fc *facetCtx) {
	unread := fc.unread(unreadCloudInit)
	replace, diags := planCloudInitDigest(fc.cfg, fc.config, fc.m, fc.prior, unread)
	fc.diags.Append(diags...)
	fc.seedReplace = append(fc.seedReplace, replace...)
}

// cloudInitText is the configured cloud-init and which attribute holds it: the write-only
// one first. known is false when the value is unknown (set from something known only at
// apply); set is false when neither is configured.
func cloudInitText(config vmCloudInit) (text string, wo, set, known bool) {
	switch {
	case config.CloudInitWO.IsUnknown():
		return "", true, true, false
	case !config.CloudInitWO.IsNull():
		return config.CloudInitWO.ValueString(), true, true, true
	case config.CloudInit.IsUnknown():
		return "", false, true, false
	case !config.CloudInit.IsNull():
		return config.CloudInit.ValueString(), false, true, true
	}
	return "", false, false, true
}

// planCloudInitDigest plans cloud_init_digest and decides whether the cloud-init change
// replaces the VM, for cloud_init and cloud_init_wo together: cloud-init runs at first boot
// only, so a new text replaces the VM. Not a change: the same text moved from one attribute
// to the other (the digests match), and the first text set after an import that could not
// read it back (no digest in the mark: recorded in place). A cloud_init_wo text is compared
// through its digest, a cloud_init text with the one in the state. cfg is nil while the
// provider's own configuration is unknown: then a cloud_init_wo cannot be compared and a
// change is assumed. cloudInitUnread says an import left the cloud-init unread.
func planCloudInitDigest(
	cfg *resolvedConfig,
	config proxyVMModel,
	plan *proxyVMModel,
	prior *proxyVMModel,
	cloudInitUnread bool,
) (replace []path.Path, diags diag.Diagnostics) {
	text, wo, set, known := cloudInitText(config.vmCloudInit)
	key := ""
	if cfg != nil {
		key = cfg.DigestKey
	}
	if wo && cfg != nil && key == "" {
		diags.AddAttributeError(path.Root("cloud_init_wo"), summaryInvalidConfig,
			"cloud_init_wo needs the provider's cloud_init_digest_key (or the "+envDigestKey+" environment variable): "+
				"without the text in the state, its keyed digest is how a change is detected. Set a key of at least "+
				"16 characters and keep it, or use cloud_init instead.")
		return nil, diags
	}
	uid, uidKnown := knownString(plan.UID)
	if prior != nil {
		uid, uidKnown = knownString(prior.UID)
	}
	switch {
	case !set:
		plan.CloudInitDigest = types.StringNull()
	case !known || !uidKnown || cfg == nil:
		plan.CloudInitDigest = types.StringUnknown()
	case key == "":
		plan.CloudInitDigest = types.StringNull() // cloud_init without a key: no digest
	default:
		plan.CloudInitDigest = types.StringValue(cloudInitDigest(key, uid, text))
	}
	if prior == nil {
		return nil, diags
	}

	if !cloudInitSame(config, plan, prior, cloudInitUnread) {
		attr := "cloud_init"
		_, hadText := knownString(prior.CloudInit)
		_, hadDigest := knownString(prior.CloudInitDigest)
		if wo || (!set && hadDigest && !hadText) {
			attr = "cloud_init_digest"
		}
		replace = append(replace, path.Root(attr))
	}
	return replace, diags
}

// cloudInitSame says the planned cloud-init is the one the VM was made with, or one that
// does not replace it (see planCloudInitDigest).
func cloudInitSame(config proxyVMModel, plan, prior *proxyVMModel, cloudInitUnread bool) bool {
	text, _, set, known := cloudInitText(config.vmCloudInit)
	priorText, hadText := knownString(prior.CloudInit)
	priorDigest, hadDigest := knownString(prior.CloudInitDigest)
	newDigest, haveDigest := knownString(plan.CloudInitDigest)
	switch {
	case !set:
		// None configured: nothing changes for a VM made without one, nor for a VM just
		// imported (its cloud-init is simply not managed until a text is set).
		return (!hadText && !hadDigest) || (!hadText && cloudInitUnread)
	case !known:
		return false
	case hadDigest && haveDigest:
		return priorDigest == newDigest
	case hadText:
		return priorText == text
	case hadDigest:
		return false // a digest to compare with, but no key (or no provider) to compute ours
	default:
		// Neither text nor digest: made without cloud-init, or imported without a digest.
		return cloudInitUnread
	}
}

// applyCloudInitWO puts the write-only cloud-init into a Create request, and the digest of
// whichever cloud-init the request carries (with the VM's uid) into its mark.
func applyCloudInitWO(spec *proxmox.Spec, config proxyVMModel, cfg *resolvedConfig) {
	if v, ok := knownString(config.CloudInitWO); ok {
		spec.UserData = []byte(v)
	}
	_, _, set, known := cloudInitText(config.vmCloudInit)
	if set && known && cfg != nil && cfg.DigestKey != "" && spec.UID != "" {
		spec.UserDataDigest = cloudInitDigest(cfg.DigestKey, spec.UID, string(spec.UserData))
	}
}
