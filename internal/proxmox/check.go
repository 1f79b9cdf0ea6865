package proxmox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// NodeCheck is one node's verdict plus how far the check got, for callers that render
// details the check never reached as unknown rather than as zero.
type NodeCheck struct {
	NodeHealth
	// StorageAnswered is true when the ISO storage status answered, so
	// ISOStorageAvailGiB is a reading and not a zero value.
	StorageAnswered bool
}

// Check is the health check (decision: health-check): one verdict per configured node, in config order.
func (b *Backend) Check(ctx context.Context) []NodeHealth {
	checks := b.CheckDetailed(ctx)
	out := make([]NodeHealth, len(checks))
	for i, c := range checks {
		out[i] = c.NodeHealth
	}
	return out
}

// CheckDetailed is Check with NodeCheck's extra detail. The nodes are checked
// concurrently, each with its own four requests (GET /version, the node's status, its ISO
// storage status, the VM listing), so a failure is reported against the node whose round
// saw it and a node that hangs costs only its own time, bounded by ctx; each catalogue
// template the listing shows is then read once for all the rounds (the create's template
// checks, shared with the preflight). It never fails: an unhealthy node is a verdict, not an
// error.
func (b *Backend) CheckDetailed(ctx context.Context) []NodeCheck {
	out := make([]NodeCheck, len(b.cfg.Nodes))
	// The token file is read once, before any request: a missing or malformed
	// one answers CredentialsUnavailable on every node without a request.
	tokenID, tokenErr := "", error(nil)
	if b.cfg.TokenID != nil {
		tokenID, tokenErr = b.cfg.TokenID()
	}
	var wg sync.WaitGroup
	privs := &privilegeRound{}
	for i, node := range b.cfg.Nodes {
		wg.Go(func() {
			out[i] = b.checkNode(ctx, node, tokenID, tokenErr, privs)
		})
	}
	wg.Wait()
	return out
}

// checkStep names the request a node's check was making, for reasons and messages.
type checkStep int

const (
	stepVersion checkStep = iota
	stepNode
	stepStorage
	stepTemplates
	stepPrivileges
)

func (s checkStep) String() string {
	switch s {
	case stepVersion:
		return "reading the Proxmox VE version"
	case stepNode:
		return "reading the node status"
	case stepStorage:
		return "reading the ISO storage status"
	case stepPrivileges:
		return "reading the API token's privileges"
	default:
		return "listing the cluster's VMs for the templates"
	}
}

// checkNode runs one node's round: four requests, stopping at the first failure, then the
// privilege round the nodes share (check_privileges.go).
func (b *Backend) checkNode(ctx context.Context, node, tokenID string, tokenErr error, privs *privilegeRound) (c NodeCheck) {
	c.Name = node
	c.Address = b.cfg.Endpoint
	c.ISOStorage = b.cfg.ISOStorage
	defer func() {
		c.Ready = c.Reason == ReasonReachable
		logNodeCheck(ctx, c)
	}()
	if tokenErr != nil {
		c.Reason = ReasonCredentialsUnavailable
		c.Message = "the API token is unavailable: " + tokenErr.Error()
		return c
	}
	c.TokenID = tokenID

	v, err := b.api.Version(ctx)
	if err != nil {
		return checkFailed(ctx, c, stepVersion, err)
	}
	c.PVEVersion = v.Version

	ns, err := b.api.NodeStatus(ctx, node)
	if err != nil {
		return checkFailed(ctx, c, stepNode, err)
	}
	c.Kernel = kernelRelease(ns.KVersion)

	st, err := b.api.StorageStatus(ctx, node, b.cfg.ISOStorage)
	if err != nil {
		return checkFailed(ctx, c, stepStorage, err)
	}
	c.StorageAnswered = true
	c.ISOStorageAvailGiB = bytesToGiB(st.Avail)
	if msg := isoStorageUnusable(st, b.cfg.ISOStorage, node); msg != "" {
		c.Reason, c.Message = ReasonStorageNotFound, msg
		return c
	}

	res, err := b.api.ClusterResources(ctx)
	if err != nil {
		return checkFailed(ctx, c, stepTemplates, err)
	}
	// Before the templates: a template the token may not see is missing from the listing,
	// and the missing privilege says so better than "does not exist".
	lacks, err := privs.run(ctx, b, res)
	if err != nil {
		return checkFailed(ctx, c, stepPrivileges, err)
	}
	if len(lacks) > 0 {
		c.Reason = ReasonForbidden
		parts := make([]string, len(lacks))
		for i, m := range lacks {
			c.MissingPrivileges = append(c.MissingPrivileges, m.String())
			parts[i] = fmt.Sprintf("%s on %s (to %s)", m.priv, m.path, m.why)
		}
		c.Message = fmt.Sprintf("the API token %s lacks privileges the provider needs: %s; grant them as the setup "+
			"guide shows", tokenID, strings.Join(parts, "; "))
		return c
	}
	found, missing := b.usableTemplates(ctx, res)
	c.Templates = fmt.Sprintf("%d/%d", found, len(b.cfg.Templates))
	if len(missing) > 0 {
		c.Reason = ReasonTemplateNotFound
		c.Message = "catalogue templates unusable: " + strings.Join(missing, "; ")
		return c
	}
	c.Reason = ReasonReachable
	c.Message = fmt.Sprintf("node %s answers: Proxmox VE %s, ISO storage %s active with %.2f GiB free, %s templates found",
		node, c.PVEVersion, b.cfg.ISOStorage, c.ISOStorageAvailGiB, c.Templates)
	return c
}

// logNodeCheck logs a node's round: its verdict, and at trace level what it read.
func logNodeCheck(ctx context.Context, c NodeCheck) {
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox node checked", map[string]any{
		"node": c.Name, "reason": string(c.Reason), "ready": c.Ready,
	})
	tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox node check details", map[string]any{
		"node": c.Name, "message": c.Message, "pve_version": c.PVEVersion, "kernel": c.Kernel,
		"token_id": c.TokenID, "iso_storage": c.ISOStorage, "templates": c.Templates,
		"iso_storage_avail_gib": c.ISOStorageAvailGiB,
	})
}

// checkFailed is c after the request of step failed with err.
func checkFailed(ctx context.Context, c NodeCheck, step checkStep, err error) NodeCheck {
	// The round's ctx ending is Timeout whatever the error says (a dial cut short by
	// the deadline included): the guard is here, not in checkReason.
	if ctx.Err() != nil {
		c.Reason = ReasonTimeout
		c.Message = fmt.Sprintf("the health check ran out of time %s of node %s", step, c.Name)
		return c
	}
	c.Reason = checkReason(step, err)
	c.Message = fmt.Sprintf("%s of node %s: %v", step, c.Name, err)
	if d, ok := pveapi.PermissionDenied(err); ok && d.Path != "" {
		// A read of the round refused: the privilege Proxmox named (Sys.Audit on the
		// node, an ISO storage's Datastore.Audit...).
		c.MissingPrivileges = []string{strings.ReplaceAll(d.Privilege, "|", " or ") + " on " + d.Path}
	}
	return c
}

// isoStorageUnusable says why the ISO storage storage, as node reports it in st, cannot take
// a seed ISO; "" when it can.
func isoStorageUnusable(st pveapi.StorageStatus, storage, node string) string {
	switch {
	case st.Active != 1:
		return fmt.Sprintf("ISO storage %s is not active on node %s", storage, node)
	case !slices.Contains(contentTypes(st.Content), "iso"):
		return fmt.Sprintf("ISO storage %s on node %s does not hold iso content (content: %s)", storage, node, st.Content)
	}
	return ""
}

// usableTemplates counts the catalogue entries that are templates in the listing res and pass
// the create's template checks (a Proxmox cloud-init drive, a disk on ide2...: every VM of
// one that fails would fail at plan), and describes the others.
func (b *Backend) usableTemplates(ctx context.Context, res []pveapi.Resource) (found int, missing []string) {
	found, missing = checkTemplates(b.cfg.Templates, res)
	for _, k := range sortedTemplateKeys(b.cfg.Templates) {
		vmid := b.cfg.Templates[k]
		if r, ok := findResource(res, vmid); !ok || r.Type != "qemu" || r.Template != 1 {
			continue // counted as missing above
		}
		if why := b.templateUnusable(ctx, vmid, res); why != "" {
			found--
			missing = append(missing, fmt.Sprintf("%s: %s", k, why))
		}
	}
	return found, missing
}

// checkTemplates counts the catalogue entries whose VMID is a QEMU template in the listing
// (entries, not unique VMIDs) and describes the others, in key order.
func checkTemplates(catalogue map[string]int, res []pveapi.Resource) (found int, missing []string) {
	byVMID := make(map[int]pveapi.Resource, len(res))
	for _, r := range res {
		if r.Type == "qemu" {
			byVMID[r.VMID] = r
		}
	}
	keys := make([]string, 0, len(catalogue))
	for k := range catalogue {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vmid := catalogue[k]
		r, ok := byVMID[vmid]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("%s: VM %d does not exist", k, vmid))
		case r.Template != 1:
			missing = append(missing, fmt.Sprintf("%s: VM %d is not a template", k, vmid))
		default:
			found++
		}
	}
	return found, missing
}

// templateUnusable runs the create's template checks on template vmid (the preflight's
// verdict, shared with plans and creates of this provider instance) and says why no VM can
// be made of it, or "" when it passes or could not be read (the listing check stands).
func (b *Backend) templateUnusable(ctx context.Context, vmid int, res []pveapi.Resource) string {
	_, err := b.templateVerdict(ctx, vmid, res)
	var pe *PreflightError
	if err == nil || !errors.As(err, &pe) {
		return ""
	}
	return strings.TrimRight(pe.Err.Err.Error(), ".")
}

func sortedTemplateKeys(catalogue map[string]int) []string {
	keys := make([]string, 0, len(catalogue))
	for k := range catalogue {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkReason maps a failed request to a reason. The caller handles the round's
// ctx ending first.
func checkReason(step checkStep, err error) Reason {
	switch {
	case pveapi.IsCredentials(err):
		return ReasonCredentialsUnavailable
	case pveapi.IsTLSVerification(err), pveapi.IsCAUnavailable(err):
		return ReasonCertificateInvalid
	// Before the timeout test: a dial or TLS handshake that ran out of its own budget is
	// Unreachable, since the node did not answer.
	case pveapi.IsDialFailure(err), pveapi.IsProxyFailure(err):
		return ReasonUnreachable
	case pveapi.IsUnauthorized(err):
		return ReasonUnauthorized
	case pveapi.IsForbidden(err):
		return ReasonForbidden
	case step == stepStorage && (pveapi.IsNoSuchStorage(err) || checkStatusIs(err, 500)):
		return ReasonStorageNotFound
	case checkStatusIs(err, 0):
		return ReasonAPIError // any other answer from Proxmox
	case checkTimedOut(err):
		return ReasonTimeout
	case pveapi.IsConnectionLost(err):
		return ReasonUnreachable
	default:
		return ReasonAPIError
	}
}

// checkStatusIs reports an answer from Proxmox with that HTTP status (0: any status).
func checkStatusIs(err error, status int) bool {
	var apiErr *pveapi.APIError
	return errors.As(err, &apiErr) && (status == 0 || apiErr.Status == status)
}

// checkTimedOut is a request that ran out of its own time.
func checkTimedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// kernelRelease is the release in kversion ("Linux 6.8.12-4-pve #1 SMP ..."), or kversion
// itself when it has another shape.
func kernelRelease(kversion string) string {
	if f := strings.Fields(kversion); len(f) >= 2 && f[0] == "Linux" {
		return f[1]
	}
	return kversion
}

// bytesToGiB is bytes in GiB, rounded to two decimals.
func bytesToGiB(bytes int64) float64 {
	return math.Round(float64(bytes)/(1<<30)*100) / 100
}

// contentTypes splits a Proxmox comma list ("iso,vztmpl"), trimming blanks.
func contentTypes(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
