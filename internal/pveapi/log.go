package pveapi

import (
	"context"
	"sort"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// LogSubsystem is the tflog subsystem of the client. Its level follows TF_LOG_PROVIDER, or
// TF_LOG_PROVIDER_PROXY_PVEAPI when set.
const LogSubsystem = "pveapi"

type subsystemKey struct{}

// Field keys whose values are always masked, whatever logs them.
var maskedKeys = []string{"token", "api_token", "authorization", "secret", "description", "user_data", "cloud_init"}

// logContext makes sure ctx carries the pveapi subsystem with its masks.
func logContext(ctx context.Context) context.Context {
	if ctx.Value(subsystemKey{}) != nil {
		return ctx
	}
	if !tflog.SubsystemIsError(ctx, LogSubsystem) {
		ctx = tflog.NewSubsystem(ctx, LogSubsystem, tflog.WithLevelFromEnv("TF_LOG_PROVIDER_PROXY", "PVEAPI"))
	}
	ctx = tflog.SubsystemMaskFieldValuesWithFieldKeys(ctx, LogSubsystem, maskedKeys...)
	return context.WithValue(ctx, subsystemKey{}, true)
}

// maskToken masks the token and its secret wherever they would appear in a field value.
func maskToken(ctx context.Context, tok apiToken) context.Context {
	var s []string
	for _, v := range []string{tok.full, tok.secret} {
		if len(v) >= 4 {
			s = append(s, v)
		}
	}
	if len(s) == 0 {
		return ctx
	}
	return tflog.SubsystemMaskAllFieldValuesStrings(ctx, LogSubsystem, s...)
}

// logCall is the one debug line per call: call, method, path (no query), the identifiers,
// status and duration; on failure http_status and the (redacted) error.
func logCall(ctx context.Context, r request, status int, d time.Duration, err error) {
	f := map[string]any{
		"call":        r.call,
		"method":      r.method,
		"path":        r.path,
		"status":      "ok",
		"duration_ms": d.Milliseconds(),
	}
	for k, v := range r.fields {
		f[k] = v
	}
	if err != nil {
		f["status"] = "error"
		f["error"] = err.Error()
		f["error_class"] = Classify("", err).String()
		if status != 0 {
			f["http_status"] = status
		}
		tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox api call failed", f)
		return
	}
	f["http_status"] = status
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox api call", f)
}

// logParams logs the request's query and form at trace level, never the description's text
// (only its byte count) and never an upload body.
func logParams(ctx context.Context, r request) {
	if !tflog.SubsystemIsTrace(ctx, LogSubsystem) {
		return
	}
	params := map[string]any{}
	for _, vals := range []map[string][]string{r.query, r.form} {
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := vals[k]
			if len(v) == 0 {
				continue
			}
			switch k {
			case "description", "cicustom", "cipassword", "sshkeys":
				params[k+"_bytes"] = len(v[0])
			default:
				params[k] = v[0]
			}
		}
	}
	if r.body != nil {
		params["body_bytes"] = r.length
	}
	tflog.SubsystemTrace(ctx, LogSubsystem, "proxmox api request", map[string]any{
		"call": r.call, "method": r.method, "path": r.path, "params": params,
	})
}

// logRetry logs a request sent again because its connection could not be made.
func logRetry(ctx context.Context, r request, attempt int, err error) {
	tflog.SubsystemDebug(ctx, LogSubsystem, "proxmox api connection failed, retrying", map[string]any{
		"call": r.call, "method": r.method, "path": r.path, "attempt": attempt, "error": err.Error(),
	})
}
