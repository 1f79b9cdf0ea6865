package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// The seed swap (decision: seed-swap): what a change of the seed's content does, as
// cloud_init_change (declared by the cloud-init facet, vm_cloud_init.go) says. "replace"
// (the default) replaces the VM, as cloud-init reads its seed at an instance's first boot
// only; "restart" keeps the VM (VMID, MAC, disks) and swaps its seed for a new one with a
// new instance-id, then restarts it as a cores change does, so the guest boots as a new
// instance.

const (
	cloudInitChangeReplace = "replace"
	cloudInitChangeRestart = "restart"
)

// newInstanceInGuest is what a new instance-id means inside the guest, for the plan's
// warning and the attribute's description.
const newInstanceInGuest = "cloud-init then treats the boot as a new instance: its per-instance modules run again " +
	"(user-data's runcmd, write_files, packages, users...), the SSH host keys are regenerated (clients see a new host key), " +
	"and the network configuration is applied again"

// planReseed takes, with cloud_init_change = "restart", the seed's attributes out of the
// replacement (seedReplace: what planCloudInitDigest and planNetwork decided) and says in
// the plan what the apply does: a restart (a warning, the addresses unknown except a static
// one), or a new seed left for the next start. It returns whether the update swaps the seed.
func planReseed(ctx context.Context, config proxyVMModel, plan, prior *proxyVMModel, seedReplace []path.Path) (
	replace []path.Path, reseed bool, diags diag.Diagnostics) {
	if prior == nil || len(seedReplace) == 0 {
		return seedReplace, false, nil
	}
	mode, ok := knownString(plan.CloudInitChange)
	if !ok || mode != cloudInitChangeRestart {
		return seedReplace, false, nil
	}
	name := plan.Name.ValueString()
	at := seedReplace[0]
	switch {
	case prior.Status.IsNull() || prior.Status.IsUnknown() || needsStart(prior.Status) || startedFalse(plan.Started):
		diags.AddAttributeWarning(at, "Proxy VM seed replaced in place",
			fmt.Sprintf("proxy VM %s gets a new seed ISO with a new instance-id (cloud_init_change = \"restart\"); it is not running, so the guest "+
				"reads it at its next start: %s.", name, newInstanceInGuest))
	case startedFalse(plan.RebootOnChange):
		diags.AddAttributeWarning(at, "Proxy VM change pending",
			fmt.Sprintf("proxy VM %s gets a new seed ISO with a new instance-id (cloud_init_change = \"restart\"), but reboot_on_change = false: "+
				"the VM keeps running as it is, and the guest reads the new seed at its next start (a stop and start; a reboot from inside "+
				"the guest does too). Then %s.", name, newInstanceInGuest))
	default:
		diags.AddAttributeWarning(at, "Proxy VM will be restarted",
			fmt.Sprintf("proxy VM %s will be restarted to apply the cloud-init change (cloud_init_change = \"restart\"): a new seed ISO with a "+
				"new instance-id replaces the old one, and the apply shuts the guest down (up to shutdown_timeout, then Proxmox stops it) and "+
				"starts it again; %s. The VMID, MAC address and disks are kept; with DHCP the address may change. "+
				"Set reboot_on_change = false to leave the new seed for the VM's next start.", name, newInstanceInGuest))
		plan.planAddressesUnknown()
		if a, ok := staticAddressOf(ctx, config); ok && !plan.Started.IsUnknown() {
			plan.IPAddress = types.StringValue(a)
		} else {
			plan.IPAddress = types.StringUnknown()
		}
	}
	plan.SeedGeneration = types.Int64Unknown() // the next generation, whatever ide2 names then
	return nil, true, diags
}

// writeReseed records, from the plan to the apply, an update that swaps the seed: the plan
// decided that a cloud_init, cloud_init_wo or network change applies in place (false
// clears it).
func writeReseed(ctx context.Context, p privateSetter, reseed bool) diag.Diagnostics {
	if !reseed {
		return privateKeyReseed.clear(ctx, p)
	}
	return privateKeyReseed.write(ctx, p, true)
}

// readReseed reads writeReseed's record.
func readReseed(ctx context.Context, p privateGetter) bool {
	reseed, _, _ := privateKeyReseed.read(ctx, p)
	return reseed
}

// readSeedDrift is what a refresh does when a seed swap was cut off after it changed the VM
// (a kill -9, an interrupt, a lost answer: Terraform kept the prior state), told by ide2, the
// mark's swap line with leftovers on storage, or the mark's digest (decision: seed-swap). The
// state's cloud-init is then not known to be what the seed carries, so it is nulled and a
// warning says why: the plan swaps the seed again (or replaces the VM). Read changes nothing
// in Proxmox.
func readSeedDrift(ctx context.Context, in privateGetter, out privateSetter, state *proxyVMModel, vm proxmox.VM, leftovers []string,
	diags *diag.Diagnostics) {
	name, uid := vm.ID.Name, state.UID.ValueString()
	now, nowOK := proxmox.SeedGeneration(vm.Seed, name, uid)
	prior := state.SeedGeneration
	want, _ := knownInt(prior)
	gen, ejected := seedGenerationKept(vm, uid, prior)
	state.SeedGeneration = gen
	if ejected {
		diags.AddWarning("Proxy VM seed ISO not attached", fmt.Sprintf("%s: its CD-ROM (ide2) names no seed ISO of this VM, while the "+
			"state holds seed generation %d (%s). Someone ejected it or put another ISO there, and cloud-init finds no seed at the "+
			"VM's next boot. Attach it again (`qm set %d --ide2 <storage>:iso/%s,media=cdrom` on the VM's node), or change cloud_init "+
			"to make a new one.", vmLabel(name, vm.ID.VMID), want, seedOfGeneration(ctx, in, name, uid, want), vm.ID.VMID,
			proxmox.SeedFileGen(name, uid, want)))
	}
	why := seedDrift(ctx, in, *state, prior, vm, now, nowOK, leftovers)
	if why == "" {
		return
	}
	state.CloudInit = types.StringNull()
	state.CloudInitDigest = types.StringNull()
	if unread, d := readImportMarker(ctx, in); !d.HasError() && slices.Contains(unread, unreadCloudInit) {
		diags.Append(writeImportMarker(ctx, out, slices.DeleteFunc(unread, func(a unreadAttr) bool { return a == unreadCloudInit }))...)
	}
	diags.AddWarning("Proxy VM seed ISO not the one the last apply recorded",
		fmt.Sprintf("%s: %s. The last apply that swapped its seed (cloud_init_change = \"restart\") was interrupted, so the seed may "+
			"carry a cloud-init the state does not hold, which the guest runs at its next start. This plan swaps the seed for one with "+
			"the configured cloud-init and deletes what the interrupted apply left (with cloud_init_change = \"replace\", it replaces "+
			"the VM).", vmLabel(name, vm.ID.VMID), why))
}

// seedOfGeneration names the seed ISO of generation gen: the volume the private state
// recorded when it is that generation, else its file name.
func seedOfGeneration(ctx context.Context, in privateGetter, name, uid string, gen int) string {
	if rec := readSeed(ctx, in); rec != "" {
		if g, ok := proxmox.SeedGeneration(rec, name, uid); ok && g == gen {
			return rec
		}
	}
	return proxmox.SeedFileGen(name, uid, gen)
}

// seedDrift says which sign of a cut-off seed swap the refresh found (readSeedDrift); ""
// for none. prior is the state's seed_generation before the refresh.
func seedDrift(ctx context.Context, in privateGetter, state proxyVMModel, prior types.Int64, vm proxmox.VM, now int, nowOK bool,
	leftovers []string) string {
	name, uid := vm.ID.Name, state.UID.ValueString()
	want, wantOK := knownInt(prior)
	recorded := ""
	if !wantOK {
		recorded = readSeed(ctx, in)
	}
	was, wasOK := proxmox.SeedGeneration(recorded, name, uid)
	digest, digestOK := knownString(state.CloudInitDigest)
	switch {
	case wantOK:
		if nowOK && now != want {
			return fmt.Sprintf("its CD-ROM names the seed ISO %s (generation %d), but the state holds generation %d", vm.Seed, now, want)
		}
	case wasOK:
		if nowOK && was != now {
			return fmt.Sprintf("its CD-ROM names the seed ISO %s, but the last apply recorded %s", vm.Seed, recorded)
		}
	case digestOK && vm.MarkExtra.UserDataDigest != "":
		if vm.MarkExtra.UserDataDigest != digest {
			return "its mark's user-data digest is not the state's cloud_init_digest"
		}
	case nowOK:
		// No generation known means the VM booted from a seed this provider did not make
		// (the proxy operator's <name>-seed.iso of an imported VM), and no digest tells what
		// the seed carries: a seed of this resource's uid on its CD-ROM can only come from a
		// swap whose answer was lost (adv1 finding 14).
		was := "the state holds no seed generation"
		if recorded != "" {
			was = "the last apply recorded " + recorded + ", a seed this provider did not make"
		}
		return fmt.Sprintf("its CD-ROM names the seed ISO %s (generation %d), which only a seed swap makes, but %s", vm.Seed, now, was)
	}
	// A seed of the state's generation is the VM's own, never the sign of a cut-off swap,
	// whatever the mark's swap line says (a Notes writer can forge the line, a CD-ROM
	// writer eject the seed).
	if wantOK {
		leftovers = slices.DeleteFunc(slices.Clone(leftovers), func(v string) bool {
			g, ok := proxmox.SeedGeneration(v, name, uid)
			return ok && g == want
		})
	}
	if len(leftovers) > 0 {
		return fmt.Sprintf("its mark says a seed swap was under way, and the seed ISO %s of this VM, which its CD-ROM does not name, is on "+
			"storage", strings.Join(leftovers, ", "))
	}
	return ""
}

// reseedChanges asks the backend for the seed swap, with the digest the mark carries after it.
func reseedChanges(c *proxmox.Changes, plan proxyVMModel) {
	c.Reseed = &proxmox.Reseed{UserDataDigest: plan.CloudInitDigest.ValueString()}
}
