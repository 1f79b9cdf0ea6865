package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/bench"
)

// A wrong peer path or -peer-only without a peer fails at once, before any scenario (which
// would need terraform and minutes).
func TestRun_peerArgumentsFailFast(t *testing.T) {
	t.Setenv("BENCH_PEER", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-peer-only"}, "-peer-only needs -peer"},
		{[]string{"-peer", "/nonexistent/terraform-provider-proxmox"}, "peer provider:"},
		{[]string{"-peer-only", "-peer", t.TempDir()}, "is not an executable file"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), append(c.args, "-out", t.TempDir()), &out, &errb)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %v = %v, want an error containing %q", c.args, err, c.want)
		}
	}
	// BENCH_PEER is read like -peer.
	t.Setenv("BENCH_PEER", "/nonexistent/from-env")
	if err := run(context.Background(), []string{"-peer-only", "-out", t.TempDir()}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil ||
		!strings.Contains(err.Error(), "from-env") {
		t.Errorf("BENCH_PEER not used: %v", err)
	}
}

func TestReportSkip_isLoudOnBothStreams(t *testing.T) {
	var out, errb bytes.Buffer
	reportSkip(&out, &errb, bench.ErrNoPeer)
	for name, s := range map[string]string{"stdout": out.String(), "stderr": errb.String()} {
		if !strings.Contains(s, "*** peer comparison skipped") || !strings.Contains(s, "BENCH_PEER") {
			t.Errorf("%s does not say the comparison was skipped and how to run it: %q", name, s)
		}
	}
}
