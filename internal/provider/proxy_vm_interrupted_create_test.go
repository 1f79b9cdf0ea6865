package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// A finished same-name VM younger than the create timeout is named in a warning with the
// import command; an older one (a create_before_destroy predecessor of a day ago) is not.
func TestWarnRecentPassed(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	vm := proxmox.VM{ID: proxmox.ID{VMID: 1005, Name: "px-a"}, Passed: []proxmox.PassedVM{
		{VMID: 1003, Node: "pve1", CreatedAt: start.Add(-40 * time.Second)},
		{VMID: 1001, Node: "pve1", CreatedAt: start.Add(-24 * time.Hour)},
		{VMID: 1002, Node: "pve1"}, // no created-at: not judged recent
	}}
	var d diag.Diagnostics
	warnRecentPassed(&d, "px-a", vm, start, 20*time.Minute)
	if d.HasError() || len(d) != 1 {
		t.Fatalf("diagnostics %v, want one warning", d)
	}
	detail := d[0].Detail()
	for _, want := range []string{"VMID 1003", "terraform import <address> vms/1003/px-a", "40s", "Proxy VM \"px-a\" (VMID 1005)"} {
		if !strings.Contains(detail, want) {
			t.Errorf("warning %q lacks %q", detail, want)
		}
	}
	if strings.Contains(detail, "1001") || strings.Contains(detail, "1002") {
		t.Errorf("warning names an old or undated VM: %q", detail)
	}
}

// The provider's parent is this test process while it runs: not gone; any other pid is.
func TestParentGone(t *testing.T) {
	if parentGone(startedBy) {
		t.Error("the parent that started this process is reported gone")
	}
	if !parentGone(startedBy + 1) {
		t.Error("a parent other than this process's is not reported gone")
	}
}
