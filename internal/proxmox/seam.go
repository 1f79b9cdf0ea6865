package proxmox

import (
	"errors"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// Thin names over the seam's wording matchers (internal/pveapi owns Proxmox's wording).
var (
	isNotExist          = pveapi.IsNotExist
	isAlreadyExists     = pveapi.IsAlreadyExists
	isAgentNotRunning   = pveapi.IsAgentNotRunning
	isNoAgentConfigured = pveapi.IsNoAgentConfigured
	isVMNotRunning      = pveapi.IsVMNotRunning
	// isRunningDestroyFailed: the listing lagged behind a start (fact: listing-lag).
	isRunningDestroyFailed = pveapi.IsRunningDestroyFailed
	taskSucceeded          = pveapi.TaskSucceeded
)

// classify is the class of a failure (decision: error-classes): an *Error keeps its class, anything else is
// classified by the seam for op.
func classify(op string, err error) pveapi.Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return pveapi.Classify(op, err)
}
