// Command profprov is the provider with a CPU profile, for profiling what a terraform
// command costs the provider (the framework's share of a no-op plan): built in place of
// terraform-provider-proxy, it serves the same provider and, when PROXY_CPUPROFILE names a
// file, writes the process's CPU profile there (one file per process: the name gets
// .<pid>) once terraform shuts it down.
//
//	go build -o <dir>/terraform-provider-proxy ./internal/bench/cmd/profprov
//	PROXY_CPUPROFILE=/tmp/plan.prof terraform plan   # with dev_overrides pointing at <dir>
//	go tool pprof -top /tmp/plan.prof.<pid>
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"runtime/pprof"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/proxy-operator/terraform-provider-proxy/internal/provider"
)

func main() {
	if f := os.Getenv("PROXY_CPUPROFILE"); f != "" {
		out, err := os.Create(fmt.Sprintf("%s.%d", f, os.Getpid()))
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			log.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = out.Close()
		}()
	}
	err := providerserver.Serve(context.Background(), provider.New("profile"), providerserver.ServeOpts{
		Address: "registry.terraform.io/proxy-operator/proxy",
	})
	if err != nil {
		log.Print(err)
	}
}
