package proxmox

// InPlaceOption is a VM config option that a running VM takes when it is written:
// qemu-server's vmconfig_hotplug_pending applies it at once, whatever the VM's hotplug
// setting, so a change needs no restart. InPlaceOptions lists them; each is one entry. Its
// value travels in the Options maps of Spec, Changes and VM under its Key, as its
// attribute has it (a number or a word: optionValue refuses what would break out of an
// option string): a create writes it when it differs from the template's
// (inPlaceParams), Get reads it (readInPlaceOptions), and Update writes a change of it
// (planInPlaceOptions). An option a running VM takes only at its next start is a
// RestartOption instead.
type InPlaceOption struct {
	// Key is the Proxmox config key, Attr the proxy_vm attribute that sets it.
	Key, Attr string
}

// InPlaceOptions are the options a running VM takes without a restart.
var InPlaceOptions = []InPlaceOption{
	// The CPU weight: an integer from 1 to 262144 (qemu-server src/PVE/QemuServer.pm
	// confdesc cpuunits, lines 287-298). vmconfig_hotplug_pending sets it on the running
	// VM's cgroup (lines 4879-4881) and resets it when deleted (lines 4783-4784), for any
	// hotplug setting.
	{Key: "cpuunits", Attr: "cpu_units"},
}

// inPlaceParams adds the Spec's in-place options to a create's config write: those that
// differ from the cloned config cfg.
func inPlaceParams(p map[string]string, s Spec, cfg map[string]string) error {
	for _, o := range InPlaceOptions {
		v, ok := s.Options[o.Key]
		if !ok || cfg[o.Key] == v {
			continue
		}
		cv, err := optionValue(o.Key, v)
		if err != nil {
			return err
		}
		p[o.Key] = cv
	}
	return nil
}

// readInPlaceOptions fills vm.Options with the in-place options the config sets.
func readInPlaceOptions(vm *VM, cfg map[string]string) {
	for _, o := range InPlaceOptions {
		if cfg[o.Key] == "" {
			continue
		}
		if vm.Options == nil {
			vm.Options = map[string]string{}
		}
		vm.Options[o.Key] = cfg[o.Key]
	}
}

// planInPlaceOptions writes a change of each in-place option that the config does not hold
// already; no restart follows.
func (p *updatePlan) planInPlaceOptions(ch Changes) error {
	for _, o := range InPlaceOptions {
		v, ok := ch.Options[o.Key]
		if !ok || v == p.cfg[o.Key] {
			continue
		}
		cv, err := optionValue(o.Key, v)
		if err != nil {
			return err
		}
		p.params[o.Key] = cv
	}
	return nil
}
