package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
	"github.com/proxy-operator/terraform-provider-proxy/internal/tfrun"
)

// The listing scenarios: a cluster of N marked VMs made beforehand (not by terraform),
// listed by the proxy_vms data source (terraform apply of a configuration holding only it)
// and, with a Terraform 1.14+ binary, by the proxy_vm list resource (terraform query). They
// measure what a listing of a large fleet costs: wall time, the provider's peak RSS, the
// requests and how many ran at once (decision: list-marked).

// ListResult is one listing scenario.
type ListResult struct {
	N     int
	Speed float64
	Ops   []ListOp
	// Problems lists what went wrong (a failed command, a count that is not N).
	Problems []string
}

// ListOp is one measured listing command.
type ListOp struct {
	// Name is "proxy_vms" or "terraform query".
	Name string
	Wall time.Duration
	// Listed is how many VMs the command reported.
	Listed      int
	Requests    map[string]int
	MaxInFlight int
	PeakRSS     int64
	ProviderCPU time.Duration
	ExitCode    int
}

// listPrefix names the listing scenarios' VMs.
const listPrefix = "bench-list-"

// runListing lays out n marked, running VMs with a guest agent and lists them.
func runListing(ctx context.Context, cfg *Config, prov *tfrun.Provider, n int, dir string) (ListResult, error) {
	res := ListResult{N: n, Speed: cfg.ListSpeed}
	sim, err := pvesim.Start(pvesim.Options{Speed: cfg.ListSpeed, Seed: cfg.Seed})
	if err != nil {
		return res, err
	}
	defer sim.Close()
	created := time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339)
	for i := range n {
		vmid := 100000 + i
		// The mark this provider writes (decision: mark-format), finished.
		desc := fmt.Sprintf("proxy-operator-managed=true\nproxy-operator-uid=%08x-0000-4000-8000-%012x\nproxy-operator-created-at=%s\n"+
			"proxy-operator-namespace=\nproxy-operator-created-by=terraform-provider-proxy", vmid, vmid, created)
		if err := sim.AddVM(pvesim.VMSpec{VMID: vmid, Name: fmt.Sprintf("%s%05d", listPrefix, i), Power: "running", ShipsAgent: true,
			Config: map[string]string{"description": desc, "tags": "proxy_operator", "agent": "1"}}); err != nil {
			return res, err
		}
	}
	// Every guest agent answers (with its address) before the listing starts.
	d := sim.Durations()
	time.Sleep(sim.WallTime(d.AgentBoot+d.DHCP) + 100*time.Millisecond)
	if cfg.Latency > 0 {
		sim.InjectFault(pvesim.Fault{Latency: sim.WallTime(cfg.Latency)})
	}
	pc := tfrun.SimConfig(sim)
	pc.MaxRequestsInFlight = cfg.MaxInFlight

	w, err := prov.WorkspaceAt(filepath.Join(dir, "proxy_vms"))
	if err != nil {
		return res, err
	}
	w.Timeout = cfg.CommandTimeout
	ds := "\ndata \"proxy_vms\" \"fleet\" {\n  name_prefix = \"" + listPrefix + "\"\n  timeouts {\n    read = \"30m\"\n  }\n}\n\n" +
		"output \"listed\" {\n  value = length(data.proxy_vms.fleet.vms)\n}\n\n" +
		"output \"with_address\" {\n  value = length([for v in data.proxy_vms.fleet.vms : v if v.ip_address != null])\n}\n"
	if err := w.WriteConfig(tfrun.RequiredProviders + "\n" + pc.HCL() + ds); err != nil {
		return res, err
	}
	cfg.logf("  proxy_vms over %d VMs", n)
	o, r := measureList(ctx, sim, w, "proxy_vms", "apply", "-auto-approve", "-input=false", "-no-color")
	if o.ExitCode != 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("proxy_vms: terraform exited %d: %s", o.ExitCode, lastLines(r.Stdout+r.Stderr, 5)))
	} else {
		outs := outputInts(w.Run(ctx, "output", "-no-color", "-json").Stdout)
		o.Listed = outs["listed"]
		addressed := outs["with_address"]
		if o.Listed != n || addressed != n {
			res.Problems = append(res.Problems, fmt.Sprintf("proxy_vms listed %d VMs (%d with an address), want %d", o.Listed, addressed, n))
		}
	}
	cfg.logf("  proxy_vms: exit %d in %s, %d requests, %d in flight at most, peak RSS %.1f MiB",
		o.ExitCode, o.Wall.Round(time.Millisecond), tfrun.TotalRequests(o.Requests), o.MaxInFlight, float64(o.PeakRSS)/(1<<20))
	res.Ops = append(res.Ops, o)

	if cfg.QueryTerraform != "" {
		qp := *prov
		qp.Terraform = cfg.QueryTerraform
		qw, err := qp.WorkspaceAt(filepath.Join(dir, "query"))
		if err != nil {
			return res, err
		}
		qw.Timeout = cfg.CommandTimeout
		if err := qw.WriteConfig(tfrun.RequiredProviders + "\n" + pc.HCL()); err != nil {
			return res, err
		}
		q := "list \"proxy_vm\" \"fleet\" {\n  provider = proxy\n  limit    = " + fmt.Sprint(n+1) + "\n  config {\n   " +
			" name_prefix = \"" + listPrefix + "\"\n  }\n}\n"
		if err := qw.WriteFile("fleet.tfquery.hcl", q); err != nil {
			return res, err
		}
		cfg.logf("  terraform query over %d VMs", n)
		o, r := measureList(ctx, sim, qw, "terraform query", "query", "-no-color")
		o.Listed = strings.Count(r.Stdout, "list.proxy_vm.fleet")
		if o.ExitCode != 0 || o.Listed != n {
			res.Problems = append(res.Problems, fmt.Sprintf("terraform query: exit %d, listed %d VMs, want %d: %s",
				o.ExitCode, o.Listed, n, lastLines(r.Stdout+r.Stderr, 3)))
		}
		cfg.logf("  terraform query: exit %d in %s, %d requests, %d in flight at most, peak RSS %.1f MiB",
			o.ExitCode, o.Wall.Round(time.Millisecond), tfrun.TotalRequests(o.Requests), o.MaxInFlight, float64(o.PeakRSS)/(1<<20))
		res.Ops = append(res.Ops, o)
	}
	return res, nil
}

// measureList runs one listing command and samples the provider's RSS while it runs.
func measureList(ctx context.Context, sim *pvesim.Sim, w *tfrun.Workspace, name string, args ...string) (ListOp, *tfrun.Result) {
	o := ListOp{Name: name, ExitCode: -1}
	sim.ResetStats()
	sim.ResetConcurrency()
	p, err := w.Start(ctx, args...)
	if err != nil {
		return o, &tfrun.Result{Stderr: err.Error()}
	}
	wctx, stop := context.WithCancel(ctx)
	prov := watchProcs(wctx, 20*time.Millisecond, p.ProviderPIDs)
	r := p.Wait()
	stop()
	o.Wall, o.ExitCode = r.Duration, r.ExitCode
	o.Requests = sim.Stats()
	o.MaxInFlight = sim.Concurrency().Max
	o.PeakRSS, o.ProviderCPU, _ = prov.result()
	return o, r
}

// outputInts decodes the number outputs of `terraform output -json`.
func outputInts(out string) map[string]int {
	var raw map[string]struct {
		Value json.Number `json:"value"`
	}
	got := map[string]int{}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return got
	}
	for k, v := range raw {
		if n, err := v.Value.Int64(); err == nil {
			got[k] = int(n)
		}
	}
	return got
}

// queryTerraform is the Terraform 1.14+ binary for the list resource: PROXY_TEST_TERRAFORM_LATEST,
// which the Makefile sets from TF_MATRIX's newest tool; "" without one.
func queryTerraform() string {
	tf := os.Getenv("PROXY_TEST_TERRAFORM_LATEST")
	if tf == "" {
		return ""
	}
	if _, err := os.Stat(tf); err != nil {
		return ""
	}
	return tf
}
