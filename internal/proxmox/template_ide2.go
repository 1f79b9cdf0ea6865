package proxmox

// checkIDE2Free refuses a template whose ide2 holds a disk: the seed ISO is attached on
// ide2, so every clone would lose that disk from its config. A CD-ROM there (empty, or
// an ISO) is fine: the seed takes its place.
func checkIDE2Free(templateVMID int, cfg map[string]string) error {
	v, ok := cfg["ide2"]
	if !ok || isCDROM(v) {
		return nil
	}
	return Permanentf("template %d has a disk on ide2, which the provider's seed ISO would replace in every clone; move that disk to another slot (e.g. scsi1) in the template", templateVMID)
}
