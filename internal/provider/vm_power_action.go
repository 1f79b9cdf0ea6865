package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

var _ action.ActionWithConfigure = (*vmPowerAction)(nil)

// vmPowerAction is proxy_vm_power (Terraform 1.14+): start, shut down, reboot or stop a
// proxy_vm's VM, from `terraform apply -invoke` or an action_trigger. It writes to a VM only
// when ownedBy proves it the resource's, uid included: the id says where to look, not whose
// the VM is (decision: instance-binding).
type vmPowerAction struct{ data *providerData }

// NewVMPowerAction is the proxy_vm_power factory.
func NewVMPowerAction() action.Action { return &vmPowerAction{} }

type vmPowerModel struct {
	ID              types.String `tfsdk:"id"`
	UID             types.String `tfsdk:"uid"`
	Power           types.String `tfsdk:"power"`
	ShutdownTimeout types.String `tfsdk:"shutdown_timeout"`
}

func (a *vmPowerAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vm_power"
}

func (a *vmPowerAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	ops := make([]string, len(proxmox.PowerOps))
	for i, o := range proxmox.PowerOps {
		ops[i] = string(o)
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Starts, shuts down, reboots or stops a `proxy_vm`'s VM, " +
			"with `terraform apply -invoke` or an `action_trigger` (Terraform 1.14+). " +
			"Only a VM whose [mark](../index.md#glossary) carries the resource's `uid` is touched.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The `proxy_vm`'s `id` (`proxy_vm.<name>.id`): where the VM is.",
				Validators:          []validator.String{vmIDValidator()},
			},
			"uid": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "The `proxy_vm`'s `uid` (`proxy_vm.<name>.uid`): the VM's mark must carry it, or nothing is sent to the VM.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"power": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "`\"start\"`, `\"shutdown\"` (graceful within `shutdown_timeout`, then Proxmox stops it), " +
					"`\"reboot\"` (that shutdown, then a start) or `\"stop\"` (at once, like pulling the plug). " +
					"See [What each power value does](#what-each-power-value-does).",
				Validators: []validator.String{stringvalidator.OneOf(ops...)},
			},
			"shutdown_timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long `shutdown` and `reboot` give the guest to power off before Proxmox stops it, as a " +
					"duration. Default `\"" + defaultShutdownTimeout + "\"`, at most `\"10m\"`.",
				Validators: []validator.String{validators.Duration(), maxDuration(actionMaxShutdown)},
			},
		},
	}
}

// actionMaxShutdown bounds the action's shutdown_timeout: the action's own budget
// (actionBudget) also holds the start.
const actionMaxShutdown = 10 * time.Minute

// actionBudget bounds one invocation: the shutdown, the start, and the waits around them.
const actionBudget = 20 * time.Minute

func (a *vmPowerAction) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	a.data = providerDataFrom(req.ProviderData, &resp.Diagnostics)
}

func (a *vmPowerAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m vmPowerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if a.data == nil || a.data.backend == nil {
		resp.Diagnostics.AddError("Unable to run proxy_vm_power",
			"The proxy provider is not configured. This is a bug in the provider or in Terraform; please report it.")
		return
	}
	ctx = a.data.withLogging(ctx)
	id, err := proxmox.ParseID(m.ID.ValueString())
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("id"), "Invalid proxy_vm_power id", err.Error()+"; set id = proxy_vm.<name>.id.")
		return
	}
	timeout := mustDuration(defaultShutdownTimeout)
	if s, ok := knownString(m.ShutdownTimeout); ok {
		if timeout, err = time.ParseDuration(s); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("shutdown_timeout"), "Invalid shutdown_timeout", err.Error())
			return
		}
	}
	op := proxmox.PowerOp(m.Power.ValueString())
	ctx, cancel := context.WithTimeout(ctx, actionBudget)
	defer cancel()
	send := func(msg string) {
		if resp.SendProgress != nil {
			resp.SendProgress(action.InvokeProgressEvent{Message: "proxy_vm_power " + string(op) + ": " + a.redact(msg)})
		}
	}
	tflog.Info(
		ctx,
		"proxy VM power",
		map[string]any{"name": id.Name, "vmid": id.VMID, "power": string(op), "shutdown_timeout": timeout.String()},
	)
	res, err := a.data.backend.Power(
		ctx,
		id,
		proxmox.PowerOptions{Op: op, UID: m.UID.ValueString(), ShutdownTimeout: timeout, Progress: send},
	)
	if err != nil {
		note := ""
		if res.Node == "" {
			note = "Nothing was sent to the VM. proxy_vm_power acts only on the VM whose mark carries the resource's uid " +
				"(set uid = proxy_vm.<name>.uid); refresh the proxy_vm (terraform plan) to see what became of it."
		}
		resp.Diagnostics.AddError(
			"Unable to run proxy_vm_power "+string(op),
			vmErrorDetailFor(a.data, string(op), id.Name, id.VMID, err, note),
		)
		return
	}
	did := "nothing to do"
	if len(res.Did) > 0 {
		did = strings.Join(res.Did, ", then ")
	}
	send(fmt.Sprintf("%s (VMID %d) on node %s is %s (%s)", id.Name, id.VMID, res.Node, res.Status, did))
}

func (a *vmPowerAction) redact(s string) string { return redact(s, a.data.secrets()) }

// vmIDValidator accepts a proxy_vm id, vms/<vmid>/<name>.
func vmIDValidator() validator.String {
	return validators.Check("must be a proxy_vm id, vms/<vmid>/<name> (proxy_vm.<name>.id)", func(v string) (string, string) {
		if _, err := proxmox.ParseID(v); err != nil {
			return "Invalid proxy_vm_power id", err.Error() + "; set id = proxy_vm.<name>.id."
		}
		return "", ""
	})
}

// maxDuration refuses a duration above max (the action's shutdown_timeout).
func maxDuration(limit time.Duration) validator.String {
	return validators.Check("must be at most "+limit.String(), func(v string) (string, string) {
		if d, err := time.ParseDuration(v); err == nil && d > limit {
			return "Invalid shutdown_timeout",
				fmt.Sprintf("shutdown_timeout is %s, above %s: the action's budget (%s) must also hold the start.", d, limit, actionBudget)
		}
		return "", ""
	})
}
