// Command pvesim runs the Proxmox VE 9 API simulator standalone, for the demo and for trying
// the provider without a cluster.
//
//	go run ./internal/pvesim/cmd/pvesim -listen 127.0.0.1:8006 -nodes pve1,pve2 -speed 20
//	go run ./internal/pvesim/cmd/pvesim -clone 3m -stale-after-clone   # a big template, the listing lagging
//
// Durations (-clone, -upload, -start, -stop, -destroy, -agent, -agent-boot, -status-interval,
// -ha-round, -ha-fence-delay, -ha-lock-timeout) are simulated, each divided by -speed.
//
// It prints one JSON line to stdout (endpoint, api_token, ca_file, nodes, iso_storage,
// templates) and serves until SIGINT or SIGTERM. Admin functions (faults, stats, state)
// are under https://<listen>/pvesim/, behind the same token.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

func main() {
	os.Exit(mainExit())
}

// mainExit runs the command and returns its exit code, so that deferred clean-up runs
// before os.Exit.
func mainExit() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "pvesim:", err)
		return 2
	}
	return 0
}

// run starts the simulator, prints the start-up line to stdout and serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pvesim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8006", "address to listen on")
	nodes := fs.String("nodes", "pve1", "comma-separated node names")
	speed := fs.Float64("speed", 1, "speed factor: every simulated duration is divided by it (20: 20 times faster than a real host)")
	token := fs.String("token", "", "API token <user>@<realm>!<id>=<secret> (default: root@pam!tf=<random uuid>)")
	templateAgent := fs.Bool("template-agent", false, "template 9001 ships qemu-guest-agent (no seed needed for an address)")
	seed := fs.Uint64("seed", 0, "random seed for MACs, PIDs and fault probabilities (0: random)")
	def := pvesim.DefaultDurations
	clone := fs.Duration("clone", def.Clone, "simulated duration of a full clone (a big template on slow storage: minutes)")
	upload := fs.Duration("upload", def.Upload, "simulated duration of an ISO upload task")
	start := fs.Duration("start", def.Start, "simulated duration of a start task")
	stopD := fs.Duration("stop", def.Stop, "simulated duration of a stop task")
	destroy := fs.Duration("destroy", def.Destroy, "simulated duration of a destroy task")
	agent := fs.Duration("agent", def.AgentInstall, "simulated time from the end of a start to the guest agent "+
		"answering, when cloud-init installs it")
	agentBoot := fs.Duration("agent-boot", def.AgentBoot, "simulated time from the end of a start to the guest agent "+
		"answering, when it is already installed")
	statusInterval := fs.Duration("status-interval", def.StatusInterval, "period of the status snapshot "+
		"/cluster/resources reads names and states from (0: live listing, no lag)")
	haRound := fs.Duration("ha-round", def.HARound, "simulated time the HA managers take to act on a request (one CRM and LRM loop)")
	haFence := fs.Duration("ha-fence-delay", def.HAFenceDelay, "simulated time a node is down before its HA services are put to fence")
	haLock := fs.Duration("ha-lock-timeout", def.HALockTimeout, "simulated time from a node going down to its fencing "+
		"and the recovery of its HA services")
	snapAtClone := fs.Bool("snapshot-at-clone-start", false, "take a status snapshot right after each clone creates "+
		"its config (listed \"VM <vmid>\", stopped)")
	staleAfterClone := fs.Bool("stale-after-clone", false, "take a status snapshot right before each clone ends, the "+
		"next a full interval later")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *speed <= 0 {
		return errors.New("-speed must be positive")
	}
	for name, d := range map[string]time.Duration{"clone": *clone, "upload": *upload, "start": *start, "stop": *stopD,
		"destroy": *destroy, "agent": *agent, "agent-boot": *agentBoot,
		"ha-round": *haRound, "ha-fence-delay": *haFence, "ha-lock-timeout": *haLock} {
		if d <= 0 {
			return fmt.Errorf("-%s must be positive", name)
		}
	}
	if *statusInterval < 0 {
		return errors.New("-status-interval must not be negative")
	}
	var nodeList []string
	for _, n := range strings.Split(*nodes, ",") {
		if n = strings.TrimSpace(n); n != "" {
			nodeList = append(nodeList, n)
		}
	}
	sim, err := pvesim.Start(pvesim.Options{
		Nodes: nodeList, Speed: *speed, Listen: *listen, Token: *token,
		TemplateAgent: *templateAgent, Seed: *seed,
		Durations: pvesim.Durations{
			Clone: *clone, Upload: *upload, Start: *start, Stop: *stopD, Destroy: *destroy,
			AgentInstall: *agent, AgentBoot: *agentBoot, StatusInterval: *statusInterval,
			HARound: *haRound, HAFenceDelay: *haFence, HALockTimeout: *haLock,
		},
		Listing: pvesim.Listing{Live: *statusInterval == 0, SnapshotAtCloneStart: *snapAtClone, StaleAfterClone: *staleAfterClone},
	})
	if err != nil {
		return err
	}
	defer sim.Close()
	line, err := json.Marshal(sim.Info())
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(stdout, string(line)); err != nil {
		return err
	}
	<-ctx.Done()
	fmt.Fprintln(stderr, "pvesim: shutting down")
	return nil
}
