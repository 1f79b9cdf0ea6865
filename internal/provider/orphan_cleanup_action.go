package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var (
	_ provider.ProviderWithActions    = (*proxyProvider)(nil)
	_ action.ActionWithConfigure      = (*orphanCleanupAction)(nil)
	_ action.ActionWithValidateConfig = (*orphanCleanupAction)(nil)
)

// Actions registers proxy_orphan_cleanup and proxy_vm_power (Terraform 1.14+: terraform
// apply -invoke, action_trigger).
func (p *proxyProvider) Actions(_ context.Context) []func() action.Action {
	return []func() action.Action{NewOrphanCleanupAction, NewVMPowerAction}
}

// Defaults of proxy_orphan_cleanup.
const (
	defaultGracePeriod = time.Hour
	minGracePeriod     = time.Minute
)

// orphanCleanupAction is proxy_orphan_cleanup (decision: orphans): it finds what the
// provider left behind with no resource to own it (seed ISOs no VM uses, half-made VMs of
// this configuration's uid_namespace) and deletes those older than the grace period; a
// dry run (the default) only reports them.
type orphanCleanupAction struct{ data *providerData }

// NewOrphanCleanupAction is the proxy_orphan_cleanup factory.
func NewOrphanCleanupAction() action.Action { return &orphanCleanupAction{} }

type orphanCleanupModel struct {
	DryRun      types.Bool   `tfsdk:"dry_run"`
	GracePeriod types.String `tfsdk:"grace_period"`
	Seeds       types.Bool   `tfsdk:"seeds"`
	VMs         types.Bool   `tfsdk:"vms"`
}

func (a *orphanCleanupAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_orphan_cleanup"
}

func (a *orphanCleanupAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Deletes the [orphans](../index.md#glossary) older than `grace_period`: seed ISOs no VM " +
			"uses, and half-made VMs of this configuration's `uid_namespace` with their seeds. A dry run unless " +
			"`dry_run = false`. Run it with `terraform apply -invoke` (Terraform 1.14+).",
		Attributes: map[string]schema.Attribute{
			"dry_run": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Report what would be deleted and delete nothing. Default `true`: set `false` to delete.",
			},
			"grace_period": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Only objects at least this old are deleted (`\"90m\"`, `\"24h\"`); default " +
					"`\"1h\"`, at least `\"1m\"`. Keep it above the longest create timeout of every configuration on " +
					"the cluster: a create in progress looks like an orphan.",
				Validators: []validator.String{graceValidator()},
			},
			"seeds": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Look at seed ISOs that no VM uses. Default `true`.",
			},
			"vms": schema.BoolAttribute{
				Optional:            true,
				MarkdownDescription: "Look at half-made VMs of this configuration's `uid_namespace` in the provider's VMID range. Default `true`.",
			},
		},
	}
}

func (a *orphanCleanupAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (a *orphanCleanupAction) ValidateConfig(ctx context.Context, req action.ValidateConfigRequest, resp *action.ValidateConfigResponse) {
	var m orphanCleanupModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if isFalse(m.Seeds) && isFalse(m.VMs) {
		resp.Diagnostics.AddAttributeError(path.Root("vms"), "Nothing to clean up",
			"seeds and vms are both false, so proxy_orphan_cleanup would look at nothing; set one of them to true (or remove it).")
	}
}

func (a *orphanCleanupAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m orphanCleanupModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if a.data == nil || a.data.backend == nil {
		resp.Diagnostics.AddError("Unable to clean up orphans",
			"The proxy provider is not configured. This is a bug in the provider or in Terraform; please report it.")
		return
	}
	ctx = a.data.withLogging(ctx)
	opts := proxmox.CleanOptions{
		DryRun: boolOr(m.DryRun, true), Grace: defaultGracePeriod,
		Seeds: boolOr(m.Seeds, true), VMs: boolOr(m.VMs, true),
		Namespace: a.data.cfg.UIDNamespace,
	}
	if g, ok := knownString(m.GracePeriod); ok {
		d, err := time.ParseDuration(g)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("grace_period"), "Invalid grace_period", err.Error())
			return
		}
		opts.Grace = d
	}
	send := func(msg string) {
		if resp.SendProgress != nil {
			resp.SendProgress(action.InvokeProgressEvent{Message: msg})
		}
	}
	mode := "deleting"
	if opts.DryRun {
		mode = "dry run (dry_run = true): nothing is deleted"
	}
	send(fmt.Sprintf("proxy_orphan_cleanup: %s; grace period %s; seed ISOs %t, half-made VMs %t (uid_namespace %q)",
		mode, opts.Grace, opts.Seeds, opts.VMs, opts.Namespace))
	tflog.Info(ctx, "proxy orphan cleanup", map[string]any{"dry_run": opts.DryRun,
		"grace_period": opts.Grace.String(), "seeds": opts.Seeds, "vms": opts.VMs})
	rep, err := a.data.backend.CleanOrphans(ctx, opts, func(e proxmox.CleanEvent) { send(a.redact(e.String())) })
	send(a.redact(cleanSummary(rep, opts)))
	if err != nil {
		resp.Diagnostics.AddError("Unable to clean up orphans", vmErrorDetail("list", "", 0, err, "")+
			fmt.Sprintf("\n\nWhat was done before the failure was reported above (%d handled).", len(rep.Events)))
		return
	}
	if rep.NeedsLook > 0 {
		var lines []string
		for _, e := range rep.Events {
			if e.Action == proxmox.CleanNeedsLook {
				lines = append(lines, "- "+a.redact(e.String()))
			}
		}
		resp.Diagnostics.AddWarning("Half-made VMs need a look",
			fmt.Sprintf("%d VMs are marked as half-made VMs of this provider but show signs of having got past their "+
				"clone (started, a seed ISO attached, "+
				"or their create's config step done), so the action deleted nothing of them: a description can be copied or written back by anyone "+
				"who may edit a VM's notes, so it alone never gets a VM deleted.\n%s\n\nFor each, check that no apply "+
				"is running and that no Terraform "+
				"state tracks it before destroying it by hand as shown.", rep.NeedsLook, strings.Join(lines, "\n")))
	}
	if rep.Failed > 0 {
		var lines []string
		for _, e := range rep.Events {
			if e.Action == proxmox.CleanFailed {
				lines = append(lines, "- "+a.redact(e.String()))
			}
		}
		resp.Diagnostics.AddError("Unable to clean up every orphan",
			fmt.Sprintf("%d of the orphans could not be deleted (the others were):\n%s\n\nInvoke the action again once the cause is fixed; "+
				"a VM that changed since it was listed (taken over by a create) is left alone on purpose.", rep.Failed, strings.Join(lines, "\n")))
	}
}

// cleanSummary is the last progress line of a cleanup.
func cleanSummary(rep proxmox.CleanReport, opts proxmox.CleanOptions) string {
	if opts.DryRun {
		return fmt.Sprintf("proxy_orphan_cleanup dry run: %d orphans older than %s would be deleted, %d kept "+
			"(younger, or a seed that may be in use), %d need a look, %d could not be looked at; "+
			"set dry_run = false to delete them", rep.Deleted, opts.Grace, rep.Kept, rep.NeedsLook, rep.Failed)
	}
	return fmt.Sprintf("proxy_orphan_cleanup: %d orphans older than %s deleted, %d kept (younger, or a seed that may "+
		"be in use), %d need a look, %d failed",
		rep.Deleted, opts.Grace, rep.Kept, rep.NeedsLook, rep.Failed)
}

func (a *orphanCleanupAction) redact(s string) string { return redact(s, a.data.secrets()) }

// boolOr is v's value, or def when it is null or unknown.
func boolOr(v types.Bool, def bool) bool {
	if v.IsNull() || v.IsUnknown() {
		return def
	}
	return v.ValueBool()
}

// isFalse reports a known false.
func isFalse(v types.Bool) bool { return !v.IsNull() && !v.IsUnknown() && !v.ValueBool() }

// graceValidator accepts a duration of at least minGracePeriod.
func graceValidator() validator.String {
	description := fmt.Sprintf("must be a duration (\"90m\", \"24h\") of at least %s", minGracePeriod)
	return validators.Check(description, func(v string) (string, string) {
		if d, err := time.ParseDuration(v); err != nil || d < minGracePeriod {
			return "Invalid grace_period",
				fmt.Sprintf("grace_period %q %s: anything younger may belong to a create still running.", v, description)
		}
		return "", ""
	})
}
