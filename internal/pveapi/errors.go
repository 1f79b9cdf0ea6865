package pveapi

import (
	"errors"
	"fmt"
)

// APIError is a non-2xx answer (F1). Message is the body's message with the trailing
// newline trimmed, or the reason phrase when the body has none (a 401). Its Error() never
// carries headers, URLs or the token.
type APIError struct {
	Status  int
	Message string
	Errors  map[string]string
}

func (e *APIError) Error() string {
	// NOTE(skeleton): the client issue completes this (field errors, redaction).
	return fmt.Sprintf("proxmox API %d: %s", e.Status, e.Message)
}

// Class is the error class of seed entry 13.
type Class int

const (
	// Transient: retry may succeed (5xx, network, task failures, locks, cancellation).
	Transient Class = iota
	// Permanent: an admin must fix something (401, 403, 4xx, TLS verification, bad token file).
	Permanent
	// NotFound: the VM is gone.
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

// ErrCredentials marks token-file failures (missing, unreadable, malformed).
var ErrCredentials = errors.New("proxmox API token unavailable")
