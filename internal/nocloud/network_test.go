package nocloud

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestBuild_networkConfigByteForByte(t *testing.T) {
	cases := map[string][]byte{
		"v2":           []byte("version: 2\nethernets:\n  eth0:\n    dhcp4: true\n"),
		"crlf-comment": []byte("# static\r\nnetwork:\r\n  version: 1\r\n  config: []\r\n"),
		"no-newline":   []byte("version: 2"),
		"non-ascii":    []byte("version: 2 # grüße\n"),
	}
	for name, nc := range cases {
		t.Run(name, func(t *testing.T) {
			iso := build(t, Seed{Name: "proxy-a", UserData: []byte("#cloud-config\n"), NetworkConfig: nc, InstallGuestAgent: true})
			_, files := readRaw(t, iso)
			if !bytes.Equal(files["network-config"], nc) {
				t.Errorf("the image's network-config = %q, want %q", files["network-config"], nc)
			}
			got, err := Read(iso)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.NetworkConfig, nc) || !bytes.Equal(got.UserData, []byte("#cloud-config\n")) || !got.InstallsGuestAgent() {
				t.Errorf("Read: network-config %q user-data %q, want %q and the user-data and agent kept", got.NetworkConfig, got.UserData, nc)
			}
		})
	}
}

func TestBuild_noNetworkConfigWritesNoFile(t *testing.T) {
	iso := build(t, Seed{Name: "proxy-a", UserData: []byte("x")})
	_, files := readRaw(t, iso)
	if _, ok := files["network-config"]; ok || len(files) != 2 {
		t.Errorf("files %v: a seed without network config must hold user-data and meta-data only", files)
	}
	got, err := Read(iso)
	if err != nil {
		t.Fatal(err)
	}
	if got.NetworkConfig != nil {
		t.Errorf("Read found a network-config %q in a seed without one", got.NetworkConfig)
	}
}

func TestValidateNetworkConfig(t *testing.T) {
	good := []string{
		"version: 2\nethernets: {}\n",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: dhcp}]\n",
		"network:\n  version: 2\n  ethernets:\n    id0:\n      match: {macaddress: 'bc:24:11:00:00:01'}\n      dhcp4: true\n",
		"# comment first\nversion: 2\n",
	}
	for _, g := range good {
		if err := ValidateNetworkConfig([]byte(g)); err != nil {
			t.Errorf("%q: %v", g, err)
		}
	}
	bad := map[string]string{
		"":                            "empty",
		"  \n":                        "empty",
		"version: 3\n":                "version is \"3\"",
		"version: \"2\"\n":            "the number 2, not the string \"2\"",
		"version: '1'\n":              "the number 1, not the string \"1\"",
		"ethernets: {}\n":             "no version",
		"- version: 2\n":              "is YAML, but a list (or a single value), not a mapping of keys such as version: and ethernets:",
		"- a\n- b\n":                  "is YAML, but a list (or a single value), not a mapping",
		"10.20.0.0":                   "is YAML, but a list (or a single value), not a mapping",
		"version: 2\n  bad: [\n":      "line",
		"network: 2\n":                "network: key must hold a mapping",
		"network:\n  ethernets: {}\n": "no version",
		"null\n":                      "no YAML mapping",
		"version: 1\n":                "no config: list",
	}
	for in, want := range bad {
		err := ValidateNetworkConfig([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", in, err, want)
		}
	}
	// The error never quotes the text (it may hold what the user considers private).
	if err := ValidateNetworkConfig([]byte("version: 2\nsecret-ish: [unclosed\n")); err == nil || strings.Contains(err.Error(), "secret-ish") {
		t.Errorf("error %v quotes the document", err)
	}
}

func TestStaticIPv4_check(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	cases := []struct {
		s     StaticIPv4
		field string
		want  string
	}{
		{StaticIPv4{Address: p("10.0.0.5/24"), Gateway: a("10.0.0.1"), DNS: []netip.Addr{a("10.0.0.53")}, Search: []string{"corp.example"}}, "", ""},
		{StaticIPv4{Address: p("10.0.0.5/32")}, "", ""},
		{StaticIPv4{Address: p("10.0.0.0/31"), Gateway: a("10.0.0.1")}, "", ""}, // RFC 3021: both addresses are hosts
		{StaticIPv4{Address: p("10.0.0.0/24")}, "address", "network address"},
		{StaticIPv4{Address: p("10.0.0.255/24")}, "address", "broadcast address"},
		{StaticIPv4{Address: p("10.0.0.5/0")}, "address", "prefix length /0"},
		{StaticIPv4{Address: p("fd00::5/64")}, "address", "IPv4"},
		{StaticIPv4{Address: p("10.0.0.5/24"), Gateway: a("10.0.1.1")}, "gateway", "outside the address's network 10.0.0.0/24"},
		{StaticIPv4{Address: p("10.0.0.5/24"), Gateway: a("10.0.0.5")}, "gateway", "own address"},
		{StaticIPv4{Address: p("10.0.0.5/24"), Gateway: a("10.0.0.255")}, "gateway", "broadcast"},
		{StaticIPv4{Address: p("10.0.0.5/24"), Search: []string{"bad domain"}}, "search", "not a domain name"},
		// Addresses the guest agent's report leaves out: a create could never see them.
		{StaticIPv4{Address: p("169.254.3.3/16")}, "address", "link-local"},
		{StaticIPv4{Address: p("127.0.0.5/8")}, "address", "loopback"},
		{StaticIPv4{Address: p("224.0.0.5/24")}, "address", "multicast"},
		{StaticIPv4{Address: p("0.0.0.1/8")}, "address", "0.0.0.0/8"},
		{StaticIPv4{Address: p("240.0.0.5/8")}, "address", "reserved"},
	}
	for _, tc := range cases {
		field, err := tc.s.Check()
		if field != tc.field || (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: field %q error %v, want field %q and %q", tc.s, field, err, tc.field, tc.want)
		}
	}
}

func TestRenderStaticIPv4(t *testing.T) {
	s := StaticIPv4{
		Address: netip.MustParsePrefix("10.0.0.5/24"), Gateway: netip.MustParseAddr("10.0.0.1"),
		DNS: []netip.Addr{netip.MustParseAddr("10.0.0.53"), netip.MustParseAddr("fd00::53")}, Search: []string{"corp.example"},
	}
	out := RenderStaticIPv4(s, "BC:24:11:AA:BB:CC")
	if err := ValidateNetworkConfig(out); err != nil {
		t.Fatalf("the rendered document does not validate: %v\n%s", err, out)
	}
	var doc struct {
		Version   int `yaml:"version"`
		Ethernets map[string]struct {
			Match struct {
				MAC string `yaml:"macaddress"`
			} `yaml:"match"`
			DHCP4     *bool    `yaml:"dhcp4"`
			Addresses []string `yaml:"addresses"`
			Routes    []struct {
				To  string `yaml:"to"`
				Via string `yaml:"via"`
			} `yaml:"routes"`
			Nameservers struct {
				Addresses []string `yaml:"addresses"`
				Search    []string `yaml:"search"`
			} `yaml:"nameservers"`
			SetName string `yaml:"set-name"`
		} `yaml:"ethernets"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	e, ok := doc.Ethernets["net0"]
	switch {
	case doc.Version != 2 || !ok || len(doc.Ethernets) != 1:
		t.Fatalf("document %+v", doc)
	case e.Match.MAC != "bc:24:11:aa:bb:cc" || e.SetName != "":
		t.Errorf("match %q set-name %q: want the lowercased MAC and no rename", e.Match.MAC, e.SetName)
	case e.DHCP4 == nil || *e.DHCP4:
		t.Error("dhcp4 must be false")
	case len(e.Addresses) != 1 || e.Addresses[0] != "10.0.0.5/24":
		t.Errorf("addresses %v", e.Addresses)
	case len(e.Routes) != 1 || e.Routes[0].To != "0.0.0.0/0" || e.Routes[0].Via != "10.0.0.1":
		t.Errorf("routes %+v", e.Routes)
	case strings.Join(e.Nameservers.Addresses, ",") != "10.0.0.53,fd00::53" || strings.Join(e.Nameservers.Search, ",") != "corp.example":
		t.Errorf("nameservers %+v", e.Nameservers)
	}
	// Without gateway and DNS: no routes, no nameservers.
	bare := string(RenderStaticIPv4(StaticIPv4{Address: netip.MustParsePrefix("10.0.0.5/32")}, "bc:24:11:00:00:01"))
	if strings.Contains(bare, "routes") || strings.Contains(bare, "nameservers") {
		t.Errorf("bare document:\n%s", bare)
	}
}
