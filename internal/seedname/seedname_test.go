package seedname

import "testing"

const uid = "0b7c6f2e-3f0a-4c1e-9a51-2d1f6c9e8a10"

// TestParse: every generation of a VM's own seed and the proxy operator's shared seed are
// read back to the VM's name; anything else is not a seed.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		file, name, uid string
		gen             int
		ok              bool
	}{
		{File("px-a", uid, 1), "px-a", uid, 1, true},
		{File("px-a", uid, 2), "px-a", uid, 2, true},
		{File("px-a", uid, 123456789), "px-a", uid, 123456789, true},
		{"px-a-" + uid + "-1-seed.iso", "px-a-" + uid + "-1", "", 0, true}, // generation 1 has no number: an operator seed's name
		{"px-a-" + uid + "-02-seed.iso", "px-a-" + uid + "-02", "", 0, true},
		{"px-a-seed.iso", "px-a", "", 0, true},
		{"-seed.iso", "", "", 0, false},
		{"other.iso", "", "", 0, false},
		{"px-a-seed.iso.bak", "", "", 0, false},
	} {
		name, u, ok := Parse(c.file)
		if name != c.name || u != c.uid || ok != c.ok {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q, %v", c.file, name, u, ok, c.name, c.uid, c.ok)
		}
		if _, _, gen, _ := ParseUID(c.file); gen != c.gen {
			t.Errorf("ParseUID(%q) gen %d, want %d", c.file, gen, c.gen)
		}
	}
}
