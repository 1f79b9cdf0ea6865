package nocloud

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kdomanski/iso9660"
)

// build is Build under a fresh TMPDIR that must be empty after (Build writes no file).
func build(t *testing.T, s Seed) []byte {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	iso, err := Build(s)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("Build left %d entries in TMPDIR", len(left))
	}
	return iso
}

// readRaw reads the image with the library directly (not through Read), so Read itself is
// checked against an independent reading.
func readRaw(t *testing.T, iso []byte) (label string, files map[string][]byte) {
	t.Helper()
	img, err := iso9660.OpenImage(bytes.NewReader(iso))
	if err != nil {
		t.Fatalf("OpenImage: %v", err)
	}
	label, err = img.Label()
	if err != nil {
		t.Fatal(err)
	}
	root, err := img.RootDir()
	if err != nil {
		t.Fatal(err)
	}
	children, err := root.GetChildren()
	if err != nil {
		t.Fatal(err)
	}
	files = map[string][]byte{}
	for _, c := range children {
		b := new(bytes.Buffer)
		if _, err := b.ReadFrom(c.Reader()); err != nil {
			t.Fatal(err)
		}
		files[c.Name()] = b.Bytes()
	}
	return label, files
}

func TestBuild_userDataByteForByte(t *testing.T) {
	large := make([]byte, 2<<20)
	for i := range large {
		large[i] = byte(i*7 + i/251)
	}
	cases := map[string][]byte{
		"cloud-config": []byte("#cloud-config\npackages: [squid]\n"),
		"non-utf8":     {0xff, 0xfe, 0x00, 0x80, 'a', 0xc3, 0x28, '\n'},
		"crlf":         []byte("#cloud-config\r\nruncmd:\r\n  - echo hi\r\n"),
		"empty":        {},
		"no-newline":   []byte("#!/bin/sh\necho x"),
		"2MiB":         large,
		"sector-exact": bytes.Repeat([]byte{'x'}, 2048),
	}
	for name, ud := range cases {
		t.Run(name, func(t *testing.T) {
			iso := build(t, Seed{Name: "proxy-a", UserData: ud, InstallGuestAgent: true})
			label, files := readRaw(t, iso)
			if strings.TrimRight(label, " ") != "cidata" {
				t.Errorf("label = %q, want cidata", label)
			}
			if !bytes.Equal(files["user-data"], ud) {
				t.Errorf("user-data differs: got %d bytes, want %d", len(files["user-data"]), len(ud))
			}
			got, err := Read(iso)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if !bytes.Equal(got.UserData, ud) || got.UserData == nil {
				t.Errorf("Read user-data differs: got %d bytes (nil %v), want %d", len(got.UserData), got.UserData == nil, len(ud))
			}
		})
	}
}

func TestBuild_metaData(t *testing.T) {
	iso := build(t, Seed{Name: "egress-1", UserData: []byte("x")})
	_, files := readRaw(t, iso)
	want := "instance-id: egress-1\nlocal-hostname: egress-1\n"
	if got := string(files["meta-data"]); got != want {
		t.Errorf("meta-data = %q, want %q", got, want)
	}
}

// TestBuild_instanceID: a seed that replaces a VM's seed in place carries its own
// instance-id; the hostname stays the VM's name. A character meta-data cannot carry is
// refused in it as in the name.
func TestBuild_instanceID(t *testing.T) {
	iso := build(t, Seed{Name: "egress-1", InstanceID: "egress-1-0f0e-2", UserData: []byte("x")})
	_, files := readRaw(t, iso)
	want := "instance-id: egress-1-0f0e-2\nlocal-hostname: egress-1\n"
	if got := string(files["meta-data"]); got != want {
		t.Errorf("meta-data = %q, want %q", got, want)
	}
	if _, err := Build(Seed{Name: "egress-1", InstanceID: "a\nb"}); !errors.Is(err, ErrInvalidName) {
		t.Errorf("instance-id with a newline: err = %v, want ErrInvalidName", err)
	}
}

func TestBuild_fileSet(t *testing.T) {
	cases := []struct {
		name   string
		seed   Seed
		vendor bool
	}{
		{"agent only", Seed{Name: "a", InstallGuestAgent: true}, true},
		{"vendor only", Seed{Name: "a", VendorData: "#cloud-config\n"}, true},
		{"both", Seed{Name: "a", VendorData: "#cloud-config\n", InstallGuestAgent: true}, true},
		{"neither", Seed{Name: "a"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, files := readRaw(t, build(t, tc.seed))
			var names []string
			for n := range files {
				names = append(names, n)
			}
			_, has := files["vendor-data"]
			if has != tc.vendor || len(files) != 2+map[bool]int{true: 1}[tc.vendor] {
				t.Errorf("files = %v, vendor-data wanted: %v", names, tc.vendor)
			}
		})
	}
}

func TestBuild_vendorDataAlone(t *testing.T) {
	iso := build(t, Seed{Name: "a", InstallGuestAgent: true})
	_, files := readRaw(t, iso)
	if got := string(files["vendor-data"]); got != GuestAgentScript {
		t.Errorf("vendor-data with the agent only is not GuestAgentScript:\n%s", got)
	}
	vd := "#cloud-config\nruncmd: [\"echo ü\"]\r\n"
	_, files = readRaw(t, build(t, Seed{Name: "a", VendorData: vd}))
	if got := string(files["vendor-data"]); got != vd {
		t.Errorf("vendor-data without the agent = %q, want %q", got, vd)
	}
}

func TestBuild_vendorDataMultipart(t *testing.T) {
	cases := []struct {
		name, vendor, ctype string
	}{
		{"cloud-config", "#cloud-config\nwrite_files: []\n", TypeCloudConfig},
		{"shell", "#!/bin/bash\necho hi", TypeShellScript},
		{"plain", "just text\n", TypePlain},
		{"include", "#include https://example.invalid/x\n", TypePlain},
		{"non-ascii", "#cloud-config\n# grüße 日本\nruncmd: [\"echo ü\"]\n", TypeCloudConfig},
		{"boundary-like", "#!/bin/sh\n--===============\n--\n", TypeShellScript},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			iso := build(t, Seed{Name: "a", VendorData: tc.vendor, InstallGuestAgent: true})
			f, err := Read(iso)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(f.VendorData, []byte("Content-Type: multipart/mixed; boundary=")) {
				t.Fatalf("vendor-data is not a multipart:\n%s", f.VendorData)
			}
			parts, err := f.VendorParts()
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != 2 {
				t.Fatalf("got %d parts, want 2", len(parts))
			}
			if parts[0].ContentType != TypeShellScript || string(parts[0].Body) != GuestAgentScript {
				t.Errorf("part 0 = %s %q, want the guest agent script", parts[0].ContentType, parts[0].Body)
			}
			if parts[1].ContentType != tc.ctype || string(parts[1].Body) != tc.vendor {
				t.Errorf("part 1 = %s %q, want %s %q", parts[1].ContentType, parts[1].Body, tc.ctype, tc.vendor)
			}
			if !f.InstallsGuestAgent() {
				t.Error("InstallsGuestAgent = false for a multipart with the script")
			}
		})
	}
}

func TestBuildVendorData_deterministic(t *testing.T) {
	a := BuildVendorData("#cloud-config\n", true)
	b := BuildVendorData("#cloud-config\n", true)
	if !bytes.Equal(a, b) {
		t.Error("the same input gave two different vendor-data documents")
	}
	if BuildVendorData("", false) != nil {
		t.Error("no vendor data and no agent must give no vendor-data")
	}
}

func TestFiles_installsGuestAgent(t *testing.T) {
	cases := []struct {
		name string
		seed Seed
		want bool
	}{
		{"agent", Seed{Name: "a", InstallGuestAgent: true}, true},
		{"agent and vendor", Seed{Name: "a", InstallGuestAgent: true, VendorData: "#cloud-config\n"}, true},
		{"vendor only", Seed{Name: "a", VendorData: "#cloud-config\npackages: [qemu-guest-agent]\n"}, false},
		{"vendor is a lookalike script", Seed{Name: "a", VendorData: "#!/bin/sh\napt-get install -y qemu-guest-agent\n"}, false},
		{"neither", Seed{Name: "a"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Read(build(t, tc.seed))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.InstallsGuestAgent(); got != tc.want {
				t.Errorf("InstallsGuestAgent = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGuestAgentScript_packageManagers(t *testing.T) {
	if !strings.HasPrefix(GuestAgentScript, "#!/bin/sh\n") {
		t.Error("the script must start with #!/bin/sh")
	}
	for _, want := range []string{"apt-get install -y", "dnf install -y", "zypper --non-interactive", "apk add", "systemctl start qemu-guest-agent", "rc-service qemu-guest-agent start"} {
		if !strings.Contains(GuestAgentScript, want) {
			t.Errorf("GuestAgentScript lacks %q", want)
		}
	}
}

func TestBuild_nameErrors(t *testing.T) {
	if _, err := Build(Seed{}); !errors.Is(err, ErrEmptyName) {
		t.Errorf("empty name: err = %v, want ErrEmptyName", err)
	}
	for _, name := range []string{"a\nb", "a: b", "a\x00", "a#b"} {
		if _, err := Build(Seed{Name: name}); !errors.Is(err, ErrInvalidName) {
			t.Errorf("name %q: err = %v, want ErrInvalidName", name, err)
		}
	}
}

func TestRead_errors(t *testing.T) {
	if _, err := Read([]byte("not an iso")); err == nil {
		t.Error("Read of garbage: no error")
	}
	other, err := writeISO("OTHER", []isoFile{{UserDataFile, []byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(other); !errors.Is(err, ErrNotSeed) {
		t.Errorf("Read of a non-cidata image: err = %v, want ErrNotSeed", err)
	}
}

func BenchmarkBuild(b *testing.B) {
	s := Seed{Name: "proxy-a", UserData: bytes.Repeat([]byte("#cloud-config\n"), 1000), VendorData: "#cloud-config\n", InstallGuestAgent: true}
	for b.Loop() {
		if _, err := Build(s); err != nil {
			b.Fatal(err)
		}
	}
}
