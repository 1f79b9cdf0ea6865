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

// cloudInitDigest is the keyed digest of a VM's cloud-init user-data: HMAC-SHA256 under
// the provider's cloud_init_digest_key over a fixed label, the VM's uid and the text.
//
// Why keyed: the digest sits in the VM's description (the mark) where anyone with
// VM.Audit reads it, and in the state. A plain hash of a short cloud-init (a few lines
// naming a proxy's upstream) could be guessed by hashing candidates; without the key it
// cannot. Why the uid: two VMs with the same cloud-init get different digests, so the mark
// does not tell which VMs share a configuration. The trade-off: the key must stay the same
// for as long as the VMs live; a new key gives every cloud_init_wo VM a new digest, which
// plans its replacement (visible in the plan, never silent).
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
	md := "The secret key of the digests that let `proxy_vm` detect a change of `cloud_init_wo` without keeping " +
		"the text: HMAC-SHA256 of the cloud-init under this key (and the VM's `uid`), kept in the state and in the " +
		"VM's mark, so an import reads it back. At least " + "16" + " characters; keep it with the API token, and keep it: a new " +
		"key plans the replacement of every VM made with `cloud_init_wo` (the digests no longer match). Required " +
		"for `cloud_init_wo`; with `cloud_init` the digest is recorded too when a key is set. Falls back to the `" +
		envDigestKey + "` environment variable. Sensitive."
	return providerschema.StringAttribute{
		Optional: true, Sensitive: true,
		Description: plain(md), MarkdownDescription: md,
		Validators: []validator.String{stringvalidator.LengthAtLeast(minDigestKey)},
	}
}

// cloudInitWOAttribute is proxy_vm's write-only cloud-init.
func cloudInitWOAttribute() schema.StringAttribute {
	md := "cloud-init user-data, as `cloud_init`, but write-only (Terraform or OpenTofu 1.11 and later): " +
		"never stored in the state or among a plan's values (read it from a file: a saved plan keeps a copy of the `.tf` " +
		"files). Set `cloud_init` or `cloud_init_wo`, not both. A change is " +
		"detected through `cloud_init_digest` and replaces the VM (or, with `cloud_init_change = \"restart\"`, swaps the seed and " +
		"restarts it in place), so the provider needs `cloud_init_digest_key`. " +
		"An import reads the digest from the VM's mark: with the same text the plan is empty. Prefer it to " +
		"`cloud_init` whenever the text holds a secret (a proxy password, an upstream credential)."
	return schema.StringAttribute{
		Optional:            true,
		WriteOnly:           true,
		Sensitive:           true,
		Description:         plain(md),
		MarkdownDescription: md,
		Validators: []validator.String{
			stringvalidator.ConflictsWith(path.MatchRoot("cloud_init")),
			validators.CloudInitFormat(), // as cloud_init: not empty, a cloud-init format
		},
	}
}

// cloudInitDigestAttribute is the digest of the VM's cloud-init (cloudInitDigest).
func cloudInitDigestAttribute() schema.StringAttribute {
	md := "`hmac-sha256:<hex>`, the keyed digest of the VM's cloud-init (`cloud_init_wo`, or " +
		"`cloud_init` when the provider has a `cloud_init_digest_key`), also written into the VM's mark. It cannot " +
		"be reversed without the key. Null when the VM was made without cloud-init or without a key. Known at plan " +
		"time when the VM's `uid` is."
	return schema.StringAttribute{Computed: true, Description: plain(md), MarkdownDescription: md}
}

// cloudInitText is the configured cloud-init and which attribute holds it: the write-only
// one first. known is false when the value is unknown (set from something known only at
// apply); set is false when neither is configured.
func cloudInitText(config proxyVMModel) (text string, wo, set, known bool) {
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
func planCloudInitDigest(cfg *resolvedConfig, config proxyVMModel, plan *proxyVMModel, prior *proxyVMModel, cloudInitUnread bool) (replace []path.Path, diags diag.Diagnostics) {
	text, wo, set, known := cloudInitText(config)
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
	text, _, set, known := cloudInitText(config)
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
	_, _, set, known := cloudInitText(config)
	if set && known && cfg != nil && cfg.DigestKey != "" && spec.UID != "" {
		spec.UserDataDigest = cloudInitDigest(cfg.DigestKey, spec.UID, string(spec.UserData))
	}
}
