package proxmox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// agentExpect says when the guest agent should answer after a start.
type agentExpect int

const (
	// agentAtFirstBoot: the seed installs the agent at this first boot (about 50 s on a
	// real host, longer on a slow package mirror): "not running" is waited on until ctx.
	agentAtFirstBoot agentExpect = iota
	// agentInstalled: nothing installs the agent now (not a first boot, or neither the
	// seed nor the cloud-init installs it), so the guest has it or never will: "not
	// running" for longer than Budgets.AgentStart of uptime cannot succeed.
	agentInstalled
)

// firstBootNote is the address wait's first progress line when the seed installs the agent.
const firstBootNote = "a first boot installs qemu-guest-agent from the seed before the address can be read: " +
	"about 50 s on a real host, more with a slow package mirror; a template with the agent baked in " +
	"(install_guest_agent = false) removes that wait"

// addressWait is one wait for the guest agent's IPv4.
type addressWait struct {
	op, node string
	vmid     int
	expect   agentExpect
	// why says, with agentInstalled, why nothing will install the agent (for the error).
	why string
	// budget bounds the wait; 0: ctx only.
	budget time.Duration
	// delayKey names the kind of boot whose agent delay the poll schedule expects and
	// learns (agentDelayKey); "": by expect alone. learn: this wait follows a start the
	// caller made, so its delay is a boot's and is remembered.
	delayKey string
	learn    bool
	// seen, when set, receives the agent's answer that ended the wait (addresses.go).
	seen *[]pveapi.NetworkInterface
	// want, when set, is the static address the seed gives the guest: the wait ends when
	// the agent reports it among the guest's IPv4 addresses, not at the first address,
	// and fails once the agent has reported other addresses only for
	// Budgets.StaticAddress.
	want string
	// rawNetwork: the seed carries a raw network_config (the create's first boot). It may
	// give the guest no IPv4 at all, so once the agent has answered without one for
	// Budgets.StaticAddress the wait fails (a DHCP guest keeps waiting: its lease may be late).
	rawNetwork bool
	// owned, when set, checks every ownerCheckEvery that the VM is still the caller's (a
	// create's VM may be taken over by another apply, which rebuilds it within seconds: the
	// agent's answers alone would never tell); its error ends the wait.
	owned func(context.Context) error
}

// ownerCheckEvery is how often a create's address wait reads the VM's mark (addressWait.owned).
const ownerCheckEvery = 20 * time.Second

// agentStatusEvery is how often, with agentInstalled, an agent that is not running yet
// makes the address wait read the VM's uptime.
const agentStatusEvery = 10 * time.Second

// waitAddress polls the guest agent until it reports an IPv4. The agent is asked first:
// while it answers "QEMU guest agent is not running" (the guest is booting, or installing
// the agent) that is all a poll costs, but with agentInstalled the VM's uptime is read
// every agentStatusEvery and an uptime past Budgets.AgentStart ends the wait. Any other
// answer (the VM is not running, a timeout of a paused guest, anything unknown) is checked
// against status/current. Cannot succeed: the VM stopped, paused, hibernated or gone (Transient:
// the next apply starts it), the agent disabled in the config (Permanent), the agent
// missing from a guest that nothing installs it in (Permanent), the node down past
// Budgets.NodeGrace.
func (b *Backend) waitAddress(ctx context.Context, a addressWait) (string, error) {
	spec := waitSpec{kind: "address", what: "an IPv4 address from the guest agent", vmid: a.vmid, node: a.node, budget: a.budget}
	if a.expect == agentAtFirstBoot {
		spec.note = firstBootNote
	} else {
		spec.note = fmt.Sprintf("no seed installs the agent at this start, so it must answer within %s of the boot", b.cfg.Budgets.AgentStart)
	}
	if a.want != "" {
		spec.what = "the static address " + a.want + " from the guest agent"
	}
	// The polls follow the delay this backend expects for this kind of boot (learned from
	// earlier waits, else a real host's), and an address found after a start we made
	// teaches it.
	key, def := a.delayKey, bootAgentDelay
	if a.expect == agentAtFirstBoot {
		def = firstBootAgentDelay
	}
	if key == "" {
		key = agentDelayKey(a.expect == agentAtFirstBoot, 0)
	}
	expected := b.agentSeen.expected(key, def)
	// The guest boots from its start task's end, not from this wait's start: the requests
	// in between (the running check, the read-back) vary with the load, and a schedule
	// counted from the wait would poll each VM of a fleet at another point of its boot,
	// and learn the least of those offsets.
	now := b.clock.Now()
	boot := b.bootStart(a.vmid, now, expected)
	spec.delay = func(elapsed time.Duration) time.Duration { return agentPollDelay(elapsed+now.Sub(boot), expected) }
	p := &addressPoll{b: b, a: a, key: key, start: boot}
	p.lastOwned = now
	if err := b.wait(ctx, spec, p.poll); err != nil {
		return "", p.endErr(err)
	}
	return p.ip, nil
}

// bootStart is when the guest at vmid began to boot for an address wait beginning at now:
// the end of the start task this backend saw last for it (startAndWait), when that was
// within expected of now; else now.
func (b *Backend) bootStart(vmid int, now time.Time, expected time.Duration) time.Time {
	v, ok := b.started.Load(vmid)
	if !ok {
		return now
	}
	t, _ := v.(time.Time)
	if t.After(now) || now.Sub(t) >= expected {
		return now
	}
	return t
}

// addressPoll is one address wait's state between its polls (waitAddress).
type addressPoll struct {
	b   *Backend
	a   addressWait
	key string // the agent delay's key (agentDelayKey)
	// start is the guest's boot's (bootStart); missed and prev the last two polls, since
	// start (every poll before the one that finds the address missed it).
	start        time.Time
	missed, prev time.Duration
	lastStatus   time.Time // the last uptime read of an agent not running yet
	lastOwned    time.Time // the last ownership check
	lastAnswer   error     // the agent's last answer, for the timeout's error
	othersSince  time.Time // since when the agent reports other addresses than a.want only
	noIPv4Since  time.Time // with rawNetwork: since when the agent answers without an IPv4
	others, ip   string
}

// poll asks the agent once; any answer but an address, "not running", "no agent" or
// "gone" is checked against status/current (checkStatus).
func (p *addressPoll) poll(ctx context.Context) observation {
	b, a := p.b, p.a
	if a.owned != nil && b.clock.Now().Sub(p.lastOwned) >= ownerCheckEvery {
		p.lastOwned = b.clock.Now()
		if err := a.owned(ctx); err != nil {
			return cannot("not this create's VM any more", err)
		}
	}
	asked := b.clock.Now().Sub(p.start)
	p.missed, p.prev = p.prev, asked // every earlier poll found no address
	ifaces, err := b.api.AgentNetworkInterfaces(ctx, a.node, a.vmid)
	if ctx.Err() == nil {
		p.lastAnswer = err
	}
	switch {
	case err == nil && a.want != "":
		return p.static(ifaces, asked)
	case err == nil:
		return p.dynamic(ifaces, asked)
	case isAgentNotRunning(err):
		return p.agentNotRunning(ctx, err)
	case isNoAgentConfigured(err):
		return cannot("no agent configured", Permanentf("the VM's guest agent option is off in its config, so no address can be read; "+
			"set it with `qm set %d --agent 1` or set wait_for_ip = false", a.vmid))
	case isNotExist(err):
		return cannot("the VM is gone", lostf("the VM vanished while waiting for its address: something outside Terraform destroyed it"))
	}
	return p.checkStatus(ctx, err)
}

// found ends the wait on ip, teaching the agent delay when the wait follows our start.
func (p *addressPoll) found(ip string, ifaces []pveapi.NetworkInterface, asked time.Duration) observation {
	p.ip = ip
	if p.a.learn {
		p.b.agentSeen.observe(p.key, p.missed, asked)
	}
	if p.a.seen != nil {
		*p.a.seen = ifaces
	}
	return done("address " + ip)
}

// static reads an answer against the static address the seed gives (a.want): found, or
// other addresses only for Budgets.StaticAddress, which cannot succeed.
func (p *addressPoll) static(ifaces []pveapi.NetworkInterface, asked time.Duration) observation {
	want := p.a.want
	found, seenOthers := staticAddressSeen(agentAddresses(ifaces), want)
	if found {
		return p.found(want, ifaces, asked)
	}
	if seenOthers == "" {
		return keep(addressSeen(ifaces))
	}
	p.others = seenOthers
	now := p.b.clock.Now()
	if p.othersSince.IsZero() {
		p.othersSince = now
	}
	if waited := now.Sub(p.othersSince); waited >= p.b.staticAddressBudget() {
		return cannot("address "+p.others, staticAddressErr(want, p.others, waited))
	}
	return keep("address " + p.others + ", not " + want)
}

// dynamic reads an answer for the first IPv4; with rawNetwork, no IPv4 for
// Budgets.StaticAddress cannot succeed.
func (p *addressPoll) dynamic(ifaces []pveapi.NetworkInterface, asked time.Duration) observation {
	if ip := firstIPv4(ifaces); ip != "" {
		return p.found(ip, ifaces, asked)
	}
	if p.a.rawNetwork {
		now := p.b.clock.Now()
		if p.noIPv4Since.IsZero() {
			p.noIPv4Since = now
		}
		if waited := now.Sub(p.noIPv4Since); waited >= p.b.staticAddressBudget() {
			return cannot("no IPv4 address", rawNetworkNoIPv4Err(ifaces, waited))
		}
	}
	return keep(addressSeen(ifaces)) // the network is still coming up
}

// agentNotRunning waits; with agentInstalled it reads the uptime every agentStatusEvery,
// and an uptime past Budgets.AgentStart cannot succeed.
func (p *addressPoll) agentNotRunning(ctx context.Context, err error) observation {
	b, a := p.b, p.a
	if a.expect != agentInstalled || (!p.lastStatus.IsZero() && b.clock.Now().Sub(p.lastStatus) < agentStatusEvery) {
		return keep("agent not running yet")
	}
	p.lastStatus = b.clock.Now()
	st, serr := b.api.VMStatus(ctx, a.node, a.vmid)
	if serr != nil || st.Status != "running" {
		return keep("agent not running yet") // the next answer of the agent tells
	}
	if up := time.Duration(st.Uptime) * time.Second; up >= b.cfg.Budgets.AgentStart {
		return cannot("agent not running", Permanentf("the guest agent has not answered in the %s the VM has been running (%s): %s; "+
			"install qemu-guest-agent in the guest or bake it into the template (or set install_guest_agent = true for new VMs), "+
			"or set wait_for_ip = false, then apply again", up, err, a.why))
	}
	return keep("agent not running yet")
}

// checkStatus reads status/current after an agent answer that cannot tell (the VM not
// running, a timeout of a paused guest, anything unknown): stopped, paused, hibernated or
// gone cannot succeed.
func (p *addressPoll) checkStatus(ctx context.Context, err error) observation {
	b, a := p.b, p.a
	seen := "agent answered: " + err.Error()
	st, serr := b.api.VMStatus(ctx, a.node, a.vmid)
	switch {
	case serr == nil:
	case isNotExist(serr):
		return cannot("the VM is gone", lostf("the VM vanished while waiting for its address: something outside Terraform destroyed it"))
	default:
		o := pollFailed(a.op, serr, "its status could not be read", "reading the status on node %s", a.node)
		if o.verdict == keepWaiting && nodeUnreachable(err) {
			o.err = err
		}
		return o
	}
	if st.Lock == "suspended" || mapState(st.Status, st.QMPStatus) == StateStopped {
		return cannot(fmt.Sprintf("status %s, qmpstatus %s", st.Status, st.QMPStatus), lostf(
			"the VM stopped (status %q, qmpstatus %q, lock %q) while waiting for its address: something outside "+
				"Terraform stopped, paused or hibernated it, "+
				"or the guest shut itself down; check its console, then apply again, which starts it again", st.Status, st.QMPStatus, st.Lock))
	}
	return keepAfter(seen, err) // running or starting: the agent's answer was a passing one
}

// endErr is the error of a wait that did not find the address: wait's own for a poll's
// "cannot succeed" or the budget, else (the operation's timeout or an interrupt) what
// the agent last said and what to check.
func (p *addressPoll) endErr(err error) error {
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err // cannot succeed, or the budget
	}
	why := "the guest agent reported no routable IPv4 address"
	if p.lastAnswer != nil {
		why = "last answer: " + p.lastAnswer.Error()
	}
	if errors.Is(err, context.Canceled) {
		// Ctrl-C, or a cancelled run: not a timeout, and nothing says the guest is wrong.
		return Transientf("interrupted while waiting for the guest agent to report the VM's IPv4 address (%s): %w", why, context.Canceled)
	}
	if p.others != "" {
		return Transientf("the guest agent reports %s, not the static address %s, at the timeout; check the guest's "+
			"/var/log/cloud-init.log for why its network-config was not applied: %w", p.others, p.a.want, err)
	}
	return Transientf("no IPv4 address from the guest agent before the timeout (%s); the guest must run qemu-guest-agent "+
		"(installed at first boot unless install_guest_agent is off, which needs a package mirror) and get an address; "+
		"set wait_for_ip = false to skip this wait: %w", why, err)
}

// addressSeen says what an agent answer without a routable IPv4 holds.
func addressSeen(ifaces []pveapi.NetworkInterface) string {
	for _, i := range ifaces {
		for _, a := range i.IPAddresses {
			if i.Name != "lo" && a.Type == "ipv4" && strings.HasPrefix(a.Address, "169.254.") {
				return "link-local address only"
			}
		}
	}
	return "agent running, no IPv4 address yet"
}

// seedInstallsAgent reports whether this VM's first boot installs the guest agent: the
// seed's vendor-data does with install_guest_agent, and a cloud-init (user-data or the
// provider's vendor_data) naming the qemu-guest-agent package is taken to. Only whether
// the text names the package is looked at; the text itself is never logged.
func (b *Backend) seedInstallsAgent(userData []byte) bool {
	return b.cfg.InstallGuestAgent || mentionsAgent(string(userData)) || mentionsAgent(b.cfg.VendorData)
}

func mentionsAgent(cloudInit string) bool {
	return strings.Contains(strings.ToLower(cloudInit), "qemu-guest-agent")
}

// agentPreflight refuses, before anything is made, a create that waits for the address of
// a guest that cannot get an agent: no seed installs it (seedInstallsAgent) and the
// template's config does not enable the agent option. A template with the agent baked in
// has the option on (Proxmox talks to the agent only through that device), so an option
// that is off is how the provider knows the template lacks it.
func (b *Backend) agentPreflight(s *Spec, tmplCfg map[string]string) error {
	if !s.WaitForIP || b.seedInstallsAgent(s.UserData) || agentEnabled(tmplCfg["agent"]) {
		return nil
	}
	return Permanentf("install_guest_agent is off, the cloud-init does not install qemu-guest-agent, and template %d's agent option is off, "+
		"so the VM would never report an address and the create would wait until its timeout; bake qemu-guest-agent into the template "+
		"and enable its agent option (`qm set %d --agent 1`), set install_guest_agent = true, or set wait_for_ip = false",
		s.TemplateVMID, s.TemplateVMID)
}

// agentBeforeRestart runs before an update restarts a running VM whose address the caller
// then waits for (Changes.WaitForIP): a restart is not a first boot, so no seed installs
// the agent, and a guest that has run past Budgets.AgentStart without its agent
// answering will not answer after the restart either. Such an update is refused before
// anything is changed (Permanent), as is one of a VM whose agent option is off. Any other
// answer (an address, the agent booting, an answer that cannot tell) lets it go on.
func (b *Backend) agentBeforeRestart(ctx context.Context, node string, vmid int, cfg map[string]string, vs pveapi.VMStatus) error {
	refuseOff := func() error {
		return Permanentf("the VM's guest agent option is off in its config, so after the restart no address could be "+
			"read; nothing was changed: "+
			"set it with `qm set %d --agent 1` or set wait_for_ip = false, then apply again", vmid)
	}
	if !agentEnabled(cfg["agent"]) {
		return refuseOff()
	}
	_, err := b.api.AgentNetworkInterfaces(ctx, node, vmid)
	switch {
	case err == nil:
		return nil
	case isNoAgentConfigured(err):
		return refuseOff()
	case isAgentNotRunning(err):
		up := time.Duration(vs.Uptime) * time.Second
		if up < b.cfg.Budgets.AgentStart {
			return nil // maybe still at its first boot
		}
		tflog.SubsystemInfo(ctx, LogSubsystem, "proxmox restart refused: the guest agent does not answer", map[string]any{
			"vmid": vmid, "node": node, "uptime": up.String(),
		})
		return Permanentf("the VM has been running for %s and its guest agent does not answer (%s); the restart the %s change needs "+
			"is not a first boot, so no seed installs the agent and no address could be read after it: the update would wait until its timeout. "+
			"Nothing was changed: install qemu-guest-agent in the guest (or bake it into the template), or set "+
			"wait_for_ip = false, then apply again",
			up, err, restartLabels("or"))
	}
	return nil
}
