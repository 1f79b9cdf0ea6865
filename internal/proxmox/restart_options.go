package proxmox

import (
	"strconv"
	"strings"
)

// RestartOption is a VM config option that a running VM takes only at its next start (it stays
// pending until then): Update writes a change of it, then restarts a running VM or, with
// Changes.DeferRestart, leaves it pending. RestartOptions lists them, and the provider derives
// from the list which attributes restart a VM and how its plan and docs say so (decision:
// code-conventions). cores and memory have fields and planning of their own.
type RestartOption struct {
	// Key is the Proxmox config key, Attr the proxy_vm attribute that sets it, Label how
	// messages name it.
	Key, Attr, Label string
	// Unit follows the value in messages ("" for none).
	Unit string
	// value is the value Changes gives the option, as its attribute has it; ok is false
	// when Changes leaves it alone. Nil: the value is Changes.Options[Key].
	value func(Changes) (v string, ok bool)
	// read is the attribute's value of the option's config value (nil: the config value).
	read func(cfgValue string) string
	// write is the config value that gives the option the attribute's value v, from its
	// current config value cur ("" when unset); nil: v.
	write func(cur, v string) string
}

// RestartOptions are the options a change of which needs a restart of a running VM, in
// the order messages name them. memory is one, except on a VM with memory hotplug (see
// planMemory).
var RestartOptions = []RestartOption{
	{Key: "cores", Attr: "cores", Label: "cores", value: intValue(func(c Changes) *int { return c.Cores })},
	{Key: "memory", Attr: "memory_mib", Label: "memory", Unit: " MiB", value: intValue(func(c Changes) *int { return c.MemoryMiB })},
	// The emulated CPU type: cpu is a property string whose default key is cputype
	// (qemu-server PVE/QemuServer/CPUConfig.pm $cpu_fmt, format pve-vm-cpu-conf); its other
	// properties (flags, ...) are kept.
	{Key: "cpu", Attr: "cpu_type", Label: "CPU type", read: cpuType, write: withCPUType},
	// The QEMU guest agent option, as agent_enabled has it ("true" or "false"): a property
	// string whose default key is enabled (qemu-server src/PVE/QemuServer/Agent.pm
	// $agent_fmt, lines 23-30); its other properties are kept. A running VM takes a change
	// of enabled only at its next start: vmconfig_update_agent (src/PVE/QemuServer.pm lines
	// 5207-5228) hotplugs fstrim_cloned_disks alone, and QEMU gets the agent's channel when
	// it starts (config_to_command, lines 3459-3469). The provider changes it only to switch
	// back on an agent switched off outside Terraform (agent_enabled is computed).
	{Key: "agent", Attr: "agent_enabled", Label: "guest agent", read: agentAttr, write: withAgent},
}

// agentAttr is agent_enabled's value of an agent option: "true" when it enables the agent.
func agentAttr(agent string) string { return strconv.FormatBool(agentEnabled(agent)) }

// withAgent is the agent option cur with enabled set as v ("true" or "false") says, its
// other properties kept (propString.setDefault: a second enabled would be refused).
func withAgent(cur, v string) string {
	enabled := "0"
	if v == "true" {
		enabled = "1"
	}
	p := parsePropString(cur)
	p.setDefault(enabled, "enabled")
	return p.String()
}

// cpuType is the cputype of a cpu option ("host,flags=+aes", "flags=+aes,host" or
// "cputype=host,...": host): its default key's value (propString.defaultValue).
func cpuType(cpu string) string {
	t, _ := parsePropString(cpu).defaultValue("cputype")
	return t
}

// withCPUType is the cpu option cur with its cputype set to t, its other properties kept
// (propString.setDefault: a second cputype would be refused).
func withCPUType(cur, t string) string {
	p := parsePropString(cur)
	p.setDefault(t, "cputype")
	return p.String()
}

// OwnFields says the option has its own fields in Spec, Changes and VM and its own
// planning (cores, memory); the others are carried in their Options maps.
func (o RestartOption) OwnFields() bool { return o.Key == "cores" || o.Key == "memory" }

// intValue reads an integer field of Changes as a RestartOption value.
func intValue(f func(Changes) *int) func(Changes) (string, bool) {
	return func(c Changes) (string, bool) {
		if p := f(c); p != nil {
			return strconv.Itoa(*p), true
		}
		return "", false
	}
}

// Value is the value c gives the option, as its attribute has it; ok is false when c
// leaves it alone.
func (o RestartOption) Value(c Changes) (v string, ok bool) {
	if o.value != nil {
		return o.value(c)
	}
	v, ok = c.Options[o.Key]
	return v, ok
}

// attrValue is the attribute's value of the option's config value.
func (o RestartOption) attrValue(cfgValue string) string {
	if o.read == nil || cfgValue == "" {
		return cfgValue
	}
	return o.read(cfgValue)
}

// configValue is the config value that gives the option the attribute's value v. A value
// that would break out of an option string is refused (optionValue).
func (o RestartOption) configValue(cur, v string) (string, error) {
	if _, err := optionValue(o.Key, v); err != nil {
		return "", err
	}
	if o.write == nil {
		return v, nil
	}
	return o.write(cur, v), nil
}

// optionParams adds the Spec's Options to a create's config write.
func optionParams(p map[string]string, s Spec, cfg map[string]string) error {
	for _, o := range RestartOptions {
		v, ok := s.Options[o.Key]
		if o.OwnFields() || !ok || o.attrValue(cfg[o.Key]) == v {
			continue
		}
		cv, err := o.configValue(cfg[o.Key], v)
		if err != nil {
			return err
		}
		p[o.Key] = cv
	}
	return nil
}

// readOptions fills vm.Options from the config.
func readOptions(vm *VM, cfg map[string]string) {
	for _, o := range RestartOptions {
		if o.OwnFields() || cfg[o.Key] == "" {
			continue
		}
		if vm.Options == nil {
			vm.Options = map[string]string{}
		}
		vm.Options[o.Key] = o.attrValue(cfg[o.Key])
	}
}

// ChangesRestartOption says c sets a RestartOption (whether the VM then needs a restart
// depends on what it runs with: see Update).
func ChangesRestartOption(c Changes) bool {
	for _, o := range RestartOptions {
		if _, ok := o.Value(c); ok {
			return true
		}
	}
	return false
}

// RestartAttrs joins the RestartOptions' attributes for a text, each through quote, the
// last after conj: "`cores` or `memory_mib`".
func RestartAttrs(conj string, quote func(string) string) string {
	names := make([]string, len(RestartOptions))
	for i, o := range RestartOptions {
		names[i] = quote(o.Attr)
	}
	return joinWords(names, conj)
}

// restartLabels is RestartAttrs with the options' labels, for the backend's messages:
// "cores or memory".
func restartLabels(conj string) string {
	names := make([]string, len(RestartOptions))
	for i, o := range RestartOptions {
		names[i] = o.Label
	}
	return joinWords(names, conj)
}

// restartValues names the new values ch gives the options in keys: "cores 4 and memory
// 2048 MiB".
func restartValues(ch Changes, keys map[string]bool) []string {
	var what []string
	for _, o := range RestartOptions {
		if v, ok := o.Value(ch); ok && keys[o.Key] {
			what = append(what, o.Label+" "+v+o.Unit)
		}
	}
	return what
}

// joinWords is "a", "a or b", "a, b or c" with conj "or".
func joinWords(words []string, conj string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}
