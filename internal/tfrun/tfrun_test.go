package tfrun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":           `"plain"`,
		"a\"b\\c":         `"a\"b\\c"`,
		"l1\nl2\t\r":      `"l1\nl2\t\r"`,
		"${x} %{y} $ %":   `"$${x} %%{y} $ %"`,
		"\x00\x1b\x7f":    `"\u0000\u001b\u007f"`,
		"héllo ✓":         `"héllo ✓"`,
		"#cloud-config\n": `"#cloud-config\n"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestProviderConfigHCL(t *testing.T) {
	c := ProviderConfig{
		Endpoint: "https://127.0.0.1:8006", APITokenFile: "/tmp/tok", CAFile: "/tmp/ca.pem",
		Nodes: []string{"pve1", "pve2"}, ISOStorage: "proxy-seeds", VMIDMin: 100, VMIDMax: 109,
		Templates:      map[string]int{"z": 9000, "debian-13": 9001},
		MachineTypes:   map[string]MachineType{"big": {Cores: 4, MemoryMiB: 4096, DiskGiB: 20}},
		RequestTimeout: "5s", InstallGuestAgent: Bool(false),
	}
	got := c.HCL()
	for _, want := range []string{
		`endpoint = "https://127.0.0.1:8006"`, `api_token_file = "/tmp/tok"`, `nodes = ["pve1", "pve2"]`,
		`vmid_range = { min = 100, max = 109 }`, "\"debian-13\" = 9001\n    \"z\" = 9000",
		`"big" = { cores = 4, memory_mib = 4096, disk_gib = 20 }`, `request_timeout = "5s"`,
		`install_guest_agent = false`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("provider block lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "api_token =") || strings.Contains(got, "insecure") {
		t.Errorf("provider block renders unset attributes:\n%s", got)
	}
}

func TestVMHCL(t *testing.T) {
	v := VM{Name: "px-${count.index}", Count: 3, Image: "debian-13", CloudInit: "#cloud-config\nx: ${y}\n",
		WaitForIP: Bool(false), Timeouts: map[string]string{"create": "30s", "delete": "1m"}}
	got := v.HCL()
	for _, want := range []string{
		`resource "proxy_vm" "px_count_index" {`, "count = 3", `name = "px-${count.index}"`,
		`cloud_init = "#cloud-config\nx: $${y}\n"`, "wait_for_ip = false", `create = "30s"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("resource block lacks %q:\n%s", want, got)
		}
	}
	if a := (VM{Name: "a-b"}).Addr(); a != "proxy_vm.a_b" {
		t.Errorf("Addr = %q", a)
	}
}

func TestParseShow(t *testing.T) {
	out := `{"format_version":"1.0","values":{"root_module":{"resources":[
	{"address":"proxy_vm.a","mode":"managed","type":"proxy_vm","name":"a","values":{"id":"vms/105967/a","vmid":105967,"cloud_init":"x"},"sensitive_values":{"cloud_init":true},"tainted":true}],
	"child_modules":[{"resources":[{"address":"module.m.proxy_vm.b","mode":"managed","type":"proxy_vm","name":"b","values":{"vmid":7}}]}]}}}`
	st, err := ParseShow(out)
	if err != nil {
		t.Fatal(err)
	}
	vms := st.OfType("proxy_vm")
	if len(vms) != 2 {
		t.Fatalf("got %d resources", len(vms))
	}
	a := vms[0]
	if a.String("id") != "vms/105967/a" || a.Int("vmid") != 105967 || !a.Tainted || !a.Sensitive("cloud_init") || a.Sensitive("id") {
		t.Errorf("decoded %+v", a)
	}
	if vms[1].Int("vmid") != 7 {
		t.Errorf("child module resource: %+v", vms[1])
	}
	if st, err := ParseShow(`{"format_version":"1.0"}`); err != nil || len(st.Resources) != 0 {
		t.Errorf("empty state: %v %v", st, err)
	}
}

func TestParseDiagnostics(t *testing.T) {
	ui := `{"@level":"info","type":"version"}
{"@level":"error","type":"diagnostic","diagnostic":{"severity":"error","summary":"S","detail":"D","address":"proxy_vm.a","range":{"filename":"main.tf","start":{"line":15}},"snippet":{"code":"  name = \"BAD\"","start_line":15,"highlight_start_offset":9,"highlight_end_offset":14}}}
{"@level":"warn","type":"diagnostic","diagnostic":{"severity":"warning","summary":"W","detail":""}}`
	d := ParseDiagnostics(ui)
	if len(d) != 2 || len(Errors(d)) != 1 || d[0].Highlight() != `"BAD"` || d[0].Line() != 15 || d[0].Text() != "S: D" {
		t.Fatalf("parsed %+v", d)
	}
	validate := "{\n  \"valid\": false,\n  \"diagnostics\": [{\"severity\":\"error\",\"summary\":\"X\",\"detail\":\"Y\"}]\n}"
	if d := ParseDiagnostics(validate); len(d) != 1 || d[0].Summary != "X" {
		t.Fatalf("validate output parsed as %+v", d)
	}
}

// TestDescendants finds a grandchild by executable name, as Process.ProviderPIDs finds the
// provider below terraform.
func TestDescendants(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command("/bin/sh", "-c", sleep+" 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pids []int
	for i := 0; i < 200 && len(pids) == 0; i++ {
		pids = descendants(cmd.Process.Pid, baseName(sleep))
		time.Sleep(10 * time.Millisecond)
	}
	if len(pids) != 1 {
		t.Fatalf("descendants found %v, want the one sleep below the shell", pids)
	}
	if got := descendants(cmd.Process.Pid, "no-such-binary"); len(got) != 0 {
		t.Errorf("found %v for a name nobody runs", got)
	}
	if pp, ok := parentOf(pids[0]); !ok || pp != cmd.Process.Pid {
		t.Errorf("parentOf(%d) = %d, %v; want %d", pids[0], pp, ok, cmd.Process.Pid)
	}
	_ = syscall.Kill(pids[0], syscall.SIGKILL)
}

func baseName(p string) string {
	i := strings.LastIndexByte(p, '/')
	return p[i+1:]
}

// TestWait_killsWhatTheCommandLeft: a command that ends while a process it started still
// runs in its group (a provider terraform did not stop) leaves nothing once Wait returns.
func TestWait_killsWhatTheCommandLeft(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	fake := filepath.Join(dir, "terraform")
	script := "#!/bin/sh\n" + sleep + " 300 </dev/null >/dev/null 2>&1 &\necho $! > " + pidFile + "\nexit 0\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	w := &Workspace{Provider: &Provider{Terraform: fake, CLIConfig: filepath.Join(dir, "none.tfrc")}, Dir: dir}
	r := w.Run(context.Background(), "version")
	if r.ExitCode != 0 {
		t.Fatalf("fake terraform: exit %d: %v", r.ExitCode, r.Err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Killed processes are reaped by init (their parent, the script, has exited); give it
	// the moment that takes.
	gone := false
	for i := 0; i < 200 && !gone; i++ {
		gone = syscall.Kill(pid, 0) != nil || isZombie(pid)
		if !gone {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !gone {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("process %d the command started still runs after Wait", pid)
	}
	if w.Leftovers() != 1 {
		t.Errorf("Leftovers() = %d, want 1", w.Leftovers())
	}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}
