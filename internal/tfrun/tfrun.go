// Package tfrun drives the real terraform CLI against the real provider binary, for the
// end-to-end suites (reliability, benchmarks).
//
// Build compiles the provider once into a directory and writes a CLI configuration with
// dev_overrides for registry.terraform.io/proxy-operator/proxy, so no `terraform init` and
// no registry are needed. A Workspace is one working directory; Run executes a terraform
// command in it and Start runs one in the background, so a test can interrupt it (SIGINT),
// kill it (SIGKILL) or kill the provider process it spawned, at a moment of its choosing.
//
// Typical use, in TestMain:
//
//	p, err := tfrun.Build(ctx, tfrun.BuildOptions{})
//	...
//	w := p.NewWorkspace(t)            // per scenario
//	w.WriteConfig(hcl)
//	r := w.Apply(ctx)                 // r.ExitCode, r.Stdout, r.Stderr
//	st, err := w.Show(ctx)            // terraform show -json, decoded
package tfrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ProviderSource is the provider address main.go serves.
const ProviderSource = "registry.terraform.io/proxy-operator/proxy"

// OpenTofuSource is the address "proxy-operator/proxy" means under OpenTofu, whose default
// registry host is registry.opentofu.org.
const OpenTofuSource = "registry.opentofu.org/proxy-operator/proxy"

// BinaryName is the provider's executable name, also how its process is recognised.
const BinaryName = "terraform-provider-proxy"

// Provider is a built provider binary and the CLI configuration that makes terraform use it.
type Provider struct {
	Dir       string // directory holding the binary
	Binary    string // full path of the binary
	CLIConfig string // full path of the CLI configuration file (dev_overrides)
	// Terraform is the CLI executable: TF_ACC_TERRAFORM_PATH when set (as plugin-testing
	// reads it, so that one variable points every suite at another Terraform or at
	// OpenTofu), else terraform from PATH.
	Terraform string
	// OpenTofu is true when Terraform is an OpenTofu CLI (IsOpenTofu).
	OpenTofu bool
}

// BuildOptions tune Build.
type BuildOptions struct {
	// Dir receives the binary and the CLI configuration; empty: a new temporary directory
	// (the caller removes it with Provider.Remove).
	Dir string
	// Race builds the provider with the race detector (slower; for soaks).
	Race bool
	// RepoRoot is the module root; empty: found from the working directory upwards.
	RepoRoot string
}

// Build compiles the provider and writes the CLI configuration.
func Build(ctx context.Context, o BuildOptions) (*Provider, error) {
	tf, err := CLI()
	if err != nil {
		return nil, err
	}
	root := o.RepoRoot
	if root == "" {
		if root, err = RepoRoot(); err != nil {
			return nil, err
		}
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "tfrun-provider-"); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				_ = os.RemoveAll(dir)
			}
		}()
	}
	bin := filepath.Join(dir, BinaryName)
	args := []string{"build", "-trimpath", "-o", bin}
	if o.Race {
		args = append(args, "-race")
	}
	args = append(args, ".")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	var out []byte
	if out, err = cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tfrun: go build of the provider failed: %w\n%s", err, out)
	}
	cfg := filepath.Join(dir, "cli.tfrc")
	// Under OpenTofu, "proxy-operator/proxy" means OpenTofuSource: that one too.
	overrides := fmt.Sprintf("    %q = %q\n", ProviderSource, dir)
	tofu := IsOpenTofu(tf)
	if tofu {
		overrides += fmt.Sprintf("    %q = %q\n", OpenTofuSource, dir)
	}
	text := "provider_installation {\n  dev_overrides {\n" + overrides + "  }\n  direct {}\n}\n"
	if err = os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return nil, err
	}
	return &Provider{Dir: dir, Binary: bin, CLIConfig: cfg, Terraform: tf, OpenTofu: tofu}, nil
}

// CLI is the terraform (or tofu) executable the suites run: TF_ACC_TERRAFORM_PATH, else
// terraform from PATH.
func CLI() (string, error) {
	if tf := os.Getenv("TF_ACC_TERRAFORM_PATH"); tf != "" {
		if _, err := os.Stat(tf); err != nil {
			return "", fmt.Errorf("tfrun: TF_ACC_TERRAFORM_PATH: %w", err)
		}
		return tf, nil
	}
	tf, err := exec.LookPath("terraform")
	if err != nil {
		return "", fmt.Errorf("tfrun: terraform is not on PATH: %w", err)
	}
	return tf, nil
}

// IsOpenTofu reports whether cli is OpenTofu: its `version` says "OpenTofu v<version>" where
// Terraform's says "Terraform v<version>" (OpenTofu reports its own version numbers, so the
// number alone does not tell them apart, nor does the executable's name). OpenTofu prints a
// warning about a missing CLI configuration on standard output first; it is skipped.
func IsOpenTofu(cli string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "version")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	out, err := cmd.Output()
	if err != nil {
		return strings.HasPrefix(filepath.Base(cli), "tofu")
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "OpenTofu v"):
			return true
		case strings.HasPrefix(line, "Terraform v"):
			return false
		}
	}
	return false
}

// RegistryHost is the CLI's default registry host, the one a source address without a host
// ("proxy-operator/proxy") means: registry.opentofu.org under OpenTofu.
func (p *Provider) RegistryHost() string {
	if p.OpenTofu {
		return "registry.opentofu.org"
	}
	return "registry.terraform.io"
}

// Remove deletes the build directory.
func (p *Provider) Remove() error { return os.RemoveAll(p.Dir) }

// RepoRoot finds the directory holding go.mod, from the working directory upwards.
func RepoRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("tfrun: no go.mod above the working directory")
		}
		d = parent
	}
}

// Workspace is one terraform working directory.
type Workspace struct {
	Provider *Provider
	Dir      string
	// Env is added to every command's environment (after the defaults, so it can override
	// them), as KEY=VALUE.
	Env []string
	// Trace sets TF_LOG=TRACE and writes one log file per command under Dir/logs.
	Trace bool
	// Timeout bounds each command (default 5 minutes); the command is killed after it.
	Timeout time.Duration

	mu   sync.Mutex
	seq  int
	logs []string
	// leftovers counts the commands whose process group still had members once the
	// command had ended and its providers were reaped (Leftovers).
	leftovers atomic.Int32
}

// Leftovers is how many commands of w left processes behind in their group after they
// ended, which Wait killed.
func (w *Workspace) Leftovers() int { return int(w.leftovers.Load()) }

// NewWorkspace makes a workspace in a fresh t.TempDir.
func (p *Provider) NewWorkspace(t testing.TB) *Workspace {
	t.Helper()
	return &Workspace{Provider: p, Dir: t.TempDir()}
}

// WorkspaceAt makes a workspace in dir (created when missing).
func (p *Provider) WorkspaceAt(dir string) (*Workspace, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Workspace{Provider: p, Dir: dir}, nil
}

// WriteConfig replaces main.tf.
func (w *Workspace) WriteConfig(hcl string) error { return w.WriteFile("main.tf", hcl) }

// WriteFile writes a file relative to the workspace.
func (w *Workspace) WriteFile(name, content string) error {
	p := filepath.Join(w.Dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(content), 0o600)
}

// LogFiles are the TF_LOG files written so far (Trace only), oldest first.
func (w *Workspace) LogFiles() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.logs...)
}

// Logs returns the concatenated content of every log file.
func (w *Workspace) Logs() string {
	var b strings.Builder
	for _, f := range w.LogFiles() {
		data, _ := os.ReadFile(f)
		b.Write(data)
	}
	return b.String()
}

// StateFile is the local state's path.
func (w *Workspace) StateFile() string { return filepath.Join(w.Dir, "terraform.tfstate") }

// Result is a finished command.
type Result struct {
	Args     []string
	ExitCode int // -1 when killed by a signal or not started
	Signaled bool
	Stdout   string
	Stderr   string
	Err      error // start or wait error other than a non-zero exit
	Duration time.Duration
	LogFile  string // TF_LOG file (Trace only)
}

// OK reports a zero exit.
func (r *Result) OK() bool { return r.Err == nil && r.ExitCode == 0 }

// Output is stdout and stderr together.
func (r *Result) Output() string { return r.Stdout + r.Stderr }

// String summarises the command for test failures (without the dev_overrides warning).
func (r *Result) String() string {
	return fmt.Sprintf("terraform %s: exit %d (%v) in %s\n--- stdout\n%s\n--- stderr\n%s",
		strings.Join(r.Args, " "), r.ExitCode, r.Err, r.Duration.Round(time.Millisecond),
		strings.TrimSpace(TrimOverridesWarning(r.Stdout)), strings.TrimSpace(TrimOverridesWarning(r.Stderr)))
}

// TrimOverridesWarning removes the "Provider development overrides are in effect"
// warning terraform prints on every command run with dev_overrides.
func TrimOverridesWarning(out string) string {
	const head = "Warning: Provider development overrides are in effect"
	const tail = "with published\nreleases.\n"
	i := strings.Index(out, head)
	if i < 0 {
		return out
	}
	j := strings.Index(out[i:], tail)
	if j < 0 {
		return out
	}
	return out[:i] + out[i+j+len(tail):]
}

// Environment returns the environment of a command: the process environment without TF_*
// variables (the caller's own terraform settings must not leak in), plus the CLI config,
// CHECKPOINT_DISABLE, TF_IN_AUTOMATION and the workspace's Env.
func (w *Workspace) environment(logFile string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TF_") || strings.HasPrefix(kv, "PROXMOX_VE_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"TF_CLI_CONFIG_FILE="+w.Provider.CLIConfig,
		"CHECKPOINT_DISABLE=1",
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
	)
	if logFile != "" {
		env = append(env, "TF_LOG=TRACE", "TF_LOG_PATH="+logFile)
	}
	return append(env, w.Env...)
}

// Process is a terraform command running in the background.
type Process struct {
	w     *Workspace
	args  []string
	cmd   *exec.Cmd
	out   *syncBuffer
	errb  *syncBuffer
	start time.Time
	log   string
	done  chan struct{}
	res   *Result

	mu        sync.Mutex
	providers map[int]bool // provider PIDs seen
}

// Start runs terraform with args in the background, in its own process group (so a
// group signal reaches terraform and its providers, and never the test).
func (w *Workspace) Start(ctx context.Context, args ...string) (*Process, error) {
	w.mu.Lock()
	w.seq++
	seq := w.seq
	var logFile string
	if w.Trace {
		name := "cmd"
		if len(args) > 0 {
			name = args[0]
		}
		logFile = filepath.Join(w.Dir, "logs", fmt.Sprintf("%03d-%s.log", seq, name))
		w.logs = append(w.logs, logFile)
	}
	w.mu.Unlock()
	if logFile != "" {
		if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
			return nil, err
		}
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	cmd := exec.CommandContext(cctx, w.Provider.Terraform, args...)
	cmd.Dir = w.Dir
	cmd.Env = w.environment(logFile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On the deadline, kill the whole group: terraform and its providers.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	p := &Process{w: w, args: args, cmd: cmd, out: &syncBuffer{}, errb: &syncBuffer{}, log: logFile,
		done: make(chan struct{}), providers: map[int]bool{}}
	cmd.Stdout, cmd.Stderr = p.out, p.errb
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("tfrun: start terraform: %w", err)
	}
	go func() {
		defer cancel()
		err := cmd.Wait()
		r := &Result{Args: args, Stdout: p.out.String(), Stderr: p.errb.String(), Duration: time.Since(p.start), LogFile: logFile, ExitCode: -1}
		if st := cmd.ProcessState; st != nil {
			r.ExitCode = st.ExitCode()
			if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.Signaled = true
			}
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			r.Err = err
		}
		if cctx.Err() == context.DeadlineExceeded {
			r.Err = fmt.Errorf("tfrun: terraform %s ran over %s and was killed", strings.Join(args, " "), timeout)
		}
		p.res = r
		close(p.done)
	}()
	return p, nil
}

// Run runs terraform with args and waits for it.
func (w *Workspace) Run(ctx context.Context, args ...string) *Result {
	p, err := w.Start(ctx, args...)
	if err != nil {
		return &Result{Args: args, ExitCode: -1, Err: err}
	}
	return p.Wait()
}

// Apply runs `terraform apply -auto-approve -input=false -no-color` plus extra arguments
// (e.g. a saved plan file, which must come last).
func (w *Workspace) Apply(ctx context.Context, extra ...string) *Result {
	return w.Run(ctx, append([]string{"apply", "-auto-approve", "-input=false", "-no-color"}, extra...)...)
}

// Destroy runs `terraform destroy -auto-approve -input=false -no-color`.
func (w *Workspace) Destroy(ctx context.Context, extra ...string) *Result {
	return w.Run(ctx, append([]string{"destroy", "-auto-approve", "-input=false", "-no-color"}, extra...)...)
}

// Plan runs `terraform plan -input=false -no-color -detailed-exitcode` (exit 2: changes).
func (w *Workspace) Plan(ctx context.Context, extra ...string) *Result {
	return w.Run(ctx, append([]string{"plan", "-input=false", "-no-color", "-detailed-exitcode"}, extra...)...)
}

// Import runs `terraform import -input=false -no-color <addr> <id>`.
func (w *Workspace) Import(ctx context.Context, addr, id string) *Result {
	return w.Run(ctx, "import", "-input=false", "-no-color", addr, id)
}

// PID is terraform's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed when the command has ended.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the command and returns its result. After it, every provider process the
// command spawned that is still alive (terraform was killed) is killed, so nothing
// outlives the call; Result.Stderr then says so.
func (p *Process) Wait() *Result {
	r, _ := p.WaitGrace(0)
	return r
}

// WaitGrace waits for the command, then gives the provider processes it left behind (after
// terraform was killed) up to grace to end by themselves, and kills the rest. It returns
// the result and how many provider processes had to be killed.
func (p *Process) WaitGrace(grace time.Duration) (*Result, int) {
	<-p.done
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && p.liveProviders() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	n := p.reapProviders()
	// Then whatever else of the command's process group is left (terraform runs in a group
	// of its own, which its providers inherit): a provider never polled by ProviderPIDs, or
	// one a normal exit of terraform left running, must not outlive the call, holding the
	// test binary's pipes and the machine's CPU after the test has ended.
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err == nil {
		p.w.leftovers.Add(1)
	}
	return p.res, n
}

func (p *Process) liveProviders() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for pid := range p.providers {
		if isProvider(pid) {
			n++
		}
	}
	return n
}

// Stdout is what the command printed so far.
func (p *Process) Stdout() string { return p.out.String() }

// Stderr is what the command wrote to stderr so far.
func (p *Process) Stderr() string { return p.errb.String() }

// Signal sends sig to terraform only (a CI runner's cancel: terraform forwards a stop to
// its providers).
func (p *Process) Signal(sig syscall.Signal) error {
	p.ProviderPIDs() // remember them before terraform can die
	return p.cmd.Process.Signal(sig)
}

// Interrupt sends SIGINT to terraform only.
func (p *Process) Interrupt() error { return p.Signal(syscall.SIGINT) }

// InterruptGroup sends SIGINT to terraform's process group, as Ctrl-C in a terminal does
// (the providers receive it too).
func (p *Process) InterruptGroup() error {
	p.ProviderPIDs()
	return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
}

// Kill sends SIGKILL to terraform only; its providers live on until Wait reaps them (or
// they end by themselves).
func (p *Process) Kill() error { return p.Signal(syscall.SIGKILL) }

// KillProviders sends SIGKILL to every live provider process of the command and returns
// how many it signalled.
func (p *Process) KillProviders() int {
	n := 0
	for _, pid := range p.ProviderPIDs() {
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// ProviderPIDs lists the live provider processes descending from terraform, and remembers
// them so that Wait can reap those left behind when terraform was killed.
func (p *Process) ProviderPIDs() []int {
	pids := descendants(p.cmd.Process.Pid, BinaryName)
	p.mu.Lock()
	for _, pid := range pids {
		p.providers[pid] = true
	}
	p.mu.Unlock()
	return pids
}

// reapProviders kills the remembered provider processes still alive and returns how many.
func (p *Process) reapProviders() int {
	p.mu.Lock()
	pids := make([]int, 0, len(p.providers))
	for pid := range p.providers {
		pids = append(pids, pid)
	}
	p.mu.Unlock()
	n := 0
	for _, pid := range pids {
		if isProvider(pid) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// syncBuffer is a bytes.Buffer safe for a writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
