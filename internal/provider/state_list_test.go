package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/datasource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/proxy-operator/terraform-provider-proxy/internal/proxmox"
)

// vmsStateModel is a proxy_vms result of n VMs built as Read builds it (identify,
// vmSize.read, stringList), with nulls, empty lists and lists of addresses among them.
func vmsStateModel(t testing.TB, s tfsdk.State, n int) vmsModel {
	t.Helper()
	ctx := context.Background()
	ta, diags := s.Schema.TypeAtPath(ctx, path.Root("timeouts"))
	if diags.HasError() {
		t.Fatal(diags)
	}
	m := vmsModel{
		ID: types.StringValue("https://pve.example:8006"), Node: types.StringNull(), NameRegex: types.StringNull(),
		NamePrefix: types.StringValue("proxy-"), MadeBy: types.StringNull(),
		VMs: []vmsVMModel{}, OrphanSeeds: []vmsOrphanModel{}, OrphanVMs: []vmsOrphanVMModel{},
		Timeouts: timeouts.Value{Object: types.ObjectNull(ta.(timeouts.Type).AttrTypes)},
	}
	for i := range n {
		id := proxmox.ID{VMID: 100000 + i, Name: fmt.Sprintf("proxy-%d", i)}
		o := vmsVMModel{vmLocation: vmLocation{Node: types.StringValue("pve1"), Pool: stringOrNull(map[bool]string{true: "egress"}[i%3 == 0])},
			Status: types.StringValue("running"), MadeBy: types.StringValue(madeByProvider)}
		o.identify(id, fmt.Sprintf("uid-%d", i), time.Date(2026, 11, 1, 0, 0, i%60, 0, time.UTC))
		o.vmSize.read(onVM(proxmox.VM{Cores: 1 + i%4, MemoryMiB: 512, DiskGiB: i % 2 * 8, Options: map[string]string{"cpu": map[bool]string{true: "host"}[i%5 == 0]}}))
		var v4, v6 []string
		if i%4 != 0 {
			v4 = []string{fmt.Sprintf("10.0.%d.%d", i/250, i%250)}
			v6 = []string{"fd00::1", "fd00::2"}
		}
		o.IPv4Addresses, o.IPv6Addresses = stringList(v4), stringList(v6)
		o.IPAddress = types.StringNull()
		if len(v4) > 0 {
			o.IPAddress = types.StringValue(v4[0])
		}
		m.VMs = append(m.VMs, o)
	}
	return m
}

func vmsEmptyState(t testing.TB) tfsdk.State {
	t.Helper()
	var resp datasource.SchemaResponse
	(&vmsDataSource{}).Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	typ := resp.Schema.Type().TerraformType(context.Background())
	return tfsdk.State{Schema: resp.Schema, Raw: tftypes.NewValue(typ, nil)}
}

// setObjectList makes the value State.Set makes of the same list.
func TestSetObjectList_sameAsStateSet(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{-1, 0, 1, 7, 40} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			want := vmsEmptyState(t)
			m := vmsStateModel(t, want, max(n, 0))
			if n < 0 {
				m.VMs = nil // null, as State.Set makes a nil slice
			}
			if d := want.Set(ctx, &m); d.HasError() {
				t.Fatal(d)
			}
			got := vmsEmptyState(t)
			vms := m.VMs
			m.VMs = nil
			if d := got.Set(ctx, &m); d.HasError() {
				t.Fatal(d)
			}
			if err := setObjectList(ctx, &got, "vms", vms); err != nil {
				t.Fatal(err)
			}
			if !got.Raw.Equal(want.Raw) {
				diffs, _ := got.Raw.Diff(want.Raw)
				t.Errorf("setObjectList differs from State.Set in %d values, first %v", len(diffs), diffs[0].Path)
			}
			var back vmsModel
			if d := got.Get(ctx, &back); d.HasError() || len(back.VMs) != max(n, 0) {
				t.Errorf("read back %d VMs (%v), want %d", len(back.VMs), d, n)
			}
		})
	}
}

// A struct that does not match the object is an error, not a panic or a partial value.
func TestSetObjectList_mismatchIsAnError(t *testing.T) {
	ctx := context.Background()
	s := vmsEmptyState(t)
	m := vmsStateModel(t, s, 0)
	if d := s.Set(ctx, &m); d.HasError() {
		t.Fatal(d)
	}
	type short struct {
		Node types.String `tfsdk:"node"`
	}
	type extra struct {
		vmsVMModel
		More types.String `tfsdk:"more"`
	}
	for name, err := range map[string]error{
		"missing attributes": setObjectList(ctx, &s, "vms", []short{{}}),
		"unknown attribute":  setObjectList(ctx, &s, "vms", []extra{{}}),
		"not a list":         setObjectList(ctx, &s, "id", []short{{}}),
		"no such attribute":  setObjectList(ctx, &s, "nope", []short{{}}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// BenchmarkVMsState compares what the framework's State.Set and setObjectList allocate for
// a proxy_vms result of 10000 VMs (go test -bench VMsState -benchmem ./internal/provider).
func BenchmarkVMsState(b *testing.B) {
	ctx := context.Background()
	base := vmsEmptyState(b)
	m := vmsStateModel(b, base, 10000)
	b.Run("State.Set", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			s := vmsEmptyState(b)
			if d := s.Set(ctx, &m); d.HasError() {
				b.Fatal(d)
			}
		}
	})
	b.Run("setObjectList", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			s := vmsEmptyState(b)
			mm := m
			mm.VMs = nil
			if d := s.Set(ctx, &mm); d.HasError() {
				b.Fatal(d)
			}
			if err := setObjectList(ctx, &s, "vms", m.VMs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
