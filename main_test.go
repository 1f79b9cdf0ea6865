package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-log/tfsdklog"
)

// sdkLoggers builds the SDK loggers as the plugin libraries do when they serve an RPC
// (terraform-plugin-go's InitContext and ProtoSubsystemContext, the framework's
// InitContext: the root from TF_LOG_SDK, the "proto" and "framework" subsystems from
// TF_LOG_SDK_PROTO and TF_LOG_SDK_FRAMEWORK) and reports which would emit trace and debug
// lines.
func sdkLoggers(t *testing.T) (rootTrace, protoTrace, frameworkTrace, frameworkDebug bool) {
	t.Helper()
	ctx := tfsdklog.NewRootSDKLogger(context.Background(), tfsdklog.WithLevelFromEnv("TF_LOG_SDK"))
	ctx = tfsdklog.NewSubsystem(ctx, "proto", tfsdklog.WithLevelFromEnv("TF_LOG_SDK_PROTO"))
	ctx = tfsdklog.NewSubsystem(ctx, "framework", tfsdklog.WithLevelFromEnv("TF_LOG_SDK_FRAMEWORK"))
	return tfsdklog.IsTrace(ctx), tfsdklog.SubsystemIsTrace(ctx, "proto"),
		tfsdklog.SubsystemIsTrace(ctx, "framework"), tfsdklog.SubsystemIsDebug(ctx, "framework")
}

// clearLogEnv unsets every logging variable for the test (restored after it).
func clearLogEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "TF_LOG") {
			continue
		}
		t.Setenv(name, "")
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}

func TestQuietSDKLogsWithoutTFLog(t *testing.T) {
	clearLogEnv(t)
	quietSDKLogs(os.Environ(), os.Setenv)
	rootTrace, protoTrace, fwTrace, fwDebug := sdkLoggers(t)
	if rootTrace || protoTrace || fwTrace || fwDebug {
		t.Fatalf("without TF_LOG the SDK still logs: root trace %v, proto trace %v, framework trace %v, framework debug %v",
			rootTrace, protoTrace, fwTrace, fwDebug)
	}
	for _, name := range []string{"TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_SDK_PROTO"} {
		if got := os.Getenv(name); got != "WARN" {
			t.Errorf("%s = %q, want WARN", name, got)
		}
	}
}

func TestQuietSDKLogsKeepsAskedLevels(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"TF_LOG", "TRACE"},
		{"TF_LOG", "json"},
		{"TF_LOG_PROVIDER", "TRACE"},
		{"TF_LOG_PROVIDER_PROXY", "DEBUG"},
		{"TF_LOG_PROVIDER_PROXY_PROXMOX", "DEBUG"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			clearLogEnv(t)
			t.Setenv(tc.name, tc.value)
			quietSDKLogs(os.Environ(), os.Setenv)
			rootTrace, protoTrace, fwTrace, _ := sdkLoggers(t)
			if !rootTrace || !protoTrace || !fwTrace {
				t.Fatalf("with %s=%s the SDK must keep its full traces: root %v, proto %v, framework %v", tc.name, tc.value, rootTrace, protoTrace, fwTrace)
			}
			for _, name := range []string{"TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_SDK_PROTO"} {
				if got, ok := os.LookupEnv(name); ok {
					t.Errorf("%s set to %q although %s asked for logs", name, got, tc.name)
				}
			}
		})
	}
	t.Run("TF_LOG_SDK_FRAMEWORK=DEBUG", func(t *testing.T) {
		clearLogEnv(t)
		t.Setenv("TF_LOG_SDK_FRAMEWORK", "DEBUG")
		quietSDKLogs(os.Environ(), os.Setenv)
		_, _, fwTrace, fwDebug := sdkLoggers(t)
		if fwTrace || !fwDebug {
			t.Fatalf("TF_LOG_SDK_FRAMEWORK=DEBUG: framework trace %v (want false), debug %v (want true)", fwTrace, fwDebug)
		}
	})
}
