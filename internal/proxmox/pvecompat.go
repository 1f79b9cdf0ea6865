package proxmox

// TODO(pveapi): the seam's wording matchers and Classify are being written in
// internal/pveapi in parallel. Until they land, these unexported stand-ins implement
// entry 13 for this package; each is a one-line switch to the pveapi name once it exists.

import (
	"context"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

func asAPIError(err error) (*pveapi.APIError, bool) {
	var e *pveapi.APIError
	ok := errors.As(err, &e)
	return e, ok
}

// isNotExist: 500 Configuration file '...' does not exist (F2).
func isNotExist(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.Status == 500 && strings.HasPrefix(e.Message, "Configuration file '") &&
		strings.HasSuffix(e.Message, "' does not exist")
}

// isAlreadyExists: 500 unable to create VM <vmid>: config file already exists (F4).
func isAlreadyExists(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.Status == 500 && strings.HasSuffix(e.Message, ": config file already exists")
}

// isAgentNotRunning: 500 QEMU guest agent is not running (F5).
func isAgentNotRunning(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.Status == 500 && e.Message == "QEMU guest agent is not running"
}

// isNoAgentConfigured: 500 No QEMU guest agent configured (F5).
func isNoAgentConfigured(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.Status == 500 && e.Message == "No QEMU guest agent configured"
}

var vmNotRunningRE = regexp.MustCompile(`^VM [0-9]+ is not running$`)

// isVMNotRunning: 500 VM <vmid> is not running (F5).
func isVMNotRunning(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.Status == 500 && vmNotRunningRE.MatchString(e.Message)
}

var vmRunningDestroyRE = regexp.MustCompile(`^VM [0-9]+ is running - destroy failed$`)

// isRunningDestroyFailed: 500 VM <vmid> is running - destroy failed.
func isRunningDestroyFailed(err error) bool {
	e, ok := asAPIError(err)
	return ok && e.Status == 500 && vmRunningDestroyRE.MatchString(e.Message)
}

// upidNode returns the node field of a UPID (UPID:<node>:...).
func upidNode(upid string) (string, bool) {
	parts := strings.Split(upid, ":")
	if len(parts) < 9 || parts[0] != "UPID" || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// taskSucceeded: OK, or WARNINGS: <n> (a finished task).
func taskSucceeded(exit string) bool {
	return exit == "OK" || strings.HasPrefix(exit, "WARNINGS: ")
}

// classify is entry 13's table for failures that did not come from this package.
func classify(op string, err error) pveapi.Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return pveapi.Transient
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return pveapi.Transient
	}
	if ae, ok := asAPIError(err); ok {
		switch {
		case isNotExist(err):
			if op == "create" {
				return pveapi.Transient
			}
			return pveapi.NotFound
		case ae.Status >= 400 && ae.Status < 500:
			return pveapi.Permanent
		default:
			return pveapi.Transient
		}
	}
	if errors.Is(err, pveapi.ErrCredentials) {
		return pveapi.Permanent
	}
	return pveapi.Transient
}
