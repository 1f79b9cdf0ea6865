package pvesim_test

import (
	"context"
	"testing"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

func benchClient(b *testing.B, s *pvesim.Sim) *pveapi.Client {
	b.Helper()
	c, err := pveapi.New(pveapi.Options{Endpoint: s.Endpoint, Token: s.APIToken, CAPEM: s.CAPEM})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkAPI_clusterResources measures one listing over a kept-alive connection.
func BenchmarkAPI_clusterResources(b *testing.B) {
	s := pvesim.NewForTest(b, pvesim.Options{})
	c := benchClient(b, s)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.ClusterResources(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAPI_createCycle measures clone, start, stop and destroy of one VM, tasks polled
// as fast as they end, at the default speed.
func BenchmarkAPI_createCycle(b *testing.B) {
	s := pvesim.NewForTest(b, pvesim.Options{})
	c := benchClient(b, s)
	ctx := context.Background()
	wait := func(upid string, err error) {
		if err != nil {
			b.Fatal(err)
		}
		for {
			st, err := c.TaskStatus(ctx, "pve1", upid)
			if err != nil {
				b.Fatal(err)
			}
			if st.Status == "stopped" {
				if st.ExitStatus != "OK" {
					b.Fatal(st.ExitStatus)
				}
				return
			}
		}
	}
	for b.Loop() {
		wait(c.Clone(ctx, "pve1", 9001, pveapi.CloneParams{NewID: 123456, Name: "bench"}))
		wait(c.Start(ctx, "pve1", 123456))
		wait(c.Stop(ctx, "pve1", 123456))
		wait(c.Destroy(ctx, "pve1", 123456))
	}
}
