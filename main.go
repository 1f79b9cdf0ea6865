// Command terraform-provider-proxy serves the proxy provider over plugin protocol 6.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider"
)

// version is set by the linker: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run with support for debuggers like delve")
	flag.Parse()

	if !debug {
		quietSDKLogs(os.Environ(), os.Setenv)
	}
	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/proxy-operator/proxy",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}

// quietSDKLogs sets the SDK's log levels (TF_LOG_SDK, TF_LOG_SDK_FRAMEWORK,
// TF_LOG_SDK_PROTO: the root, framework and protocol loggers, read by terraform-plugin-go's
// InitContext and ProtoSubsystemContext and terraform-plugin-framework's InitContext) to
// WARN when the environment sets no TF_LOG* variable. Without a level, terraform-plugin-log's
// root SDK logger defaults to TRACE (tfsdklog.NewRootSDKLogger), so the framework formats
// every trace line of every RPC as JSON on stderr, which Terraform, without TF_LOG or
// TF_LOG_PROVIDER, throws away: a third of a no-op plan's provider CPU. Any TF_LOG*
// variable set (TF_LOG=TRACE, TF_LOG_PROVIDER, TF_LOG_SDK*, TF_LOG_PROVIDER_PROXY_*, ...)
// leaves every level as the libraries default it, so the full traces are there for whoever
// asks for them.
func quietSDKLogs(environ []string, set func(string, string) error) {
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "TF_LOG") && value != "" {
			return
		}
	}
	for _, name := range []string{"TF_LOG_SDK", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_SDK_PROTO"} {
		if err := set(name, "WARN"); err != nil {
			log.Printf("[WARN] setting %s: %v", name, err)
		}
	}
}
