package proxmox

import (
	"testing"
)

// TestPropString_roundTrip: formatting a parsed property string gives it back byte for
// byte, whatever Proxmox would make of it (blank parts, duplicates, "key=", "=value"), so
// writing one option back never rewrites the others.
func TestPropString_roundTrip(t *testing.T) {
	for _, s := range []string{
		"",
		"virtio=BC:24:11:EE:48:83,bridge=vmbr0,tag=4",
		"local-lvm:vm-100-disk-0,size=3G",
		"file=local:iso/x.iso,media=cdrom",
		"host,flags=+aes;+pcid",
		"order=scsi0;ide2;net0",
		"uuid=6a8d0d9e-0000-4000-8000-000000000001",
		"a=b=c",                              // the value keeps every '=' after the first (JSONSchema.pm:1099)
		"a=1,,b=2", ",host", "a=1,", " ,a=1", // blank parts (skipped by Proxmox, JSONSchema.pm:1097)
		"a=1,a=2", "x,y", "a=", "=v", // refused by Proxmox (JSONSchema.pm:1102, 1121, 1137), kept here
		"name=with space", // a value may hold spaces
	} {
		if got := parsePropString(s).String(); got != s {
			t.Errorf("parsePropString(%q).String() = %q", s, got)
		}
	}
}

// TestPropString_read: get reads keyed parts only; defaultValue reads the keyless part
// wherever it stands (JSONSchema.pm:1120-1135) or the default key's name and aliases, and
// skips blank parts.
func TestPropString_read(t *testing.T) {
	for _, c := range []struct {
		s, key, want string
		ok           bool
	}{
		{"virtio=BC:24:11:EE:48:83,bridge=vmbr0,tag=4", "bridge", "vmbr0", true},
		{"virtio=BC:24:11:EE:48:83,bridge=vmbr0,tag=4", "tag", "4", true},
		{"virtio=BC:24:11:EE:48:83,bridge=vmbr0", "tag", "", false},
		{"a=b=c", "a", "b=c", true},
		{"a=", "a", "", true},
		{"a=1,a=2", "a", "1", true}, // the first, as the old getOption read it
		{"host,bridge=x", "host", "", false},
		{"name=with space", "name", "with space", true},
	} {
		if got, ok := parsePropString(c.s).get(c.key); got != c.want || ok != c.ok {
			t.Errorf("get(%q, %q) = %q, %v; want %q, %v", c.s, c.key, got, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		s, want string
		ok      bool
	}{
		{"local-lvm:vm-100-disk-0,size=3G", "local-lvm:vm-100-disk-0", true},
		{"media=cdrom,local:iso/x.iso", "local:iso/x.iso", true},
		{"media=cdrom,file=local:iso/x.iso", "local:iso/x.iso", true},
		{"volume=local:iso/x.iso,media=cdrom", "local:iso/x.iso", true},
		{" ,media=cdrom,,local:iso/x.iso", "local:iso/x.iso", true},
		{"media=cdrom", "", false},
		{"", "", false},
	} {
		if got, ok := parsePropString(c.s).defaultValue("file", "volume"); got != c.want || ok != c.ok {
			t.Errorf("defaultValue(%q) = %q, %v; want %q, %v", c.s, got, ok, c.want, c.ok)
		}
	}
}

// TestPropString_write: set replaces in place or appends, del drops every part of the key,
// setDefault puts the default value first and drops the others that name it; the other
// parts keep their order.
func TestPropString_write(t *testing.T) {
	set := func(s, k, v string) string { p := parsePropString(s); p.set(k, v); return p.String() }
	del := func(s, k string) string { p := parsePropString(s); p.del(k); return p.String() }
	def := func(s, v string) string { p := parsePropString(s); p.setDefault(v, "cputype"); return p.String() }
	for _, c := range []struct{ got, want string }{
		{set("", "tag", "4"), "tag=4"},
		{set("virtio=M,bridge=vmbr0,firewall=1", "bridge", "vmbr1"), "virtio=M,bridge=vmbr1,firewall=1"},
		{set("virtio=M,bridge=vmbr0", "tag", "4"), "virtio=M,bridge=vmbr0,tag=4"},
		{set("a=1,,b=2", "b", "3"), "a=1,,b=3"},
		{del("virtio=M,tag=4,bridge=vmbr0", "tag"), "virtio=M,bridge=vmbr0"},
		{del("tag=4", "tag"), ""},
		{del("tag=4,a=1,tag=5", "tag"), "a=1"},
		{def("kvm64,flags=+aes", "host"), "host,flags=+aes"},
		{def("flags=+aes,cputype=kvm64,hidden=1", "host"), "host,flags=+aes,hidden=1"},
		{def(" ,flags=+aes,kvm64", "host"), "host,flags=+aes"},
		{def("", "host"), "host"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	// A written value is read back.
	p := parsePropString("virtio=M,bridge=vmbr0")
	p.set("tag", "12")
	if got, _ := parsePropString(p.String()).get("tag"); got != "12" {
		t.Errorf("tag read back as %q", got)
	}
}

// setOption is v with key set to val (propString.set): the fake API's config writes.
func setOption(v, key, val string) string {
	p := parsePropString(v)
	p.set(key, val)
	return p.String()
}
