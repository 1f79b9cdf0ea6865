package proxmox

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// settled is what Delete and Update found at an ID's VMID once no task held it.
type settled struct {
	verdict verdict // ours, foreign (another name, no mark, or another uid) or gone
	r       pveapi.Resource
	cfg     map[string]string
	// why says why a foreign VM is not ours (ownedBy), mark is what it carries.
	why  notOurs
	mark Mark
	// res is the listing the verdict was read from.
	res []pveapi.Resource
}

// settle reads the listing (fresh) and the config at id's VMID until no task holds the VM
// and the listing reports its status, within budget (Terraform has no requeue, so a task
// lock is waited on rather than failed at once; decision: delete-steps). A suspended lock
// is not a task and never clears by itself: it is not waited on (Update and Delete handle
// a hibernated VM). A listing that reports the VM's status "unknown" (its node not
// answering) for longer than Budgets.NodeGrace ends the wait (wait). uid is the uid the
// mark must carry (ownedBy): a VM without it, or a caller without a uid, is foreign.
func (b *Backend) settle(ctx context.Context, op string, id ID, o Owner, budget time.Duration) (settled, error) {
	var out settled
	var listed []pveapi.Resource
	spec := waitSpec{kind: "lock", what: "no task to hold the VM", vmid: id.VMID, budget: budget,
		onBudget: func(busy string, last error) error {
			if last != nil {
				return Transientf(
					"the VM is still busy (%s) after %s; wait for the task to end, or clear a stale lock with `qm unlock %d`, then try again: %w",
					busy,
					budget,
					id.VMID,
					last,
				)
			}
			return Transientf(
				"the VM is still busy (%s) after %s; wait for the task to end, or clear a stale lock with `qm unlock %d`, then try again",
				busy,
				budget,
				id.VMID,
			)
		}}
	err := b.wait(ctx, spec, func(ctx context.Context) observation {
		res, err := b.listing(ctx, true)
		listed = res
		if err != nil {
			return pollFailed(op, err, "the cluster listing failed", "listing the cluster's VMs")
		}
		r, ok := findResource(res, id.VMID)
		if !ok {
			// The listing shows only what the token may audit (fact: pool-privileges).
			if err := b.hiddenVM(ctx, op, id.VMID, "The VM"); err != nil {
				return cannot("hidden from the API token", err)
			}
		}
		if !ok || r.Type != "qemu" || r.Template == 1 {
			out = settled{verdict: verdictGone, r: r}
			return done("gone")
		}
		// The listed name and lock are pvestatd's snapshot: the config decides, and a lock
		// of a VM whose config names another VM is never waited on.
		cfg, err := b.api.VMConfig(ctx, r.Node, id.VMID)
		switch {
		case err == nil:
		case isNotExist(err):
			out = settled{verdict: verdictGone, r: r}
			return done("gone")
		default:
			return pollFailed(op, err, "its config could not be read", "reading the config on node %s", r.Node)
		}
		name := cfg["name"]
		if name == "" {
			return keep(fmt.Sprintf("a clone in progress, lock %q", cfg["lock"]))
		}
		if mark, why := ownedBy(cfg, id.Name, o); why != notOursNone {
			out = settled{verdict: verdictForeign, r: r, cfg: cfg, why: why, mark: mark}
			return done(string(why))
		}
		if ran, err := b.unboundButRanFor(ctx, op, r.Node, id.VMID, cfg, o); err != nil {
			return pollFailed(op, err, "its status could not be read", "reading the status on node %s", r.Node)
		} else if ran {
			out = settled{verdict: verdictForeign, r: r, cfg: cfg, why: notOursRanUnbound, mark: ParseMark(cfg["description"])}
			return done(string(notOursRanUnbound))
		}
		if l := cfg["lock"]; l != "" && l != "suspended" {
			return keep(fmt.Sprintf("lock %q", l))
		}
		if r.Status == "unknown" {
			return observation{verdict: keepWaiting, nodeDown: true,
				seen: "status unknown: its node " + r.Node + " is not answering, or the VM is too new to be reported yet"}
		}
		out = settled{verdict: verdictOurs, r: r, cfg: cfg}
		return done("no task holds it")
	})
	if err != nil {
		return settled{}, err
	}
	out.res = listed
	return out, nil
}

// settleOn is settle for a caller that knows the VM's node (Delete: the state's): the
// config is read there first, without a listing, and a VM it proves ours (ownedBy) that no
// task lock holds and that is no template is settled at once, on that node. A VMID's config
// lives under one node only (pmxcfs), and a node that answers is up, so the listing would
// say no more. Anything else (no config there, a config being cloned, not ours, a lock, an
// error) is settle's, from a fresh listing, as if nothing had been read.
func (b *Backend) settleOn(ctx context.Context, op string, id ID, node string, o Owner, budget time.Duration) (settled, error) {
	if node != "" {
		cfg, err := b.api.VMConfig(ctx, node, id.VMID)
		if err == nil && cfg["template"] != "1" {
			mark, why := ownedBy(cfg, id.Name, o)
			if l := cfg["lock"]; why == notOursNone && (l == "" || l == "suspended") && (o.Instance != "" || !unbound(cfg)) {
				r := pveapi.Resource{ID: fmt.Sprintf("qemu/%d", id.VMID), VMID: id.VMID, Node: node, Type: "qemu", Name: cfg["name"]}
				return settled{verdict: verdictOurs, r: r, cfg: cfg, mark: mark}, nil
			}
		}
	}
	return b.settle(ctx, op, id, o, budget)
}

// ReadyOptions tune WaitReady.
type ReadyOptions struct {
	// UID is the uid the mark must carry (GetOptions.UID), Instance the SMBIOS uuid the
	// state recorded (GetOptions.Instance).
	UID      string
	Instance string
	// Pool is the pool the caller expects the VM in (GetOptions.Pool).
	Pool string
	// Address waits for the guest agent's IPv4 too (wait_for_ip).
	Address bool
	// FirstBoot says the seed installs the agent at this start (never so for an update:
	// cloud-init runs the seed at the first boot only); false bounds the agent's "not
	// running" by Budgets.AgentStart of uptime.
	FirstBoot bool
}

// WaitReady waits, within ctx, until a VM that was just started or restarted runs (within
// Budgets.Running) and, with o.Address, until its agent reports an IPv4 (waitAddress, ctx
// only), then returns it as Get would (with the address). Each poll reads the VM as Get
// does, so a VM found gone or no longer ours is NotFound at once, and one found stopped,
// paused or hibernated (stopped out of band, or shut down by its guest) is Transient at
// once; a node not answering is waited on for Budgets.NodeGrace. Without o.Address a VM
// that runs in prelaunch (provisioning) is ready too.
func (b *Backend) WaitReady(ctx context.Context, id ID, o ReadyOptions) (VM, error) {
	start := b.clock.Now()
	vm, err := b.waitReady(ctx, id, o)
	fields := map[string]any{"vmid": id.VMID, "name": id.Name, "address": o.Address, "duration_ms": b.clock.Now().Sub(start).Milliseconds()}
	if err != nil {
		err = wrap("update", id.Name, id.VMID, err)
		fields["class"], fields["error"] = ClassOf(err).String(), err.Error()
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm not ready", fields)
		return VM{}, err
	}
	fields["node"], fields["state"], fields["ip"] = vm.Node, string(vm.State), vm.IP
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox vm ready", fields)
	return vm, nil
}

func (b *Backend) waitReady(ctx context.Context, id ID, o ReadyOptions) (VM, error) {
	if err := id.Validate(); err != nil {
		return VM{}, err
	}
	var vm VM
	fresh := true
	spec := waitSpec{kind: "settle", what: "the VM to run after the update", vmid: id.VMID, budget: b.cfg.Budgets.Running}
	err := b.wait(ctx, spec, func(ctx context.Context) observation {
		got, err := b.get(ctx, id, GetOptions{UID: o.UID, Instance: o.Instance, Pool: o.Pool, FreshListing: fresh})
		fresh = false
		switch {
		case err != nil && ClassOf(err) == pveapi.NotFound:
			return cannot("gone or not ours", err)
		case err != nil && ClassOf(err) == pveapi.Permanent:
			return cannot("it could not be read", err)
		case err != nil:
			return keepAfter("it could not be read", err)
		}
		vm = got
		seen := fmt.Sprintf("%s (qmpstatus %q)", got.State, got.QMPStatus)
		switch {
		case got.StatusUnknown:
			return observation{verdict: keepWaiting, nodeDown: true, seen: "status unknown: node " + got.Node + " is not answering"}
		case got.Hibernated:
			return cannot(
				"hibernated",
				Transientf("the VM was hibernated (lock suspended) outside Terraform right after the update started it; "+
					"resume it with `qm start %d` or apply again to start it", id.VMID),
			)
		case got.State == StateStopped:
			return cannot(
				seen,
				Transientf(
					"the VM is not running after the update started it (status %s, qmpstatus %q): something outside Terraform stopped or paused it, "+
						"or the guest shut itself down; check its console, then apply again to start it",
					got.State,
					got.QMPStatus,
				),
			)
		case got.State == StateRunning, got.State == StateProvisioning && !o.Address:
			return done(seen)
		}
		return keep(seen)
	})
	if err != nil {
		return VM{}, err
	}
	if !o.Address {
		return vm, nil
	}
	a := addressWait{op: "update", node: vm.Node, vmid: id.VMID, expect: agentInstalled, learn: true,
		why: "this start is not a first boot, so no seed installs the agent now (cloud-init runs the seed once)"}
	if o.FirstBoot {
		a.expect, a.why = agentAtFirstBoot, ""
	}
	var ifaces []pveapi.NetworkInterface
	a.seen = &ifaces
	ip, err := b.waitAddress(ctx, a)
	if err != nil {
		return VM{}, err
	}
	vm.IP, vm.State, vm.Addresses = ip, StateRunning, agentAddresses(ifaces)
	return vm, nil
}

// unbound reports a mark that still carries a state line (creating, abandoned) but no
// instance line: written before its create's config step (decision: instance-binding).
func unbound(cfg map[string]string) bool {
	return markState(cfg["description"]) != "" && ParseMark(cfg["description"]).Instance == ""
}

// unboundButRanFor is unboundButRan for a caller whose state is o: never when the state
// recorded the VM's SMBIOS uuid (o.Instance, which ownedBy checked). That record shows the
// VM this resource's, and its mark a text replayed on it, which an update's config write
// replaces with the finished mark (decision: state-binding).
func (b *Backend) unboundButRanFor(ctx context.Context, op, node string, vmid int, cfg map[string]string, o Owner) (bool, error) {
	if o.Instance != "" {
		return false, nil
	}
	return b.unboundButRan(ctx, op, node, vmid, cfg)
}

// unboundButRan reports a VM whose mark is unbound (written before its create's config
// step) although the VM runs, is paused or hibernated: a create starts a VM only after its
// config step, so that mark was copied onto a VM that is not the one it was written for
// (decision: instance-binding). The status is read only for an unbound mark.
func (b *Backend) unboundButRan(ctx context.Context, op, node string, vmid int, cfg map[string]string) (bool, error) {
	if !unbound(cfg) {
		return false, nil
	}
	st, err := b.api.VMStatus(ctx, node, vmid)
	switch {
	case isNotExist(err):
		return false, nil
	case err != nil:
		return false, apiErrorf(op, err, "reading the status of VMID %d on node %s", vmid, node)
	}
	return st.Status != "stopped" || st.Lock == "suspended" || cfg["lock"] == "suspended", nil
}
