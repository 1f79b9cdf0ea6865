package proxmox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// settled is what Delete and Update found at an ID's VMID once no task held it.
type settled struct {
	verdict verdict // ours, foreign (another name, no mark, or another uid) or gone
	r       pveapi.Resource
	cfg     map[string]string
	// otherUID is set when the VM has our name and mark but another uid than the one
	// expected: a live VM of that name that is not ours.
	otherUID string
	// res is the listing the verdict was read from.
	res []pveapi.Resource
}

// settle reads the listing (fresh) and the config at id's VMID until no task holds the VM
// and the listing reports its status, within budget (Terraform has no requeue, so a lock
// is waited on rather than failed at once; entry 11 steps 2 to 4). A suspended lock is
// not a task: it is not waited on. uid, when set, is the uid the mark must carry: a VM of
// another uid is foreign (see GetOptions.UID); a mark without a uid matches any.
func (b *Backend) settle(ctx context.Context, op string, id ID, uid string, budget time.Duration) (settled, error) {
	var out settled
	var busy string
	var last error
	var listed []pveapi.Resource
	err := b.pollUntil(ctx, budget, func(ctx context.Context) (bool, error) {
		res, err := b.listing(ctx, true)
		listed = res
		if err != nil {
			if classify(op, err) == pveapi.Permanent {
				return false, apiErrorf(op, err, "listing the cluster's VMs")
			}
			last, busy = err, "the cluster listing failed"
			return false, nil
		}
		r, ok := findResource(res, id.VMID)
		if !ok || r.Type != "qemu" || r.Template == 1 {
			out = settled{verdict: verdictGone, r: r}
			return true, nil
		}
		// The listed name and lock are pvestatd's snapshot: the config decides, and a lock
		// of a VM whose config names another VM is never waited on.
		cfg, err := b.api.VMConfig(ctx, r.Node, id.VMID)
		switch {
		case err == nil:
		case isNotExist(err):
			out = settled{verdict: verdictGone, r: r}
			return true, nil
		case classify(op, err) == pveapi.Permanent:
			return false, apiErrorf(op, err, "reading the config on node %s", r.Node)
		default:
			last, busy = err, "its config could not be read"
			return false, nil
		}
		name := cfg["name"]
		if name == "" {
			busy = fmt.Sprintf("a clone in progress, lock %q", cfg["lock"])
			return false, nil
		}
		mark := ParseMark(cfg["description"])
		if name != id.Name || !mark.Managed {
			out = settled{verdict: verdictForeign, r: r, cfg: cfg}
			return true, nil
		}
		if uid != "" && mark.UID != "" && mark.UID != uid {
			out = settled{verdict: verdictForeign, r: r, cfg: cfg, otherUID: mark.UID}
			return true, nil
		}
		if l := cfg["lock"]; l != "" && l != "suspended" {
			busy = fmt.Sprintf("lock %q", l)
			return false, nil
		}
		if r.Status == "unknown" {
			busy = "status unknown: its node " + r.Node + " is not answering, or the VM is too new to be reported yet"
			return false, nil
		}
		out = settled{verdict: verdictOurs, r: r, cfg: cfg}
		return true, nil
	})
	if errors.Is(err, errBudget) {
		if last != nil {
			return settled{}, Transientf("the VM is still busy (%s) after %s; wait for the task to end, or clear a stale lock with `qm unlock %d`, then try again: %w",
				busy, budget, id.VMID, last)
		}
		return settled{}, Transientf("the VM is still busy (%s) after %s; wait for the task to end, or clear a stale lock with `qm unlock %d`, then try again",
			busy, budget, id.VMID)
	}
	if err != nil {
		return settled{}, budgetErr(err, "waiting for the VM (%s)", busy)
	}
	out.res = listed
	return out, nil
}
