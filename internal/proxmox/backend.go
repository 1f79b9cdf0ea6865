// Package proxmox is the backend: create, get, update, delete, list, orphan seeds and the
// health check (docs/design/operations.md) over the pveapi seam. It knows nothing of Terraform.
//
// NOTE(skeleton): the types and method signatures in this file are the contract the
// Terraform glue in internal/provider codes against. Implementations may add fields and
// methods; they must not remove or rename these.
package proxmox

import (
	"sync"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Config is everything the backend needs from the provider configuration.
type Config struct {
	Endpoint   string // for health details only
	Nodes      []string
	ISOStorage string
	Storage    string // clone target storage; empty: the template's own
	// Pool and Bridge (with VLANTag) are the provider's defaults, for the health check's
	// privilege round (the resources pass their own in Spec).
	Pool              string
	Bridge            string
	VLANTag           int
	Templates         map[string]int // catalogue key -> template VMID (health check)
	VMIDMin, VMIDMax  int
	VendorData        string
	InstallGuestAgent bool
	// TokenID returns the token id (the part before '='), or an error wrapping
	// pveapi.ErrCredentials when the token is missing or malformed. Used by Check.
	TokenID func() (string, error)
	// ProofKey returns the key a create's creating mark is proved with (ownership.go,
	// decision: creating-proof): derived from the API token's secret for ProofKeyLabel
	// (pveapi.Client.DerivedKey), so only holders of the token can make or check a proof.
	// Nil: no proof can be made or checked, so no interrupted create is ever taken over.
	// The key is never logged nor put in an error.
	ProofKey func() ([]byte, error)
	Budgets  Budgets
	// ListConcurrency is how many config reads a listing (List, the orphan listings) runs
	// at once: the provider's max_requests_in_flight. Zero: 4.
	ListConcurrency int
}

// Budgets bound every wait (decision: poll-schedule). Tests shrink them.
type Budgets struct {
	Clone, Upload, Resize, Start, Stop, Destroy, SeedDelete, Running time.Duration
	// PollMin is the first poll interval; it grows by half (x1.5) up to PollMax, so a
	// task of 1 to 2 s is seen within about 0.3 s of its end.
	PollMin, PollMax time.Duration
	// NodeGrace is how long a wait goes on while the node it polls does not answer (no
	// connection, pveproxy's 595/596, its VMs listed status "unknown") before it fails.
	NodeGrace time.Duration
	// AgentStart is how long, after a start that is not a first boot the seed installs the
	// agent in, the address wait lets the guest agent answer "not running" before it
	// fails: a guest that has the agent answers within seconds of booting.
	AgentStart time.Duration
	// ListingTTL is how long one /cluster/resources listing serves reads.
	ListingTTL time.Duration
	// ListingWalk is how long the first listing of a provider instance (its walk's) serves
	// Get's reads while no write of ours invalidated it (readListing): a plan's reads share
	// one listing even when they outlast ListingTTL. At most listing-lag's 10 s.
	ListingWalk time.Duration
	// StaticAddress is how long an address wait with a static address goes on once the
	// agent reports other IPv4 addresses only; 0: defaultStaticAddress (network.go).
	StaticAddress time.Duration
}

// DefaultBudgets are the budgets the provider runs with (decision: poll-schedule), polls
// backing off from 50 ms to 1 s.
func DefaultBudgets() Budgets {
	return Budgets{
		Clone: 10 * time.Minute, Upload: 2 * time.Minute, Resize: 2 * time.Minute,
		Start: 2 * time.Minute, Stop: 2 * time.Minute, Destroy: 5 * time.Minute,
		SeedDelete: time.Minute, Running: 60 * time.Second,
		PollMin: 50 * time.Millisecond, PollMax: time.Second,
		NodeGrace: 30 * time.Second, AgentStart: 3 * time.Minute,
		ListingTTL: 2 * time.Second, ListingWalk: 10 * time.Second,
	}
}

// ID is vms/<vmid>/<name> (decision: id-format).
type ID struct {
	VMID int
	Name string
}

// State is the mapped VM state (decision: state-mapping).
type State string

// The states Get maps a VM to.
const (
	StateRunning      State = "running"
	StateProvisioning State = "provisioning"
	StateStopped      State = "stopped"
)

// Spec is a fully resolved Create request: catalogue keys and provider defaults already
// applied by the caller.
type Spec struct {
	Name string
	// UID is this Create's own uid (random per VM), written in the mark and kept in the
	// state: Get, Update and Delete compare it with the mark's.
	UID string
	// AllocKey picks the VMID probe sequence (vmidFor(AllocKey, attempt)): the same for
	// every Create of this name in this Namespace, so that an interrupted create is found
	// again. Empty: UID.
	AllocKey string
	// Namespace is the provider's uid_namespace, written in the mark: an interrupted create
	// is resumed only by a Create of the same name in the same namespace.
	Namespace string
	// Abandoned, when set, reports that nobody waits for this Create's answer any more
	// (the process that asked for it is gone). It is asked right before the last step: an
	// abandoned Create leaves the mark "creating", for the next Create of its name to take
	// over, instead of finishing a VM that no state would track.
	Abandoned func() bool
	// Report, when set, is filled with what Create decided about other VMs that the user
	// must hear of, even when Create fails: a takeover, a claim it refused (CreateReport).
	Report       *CreateReport
	Node         string
	TemplateVMID int
	Cores        int
	MemoryMiB    int
	DiskGiB      int // 0: keep the template's size
	UserData     []byte
	Bridge       string // empty: as cloned (unless VLANTag is set)
	VLANTag      int    // 0: as cloned
	// Pool, when set, is the Proxmox pool the clone joins (the clone's pool parameter), so
	// a token granted on /pool/<pool> may make it (fact: pool-privileges).
	Pool      string
	OnBoot    bool
	WaitForIP bool
	CreatedAt time.Time
	// UserDataDigest, when set, is written into the mark (MarkKeyUserDataDigest).
	UserDataDigest string
	// Tags, when set, are the VM's tags besides ManagedTag (nil: the template's are kept);
	// Note, when set, the human text after the mark in the description; Protection sets
	// Proxmox's protection flag when the create finishes (note_tags.go).
	Tags       *[]string
	Note       *string
	Protection bool
	// Stopped leaves the new VM stopped: no start, no address wait (started = false).
	Stopped bool
	// Network, when set, is the seed's network-config (network.go); with a static address
	// the address wait waits for that address. NetworkDigest, when set, is written into
	// the mark (MarkKeyNetworkDigest).
	Network       *NetworkConfig
	NetworkDigest string
	// Options are the values of the RestartOptions beyond cores and memory and of the
	// InPlaceOptions, by config key (the attribute's value, as RestartOption.Value takes
	// it; absent: as cloned).
	Options map[string]string
	// HA, when set, is the HA resource the VM gets once it is finished (ha.go).
	HA *HA
}

// VM is what Get reads back.
type VM struct {
	ID           ID
	Node         string
	UID          string
	CreatedAt    time.Time
	State        State
	QMPStatus    string
	Hibernated   bool
	IP           string
	MAC          string
	Cores        int
	MemoryMiB    int
	DiskGiB      int
	Bridge       string
	VLANTag      int
	OnBoot       bool
	AgentEnabled bool
	Tags         []string
	// Pool is the pool the listing reports the VM in ("" for none). PoolUnverified is set
	// when the listing shows none but the token lacks Pool.Audit on the pool the caller
	// expected (GetOptions.Pool): Proxmox then hides the field, so Pool keeps that pool.
	Pool           string
	PoolUnverified bool
	// Lock is the lock the listing, config or status reports ("backup", "clone",
	// "suspended", ...); empty when none. Get reports a locked VM instead of failing.
	Lock string
	// Meta is the config's meta value, copied from the template by the clone (fact: meta-copied); its
	// ctime identifies the template (TemplateOf).
	Meta string
	// Creating is set while the mark still says "creating" (a Create has not finished).
	Creating bool
	// BoundInstance is the VM's SMBIOS uuid when its mark's instance line names it (the
	// mark is bound to this VM, decision: instance-binding), else "".
	BoundInstance string
	// MarkEdited is set when the VM has an SMBIOS uuid but its mark's instance line is
	// missing or names another uuid, or when the state's recorded uuid alone shows the VM
	// the resource's (its mark wiped, its uid line deleted or rewritten; UID is then the
	// state's): an edit outside Terraform that an update writes back (finishedMark,
	// restoredMark).
	MarkEdited bool
	// Renamed is the name the VM's config holds when it is not the ID's: a VM renamed
	// outside Terraform, still the resource's by its recorded SMBIOS uuid (recordedInstance).
	Renamed string
	// Seed is the seed ISO file the VM's ide2 names, when it is a seed of this VM
	// (<name>-<uid>-seed.iso, or the proxy operator's <name>-seed.iso).
	Seed string
	// Passed lists the finished VMs of this name and namespace that Create met on the
	// name's probe sequence and left alone (another resource's, or one a crash left
	// untracked: the two cannot be told apart), except those this backend's own Creates
	// finished. Only Create fills it.
	Passed []PassedVM
	// StatusUnknown is set when the listing said "unknown" and status/current could not
	// be read either (a node not answering): State is then StateProvisioning as a
	// placeholder and the caller should keep the state it knew.
	StatusUnknown bool
	// MarkExtra is what the mark says beyond Mark (mark_provider_lines.go).
	MarkExtra MarkExtra
	// Addresses are the agent's addresses (addresses.go), set when the agent was asked.
	Addresses Addresses
	// Note is the description without the mark lines; Protected is the protection flag.
	Note      string
	Protected bool
	// For a running VM, Cores and MemoryMiB are what it runs with; PendingCores and
	// PendingMemoryMiB (0: none) are the values its config holds that wait for a restart.
	PendingCores     int
	PendingMemoryMiB int
	// MemoryHotplug: memory changes apply to the running VM (hotplug names memory, numa on).
	MemoryHotplug bool
	// HotplugHugepages1G and HotplugSockets, set with MemoryHotplug, are what the DIMM
	// steps depend on (MemoryHotplugStep): 1 GiB hugepages, and the sockets then.
	HotplugHugepages1G bool
	HotplugSockets     int
	// Options are the values of the RestartOptions beyond cores and memory and of the
	// InPlaceOptions, by config key, as their attributes show them (absent: the config does
	// not set the option).
	Options map[string]string
	// HA is the VM's HA resource (ha.go), read when GetOptions.HA asks (HARead set): nil
	// when it has none. HAUnread says it was asked for but could not be read (HAUnreadWhy
	// says why).
	HA          *HA
	HARead      bool
	HAUnread    bool
	HAUnreadWhy string
}

// PassedVM is a finished VM of the created VM's name and namespace that Create skipped.
type PassedVM struct {
	VMID      int
	Node      string
	CreatedAt time.Time // the mark's created-at (the zero time when missing)
}

// CreateReport is what a Create tells its caller besides its answer (Spec.Report).
type CreateReport struct {
	// TakenOver are the interrupted creates this Create took over (decision:
	// creating-proof): at most one per VMID, normally none.
	TakenOver []TakenOverVM
	// Unproved are VMs whose mark claims an interrupted create of this name in this
	// namespace but whose proof does not verify: left alone.
	Unproved []UnprovedVM
}

// TakenOverVM is an interrupted create a Create took over.
type TakenOverVM struct {
	VMID        int
	Node        string
	PreviousUID string    // the interrupted create's uid
	CreatedAt   time.Time // its mark's created-at
	// Rebuilt: it may have reached its config step and booted, so it was destroyed and
	// cloned afresh onto the same VMID.
	Rebuilt bool
}

// UnprovedVM is a VM a Create left alone although its mark says it is an interrupted
// create of the same name and namespace: its proof does not verify (Why).
type UnprovedVM struct {
	VMID      int
	Node      string
	UID       string
	CreatedAt time.Time
	Why       string
}

// GetOptions tune Get.
type GetOptions struct {
	// Agent asks the guest agent for the address when the VM runs (Create's IP wait).
	// Read in a plan leaves it false: it never waits for, nor fails on, the agent.
	Agent bool
	// FreshListing bypasses the shared listing cache.
	FreshListing bool
	// UID is the uid the VM's mark must carry (the one the caller's state holds;
	// ownedBy): a VM with our name and mark but another uid, or none, is not this
	// resource's (another workspace's VM, a VMID reused) and Get answers ErrNotFound for
	// it. An empty UID owns nothing: Get answers ErrNotFound, unless AnyOwner.
	UID string
	// Instance is the SMBIOS uuid the caller's state recorded (Owner.Instance): a VM with
	// another one is not the resource's, whatever its mark says. Empty: none recorded.
	Instance string
	// AnyOwner reads a VM that carries our name and the mark whatever its uid (marked):
	// for callers that never write on what they read (the data sources, an import's
	// read-back after its own check, a create's read-back before its last step checks
	// the uid).
	AnyOwner bool
	// Pool is the pool the caller's state holds, for VM.PoolUnverified.
	Pool string
	// HA reads the VM's HA resource into VM.HA (one request more; needs Sys.Audit on /).
	HA bool
}

// Changes is an in-place update; nil fields are left alone.
type Changes struct {
	Cores     *int
	MemoryMiB *int
	DiskGiB   *int
	Bridge    *string
	VLANTag   *int // 0 removes the tag
	OnBoot    *bool
	// Start brings a stopped, paused or hibernated VM back to running.
	Start bool
	// Node, when set to another node than the VM's, migrates the VM there first (online
	// when it runs), its seed ISO following (migrate.go).
	Node *string
	// UserData is the cloud-init user-data the VM was made with (the resource's cloud_init;
	// empty when none was set), and UserDataKnown says it is known (false for an imported
	// VM whose cloud_init was never set). Before any start (Start, or the restart a core or
	// memory change makes), Update checks that the seed ISO the VM's ide2 names is on the
	// ISO storage: a destroy that failed after deleting it (the seed goes first,
	// decision: seed-before-destroy) leaves a VM Proxmox cannot start. A missing seed is rebuilt from
	// UserData (with the provider's vendor-data) when it is known; otherwise ide2 is
	// removed, since cloud-init reads the seed at first boot only. Neither field is a change
	// by itself.
	UserData      []byte
	UserDataKnown bool
	// Network is the network-config the VM was made with, for the same rebuilds as
	// UserData (nil: none). Not a change by itself.
	Network *NetworkConfig
	// WaitForIP says the caller waits for the agent's address after a start or restart
	// (WaitReady): a restart of a running VM whose agent cannot answer after it is then
	// refused before anything is changed (see Update).
	WaitForIP bool
	// UID, when set, is the uid the VM's mark must carry, as in GetOptions.UID: a VM of
	// another uid is not ours and Update answers ErrNotFound without touching it.
	UID string
	// Instance is the SMBIOS uuid the caller's state recorded, as in GetOptions.Instance.
	Instance string
	// Bind writes the finished mark bound to the VM (finishedMark) even when nothing else
	// is written: the apply that binds a state that recorded no SMBIOS uuid. Any config
	// write of an update writes it anyway. Not a change by itself.
	Bind bool
	// Mark is what the state holds of the VM's mark, for the config write of an update on
	// a VM whose mark was wiped or lost the state's uid outside Terraform (restoredMark).
	// Not a change by itself.
	Mark MarkRecord
	// Tags, Note and Protection, when set, replace the user tags, the note and the
	// protection flag (note_tags.go); none of them restarts the VM.
	Tags       *[]string
	Note       *string
	Protection *bool
	// Stop stops a running VM after the config write (started = false), instead of any
	// start or restart.
	Stop bool
	// Pool, when set, moves the VM into that pool ("" takes it out of PriorPool, the pool
	// the caller's state holds), before any other change (pool.go).
	Pool      *string
	PriorPool string
	// ShutdownTimeout is how long the restart a RestartOptions change needs lets the
	// guest shut down before Proxmox stops it (zero: DefaultShutdownTimeout).
	ShutdownTimeout time.Duration
	// DeferRestart writes a RestartOptions change that a running VM cannot take without
	// a restart and leaves it pending (Proxmox applies it at the VM's next stop or start)
	// instead of restarting the VM. A hotplugged memory change applies either way.
	DeferRestart bool
	// Reseed, when set, replaces the VM's seed ISO in place (cloud_init_change = "restart";
	// decision: seed-swap): the next generation of its seed, built from UserData and Network
	// with a new instance-id, is uploaded and named on ide2, the old one deleted (swapSeed),
	// then a running VM is restarted as for cores, so that cloud-init runs its per-instance
	// modules again; with DeferRestart the new seed waits for the VM's next start.
	Reseed *Reseed
	// Notify, when set, is told what the update did that its plan did not say: a memory
	// hotplug that Proxmox refused (or plugged short of the size), so the VM was restarted
	// to apply the memory (or, with DeferRestart, the memory was left pending).
	Notify func(msg string)
	// Options are the new values of the RestartOptions beyond cores and memory and of the
	// InPlaceOptions, by config key (absent: left alone).
	Options map[string]string
	// HA, when set, writes or removes the VM's HA resource, after every other change
	// (ha.go).
	HA *HAChange
}

// MarkRecord is what a state holds of its VM's mark beside the uid: what an update needs to
// write the whole finished mark back on a VM whose mark was wiped (restoredMark).
type MarkRecord struct {
	// CreatedAt is the state's created_at (zero: none; the update's clock then).
	CreatedAt time.Time
	// Namespace is the provider's uid_namespace.
	Namespace string
	// UserDataDigest is the cloud-init digest the VM's seed was built with
	// (MarkKeyUserDataDigest; empty: no line).
	UserDataDigest string
}

// Instance is one marked VM listed by List (decision: list-marked).
type Instance struct {
	ID        ID
	Node      string
	UID       string
	CreatedAt time.Time
	Status    string
	// CreatedBy is the mark's MarkKeyCreatedBy value, empty when it has none.
	CreatedBy string
	// Config is what the VM's config says (sizes, network, tags), as Get reads it; no
	// status or addresses.
	Config VM
}

// Seed is a seed ISO on the ISO storage of a node.
type Seed struct {
	Node  string
	VolID string
	Name  string // the VM name it belongs to
	UID   string // the uid of a <name>-<uid>-seed.iso; empty for a <name>-seed.iso
	Size  int64
	// CreatedAt is when the volume was written (its ctime); the zero time when the storage
	// does not say.
	CreatedAt time.Time
	// Unproved, when set, says why the seed may still be used by a VM the API token cannot
	// see (the listing is not known to be complete, decision: orphan-visibility): it names
	// the missing privilege and what to do. Such a seed is never deleted.
	Unproved string
}

// Reason is a health verdict's reason (decision: health-check).
type Reason string

// The reasons of a node's verdict; ReasonReachable is the only one of a ready node.
const (
	ReasonReachable              Reason = "Reachable"
	ReasonTimeout                Reason = "Timeout"
	ReasonUnreachable            Reason = "Unreachable"
	ReasonUnauthorized           Reason = "Unauthorized"
	ReasonForbidden              Reason = "Forbidden"
	ReasonAPIError               Reason = "APIError"
	ReasonCertificateInvalid     Reason = "CertificateInvalid"
	ReasonCredentialsUnavailable Reason = "CredentialsUnavailable"
	ReasonStorageNotFound        Reason = "StorageNotFound"
	ReasonTemplateNotFound       Reason = "TemplateNotFound"
)

// NodeHealth is one node's verdict.
type NodeHealth struct {
	Name               string
	Address            string
	Ready              bool
	Reason             Reason
	Message            string
	PVEVersion         string
	Kernel             string
	TokenID            string
	ISOStorage         string
	ISOStorageAvailGiB float64
	Templates          string // "found/configured"
	// MissingPrivileges are the privileges the provider needs that the token lacks, each
	// "<privilege> on <path>" (check_privileges.go); set with ReasonForbidden.
	MissingPrivileges []string
}

// LogSubsystem is the tflog subsystem the backend logs to. The caller creates it
// (tflog.NewSubsystem) on the ctx it passes in, with its masking options.
const LogSubsystem = "proxmox"

// Backend runs the seed's operations over the seam. It is safe for concurrent use.
type Backend struct {
	api pveapi.API
	cfg Config

	clock    clock
	listings *listingCache
	locks    *keyedLock
	// holders are the configs the destroys' seed sweeps read (seedholders.go).
	holders *holderCache
	// placements are the nodes automatic placement gave (placement.go).
	placements placementBook
	pre        *preflightCache // Preflight's verdicts, per provider instance
	cpus       *cpuModelCache  // each node's CPU models (CheckCPUType), per provider instance
	// buildSeed builds the seed ISO; tests replace it.
	buildSeed func(nocloud.Seed) ([]byte, error)
	// finished are the uids of the VMs this backend's Creates finished (their answers went
	// back to Terraform): a later Create passing one of them does not report it.
	finished sync.Map
	// started is, per VMID, the clock time a start task of ours was seen ended
	// (startAndWait): the address wait after it counts the boot from there (bootStart).
	started sync.Map
	// agentSeen is the agent delay the address waits have seen (pollschedule.go), and the
	// power-off time of clean shutdowns (power.go).
	agentSeen agentDelays
	// taskSeen is the task durations the task waits have seen, per type (pollschedule.go).
	taskSeen taskDurations
}

// Default VMID range (decision: vmid-function).
const (
	DefaultVMIDMin = 100000
	DefaultVMIDMax = 199999
)

// New returns a backend. It makes no request. Zero budgets take DefaultBudgets' values,
// and a zero VMID range the default 100000 to 199999.
func New(api pveapi.API, cfg Config) *Backend {
	d := DefaultBudgets()
	bd := &cfg.Budgets
	for _, p := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&bd.Clone, d.Clone}, {&bd.Upload, d.Upload}, {&bd.Resize, d.Resize}, {&bd.Start, d.Start},
		{&bd.Stop, d.Stop}, {&bd.Destroy, d.Destroy}, {&bd.SeedDelete, d.SeedDelete},
		{&bd.Running, d.Running}, {&bd.PollMin, d.PollMin}, {&bd.PollMax, d.PollMax},
		{&bd.ListingTTL, d.ListingTTL}, {&bd.ListingWalk, d.ListingWalk}, {&bd.NodeGrace, d.NodeGrace}, {&bd.AgentStart, d.AgentStart},
	} {
		if *p.v <= 0 {
			*p.v = p.def
		}
	}
	if bd.PollMax < bd.PollMin {
		bd.PollMax = bd.PollMin
	}
	if cfg.VMIDMin == 0 && cfg.VMIDMax == 0 {
		cfg.VMIDMin, cfg.VMIDMax = DefaultVMIDMin, DefaultVMIDMax
	}
	return &Backend{
		api: api, cfg: cfg,
		clock:     realClock{},
		listings:  &listingCache{},
		locks:     &keyedLock{},
		holders:   &holderCache{},
		pre:       &preflightCache{},
		cpus:      &cpuModelCache{},
		buildSeed: nocloud.Build,
	}
}

// Create, Get, Update, Delete, FindByName and FindByVMID live in create.go, get.go,
// update.go, delete.go and find.go.

// List, OrphanSeeds and Check live in list.go, orphans.go and check.go.
