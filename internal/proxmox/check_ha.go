package proxmox

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// What HA needs of the API token (decision: health-check): every HA read (rules,
// resources, status) checks Sys.Audit on /, every change Sys.Console on / (the permissions
// blocks of pve-ha-manager src/PVE/API2/HA/Rules.pm:144-146, 213-215, 256-258, 310-312,
// 370-372; Resources.pm:58-59, 105-106, 182-183, 239-240, 287-288; Status.pm:70-71). A
// grant on a pool or on /vms is not enough: only an ACL on / (or a user's role there)
// reaches them.

// haPrivilegePath is where Proxmox checks the HA privileges.
const haPrivilegePath = "/"

// haNeeds are the HA privileges and what each is for.
var haNeeds = []struct{ priv, why string }{
	{"Sys.Audit", "read HA rules, HA resources and the HA status"},
	{"Sys.Console", "create, change and delete HA rules and HA resources"},
}

// SubjectHA is a preflight verdict on HA: the token cannot manage HA rules or resources.
const SubjectHA Subject = "ha"

// HAHealth is the health check's verdict on HA: whether this provider can manage HA rules
// and resources with its token, and whether the cluster is quorate (Proxmox refuses HA
// changes without quorum: Rules.pm:267, Resources.pm:191, check_cfs_quorum).
type HAHealth struct {
	// Usable is true when no privilege is missing and the cluster is quorate.
	Usable bool
	// Quorate is the HA status's quorum entry; QuorumKnown says it was read.
	Quorate, QuorumKnown bool
	// MissingPrivileges are "<privilege> on /" for each HA privilege the token lacks; nil
	// when they could not be read.
	MissingPrivileges []string
	// Message says what was found, in words.
	Message string
}

// haMissing reads the token's privileges on / and lists the HA privileges it lacks.
func (b *Backend) haMissing(ctx context.Context) ([]missingPriv, error) {
	privs, err := b.api.Permissions(ctx, haPrivilegePath)
	if err != nil {
		return nil, err
	}
	var out []missingPriv
	for _, n := range haNeeds {
		if _, ok := privs[n.priv]; !ok {
			out = append(out, missingPriv{priv: n.priv, path: haPrivilegePath, why: n.why})
		}
	}
	return out, nil
}

// CheckHA is the health check's HA round: the token's privileges on /, then (with
// Sys.Audit) the HA status's quorum entry. It never fails: what it could not read is in
// Message.
func (b *Backend) CheckHA(ctx context.Context) (h HAHealth) {
	defer func() {
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox HA checked", map[string]any{"usable": h.Usable,
			"quorate": h.Quorate, "message": h.Message})
	}()
	missing, err := b.haMissing(ctx)
	if err != nil {
		h.Message = fmt.Sprintf("reading the API token's privileges on %s: %v", haPrivilegePath, err)
		return h
	}
	h.MissingPrivileges = []string{}
	parts := make([]string, 0, len(missing))
	canRead := true
	for _, m := range missing {
		h.MissingPrivileges = append(h.MissingPrivileges, m.String())
		parts = append(parts, fmt.Sprintf("%s on %s (to %s)", m.priv, m.path, m.why))
		canRead = canRead && m.priv != "Sys.Audit"
	}
	var lacks string
	if len(parts) > 0 {
		lacks = "the API token lacks " + strings.Join(parts, "; ") + "; grant them on / (propagate 0 is enough) as the setup guide shows"
	}
	if !canRead {
		h.Message = lacks
		return h
	}
	status, err := b.api.HAStatus(ctx)
	if err != nil {
		h.Message = joinSentences(lacks, fmt.Sprintf("reading the HA status: %v", err))
		return h
	}
	for _, e := range status {
		if e.Type == "quorum" || e.ID == "quorum" {
			h.Quorate, h.QuorumKnown = bool(e.Quorate), true
		}
	}
	switch {
	case !h.QuorumKnown:
		h.Message = joinSentences(lacks, "the HA status has no quorum entry")
	case !h.Quorate:
		h.Message = joinSentences(lacks, "the cluster is not quorate, and Proxmox refuses HA changes without quorum; bring enough nodes back")
	case lacks != "":
		h.Message = lacks
	default:
		h.Usable = true
		h.Message = "HA is usable: the cluster is quorate and the API token holds Sys.Audit and Sys.Console on /"
	}
	return h
}

func joinSentences(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// PreflightHA checks, before anything is touched, that the token may manage HA rules and
// resources (Sys.Audit and Sys.Console on /): a missing privilege is a *PreflightError of
// SubjectHA naming each privilege and the path. It runs once per Backend. A failure of the
// check itself is handled as Preflight's are (passOn).
func (b *Backend) PreflightHA(ctx context.Context) error {
	_, err := b.pre.once(ctx, "ha-privileges", func(ctx context.Context) (any, error) {
		missing, err := b.haMissing(ctx)
		if err != nil {
			return nil, passOn(ctx, "reading the API token's privileges on "+haPrivilegePath, err)
		}
		if len(missing) == 0 {
			return nil, nil
		}
		parts := make([]string, len(missing))
		for i, m := range missing {
			parts[i] = fmt.Sprintf("%s on %s (to %s)", m.priv, m.path, m.why)
		}
		token := "the API token"
		if b.cfg.TokenID != nil {
			if id, err := b.cfg.TokenID(); err == nil && id != "" {
				token += " " + id
			}
		}
		return nil, refuse(SubjectHA, pveapi.Permanent, "%s lacks %s, which HA needs; grant them on / alone, e.g. "+
			"pveum role add ProxyHA --privs \"Sys.Audit Sys.Console\" "+
			"and pveum acl modify / --tokens <token id> --roles ProxyHA --propagate 0 (and the same for its user), "+
			"or leave ha and proxy_ha_rule out of this configuration",
			token, strings.Join(parts, "; "))
	}, definitive)
	return err
}
