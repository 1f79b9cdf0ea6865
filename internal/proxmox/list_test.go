package proxmox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
)

// listCluster is a listing with every kind of entry List must tell apart, and the configs
// of the entries it may read. Built on cluster_resources.json so the field shapes stay
// Proxmox's.
func listCluster(t *testing.T) (res []pveapi.Resource, configs map[int]map[string]string) {
	t.Helper()
	var base []pveapi.Resource
	ckData(t, "cluster_resources", &base)
	var midClone []pveapi.Resource
	ckData(t, "cluster_resources_mid_clone", &midClone)
	created := time.Date(2026, 9, 23, 10, 0, 0, 0, time.UTC)
	mark := func(uid string) map[string]string {
		return map[string]string{"name": "x", "description": FormatMark(uid, created)}
	}
	vm := func(vmid int, name, tags string) pveapi.Resource {
		return pveapi.Resource{ID: fmt.Sprintf("qemu/%d", vmid), Type: "qemu", VMID: vmid, Node: "pv1-1",
			Name: name, Status: "running", Tags: tags}
	}
	res = append(res, base...) // 100 homeassistant, 101 lxc, 102 web01, 9000/9001 templates, 199999 proxy-recon (tag)
	for _, r := range midClone {
		if r.Name == "" {
			r.VMID = 150000 // nameless mid-clone entry
			r.ID = "qemu/150000"
			res = append(res, r)
		}
	}
	res = append(res,
		vm(150001, "proxy-byname", ""),                  // ours, name only
		vm(150002, "edge-a", "dns;Proxy_Operator"),      // ours, tag only (case-folded)
		vm(150003, "edge-b", "a,proxy_operator"),        // ours, comma tags, empty uid
		vm(150004, "proxy-lookalike", "proxy_operator"), // candidate without a mark
		vm(150005, "proxy-notmanaged", ""),              // managed=false
		vm(150006, "proxy-gone", "proxy_operator"),      // config unreadable
		vm(150007, "proxy-stopped", "x proxy_operator"), // ours, space tags, stopped
		pveapi.Resource{Type: "lxc", VMID: 150008, Node: "pv1-1", Name: "proxy-ct", Tags: "proxy_operator"},
		pveapi.Resource{Type: "qemu", VMID: 150009, Node: "pv1-1", Name: "proxy-tmpl", Template: 1, Tags: "proxy_operator"},
	)
	res[len(res)-3].Status = "stopped"
	res[len(res)-3].Node = "pv1-2"
	configs = map[int]map[string]string{
		199999: mark("0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10"),
		150001: mark("6f1d2c3b-aaaa-4bbb-8ccc-123456789abc"),
		150002: mark("11111111-2222-4333-8444-555555555555"),
		150003: mark(""),
		150004: {"description": "a hand-made VM\nowner=someone"},
		150005: {"description": "proxy-operator-managed=false\nproxy-operator-uid=u"},
		150007: mark("77777777-2222-4333-8444-555555555555"),
		// Entries that must never be read: a read of these fails the test.
	}
	return res, configs
}

func listFake(t *testing.T) *checkFake {
	t.Helper()
	f := newCheckFake(t)
	res, configs := listCluster(t)
	f.resources = func(context.Context) ([]pveapi.Resource, error) { return res, nil }
	f.config = func(_ context.Context, node string, vmid int) (map[string]string, error) {
		if vmid == 150006 {
			return nil, ckAPIErr("err_not_exist")
		}
		c, ok := configs[vmid]
		if !ok {
			t.Errorf("config of VM %d read; it is not a candidate", vmid)
			return nil, ckAPIErr("err_not_exist")
		}
		return c, nil
	}
	return f
}

func TestList_marksDecideAmongCandidates(t *testing.T) {
	t.Parallel()
	f := listFake(t)
	got, err := ckBackend(f).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 9, 23, 10, 0, 0, 0, time.UTC)
	want := []Instance{
		{ID: ID{150001, "proxy-byname"}, Node: "pv1-1", UID: "6f1d2c3b-aaaa-4bbb-8ccc-123456789abc", CreatedAt: created, Status: "running"},
		{ID: ID{150002, "edge-a"}, Node: "pv1-1", UID: "11111111-2222-4333-8444-555555555555", CreatedAt: created, Status: "running"},
		{ID: ID{150003, "edge-b"}, Node: "pv1-1", UID: "", CreatedAt: created, Status: "running"},
		{ID: ID{150007, "proxy-stopped"}, Node: "pv1-2", UID: "77777777-2222-4333-8444-555555555555", CreatedAt: created, Status: "stopped"},
		{ID: ID{199999, "proxy-reconaaaaaaaaaaa"}, Node: "pv1-1", UID: "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10", CreatedAt: created, Status: "running"},
	}
	for i := range got {
		// Config is what vmFromConfig reads (as Get does); the mark's fields are compared here.
		if got[i].Config.ID != got[i].ID || got[i].Config.Cores < 1 {
			t.Errorf("%v: Config %+v not read from its config", got[i].ID, got[i].Config)
		}
		got[i].Config = VM{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List =\n%+v\nwant\n%+v", got, want)
	}
	// One listing, one config read per candidate (7), none for the others.
	if n := f.n("ClusterResources"); n != 1 {
		t.Errorf("%d listings, want 1", n)
	}
	for _, vmid := range []int{150001, 150002, 150003, 150004, 150005, 150006, 150007, 199999} {
		if n := f.n(fmt.Sprintf("VMConfig %d", vmid)); n != 1 {
			t.Errorf("VM %d: %d config reads, want 1", vmid, n)
		}
	}
	if n := f.total(); n != 1+8 {
		t.Errorf("%d requests, want 9: %v", n, f.calls)
	}
}

func TestList_unreadableCandidateSkippedOthersListed(t *testing.T) {
	t.Parallel()
	f := listFake(t)
	inner := f.config
	f.config = func(ctx context.Context, node string, vmid int) (map[string]string, error) {
		if vmid == 150002 {
			return nil, ckAPIErr("err_595")
		}
		return inner(ctx, node, vmid)
	}
	got, skipped, err := ckBackend(f).ListWithSkipped(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, in := range got {
		ids = append(ids, in.ID.VMID)
	}
	if want := []int{150001, 150003, 150007, 199999}; !reflect.DeepEqual(ids, want) {
		t.Errorf("listed %v, want %v", ids, want)
	}
	// The unreadable ones are reported, in VMID order; unmarked ones are not.
	var skippedIDs []ID
	for _, s := range skipped {
		skippedIDs = append(skippedIDs, s.ID)
		if s.Err == nil || s.Node != "pv1-1" {
			t.Errorf("skipped %+v: want its node and error", s)
		}
	}
	if want := []ID{{150002, "edge-a"}, {150006, "proxy-gone"}}; !reflect.DeepEqual(skippedIDs, want) {
		t.Errorf("skipped %v, want %v", skippedIDs, want)
	}
	var apiErr *pveapi.APIError
	if len(skipped) > 0 && (!errors.As(skipped[0].Err, &apiErr) || apiErr.Status != 595) {
		t.Errorf("skipped error %v, want the 595", skipped[0].Err)
	}
}

func TestList_listingFailureFailsTheCall(t *testing.T) {
	t.Parallel()
	f := newCheckFake(t)
	f.resources = func(context.Context) ([]pveapi.Resource, error) { return nil, ckAPIErr("err_auth_failed") }
	got, err := ckBackend(f).List(context.Background())
	if err == nil || got != nil {
		t.Fatalf("List = %v, %v; want an error", got, err)
	}
	if ClassOf(err) != pveapi.Permanent {
		t.Errorf("class %s, want permanent: %v", ClassOf(err), err)
	}
	var apiErr *pveapi.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 401 {
		t.Errorf("error %v does not wrap the 401", err)
	}
}

func TestList_contextEndedFailsTheCall(t *testing.T) {
	t.Parallel()
	f := listFake(t)
	inner := f.config
	f.config = func(ctx context.Context, node string, vmid int) (map[string]string, error) {
		if vmid == 150004 {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return inner(ctx, node, vmid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var (
		got []Instance
		err error
	)
	ckWithin(t, 5*time.Second, func() { got, err = ckBackend(f).List(ctx) })
	if err == nil || got != nil {
		t.Fatalf("List = %v, %v; want an error", got, err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || ClassOf(err) != pveapi.Transient {
		t.Errorf("error %v (class %s), want a transient deadline", err, ClassOf(err))
	}
}

func TestList_expiredContextReturnsPromptly(t *testing.T) {
	t.Parallel()
	f := listFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var err error
	ckWithin(t, 5*time.Second, func() { _, err = ckBackend(f).List(ctx) })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want canceled", err)
	}
}

func TestHasManagedTag_table(t *testing.T) {
	t.Parallel()
	for tags, want := range map[string]bool{
		"proxy_operator":          true,
		"dns;proxy_operator":      true,
		"PROXY_OPERATOR":          true,
		"a,proxy_operator":        true,
		"a proxy_operator":        true,
		"":                        false,
		"proxy_operator2":         false,
		"proxy-operator":          false,
		"xproxy_operator;y":       false,
		";;proxy_operator;;":      true,
		"dns, proxy_operator ,ab": true,
	} {
		if got := hasManagedTag(tags); got != want {
			t.Errorf("hasManagedTag(%q) = %v, want %v", tags, got, want)
		}
	}
}
