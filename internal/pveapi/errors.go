package pveapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"
)

// APIError is a non-2xx answer (fact: error-envelope). Message is the body's message with the trailing
// newline trimmed, or the reason phrase when the body has none (a 401, 595, 596). Errors is
// the 400 body's per-parameter map. Its Error() never carries headers, URLs or the token:
// the client redacts the token and its secret from Message and Errors when it builds the
// error, in case a server echoes them.
type APIError struct {
	Status  int
	Message string
	Errors  map[string]string
}

// Error renders "proxmox API <status>: <message>", with the field errors of a 400 appended
// in key order: "proxmox API 400: Parameter verification failed: storage: No such storage.".
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if len(e.Errors) == 0 {
		return fmt.Sprintf("proxmox API %d: %s", e.Status, msg)
	}
	keys := make([]string, 0, len(e.Errors))
	for k := range e.Errors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Errors[k]
	}
	return fmt.Sprintf("proxmox API %d: %s: %s", e.Status, strings.TrimSuffix(msg, "."), strings.Join(parts, "; "))
}

// Class is an error's class (decision: error-classes).
type Class int

const (
	// Transient means a retry may succeed (5xx, network, task failures, locks, cancellation).
	Transient Class = iota
	// Permanent means an admin must fix something (401, 403, 4xx, TLS verification, bad token file).
	Permanent
	// NotFound means the VM is gone.
	NotFound
)

func (c Class) String() string {
	switch c {
	case Permanent:
		return "permanent"
	case NotFound:
		return "not found"
	default:
		return "transient"
	}
}

// ErrCredentials marks token failures (the file missing or unreadable, or its content not
// <user>@<realm>!<tokenid>=<secret>), all Permanent: Terraform runs once, so a file that
// is not there now is a configuration mistake. Test with errors.Is or IsCredentials.
var ErrCredentials = errors.New("proxmox API token unavailable")

// ErrCA marks CA bundle failures (the CA file missing or unreadable, or no certificate in
// it), all Permanent. Test with errors.Is or IsCAUnavailable.
var ErrCA = errors.New("proxmox CA bundle unavailable")

// classError attaches a class to an error at its source.
type classError struct {
	class Class
	err   error
}

func (e *classError) Error() string { return e.err.Error() }
func (e *classError) Unwrap() error { return e.err }

// WithClass attaches class to err, so that Classify returns it whatever err wraps. A nil err
// stays nil.
func WithClass(class Class, err error) error {
	if err == nil {
		return nil
	}
	return &classError{class: class, err: err}
}

// ClassOf returns the class attached by the outermost WithClass in err's chain.
func ClassOf(err error) (Class, bool) {
	var ce *classError
	if errors.As(err, &ce) {
		return ce.class, true
	}
	return Transient, false
}

// Classify maps an error of op ("create", "get", "update", "delete", "list", "check") to its
// class (decision: error-classes):
//   - a class attached with WithClass wins;
//   - 401, 403, 400 and any other 4xx: Permanent;
//   - 500 "Configuration file '...' does not exist": NotFound, but Transient when op is
//     "create" (a missing VM inside Create is never "not found");
//   - 500 "storage '...' does not exist", "no such cluster node '...'", "hostname lookup
//     '...' failed", "does not support vm images", "does not support '...' content",
//     "update pools failed: pool '...' does not exist": Permanent (a configuration mistake);
//   - the HA answers no retry heals (ha.go: a missing or duplicate HA resource or rule,
//     a rule naming unmanaged resources, groups refused): Permanent; test them with their
//     predicates (IsHAResourceMissing...), never as NotFound, which means the VM is gone;
//   - every other 5xx (locks, agent answers, config file already exists, 595, 596): Transient;
//   - a failed task (*TaskError): Transient;
//   - TLS verification failure: Permanent;
//   - an endpoint that did not answer after the client's own retries (ErrUnreachable):
//     Permanent, attached by the client;
//   - context errors, other network errors, io.EOF, and anything else: Transient.
func Classify(op string, err error) Class {
	if err == nil {
		return Transient
	}
	if c, ok := ClassOf(err); ok {
		return c
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Transient
	}
	var ae *APIError
	if errors.As(err, &ae) {
		switch {
		case ae.Status >= 400 && ae.Status < 500:
			return Permanent
		case IsMissingStorage(err), IsUnknownNode(err), IsContentUnsupported(err), IsPoolMissing(err), isHAPermanent(err):
			// A storage or node the cluster lacks, or a storage without the content it
			// must hold: a configuration mistake that no retry heals.
			return Permanent
		case IsNotExist(err):
			if op == "create" {
				return Transient
			}
			return NotFound
		default:
			return Transient
		}
	}
	if IsTLSVerification(err) {
		return Permanent
	}
	return Transient
}

func apiError(err error) (*APIError, bool) {
	var ae *APIError
	ok := errors.As(err, &ae)
	return ae, ok
}

var (
	reNotExist       = regexp.MustCompile(`^Configuration file '[^']+' does not exist$`)
	reAlreadyExists  = regexp.MustCompile(`^unable to create VM [0-9]+: config file already exists$`)
	reVMNotRunning   = regexp.MustCompile(`^VM [0-9]+ is not running$`)
	reLocked         = regexp.MustCompile(`^VM is locked \(([a-z-]+)\)$`)
	reRunningDestroy = regexp.MustCompile(`^VM [0-9]+ is running - destroy failed$`)
)

const (
	msgAgentNotRunning   = "QEMU guest agent is not running"
	msgNoAgentConfigured = "No QEMU guest agent configured"
	msgNoSuchStorage     = "No such storage."
)

func is500(err error, match func(string) bool) bool {
	ae, ok := apiError(err)
	return ok && ae.Status == http.StatusInternalServerError && match(ae.Message)
}

// IsNotExist reports whether err says the VM is gone (fact: missing-config-500): 500
// "Configuration file 'nodes/<node>/qemu-server/<vmid>.conf' does not exist", answered by
// config, status/current and destroy alike.
func IsNotExist(err error) bool { return is500(err, reNotExist.MatchString) }

// IsAlreadyExists reports whether err refuses a clone onto a taken VMID (fact: clone-vmid-taken): 500 "unable to create VM <vmid>: config
// file already exists".
func IsAlreadyExists(err error) bool { return is500(err, reAlreadyExists.MatchString) }

// IsAgentNotRunning reports whether err says the agent is enabled but not answering yet (fact: agent-answers),
// matching the whole message.
func IsAgentNotRunning(err error) bool {
	return is500(err, func(m string) bool { return m == msgAgentNotRunning })
}

// IsNoAgentConfigured reports whether err says agent=1 is not in the VM's config (fact: agent-answers),
// matching the whole message.
func IsNoAgentConfigured(err error) bool {
	return is500(err, func(m string) bool { return m == msgNoAgentConfigured })
}

// IsVMNotRunning reports whether err says the VM is stopped (fact: agent-answers), the whole message "VM <vmid> is not running" (its
// tail is a suffix of the agent answer, so it is matched whole).
func IsVMNotRunning(err error) bool { return is500(err, reVMNotRunning.MatchString) }

// IsLocked reports whether err says a task holds the VM (fact: clone-lock): 500 "VM is locked (<lock>)".
func IsLocked(err error) bool { return is500(err, reLocked.MatchString) }

// IsRunningDestroyFailed reports whether err refuses a destroy because the VM runs: 500 "VM <vmid> is running -
// destroy failed" (err_destroy_running; the listing lagged behind a start, fact: listing-lag), the whole message.
func IsRunningDestroyFailed(err error) bool { return is500(err, reRunningDestroy.MatchString) }

// LockOf returns the lock named by an IsLocked error ("clone", "backup", ...).
func LockOf(err error) (string, bool) {
	ae, ok := apiError(err)
	if !ok || ae.Status != http.StatusInternalServerError {
		return "", false
	}
	m := reLocked.FindStringSubmatch(ae.Message)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// IsNoSuchStorage reports whether err says the storage does not exist in the cluster: a 400 whose field error for
// "storage" is exactly "No such storage." (fact: missing-storage-400). A clone onto a storage without
// image support has another storage field error and does not match.
func IsNoSuchStorage(err error) bool {
	ae, ok := apiError(err)
	return ok && ae.Status == http.StatusBadRequest && ae.Errors["storage"] == msgNoSuchStorage
}

// IsUnauthorized reports whether err is a 401 (fact: auth-401-texts: wrong secret, unknown token, or no credentials).
func IsUnauthorized(err error) bool {
	ae, ok := apiError(err)
	return ok && ae.Status == http.StatusUnauthorized
}

// IsForbidden reports whether err is a 403; the message names the path and the missing privilege (fact: permission-403).
func IsForbidden(err error) bool {
	ae, ok := apiError(err)
	return ok && ae.Status == http.StatusForbidden
}

// IsProxyFailure reports whether pveproxy could not reach the node it forwards to (595 connect, 596 TLS,
// send or header read), reason phrase only.
func IsProxyFailure(err error) bool {
	ae, ok := apiError(err)
	return ok && (ae.Status == 595 || ae.Status == 596)
}

// IsTLSVerification reports whether the server's certificate did not verify (unknown authority, hostname
// mismatch, invalid or expired certificate). The admin must fix the URL or the CA.
func IsTLSVerification(err error) bool {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) || errors.As(err, &cv)
}

// IsCAUnavailable reports whether the configured CA file is missing or holds no certificate (ErrCA).
func IsCAUnavailable(err error) bool { return errors.Is(err, ErrCA) }

// IsCredentials reports whether the token is missing or malformed (ErrCredentials); no request was sent.
func IsCredentials(err error) bool { return errors.Is(err, ErrCredentials) }

// IsDialFailure reports whether the node did not answer at all: the TCP connect failed (net.OpError with Op
// "dial", including its 10 s timeout) or the TLS handshake failed for a network reason (its
// 10 s timeout, or the connection closed or reset during it). A TLS verification failure is
// not a dial failure.
func IsDialFailure(err error) bool {
	if err == nil || IsTLSVerification(err) {
		return false
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	var he *handshakeError
	return errors.As(err, &he)
}

// IsConnectionLost reports whether the connection was cut after it was made, before a complete response
// arrived (EOF, reset, broken pipe).
func IsConnectionLost(err error) bool {
	if err == nil || IsDialFailure(err) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed)
}

// IsUnreachable reports whether the node could not be talked to: IsDialFailure (IsEndpointUnreachable
// included), IsConnectionLost, or a 595 or 596 from pveproxy. The Checker's Unreachable reason.
func IsUnreachable(err error) bool {
	return IsDialFailure(err) || IsConnectionLost(err) || IsProxyFailure(err)
}

// handshakeError marks a TLS handshake that failed for a network reason.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return "TLS handshake: " + e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

var (
	reStorageMissing     = regexp.MustCompile(`^storage '[^']+' does not exist$`)
	reUnknownNode        = regexp.MustCompile(`^(no such cluster node '[^']+'|hostname lookup '[^']+' failed - .*)$`)
	reImagesUnsupported  = regexp.MustCompile(`^storage '[^']+' does not support vm images$`)
	reContentUnsupported = regexp.MustCompile(`^storage '[^']+' does not support '[a-z]+' content$`)
)

// messages returns an APIError's message and its field errors, for matchers that look at
// both (a refusal arrives as a 500 message or as a 400 field error, depending on where
// Proxmox checks it).
func messages(err error) []string {
	ae, ok := apiError(err)
	if !ok {
		return nil
	}
	out := []string{ae.Message}
	for _, v := range ae.Errors {
		out = append(out, v)
	}
	return out
}

func anyMessage(err error, re *regexp.Regexp) bool {
	for _, m := range messages(err) {
		if re.MatchString(strings.TrimRight(m, "\r\n")) {
			return true
		}
	}
	return false
}

// IsMissingStorage reports whether err says a storage does not exist: the 500 "storage
// '<id>' does not exist" (an upload, a volume delete or a clone onto an unknown storage id;
// pve-storage PVE/Storage.pm storage_config) or the 400 "No such storage." of a storage
// status read (IsNoSuchStorage).
func IsMissingStorage(err error) bool {
	return IsNoSuchStorage(err) || anyMessage(err, reStorageMissing)
}

// IsUnknownNode reports whether err says the node is not part of the cluster: "no such
// cluster node '<node>'" (a clone's target; PVE/Cluster.pm check_node_exists) or the
// "hostname lookup '<node>' failed" of a request addressed to such a node (pveproxy cannot
// resolve where to forward it).
func IsUnknownNode(err error) bool { return anyMessage(err, reUnknownNode) }

// IsContentUnsupported reports whether err says a storage does not hold the content a
// request needs: "storage '<id>' does not support vm images" (a clone, fact: clone-storage-no-images) or "storage
// '<id>' does not support '<content>' content" (an upload).
func IsContentUnsupported(err error) bool {
	return anyMessage(err, reImagesUnsupported) || anyMessage(err, reContentUnsupported)
}

// ErrUnreachable marks a request whose connection to the endpoint could not be made (the
// connection refused, the name not resolved, the TCP connect or the TLS handshake timed out)
// even after the client's own short retries. The error names the address. It is Permanent:
// a backend wait must not keep retrying it until its budget ends. Test with errors.Is or
// IsEndpointUnreachable.
var ErrUnreachable = errors.New("the Proxmox VE endpoint does not answer")

// UnreachableError is the error of a request that could not reach the endpoint; it wraps
// ErrUnreachable and the last transport failure.
type UnreachableError struct {
	// Address is the endpoint's scheme, host and port ("https://pve.example.com:8006").
	Address  string
	Attempts int
	Elapsed  time.Duration
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("%s: no connection to %s after %d attempts in %s: %v", ErrUnreachable, e.Address, e.Attempts,
		e.Elapsed.Round(10*time.Millisecond), e.Err)
}

// Unwrap returns ErrUnreachable and the transport failure, so that errors.Is and the
// IsDialFailure family see both.
func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

// IsEndpointUnreachable reports whether err is a request that never reached the endpoint,
// after the client's retries (ErrUnreachable). Unlike IsUnreachable it does not include a
// 595/596 (the endpoint answered; a node behind it did not) or a connection lost mid-answer.
// A caller that waits must stop on it: the client has already retried.
func IsEndpointUnreachable(err error) bool { return errors.Is(err, ErrUnreachable) }

// IsHotplugProblem reports a config write to a running VM that Proxmox stored as pending
// but could not hotplug for key: a 400 whose errors name key with "hotplug problem - "
// (qemu-server vmconfig_hotplug_pending add_error, raised by update_vm_api after the
// write). The value stays pending until the VM restarts.
func IsHotplugProblem(err error, key string) bool {
	var e *APIError
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		return false
	}
	return strings.HasPrefix(e.Errors[key], "hotplug problem - ")
}
