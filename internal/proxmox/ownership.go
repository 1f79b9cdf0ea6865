package proxmox

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Ownership (decision: identity-and-adoption, decision: creating-proof): one rule decides
// whether a VM is a resource's, and every path that writes to a VM asks it, through the
// functions of this file only:
//
//   - ownedBy: a VM is the resource (name, uid)'s only when its config names it, its
//     description carries the managed mark, the mark carries uid, the VM's SMBIOS uuid is
//     the one the state recorded, when it recorded one, whatever the mark says (decision:
//     state-binding: a Notes-only user can delete the mark's instance line, not change the
//     state), and the mark's instance line, when it has one, names the VM's SMBIOS uuid
//     (decision: instance-binding: a mark copied to another VM, or left on a VMID reused
//     by another VM, names another uuid, and smbios1 takes VM.Config.HWType to write). A
//     caller without a state (the power action) requires the instance line. An empty uid owns
//     nothing (a mark without a uid line, or a state that records none, proves nothing),
//     and a state never takes the uid of the VM it reads: refresh, update, power, migrate
//     and destroy act only on a VM that ownedBy accepts.
//   - provedCreating: the one exception, a create taking over what an interrupted create
//     of the same name left: the mark must still say creating, in the create's
//     uid_namespace, and carry a proof (a MAC under a key derived from the API token's
//     secret) over that mark's uid, this VMID, the name and the namespace. A description
//     written by hand, or copied with a full clone to another VMID, fails it, and the VM
//     is foreign: never stopped, destroyed, reconfigured or booted with a seed. Its
//     instance line, when there is one, must name the VM's SMBIOS uuid too.
//   - importable: what an import may make a resource's: a finished mark with a uid,
//     bound to the VM (its instance line, when there is one).
//   - marked: what the read-only paths (the data sources, the list resource, the orphan
//     seed report, a create's read-back) report as a proxy VM: our name and the managed
//     mark. They never write, so they need no uid.

// notOurs says why ownedBy refused a VM; notOursNone means it is ours.
type notOurs string

const (
	notOursNone      notOurs = ""
	notOursName      notOurs = "another name"
	notOursUnmarked  notOurs = "no mark"
	notOursNoUID     notOurs = "a mark without a uid"
	notOursOtherUID  notOurs = "another uid"
	notOursNoUIDHere notOurs = "no uid in the state"
	notOursInstance  notOurs = "another VM at this VMID: its SMBIOS uuid is not the one its mark was written for"
	// notOursBound is a VM whose SMBIOS uuid is not the one the state recorded
	// (Owner.Instance), whatever its mark says.
	notOursBound notOurs = "another VM at this VMID: its SMBIOS uuid is not the one the state recorded"
	// notOursUnbound is a mark without an instance line, refused where the caller has no
	// recorded uuid to check the VM by (Owner.Bound: the power action).
	notOursUnbound notOurs = "a mark without an instance line, and no state to check the VM by"
	// notOursUnboundNoSeed is a finished mark without an instance line, met by a state that
	// recorded no SMBIOS uuid (a 0.1.0 state, an import of an unbound mark), on a VM whose
	// drives name no seed ISO of the resource: a Notes-only user can write that mark on any
	// VM, not attach the resource's seed (VM.Config.CDROM), so it shows nothing.
	notOursUnboundNoSeed notOurs = "a mark without an instance line on a VM none of whose drives names the resource's seed ISO"
	// notOursRanUnbound is settle's (it needs the VM's status): a mark written before its
	// create's config step on a VM that has run (unboundButRan).
	notOursRanUnbound notOurs = "a creating mark written before its create's config step, on a VM that has run: copied from another VM"
)

// instanceOf is the VM's SMBIOS uuid, smbios1's uuid= option (qemu-server gives every
// clone a new one, src/PVE/API2/Qemu.pm:4593-4595, and a new VM one unless its maker sets
// smbios1, Qemu.pm:1514-1516); "" when the config has none.
func instanceOf(cfg map[string]string) string {
	return getOption(cfg["smbios1"], "uuid")
}

// instanceMismatch reports a mark bound to another VM (decision: instance-binding): its
// instance line names a uuid that is not cfg's SMBIOS uuid, or cfg has none. A mark without
// the line (written before the create's config step, or by an older version) binds to
// nothing and is not refused by this check.
func instanceMismatch(cfg map[string]string, m Mark) bool {
	return m.Instance != "" && !strings.EqualFold(m.Instance, instanceOf(cfg))
}

// Owner is what a caller knows of the VM it acts on (decision: state-binding): the uid
// its mark must carry and the SMBIOS uuid the state recorded.
type Owner struct {
	UID string
	// Instance is the VM's SMBIOS uuid as the state recorded it (proxy_vm's smbios_uuid):
	// a VM with another one is not the resource's, whatever its mark says. Empty: none
	// recorded (a state made before the uuid was kept, or an import of an unbound mark),
	// and the mark's instance line, when it has one, decides alone.
	Instance string
	// Bound requires, when Instance is empty, a mark whose instance line names the VM's
	// SMBIOS uuid: for a caller that has no state (the power action).
	Bound bool
}

// ownedBy is the ownership predicate: the VM whose config is cfg is the resource's (name,
// o.UID) when cfg's SMBIOS uuid is o.Instance, recorded with o.UID (recordedInstance),
// whatever its name and description say. Otherwise only when no uuid is recorded, cfg
// names it, carries the managed mark, the mark carries o.UID, which must not be empty, and
// the mark's instance line names cfg's SMBIOS uuid when it has one (or must have one,
// o.Bound). It returns the mark read and, when the VM is not the resource's, why.
func ownedBy(cfg map[string]string, name string, o Owner) (Mark, notOurs) {
	m := ParseMark(cfg["description"])
	if recordedInstance(cfg, o) {
		// The state's record decides, whatever the name and the description say: a
		// Notes-only user can wipe or rewrite the mark, never smbios1 or the state.
		return m, notOursNone
	}
	if cfg["name"] != name {
		return Mark{}, notOursName
	}
	switch {
	case !m.Managed:
		return m, notOursUnmarked
	case o.UID == "":
		return m, notOursNoUIDHere
	case m.UID == "":
		return m, notOursNoUID
	case m.UID != o.UID:
		return m, notOursOtherUID
	case o.Instance != "":
		return m, notOursBound // recordedInstance failed: another SMBIOS uuid
	case instanceMismatch(cfg, m):
		return m, notOursInstance
	case o.Bound && m.Instance == "":
		return m, notOursUnbound
	case m.Instance == "" && markState(cfg["description"]) == "" && !seedOnDrive(cfg, name, o.UID):
		return m, notOursUnboundNoSeed
	}
	return m, notOursNone
}

// seedOnDrive reports whether a drive of cfg names a seed ISO of the resource (name, uid):
// one of its generations, or the proxy operator's <name>-seed.iso an imported VM boots
// from (decision: state-binding: the evidence an unbound mark needs).
func seedOnDrive(cfg map[string]string, name, uid string) bool {
	for k, v := range cfg {
		if !isDriveKey(k) {
			continue
		}
		sv, ok := parseISOVol(driveVolume(v))
		if !ok {
			continue
		}
		if sv.file == operatorSeedFile(name) {
			return true
		}
		if n, u, _, ok := parseSeedGen(sv.file); ok && n == name && u == uid {
			return true
		}
	}
	return false
}

// recordedInstance reports a VM that is the resource's by the state's record alone: the
// state holds a uid and an SMBIOS uuid, and cfg's is that uuid (decision: state-binding).
// Its name and description, VM.Config.Options keys (Qemu.pm:823-839), may say anything:
// renamed, its mark wiped, its uid or instance line deleted or rewritten; smbios1 is not
// one of those keys. An update writes the name and the whole finished mark back.
func recordedInstance(cfg map[string]string, o Owner) bool {
	return o.Instance != "" && o.UID != "" && strings.EqualFold(o.Instance, instanceOf(cfg))
}

// boundInstance is the VM's SMBIOS uuid when the mark in its description has an instance
// line naming it (the mark is bound to this VM), else "".
func boundInstance(cfg map[string]string, m Mark) string {
	if m.Instance == "" || instanceMismatch(cfg, m) {
		return ""
	}
	return instanceOf(cfg)
}

// refusedNotOurs is err (a notOursErr) as the refusal of an action: Permanent, and
// errors.Is(err, ErrNotOurs); the message is kept.
func refusedNotOurs(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	return &Error{Class: pveapi.Permanent, Op: e.Op, Name: e.Name, VMID: e.VMID, Err: notOursError{e.Err}}
}

// notOursError marks a refusal's message as ErrNotOurs.
type notOursError struct{ error }

func (notOursError) Is(target error) bool { return target == ErrNotOurs }
func (e notOursError) Unwrap() error      { return e.error }

// marked reports a VM named name that carries the managed mark, whatever its uid: what the
// read-only paths report. Nothing may be written to a VM on its word.
func marked(cfg map[string]string, name string) (Mark, bool) {
	if cfg["name"] != name {
		return Mark{}, false
	}
	return markedAny(cfg)
}

// markedAny is marked for a caller that takes the VM's name from its config: the list of
// marked VMs, the seeds a VM's mark refers to.
func markedAny(cfg map[string]string) (Mark, bool) {
	m := ParseMark(cfg["description"])
	return m, m.Managed
}

// MarkKeyProof is the creating line's proof (decision: creating-proof): written with
// MarkKeyState=creating, removed with it by the create's last step.
const MarkKeyProof = "proxy-operator-proof"

// ProofKeyLabel is the label of the key the proofs are made with, derived from the API
// token's secret (pveapi.DeriveKey): a new token (a rotation) gives another key.
const ProofKeyLabel = "terraform-provider-proxy/creating-proof/v1"

// CreatingProof is the proof a creating mark carries: HMAC-SHA256 under key (derived from
// the token, ProofKeyLabel) over the mark's uid, the VMID the VM was cloned onto, its name,
// the uid_namespace and the mark's created-at (RFC 3339, seconds, as the line holds it),
// base64url without padding. The created-at bounds a copied mark's use (TakeoverWindow).
// With an instance (the VM's SMBIOS uuid, written by the create's config step) the proof is
// version 3 and covers it; without one it is version 2, the form the clone call writes
// and older versions wrote (decision: instance-binding): removing an instance line from a
// mark therefore breaks its proof.
func CreatingProof(key []byte, uid string, vmid int, name, namespace string, createdAt time.Time, instance string) string {
	m := hmac.New(sha256.New, key)
	fields := []string{"creating-proof-v2", uid, strconv.Itoa(vmid), name, namespace, createdAt.UTC().Format(time.RFC3339)}
	if instance != "" {
		fields[0] = "creating-proof-v3"
		fields = append(fields, instance)
	}
	for _, f := range fields {
		m.Write([]byte(strconv.Itoa(len(f)) + ":" + f + ";")) // length-prefixed: no two tuples give one input
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// TakeoverWindow is how long after its created-at a proved creating mark may be taken over
// by a create (decision: creating-proof). The proof is a bearer token: whoever can read the
// description of a half-made VM can copy it, and once that VM is gone, put it on a VM of
// their own at the same VMID. A takeover always destroys the VM and clones afresh (never
// provisions a VM it did not clone itself), so a copied mark can cost its forger their own
// VM, never receive a seed; the window bounds even that to the hour after the original
// create. An older half-made VM is passed by the create, with a warning, and left to the
// proxy_orphan_cleanup action.
const TakeoverWindow = time.Hour

// CreatingMark is the description of a VM a create is working on: the mark lines with the
// namespace, the creating line and its proof for vmid. Tests use it to stand up a genuine
// interrupted create.
func CreatingMark(key []byte, l MarkLines, vmid int, name string) string {
	l.Creating = true
	l.Proof = CreatingProof(key, l.UID, vmid, name, l.Namespace, l.CreatedAt.Truncate(time.Second), l.Instance)
	return l.Format()
}

// provedCreating reports whether the VM whose config is cfg, met at vmid by a create of
// name in namespace, is an interrupted create that a holder of key made there: the mark is
// managed, in namespace, still creating, with a uid, its proof verifies for that uid,
// vmid, name, namespace (and instance line, when there is one), and that instance line
// names cfg's SMBIOS uuid (decision: instance-binding). why says what failed.
func provedCreating(key []byte, cfg map[string]string, vmid int, name, namespace string) (m Mark, ok bool, why string) {
	m, isMarked := marked(cfg, name)
	switch {
	case !isMarked || !m.HasNamespace || m.Namespace != namespace || !m.Creating:
		return m, false, "not a creating mark of this name and namespace"
	case m.UID == "":
		return m, false, "its creating mark carries no uid"
	case m.CreatedAt.IsZero():
		return m, false, "its creating mark carries no " + MarkKeyCreatedAt + " line"
	case m.Proof == "":
		return m, false, "its creating mark carries no " + MarkKeyProof + " line (written by hand)"
	case len(key) == 0:
		return m, false, "no key to check the proof with"
	}
	want := CreatingProof(key, m.UID, vmid, name, namespace, m.CreatedAt, m.Instance)
	if !hmac.Equal([]byte(want), []byte(m.Proof)) {
		return m, false, "its proof does not verify for VMID " + strconv.Itoa(vmid) +
			" under the current API token (copied from another VM, written by hand, or made with another token)"
	}
	if instanceMismatch(cfg, m) {
		return m, false, string(notOursInstance)
	}
	return m, true, ""
}

// importable reports whether an import may make the VM whose config is cfg a resource's:
// the managed mark, with a uid (the state's uid is the mark's: a mark without one could
// never be told from another VM), and finished (a creating mark belongs to the create
// that finishes it).
func importable(cfg map[string]string) (Mark, notOurs) {
	m := ParseMark(cfg["description"])
	switch {
	case !m.Managed:
		return m, notOursUnmarked
	case m.UID == "":
		return m, notOursNoUID
	case instanceMismatch(cfg, m):
		return m, notOursInstance
	case m.Instance == "" && markState(cfg["description"]) == "" && !seedOnDrive(cfg, cfg["name"], m.UID):
		return m, notOursUnboundNoSeed
	}
	return m, notOursNone
}

// withInstanceLine is desc, a description an update rewrites, with an instance line naming
// cfg's SMBIOS uuid after the namespace line (or the operator's lines) when its mark has
// none (a VM made by an older version, decision: instance-binding); desc as it is when it
// has one, carries no mark, or cfg has no uuid.
func withInstanceLine(desc string, cfg map[string]string) string {
	inst := instanceOf(cfg)
	if m := ParseMark(desc); !m.Managed || m.Instance != "" || inst == "" {
		return desc
	}
	lines := strings.Split(desc, "\n")
	at := -1
	for i, line := range lines {
		if k, _, ok := parseMarkLine(line); ok && (k == MarkKeyNamespace || (at < 0 && k == MarkKeyCreatedAt)) {
			at = i
		}
	}
	if at < 0 {
		for i, line := range lines {
			if k, _, ok := parseMarkLine(line); ok && k == MarkKeyUID {
				at = i
			}
		}
	}
	if at < 0 {
		return desc
	}
	return strings.Join(slices.Insert(lines, at+1, MarkKeyInstance+"="+inst), "\n")
}

// finishedMark is desc, a description an update writes on a VM shown to be this
// resource's, as the finished mark bound to it: without the creating state line and its
// proof (a create's last step removes them; a text replayed on the VM brings them back),
// with one instance line, naming cfg's SMBIOS uuid (withInstanceLine; a line naming
// another is dropped: the state's record showed the VM this resource's). Any other state
// line is kept, and desc as it is when it carries no mark or cfg has no uuid.
func finishedMark(desc string, cfg map[string]string) string {
	inst := instanceOf(cfg)
	if m := ParseMark(desc); !m.Managed || inst == "" || (!m.Creating && (m.Instance == "" || strings.EqualFold(m.Instance, inst))) {
		return withInstanceLine(desc, cfg)
	}
	var keep []string
	for _, line := range strings.Split(desc, "\n") {
		k, v, ok := parseMarkLine(line)
		drop := ok && ((k == MarkKeyState && v == MarkStateCreating) || k == MarkKeyProof ||
			(k == MarkKeyInstance && !strings.EqualFold(v, inst)))
		if !drop {
			keep = append(keep, line)
		}
	}
	return withInstanceLine(strings.Join(keep, "\n"), cfg)
}

// renamedTo is the name cfg holds when it is not id's ("" when it is).
func renamedTo(cfg map[string]string, id ID) string {
	if n := cfg["name"]; n != id.Name {
		return n
	}
	return ""
}
