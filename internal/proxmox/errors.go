package proxmox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// ErrNotFound is matched (errors.Is) by every error of class pveapi.NotFound: the VM is
// gone, or its VMID now holds a VM that is not ours.
var ErrNotFound = errors.New("VM not found")

// ErrStillCreating is what the refusal to import a VM whose mark still says creating
// matches (errors.Is): the refusal lasts only until that create finishes or the VM is
// destroyed, so callers word it apart from the other Permanent errors.
var ErrStillCreating = errors.New("the VM is still being created")

// ErrBusy is matched (errors.Is) by a Get that could not read the VM because a task holds
// it (a clone in progress): the caller may report the values it knew.
var ErrBusy = errors.New("the VM is held by a task")

// ErrNotOurs is matched (errors.Is) by the refusal of an action that needs the resource's
// VM (the power action) when its VMID holds a VM the ownership predicate refuses: that VM
// exists, it is not this resource's, and nothing was sent to it. Retrying does not help,
// so the refusal is Permanent, not NotFound (which a refresh's "gone" means).
var ErrNotOurs = errors.New("the VM at this VMID is not this resource's")

// ErrHARuleNotOurs is matched (errors.Is) by a refusal to write a rule, or to map it into a
// state, because its mark is gone or names another uid: nothing was sent to it.
var ErrHARuleNotOurs = errors.New("the HA rule does not carry this resource's mark")

// Class is an error's class (decision: error-classes), and Transient, Permanent and NotFound
// its values: the provider reads them here, with ClassOf, so that it speaks one error
// vocabulary (only its provider.go, which builds the client, imports pveapi).
type Class = pveapi.Class

// The error classes (pveapi.Class).
const (
	Transient = pveapi.Transient
	Permanent = pveapi.Permanent
	NotFound  = pveapi.NotFound
)

// The failures of the connection and of authorization that the provider words for the
// user (pveapi matches Proxmox's texts; these are its answers, re-exported).

// IsEndpointUnreachable reports that the endpoint did not answer at all.
func IsEndpointUnreachable(err error) bool { return pveapi.IsEndpointUnreachable(err) }

// IsTLSVerification reports that the server's certificate did not verify.
func IsTLSVerification(err error) bool { return pveapi.IsTLSVerification(err) }

// IsCAUnavailable reports that the configured CA bundle could not be used.
func IsCAUnavailable(err error) bool { return pveapi.IsCAUnavailable(err) }

// IsCredentials reports that the API token could not be read.
func IsCredentials(err error) bool { return pveapi.IsCredentials(err) }

// IsUnauthorized reports a 401: the token was refused.
func IsUnauthorized(err error) bool { return pveapi.IsUnauthorized(err) }

// IsForbidden reports a 403: the token lacks a privilege.
func IsForbidden(err error) bool { return pveapi.IsForbidden(err) }

// IsProxyFailure reports that the endpoint answered but the node behind it did not
// (595/596).
func IsProxyFailure(err error) bool { return pveapi.IsProxyFailure(err) }

// IsLocked reports that a task holds the VM (500 "VM is locked (<lock>)").
func IsLocked(err error) bool { return pveapi.IsLocked(err) }

// Error is the backend's error: a class (decision: error-classes), the operation, the VM it concerns
// when known, and a message that says what happened and what the admin can do. Its text
// never carries cloud-init content or the API token.
type Error struct {
	Class pveapi.Class
	// Op is the backend operation: create, get, update, delete, import.
	Op string
	// Name and VMID identify the VM; empty and 0 when not known yet.
	Name string
	VMID int
	// Err is the message (built with fmt.Errorf, so it may wrap a cause).
	Err error
	// Done, on a failed create, says what it did to the cluster before it failed, in order
	// ("cloned template 9001 onto VMID 1003", "started the VM"); empty: nothing.
	Done []string
}

// Error renders "<op> VM <name> (VMID <vmid>): <message>".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteByte(' ')
	}
	switch {
	case e.Name != "" && e.VMID != 0:
		b.WriteString("VM " + e.Name + " (VMID " + strconv.Itoa(e.VMID) + ")")
	case e.Name != "":
		b.WriteString("VM " + e.Name)
	case e.VMID != 0:
		b.WriteString("VMID " + strconv.Itoa(e.VMID))
	default:
		b.WriteString("VM")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the message error, which may wrap the cause.
func (e *Error) Unwrap() error { return e.Err }

// DoneBefore returns what a failed create did to the cluster before it failed (Error.Done).
func DoneBefore(err error) []string {
	var e *Error
	if errors.As(err, &e) {
		return e.Done
	}
	return nil
}

// Is makes errors.Is(err, ErrNotFound) true for the NotFound class.
func (e *Error) Is(target error) bool { return target == ErrNotFound && e.Class == pveapi.NotFound }

// Permanentf is a Permanent error: an admin must fix something, retrying will not help.
// The format may use %w.
func Permanentf(format string, args ...any) *Error {
	return &Error{Class: pveapi.Permanent, Err: fmt.Errorf(format, args...)}
}

// Transientf is a Transient error: retrying may succeed.
func Transientf(format string, args ...any) *Error {
	return &Error{Class: pveapi.Transient, Err: fmt.Errorf(format, args...)}
}

// notFoundf is a NotFound error (errors.Is(err, ErrNotFound)).
func notFoundf(format string, args ...any) *Error {
	return &Error{Class: pveapi.NotFound, Err: fmt.Errorf(format, args...)}
}

// ClassOf returns err's class: the class an *Error carries, NotFound for ErrNotFound,
// Transient for an ended context, else pveapi's classification of the raw failure. A nil
// error is Transient (callers should not ask).
func ClassOf(err error) pveapi.Class {
	var e *Error
	switch {
	case err == nil:
		return pveapi.Transient
	case errors.As(err, &e):
		return e.Class
	case errors.Is(err, ErrNotFound):
		return pveapi.NotFound
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return pveapi.Transient
	}
	return classify("", err)
}

// wrap gives err the operation and VM: an *Error at the top gets its empty fields filled,
// anything else becomes an *Error classified for op. A does-not-exist inside Create is
// Transient, which classify("create", ...) already says.
func wrap(op string, name string, vmid int, err error) error {
	if err == nil {
		return nil
	}
	class := classify(op, err)
	if op == "create" && class == pveapi.NotFound {
		class = pveapi.Transient
	}
	// Only an *Error at the top is filled in: errors.As would also find one wrapped deeper
	// and return a copy of it without its wrapper's text; such an error is wrapped again
	// below instead (its class still found by classify).
	if e, ok := err.(*Error); ok { //nolint:errorlint // deliberately the top of the chain only, see above

		c := *e
		c.Class = class
		if c.Op == "" {
			c.Op = op
		}
		if c.Name == "" {
			c.Name = name
		}
		if c.VMID == 0 {
			c.VMID = vmid
		}
		return &c
	}
	return &Error{Class: class, Op: op, Name: name, VMID: vmid, Err: err}
}

// apiErrorf wraps a seam failure with what we were doing, keeping the failure's class for
// op (decision: error-classes). The caller's message says what was attempted.
func apiErrorf(op string, err error, format string, args ...any) *Error {
	return &Error{Class: classify(op, err), Err: fmt.Errorf(format+": %w", append(args, err)...)}
}

// wrapMsg prefixes err with what was being done.
func wrapMsg(msg string, err error) error { return fmt.Errorf("%s: %w", msg, err) }

// busyf is a Transient error matching ErrBusy.
func busyf(format string, args ...any) *Error {
	return &Error{Class: pveapi.Transient, Err: busyError{fmt.Errorf(format, args...)}}
}

type busyError struct{ err error }

func (e busyError) Error() string        { return e.err.Error() }
func (e busyError) Unwrap() error        { return e.err }
func (e busyError) Is(target error) bool { return target == ErrBusy }
