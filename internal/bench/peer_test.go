package bench

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

func TestPeerVMs_HCL(t *testing.T) {
	p := PeerVMs{Endpoint: "https://127.0.0.1:8006", APIToken: "root@pam!tf=SENTINEL", Node: "pve1", Datastore: "local-lvm",
		N: 5, Template: 9001, Cores: 1, MemoryMiB: 512, DiskGiB: 8}
	got := p.HCL()
	for _, want := range []string{
		`source = "bpg/proxmox"`,
		`endpoint  = "https://127.0.0.1:8006/"`,
		`api_token = "root@pam!tf=SENTINEL"`,
		`insecure  = false`,
		`resource "proxmox_virtual_environment_vm" "bench" {`,
		`count     = 5`,
		`name      = "bench-${count.index}"`,
		`node_name = "pve1"`,
		"clone {\n    vm_id = 9001\n    full  = true\n  }",
		"agent {\n    enabled = true\n  }",
		"stop_on_destroy = true",
		"cpu {\n    cores = 1\n  }",
		"memory {\n    dedicated = 512\n  }",
		"disk {\n    datastore_id = \"local-lvm\"\n    interface    = \"scsi0\"\n    size         = 8\n  }",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the peer's configuration lacks %q:\n%s", want, got)
		}
	}
	// No resize asked: no disk block (the template's disk stays).
	p.DiskGiB = 0
	if s := p.HCL(); strings.Contains(s, "disk {") {
		t.Errorf("DiskGiB 0 rendered a disk block:\n%s", s)
	}
	// The text is HCL terraform parses (terraform fmt needs no provider and no init).
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Skip("terraform not on PATH: the syntax check is skipped")
	}
	cmd := exec.Command(tf, "fmt", "-")
	cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
	cmd.Stdin = strings.NewReader(got)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("terraform fmt rejects the peer's configuration: %v\n%s\n%s", err, out, got)
	}
}

func TestPeerProvider_linksTheBinaryUnderDevOverrides(t *testing.T) {
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("terraform not on PATH")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "terraform-provider-proxmox_v0.111.1")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	over := filepath.Join(dir, "over")
	p, err := PeerProvider(bin, over)
	if err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(over, "terraform-provider-proxmox")); err != nil || target != bin {
		t.Errorf("link = %q, %v; want %q", target, err, bin)
	}
	cfg, err := os.ReadFile(p.CLIConfig)
	if err != nil {
		t.Fatal(err)
	}
	want := `"registry.terraform.io/bpg/proxmox" = "` + over + `"`
	if !strings.Contains(string(cfg), want) || !strings.Contains(string(cfg), "dev_overrides") {
		t.Errorf("CLI configuration lacks %s under dev_overrides:\n%s", want, cfg)
	}
}

func TestCheckPeer_skipsWhenAbsentAndRejectsBadPaths(t *testing.T) {
	if err := CheckPeer(""); !errors.Is(err, ErrNoPeer) {
		t.Errorf(`CheckPeer("") = %v, want ErrNoPeer`, err)
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "exe")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), plain, dir} {
		err := CheckPeer(bad)
		if err == nil || errors.Is(err, ErrNoPeer) {
			t.Errorf("CheckPeer(%s) = %v, want an error other than the skip", bad, err)
		}
	}
	if err := CheckPeer(exe); err != nil {
		t.Errorf("CheckPeer(executable) = %v", err)
	}
	if _, err := PeerProvider("", t.TempDir()); !errors.Is(err, ErrNoPeer) {
		t.Errorf("PeerProvider without a binary = %v, want ErrNoPeer", err)
	}
}

func TestPeerResult_Ratios(t *testing.T) {
	reqs := func(n int) map[string]int { return map[string]int{"GET /a": n - 1, "GET /b": 1} }
	side := func(apply, plan, destroy time.Duration, ra, rp, rd int) Side {
		return Side{Ops: []OpResult{
			{Op: OpCreate, Wall: apply, Requests: reqs(ra)},
			{Op: OpPlan, Wall: plan, Requests: reqs(rp)},
			{Op: OpDestroy, Wall: destroy, Requests: reqs(rd)},
		}}
	}
	r := PeerResult{Config: PeerConfig{N: 5},
		Ours: side(30*time.Second, 2*time.Second, 9*time.Second, 200, 11, 60),
		Peer: side(40*time.Second, 4*time.Second, 6*time.Second, 100, 44, 50)}
	got := r.Ratios()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"apply", got.ApplyWall, 0.75}, {"destroy", got.DestroyWall, 1.5}, {"plan wall", got.PlanWall, 0.5},
		{"plan requests", got.PlanRequests, 0.25}, {"plan per VM", got.PlanReqsPerVM, 0.25},
		{"create per VM", got.CreateRequestsPerVM, 2}, {"destroy per VM", got.DestroyRequestsPerVM, 1.2},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s ratio = %v, want %v", c.name, c.got, c.want)
		}
	}
	// A peer that did not run has no ratio, not zero nor infinity.
	r.Peer = Side{}
	if got := r.Ratios(); !math.IsNaN(got.ApplyWall) || !math.IsNaN(got.PlanRequests) {
		t.Errorf("ratios against an absent peer = %+v, want NaN", got)
	}
	if s := (PeerReport{PeerResult: r}).Markdown(); !strings.Contains(s, "| apply wall | 30.00 s | 0.00 s | **-** |") {
		t.Errorf("an absent ratio renders as a number:\n%s", s)
	}
}

func TestMeanSide_averagesRounds(t *testing.T) {
	mk := func(wall time.Duration, n int, lag time.Duration) Side {
		return Side{Name: "peer", Ops: []OpResult{{Op: OpCreate, Wall: wall, Requests: map[string]int{"GET /x": n}}},
			Lags: map[Op]Lags{OpCreate: {VMs: 5, TaskPoll: lag}}, Unserved: map[string]int{"GET /y 501": 1}, Problems: []string{"p"}}
	}
	m := meanSide([]Side{mk(10*time.Second, 10, time.Second), mk(20*time.Second, 21, 3*time.Second)})
	if got := m.Op(OpCreate).Wall; got != 15*time.Second {
		t.Errorf("mean wall %s, want 15s", got)
	}
	if got := m.Op(OpCreate).Requests["GET /x"]; got != 16 {
		t.Errorf("mean requests %d, want 16 (15.5 rounded)", got)
	}
	if got := m.Lags[OpCreate]; got.TaskPoll != 2*time.Second || got.VMs != 5 {
		t.Errorf("mean lags %+v, want TaskPoll 2s over 5 VMs", got)
	}
	if m.Unserved["GET /y 501"] != 2 || len(m.Problems) != 2 {
		t.Errorf("unserved %v and problems %v not summed over the rounds", m.Unserved, m.Problems)
	}
}

func TestSpliceSection(t *testing.T) {
	sec := func(body string) string { return peerBegin + "\n" + body + "\n" + peerEnd + "\n" }
	doc := "# Results\n\n| a | b |\n"
	one := SpliceSection(doc, sec("first"))
	if !strings.HasPrefix(one, doc) || !strings.HasSuffix(one, sec("first")) {
		t.Fatalf("append:\n%s", one)
	}
	two := SpliceSection(one+"\n## After\n", sec("second"))
	if strings.Contains(two, "first") || !strings.Contains(two, "second") || !strings.HasPrefix(two, doc) || !strings.HasSuffix(two, "## After\n") {
		t.Fatalf("replace kept the old section or lost the text around it:\n%s", two)
	}
	if got := PeerSection(two); got != sec("second") {
		t.Errorf("PeerSection = %q", got)
	}
	if got := SpliceSection(two, ""); strings.Contains(got, peerBegin) || !strings.Contains(got, "## After") {
		t.Errorf("remove:\n%s", got)
	}
	if PeerSection(doc) != "" {
		t.Error("PeerSection of a document without one is not empty")
	}
	// WritePeerSection creates results.md, then replaces only the section.
	dir := t.TempDir()
	if err := WritePeerSection(dir, sec("x")); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "results.md")
	if err := os.WriteFile(f, []byte("# Top\n\n"+sec("x")+"\n# Bottom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePeerSection(dir, sec("y")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f)
	if got := string(b); got != "# Top\n\n"+sec("y")+"\n# Bottom\n" {
		t.Errorf("results.md = %q", got)
	}
}

func TestLags_pollLags(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ms := time.Millisecond
	task := func(upid, typ string, from, to int) pvesim.TaskState {
		return pvesim.TaskState{UPID: upid, Type: typ, VMID: 100, Submitted: at(from), Ended: at(to)}
	}
	tasks := []pvesim.TaskState{task("U1", "qmclone", 100, 1100), task("U2", "qmstart", 1500, 1600)}
	poll := func(upid string, t int) pvesim.Request {
		return pvesim.Request{Method: "GET", Path: "/nodes/pve1/tasks/" + upid + "/status", Received: at(t)}
	}
	agentReq := func(t int) pvesim.Request {
		return pvesim.Request{Method: "GET", Path: "/nodes/pve1/qemu/100/agent/network-get-interfaces", VMID: 100, Received: at(t)}
	}
	reqs := []pvesim.Request{
		poll("U1", 600), poll("U1", 1400), // clone ended at 1100: seen 300 ms late
		poll("U2", 1700),               // start ended at 1600: seen 100 ms late
		agentReq(2000), agentReq(2900), // ready at 1600+1000: seen 300 ms late
		poll("U9", 1200), // another task's poll: not U1's
	}
	times := map[string][2]time.Time{"bench-0": {at(0), at(3000)}}
	o := OpResult{Wall: 5 * time.Second, Span: 3 * time.Second}
	got := lags(o, times, map[string]int{"bench-0": 100}, tasks, reqs, time.Second)
	want := Lags{VMs: 1, Resource: 3000 * ms, Tasks: 1100 * ms, Agent: 1000 * ms, TaskPoll: 400 * ms, AgentPoll: 300 * ms, Terraform: 2 * time.Second}
	if got != want {
		t.Fatalf("lags = %+v\nwant   %+v", got, want)
	}
	if got.Other() != 200*ms {
		t.Errorf("other = %s, want 200ms", got.Other())
	}
	// No agent wait (destroy): no agent poll lag, whatever was asked.
	if got := lags(o, times, map[string]int{"bench-0": 100}, tasks, reqs, 0); got.AgentPoll != 0 || got.Agent != 0 {
		t.Errorf("without an agent wait: %+v", got)
	}
}

func TestPathShape(t *testing.T) {
	for in, want := range map[string]string{
		"/nodes/pve1/qemu/1003/config":                                    "/nodes/{node}/qemu/{vmid}/config",
		"/nodes/pve1/tasks/UPID:pve1:00001:qmstart:1003:root@pam:/status": "/nodes/{node}/tasks/{upid}/status",
		"/nodes/pve1/storage/local-lvm/content/local-lvm:vm-1003-disk-0":  "/nodes/{node}/storage/{storage}/content/{volume}",
		"/cluster/resources":                                              "/cluster/resources",
		"/pools":                                                          "/pools",
	} {
		if got := pathShape(in); got != want {
			t.Errorf("pathShape(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestStatPPID(t *testing.T) {
	if p, ok := statPPID("42 (terraform (x)) S 7 42 42 0"); !ok || p != 7 {
		t.Errorf("statPPID = %d, %v; want 7", p, ok)
	}
	if _, ok := statPPID("42 (zombie) Z 7 42"); ok {
		t.Error("a zombie counted as a live child")
	}
	// This test's process is a child of its parent.
	found := false
	for _, c := range childPIDs(os.Getppid()) {
		found = found || c == os.Getpid()
	}
	if !found {
		t.Errorf("childPIDs(%d) misses this process %d", os.Getppid(), os.Getpid())
	}
}

func TestOptions_peer(t *testing.T) {
	o := DefaultOptions()
	if o.PeerN != 5 || o.PeerSpeed != 1 || o.PeerRounds != 1 || o.Peer != "" {
		t.Errorf("defaults: N=%d speed=%g rounds=%d peer=%q; want 5 VMs at a real host's pace, one round, no peer", o.PeerN, o.PeerSpeed, o.PeerRounds, o.Peer)
	}
	o.PeerOnly = true
	if _, err := o.Config(); err == nil || !strings.Contains(err.Error(), "-peer-only needs -peer") {
		t.Errorf("-peer-only without -peer: %v", err)
	}
	o.Peer = "/bin/true"
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Scenarios) != 0 || len(cfg.ListNs) != 0 {
		t.Errorf("-peer-only left scenarios %v and listings %v to run", cfg.Scenarios, cfg.ListNs)
	}
	if pc := o.PeerConfig(); pc != (PeerConfig{Binary: "/bin/true", N: 5, P: 10, Speed: 1, Rounds: 1}) {
		t.Errorf("PeerConfig = %+v", pc)
	}
	if cl := o.PeerCommandLine(); !strings.Contains(cl, "-peer-only -peer true -peer-n 5 -peer-p 10 -peer-speed 1") {
		t.Errorf("PeerCommandLine = %q", cl)
	}
}
