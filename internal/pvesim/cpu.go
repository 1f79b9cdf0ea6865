package pvesim

import (
	"fmt"
	"slices"
	"strings"
)

// cpuModels are the CPU models a VM's cpu option may name: qemu-server
// src/PVE/QemuServer/CPUConfig.pm validate_vm_cpu_conf accepts a cputype that is in
// get_all_cpu_models (initialize_cpu_models: every architecture's models, plus host for the
// host's) or in $all_builtin_models ($builtin_models_by_arch: the x86-64-v* models).
// Reconstructed: initialize_cpu_models reads the models from pve-qemu-kvm's
// /usr/share/kvm/cpu-models-<arch>.json when the package ships them, and the list here is
// its hard-coded fallback (x86_64 and aarch64), which a node's QEMU may extend.
var cpuModels = func() map[string]bool {
	m := map[string]bool{"host": true}
	for _, l := range [][]cpuModel{cpuBuiltin, cpuX86, cpuAarch64} {
		for _, c := range l {
			m[c.name] = true
		}
	}
	return m
}()

// cpuModel is a CPU model and the vendor CPUConfig.pm gives it.
type cpuModel struct{ name, vendor string }

func cpuList(vendor string, names ...string) []cpuModel {
	var out []cpuModel
	for _, s := range names {
		for _, n := range strings.Fields(s) {
			out = append(out, cpuModel{n, vendor})
		}
	}
	return out
}

var (
	// $builtin_models_by_arch x86_64 (the abstract profiles; the vendor is their
	// reported-model qemu64's, 'default').
	cpuBuiltin = cpuList("default", "x86-64-v2 x86-64-v2-AES x86-64-v3 x86-64-v4")
	// initialize_cpu_models, x86_64 (the simulated nodes' architecture): Intel, AMD, generic.
	cpuX86 = slices.Concat(cpuList("GenuineIntel",
		"486 pentium pentium2 pentium3 coreduo core2duo Conroe Penryn Nehalem Nehalem-IBRS "+
			"Westmere Westmere-IBRS SandyBridge SandyBridge-IBRS IvyBridge IvyBridge-IBRS Haswell "+
			"Haswell-IBRS Haswell-noTSX Haswell-noTSX-IBRS Broadwell Broadwell-IBRS Broadwell-noTSX "+
			"Broadwell-noTSX-IBRS Skylake-Client Skylake-Client-IBRS Skylake-Client-noTSX-IBRS "+
			"Skylake-Client-v4 Skylake-Server Skylake-Server-IBRS Skylake-Server-noTSX-IBRS "+
			"Skylake-Server-v4 Skylake-Server-v5 Cascadelake-Server Cascadelake-Server-v2 "+
			"Cascadelake-Server-noTSX Cascadelake-Server-v4 Cascadelake-Server-v5 Cooperlake "+
			"Cooperlake-v2 KnightsMill Icelake-Client Icelake-Client-noTSX Icelake-Server "+
			"Icelake-Server-noTSX Icelake-Server-v3 Icelake-Server-v4 Icelake-Server-v5 "+
			"Icelake-Server-v6 Icelake-Server-v7 SapphireRapids SapphireRapids-v2 SapphireRapids-v3 "+
			"SapphireRapids-v4 GraniteRapids GraniteRapids-v2 GraniteRapids-v3 SierraForest "+
			"SierraForest-v2 SierraForest-v3 ClearwaterForest"),
		cpuList("AuthenticAMD",
			"athlon phenom Opteron_G1 Opteron_G2 Opteron_G3 Opteron_G4 Opteron_G5 EPYC EPYC-IBPB "+
				"EPYC-v3 EPYC-v4 EPYC-v5 EPYC-Rome EPYC-Rome-v2 EPYC-Rome-v3 EPYC-Rome-v4 EPYC-Rome-v5 "+
				"EPYC-Milan EPYC-Milan-v2 EPYC-Milan-v3 EPYC-Genoa EPYC-Genoa-v2 EPYC-Turin"),
		// generic, and host for the host's architecture (initialize_cpu_models)
		cpuList("default", "kvm32 kvm64 qemu32 qemu64 max host"))
	// initialize_cpu_models, aarch64: accepted in a config (get_all_cpu_models spans every
	// architecture) but not listed by an x86_64 node without ?arch=aarch64.
	cpuAarch64 = cpuList("ARM", "a64fx cortex-a35 cortex-a53 cortex-a55 cortex-a57 cortex-a710 cortex-a72 cortex-a76 "+
		"neoverse-n1 neoverse-n2 neoverse-v1")
)

// hCPUModels is GET /nodes/{node}/capabilities/qemu/cpu (qemu-server
// src/PVE/API2/Qemu/CPU.pm index, CPUConfig.pm get_cpu_models($include_custom = 1, $arch)):
// the models of the node's architecture (x86_64 here, or the arch asked for) with custom 0,
// then the built-in abstract profiles with abstract 1, then the custom models (the simulator
// defines none). Any authenticated user may read it (permissions user => 'all'). Perl's
// hash order is not kept: the simulator answers in its list order.
func (s *Sim) hCPUModels(c *call) *response {
	models := cpuX86
	builtin := cpuBuiltin
	if c.params["arch"] == "aarch64" {
		models = append(slices.Clone(cpuAarch64), cpuModel{"max", "default"})
		builtin = nil
	}
	out := make([]map[string]any, 0, len(models)+len(builtin))
	for _, m := range models {
		out = append(out, map[string]any{"name": m.name, "custom": 0, "vendor": m.vendor})
	}
	for _, m := range builtin {
		out = append(out, map[string]any{"name": m.name, "custom": 0, "abstract": 1, "vendor": m.vendor})
	}
	return okData(out)
}

// CPUModels are the CPU models the simulator's nodes know (cpu's cputype), sorted.
func CPUModels() []string {
	out := make([]string, 0, len(cpuModels))
	for n := range cpuModels {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// cpuTypeOf reads the cputype of a cpu property string as pve-common JSONSchema.pm
// parse_property_string does: blank parts skipped; "cputype=<x>" by name; a part without
// '=' anywhere is the value of the default key (cputype); a second value of it dies
// "duplicate key in comma-separated list property: cputype"; "<key>=" with an empty value
// dies "missing key in comma-separated list property". err is that text, "" when none.
func cpuTypeOf(v string) (cputype, err string) {
	for _, p := range strings.Split(v, ",") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		k, val, ok := strings.Cut(p, "=")
		switch {
		case ok && (k == "" || val == ""):
			return "", "missing key in comma-separated list property"
		case ok && k != "cputype":
			continue
		case !ok:
			val = p
		}
		if cputype != "" {
			return "", "duplicate key in comma-separated list property: cputype"
		}
		cputype = val
	}
	return cputype, ""
}

// fmtVMCPU is the format pve-vm-cpu-conf of a VM's cpu option (qemu-server
// src/PVE/QemuServer/CPUConfig.pm): the cputype is the property string's default key
// ($cpu_fmt); validate_cpu_conf dies without one, validate_vm_cpu_conf on a built-in type
// it does not know and, through get_custom_model, on a custom- type the node's
// cpu-models.conf does not define (the simulator defines none). JSONSchema.pm check_format
// calls the validator from parse_property_string, so the text reaches the answer as the
// field error "invalid format - <text>\n" of a 400 Parameter verification failed. The
// other keys ($cpu_fmt flags, hidden, hv-vendor-id...) are not checked.
func fmtVMCPU(v string) string {
	cputype, err := cpuTypeOf(v)
	if err != "" {
		return err
	}
	switch {
	case cputype == "":
		return "CPU is missing cputype"
	case strings.HasPrefix(cputype, "custom-"):
		return fmt.Sprintf("Custom cputype '%s' not found", strings.TrimPrefix(cputype, "custom-"))
	case !cpuModels[cputype]:
		return fmt.Sprintf("Built-in cputype '%s' is not defined (missing 'custom-' prefix?)", cputype)
	}
	return ""
}
