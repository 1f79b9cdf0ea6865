package nocloud

import "testing"

func TestConfiguresNoIPv4(t *testing.T) {
	none := []string{
		"version: 2\nethernets: {}\n",
		"network:\n  version: 2\n  ethernets:\n    ens18:\n      dhcp6: true\n",
		"version: 2\nethernets:\n  ens18:\n    dhcp4: false\n    addresses: [fd00::5/64, 'fd00::6/64']\n",
		"version: 2\nethernets:\n  ens18:\n    addresses:\n      - fd00::5/64:\n          lifetime: 0\n",
		"version: 1\nconfig: []\n",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: static6, address: 'fd00::5/64'}, {type: dhcp6}]\n",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: static, address: 'fd00::5/64'}]\n  - type: nameserver\n    address: [10.0.0.53]\n",
	}
	for _, c := range none {
		if !ConfiguresNoIPv4([]byte(c)) {
			t.Errorf("%q: not seen to configure no IPv4", c)
		}
	}
	some := []string{
		"version: 2\nethernets:\n  ens18:\n    dhcp4: true\n",
		"version: 2\nethernets:\n  ens18:\n    dhcp4: yes\n",
		"version: 2\nethernets:\n  ens18:\n    dhcp4: 'true'\n",
		"version: 2\nethernets:\n  ens18:\n    addresses: [10.0.0.5/24]\n",
		"version: 2\nbonds:\n  bond0:\n    addresses: [fd00::5/64, 10.0.0.5/24]\n",
		"version: 2\nethernets:\n  ens18:\n    addresses:\n      - 10.0.0.5/24:\n          label: a\n",
		"version: 2\nfuture-section:\n  x: {}\n",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: dhcp}]\n",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: dhcp4}]\n",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: static, address: 10.0.0.5, netmask: 255.255.255.0}]\n",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: static, address: 10.0.0.5/24}]\n",
		"version: 1\nconfig:\n  - type: physical\n    name: eth0\n    subnets: [{type: unknown-kind}]\n",
		"not: [valid\n",
		"- a\n",
		"version: 3\n",
	}
	for _, c := range some {
		if ConfiguresNoIPv4([]byte(c)) {
			t.Errorf("%q: seen to configure no IPv4", c)
		}
	}
}
