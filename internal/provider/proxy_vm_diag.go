package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmErrorDetail renders a backend failure for a diagnostic: which VM (name and VMID), what
// happened, and what to do, worded by the error's class (decision: error-classes). note, when set,
// is appended (e.g. what happened to the state). The backend's messages never carry the
// cloud-init text or the token.
func vmErrorDetail(op, name string, vmid int, err error, note string) string {
	return vmErrorDetailFor(nil, op, name, vmid, err, note)
}

// vmErrorDetailFor is vmErrorDetail with the provider's data, so that a failure of the
// connection itself (no answer, TLS, 401, a CA or token file) says which provider setting to
// check, naming the endpoint and the token id (never the secret). d may be nil.
func vmErrorDetailFor(d *providerData, op, name string, vmid int, err error, note string) string {
	msg := err.Error()
	var pe *proxmox.Error
	if errors.As(err, &pe) {
		if pe.Err != nil {
			msg = pe.Err.Error()
		}
		if name == "" {
			name = pe.Name
		}
		if vmid == 0 {
			vmid = pe.VMID
		}
	}
	var b strings.Builder
	if proxmox.IsTakenOver(err) {
		vmid, op = 0, "" // the VMID is the other apply's now: the message names it as such
	}
	b.WriteString(vmLabelFor(op, name, vmid))
	b.WriteString(": ")
	b.WriteString(trimEnd(msg))
	b.WriteString(".\n\n")
	if fix, ok := d.connectionFixFor(op, vmid, err); ok {
		b.WriteString(fix)
		if note != "" {
			b.WriteString("\n\n")
			b.WriteString(note)
		}
		return b.String()
	}
	writeAdvice(&b, op, err)
	if note != "" {
		b.WriteString("\n\n")
		b.WriteString(note)
	}
	return b.String()
}

// writeAdvice writes what to do about err from op, worded by its class and sentinel.
func writeAdvice(b *strings.Builder, op string, err error) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		key := op
		if op == "import" || op == "refresh" {
			key = "read"
		}
		fmt.Fprintf(b, "The %s ran out of time (timeouts.%s). This may succeed if retried, or with a longer timeout.", op, key)
	case errors.Is(err, context.Canceled):
		b.WriteString("The operation was interrupted (Ctrl-C, or the run was cancelled) and stopped where it was")
		if op == "create" {
			b.WriteString(".") // the note says what the next apply does with what was made
		} else {
			b.WriteString("; run the same command again to finish it.")
		}
	case proxmox.IsTakenOver(err):
		b.WriteString("Two applies of this configuration ran at once (two pipelines or workspaces declaring the same name with the same " +
			"uid_namespace), and the other one owns the VM now. Applying this workspace again creates a VM of its own beside it: " +
			"if both were meant to manage one VM, keep one workspace; if each needs its own VMs, give each workspace its own uid_namespace.")
	case errors.Is(err, proxmox.ErrNotOurs) && op != "import":
		b.WriteString(notOursAdvice(op))
	case errors.Is(err, proxmox.ErrStillCreating):
		b.WriteString("Retrying helps once that create finishes: wait for the apply creating it to end or, if that apply was " +
			"interrupted, apply its configuration again to finish it (or destroy the VM in Proxmox)")
		if op == "import" {
			b.WriteString(", then run the import again")
		}
		b.WriteString(".")
	default:
		switch proxmox.ClassOf(err) {
		case proxmox.Permanent:
			b.WriteString("Retrying will not help: fix what the message says (the provider configuration, the API " +
				"token's privileges, the template, or the VM in Proxmox), then " + againFor(op) + ".")
		case proxmox.NotFound:
			switch {
			case op == "import" && errors.Is(err, proxmox.ErrNotOurs):
				// A VM of that name is there, but its mark does not prove it (no mark, or not
				// the one a proxy_vm gives): it exists, so "nothing answers" would mislead.
				b.WriteString("A VM answers to that ID, but it is not one this provider may import (the message says why), so nothing " +
					"was imported: check the ID (the proxy_vms data source lists every VM that can be imported), then run the import again.")
			case op == "import":
				b.WriteString("Nothing in the cluster answers to that ID: check the VMID or the name (the proxy_vms data source lists " +
					"every VM that can be imported).")
			case isPowerOp(op):
				// The power action's refusal: the VM may well exist, only not as this resource's.
				b.WriteString("No VM at this VMID carries this resource's mark, so nothing was sent to it. The next plan of the " +
					"proxy_vm (terraform plan) says what became of the VM and, if it is gone or no longer this resource's, replaces it.")
			default:
				b.WriteString("The VM no longer exists in the cluster. The next plan (terraform plan) shows it as deleted and " +
					"replaces it; a destroy removes it from the state and deletes the seed ISO it left.")
			}
		default:
			b.WriteString("This may succeed if retried: run the same command again.")
		}
	}
}

// notOursAdvice is what a refusal of a VM not shown to be the resource's (ErrNotOurs)
// adds to its message. The power action's message names the case (not bound yet, renamed,
// a line edited, another VM) and its way out: no generic reading that contradicts it.
func notOursAdvice(op string) string {
	if isPowerOp(op) {
		return "Nothing was sent to the VM, and retrying will not help until what the message describes changes."
	}
	return "The VM at this VMID exists but is not this resource's any more, or is not shown to be (the message says why and " +
		"what to do), so nothing was sent to it and retrying will not help until that changes. When a refresh (terraform plan) finds " +
		"it is not this resource's either, the plan says so and what it does about it, leaving that VM alone."
}

// againFor says how to run op again, for a message's "then ...".
func againFor(op string) string {
	switch op {
	case "import":
		return "run the import again"
	case "read", "refresh":
		return "run the plan again"
	case "list":
		return "run the query again"
	case "delete":
		return "run the destroy again"
	}
	return "apply again"
}

// vmLabel names a VM of a create or a plan in a message: Proxy VM "name" (VMID n), or
// (no VMID allocated yet) before its create chose one.
func vmLabel(name string, vmid int) string { return vmLabelFor("create", name, vmid) }

// vmLabelFor names a VM in a message of op: only a create (or its plan) has a VM whose
// VMID is not allocated yet; an import, a read or a list names the VM by what it knows.
func vmLabelFor(op, name string, vmid int) string {
	switch {
	case name != "" && vmid != 0:
		return fmt.Sprintf("Proxy VM %q (VMID %d)", name, vmid)
	case name != "" && (op == "create" || op == "plan"):
		return fmt.Sprintf("Proxy VM %q (no VMID allocated yet)", name)
	case name != "":
		return fmt.Sprintf("Proxy VM %q", name)
	case vmid != 0:
		return fmt.Sprintf("Proxy VM with VMID %d", vmid)
	default:
		return "Proxy VM"
	}
}

// trimEnd drops the final punctuation of a message that a sentence's period follows: Proxmox
// ends its 401 reason phrase with "!" ("Authentication failed!").
func trimEnd(msg string) string { return strings.TrimRight(strings.TrimSpace(msg), ".!") }

// addVMError is addVMError with the provider's connection hints.
func (r *proxyVMResource) addVMError(diags *diag.Diagnostics, verb, name string, vmid int, err error, note string) {
	diags.AddError("Unable to "+verb+" proxy VM", r.vmErrorDetail(verb, name, vmid, err, note))
}

func (r *proxyVMResource) vmErrorDetail(verb, name string, vmid int, err error, note string) string {
	return r.redact(vmErrorDetailFor(r.data, verb, name, vmid, err, note))
}

func (r *proxyVMResource) redact(s string) string {
	if r.data == nil {
		return s
	}
	return redact(s, r.data.secrets())
}

// address is the endpoint as the client uses it (the port filled in).
func (d *providerData) address() string {
	if d.client != nil {
		return d.client.Address()
	}
	return d.cfg.Endpoint
}

// tokenSetting names where the token comes from, for a message: "api_token",
// "api_token_file (/run/secrets/pve)" or "the PROXMOX_VE_API_TOKEN environment variable".
func (d *providerData) tokenSetting() string {
	switch d.cfg.TokenSource {
	case "api_token_file":
		return "api_token_file (" + d.cfg.TokenFile + ")"
	case envAPIToken:
		return "the " + envAPIToken + " environment variable"
	case "":
		return "api_token, api_token_file or " + envAPIToken
	default:
		return d.cfg.TokenSource
	}
}

// tokenID is the token id for a message, or "" when it cannot be read.
func (d *providerData) tokenID() string {
	if d.client == nil {
		return ""
	}
	id, err := d.client.TokenID()
	if err != nil {
		return ""
	}
	return id
}

// connectionFix is what to do about a failure of the connection to Proxmox itself, which
// no retry heals and which the provider configuration (or the network) must fix: the
// endpoint not answering, the certificate, the CA file, the token. ok is false for any
// other failure. A nil receiver words it without the provider's settings.
func (d *providerData) connectionFix(err error) (string, bool) {
	return d.connectionFixFor("", 0, err)
}

// changedBefore says, for an endpoint that stopped answering during op, what had already
// been changed: op "" and the reads change nothing; a create says what it did
// (proxmox.DoneBefore) or that the VMID it saved may hold a VM; an update or a delete
// stopped where it was.
func changedBefore(op string, vmid int, err error) string {
	switch op {
	case "create":
		if done := proxmox.DoneBefore(err); len(done) > 0 {
			return "it stopped answering during the create, after the provider had " + joinSentence(done) +
				", so the VM exists in Proxmox, unfinished"
		}
		if vmid != 0 {
			return fmt.Sprintf("it stopped answering before the create could tell whether Proxmox made the VM at VMID %d", vmid)
		}
	case "update":
		return "the update stopped where it was, and what it had already changed on the VM stays"
	case "delete":
		return "the destroy stopped where it was; the VM may be stopped, its seed ISO deleted"
	}
	return "nothing was changed"
}

// joinSentence joins "a", "b", "c" as "a, b and c".
func joinSentence(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// connectionFixFor is connectionFix for a failure of op on the VM with vmid (0: none), so
// that an endpoint that stopped answering mid-create says what was done.
func (d *providerData) connectionFixFor(op string, vmid int, err error) (string, bool) {
	addr, setting, id, caSetting := "the endpoint", "api_token, api_token_file or "+envAPIToken, "", "the system roots"
	if d != nil {
		addr, setting, id = d.address(), d.tokenSetting(), d.tokenID()
		switch caSource(d.cfg) {
		case "ca_file":
			caSetting = "ca_file (" + d.cfg.CAFile + ")"
		case "ca_pem":
			caSetting = "ca_pem"
		}
	}
	token := "the API token"
	if id != "" {
		token = "the API token " + id
	}
	switch {
	case proxmox.IsEndpointUnreachable(err):
		return fmt.Sprintf("Proxmox VE at %s does not answer: %s. Check the provider's endpoint (without a port it is %s), "+
			"that the host is up and pveproxy runs on it (systemctl status pveproxy), and that no firewall or proxy is in between. "+
			"The provider retried the connection a few times before giving up; "+
			"once the endpoint answers, run the same command again.", addr, changedBefore(op, vmid, err), "8006"), true
	case proxmox.IsTLSVerification(err):
		return fmt.Sprintf(
			"Retrying will not help. The certificate of %s did not verify against %s. Set ca_file (or ca_pem) to the cluster's CA, "+
				"/etc/pve/pve-root-ca.pem on any node, and use an endpoint host that the certificate names; "+
				"insecure = true skips the verification (the token can then be intercepted).",
			addr,
			caSetting,
		), true
	case proxmox.IsCAUnavailable(err):
		return "Retrying will not help. " +
			"The CA bundle cannot be used: fix ca_file (a readable PEM file, such as a copy of /etc/pve/pve-root-ca.pem) or use ca_pem.", true
	case proxmox.IsCredentials(err):
		return "Retrying will not help. The API token cannot be read: fix " + setting +
			"; it must hold <user>@<realm>!<tokenid>=<secret> on one line.", true
	case proxmox.IsUnauthorized(err):
		return fmt.Sprintf(
			"Retrying will not help. Proxmox VE at %s refused %s (401): its secret is wrong, or the token was deleted or has expired. "+
				"Check the token in %s (api_token, api_token_file or the %s environment variable): it must be "+
				"<user>@<realm>!<tokenid>=<secret> for a token that exists (pveum user token list <user>).",
			addr,
			token,
			setting,
			envAPIToken,
		), true
	case proxmox.IsForbidden(err):
		return fmt.Sprintf(
			"Retrying will not help. %s lacks the privilege the message names on that path. "+
				"Grant it (pveum acl modify <path> --tokens '%s' --roles <role>), "+
				"or, for a token with privilege separation, grant it to the token as well as to its user.",
			capitalize(token),
			tokenOr(id),
		), true
	}
	return "", false
}

func tokenOr(id string) string {
	if id == "" {
		return "<user>@<realm>!<tokenid>"
	}
	return id
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// createFailureNote says what a failed create leaves in the state, and the VMID to name:
// nothing when the backend holds no VMID of its own (id nil: none chosen, or released); the
// VM, tainted, when the create made it (proxmox.DoneBefore); else the VMID saved before the
// clone request, whose VM may or may not exist (decision: create-steps).
func createFailureNote(id *proxmox.ID, err error) (int, string) {
	switch {
	case id == nil:
		return 0, "Nothing is saved in the state for it: no VM of its own exists."
	case len(proxmox.DoneBefore(err)) > 0:
		return id.VMID, "The VM is saved in the state as tainted: the next apply destroys it and creates it again."
	}
	return id.VMID, "Its VMID is saved in the state as tainted: the next apply removes the VM if it was made, and creates it again."
}

// refreshFailed reports a refresh that could not look at the VM, which fails the plan, with
// the ways to plan without it (-refresh=false, -target). Its node not answering behind a
// reachable endpoint (595/596) names the node. A failure of the connection itself (the
// endpoint, TLS, the token) is the provider block's, the same for every resource: reported
// once per provider instance; the other refreshes keep their prior state without a
// diagnostic, and the one error fails the plan all the same.
func (r *proxyVMResource) refreshFailed(diags *diag.Diagnostics, id proxmox.ID, node string, err error) {
	const escape = "To plan without looking at it: `terraform plan -refresh=false` uses the values the last apply saved for every " +
		"resource, and `-target=<address>` plans only the resources named (leave this one out)."
	note := "The plan cannot tell whether this VM matches the configuration, so it stops here; nothing was changed. " + escape
	switch fix, conn := r.data.connectionFix(err); {
	case proxmox.IsProxyFailure(err):
		note = fmt.Sprintf("Node %s does not answer behind the endpoint (%s), so the plan cannot see this VM and stops here; "+
			"nothing was changed. Bring node %s back (or its connection to the rest of the cluster). %s", node, r.data.address(), node, escape)
	case conn && !r.data.reportOnce("connection\x00"+fix):
		return
	case conn:
		note += " The same failure stops the refresh of every proxy_vm of this provider configuration; it is reported once, here."
	}
	r.addVMError(diags, "read", id.Name, id.VMID, err, note)
}

// isPowerOp reports whether op is one of proxy_vm_power's operations (proxmox.PowerOp).
func isPowerOp(op string) bool {
	switch proxmox.PowerOp(op) {
	case proxmox.PowerStart, proxmox.PowerShutdown, proxmox.PowerReboot, proxmox.PowerStop:
		return true
	}
	return false
}
