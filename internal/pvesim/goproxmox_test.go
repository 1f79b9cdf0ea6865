package pvesim_test

import (
	"context"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// A client written by others against real PVE: go-proxmox decodes every answer into
// typed structs, so a shape or a type the simulator invented fails here. Each call of
// the VM lifecycle must decode.
func TestGoProxmox_vmLifecycleDecodes(t *testing.T) {
	for _, nodes := range [][]string{{"pve1"}, {"pve1", "pve2"}} {
		t.Run(strings.Join(nodes, ","), func(t *testing.T) {
			t.Parallel()
			goProxmoxLifecycle(t, nodes)
		})
	}
}

func goProxmoxLifecycle(t *testing.T, nodes []string) {
	sim := pvesim.NewForTest(t, pvesim.Options{Nodes: nodes, TemplateAgent: true})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(sim.CAPEM))
	tokenID, secret, _ := strings.Cut(sim.APIToken, "=")
	c := proxmox.NewClient(sim.Endpoint+"/api2/json",
		proxmox.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}),
		proxmox.WithRootCAs(pool),
		proxmox.WithAPIToken(tokenID, secret))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	v, err := c.Version(ctx)
	must("version", err)
	if v.Release == "" || v.Version == "" {
		t.Errorf("version %+v", v)
	}
	ns, err := c.Nodes(ctx)
	must("nodes", err)
	if len(ns) != len(nodes) || ns[0].Node != nodes[0] {
		t.Errorf("nodes %+v", ns)
	}
	cl, err := c.Cluster(ctx)
	must("cluster status", err)
	if len(nodes) > 1 && (cl.Quorate != 1 || len(cl.Nodes) != len(nodes)) {
		t.Errorf("cluster %+v", cl)
	}
	res, err := cl.Resources(ctx, "vm")
	must("cluster resources", err)
	if len(res) == 0 {
		t.Error("no resources")
	}
	tasks, err := cl.Tasks(ctx)
	must("cluster tasks", err)
	_ = tasks
	pools, err := c.Pools(ctx)
	must("pools", err)
	if len(pools) != 0 {
		t.Errorf("pools %+v", pools)
	}
	node, err := c.Node(ctx, nodes[0])
	must("node status", err)
	nv, err := node.Version(ctx)
	must("node version", err)
	if nv.Version != v.Version {
		t.Errorf("node version %+v, cluster %+v", nv, v)
	}
	list, err := node.VirtualMachines(ctx)
	must("node qemu list", err)
	if len(list) == 0 {
		t.Error("no VMs listed on the node")
	}
	tmpl, err := node.VirtualMachine(ctx, sim.Templates["debian-13"])
	must("template status and config", err)
	if !bool(tmpl.Template) {
		t.Errorf("template %d not a template: %+v", tmpl.VMID, tmpl)
	}

	wait := func(what string, task *proxmox.Task, err error) {
		t.Helper()
		must(what, err)
		must(what+" wait", task.Wait(ctx, 5*time.Millisecond, time.Minute))
		if !task.IsSuccessful {
			t.Fatalf("%s ended %q", what, task.ExitStatus)
		}
	}
	// Clone with a VMID, and without (go-proxmox asks /cluster/nextid).
	newid, task, err := tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{NewID: 4242, Name: "gp-one", Full: true})
	wait("clone with newid", task, err)
	if newid != 4242 {
		t.Errorf("clone newid %d", newid)
	}
	other, task, err := tmpl.Clone(ctx, &proxmox.VirtualMachineCloneOptions{Name: "gp-two", Full: true})
	wait("clone without newid", task, err)
	if other == 0 || other == 4242 {
		t.Errorf("clone without newid got %d", other)
	}

	vm, err := node.VirtualMachine(ctx, 4242)
	must("clone status and config", err)
	if vm.Name != "gp-one" || vm.VirtualMachineConfig.Name != "gp-one" {
		t.Errorf("clone %q, config name %q", vm.Name, vm.VirtualMachineConfig.Name)
	}
	task, err = vm.Config(ctx, proxmox.VirtualMachineOption{Name: "cores", Value: 2}, proxmox.VirtualMachineOption{Name: "tags", Value: "gp"})
	wait("config (async)", task, err)
	must("config (sync)", vm.ConfigSync(ctx, proxmox.VirtualMachineOption{Name: "description", Value: "written by go-proxmox"}))
	task, err = vm.ResizeDisk(ctx, "scsi0", "+1G")
	wait("resize", task, err)
	task, err = vm.Start(ctx)
	wait("start", task, err)
	must("wait for agent", vm.WaitForAgent(ctx, 60))
	os, err := vm.AgentOsInfo(ctx)
	must("agent os info", err)
	if os.ID == "" {
		t.Errorf("os info %+v", os)
	}
	host, err := vm.AgentGetHostName(ctx)
	must("agent host name", err)
	if host == "" {
		t.Error("empty host name")
	}
	var ifaces []*proxmox.AgentNetworkIface
	deadline := time.Now().Add(time.Minute)
	for {
		ifaces, err = vm.AgentGetNetworkIFaces(ctx)
		must("agent interfaces", err)
		if hasIPv4(ifaces) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !hasIPv4(ifaces) {
		t.Errorf("no IPv4 in %+v", ifaces)
	}
	list, err = node.VirtualMachines(ctx)
	must("node qemu list, one running", err)
	if len(list) == 0 {
		t.Error("the node's qemu list is empty with a VM running")
	}
	task, err = vm.Shutdown(ctx)
	wait("shutdown", task, err)
	task, err = vm.Start(ctx)
	wait("start again", task, err)
	task, err = vm.Stop(ctx)
	wait("stop", task, err)
	task, err = vm.Delete(ctx, &proxmox.VirtualMachineDeleteOptions{Purge: true, DestroyUnreferencedDisks: true})
	wait("delete", task, err)
	if _, err := node.VirtualMachine(ctx, 4242); err == nil {
		t.Error("the deleted VM still answers")
	}

	// Storage: status, upload, content, one volume, delete.
	st, err := node.Storage(ctx, sim.ISOStorage)
	must("storage status", err)
	iso := filepath.Join(t.TempDir(), "gp-seed.iso")
	must("write iso", writeFile(iso, []byte("not really an ISO image")))
	task, err = st.Upload("iso", iso)
	wait("upload", task, err)
	content, err := st.GetContent(ctx)
	must("storage content", err)
	if len(content) != 1 || content[0].Volid != sim.ISOStorage+":iso/gp-seed.iso" {
		t.Errorf("content %+v", content)
	}
	one, err := st.ISO(ctx, "gp-seed.iso")
	must("storage volume info", err)
	if uint64(one.Size) == 0 || one.Path == "" || one.Format != "iso" {
		t.Errorf("volume info %+v", one)
	}
	task, err = st.DeleteContent(ctx, sim.ISOStorage+":iso/gp-seed.iso")
	wait("content delete", task, err)
}

func hasIPv4(ifaces []*proxmox.AgentNetworkIface) bool {
	for _, i := range ifaces {
		for _, a := range i.IPAddresses {
			if a.IPAddressType == "ipv4" && !strings.HasPrefix(a.IPAddress, "127.") {
				return true
			}
		}
	}
	return false
}

func writeFile(path string, data []byte) error { return os.WriteFile(path, data, 0o600) }
