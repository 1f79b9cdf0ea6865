package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider/validators"
	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// The Proxmox pool of a proxy VM: made into it by the clone, moved in place, read back
// from the cluster listing (proxmox/pool.go).

func poolAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true,
		Computed: true,
		MarkdownDescription: "The Proxmox pool the VM belongs to, overriding the provider's `pool`; `\"\"` for none. The clone is made " +
			"into it (the clone's `pool` parameter), so an API token granted on `/pool/<pool>` can create and manage the VM " +
			"(see the [setup guide](../guides/proxmox-setup.md)). Changing it moves the VM in place (`PUT /pools`), which Proxmox " +
			"allows only with `Pool.Allocate` on both pools and `VM.Allocate` on the VM: a token scoped to one pool usually " +
			"lacks that, so replace the VM instead (`terraform apply -replace`). Without it and without the provider's `pool`, " +
			"a new VM goes into no pool and an existing VM stays in the pool it is in. Read back from the cluster listing, " +
			"which shows a VM's pool only to a token with `Pool.Audit` on it. A Proxmox pool id: letters, digits, `.`, `-` " +
			"and `_`, each level starting with a letter, up to three levels joined by `/`.",
		Validators:    []validator.String{validators.PoolID(true)},
		PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
	}
}

// planPool: the resource's pool, else the provider's, else none for a new VM and the pool
// it is in for an existing one.
func planPool(cfg *resolvedConfig, config proxyVMModel, plan, prior *proxyVMModel) {
	if !config.Pool.IsNull() {
		return // set (or unknown): the plan carries it
	}
	switch {
	case cfg.Pool != "":
		plan.Pool = types.StringValue(cfg.Pool)
	case prior == nil:
		plan.Pool = types.StringNull()
	default:
		plan.Pool = prior.Pool
	}
}

// poolValue is the pool read back: the VM's, or, in no pool, "" when that is what the
// state said (a configured pool = ""), else null.
func poolValue(pool string, prior types.String) types.String {
	if pool == "" && prior.IsNull() {
		return types.StringNull()
	}
	if pool == "" && !prior.IsUnknown() && prior.ValueString() == "" {
		return types.StringValue("")
	}
	return stringOrNull(pool)
}

// poolChange is the pool move an update asks for: the planned pool when it is known and
// names another pool than the state's ("" and null both meaning none).
func poolChange(prior, plan proxyVMModel) (*string, string) {
	v, ok := knownString(plan.Pool)
	if !ok {
		return nil, ""
	}
	from := prior.Pool.ValueString() // null and unknown: ""
	if v == from {
		return nil, from
	}
	return &v, from
}

// poolUnverifiedWarning is the refresh's warning for a pool the token may not see.
func poolUnverifiedWarning(vm proxmox.VM) (string, string) {
	return "Pool of the proxy VM not verified",
		fmt.Sprintf("%s: the cluster listing shows no pool for the VM, and the API token lacks Pool.Audit on /pool/%s, so Proxmox "+
			"would hide it there: the state keeps pool %q. Grant Pool.Audit on /pool/%s (the role PVEPoolUser, see the setup guide) "+
			"so that a VM moved out of the pool shows as a change.", vmLabel(vm.ID.Name, vm.ID.VMID), vm.Pool, vm.Pool, vm.Pool)
}
