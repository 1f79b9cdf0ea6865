package pvesim_test

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/proxy-operator/terraform-provider-proxy/internal/fixture"
	"github.com/proxy-operator/terraform-provider-proxy/internal/nocloud"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pveapi"
	"github.com/proxy-operator/terraform-provider-proxy/internal/pvesim"
)

// ipv4Of returns the first IPv4 of the first non-loopback interface, as the provider reads it.
func ipv4Of(ifs []pveapi.NetworkInterface) string {
	for _, i := range ifs {
		if i.Name == "lo" {
			continue
		}
		for _, a := range i.IPAddresses {
			if a.Type == "ipv4" {
				return a.Address
			}
		}
	}
	return ""
}

func (tg *target) address() string {
	tg.t.Helper()
	var ip string
	tg.eventually("an IPv4 from the agent", func() bool {
		ifs, err := tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
		ip = ipv4Of(ifs)
		return err == nil && ip != ""
	})
	return ip
}

func TestAgent_templateThatShipsTheAgentNeedsNoSeed(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{TemplateAgent: true})
	tg.cloned()
	tg.started()
	if ip := tg.address(); net.ParseIP(ip) == nil {
		t.Fatalf("address %q", ip)
	}
	if _, ok := sim.GuestSeed(tg.vmid); ok {
		t.Error("a guest seed without a seed ISO")
	}
}

func TestAgent_seedWithoutTheInstallNeverBringsTheAgent(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	tg.cloned()
	iso, err := nocloud.Build(nocloud.Seed{Name: captureName, UserData: []byte("#cloud-config\n")})
	if err != nil {
		t.Fatal(err)
	}
	tg.mustOK(tg.upload(captureName+"-seed.iso", iso))
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"ide2": tg.seedVolID() + ",media=cdrom"}); err != nil {
		t.Fatal(err)
	}
	tg.started()
	// Twice the install time, in simulated time.
	time.Sleep(sim.WallTime(2 * (sim.Durations().AgentInstall + sim.Durations().DHCP)))
	_, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_agent_not_running")
	sf, ok := sim.GuestSeed(tg.vmid)
	if !ok || sf.InstallsAgent || sf.Label != nocloud.Label || sf.InstanceID != captureName {
		t.Errorf("guest seed %+v %v", sf, ok)
	}
}

func TestAgent_answersWithoutIPv4UntilDHCP(t *testing.T) {
	tg, _ := simTarget(t, pvesim.Options{TemplateAgent: true, Durations: pvesim.Durations{DHCP: time.Hour}})
	tg.cloned()
	tg.started()
	var ifs []pveapi.NetworkInterface
	tg.eventually("the agent", func() bool {
		var err error
		ifs, err = tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
		return err == nil
	})
	if ip := ipv4Of(ifs); ip != "" || len(ifs) != 2 || len(ifs[1].IPAddresses) != 1 || ifs[1].IPAddresses[0].Type != "ipv6" {
		t.Errorf("before DHCP: %+v", ifs)
	}
}

func TestAgent_agentEnabledAfterBootHasNoDevice(t *testing.T) {
	tg, _ := simTarget(t, pvesim.Options{TemplateAgent: true})
	tg.cloned()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"agent": "0"}); err != nil {
		t.Fatal(err)
	}
	tg.started()
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"agent": "enabled=1"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(tg.sim.WallTime(2 * tg.sim.Durations().AgentBoot))
	_, err := tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid)
	tg.wantAPIError(err, "err_agent_not_running")
	tg.mustOK(tg.api.Stop(tg.ctx(), tg.node, tg.vmid))
	tg.started()
	tg.address()
}

func TestAgent_rebootKeepsTheInstalledAgentAndTheSeedRunsOnce(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{})
	tg.seeded("#cloud-config\n# first\n")
	tg.started()
	first := tg.address()
	// A new ISO under the same name and instance id: cloud-init does not run again.
	tg.mustOK(tg.upload(captureName+"-seed.iso", tg.seed("#cloud-config\n# second\n")))
	tg.mustOK(tg.api.Stop(tg.ctx(), tg.node, tg.vmid))
	if _, err := tg.api.AgentNetworkInterfaces(tg.ctx(), tg.node, tg.vmid); !pveapi.IsVMNotRunning(err) {
		t.Errorf("stopped: %v", err)
	}
	tg.started()
	if again := tg.address(); again != first {
		t.Errorf("address changed across a reboot: %s, then %s", first, again)
	}
	if sf, _ := sim.GuestSeed(tg.vmid); !bytes.Contains(sf.UserData, []byte("# first")) {
		t.Errorf("guest seed %q", sf.UserData)
	}
}

func TestAgent_vlanTagPicksTheSubnetAndAddressesAreUnique(t *testing.T) {
	tg, sim := simTarget(t, pvesim.Options{TemplateAgent: true})
	tg.cloned()
	conf, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"net0": conf["net0"] + ",tag=4"}); err != nil {
		t.Fatal(err)
	}
	after, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if optOf(after["net0"], "virtio") != optOf(conf["net0"], "virtio") {
		t.Errorf("the MAC changed: %q -> %q", conf["net0"], after["net0"])
	}
	tg.started()
	var vlan struct {
		Result []pveapi.NetworkInterface `json:"result"`
	}
	if err := fixture.MustLoad("agent_network_get_interfaces_vlan").Data(&vlan); err != nil {
		t.Fatal(err)
	}
	want := ipv4Of(vlan.Result)
	got := tg.address()
	if got[:strings.LastIndex(got, ".")] != want[:strings.LastIndex(want, ".")] {
		t.Errorf("VLAN 4 address %s, want one in %s's /24", got, want)
	}
	if err := sim.AddVM(pvesim.VMSpec{VMID: 4000, Power: "running", ShipsAgent: true, Config: map[string]string{"agent": "1", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=4"}}); err != nil {
		t.Fatal(err)
	}
	other, _ := sim.VM(4000)
	tg.eventually("the other VM's address", func() bool { other, _ = sim.VM(4000); return other.IP != "" })
	if other.IP == got {
		t.Errorf("two VMs share %s", got)
	}
}

func TestStart_missingISOIsATaskError(t *testing.T) {
	tg, _ := simTarget(t, pvesim.Options{})
	// The ISO must exist when the config is written; it goes away afterwards.
	tg.seeded("#cloud-config\n")
	tg.mustOK(tg.api.DeleteVolume(tg.ctx(), tg.node, tg.isoStorage, tg.seedVolID()))
	upid, err := tg.api.Start(tg.ctx(), tg.node, tg.vmid)
	if err != nil {
		t.Fatal(err)
	}
	if st := tg.waitTask(upid); st.ExitStatus != "volume '"+tg.seedVolID()+"' does not exist" {
		t.Errorf("ended %q", st.ExitStatus)
	}
}

func TestConfig_deletingADeviceLeavesTheBootOrder(t *testing.T) {
	tg, _ := simTarget(t, pvesim.Options{})
	tg.seeded("#cloud-config\n")
	conf, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid)
	if !strings.Contains(conf["boot"], "ide2") {
		t.Fatalf("boot %q", conf["boot"])
	}
	if err := tg.api.SetVMConfig(tg.ctx(), tg.node, tg.vmid, map[string]string{"delete": "ide2"}); err != nil {
		t.Fatal(err)
	}
	tmpl, _ := tg.api.VMConfig(tg.ctx(), tg.node, tg.template)
	if conf, _ = tg.api.VMConfig(tg.ctx(), tg.node, tg.vmid); conf["boot"] != tmpl["boot"] || conf["ide2"] != "" {
		t.Errorf("after deleting ide2: boot %q ide2 %q", conf["boot"], conf["ide2"])
	}
}
