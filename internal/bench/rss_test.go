package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestParseVmHWM(t *testing.T) {
	status := "Name:\tterraform-provi\nVmPeak:\t 1300000 kB\nVmHWM:\t   38400 kB\nVmRSS:\t   30000 kB\n"
	got, ok := parseVmHWM([]byte(status))
	if !ok || got != 38400*1024 {
		t.Errorf("parseVmHWM = %d, %t; want %d", got, ok, 38400*1024)
	}
	for _, bad := range []string{"Name:\tx\nVmRSS:\t 1 kB\n", "VmHWM:\t 12 MB\n", "VmHWM:\t x kB\n", ""} {
		if v, ok := parseVmHWM([]byte(bad)); ok {
			t.Errorf("parseVmHWM(%q) = %d, true; want false", bad, v)
		}
	}
}

func TestWatchRSS_samplesTheGivenProcesses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := watchProcs(ctx, time.Millisecond, func() []int { return []int{os.Getpid(), 1 << 30} })
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); { // burn some CPU
	}
	cancel()
	peak, cpu, procs := r.result()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	own, _ := parseVmHWM(b)
	// The pid that does not exist is not counted; our own peak is at most what we read
	// after, give or take the kernel's per-thread RSS counter batching (up to a few
	// hundred kB between reads through different threads).
	if procs != 1 || peak <= 0 || peak > own+1<<20 {
		t.Errorf("peak %d over %d processes; want one process with 0 < peak <= %d", peak, procs, own)
	}
	if cpu <= 0 {
		t.Errorf("CPU %s, want some after busy-waiting", cpu)
	}
}

func TestParseCPU(t *testing.T) {
	// pid (comm with ") x" in it) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
	stat := "4242 (terraform-pro) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 9000 9000 20 0 12 0\n"
	got, ok := parseCPU([]byte(stat))
	if !ok || got != 3250*time.Millisecond {
		t.Errorf("parseCPU = %s, %t; want 3.25s (utime 250 + stime 75 ticks, children left out)", got, ok)
	}
	if _, ok := parseCPU([]byte("4242 (x) S 1 2")); ok {
		t.Error("a short stat line parsed")
	}
}
